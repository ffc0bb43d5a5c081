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


def test_no_modules_quiz_and_not_the_pool_can_be_passed_blind():
    """Each blind strategy scores 35 % or less on every module's quiz and on the pool, not only no worse than the
    baseline: one letter answered everywhere, or always the longest option, must not pass a module."""
    report = lint.quiz_report()
    assert all(report[aid]["questions"] >= 3 for aid in lint.course()), "a module's quiz has fewer than 3 questions"
    assert not lint.quizzes_above(report), lint.quizzes_above(report)


def test_a_module_above_the_target_fails_the_lint_with_one_line_naming_it(monkeypatch, capsys, tmp_path):
    keys = "aabcd"  # 5 questions of 4 options: one letter must repeat, so the best single letter scores 40 %
    asked = [lint.Asked(f"m Q{i}", {"a": "one", "b": "three", "c": "seven", "d": "`e(l)`"}, k) for i, k in enumerate(keys)]
    scores = lint.blind(asked)
    assert scores == {"longest": 0.2, "most code": 0.2, "best single letter": 0.4}
    report = {**lint.quiz_report(), "m": {"questions": 5, **scores}}
    assert lint.quizzes_above(report) == ["m: best single letter 40% of 5 questions; add questions or spread the keys"]
    monkeypatch.setattr(lint, "quiz_report", lambda source=lint.SOURCE: report)
    before = lint.LINT_BASELINE.read_text()
    monkeypatch.setattr(lint, "LINT_BASELINE", tmp_path / "course-lint.json")
    lint.LINT_BASELINE.write_text(before)
    assert lint.main(update=True) == 1
    out = capsys.readouterr().out
    assert "blind strategy over the 35% target: m: best single letter 40% of 5 questions" in out
    assert lint.LINT_BASELINE.read_text() == before and "wrote" not in out, "a quiz passed blind was written as the baseline"


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


def _graded(source: str, grade_id: str, points: int, solution: bool = False):
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": not solution, "solution": solution, "points": points, "grade_id": grade_id}
    return cell


def test_a_modules_minutes_follow_the_reviews_assumptions():
    """§1.1 of the teaching review: 150 words a minute; 10 s a lesson cell and 4 s a line; 20 s an output; 2.5 min a
    live widget; 4 min an exercise point; 1 min a quiz question; 2 min Check my work; plus the measured Run All."""
    nb = nbformat.from_dict(new_notebook(cells=[
        new_markdown_cell(" ".join(["word"] * 300)),                     # 2 min
        new_code_cell("spark, bootstrap = streamlab.setup()"),           # setup: not a lesson cell
        new_code_cell("x = 1\nprint(x)"),                                 # 10 + 8 s, and an output: 20 s
        new_code_cell("demo = LiveDemo(spark, 't')\ndemo"),               # 10 + 8 s, an output, a widget: 170 s
        _graded("def f(): ...", "ex1", 0, solution=True),                # the learner's answer: not lesson code
        _graded("check('ex1')", "ex1_check", 3),                         # 3 points: 12 min
        new_markdown_cell("**Q1.** Which? a) x b) y c) z"),              # 8 words, 1 question: 1 min
        new_code_cell('quiz.options("q2", ["one two", "three"])'),     # options: 3 words read, not a lesson cell
    ]))
    m = lint.minutes(nb, run_all_s=90)
    assert (m.read, m.exercises, m.quiz, m.check) == (311 / 150, 12, 1, 2)
    assert m.run == (18 + 18 + 20 + 20 + 150) / 60
    assert round(m.total, 3) == round(311 / 150 + 226 / 60 + 12 + 1 + 2 + 1.5, 3) and m.stated == 20


def test_a_collapsed_going_deeper_section_is_left_out_of_the_main_path():
    deeper = new_markdown_cell("## Going deeper: the hash")
    deeper.metadata["jp-MarkdownHeadingCollapsed"] = True
    nb = nbformat.from_dict(new_notebook(cells=[
        new_markdown_cell("## Main"), deeper, new_markdown_cell(" ".join(["word"] * 150)),
        new_markdown_cell("### still inside"), new_markdown_cell("## Next section")]))
    assert [c.source[:12] for c in lint.main_path(nb).cells] == ["## Main", "## Going dee", "## Next sect"]


def test_a_stated_time_more_than_15_percent_off_fails_the_lint():
    computed = {"m": lint.Minutes(read=10, run=20, exercises=40, quiz=8, check=2)}  # 80 min
    assert lint.times_off(computed, {"m": {"frame": 80, "home": 92}}) == []
    assert lint.times_off(computed, {"m": {"frame": 93, "home": None}}) == [
        "m: frame says 93 min, computed 80: say about 80 min", "m: no stated time (home): say about 80 min"]


def test_every_module_states_the_time_it_takes():
    """Each module's *Time* line and START-HERE's module map give the computed minutes (§1.1's assumptions on the
    notebooks as they are, plus the measured Run All in tests/course-times.json) within 15 %."""
    runs = lint.measured()
    computed = lint.course_minutes()
    assert all(aid in runs for aid in computed), "a module's Run All was never measured: python -m grader.lint --measure"
    off = lint.times_off(computed, lint.stated_times())
    assert not off, off


def test_a_collapsed_heading_cell_that_holds_its_section_is_counted():
    """JupyterLab hides the cells under a collapsed heading, not the rest of the heading's own cell."""
    shut, open_ = new_markdown_cell("### Going deeper: x"), new_markdown_cell("### Going deeper: y\nA paragraph.")
    for cell in (shut, open_):
        cell.metadata["jp-MarkdownHeadingCollapsed"] = True
    nb = nbformat.from_dict(new_notebook(cells=[shut, new_markdown_cell("Hidden."), open_]))
    assert lint.measure(nb).open_deeper == 1


def _sitting(number: int):
    cell = new_markdown_cell(f"## Sitting {number} starts here\nRun the cell under **Setup**, then carry on.")
    cell.metadata["streamlab"] = {"sitting": number}
    return cell


def test_a_modules_sittings_add_up_to_its_minutes_and_check_my_work_counts_once():
    """Each sitting's minutes: the cells from its start to the next sitting's; Check my work in the last only; the
    measured Run All shared by each sitting's running of cells; a collapsed Going deeper left out of its main path."""
    deeper = new_markdown_cell("### Going deeper: why")
    deeper.metadata["jp-MarkdownHeadingCollapsed"] = True
    nb = nbformat.from_dict(new_notebook(cells=[
        new_markdown_cell("# Setup"), new_code_cell("spark, bootstrap = streamlab.setup()"),
        new_markdown_cell("## Lesson\n" + " ".join(["word"] * 300)),  # 302 words (+2 of Setup's)
        new_code_cell("x = 1\nprint(x)"),                                # 18 s + an output 20 s
        _sitting(2),                                                     # 13 words
        _graded("check('ex1')", "ex1_check", 3),                         # 12 min
        deeper, new_markdown_cell(" ".join(["word"] * 150)),             # 1 min, off the main path
    ]))
    assert lint.sitting_starts(nb) == [4] and lint.setup_cells(nb) == [1]
    (one, one_main), (two, two_main) = lint.sittings(nb, run_all_s=60)
    assert round(one, 3) == round(304 / 150 + 38 / 60 + 1, 3) and one_main == one    # all of Run All: only it runs
    assert round(two, 3) == round(167 / 150 + 12 + 2, 3) and round(two_main, 3) == round(17 / 150 + 12 + 2, 3)
    assert round(one + two, 3) == round(lint.minutes(nb, run_all_s=60).total, 3)
    assert [round(t, 3) for t, _ in lint.sittings(nbformat.from_dict(new_notebook(cells=nb.cells[:4])), 60)] == \
        [round(lint.minutes(nbformat.from_dict(new_notebook(cells=nb.cells[:4])), 60).total, 3)]


def test_a_sitting_over_80_minutes_of_main_path_fails_the_lint():
    computed = {"short": lint.Minutes(1, 1, 1, 1, 1, sittings_main=[40, 45]),
                "long": lint.Minutes(1, 1, 1, 1, 1, sittings_main=[81, 30]),
                "one": lint.Minutes(1, 1, 1, 1, 1, sittings_main=[90])}
    off = lint.sittings_off(computed)
    assert [line.split(":")[0] for line in off] == ["long", "one"] and "sitting 1 is 81 min" in off[0]
    assert 'start a second sitting' in off[1]


def test_stated_sittings_are_held_to_the_computed_ones():
    computed = {"m": lint.Minutes(read=10, run=20, exercises=40, quiz=8, check=2, sittings=[38, 42])}
    assert lint.times_off(computed, {"m": {"frame": 80, "frame sittings": [40, 40]}}) == []
    assert lint.times_off(computed, {"m": {"home sittings": [20, 60]}}) == [
        "m: home sittings say 20 + 60 min, computed 38 + 42: say (40 + 40)"]
    assert lint.times_off(computed, {"m": {"frame": 80}}) == [
        "m: no stated sittings (frame): after the total, say (40 + 40)"]


def test_the_stated_total_and_sittings_are_read_from_the_time_line_and_the_map(tmp_path):
    (tmp_path / "m1").mkdir()
    frame = new_markdown_cell("# M\n**Why it matters.** x\n\n**Time:** about 115 min, in two sittings (55 + 60): "
                              "25 reading. **You need:** module 0.")
    nbformat.write(new_notebook(cells=[frame]), tmp_path / "m1" / "m1.ipynb")
    nbformat.write(new_notebook(cells=[new_markdown_cell(
        "| module | must know | time |\n|---|---|---|\n| [01 · M](m1/m1.ipynb) | a (b) | 115 min (55 + 60) |")]),
        tmp_path / "START-HERE.ipynb")
    from unittest import mock

    with mock.patch.object(lint, "assignments", lambda source: ["m1"]):
        assert lint.stated_times(tmp_path) == {"m1": {"frame": 115, "home": 115, "frame sittings": [55, 60],
                                                      "home sittings": [55, 60]}}


def test_no_module_has_a_sitting_over_80_minutes():
    """Issue 29: a module longer than a sitting is taken in two, each at most SITTING_MAX minutes of main path."""
    off = lint.sittings_off(lint.course_minutes())
    assert not off, off
