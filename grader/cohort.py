"""The grader's commands over many notebooks, built on grading.grade_notebook.

`python -m grader grade SUBMISSIONS_DIR`: autograde a cohort, two notebooks at a time, into CSV and HTML.
`python -m grader audit`: grade each solution with the audit's cheats (audit.py) and say which earned a point.
"""
from __future__ import annotations

import csv
import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .course import ROOT, SOURCE, CouldNotGrade, GraderError, assignments, fast_imports
from .grading import Result, grade_notebook, points_text


@dataclass
class Task:
    """One submission to grade: who, which assignment, which file, and where its feedback goes."""

    student: str
    assignment: str
    path: Path | None
    feedback_dir: Path
    note: str = ""
    error: str | None = None


def find_submissions(submissions: Path, source: Path = SOURCE) -> list[Task]:
    """Read SUBMISSIONS_DIR/<student>/<assignment>/<assignment>.ipynb into tasks (with notes on odd layouts)."""
    if not submissions.is_dir():
        raise GraderError(f"{submissions} is not a folder: expected SUBMISSIONS_DIR/<student>/<assignment>/<id>.ipynb")
    known = assignments(source)
    tasks: list[Task] = []
    for student_dir in sorted(p for p in submissions.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for adir in sorted(p for p in student_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
            student, aid = student_dir.name, adir.name
            task = Task(student, aid, None, Path())
            tasks.append(task)
            if aid not in known:
                task.error = (f"unknown assignment folder '{aid}'; expected one of: {', '.join(known)}")
                continue
            expected = adir / f"{aid}.ipynb"
            if expected.is_file():
                task.path = expected
                continue
            found = sorted(p for p in adir.glob("*.ipynb"))
            if len(found) == 1:
                task.path = found[0]
                task.note = f"the file is named {found[0].name}, expected {aid}.ipynb; graded it as {aid}"
            elif found:
                task.error = (f"no {aid}.ipynb, and {len(found)} other notebooks "
                              f"({', '.join(p.name for p in found)}): rename the one to grade to {aid}.ipynb")
            else:
                task.error = f"no notebook in {adir}: expected {aid}.ipynb"
    return tasks


def _grade_task(task: Task, timeout: int | None, source: Path, hidden: tuple = (), sandbox: bool = True,
                audit: bool | dict = False) -> Result:
    """Grade one task in this worker process (its own temp course); errors become a zero-score result."""
    result = Result(task.student, task.assignment, str(task.path or ""))
    if task.error is None:
        try:
            result = grade_notebook(task.path, task.assignment, task.student, source, timeout, task.feedback_dir,
                                    hidden=hidden, require_sandbox=sandbox, audit=audit)
            if task.note:
                result.notes.insert(0, task.note)
            return result
        except CouldNotGrade as exc:
            task.error = str(exc)
            result.graded = False
        except GraderError as exc:
            task.error = str(exc)
        except Exception as exc:  # a grader bug must not stop the cohort; report it on that row
            from streamlab.errors import first_line

            task.error = f"internal grader error ({first_line(exc, 200)})"
    result.error = task.error
    result.max_score = _max_score(task.assignment, source)
    return result


def _max_score(aid: str, source: Path) -> float:
    """Points available in an assignment, read from its source notebook's grade cells."""
    import nbformat

    path = source / aid / f"{aid}.ipynb"
    if not path.is_file():
        return 0.0
    nb = nbformat.read(path, as_version=4)
    return float(sum(c.metadata.get("nbgrader", {}).get("points", 0) for c in nb.cells
                     if c.metadata.get("nbgrader", {}).get("grade")))


def _audit_of(audit, task: Task) -> bool | dict:
    """What the audit of `task` is: False, True, or the sections to replay ({exercise: {kind: {grade id: source}}})."""
    if isinstance(audit, dict) and task.student in audit:
        return (audit[task.student] or {}).get(task.assignment) or True
    return task.student in audit


def grade_cohort(submissions: str | Path, out: str | Path, workers: int = 2, timeout: int | None = None,
                 source: Path = SOURCE, quiet: bool = False, sandbox: bool = True,
                 audit: frozenset[str] | set[str] | dict = frozenset()) -> list[Result]:
    """Autograde every submission, write OUT/grades.csv, OUT/messages.csv and OUT/feedback/<student>/<id>.html.

    Each notebook runs in a sandbox that hides the other submissions, the results and the hidden tests; without
    one (`sandbox=False`, the command's --no-sandbox) learner code could read or change them. The students named
    in `audit` (the answer key's) are also judged with wrong, constant and random answers (grader/audit.py); as a
    dict, {student: {assignment id: replays}} also replays those exercises' sections with other answers.
    """
    submissions, out, source = Path(submissions).resolve(), Path(out).resolve(), Path(source).resolve()
    tasks = find_submissions(submissions, source)
    for task in tasks:
        task.feedback_dir = out / "feedback" / task.student
    if not quiet:
        print(f"grading {len(tasks)} submission(s) from {submissions} with {workers} worker(s) …", flush=True)
    from .grading import check_environment

    if not sandbox and os.geteuid() == 0:
        # As root the sandbox is what drops learners' code to the grading account (grader/sandbox.py): without it
        # a learner's cell would run as the machine's root (the red team's H1).
        raise GraderError("--no-sandbox as root would run every learner's code as root: grade with the sandbox, or "
                          "as another user")
    check_environment()  # once, before the workers start: no Java or no broker grades nobody, and says why
    if sandbox:
        from .sandbox import available

        why = available()
        if why:
            raise GraderError(f"cannot keep the hidden tests and other submissions out of the learners' reach: "
                              f"{why} (or pass --no-sandbox to grade without that protection)")
    hidden = (submissions, out)
    n = len(tasks)
    if workers <= 1 or n <= 1:
        results = [_grade_task(t, timeout, source, hidden, sandbox, _audit_of(audit, t)) for t in tasks]
    else:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=fast_imports) as pool:
            results = list(pool.map(_grade_task, tasks, [timeout] * n, [source] * n, [hidden] * n, [sandbox] * n,
                                    [_audit_of(audit, t) for t in tasks]))
    write_outputs(results, out)
    if not quiet:
        for r in results:
            total = f"{points_text(r.score)} / {points_text(r.max_score)}"
            state = (r.error if not r.graded else f"error: {r.error}") if r.error else total
            print(f"{r.student:<16} {r.assignment:<24} {state}")
        print(f"grades: {out / 'grades.csv'}\nmessages: {out / 'messages.csv'}\nfeedback: {out / 'feedback'}")
    return results


def write_outputs(results: list[Result], out: Path) -> None:
    """grades.csv (student, assignment, score, max_score) and messages.csv (student, assignment, exercise, message)."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", "assignment", "score", "max_score", "status"])
        for r in sorted(results, key=lambda r: (r.student, r.assignment)):
            # A row the machine could not grade has no score at all, so it cannot pass for a zero.
            score = points_text(r.score) if r.graded else ""
            status = "not graded" if not r.graded else ("ungradable" if r.error else "graded")
            writer.writerow([r.student, r.assignment, score, points_text(r.max_score), status])
    with open(out / "messages.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", "assignment", "exercise", "message"])
        for r in sorted(results, key=lambda r: (r.student, r.assignment)):
            if r.error:
                writer.writerow([r.student, r.assignment, "", r.error])
            for note in r.notes:
                writer.writerow([r.student, r.assignment, "", note])
            for ex in r.exercises:
                if ex.hint:
                    writer.writerow([r.student, r.assignment, ex.grade_id, ex.hint])



# Two fake students for 00-setup, one right and one wrong on ex1 and q1 (q2 and q3 unanswered). The right one is
# an answer, so both live where a hub's walls empty them for learners (workshop/walls.py), not in grader/: the
# answers in solutions/, the notebooks made from them in tests/fixtures/.
SAMPLES = ROOT / "tests" / "fixtures" / "sample-submissions"
SAMPLE_ANSWERS = "sample-answers.json"


def sample_answers(source: Path = SOURCE) -> dict[str, dict[str, str]]:
    """{fake student: {grade id: answer}} from the instructor's solutions/ (GraderError in one line without it)."""
    path = Path(source) / SAMPLE_ANSWERS
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GraderError(f"{path}: the sample students' answers are unreadable ({type(exc).__name__}): "
                          "grader samples needs the instructor's copy of the course") from None


def make_samples(out: Path = SAMPLES, source: Path = SOURCE, assignment: str = "00-setup") -> list[Path]:
    """Write out/<student>/<assignment>/<assignment>.ipynb: the released notebook with each fake student's answers."""
    import nbformat

    from .course import generate, temp_course

    written = []
    students = sample_answers(source)
    with temp_course("grader-samples-") as root:
        generate(assignment, root, source=source)
        released = root / "release" / assignment / f"{assignment}.ipynb"
        for student, answers in students.items():
            nb = nbformat.read(released, as_version=4)
            for cell in nb.cells:
                gid = cell.metadata.get("nbgrader", {}).get("grade_id")
                if gid in answers:
                    cell.source = cell.source.replace("# YOUR CODE HERE\npass", answers[gid])
            path = out / student / assignment / f"{assignment}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, path)
            written.append(path)
    return written


def audit_assignments(ids: list[str], source, timeout: int | None = None) -> int:
    """`grader audit`: grade each solution with the cheats and print what each tried; 1 if any cheat scored."""
    from .audit import audit_points

    failed = 0
    for aid in ids or assignments(source):
        print(f"auditing {aid}: its solution, each test cell judged again with wrong answers …", flush=True)
        result = grade_notebook(source / aid / f"{aid}.ipynb", aid, "solution", source, timeout, audit=True)
        lost = [f"{e.grade_id} {e.points:g}/{e.max_points:g}" for e in result.exercises
                if e.status not in ("passed", "cluster")]  # "cluster": left out where no cluster runs
        unaudited = [e.grade_id for e in result.exercises if not result.audit.get(e.grade_id)]
        scored = audit_points(result.audit)
        for gid, tried in result.audit.items():
            print(f"  {gid:34} " + ", ".join(f"{kind} {points:g}" if points is not None else kind
                                              for kind, points in tried))
        problems = ([f"the solution itself loses points: {', '.join(lost)}"] if lost else []) + (
            [f"not audited (no answer it could swap): {', '.join(unaudited)}"] if unaudited else []) + scored
        print("\n".join(f"  ✗ {p}" for p in problems) if problems else
              f"  ✓ no wrong, constant or random answer earns a point ({sum(map(len, result.audit.values()))} tried, "
              f"{result.seconds:.0f} s)")
        failed += bool(problems)
    return 1 if failed else 0
