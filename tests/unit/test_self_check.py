"""The ungraded Check yourself questions (streamlab.course.quiz.self_check, their texts in
streamlab.course.self_checks): a click answers at once with the explanation, the options in the learner's own order;
under the grader nothing is revealed; a notebook's cell names its question and holds no key; the site shows the
question with the answer folded."""
from __future__ import annotations

import nbformat
import pytest

from grader.course import SOURCE, assignments
from grader.site import self_check_html
from streamlab.course import quiz
from streamlab.course.self_checks import QUESTIONS, asked_in
from streamlab.course.variants import ASSIGNMENT_ENV, SEED_ENV

NAME = "02-1"  # a JSON start that names one of two partitions: Spark refuses it


def _box(monkeypatch, seed: int):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda box: shown.append(box))
    monkeypatch.delenv("STREAMLAB_GRADING", raising=False)
    monkeypatch.setenv(ASSIGNMENT_ENV, "02-offset-tracking")
    monkeypatch.setenv(SEED_ENV, str(seed))
    quiz.self_check(NAME)
    (box,) = shown
    return box.children[0], box.children[1:-1], box.children[-1]


def _right(buttons):
    asked = QUESTIONS[NAME]
    text = asked.options["abcd".index(asked.key)].replace("`", "")
    return next(b for b in buttons if b.description[3:] == text)


def test_a_click_answers_at_once_with_why_and_marks_the_buttons(monkeypatch):
    question, buttons, feedback = _box(monkeypatch, 1)
    # code spans, not backticks, and no <code>: in a widget that is a live demo's readout, which the browser tests read
    assert 'class="course-code"' in question.value and ">orders</span>" in question.value, question.value
    assert "`" not in question.value and "<code" not in question.value + feedback.value
    right = _right(buttons)
    wrong = next(b for b in buttons if b is not right)
    wrong.click()
    # her letters, and the right option's own text (for a learner who cannot tell the buttons' colours apart)
    assert f"Not {wrong.description[0]}: the answer is {right.description}" in feedback.value
    assert "TopicPartitions" in feedback.value
    assert (wrong.button_style, right.button_style) == ("danger", "success")
    right.click()
    assert "<b>✓ Right.</b>" in feedback.value and wrong.button_style == ""


def test_each_learner_sees_her_own_order_and_the_right_option_wins_in_each(monkeypatch):
    """The letter written in the course is not the one to click: across seeds the right option sits under every
    letter, and wins under each."""
    letters = set()
    for seed in range(40):
        _, buttons, feedback = _box(monkeypatch, seed)
        assert sorted(b.description[3:] for b in buttons) == sorted(o.replace("`", "") for o in QUESTIONS[NAME].options)
        right = _right(buttons)
        right.click()
        assert "<b>✓ Right.</b>" in feedback.value, (seed, feedback.value)
        letters.add(right.description[0])
    assert letters == {"a", "b", "c", "d"}, letters


def test_under_the_grader_it_only_prints_the_question(monkeypatch, capsys):
    monkeypatch.setenv("STREAMLAB_GRADING", "1")
    quiz.self_check(NAME)
    out = capsys.readouterr().out
    assert out.startswith("Check yourself: A new query") and "a) " in out and "TopicPartitions" not in out


def test_a_question_the_course_does_not_have_is_named():
    with pytest.raises(KeyError, match="no Check yourself question '99-1' in streamlab/course/self_checks.py"):
        quiz.self_check("99-1")


def test_every_question_is_asked_once_by_a_short_cell_that_holds_no_key_and_reads_on_the_site():
    """Each question of self_checks.py is asked by exactly one notebook cell, which names it and shows no option,
    key or explanation; its key is one of its options; the site shows it with the answer after the options."""
    asked = []
    for aid in assignments(SOURCE):
        for cell in nbformat.read(SOURCE / aid / f"{aid}.ipynb", as_version=4).cells:
            names = asked_in(cell.source) if cell.cell_type == "code" else []
            if not names:
                continue
            asked += names
            assert all(name.startswith(aid[:2] + "-") for name in names), (aid, names)
            assert len(cell.source.splitlines()) == 1 + len(names), f"{aid} {cell.get('id')}: {cell.source}"
            assert not cell.metadata.get("jupyter", {}).get("source_hidden"), f"{aid}: a folded cell is skipped"
    assert sorted(asked) == sorted(QUESTIONS), set(asked) ^ set(QUESTIONS)
    for name, question in QUESTIONS.items():
        assert question.key in "abcde"[:len(question.options)] and len(question.options) >= 3, name
        page = self_check_html(name)
        assert page.count("<li>") == len(question.options) and "<details><summary>Answer</summary>" in page, page
        assert page.index("<details>") > page.index("</ul>"), "the answer shows before the options"
