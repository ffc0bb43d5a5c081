"""The course's teaching numbers (grader/lint.py, ../shared/teaching-style.md) never get worse than the baseline in
tests/course-lint.json: a module may lose a long cell or gain a figure, never the other way round."""
from __future__ import annotations

import json

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader import lint


def test_no_blind_strategy_scores_more_than_in_the_baseline():
    baseline = json.loads(lint.LINT_BASELINE.read_text())["quizzes"]
    now = lint.quiz_report()
    assert now["all"]["questions"] >= baseline["all"]["questions"], "quiz questions went missing from the audit"
    assert not lint.quizzes_worse(now, baseline), lint.quizzes_worse(now, baseline)


def test_the_blind_strategies_are_scored_as_a_test_taker_would_play_them():
    asked = [lint.Asked("x Q1", {"a": "short", "b": "a much longer option", "c": "`f(x)`"}, "b"),
             lint.Asked("x Q2", {"a": "the longest option of all here", "b": "b", "c": "`spark.read`"}, "c")]
    assert lint.blind(asked) == {"longest": 0.5, "most code": 0.5, "best single letter": 0.5}


def test_no_module_is_worse_than_the_baseline():
    baseline = json.loads(lint.LINT_BASELINE.read_text())
    baseline.pop("quizzes")
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


def test_every_solution_answers_its_quiz_with_the_key_its_hidden_test_reveals():
    from grader.course import SOURCE, assignments

    for aid in assignments():
        nb = nbformat.read(SOURCE / aid / f"{aid}.ipynb", as_version=4)
        keys, answers = lint.lettered(nb), lint.lettered(nb, lint.ANSWER)
        assert keys and answers, f"{aid}: no lettered quiz key or solution answer found"
        assert {n: answers.get(n) for n in keys} == keys, aid


def test_no_collapsed_going_deeper_section_hides_a_live_demo():
    """JupyterLab hides every cell under a collapsed heading until the next heading of its level or above: a demo
    there would run unseen (the learner loop in the browser could not reach its controls either)."""
    import re

    from grader.course import SOURCE, assignments

    for aid in assignments():
        nb = nbformat.read(SOURCE / aid / f"{aid}.ipynb", as_version=4)
        collapsed = None
        for index, cell in enumerate(nb.cells):
            heading = re.match(r"(#+)\s", cell.source.lstrip()) if cell.cell_type == "markdown" else None
            if heading:
                level = len(heading.group(1))
                if collapsed is not None and level <= collapsed:
                    collapsed = None
                if cell.metadata.get("jp-MarkdownHeadingCollapsed") and collapsed is None:
                    collapsed = level
            elif collapsed is not None and cell.cell_type == "code":
                assert not re.search(r"\w*Demo\(", cell.source), f"{aid}: cell {index} (a live demo) is hidden"
