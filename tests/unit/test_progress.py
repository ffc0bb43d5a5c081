"""A learner's progress (grader/progress.py): every Check my work is kept, the table says what is done and left, and
a team lead reads a folder of exported files as one table."""
from __future__ import annotations

import json

from grader import progress
from grader.course import RELEASE, assignments
from grader.grading import Exercise, Result

N = len(assignments(RELEASE))  # the course's modules, as the table counts them


def _result(aid, points, graded=True):
    exercises = [Exercise("ex1_cap", points[0], 2, "ok"), Exercise("q1_offsets", points[1], 1, "ok")]
    return Result("learner", aid, f"{aid}.ipynb", exercises, sum(points), 3, graded=graded)


def test_checks_are_kept_and_the_table_says_what_is_done_and_left(tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMLAB_HOME", str(tmp_path / "home"))
    assert f"0 of {N} modules complete; press Check my work" in progress.table()
    progress.record(_result("00-setup", (2, 1)))
    progress.record(_result("01-source-internals", (0, 1)))
    progress.record(_result("02-offset-tracking", (2, 1), graded=False))  # the machine's fault: no score kept
    table = progress.table()
    assert "00-setup" in table and "3 / 3  done" in table
    assert "1 / 3  left: ex1_cap" in table
    assert table.count("not checked yet") == N - 2 and f"1 of {N} modules complete" in table
    progress.record(_result("01-source-internals", (2, 1)))  # the latest check replaces the earlier one
    assert f"2 of {N} modules complete" in progress.table()


def test_a_team_lead_reads_a_folder_of_exports_as_one_table(tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMLAB_HOME", str(tmp_path / "ada"))
    progress.record(_result("00-setup", (2, 1)))
    team = tmp_path / "team"
    team.mkdir()
    progress.export(team / "ada.json", "ada")
    monkeypatch.setenv("STREAMLAB_HOME", str(tmp_path / "bob"))
    progress.record(_result("00-setup", (0, 1)))
    progress.export(team / "bob.json", "bob")
    (team / "broken.json").write_text("{not json")
    assert json.loads((team / "ada.json").read_text())["learner"] == "ada"
    rows = progress.team(team).splitlines()
    ada = next(r for r in rows if r.startswith("ada"))
    bob = next(r for r in rows if r.startswith("bob"))
    assert "3/3" in ada and f"1 of {N}" in ada and "1/3" in bob and f"0 of {N}" in bob
    assert any("broken.json (unreadable)" in r for r in rows)
    (tmp_path / "empty").mkdir()
    assert "no exported progress files" in progress.team(tmp_path / "empty")
