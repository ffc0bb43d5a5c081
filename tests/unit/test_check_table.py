"""The table `grader check` and Check my work print: its columns stay aligned where a notebook's output is narrow."""
from __future__ import annotations

from grader.grading import TABLE_WIDTH, Exercise, Result, table

LONG = ("the cap is split over the partitions in proportion to each one's backlog, rounded down, so recompute "
        "the share of partition 1 from the backlogs your variant printed above and try again")


def test_a_long_hint_wraps_between_words_in_its_own_column():
    result = Result("ada", "05-rate-limiting", "05.ipynb",
                    [Exercise("ex1_cap_split", 0, 2, "failed", LONG), Exercise("q3", 1, 1, "passed", "")], 1, 3)
    lines = table(result).splitlines()
    hint_at = lines[0].index("hint")
    assert all(len(line) <= TABLE_WIDTH for line in lines), "a line is wider than a notebook shows"
    body = lines[2:lines.index(next(line for line in lines if line.startswith("q3")))]
    assert len(body) > 1, "the long hint was not wrapped"
    assert all(line[:hint_at].strip() == "" for line in body[1:]), "a wrapped line left the hint's column"
    assert " ".join(line[hint_at:].strip() for line in body) == LONG, "wrapping lost or broke a word"
    assert lines[-1] == "score: 1 / 3"


def test_locked_cells_follow_nbgrader_s_rule():
    """grader.runner.is_locked (no import of nbgrader's server extensions) says what nbgrader.utils.is_locked says."""
    import nbformat
    from nbgrader.utils import is_locked as nbgrader_says

    from grader.runner import is_locked

    for meta in ({}, {"nbgrader": {}}, {"nbgrader": {"solution": True, "grade": True}}, {"nbgrader": {"grade": True}},
                 {"nbgrader": {"locked": True}}, {"nbgrader": {"locked": False, "grade": False}},
                 {"nbgrader": {"solution": True, "locked": True}}):
        cell = nbformat.v4.new_code_cell("x", metadata=meta)
        assert is_locked(cell) == nbgrader_says(cell), meta
