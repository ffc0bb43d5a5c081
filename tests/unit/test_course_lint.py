"""The course's teaching numbers (grader/lint.py, ../shared/teaching-style.md) never get worse than the baseline in
tests/course-lint.json: a module may lose a long cell or gain a figure, never the other way round."""
from __future__ import annotations

import json

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader import lint


def test_no_module_is_worse_than_the_baseline():
    baseline = json.loads(lint.LINT_BASELINE.read_text())
    numbers = lint.course()
    assert set(baseline) <= set(numbers), "a module of the baseline is gone: run python -m grader lint --update"
    worse = {aid: lint.worse(n, baseline[aid]) for aid, n in numbers.items() if aid in baseline}
    assert not any(worse.values()), {aid: w for aid, w in worse.items() if w}


def test_the_numbers_see_what_a_learner_sees():
    long = " ".join(["word"] * 201) + "."
    nb = new_notebook(cells=[
        new_markdown_cell("# M\n**Why it matters.** A story. **By the end you can** do it.\n\n**Time:** 30 min. "
                          "**You need:** module 0."),
        new_markdown_cell(long),
        new_markdown_cell("![the cap's split](figures/cap-split.svg)"),
        new_code_cell('q = spark.readStream.format("kafka").load()\nq.writeStream.format("console").start()'),
        new_markdown_cell("## Takeaways\n- one\n- two\n\n**Next →** [module 1](../01/01.ipynb)"),
    ])
    check = new_code_cell("a\nb\nc\nd\n### BEGIN HIDDEN TESTS\nx\n### END HIDDEN TESTS")
    check.metadata["nbgrader"] = {"grade": True, "points": 1, "solution": False, "grade_id": "t"}
    nb.cells.append(check)
    found = lint.measure(nbformat.from_dict(nb))
    assert (found.long_cells, found.figures, found.queries, found.long_checks) == (1, 1, 1, 1)
    assert found.frame == ["why", "can", "time", "need"] and found.ending == ["takeaways", "next"]
    assert lint.worse(found, {"long_cells": 0, "figures": 2, "frame": ["why", "can", "time", "need"]}) == \
        ["long_cells 0 -> 1", "figures 2 -> 1"]
