"""Quiz options shuffled per learner, and feedback that teaches without becoming an answer key
(streamlab.course.quiz): each learner sees the options in her seed's order and answers with the letter she sees; the
grader maps it back, so the right option earns the point under every seed while a letter passed between learners is
worth a guess. A wrong answer's explanation names the right option, so that question comes back in its next round
(options reshuffled, numbers drawn again), and the record keeps the first attempt's mark beside the best."""
from __future__ import annotations

import json
import re

import nbformat
import pytest

from grader import lint, progress
from grader.course import SOURCE, assignments
from grader.grading import Exercise, Result
from streamlab.course import quiz, variants
from streamlab.course.checks import recording
from streamlab.course.variants import Variant

AID = "02-offset-tracking"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A learner's own STREAMLAB_HOME, no grader in force, a fixed seed."""
    monkeypatch.setenv("STREAMLAB_HOME", str(tmp_path))
    monkeypatch.setenv("STREAMLAB_ASSIGNMENT", AID)
    monkeypatch.setenv("STREAMLAB_SEED", "1234")
    monkeypatch.delenv(quiz.ROUNDS_ENV, raising=False)
    return tmp_path


def graded(answer, key: str, name: str = "q1", choices: str = "abcd") -> bool:
    """Judge one answer as the grader does (check_format, then reveal, in the grader's recording)."""
    with recording() as outcomes:
        quiz.check_format(answer, choices, name=name)
        quiz.reveal(answer, key, "because", name=name)
    return outcomes[-1].passed


def test_the_right_option_earns_the_point_under_every_seed_in_the_letter_the_learner_sees(monkeypatch, home):
    orders = set()
    for seed in range(60):
        monkeypatch.setenv("STREAMLAB_SEED", str(seed))
        drawn = variants.variant()
        order = quiz.order("q1", 4, drawn)
        assert sorted(order) == [0, 1, 2, 3]
        orders.add(tuple(order))
        for key in "abcd":
            shown = quiz.seen("q1", key, drawn=drawn)
            assert quiz.canonical("q1", shown, drawn=drawn) == key
            assert graded(shown, key) and graded(shown.upper() + " ", key), (seed, key)
            assert not any(graded(other, key) for other in "abcd" if other != shown), (seed, key)
    assert len(orders) > 12, "the order is drawn from the seed, not fixed"
    monkeypatch.setenv("STREAMLAB_SEED", "7")  # a three-option question (00-setup's)
    assert graded(quiz.seen("q1", "b", "abc"), "b", choices="abc")


def test_a_key_shared_between_learners_is_worth_a_guess():
    """Learner A's right letters, handed to learner B: right about one time in four, over many pairs."""
    hits = total = 0
    for a in range(200):
        first, second = Variant(AID, a), Variant(AID, a + 1000)
        for q in range(1, 11):
            key = "abcd"[q % 4]
            letter = quiz.seen(f"q{q}", key, drawn=first)
            hits += quiz.canonical(f"q{q}", letter, drawn=second) == key
            total += 1
    assert 0.18 < hits / total < 0.32, hits / total


def test_a_wrong_answer_moves_its_question_on_and_the_record_keeps_first_and_best(home):
    assert quiz.record_check(AID, {"q1": False, "q2": True}) == ["q1"]
    assert quiz.rounds(AID) == {"q1": 1}, "only the wrong answer's question comes back"
    assert quiz.record_check(AID, {"q1": True, "q2": True}) == []
    assert quiz.record_check(AID, {"q3": False}) == ["q3"]
    record = json.loads((home / "quiz.json").read_text())["assignments"][AID]
    assert (record["q1"]["first"], record["q1"]["best"], record["q1"]["round"]) == (0, 1, 1)
    assert (record["q2"]["first"], record["q2"]["best"], record["q2"]["checks"]) == (1, 1, 2)
    assert quiz.summary(AID) == "quiz: 1 of 3 right at the first attempt, 2 at best"
    assert quiz.summary("03-consumer-lag") is None


def test_the_grader_passes_the_rounds_and_they_win_over_the_record(home, monkeypatch):
    quiz.record_check(AID, {"q1": False})
    monkeypatch.setenv(quiz.ROUNDS_ENV, "{}")  # a cohort's grading: round 0, what the hub's notebooks show
    assert quiz.rounds(AID) == {} and variants.variant().rounds == {}
    monkeypatch.setenv(quiz.ROUNDS_ENV, '{"q7": 2}')
    assert quiz.rounds(AID) == {"q7": 2}
    monkeypatch.delenv(quiz.ROUNDS_ENV)
    from grader.grading import DEFAULT_STUDENT, quiz_rounds_graded

    nb = nbformat.read(SOURCE / AID / f"{AID}.ipynb", as_version=4)
    own, cohort = quiz_rounds_graded(DEFAULT_STUDENT, AID, nb), quiz_rounds_graded("ada", AID, nb)
    assert json.loads(own[quiz.ROUNDS_ENV]) == {"q1": 1} and json.loads(cohort[quiz.ROUNDS_ENV]) == {}
    assert own[quiz.SHUFFLED_ENV] == cohort[quiz.SHUFFLED_ENV] == "q1,q2,q3,q4,q5,q6,q8,q9,q10", "Q7 is a number"
    old_copy, notes = nbformat.from_dict(nb), []  # a learner's copy made before the options were shuffled
    old_copy.cells = [cell for cell in old_copy.cells if "quiz.options(" not in cell.source]
    assert quiz_rounds_graded("ada", AID, nb, old_copy, notes)[quiz.SHUFFLED_ENV] == ""
    assert len(notes) == 1 and "graded as shown" in notes[0]
    assert quiz_rounds_graded("ada", AID, nb, nb, notes)[quiz.SHUFFLED_ENV] and len(notes) == 1


def test_a_question_lettered_in_its_markdown_is_graded_in_its_own_letters(home, monkeypatch):
    """A notebook without options cells (the grader's own fixtures) shows its options in its own order."""
    monkeypatch.setenv(quiz.SHUFFLED_ENV, "q2")
    monkeypatch.setenv("STREAMLAB_SEED", "3")
    assert graded("b", "b", name="q1") and not graded("a", "b", name="q1")
    assert graded(quiz.seen("q2", "b"), "b", name="q2")
    assert any(not graded(quiz.seen("q2", "b", drawn=Variant(AID, s, {})), "b", name="q2") for s in range(4, 12))


def test_a_new_round_reshuffles_the_options_and_draws_the_questions_numbers_again():
    moved_order = moved_numbers = 0
    for seed in range(100):
        before, after = Variant(AID, seed, {}), Variant(AID, seed, {"q7": 1})
        moved_order += quiz.order("q7", 4, before) != quiz.order("q7", 4, after)
        moved_numbers += before.numbers("q7", start=(5, 45), end=(55, 99)) != after.numbers("q7", start=(5, 45),
                                                                                            end=(55, 99))
        assert before.randint("q6.x", 0, 10**6) == after.randint("q6.x", 0, 10**6), "another question keeps its"
        assert before.randint("ex1.n", 0, 10**6) == after.randint("ex1.n", 0, 10**6), "exercises keep theirs"
        assert Variant(AID, seed).randint("q7.start", 0, 10**6) == before.randint("q7.start", 0, 10**6), \
            "round 0 is the first variant: the numbers learners had before rounds existed"
    assert moved_order > 85 and moved_numbers > 95, (moved_order, moved_numbers)


def test_the_visible_check_says_when_check_my_work_moved_the_question_on(home, capsys, monkeypatch):
    # outside a kernel the options are printed (an IPython shell another test left behind would display them)
    monkeypatch.setattr("IPython.get_ipython", lambda: None)
    quiz.options("q2", ["one", "two", "three", "four"])
    shown = capsys.readouterr().out
    assert re.findall(r"^- ([a-d])\) ", shown, re.M) == list("abcd") and "Reshuffled" not in shown, shown
    quiz.check_format("b", "abcd", name="q2")
    assert "recorded" in capsys.readouterr().out
    quiz.record_check(AID, {"q2": False})
    quiz.check_format("b", "abcd", name="q2")
    assert "new (try 2" in capsys.readouterr().out, "its options were reshuffled since the cell ran"
    quiz.options("q2", ["one", "two", "three", "four"])
    assert "Reshuffled (try 2)" in capsys.readouterr().out
    quiz.check_format("b", "abcd", name="q2")
    assert "recorded" in capsys.readouterr().out


def test_a_check_records_its_quiz_marks_and_progress_shows_first_and_best(home, monkeypatch):
    monkeypatch.setattr(progress, "assignments", lambda *_: [AID])
    result = Result("learner", AID, "x.ipynb", exercises=[
        Exercise("q1_restart", 0, 1, "failed", "✗ q1: your answer 'c' is not right. Why: the checkpoint wins."),
        Exercise("q2_pending", 1, 1, "passed", "✓ q2: right. Why: offsets/N comes first."),
        Exercise("q3_json", 0, 1, "failed", "✗ q3: your answer None is not right (not answered yet)"),
        Exercise("ex1_cap", 0, 2, "failed", "✗ ex1 — found 3. Hint: read section 4")])
    assert progress.quiz_marks(result) == {"q1": False, "q2": True}
    assert progress.record_quiz(result) == ["q1"]
    assert any(note.startswith("q1: your answer was not right") and "reshuffled" in note for note in result.notes)
    assert quiz.rounds(AID) == {"q1": 1}
    assert f"{AID:<24}quiz: 1 of 2 right at the first attempt, 1 at best" in progress.table({})


def test_every_notebook_question_shows_as_many_options_as_its_check_accepts():
    """The options cell, the visible check's letters and the hidden key agree in every solution notebook."""
    for aid in assignments(SOURCE):
        nb = nbformat.read(SOURCE / aid / f"{aid}.ipynb", as_version=4)
        written, keys = lint.written_options(nb), lint.lettered(nb)
        accepted = {int(n): letters for cell in nb.cells if cell.cell_type == "code"
                    for n, letters in re.findall(r'check_format\(q(\d+), "([a-e]+)"', cell.source)}
        assert written and set(written) == set(keys) == set(accepted), aid
        for n, options in written.items():
            assert "".join(options) == accepted[n] and keys[n] in options, (aid, n)
            assert not any(re.search(r"^\s*-?\s*[a-e]\) ", c.source, re.M) for c in nb.cells
                           if c.cell_type == "markdown" and f"**Q{n}." in c.source), \
                f"{aid} Q{n}: its options are shown in the learner's order, not lettered in the markdown"
