"""Grade one notebook with its hidden tests: a throw-away nbgrader course, autograde, a table and HTML feedback."""
from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from .course import (ROOT, SOURCE, CouldNotGrade, GraderError, assignments, nbgrader_config, temp_course,
                     released as released_version)
from . import sandbox
from .runner import grade_id as _grade_id
from .runner import is_test as _is_test

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
    audit: dict[str, list] = field(default_factory=dict)  # grader/audit.py, when asked: {grade id: [[cheat, points]]}


# ---------------------------------------------------------------- reading the learner's file

def read_submission(path: Path, assignment_id: str | None = None, source: Path = SOURCE):
    """Validate a learner's file: (assignment id, parsed notebook), or GraderError naming the problem."""
    known = assignments(source) if source.is_dir() else []
    if not known:  # a cohort's copy has no solutions/; behind a hub's walls it is an empty folder
        where = ("is not here: a graded cohort's copy" if not source.is_dir() else
                 "is empty here: on a workshop's hub the hidden tests stay with your instructor")
        raise GraderError(f"this copy of the course has no hidden tests ({source.name}/ {where}): your instructor "
                          "grades it; the ✓/✗ lines under each exercise are your visible checks")
    expected = ", ".join(f"{a}.ipynb" for a in known)
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


def structure_notes(submitted, released, original=None) -> tuple[dict[str, list[str]], list[str]]:
    """Deleted, edited and reordered cells: ({test cell id: [one-line notes]}, [notebook-level notes])."""
    from .runner import is_locked

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
            # her edit, or a copy from before the course changed this cell: either way the course's own is used
            note(gid, f"{what} cell {gid} differs from the course's (edited, or from an older copy of the notebook); "
                      "it was graded with the course's")
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


# ---------------------------------------------------------------- the judge's verdicts as rows

def points_text(x: float) -> str:
    """Points as the tables show them: 3, 2.5, 0.33."""
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}".rstrip("0")


# The checks only the lab's cluster can judge (checks.OnTheCluster): {task: (module, function)}, run here in the
# grader's own process on plain data. A short list: a task is never a name the notebook chose.
CLUSTER_TASKS = {"ex5_survives": ("streamlab.course.exercises.m09", "ex5_survives")}
# Plain data the grader's own process makes fresh on the lab's cluster before a run, for checks that try the
# learner's function on it (checks.cluster_input): {assignment: {name: (module, function)}}. Each function starts
# what it needs itself (a Spark application of its own in a child process) and returns plain data.
CLUSTER_INPUTS: dict[str, dict[str, tuple[str, str]]] = {
    "09-cluster-failures": {"ex7_reads": ("streamlab.course.exercises.m09", "ex7_reads_on_cluster")}}


def cluster_only(points: float) -> str:
    """The hint of a test cell judged only where the lab's cluster runs, where none does."""
    worth = f"{points_text(points)} point" + ("" if points == 1 else "s")
    return f"worth {worth} where the lab's cluster runs, left out of this total: grade it with the cluster running " \
           "(make lab CLUSTER=1)"


@contextmanager
def cluster_turn():
    """One grading at a time on the lab's cluster (a cohort grades several at once, in threads or processes): two
    leader kills, or two Spark applications for the cluster's two cores, at once would spoil each other's run."""
    import fcntl

    from streamlab.lab.machine import state_dir

    folder = state_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "cluster-grading.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _cluster_runs() -> bool:
    """Whether the lab's cluster is this machine's lab and runs now (what the cluster-only checks need)."""
    from streamlab.delivery.failover import on_cluster
    from streamlab.lab import cluster

    return on_cluster() and cluster.running()


def settle_on_cluster(run) -> None:
    """Judge here the test cells that only the lab's cluster can judge, when it runs (else they stay left out):
    the sandbox's kernel and worker may not kill the cluster's processes; this process may, as the lab's own."""
    if not any(v.cluster is not None for v in run.verdicts.values()):
        return
    import importlib
    import io
    from contextlib import redirect_stdout

    import nbformat

    from streamlab.course import checks
    from streamlab.errors import first_line

    from .judge import judged_checks, score
    from .runner import grade_id

    pending = {gid: v for gid, v in run.verdicts.items()
               if v.cluster is not None and v.cluster.get("task") and not v.cluster.get("ran")}
    left_out = {gid: v for gid, v in run.verdicts.items() if v.cluster is not None and not v.cluster.get("task")}
    here = bool(pending) and _cluster_runs()
    if not here:  # no cluster to judge them on: they are left out too
        left_out.update(pending)
    for cell in run.nb.cells:
        if grade_id(cell) in left_out:
            text = f"○ {cluster_only(left_out[grade_id(cell)].max_points)}\n"
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    if not here:
        return
    for gid, verdict in pending.items():
        module, name = CLUSTER_TASKS.get(verdict.cluster["task"], (None, None))
        out = io.StringIO()
        with cluster_turn(), checks.recording() as record, redirect_stdout(out):
            try:
                if module is None:
                    raise LookupError(f"no cluster task {verdict.cluster['task']!r} (tell the instructor)")
                getattr(importlib.import_module(module), name)(*verdict.cluster["args"])
            except Exception as exc:  # the learner's settings refused, or the cluster failed: no points
                verdict.error = first_line(exc, 240)
        verdict.checks, verdict.output, verdict.skipped = judged_checks(record), out.getvalue(), None
        verdict.cluster["ran"] = True
        score(verdict)
        text = verdict.output + (f"✗ {verdict.error}\n" if verdict.error else "")
        for cell in run.nb.cells:
            if grade_id(cell) == gid:
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]


def cluster_inputs(aid: str, notes: list[str]) -> dict:
    """What CLUSTER_INPUTS asks for `aid`, made now on the lab's cluster when it runs ({} elsewhere); a maker that
    fails leaves its checks out of the total, with one note saying why."""
    wanted = CLUSTER_INPUTS.get(aid, {})
    if not wanted or not _cluster_runs():
        return {}
    import importlib

    from streamlab.errors import first_line

    made = {}
    for name, (module, function) in wanted.items():
        try:
            with cluster_turn():
                made[name] = getattr(importlib.import_module(module), function)()
        except Exception as exc:  # the cluster's fault, never the learner's: her checks are left out, not failed
            notes.append(f"the cluster's {name} could not be made ({first_line(exc, 160)}): left out of the total")
    return made


def collect(run, tests, notes: dict[str, list[str]]) -> tuple[list[Exercise], list[str]]:
    """One row per test cell in the source's order, with the hint a learner needs; plus notes after the last test."""
    from .runner import grade_id

    pending_by_test: dict[str, str] = {}
    pending: list[str] = []
    for index, cell in enumerate(run.nb.cells):
        gid = grade_id(cell)
        if gid in tests:
            if pending:
                pending_by_test[gid] = pending[0]
            pending = []
        elif index in run.cell_errors:
            pending.append(run.cell_errors[index])
    exercises = []
    for gid, test in tests.items():
        verdict = run.verdicts.get(gid)
        hints = list(notes.get(gid, []))
        if verdict is not None and verdict.cluster is not None and not verdict.cluster.get("ran"):
            exercises.append(Exercise(gid, 0.0, 0.0, "cluster", " | ".join(hints + [cluster_only(test.points)])))
            continue
        if verdict is None:
            points, why = 0.0, run.stopped or "the test did not run"
        else:
            points = verdict.points
            failed = next((c.line for c in verdict.checks if not c.passed), None)
            why = verdict.skipped or pending_by_test.get(gid) or failed or (
                f"✗ {verdict.error}" if verdict.error else None) or ""
        status = "passed" if points >= test.points else ("partial" if points > 0 else "failed")
        if status != "passed" and why:
            hints.append(why)
        elif verdict is not None:  # a right quiz answer: "whether it is right, and why"
            hints += [c.line for c in verdict.checks if ". Why: " in c.line]
        exercises.append(Exercise(gid, points, test.points, status, " | ".join(hints)))
    return exercises, pending


TABLE_WIDTH = 100  # characters: what a notebook's output shows on one line at 1,280 px beside the file browser


def table(result: Result, width: int = TABLE_WIDTH) -> str:
    """The learner-facing table: exercise | points | status | hint, then notes and `score: x / y`. A long hint
    wraps between words inside its own column, so the columns stay aligned where the output is narrow."""
    import textwrap

    rows = [("exercise", "points", "status", "hint")]
    # no emoji font needed; "cluster": left out of the total where no cluster runs
    marks = {"passed": "✓ passed", "partial": "◐ partial", "failed": "✗ failed", "cluster": "○ not here"}
    for ex in result.exercises:
        rows.append((ex.grade_id, f"{points_text(ex.points)}/{points_text(ex.max_points)}", marks[ex.status], ex.hint))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    indent = sum(widths) + 2 * 3
    lines = []
    for r in rows:
        hint = textwrap.wrap(r[3], max(30, width - indent), break_on_hyphens=False) if r[3] else []
        lines.append("  ".join(r[i].ljust(widths[i]) for i in range(3)) + ("  " + hint[0] if hint else ""))
        lines += [" " * indent + more for more in hint[1:]]
    lines.insert(1, "  ".join("-" * w for w in widths) + "  ----")
    lines += [f"note: {n}" for n in result.notes]
    if result.feedback:
        lines.append(f"feedback: {result.feedback}")
    lines.append(f"score: {points_text(result.score)} / {points_text(result.max_score)}")
    return "\n".join(lines)


# ---------------------------------------------------------------- feedback

def write_feedback(nb, result: Result, out_dir: Path) -> Path:
    """The graded notebook as HTML: a summary on top; test cells show their visible code and the judge's lines.

    Built from the released test cells, so no hidden-test code is in it whatever the learner's cells printed.
    """
    import copy

    import nbformat
    from nbconvert import HTMLExporter

    nb = copy.deepcopy(nb)
    summary = ["| exercise | points | status | hint |", "|---|---|---|---|"]
    for ex in result.exercises:
        hint = ex.hint.replace("|", "\\|").replace("`", "")
        points = f"{points_text(ex.points)} / {points_text(ex.max_points)}"
        summary.append(f"| {ex.grade_id} | {points} | {ex.status} | {hint} |")
    text = "\n".join([f"# Grader feedback: {result.assignment}", "", *summary, "",
                      *[f"- {n}" for n in result.notes], "",
                      f"**score: {points_text(result.score)} / {points_text(result.max_score)}**"])
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(text))
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                out.traceback = [f"{out.ename}: {out.evalue}"]
    html, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{result.assignment}.html"
    path.write_text(html, encoding="utf-8")
    return path


# ---------------------------------------------------------------- the whole pipeline

VARIANT_LINE = re.compile(r"^variant\s+(\d+)\b", re.M)


def looks_like(submitted, source: Path) -> str | None:
    """The assignment whose graded cells a notebook holds, when it has graded cells at all."""
    import nbformat

    ids = {gid for gid in map(_grade_id, submitted.cells) if gid}
    if not ids:
        return None
    best, score = None, 0.0
    for aid in assignments(source):
        theirs = {_grade_id(c) for c in nbformat.read(source / aid / f"{aid}.ipynb", as_version=4).cells} - {None}
        similarity = len(ids & theirs) / len(ids | theirs)  # q1_answer alone is in every module
        if similarity > score:
            best, score = aid, similarity
    return best


def seed_for(student: str, aid: str, seed: int | None) -> int:
    """The variant graded: `--seed`, else the student id's in a cohort, else this machine's stored one."""
    from streamlab.course.variants import stored_seed, student_seed

    if seed is not None:
        return int(seed)
    return stored_seed(aid) if student == DEFAULT_STUDENT else student_seed(student, aid)


def quiz_rounds_graded(student: str, aid: str, original, submitted=None, notes: list | None = None) -> dict[str, str]:
    """The quiz as graded, for the run's environment (streamlab.course.quiz): the questions whose options the notebook
    shows in each learner's order, and the rounds: a self-paced learner's from her record (the options and numbers
    her notebook showed); a workshop learner's from the record the hub keeps for her (`cohort_rounds`: what her
    notebook on the hub shows); any other cohort's are round 0. A `submitted` copy made before the options were
    shuffled (no quiz.options cell at all) showed them in the markdown's order: graded in those letters, with a
    note."""
    from streamlab.course.quiz import ROUNDS_ENV, SHUFFLED_ENV, recorded_rounds

    from .lint import written_options

    rounds = recorded_rounds(aid) if student == DEFAULT_STUDENT else cohort_rounds(student, aid)
    shuffled = sorted(written_options(original))
    if shuffled and submitted is not None and not written_options(submitted):
        shuffled = []
        if notes is not None:
            notes.append("this copy of the notebook shows the quiz's options in the notebook's own order (it predates "
                         f"options in your own order): its letters are graded as shown; notebooks/{aid} has the new one")
    return {ROUNDS_ENV: json.dumps(rounds), SHUFFLED_ENV: ",".join(f"q{n}" for n in shuffled)}


def cohort_rounds(student: str, aid: str) -> dict[str, int]:
    """A cohort learner's {question: round}: in a workshop's grading ($STREAMLAB_WORKSHOP_ROOT set, as
    workshop/instructor.py sets it) the rounds its checks service recorded for her, so a learner who retried on the
    hub is graded in the letters her notebook shows; elsewhere none (round 0)."""
    from streamlab.course.quiz import hub_record_file, recorded_rounds
    from streamlab.settings import settings

    if not type(settings).workshop_root.is_set():
        return {}
    try:
        return recorded_rounds(aid, hub_record_file(settings.workshop_root, student))
    except ValueError:  # not a name a workshop gives a learner: no record of hers
        return {}


def _variant_worked_on(submitted) -> int | None:
    """The variant the setup cell's saved output shows (what the learner's numbers came from)."""
    for cell in submitted.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            hit = VARIANT_LINE.search(out.get("text", "") if out.get("output_type") == "stream" else "")
            if hit:
                return int(hit.group(1))
    return None


def make_sandbox(root: Path, source: Path, work: Path, hidden: tuple = (), bootstrap: str | None = None):
    """The sandbox for one grading run, or None (with the reason) when this machine cannot make one.

    Read-only: the course, the Python installation, the home folder and streamlab's state folder (its jars and
    the broker's data; only Spark's log file is writable). Not there: the hidden tests, the grader's folders, the
    other submissions and the results, a workshop's folder (the hub's and the room Kafka's secrets). /tmp is
    private, holding only this run's `work` folder. When the grader is root, the run is the unprivileged grading
    account's (grader/sandbox.py `dropped`), with a Spark log of its own. With the grading broker's `bootstrap` on
    this machine's loopback (and no Spark cluster), the run has a network of its own whose only way out is that
    broker (grader/relay.py).
    """
    import sys

    from streamlab.lab.jars import state_dir
    from streamlab.settings import settings

    from .course import private_tmp

    why = sandbox.available()
    if why:
        return None, why
    spark_log = state_dir() / "spark.log"
    spark_log.parent.mkdir(parents=True, exist_ok=True)
    spark_log.touch()
    home = Path.home()
    # workshop.hub.default_root, which imports JupyterHub (absent where no workshop is run).
    workshop = settings.workshop_root
    box = sandbox.Sandbox(
        readonly=[ROOT, Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), state_dir()]
        + ([home] if home != Path("/") else []),
        writable=[spark_log],
        hidden=[source, ROOT / "tests", ROOT / ".git", ROOT / "feedback", private_tmp(), root, workshop, *hidden],
        private_tmp_with=work)
    if sandbox.dropped():
        box.account, box.reach = sandbox.account(), [*sandbox.reached(), state_dir()]
        box.writable, box.scratch = [], [spark_log]
    from .relay import ports_of

    ports = ports_of(bootstrap or "")
    if ports and not (settings.cluster or settings.spark_master):
        box.relay = (work / ".broker", ports)  # a cluster's executors connect back to the driver: not relayed
    return box, None


def run_in_sandbox(box, job: dict, log: Path, on_start=None) -> dict:
    """Run one grading job (grader/worker.py) inside `box`; what it returns, or GraderError with its reason.
    `on_start(proc)` gets the sandbox's process (killing it ends everything the run started)."""
    from contextlib import nullcontext

    from .relay import Relay

    relay = Relay(*box.relay, owner=box.account) if box.relay else nullcontext()
    with relay:
        return _run_job(box, job, log, on_start)


_running: set = set()  # the sandboxes this process's gradings run now (a cohort grades several at once)
_running_lock = threading.Lock()


def end_running() -> int:
    """Stop every sandbox this process runs (an interrupted `grade` of a cohort, whose gradings run in threads that
    Ctrl-C does not reach): how many. Each grading then ends without an answer."""
    with _running_lock:
        procs = list(_running)
    for proc in procs:
        sandbox.end(proc)
    return len(procs)


def _run_job(box, job: dict, log: Path, on_start=None) -> dict:
    import subprocess
    import sys

    read, write = os.pipe()
    with open(log, "ab") as sink:
        # The venv's python by its real folder: a path through a symlink may not exist inside the sandbox.
        python = str(Path(sys.prefix).resolve() / "bin" / Path(sys.executable).name)
        proc = subprocess.Popen(box.wrap([python, "-m", "grader.worker", str(write)]), stdin=subprocess.PIPE,
                                stdout=sink, stderr=sink, pass_fds=(write,), cwd=job["workdir"])
    os.close(write)
    with _running_lock:
        _running.add(proc)
    try:
        if on_start is not None:
            on_start(proc)
        with os.fdopen(read, "r", encoding="utf-8") as pipe:
            proc.stdin.write(json.dumps(job).encode())
            proc.stdin.close()
            text = pipe.read()
        proc.wait()
    except BaseException:  # interrupted (Ctrl-C, or a SIGTERM that grader's main turns into one)
        sandbox.end(proc)  # its whole pid namespace: worker, kernel, Spark
        proc.wait()
        raise
    finally:
        with _running_lock:
            _running.discard(proc)
    try:
        result = json.loads(text)
    except ValueError:
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
        raise GraderError(f"the grading sandbox stopped without an answer ({(tail or ['no log'])[0][:200]})") from None
    if "error" in result:
        raise GraderError(f"internal grader error in the sandbox ({result['error']})")
    return result


def grade_notebook(path: str | Path, assignment_id: str | None = None, student: str = DEFAULT_STUDENT,
                   source: Path = SOURCE, timeout: int | None = None,
                   feedback_dir: str | Path | None = None, seed: int | None = None,
                   hidden: tuple = (), require_sandbox: bool = False, progress: bool = False,
                   audit: bool | dict = False) -> Result:
    """Grade one notebook (a copy; the file is never modified): its cells run in a sandboxed kernel, its tests here.

    `audit`: also judge each test cell with wrong, constant and random answers (grader/audit.py); a dict also
    replays exercises' sections with other answers ({exercise: {kind: {answer grade id: source}}})."""
    import tempfile

    import nbformat

    from dataclasses import asdict

    from .judge import preload
    from .runner import answer_owners, assemble, judge_spark, run, tests_of

    started = time.monotonic()
    path = Path(path).resolve()
    source = Path(source).resolve()
    aid, submitted = read_submission(path, assignment_id, source)
    if not submitted.cells:
        raise GraderError(f"{path.name} has no cells: restore it from notebooks/{aid}/ (or .ipynb_checkpoints/)")
    result = Result(student, aid, str(path))
    with temp_course("grader-check-") as root:
        release = released_version(aid, source)
        limit = int(timeout or nbgrader_config(root, source=source).Execute.get("timeout", 180))
        released = nbformat.read(release / f"{aid}.ipynb", as_version=4)
        original = nbformat.read(source / aid / f"{aid}.ipynb", as_version=4)
        graded_ids = {_grade_id(c) for c in released.cells if _grade_id(c)}
        present = graded_ids & {_grade_id(c) for c in submitted.cells}
        other = looks_like(submitted, source) if len(present) < len(graded_ids) / 2 else None
        if not present or (other and other != aid):
            raise GraderError(f"{path.name} holds {len(present)} of {aid}'s {len(graded_ids)} graded cells" + (
                f"; it looks like {other}.ipynb: grade it as that (--assignment {other})" if other and other != aid
                else f": restore it from notebooks/{aid}/"))
        per_cell, general = structure_notes(submitted, released, original)
        tests, owners = tests_of(original), answer_owners(original)
        graded_nb = assemble(submitted, released)
        seed = seed_for(student, aid, seed)
        worked_on = _variant_worked_on(submitted)
        if worked_on is not None and worked_on != seed:
            general.append(f"this notebook's saved output shows variant {worked_on}, but yours is {seed}: numbers "
                           "copied from it are not yours (restart the kernel, run all cells and answer again)")
        bootstrap = check_environment()
        made_on_cluster = cluster_inputs(aid, general)
        with tempfile.TemporaryDirectory(prefix="streamlab-grading-") as work:
            box, why = make_sandbox(root, source, Path(work), hidden, bootstrap)
            if box is None and require_sandbox:
                raise GraderError(f"cannot keep the hidden tests out of the learners' reach: {why} "
                                  "(or pass --no-sandbox to grade without that protection)")
            for extra in release.rglob("*"):  # data files released with the notebook
                dest = Path(work) / extra.relative_to(release)
                if extra.is_file() and extra.suffix != ".ipynb":
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(extra, dest)
            # KAFKA_BOOTSTRAP: the kernel uses this broker and never starts one, so a broker lost mid-run stays
            # lost and is reported as the machine's fault instead of being quietly replaced.
            private = {"IPYTHONDIR": f"{work}/.ipython", "MPLCONFIGDIR": f"{work}/.matplotlib",
                       "JUPYTER_RUNTIME_DIR": f"{work}/.runtime"} if box is not None else {}
            watch = Heartbeat(Path(work), bootstrap, limit, say=_say if progress else None)
            # A run in a network namespace of its own shares one owner token, held here (streamlab/lab/owners.py):
            # otherwise it and the machine's kernels would each take the other's topics for orphans and delete them.
            from streamlab.lab import owners as topic_owners

            token = topic_owners.new_token() if box is not None and box.relay else None
            shared = {topic_owners.SHARED_ENV: token} if token else {}
            try:
                # STREAMLAB_CLUSTER=0: the kernel never runs module 9's kills (its pid namespace cannot reach the
                # cluster's processes); what only the cluster can judge is judged here after the run.
                with setenv(STREAMLAB_GRADING="1", PYDEVD_DISABLE_FILE_VALIDATION="1", KAFKA_BOOTSTRAP=bootstrap,
                            STREAMLAB_CLUSTER="0",
                            STREAMLAB_SEED=str(seed), STREAMLAB_ASSIGNMENT=aid,
                            **quiz_rounds_graded(student, aid, original, submitted, general), **private, **shared), \
                        topic_owners.holding(token) if token else nullcontext(), stderr_to(root / "kernel.log"), watch:
                    if box is None:
                        preload()  # the code files could change while learner code runs: import what checks use now
                        from streamlab.course.checks import cluster_inputs_given

                        with cluster_inputs_given(made_on_cluster):
                            outcome = run(graded_nb, tests, owners, Path(work), limit, None, judge_spark, audit=audit)
                    else:
                        job = {"nb": graded_nb, "tests": {g: asdict(t) for g, t in tests.items()}, "owners": owners,
                               "workdir": work, "timeout": limit, "kernel_sandbox": True, "audit": audit,
                               "cluster_inputs": made_on_cluster}
                        outcome = _outcome(run_in_sandbox(box, job, root / "kernel.log", on_start=watch.attach))
            except GraderError:
                if watch.lost:
                    raise CouldNotGrade(watch.lost) from None
                raise
            finally:
                _sweep_after_run(bootstrap)
        if watch.lost:
            raise CouldNotGrade(watch.lost)
        _broker_still_there(bootstrap)
        settle_on_cluster(outcome)
        result.exercises, trailing = collect(outcome, tests, per_cell)
        result.audit = outcome.audits
        result.notes = general + [f"after the last test: {t}" for t in trailing]
        if outcome.stopped:
            result.notes.append(outcome.stopped + "; points earned before it are kept")
        if box is None and student != DEFAULT_STUDENT:  # a self-paced learner has the solutions anyway
            result.notes.append(f"graded without a sandbox ({why})")
        result.score = round(sum(e.points for e in result.exercises), 2)
        result.max_score = sum(e.max_points for e in result.exercises)
        if feedback_dir is not None:
            result.feedback = str(write_feedback(outcome.nb, result, Path(feedback_dir)))
    result.seconds = time.monotonic() - started
    return result


def _outcome(data: dict):
    """A runner.Run rebuilt from what the sandboxed worker sent back."""
    import nbformat

    from .judge import Check, Verdict
    from .runner import Run

    verdicts = {g: Verdict(**{**v, "checks": [Check(**c) for c in v["checks"]]}) for g, v in data["verdicts"].items()}
    return Run(nbformat.from_dict(data["nb"]), verdicts, data["stopped"],
               {int(k): v for k, v in data["cell_errors"].items()}, data.get("audits", {}))


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


def setenv(**values: str):
    """Set environment variables for the kernels started inside the block, then restore them."""
    from streamlab.settings import set_environment

    return set_environment(**values)


def check_environment() -> str:
    """Java and the broker, before any cell runs: CouldNotGrade naming the fix, else the broker's address."""
    from streamlab.lab.broker import ensure_broker
    from streamlab.errors import LabError
    from streamlab.lab.session import java_version

    try:
        java_version()
    except LabError as exc:
        raise CouldNotGrade(str(exc)) from None
    try:
        return ensure_broker()
    except LabError as exc:
        raise CouldNotGrade(f"the Kafka broker is not available: {exc}") from None


PROGRESS_EVERY_S = None  # $STREAMLAB_GRADER_PROGRESS_S, read when used (progress_every_s); a test may set it here


def progress_every_s() -> float:
    """How often a run says it is still grading: PROGRESS_EVERY_S when a test set it, else the setting's now."""
    from streamlab.settings import settings

    return PROGRESS_EVERY_S or settings.grader_progress_s


def _say(line: str) -> None:
    import sys

    print(line, file=sys.stdout, flush=True)


class Heartbeat:
    """While a run goes on: a progress line every PROGRESS_EVERY_S naming the cell that runs (so a stuck cell is
    never a silent wait), and, when the broker stops answering for a few seconds, the run is ended at once with
    the reason (its cells would fail through no fault of the learner's)."""

    EVERY_S = 2.0
    MISSES = 3

    def __init__(self, work: Path, bootstrap: str, limit: int, say=None):
        import threading

        self.work, self.bootstrap, self.limit, self.say = work, bootstrap, limit, say
        self.lost: str | None = None
        self._proc = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="grader-heartbeat")

    def attach(self, proc) -> None:
        """The sandbox's process: killed when the broker is lost."""
        self._proc = proc

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join(5)

    def _running(self) -> tuple[str, float]:
        try:
            label, since = (self.work / ".grader-progress").read_text().rsplit("|", 1)
            return label, max(0.0, time.time() - float(since))  # clocks read apart: never "for -0 s"
        except (OSError, ValueError):
            return "the notebook", 0.0

    def _run(self) -> None:
        from streamlab.lab.broker import probe

        started = last = time.monotonic()
        misses = 0
        while not self._done.wait(self.EVERY_S):
            misses = misses + 1 if probe(self.bootstrap, timeout=1.0) != "kafka" else 0
            if misses == self.MISSES:
                label, _ = self._running()
                self.lost = (f"the Kafka broker at {self.bootstrap} stopped answering while {label} ran, so the "
                             "check stopped (failed cells would not be the notebook's fault): start it "
                             "(`python -m streamlab broker start`) and check again")
                if self.say:
                    self.say(f"… {self.lost}")
                if self._proc is not None:
                    sandbox.end(self._proc)
                return
            if self.say and time.monotonic() - last >= progress_every_s():
                last = time.monotonic()
                label, running = self._running()
                self.say(f"… {time.monotonic() - started:.0f} s: running {label} for {running:.0f} s (a cell is "
                         f"interrupted after {self.limit} s)")


def _sweep_after_run(bootstrap: str) -> None:
    """Delete what the run's kernel made and did not remove (it died, or timed out): its topics carry its owner
    token, which no process holds any more."""
    try:
        from streamlab.lab.lifecycle import sweep_orphans

        sweep_orphans(bootstrap)
    except Exception:
        pass  # a broker that went away is reported by the caller


def _broker_still_there(bootstrap: str) -> None:
    """A broker lost during the run fails cells through no fault of the learner's: no score then."""
    from streamlab.lab.broker import probe

    if probe(bootstrap, timeout=3.0) != "kafka":
        raise CouldNotGrade(f"the Kafka broker at {bootstrap} stopped answering during the check, so failed cells "
                            "may not be the notebook's fault: start it (`python -m streamlab broker start`) and "
                            "check again")


def feedback_folder(path: Path, aid: str) -> Path:
    """feedback/ next to the notebook, where JupyterLab's file browser shows it (feedback/check/<id>/ when that
    folder cannot be written)."""
    folder = path.resolve().parent / "feedback"
    try:
        folder.mkdir(exist_ok=True)
        return folder
    except OSError:
        return CHECK_RESULTS / aid


def check(path: str | Path, assignment_id: str | None = None, timeout: int | None = None,
          results: str | Path | None = None, source: Path = SOURCE, seed: int | None = None) -> Result:
    """Grade a learner's notebook, writing feedback under `results` (default: feedback/ next to the notebook)."""
    path = Path(path)
    aid = assignment_id or path.stem
    folder = Path(results) if results else feedback_folder(path, aid)
    result = grade_notebook(path, assignment_id, DEFAULT_STUDENT, source, timeout, feedback_dir=folder, seed=seed,
                            progress=True)
    from .progress import record, record_quiz

    record(result)  # the learner's progress table (grader/progress.py)
    record_quiz(result)  # first and best quiz marks; a wrong answer's question comes back in a new round
    return result

