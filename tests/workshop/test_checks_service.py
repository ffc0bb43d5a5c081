"""The hub's checks service (workshop/checks.py), without a hub or a grading: who may ask, what for, and how many at
once. Its real grading of a learner's notebook, asked from her kernel on a running hub, is in test_hub.py."""
from __future__ import annotations

import threading
import time

import pytest
from test_redteam_limits import _FakeHub

from grader.grading import Result
from workshop import checks
from workshop.hub import Settings
from workshop.instructor import NotCollected
from workshop.services import Refused

TOKENS = {"ada-token": {"kind": "user", "name": "ada"}, "bob-token": {"kind": "user", "name": "bob"},
          "cy-token": {"kind": "user", "name": "cy"}, "culler-token": {"kind": "service", "name": "ada"}}


class _SlowGrading:
    """Stands in for instructor.check: waits until released, records who was graded."""

    def __init__(self):
        self.release, self.graded = threading.Event(), []

    def __call__(self, settings, aid, name):
        if name == "cy":
            raise NotCollected("cy: no notebooks/00-setup/00-setup.ipynb")
        self.release.wait(30)
        self.graded.append((aid, name))
        return Result(student=name, assignment=aid, path=f"{name}/{aid}.ipynb", score=3.0, max_score=3.0)


@pytest.fixture
def service(tmp_path, monkeypatch):
    monkeypatch.setattr(checks, "SLOTS", 1)
    monkeypatch.setattr(checks, "QUEUE", 1)
    Settings(root=str(tmp_path)).save()
    hub, grading = _FakeHub(TOKENS), _SlowGrading()
    try:
        yield checks.Service(tmp_path, hub.url, grade=grading), grading
    finally:
        grading.release.set()
        hub.close()


def _refused(call) -> tuple[int, str]:
    with pytest.raises(Refused) as raised:
        call()
    return raised.value.status, str(raised.value)


def test_only_a_learner_s_own_token_for_a_course_assignment_is_graded(service):
    svc, grading = service
    assert _refused(lambda: svc.handle("", {"assignment": "00-setup"}))[0] == 401
    assert _refused(lambda: svc.handle("forged", {"assignment": "00-setup"}))[0] == 403
    assert _refused(lambda: svc.handle("culler-token", {"assignment": "00-setup"}))[0] == 403  # a service's
    status, said = _refused(lambda: svc.handle("ada-token", {"assignment": "fx-basics"}))
    assert status == 400 and "00-setup" in said, said
    status, said = _refused(lambda: svc.handle("cy-token", {"assignment": "00-setup"}))
    assert status == 404 and "nothing to grade" in said and "save it" in said, said
    grading.release.set()
    answer = svc.handle("ada-token", {"assignment": "00-setup"})
    assert answer["graded"] and answer["score"] == 3.0 and "score: 3 / 3" in answer["table"], answer
    assert answer["feedback"] == "feedback/00-setup/00-setup.html" and grading.graded == [("00-setup", "ada")]


def test_one_check_per_learner_and_a_bounded_queue_for_the_room(service):
    svc, grading = service
    answers = {}
    first = threading.Thread(target=lambda: answers.setdefault("ada", svc.handle("ada-token", {"assignment":
                                                                                               "00-setup"})))
    first.start()
    deadline = time.monotonic() + 10
    while "ada" not in svc._mine and time.monotonic() < deadline:
        time.sleep(0.05)
    status, said = _refused(lambda: svc.handle("ada-token", {"assignment": "01-source-internals"}))
    assert status == 409 and "running already" in said, said
    waiting = threading.Thread(target=lambda: answers.setdefault("bob", svc.handle("bob-token", {"assignment":
                                                                                                 "00-setup"})))
    waiting.start()  # ada holds the one slot: bob waits, and fills the queue of one
    while svc._waiting < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    TOKENS["dee-token"] = {"kind": "user", "name": "dee"}
    try:
        status, said = _refused(lambda: svc.handle("dee-token", {"assignment": "00-setup"}))
    finally:
        TOKENS.pop("dee-token")
    assert status == 429 and "try again in a minute" in said, said
    grading.release.set()
    first.join(30)
    waiting.join(30)
    assert sorted(answers) == ["ada", "bob"] and sorted(grading.graded) == [("00-setup", "ada"), ("00-setup", "bob")]
    assert not svc._mine and svc._waiting == 0


# -- the quiz record the hub keeps for each learner ------------------------------------------------------------------

WHY = "offsets live in the checkpoint"


class _QuizGrading:
    """Stands in for instructor.check with q1 answered as `answers[learner]` says (True: right); it notes the rounds
    the grader would grade her in (grader.grading.cohort_rounds, under the workshop's root as instructor.check sets
    it). The hints are those quiz.reveal writes."""

    def __init__(self):
        self.answers, self.rounds_graded = {}, []

    def __call__(self, settings, aid, name):
        from grader.grading import Exercise, cohort_rounds
        from streamlab.settings import set_environment

        with set_environment(STREAMLAB_WORKSHOP_ROOT=str(settings.root)):
            self.rounds_graded.append((name, cohort_rounds(name, aid)))
        right = self.answers[name]
        hint = f"✓ q1: right. Why: {WHY}" if right else f"✗ q1: your answer 'c' is not right. Why: {WHY}"
        return Result(student=name, assignment=aid, path=f"{name}/{aid}.ipynb", score=float(right), max_score=1.0,
                      exercises=[Exercise("q1_offsets_home", float(right), 1.0, "passed" if right else "failed", hint)])


@pytest.fixture
def quiz_service(tmp_path):
    Settings(root=str(tmp_path)).save()
    hub, grading = _FakeHub(TOKENS), _QuizGrading()
    try:
        yield checks.Service(tmp_path, hub.url, grade=grading), grading, tmp_path
    finally:
        hub.close()


def test_a_wrong_answer_moves_the_question_on_in_the_hub_s_record_and_the_next_check_is_graded_in_it(quiz_service):
    """The record is the hub's (quiz/<learner>.json in the workshop's folder, root's alone): the first check's wrong
    answer moves q1 to round 1, the next check is graded in round 1 whatever the request claims, the first mark stays
    0 while the best becomes 1, and the answer hands the rounds and the summary line back to her server."""
    svc, grading, root = quiz_service
    grading.answers["ada"] = False
    first = svc.handle("ada-token", {"assignment": "00-setup"})
    assert first["quiz"]["q1"]["round"] == 1 and first["quiz"]["q1"]["first"] == 0, first["quiz"]
    assert "q1: your answer was not right" in first["table"] and "reshuffled" in first["table"], first["table"]
    assert first["summary"] == "quiz: 0 of 1 right at the first attempt, 0 at best"
    folder = root / "quiz"
    assert (folder / "ada.json").is_file() and oct(folder.stat().st_mode & 0o777) == "0o700"
    assert not (root / "home").exists(), "nothing of the record is in (or beside) her home"

    grading.answers["ada"] = True
    second = svc.handle("ada-token", {"assignment": "00-setup", "rounds": {"q1": 0}, "quiz": {"q1": {"round": 0}}})
    assert grading.rounds_graded == [("ada", {}), ("ada", {"q1": 1})], "graded in the hub's round, not the request's"
    assert second["quiz"]["q1"] == {**second["quiz"]["q1"], "round": 1, "first": 0, "best": 1, "checks": 2}
    assert second["summary"] == "quiz: 0 of 1 right at the first attempt, 1 at best"


def test_each_learner_has_her_own_record(quiz_service):
    svc, grading, root = quiz_service
    grading.answers.update(ada=False, bob=True)
    svc.handle("ada-token", {"assignment": "00-setup"})
    svc.handle("ada-token", {"assignment": "00-setup"})
    bob = svc.handle("bob-token", {"assignment": "00-setup"})
    assert bob["quiz"]["q1"]["round"] == 0 and bob["quiz"]["q1"]["first"] == 1, bob["quiz"]
    assert grading.rounds_graded[-1] == ("bob", {}), "bob is graded in his own rounds, not ada's"
    from streamlab.course.quiz import load_record

    assert load_record(root / "quiz" / "ada.json")["00-setup"]["q1"]["round"] == 2
    assert load_record(root / "quiz" / "bob.json")["00-setup"]["q1"]["round"] == 0


def test_an_ungraded_check_moves_nothing(quiz_service):
    svc, grading, root = quiz_service

    def broken(settings, aid, name):
        return Result(student=name, assignment=aid, path="", graded=False, error="the broker stopped answering")

    svc._grade = broken
    answer = svc.handle("ada-token", {"assignment": "00-setup"})
    assert not answer["graded"] and answer["quiz"] == {} and answer["summary"] is None, answer


def test_the_learner_s_server_takes_the_hub_s_record_over_her_own_copy(tmp_path, monkeypatch, capsys):
    """Her Check my work on the hub writes the rounds the hub answered into her quiz.json, over whatever she wrote
    there: her cells then show the round her next check is graded in (a copy she edits shows her another order than
    the one graded, and the hub never reads it)."""
    from grader import notebook
    from streamlab.course import quiz
    from streamlab.lab import hubservice

    monkeypatch.setenv("STREAMLAB_HOME", str(tmp_path / "state"))
    mine = quiz.record_file()
    quiz.write_record(mine, {"00-setup": {"q1": {"round": 0, "first": 1, "best": 1, "checks": 1}},
                       "01-source-internals": {"q2": {"round": 3, "first": 0, "best": 0, "checks": 3}}})
    hub_entry = {"round": 1, "first": 0, "best": 0, "checks": 1, "checked": "2026-11-30 04:30"}
    answer = {"assignment": "00-setup", "table": "score: 2 / 3", "graded": True, "score": 2.0, "max": 3.0,
              "feedback": "feedback/00-setup/00-setup.html", "exercises": [],
              "quiz": {"q1": hub_entry}, "summary": "quiz: 0 of 1 right at the first attempt, 0 at best"}
    monkeypatch.setattr(hubservice, "ask", lambda url, body, timeout: answer)
    monkeypatch.setattr("grader.progress.record", lambda result: None)
    path = tmp_path / "00-setup.ipynb"
    assert notebook.check_on_hub(path, "http://127.0.0.1:1/services/checks") == 0
    said = capsys.readouterr().out
    assert "quiz: 0 of 1 right at the first attempt, 0 at best" in said, said
    assert quiz.load_record()["00-setup"] == {"q1": hub_entry}
    assert quiz.recorded_rounds("00-setup") == {"q1": 1}
    assert quiz.recorded_rounds("01-source-internals") == {"q2": 3}, "the other modules' records are kept"
    answer["quiz"] = {"q1": "round 0 please"}  # not a record: hers stays as it was, and she is told
    assert notebook.check_on_hub(path, "http://127.0.0.1:1/services/checks") == 0
    assert "could not write your quiz record" in capsys.readouterr().out
    assert quiz.recorded_rounds("00-setup") == {"q1": 1}


def test_a_hub_record_is_never_a_path_a_name_chooses(tmp_path):
    from streamlab.course.quiz import hub_record_file

    assert hub_record_file(tmp_path, "ada") == tmp_path / "quiz" / "ada.json"
    for name in ("", "..", ".ada", "../bob", "a/b"):
        with pytest.raises(ValueError):
            hub_record_file(tmp_path, name)


def test_outside_a_workshop_a_cohort_is_graded_in_round_0(tmp_path, monkeypatch):
    """`grader grade` of any folder of submissions: no hub recorded rounds, so round 0 (the workshop's grading sets
    $STREAMLAB_WORKSHOP_ROOT, and then each learner's recorded rounds count)."""
    from grader.grading import cohort_rounds
    from streamlab.course.quiz import hub_record_file, record_check

    record_check("00-setup", {"q1": False}, hub_record_file(tmp_path, "ada"))
    monkeypatch.delenv("STREAMLAB_WORKSHOP_ROOT", raising=False)
    assert cohort_rounds("ada", "00-setup") == {}
    monkeypatch.setenv("STREAMLAB_WORKSHOP_ROOT", str(tmp_path))
    assert cohort_rounds("ada", "00-setup") == {"q1": 1} and cohort_rounds("bob", "00-setup") == {}
    assert cohort_rounds("../ada", "00-setup") == {}
