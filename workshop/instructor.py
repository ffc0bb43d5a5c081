"""The instructor's side of a workshop: collect the room's notebooks, grade them as a cohort, hand back feedback,
regrade one learner, and export the grades for an LMS.

Grading is `grader grade` (grader/cohort.py): every notebook in its own sandbox, `workers` at once (one per core
by default), each learner with the variant seeds the hub gave them (`student_seed(learner, assignment)`), so the
numbers a learner worked with are the numbers they are graded with, and each in the quiz rounds the hub's checks
service recorded for her (checks.py; grader.grading.cohort_rounds): a learner whose Check my work moved a question
to a new round sees that round's options in her notebook, and is graded in its letters. The grader runs on the
instructor's own lab broker ($STREAMLAB_BROKER_PORT), not on the room's: grading never competes with a live lesson
for the room's quotas, and the learners' credentials never reach a graded kernel.

Folders under the workshop root: `collected/<assignment>/<learner>/<assignment>/<assignment>.ipynb` (nbgrader's
submitted layout), `grades/<assignment>/{grades.csv,messages.csv,feedback/}`; in each learner's home
`feedback/<assignment>/<assignment>.html` and `feedback/<assignment>/grade.txt`.

These commands run as root and the homes are the learners': every read and write there goes through
workshop.homes, which follows no link a learner planted. A collected notebook is the learner's own file or
nothing (a linked folder on the way, or someone else's file, is refused and the output says so); a home whose
`~/feedback` is a link gets no feedback, with a line saying why.
"""
from __future__ import annotations

import csv
import os
import shutil
import sys
import tempfile
from pathlib import Path

from workshop import disks, homes
from workshop.hub import SYSTEM_PREFIX, Settings


def learners(settings: Settings) -> list[str]:
    """Every learner with a home in the workshop, sorted."""
    folder = Path(settings.root) / "home"
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


class Collected(dict):
    """{learner: the collected copy, or None}; `why[learner]` says why a learner has none."""

    def __init__(self):
        super().__init__()
        self.why: dict[str, str] = {}


def collect(settings: Settings, assignment: str, only: list[str] | None = None,
            into: Path | None = None) -> Collected:
    """Copy each learner's `notebooks/<assignment>/<assignment>.ipynb` if it is their own file; {learner: copy, or
    None (`.why` says why: missing, or refused — a link on the way, someone else's file)}."""
    into = into or Path(settings.root) / "collected" / assignment
    found = Collected()
    names = only or learners(settings)
    with disks.mounted(settings.root, {name: settings.home(name) for name in names}):  # after the hub stopped
        for name in names:
            home = settings.home(name)
            ids = homes.owner(home, SYSTEM_PREFIX + name)
            try:
                data = homes.read_file(home, f"notebooks/{assignment}/{assignment}.ipynb", ids[0] if ids else None)
            except FileNotFoundError:
                found[name], found.why[name] = None, f"no notebooks/{assignment}/{assignment}.ipynb"
                continue
            except homes.Refused as exc:  # a collected notebook is the learner's own file or nothing
                found[name], found.why[name] = None, f"refused: {exc}"
                continue
            target = into / name / assignment / f"{assignment}.ipynb"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            found[name] = target
    return found


def grade(settings: Settings, assignment: str, workers: int | None = None, timeout: int | None = None,
          quiet: bool = False, source: Path | None = None) -> list:
    """Collect and grade every learner's notebook; write grades.csv and hand feedback back; return the results.

    `source`: the course whose hidden tests grade (the course's solutions/; the tests give a small fixture)."""
    from grader.cohort import grade_cohort
    from grader.course import SOURCE

    collected = Path(settings.root) / "collected" / assignment
    shutil.rmtree(collected, ignore_errors=True)
    found = collect(settings, assignment, into=collected)
    _say_refused(found)
    if not any(found.values()):
        raise SystemExit(f"error: no learner has notebooks/{assignment}/{assignment}.ipynb yet")
    out = Path(settings.root) / "grades" / assignment
    _private(Path(settings.root) / "collected", Path(settings.root) / "grades")
    with _hiding(settings):
        results = grade_cohort(collected, out, workers or os.cpu_count() or 2, timeout, quiet=quiet,
                               source=source or SOURCE)
    _hand_back(settings, assignment, results, out)
    return results


class NotCollected(Exception):
    """A learner's notebook that cannot be graded: none there, or not her own file (the one line says which)."""


def _grade_one(settings: Settings, assignment: str, learner: str, tmp: Path, timeout: int | None,
               source: Path | None):
    """Collect and grade one learner's notebook in `tmp` (its results in tmp/out); the result, or NotCollected."""
    from grader.cohort import grade_cohort
    from grader.course import SOURCE

    found = collect(settings, assignment, only=[learner], into=tmp / "in")
    if not found.get(learner):
        raise NotCollected(f"{learner}: {found.why.get(learner) or 'no notebook'}")
    with _hiding(settings):
        (result,) = grade_cohort(tmp / "in", tmp / "out", 1, timeout, quiet=True, source=source or SOURCE)
    return result


def check(settings: Settings, assignment: str, learner: str, timeout: int | None = None,
          source: Path | None = None) -> object:
    """A learner's own Check my work on the hub (checks.py): grade her saved notebook, hand her the feedback page,
    return the result. The room's grades.csv is the instructor's and stays as it is."""
    with tempfile.TemporaryDirectory(prefix="streamlab-check-") as tmp:
        result = _grade_one(settings, assignment, learner, Path(tmp), timeout, source)
        _hand_back(settings, assignment, [result], Path(tmp) / "out")
    return result


def regrade(settings: Settings, assignment: str, learner: str, timeout: int | None = None,
            source: Path | None = None) -> object:
    """Grade one learner's current notebook again and replace their rows in grades.csv and messages.csv."""
    out = Path(settings.root) / "grades" / assignment
    with tempfile.TemporaryDirectory(prefix="streamlab-regrade-") as tmp:
        try:
            result = _grade_one(settings, assignment, learner, Path(tmp), timeout, source)
        except NotCollected as exc:
            raise SystemExit(f"error: {exc}") from None
        for name in ("grades.csv", "messages.csv"):
            _merge_rows(out / name, Path(tmp) / "out" / name, learner)
        feedback = Path(tmp) / "out" / "feedback" / learner
        if feedback.is_dir():
            shutil.rmtree(out / "feedback" / learner, ignore_errors=True)
            shutil.copytree(feedback, out / "feedback" / learner)
    _hand_back(settings, assignment, [result], out)
    return result


def _hiding(settings: Settings):
    """While grading: the sandbox hides this workshop's folder (the hub's and the room Kafka's secrets, the other
    learners' homes and grades), also when it is not the default one (`--root`); the grader reads each learner's quiz
    rounds from it (grader.grading.cohort_rounds), outside the sandbox."""
    from grader.grading import setenv

    return setenv(STREAMLAB_WORKSHOP_ROOT=str(Path(settings.root).resolve()))


def _private(*folders: Path) -> None:
    """Collected notebooks and grades are the instructor's alone (root's, mode 0700)."""
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o700)


def _merge_rows(target: Path, fresh: Path, learner: str) -> None:
    """Replace `learner`'s rows of CSV `target` with those of `fresh` (the header is the same)."""
    old = list(csv.reader(target.open(encoding="utf-8"))) if target.is_file() else []
    new = list(csv.reader(fresh.open(encoding="utf-8")))
    header = new[0]
    rows = [r for r in old[1:] if r and r[0] != learner] + new[1:]
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(sorted(rows, key=lambda r: (r[0], r[1])))


def _say_refused(found: Collected) -> None:
    for name, why in found.why.items():
        if why.startswith("refused"):
            print(f"{name}: not collected, {why}", file=sys.stderr)


def _hand_back(settings: Settings, assignment: str, results: list, out: Path) -> dict[str, str]:
    """Write each graded learner's feedback page and score into their home (owned by them), following no link
    there; return {learner: why not} for the homes refused (each also said on stderr)."""
    from grader.grading import points_text

    refused = {}
    with disks.mounted(settings.root, {result.student: settings.home(result.student) for result in results}):
        for result in results:
            home = settings.home(result.student)
            if not home.is_dir():
                continue
            ids = homes.owner(home, SYSTEM_PREFIX + result.student)
            page = out / "feedback" / result.student / f"{assignment}.html"
            total = f"{points_text(result.score)} / {points_text(result.max_score)}"
            score = (total if result.graded and not result.error
                     else f"not graded: {result.error}")
            try:
                homes.make_dirs(home, f"feedback/{assignment}", ids)
                if page.is_file():
                    homes.write_file(home, f"feedback/{assignment}/{assignment}.html", page.read_bytes(), ids)
                homes.write_file(home, f"feedback/{assignment}/grade.txt", f"{assignment}: {score}\n".encode(), ids)
            except homes.Refused as exc:
                refused[result.student] = str(exc)
                print(f"{result.student}: no feedback handed back, {exc}", file=sys.stderr)
    return refused


def read_grades(settings: Settings) -> dict[str, dict[str, tuple[str, str]]]:
    """{assignment: {learner: (score, max_score)}} from every grades.csv of the workshop."""
    table: dict[str, dict[str, tuple[str, str]]] = {}
    for path in sorted((Path(settings.root) / "grades").glob("*/grades.csv")):
        for row in csv.DictReader(path.open(encoding="utf-8")):
            table.setdefault(row["assignment"], {})[row["student"]] = (row["score"], row["max_score"])
    return table


def export(settings: Settings, out: Path, fmt: str = "canvas") -> Path:
    """Write every assignment's scores as one CSV an LMS imports: Canvas's gradebook or Moodle's grade import."""
    table = read_grades(settings)
    aids = sorted(table)
    names = sorted({name for scores in table.values() for name in scores})
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        if fmt == "canvas":
            # Canvas: Student, ID, SIS User ID, SIS Login ID, Section, then one column per assignment; the
            # second row gives the points possible. Rows are matched on SIS Login ID (= the hub's user name).
            writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *aids])
            writer.writerow(["    Points Possible", "", "", "", "", *(_max(table[a]) for a in aids)])
            for name in names:
                writer.writerow([name, "", "", name, "", *(table[a].get(name, ("", ""))[0] for a in aids)])
        elif fmt == "moodle":
            # Moodle: Grades > Import > CSV file; map "username" to the user identifier, each column to a grade item.
            writer.writerow(["username", *aids])
            for name in names:
                writer.writerow([name, *(table[a].get(name, ("", ""))[0] for a in aids)])
        else:
            raise SystemExit(f"error: unknown export format {fmt!r}: use canvas or moodle")
    return out


def _max(scores: dict[str, tuple[str, str]]) -> str:
    return next((m for _s, m in scores.values() if m), "")
