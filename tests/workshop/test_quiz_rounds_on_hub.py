"""Check my work on a hub no longer pays for a letter copied from its own explanation (issue 30, item 3), graded for
real: the hub's checks service (workshop/checks.py) grades a learner's saved notebook with instructor.check, in the
sandbox, in the quiz rounds the hub keeps for her, and the instructor's grading of the room uses the same rounds.

The assignment is the grader's fixture (tests/fixtures/solutions/fx-basics) with its q1 shown as a course quiz shows
one, `quiz.options(...)` in each learner's own order, so grading it needs the lab broker but no Spark. Only root can
grade in the sandbox (CI runs as root).
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import nbformat
import pytest
from test_redteam_grading import account_removed_after  # noqa: F401 - the grading account, removed if made here
from test_redteam_limits import _FakeHub

from grader.course import released
from streamlab.course import quiz
from streamlab.course.variants import Variant, student_seed
from workshop import checks, instructor
from workshop.hub import Settings

pytestmark = [pytest.mark.broker, pytest.mark.timeout(1200),
              pytest.mark.skipif(os.geteuid() != 0, reason="the grading sandbox needs root (CI runs as root)")]

AID, KEY = "fx-basics", "b"  # q1's key, in the notebook's own order
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "solutions"
OPTIONS = ["in the consumer group", "in the query's checkpoint", "in ZooKeeper", "nowhere"]


def letter(name: str, turn: int) -> str:
    """The letter under which `name` sees q1's key in round `turn` (what her notebook's options cell shows then)."""
    return quiz.seen("q1", KEY, "abcd", drawn=Variant(AID, student_seed(name, AID), {"q1": turn} if turn else {}))


# The retrying learner: one whose own order shows q1's key under another letter in rounds 1 and 2 than in round 0
# (so a letter copied from round 0 and a grading in round 0 both tell); her seed is her name's (student_seed).
ADA = next(n for n in ("ada", "amy", "ana", "anna", "alma") if letter(n, 0) not in (letter(n, 1), letter(n, 2)))
TOKENS = {"ada-token": {"kind": "user", "name": ADA}, "bob-token": {"kind": "user", "name": "bob"}}


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """fx-basics with q1's options in a quiz.options cell (each learner's order) instead of its markdown's line."""
    source = tmp_path_factory.mktemp("course") / "solutions"
    shutil.copytree(FIXTURES / AID, source / AID)
    path = source / AID / f"{AID}.ipynb"
    nb = nbformat.read(path, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and "**q1.**" in c.source)
    nb.cells[at].source = nb.cells[at].source.split("\n(a)")[0]
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(f"quiz.options('q1', {OPTIONS!r})"))
    nbformat.write(nb, path)
    return source


@pytest.fixture
def room(tmp_path, course, account_removed_after):  # noqa: F811
    """A workshop folder with ada's and bob's homes, its checks service (graded for real), and a stand-in hub API."""
    settings = Settings(root=str(tmp_path / "workshop"))
    settings.save()
    hub = _FakeHub(TOKENS)
    service = checks.Service(Path(settings.root), hub.url, source=course,
                             grade=lambda s, aid, name: instructor.check(s, aid, name, source=course))
    try:
        yield settings, service
    finally:
        hub.close()


def hand_in(settings: Settings, course: Path, name: str, answer: str) -> None:
    """Save the released fixture in `name`'s home with q1 answered `answer` (the rest untouched)."""
    nb = json.loads((released(AID, course) / f"{AID}.ipynb").read_text())
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "q1_answer":
            cell["source"] = f"q1 = {answer!r}"
    path = settings.home(name) / "notebooks" / AID / f"{AID}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb))


def q1_points(answer: dict) -> float:
    return {gid: points for gid, points, _top in answer["exercises"]}["q1_offsets_home"]


def test_a_letter_copied_from_the_explanation_earns_nothing_and_the_new_round_s_right_letter_does(room, course,
                                                                                                  bootstrap):
    settings, service = room
    copied = letter(ADA, 0)
    wrong = next(c for c in "abcd" if c != copied)

    hand_in(settings, course, ADA, wrong)  # her first try: wrong; the explanation names the checkpoint
    first = service.handle("ada-token", {"assignment": AID})
    assert q1_points(first) == 0 and "Why: offsets live in the" in first["table"], first["table"]
    assert first["quiz"]["q1"]["round"] == 1 and "reshuffled" in first["table"], first

    # She copies the letter the checkpoint had in the order she was shown, sets her own quiz.json back to round 0
    # (so her cells show that order again) and says round 0 in her request: the hub grades round 1 all the same.
    hand_in(settings, course, ADA, copied)
    second = service.handle("ada-token", {"assignment": AID, "rounds": {"q1": 0},
                                          "quiz": {"q1": {"round": 0, "first": 1, "best": 1}}})
    assert q1_points(second) == 0, f"a copied letter earned the point: {second['table']}"
    turn = second["quiz"]["q1"]["round"]
    assert turn == 2, second["quiz"]

    # Bob's record is his own: her rounds are not his, so his round-0 letter earns his point.
    hand_in(settings, course, "bob", letter("bob", 0))
    bob = service.handle("bob-token", {"assignment": AID})
    assert q1_points(bob) == 1 and bob["quiz"]["q1"]["round"] == 0, bob

    # The right answer in the round her notebook now shows (the one the hub handed back) earns the point.
    hand_in(settings, course, ADA, letter(ADA, turn))
    third = service.handle("ada-token", {"assignment": AID})
    assert q1_points(third) == 1, third["table"]
    assert {k: third["quiz"]["q1"][k] for k in ("round", "first", "best", "checks")} == \
        {"round": 2, "first": 0, "best": 1, "checks": 3}
    assert third["summary"] == "quiz: 0 of 1 right at the first attempt, 1 at best"
    assert not any(p.name == "quiz.json" for p in settings.home(ADA).rglob("*")), "her home holds no hub record"

    # The instructor grades what the room saved in the same rounds: her round-2 letter (wrong in round 0) and bob's
    # round-0 letter.
    results = {r.student: r for r in instructor.grade(settings, AID, workers=2, source=course, quiet=True)}
    for name in (ADA, "bob"):
        points = {e.grade_id: e.points for e in results[name].exercises}
        assert results[name].graded and points["q1_offsets_home"] == 1, (name, results[name])
