"""The learner's quiz record: per question its round, the first attempt's mark and the best mark.

Why a module of its own: the quiz (streamlab.course.quiz) writes the record and reads it to grade, and the
learner's numbers (streamlab.course.variants) read its rounds to draw a question's numbers anew, while the quiz draws
its options' order from those numbers; with the record here, both import it and neither imports the other back.
The record is `$STREAMLAB_HOME/quiz.json` on a laptop, `quiz/<learner>.json` in a workshop's folder on a hub.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from streamlab.settings import settings


def record_file() -> Path:
    """Where this learner's quiz record is kept ($STREAMLAB_HOME/quiz.json)."""
    from streamlab.lab.jars import state_dir

    return state_dir() / "quiz.json"


def hub_record_file(root: str | Path, learner: str) -> Path:
    """Where a workshop's checks service keeps learner `learner`'s quiz record: in the workshop's own folder (root's,
    never the learner's home), `quiz/<learner>.json`, the same shape as quiz.json (workshop/checks.py)."""
    if not learner or learner.startswith(".") or Path(learner).name != learner:
        raise ValueError(f"{learner!r} is not a learner's name")
    return Path(root) / "quiz" / f"{learner}.json"


def load_record(path: Path | None = None) -> dict[str, dict]:
    """{assignment: {question: {round, first, best, checks}}} (empty when there is none or it cannot be read)."""
    try:
        data = json.loads((path or record_file()).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    found = data.get("assignments") if isinstance(data, dict) else None
    return found if isinstance(found, dict) else {}


def rounds(assignment: str) -> dict[str, int]:
    """{question: round} of an assignment: what the grader passed ($STREAMLAB_QUIZ_ROUNDS), else the record's."""
    given = settings.quiz_rounds
    return recorded_rounds(assignment) if given is None else given


def recorded_rounds(assignment: str, path: Path | None = None) -> dict[str, int]:
    """{question: round} of an assignment in the learner's record (the questions never answered wrongly: none)."""
    entries = load_record(path).get(assignment, {})
    return {q: int(e.get("round", 0)) for q, e in entries.items() if isinstance(e, dict) and e.get("round")}


def record_check(assignment: str, marks: dict[str, bool], path: Path | None = None) -> list[str]:
    """Keep one Check my work's quiz marks ({question: right}, the questions it answered and explained): the first
    mark stays, the best is kept, and each wrong answer moves its question to its next round. Returns those
    questions (empty when the record cannot be written: a read-only home keeps the rounds as they were)."""
    path = path or record_file()
    data = load_record(path)
    entries = data.setdefault(assignment, {})
    moved = []
    for question, right in sorted(marks.items()):
        entry = entries.setdefault(question, {"round": 0, "first": int(right), "best": 0, "checks": 0})
        entry["best"] = max(int(entry.get("best", 0)), int(right))
        entry["checks"] = int(entry.get("checks", 0)) + 1
        if not right:
            entry["round"] = int(entry.get("round", 0)) + 1
            moved.append(question)
    when = time.strftime("%Y-%m-%d %H:%M")
    for question in marks:
        entries[question]["checked"] = when
    return moved if write_record(path, data) else []


def keep_record(assignment: str, entries: dict, path: Path | None = None) -> bool:
    """Take an assignment's record as a workshop's hub keeps it (its checks service graded in those rounds): her
    notebook's cells then show the rounds graded. False when it cannot be written, or `entries` is not a record."""
    if not isinstance(entries, dict):
        return False
    kept = {}
    for question, entry in entries.items():
        if not isinstance(entry, dict):
            return False
        try:
            kept[question] = {**{k: int(entry.get(k, 0)) for k in ("round", "first", "best", "checks")},
                              **({"checked": str(entry["checked"])} if "checked" in entry else {})}
        except (TypeError, ValueError):
            return False
    path = path or record_file()
    data = load_record(path)
    data[assignment] = kept
    return write_record(path, data)


def write_record(path: Path, data: dict) -> bool:
    """Write a record {assignment: {question: entry}} in one step; False when it cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_suffix(".tmp")
        temp.write_text(json.dumps({"assignments": data}, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(temp, path)
    except OSError:
        return False
    return True


def summary(assignment: str, record: dict | None = None) -> str | None:
    """One line for an assignment's quiz: right at the first attempt and at best, of the questions answered."""
    entries = (load_record() if record is None else record).get(assignment) or {}
    if not entries:
        return None
    first = sum(int(e.get("first", 0)) for e in entries.values())
    best = sum(int(e.get("best", 0)) for e in entries.values())
    return f"quiz: {first} of {len(entries)} right at the first attempt, {best} at best"
