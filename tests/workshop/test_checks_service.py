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
