"""The ungraded Check yourself questions (streamlab.course.quiz.self_check): a click answers at once with the
explanation, its options in the learner's own order; under the grader nothing is revealed."""
from __future__ import annotations

import pytest

from streamlab.course import quiz
from streamlab.course.variants import ASSIGNMENT_ENV, SEED_ENV

OPTIONS = ["the consumer group", "the checkpoint", "the broker's log", "nowhere"]
QUESTION = "Where does Spark keep a query's offsets?"


def _box(monkeypatch, seed: int):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda box: shown.append(box))
    monkeypatch.delenv("STREAMLAB_GRADING", raising=False)
    monkeypatch.setenv(ASSIGNMENT_ENV, "02-offset-tracking")
    monkeypatch.setenv(SEED_ENV, str(seed))
    quiz.self_check(QUESTION, OPTIONS, "b", "offsets/N and commits/N in the checkpoint")
    (box,) = shown
    return box.children[1:-1], box.children[-1]


def test_a_click_answers_at_once_with_why(monkeypatch):
    buttons, feedback = _box(monkeypatch, 1)
    right = next(b for b in buttons if b.description.endswith("the checkpoint"))
    wrong = next(b for b in buttons if b is not right)
    wrong.click()
    letter = right.description[0]
    assert f"Not {wrong.description[0]}: the answer is {letter}" in feedback.value and "checkpoint" in feedback.value
    right.click()
    assert feedback.value.startswith("<b>✓ Right")


def test_each_learner_sees_her_own_order_and_the_right_option_wins_in_each(monkeypatch):
    """The letter written in the cell is not the one to click: across seeds the checkpoint sits under every letter."""
    letters = set()
    for seed in range(12):
        buttons, feedback = _box(monkeypatch, seed)
        assert sorted(b.description[3:] for b in buttons) == sorted(OPTIONS)
        right = next(b for b in buttons if b.description.endswith("the checkpoint"))
        right.click()
        assert feedback.value.startswith("<b>✓ Right"), (seed, feedback.value)
        letters.add(right.description[0])
    assert letters == {"a", "b", "c", "d"}, letters


def test_under_the_grader_it_only_prints_the_question(monkeypatch, capsys):
    monkeypatch.setenv("STREAMLAB_GRADING", "1")
    quiz.self_check("Q?", ["x", "y", "z"], "c", "because")
    out = capsys.readouterr().out
    assert "Check yourself: Q?" in out and ") z" in out and "because" not in out


def test_a_key_that_is_no_option_is_refused():
    with pytest.raises(ValueError, match="key 'e' is not one of a, b, c"):
        quiz.self_check("Q?", ["x", "y", "z"], "e", "why")


def test_every_check_yourself_cell_folds_its_code_and_reads_on_the_site():
    """In the notebook the cell's code (its key) is folded away; the site shows its question, the answer folded."""
    import nbformat

    from grader.course import SOURCE, assignments
    from grader.site import self_check_html

    seen = 0
    for aid in assignments(SOURCE):
        for cell in nbformat.read(SOURCE / aid / f"{aid}.ipynb", as_version=4).cells:
            if cell.cell_type != "code" or "quiz.self_check(" not in cell.source:
                continue
            seen += 1
            assert cell.metadata.get("jupyter", {}).get("source_hidden"), f"{aid} {cell.get('id')}: code not folded"
            page = self_check_html(cell.source)
            assert page and page.count("<li>") >= 3 and "<details><summary>Answer</summary>" in page, (aid, page)
            assert page.index("<details>") > page.index("</ol>"), "the answer shows before the options"
    assert seen >= 20, seen
