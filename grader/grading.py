"""Grade one notebook with its hidden tests: a throw-away nbgrader course, autograde, a table and HTML feedback."""
from __future__ import annotations

import json
import os
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .course import ROOT, SOURCE, CouldNotGrade, GraderError, assignments, generate, temp_course

DEFAULT_STUDENT = "learner"
CHECK_RESULTS = ROOT / "feedback" / "check"


@dataclass
class Exercise:
    """One autograded test cell: its id, points earned and available, status and a one-line hint."""

    grade_id: str
    points: float
    max_points: float
    status: str
    hint: str = ""


@dataclass
class Result:
    """The outcome of grading one notebook (or why it could not be graded)."""

    student: str
    assignment: str
    path: str
    exercises: list[Exercise] = field(default_factory=list)
    score: float = 0.0
    max_score: float = 0.0
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    feedback: str | None = None
    seconds: float = 0.0
    graded: bool = True  # False when the machine was at fault (CouldNotGrade): no score is given


# ---------------------------------------------------------------- reading the learner's file

def read_submission(path: Path, assignment_id: str | None = None, source: Path = SOURCE):
    """Validate a learner's file: (assignment id, parsed notebook), or GraderError naming the problem."""
    known = assignments(source)
    expected = ", ".join(f"{a}.ipynb" for a in known) or f"none yet: {source} is empty"
    if not path.exists():
        raise GraderError(f"{path} does not exist")
    if path.is_dir():
        raise GraderError(f"{path} is a folder, not a notebook: pass the .ipynb file")
    if path.suffix != ".ipynb":
        raise GraderError(f"{path.name} is not a notebook (.ipynb); expected one of: {expected}")
    aid = assignment_id or path.stem
    if aid not in known:
        origin = "given as --assignment" if assignment_id else f"from the file name {path.name}"
        raise GraderError(f"unknown assignment '{aid}' ({origin}); expected one of: {expected}"
                          + ("" if assignment_id else " (or pass --assignment ID)"))
    raw = path.read_bytes()
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise GraderError(f"{path.name} is not a text file (not UTF-8): is it really a notebook?") from None
    except json.JSONDecodeError as exc:
        raise GraderError(f"{path.name} is not valid notebook JSON (line {exc.lineno}, column {exc.colno}: "
                          f"{exc.msg}); restore it from .ipynb_checkpoints/ or re-download it") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise GraderError(f"{path.name} is JSON but not a Jupyter notebook (no list of cells)")
    import nbformat

    try:
        nb = nbformat.reads(raw.decode("utf-8"), as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # nbformat raises several types for broken structure
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise GraderError(f"{path.name} is not a valid Jupyter notebook ({first[:160]})") from None
    return aid, nb


def _grade_id(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def _is_test(cell) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(meta.get("grade")) and not meta.get("solution") and cell.get("cell_type") == "code"


def structure_notes(submitted, released, original=None) -> tuple[dict[str, list[str]], list[str]]:
    """Deleted, edited and reordered cells: ({test cell id: [one-line notes]}, [notebook-level notes])."""
    from nbgrader.utils import is_locked

    per_cell: dict[str, list[str]] = {}
    general: list[str] = []
    rel_ids = [gid for gid in map(_grade_id, released.cells) if gid]
    rel_cells = {_grade_id(c): c for c in released.cells if _grade_id(c)}
    src_cells = {_grade_id(c): c for c in (original.cells if original else []) if _grade_id(c)}
    tests = [gid for gid in rel_ids if _is_test(rel_cells[gid])]
    sub_ids = [gid for gid in map(_grade_id, submitted.cells) if gid]
    sub_cells: dict[str, object] = {}
    for cell in submitted.cells:
        gid = _grade_id(cell)
        if gid and gid in sub_cells:
            general.append(f"cell {gid} appears twice; only the first copy is graded")
        elif gid:
            sub_cells[gid] = cell

    def owner(gid: str) -> str | None:
        """The test cell an answer cell belongs to: the next test cell in the assignment's order."""
        start = rel_ids.index(gid)
        return next((t for t in rel_ids[start:] if t in tests), None)

    def note(gid: str, text: str) -> None:
        """File a note under the test cell that grades `gid` (or the notebook when none follows)."""
        target = owner(gid)
        (per_cell.setdefault(target, []) if target else general).append(text)

    for gid in rel_ids:
        cell = rel_cells[gid]
        if gid not in sub_cells:
            if gid in tests:
                note(gid, f"test cell {gid} was deleted; the grader put the original back")
            else:
                kind = "answer" if cell.metadata.nbgrader.get("solution") else "locked"
                note(gid, f"{kind} cell {gid} was deleted from the notebook; restore it from notebooks/")
        elif is_locked(cell) and sub_cells[gid].source.strip() not in {
                cell.source.strip(), src_cells.get(gid, cell).source.strip()}:
            what = "test" if gid in tests else "read-only"
            note(gid, f"{what} cell {gid} was edited; it was graded with the original")
    present = [gid for gid in sub_ids if gid in rel_cells]
    expected = [gid for gid in rel_ids if gid in sub_cells]
    seen: list[str] = []
    for gid in dict.fromkeys(present):
        later = [e for e in expected[expected.index(gid) + 1:] if e in seen]
        if later:
            note(gid, f"cells were reordered: {gid} now comes after {later[0]}; graded in the submitted order")
            break
        seen.append(gid)
    return per_cell, general


# ---------------------------------------------------------------- reading the autograded notebook

def _cell_name(cell, index: int) -> str:
    gid = _grade_id(cell)
    if gid:
        return f"cell {gid}"
    first = next((ln.strip() for ln in cell.source.splitlines() if ln.strip()), "")
    return f"cell {index + 1} (`{first[:40]}`)" if first else f"cell {index + 1}"


_TIMEOUT_ERRORS = ("CellTimeoutError", "KeyboardInterrupt")  # nbclient interrupts the kernel at the time limit


def _error_line(cell, index: int, timeout: int | None) -> str | None:
    """One line for an error raised by a non-test cell (the learner's answer or a setup cell)."""
    errors = [out for out in cell.get("outputs", []) if out.output_type == "error"]
    if any(out.ename in _TIMEOUT_ERRORS for out in errors):
        limit = f" within {timeout} s" if timeout else ""
        return f"{_cell_name(cell, index)} did not finish{limit} (an endless loop?) and was interrupted"
    for out in errors:
        value = (out.evalue or "").strip().splitlines()
        return f"{_cell_name(cell, index)} raised {out.ename}" + (f": {value[0][:200]}" if value else "")
    return None


def _fail_line(cell, timeout: int | None) -> str:
    """The first ❌ line a failing test cell printed (hidden-test code is never shown)."""
    first_error = None
    for out in cell.get("outputs", []):
        if out.output_type == "stream" and out.name == "stdout":
            for line in out.text.splitlines():
                if line.lstrip().startswith("❌"):
                    return line.strip()
        elif out.output_type == "error":
            value = (out.evalue or "").strip()
            if value.startswith("❌"):
                return value.splitlines()[0]
            if first_error is None:
                if out.ename in _TIMEOUT_ERRORS:
                    first_error = f"the test did not finish{f' within {timeout} s' if timeout else ''}"
                else:
                    first_error = f"{out.ename}: {value.splitlines()[0][:200]}" if value else out.ename
    return first_error or "the test failed without a message"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}".rstrip("0")


def collect(autograded, grades: dict[str, tuple[float, float]], notes: dict[str, list[str]],
            timeout: int | None) -> tuple[list[Exercise], list[str]]:
    """Exercises in notebook order, with hints; plus notes about errors after the last test."""
    exercises, pending = [], []
    for index, cell in enumerate(autograded.cells):
        if cell.cell_type != "code":
            continue
        if not _is_test(cell):
            line = _error_line(cell, index, timeout)
            if line:
                pending.append(line)
            continue
        gid = _grade_id(cell)
        points, max_points = grades.get(gid, (0.0, float(cell.metadata.nbgrader.get("points", 0))))
        status = "passed" if points >= max_points else ("partial" if points > 0 else "failed")
        hints = list(notes.get(gid, []))
        if status != "passed":
            hints += pending[:1] or [_fail_line(cell, timeout)]
        pending = []
        exercises.append(Exercise(gid, points, max_points, status, " | ".join(hints)))
    return exercises, pending


def table(result: Result) -> str:
    """The learner-facing table: exercise | points | status | hint, then notes and `score: x / y`."""
    rows = [("exercise", "points", "status", "hint")]
    marks = {"passed": "✅ passed", "partial": "🟡 partial", "failed": "❌ failed"}
    for ex in result.exercises:
        rows.append((ex.grade_id, f"{_num(ex.points)}/{_num(ex.max_points)}", marks[ex.status], ex.hint))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ["  ".join(r[i].ljust(widths[i]) for i in range(3)) + ("  " + r[3] if r[3] else "") for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths) + "  ----")
    lines += [f"note: {n}" for n in result.notes]
    if result.feedback:
        lines.append(f"feedback: {result.feedback}")
    lines.append(f"score: {_num(result.score)} / {_num(result.max_score)}")
    return "\n".join(lines)


# ---------------------------------------------------------------- feedback

def _sanitise_for_feedback(path: Path, result: Result) -> None:
    """Strip hidden tests and their tracebacks from the autograded copy, and put the summary on top."""
    import nbformat
    from nbgrader.preprocessors import ClearHiddenTests

    nb = nbformat.read(path, as_version=4)
    hider = ClearHiddenTests()
    for cell in nb.cells:
        if cell.cell_type == "code" and _is_test(cell):
            hider._remove_hidden_test_region(cell)
            for out in cell.outputs:
                if out.output_type == "error":
                    out.traceback = [f"{out.ename}: {out.evalue}"]
    summary = ["| exercise | points | status | hint |", "|---|---|---|---|"]
    for ex in result.exercises:
        hint = ex.hint.replace("|", "\\|").replace("`", "")
        summary.append(f"| {ex.grade_id} | {_num(ex.points)} / {_num(ex.max_points)} | {ex.status} | {hint} |")
    text = "\n".join([f"# Grader feedback: {result.assignment}", "", *summary, "",
                      *[f"- {n}" for n in result.notes], "",
                      f"**score: {_num(result.score)} / {_num(result.max_score)}**"])
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(text))
    nbformat.write(nb, path)


# ---------------------------------------------------------------- the whole pipeline

def grade_notebook(path: str | Path, assignment_id: str | None = None, student: str = DEFAULT_STUDENT,
                   source: Path = SOURCE, timeout: int | None = None,
                   feedback_dir: str | Path | None = None) -> Result:
    """Autograde one notebook (a copy; the file is never modified) with hidden tests; GraderError if ungradable."""
    import nbformat
    from nbgrader.api import Gradebook

    started = time.monotonic()
    path = Path(path).resolve()
    source = Path(source).resolve()
    aid, submitted = read_submission(path, assignment_id, source)
    result = Result(student, aid, str(path))
    with temp_course("grader-check-") as root:
        api = generate(aid, root, source=source, timeout=timeout)
        effective_timeout = api.config.Execute.get("timeout", timeout)
        released = nbformat.read(root / "release" / aid / f"{aid}.ipynb", as_version=4)
        original = nbformat.read(source / aid / f"{aid}.ipynb", as_version=4)
        per_cell, general = structure_notes(submitted, released, original)
        target = root / "submitted" / student / aid
        target.mkdir(parents=True)
        shutil.copyfile(path, target / f"{aid}.ipynb")
        for extra in (root / "release" / aid).rglob("*"):  # data files released with the notebook
            dest = target / extra.relative_to(root / "release" / aid)
            if extra.is_file() and extra.suffix != ".ipynb" and not dest.exists():
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(extra, dest)
        bootstrap = check_environment()
        # KAFKA_BOOTSTRAP: the kernel uses this broker and never starts one, so a broker lost mid-run stays lost
        # and is reported as the machine's fault instead of being quietly replaced.
        with setenv(STREAMLAB_GRADING="1", PYDEVD_DISABLE_FILE_VALIDATION="1", KAFKA_BOOTSTRAP=bootstrap), \
                stderr_to(root / "kernel.log"):
            outcome = api.autograde(aid, student, force=True, create=True)
        _broker_still_there(bootstrap)
        graded_path = root / "autograded" / student / aid / f"{aid}.ipynb"
        if not outcome.get("success") or not graded_path.exists():
            why = _last_error(outcome)
            if "DeadKernelError" in why or "Kernel died" in why:
                from .execute import TrackingExecute

                where = TrackingExecute.current
                cell = f"{_cell_name(where[1], where[0])} " if where else "a cell "
                raise GraderError(f"{path.name}: the kernel died while running {cell}(os._exit, a crash or out of "
                                  "memory?); nothing after it could be graded")
            raise GraderError(f"{path.name} could not be run to the end: {why}")
        with Gradebook(api.coursedir.db_url) as gb:
            sub = gb.find_submission_notebook(aid, aid, student)
            grades = {g.name: (float(g.auto_score or 0), float(g.max_score)) for g in sub.grades}
        autograded = nbformat.read(graded_path, as_version=4)
        result.exercises, trailing = collect(autograded, grades, per_cell, effective_timeout)
        result.notes = general + [f"after the last test: {t}" for t in trailing]
        result.score = sum(e.points for e in result.exercises)
        result.max_score = sum(e.max_points for e in result.exercises)
        if feedback_dir is not None:
            _sanitise_for_feedback(graded_path, result)
            made = api.generate_feedback(aid, student, force=True)
            html = root / "feedback" / student / aid / f"{aid}.html"
            if made.get("success") and html.exists():
                out = Path(feedback_dir)
                out.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(html, out / f"{aid}.html")
                result.feedback = str(out / f"{aid}.html")
            else:
                result.notes.append(f"no HTML feedback: {_last_error(made)}")
    result.seconds = time.monotonic() - started
    return result


@contextmanager
def stderr_to(path: Path):
    """Send this process's stderr (fd 2, inherited by the kernel and its JVM) to a file inside the block."""
    import sys

    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "ab") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


@contextmanager
def setenv(**values: str):
    """Set environment variables for the kernels started inside the block, then restore them."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def check_environment() -> str:
    """Java and the broker, before any cell runs: CouldNotGrade naming the fix, else the broker's address."""
    from streamlab.broker import ensure_broker
    from streamlab.errors import LabError
    from streamlab.session import java_version

    try:
        java_version()
    except LabError as exc:
        raise CouldNotGrade(str(exc)) from None
    try:
        return ensure_broker()
    except LabError as exc:
        raise CouldNotGrade(f"the Kafka broker is not available: {exc}") from None


def _broker_still_there(bootstrap: str) -> None:
    """A broker lost during the run fails cells through no fault of the learner's: no score then."""
    from streamlab.broker import probe

    if probe(bootstrap, timeout=3.0) != "kafka":
        raise CouldNotGrade(f"the Kafka broker at {bootstrap} stopped answering during the check, so failed cells "
                            "may not be the notebook's fault: start it (`python -m streamlab broker start`) and "
                            "check again")


def _last_error(outcome: dict) -> str:
    """The most telling line of a failed nbgrader call."""
    text = (outcome.get("error") or "") + "\n" + (outcome.get("log") or "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for key in ("DeadKernelError", "Kernel died", "kernel died", "CellExecutionError", "Error"):
        hit = [ln for ln in lines if key in ln]
        if hit:
            return hit[-1][:240]
    return lines[-1][:240] if lines else "unknown error"


def check(path: str | Path, assignment_id: str | None = None, timeout: int | None = None,
          results: str | Path | None = None, source: Path = SOURCE) -> Result:
    """Grade a learner's notebook, writing feedback under `results` (default feedback/check/<assignment>/)."""
    path = Path(path)
    aid = assignment_id or path.stem
    folder = Path(results) if results else CHECK_RESULTS / aid
    return grade_notebook(path, assignment_id, DEFAULT_STUDENT, source, timeout, feedback_dir=folder)

