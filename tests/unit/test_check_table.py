"""What `grader check` and Check my work print: the table, whose columns stay aligned where a notebook's output is
narrow, and the progress lines, which name the running cell so that it can be found."""
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


def test_a_progress_line_names_a_cell_by_the_line_that_tells_it_apart():
    """Not the import or the re-entry check many cells open with, and cut at a word with an ellipsis."""
    from nbformat.v4 import new_code_cell

    from grader.runner import _cell_label

    demo = new_code_cell("from streamlab.lab.reentry import needs_setup  # extra code\nneeds_setup(\"spark\")\n"
                         "demo = failover.FailoverDemo(spark, bootstrap, seconds=45, script=[(10, 'executor')])")
    assert _cell_label(demo, 11) == "cell 12 (`demo = failover.FailoverDemo(spark, bootstrap…`)"
    assert _cell_label(new_code_cell("import time"), 2) == "cell 3 (`import time`)"
    assert _cell_label(new_code_cell(""), 0) == "cell 1"
