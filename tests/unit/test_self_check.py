"""The ungraded Check yourself questions (streamlab.course.quiz.self_check): a click answers at once with the
explanation; under the grader nothing is revealed."""
from __future__ import annotations

import pytest

from streamlab.course import quiz


def test_a_click_answers_at_once_with_why(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda box: shown.append(box))
    monkeypatch.delenv("STREAMLAB_GRADING", raising=False)
    quiz.self_check("Where does Spark keep a query's offsets?", ["the consumer group", "the checkpoint",
                    "the broker's log", "nowhere"], "b", "offsets/N and commits/N in the checkpoint")
    (box,) = shown
    buttons, feedback = box.children[1:-1], box.children[-1]
    buttons[0].click()
    assert "Not a: the answer is b" in feedback.value and "checkpoint" in feedback.value
    buttons[1].click()
    assert feedback.value.startswith("<b>✓ Right")


def test_under_the_grader_it_only_prints_the_question(monkeypatch, capsys):
    monkeypatch.setenv("STREAMLAB_GRADING", "1")
    quiz.self_check("Q?", ["x", "y", "z"], "c", "because")
    out = capsys.readouterr().out
    assert "Check yourself: Q?" in out and "c) z" in out and "because" not in out


def test_a_key_that_is_no_option_is_refused():
    with pytest.raises(ValueError, match="key 'e' is not one of a, b, c"):
        quiz.self_check("Q?", ["x", "y", "z"], "e", "why")
