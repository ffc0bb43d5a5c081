"""A learner's progress across the course: the last Check my work of every module, kept on the learner's machine.

Why: a self-paced learner wants to see what is done and what is left, and a team lead onboarding engineers wants
one table for the team without running a hub. Every `check` (the Check my work button and `python -m grader
check`) records its score here, in `$STREAMLAB_HOME/progress.json` (default `.streamlab/`); `python -m grader
progress` and the home notebook (START-HERE) print the table; `--export` writes it as one file a learner hands in,
and `--team FOLDER` reads a folder of those files as one table. Nothing is sent anywhere.
The quizzes' first-attempt and best marks come from the quiz record beside it ($STREAMLAB_HOME/quiz.json,
streamlab.course.quiz), which each check updates too.
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from .course import RELEASE, assignments


def progress_file() -> Path:
    """Where this learner's progress is kept."""
    from streamlab.lab.jars import state_dir

    return state_dir() / "progress.json"


def load(path: Path | None = None) -> dict[str, dict]:
    """{module: its last check} from the progress file (empty when there is none or it cannot be read)."""
    path = path or progress_file()
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data.get("modules", {}) if isinstance(data, dict) else {}


def record(result) -> None:
    """Keep a finished check's score (a grading.Result) as its module's latest; never fails the check itself."""
    if not getattr(result, "graded", False):
        return
    modules = load()
    left = [e.grade_id for e in getattr(result, "exercises", []) if e.points < e.max_points]
    modules[result.assignment] = {"score": result.score, "max_score": result.max_score, "left": left,
                                  "checked": time.strftime("%Y-%m-%d %H:%M")}
    path = progress_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_suffix(".tmp")
        temp.write_text(json.dumps({"modules": modules}, indent=1))
        os.replace(temp, path)
    except OSError:
        pass  # a read-only home: the score is still on screen and in feedback/


QUIZ_LINE = re.compile(r"(?:^|\| )[✓✗] (q\d+): (right|your answer .*? is not right)\. Why: ")


def quiz_marks(result) -> dict[str, bool]:
    """{question: right} of the quiz answers a check graded and explained (unanswered ones are not in it)."""
    marks = {}
    for exercise in getattr(result, "exercises", []):
        for question, verdict in QUIZ_LINE.findall(exercise.hint or ""):
            marks[question] = verdict == "right"
    return marks


def record_quiz(result, path=None) -> list[str]:
    """Keep a finished check's quiz marks in the learner's record (streamlab.course.quiz: first attempt and best;
    `path`: another record than this machine's, the hub's for one learner); the questions answered wrongly come back
    in their next round, which a note under the table says."""
    from streamlab.course.quiz import record_check

    marks = quiz_marks(result) if getattr(result, "graded", False) else {}
    moved = record_check(result.assignment, marks, path) if marks else []
    if moved:
        result.notes.append(f"{', '.join(moved)}: your answer was not right, and the explanation above gives the "
                            "right one away; so for your next try the question comes back with its options reshuffled "
                            "(and new numbers): run its cells again and answer from what they show")
    return moved


def _score(entry: dict | None) -> str:
    if not entry:
        return "not checked yet"
    score, top = entry["score"], entry["max_score"]
    mark = "done" if score >= top else f"left: {', '.join(entry['left'][:3])}" + ("…" if len(entry["left"]) > 3 else "")
    return f"{score:g} / {top:g}  {mark}"


def table(modules: dict[str, dict] | None = None) -> str:
    """This learner's progress as a text table, one module a row, with a total."""
    modules = load() if modules is None else modules
    ids = assignments(RELEASE) or sorted(modules)
    rows = [f"{'module':<24}{'last check':<18}score"]
    for aid in ids:
        entry = modules.get(aid)
        rows.append(f"{aid:<24}{(entry or {}).get('checked', '-'):<18}{_score(entry)}")
    done = sum(1 for aid in ids if modules.get(aid) and modules[aid]["score"] >= modules[aid]["max_score"])
    rows.append(f"{done} of {len(ids)} modules complete" + ("" if modules else
                "; press Check my work in a module (or run python -m grader check) to record its score"))
    rows += quiz_lines(ids)
    from streamlab.course.mock import progress_lines

    rows += ["", *progress_lines()]  # the mock interviews and design rounds, per topic
    return "\n".join(rows)


def quiz_lines(ids: list[str]) -> list[str]:
    """Per module with a quiz record: right at the first attempt (the first check that graded each answer) and at
    best, from $STREAMLAB_HOME/quiz.json."""
    from streamlab.course.quiz import load_record, summary

    record = load_record()
    lines = [f"{aid:<24}{line}" for aid in ids for line in [summary(aid, record)] if line]
    return ["", "quizzes (first attempt / best):", *lines] if lines else []


def show() -> None:
    """Print this learner's progress (the home notebook's cell)."""
    print(table())


def export(out: Path, learner: str) -> Path:
    """Write this learner's progress as one file a team lead collects."""
    out.write_text(json.dumps({"learner": learner, "exported": time.strftime("%Y-%m-%d %H:%M"),
                               "modules": load()}, indent=1))
    return out


def team(folder: Path) -> str:
    """One table for a team from a folder of exported progress files: a learner a row, a module a column."""
    files = sorted(folder.glob("*.json"))
    people = []
    for path in files:
        try:
            data = json.loads(path.read_text())
            people.append((str(data["learner"]), data.get("modules", {})))
        except (OSError, ValueError, KeyError, TypeError):
            people.append((f"{path.name} (unreadable)", {}))
    if not people:
        return f"no exported progress files (*.json) in {folder}: each learner runs python -m grader progress --export"
    ids = assignments(RELEASE) or sorted({aid for _n, mods in people for aid in mods})
    head = f"{'learner':<26}" + "".join(f"{aid[:2]:>7}" for aid in ids) + "   complete"
    rows = [head]
    for name, mods in people:
        cells = [f"{mods[a]['score']:g}/{mods[a]['max_score']:g}" if a in mods else "-" for a in ids]
        done = sum(1 for a in ids if a in mods and mods[a]["score"] >= mods[a]["max_score"])
        rows.append(f"{name[:25]:<26}" + "".join(f"{c:>7}" for c in cells) + f"   {done} of {len(ids)}")
    return "\n".join(rows)
