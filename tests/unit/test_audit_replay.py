"""The audit's replay of an exercise judged on outcomes (grader/audit.py `Auditor._replay`), on a notebook whose
"kernel" is a plain namespace: each other answer runs the section from its heading, then the right one again."""
from __future__ import annotations

import nbformat

from grader.audit import OUTCOME, RIGHT_REPLAYED, Auditor, audit_points
from grader.judge import Verdict
from grader.runner import tests_of as _tests_of

TEST = ("# audit: judged on the table the cell under the answer wrote\n"
        "expect(table == [2 * x for x in range(3)], 'ex1_table', 'doubled', str(table))\n")


def _notebook():
    cell = nbformat.v4.new_code_cell
    cells = [nbformat.v4.new_markdown_cell("## Setup"), cell("base = 1"),
             nbformat.v4.new_markdown_cell("## Exercise 1 — Double it"), cell("table = []"),
             cell("def double(x):\n    return 2 * x", metadata={"nbgrader": {"grade_id": "ex1_answer", "solution": True}}),
             cell("table += [double(x) for x in range(3)] if callable(double) else []"),
             cell(TEST, metadata={"nbgrader": {"grade_id": "ex1_check", "grade": True, "points": 2}})]
    return nbformat.v4.new_notebook(cells=cells)


class _Judge:
    """Judges ex1_check against the namespace the fake kernel ran the cells in."""

    def __init__(self, ns):
        self.ns, self.own = ns, {}

    def judge(self, gid, source, points):
        ok = self.ns.get("table") == [0, 2, 4]
        return Verdict(gid, float(points) if ok else 0.0, points)


def _replayed(variants, stale: bool = False):
    nb = _notebook()
    ns, ran = {}, []

    def nbclient_execute(cell, index):  # what nbclient does: runs it, then puts *that* cell in the notebook
        ran.append(index)
        if not (stale and cell.source == "table = []"):  # a section that keeps what its last run wrote
            exec(cell.source, ns)
        nb.cells[index] = cell

    for cell in nb.cells[:6]:
        if cell.cell_type == "code":
            exec(cell.source, ns)
    judge = _Judge(ns)
    tests = _tests_of(nb)
    auditor = Auditor(None, judge, tests, {"double": "ex1"}, [c.metadata.get("nbgrader", {}).get("grade_id")
                                                             for c in nb.cells],
                      replays={"ex1": variants}, cells=nb.cells, answers={4: "ex1"}, execute=nbclient_execute)
    auditor.before["ex1"] = {}
    auditor.audits["ex1_check"] = []
    auditor._replay("ex1")
    return auditor.audits["ex1_check"], ran, nb


def test_each_other_answer_and_then_the_right_one_run_the_section_from_its_heading():
    assert OUTCOME.search(TEST)
    tried, ran, nb = _replayed({"untouched": {"ex1_answer": "double = None"},
                                "constant": {"ex1_answer": "def double(x):\n    return 0"}})
    assert tried == [["untouched, replayed", 0.0], ["constant, replayed", 0.0], [RIGHT_REPLAYED, 0.0]]
    assert ran == [3, 4, 5] * 3, "each replay runs the section's code cells from its heading, tests judged apart"
    assert "return 2 * x" in nb.cells[4].source, "the learner's own answer cell stays in the graded notebook"
    assert not audit_points({"ex1_check": tried})


def test_a_section_that_is_not_fresh_when_run_again_is_reported():
    tried, ran, _ = _replayed({"untouched": {"ex1_answer": "double = None"}}, stale=True)
    assert ran == [3, 4, 5] * 2 and tried[-1] == [RIGHT_REPLAYED, 2.0], tried
    # the stub "earns" what the last run left, and the right answer's run on top of it loses: both are reported
    assert audit_points({"ex1_check": tried}) == ["ex1_check: untouched, replayed earned 2",
                                                  "ex1_check: the right answer, its section replayed, lost 2"]
