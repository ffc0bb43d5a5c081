"""Run a submission cell by cell in its own (sandboxed) kernel and judge each test cell in the grader's process."""
from __future__ import annotations

import functools
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .judge import Judge, Kernel, KernelStuck, Verdict, assigned_names, free_names


KERNEL_STARTS = 3
KERNEL_START_S = 180  # nbclient's 60 s was too short once: a sandboxed kernel in CI's container, beside both lanes


@contextmanager
def kernel_started(client, **kwargs):
    """`client.setup_kernel()` (an nbclient NotebookClient), tried again when the kernel dies before it answers,
    and given KERNEL_START_S to answer at all.

    jupyter_client picks a kernel's TCP ports, then the kernel binds them seconds later; on a busy machine another
    process's connection can take one in between (the kernel dies with "Address already in use"). That is the
    machine's doing, never the notebook's: a new kernel gets new ports. So is a kernel slow to start on a loaded
    machine; the checker's progress lines say it is still waiting."""
    client.startup_timeout = max(getattr(client, "startup_timeout", 0), KERNEL_START_S)
    with ExitStack() as stack:
        for attempt in range(1, KERNEL_STARTS + 1):
            try:
                stack.enter_context(client.setup_kernel(**kwargs))
                break
            except RuntimeError as exc:
                if "Kernel died before replying" not in str(exc) or attempt == KERNEL_STARTS:
                    raise
        yield


def grade_id(cell) -> str | None:
    """The nbgrader grade_id of a cell, if any."""
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def is_test(cell) -> bool:
    """An autograded test cell (graded, not an answer)."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(meta.get("grade")) and not meta.get("solution") and cell.get("cell_type") == "code"


def is_answer(cell) -> bool:
    """An answer (solution) code cell."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(meta.get("solution")) and cell.get("cell_type") == "code"


def is_locked(cell) -> bool:
    """A cell the learner may not change, by nbgrader's metadata: a graded cell that is no answer, or one marked
    `locked`. (nbgrader.utils has the same rule, but importing it imports all of nbgrader's server extensions: a
    second of CPU in every Check my work.)"""
    meta = cell.get("metadata", {}).get("nbgrader")
    if meta is None or meta.get("solution"):
        return False
    return bool(meta.get("grade")) or bool(meta.get("locked", False))


@dataclass
class Test:
    """One test cell as the instructor wrote it (visible and hidden parts), from the source notebook."""

    grade_id: str
    source: str
    points: float
    exercise: str


def exercise_of(gid: str) -> str:
    """The exercise a grade id belongs to: `ex2_other_query` -> `ex2`, `q3_x` -> `q3`."""
    return gid.split("_", 1)[0]


def tests_of(original) -> dict[str, Test]:
    """The source notebook's test cells by grade id (read before any learner code runs)."""
    return {grade_id(c): Test(grade_id(c), c.source, float(c.metadata.nbgrader.get("points", 0)),
                              exercise_of(grade_id(c)))
            for c in original.cells if is_test(c)}


def answer_owners(original) -> dict[str, str]:
    """{name an answer cell defines: the exercise it belongs to}."""
    owners = {}
    for cell in original.cells:
        if is_answer(cell) and grade_id(cell):
            for name in assigned_names(cell.source):
                owners.setdefault(name, exercise_of(grade_id(cell)))
    return owners


def assemble(submitted, released):
    """The notebook to run: the learner's cells, each test cell and locked cell as released, missing tests put back,
    a duplicated graded cell kept once (the first copy)."""
    import copy

    import nbformat

    rel_cells = {grade_id(c): c for c in released.cells if grade_id(c)}
    order = [grade_id(c) for c in released.cells if grade_id(c)]
    out, seen = [], set()
    for cell in submitted.cells:
        gid = grade_id(cell)
        if gid in seen:
            continue
        if gid in rel_cells:
            seen.add(gid)
            if is_test(rel_cells[gid]) or (is_locked(rel_cells[gid]) and not is_answer(rel_cells[gid])):
                cell = rel_cells[gid]
        out.append(copy.deepcopy(cell))  # the submission itself is never changed
    for gid in order:
        if gid in seen or not is_test(rel_cells[gid]):
            continue
        before = order[:order.index(gid)]
        at = max((i for i, c in enumerate(out) if grade_id(c) in before), default=len(out) - 1) + 1
        out.insert(at, copy.deepcopy(rel_cells[gid]))
        seen.add(gid)
    nb = copy.deepcopy(submitted)
    nb.cells = out
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.validator.normalize(nb) if hasattr(nbformat.validator, "normalize") else None
    return nb


@dataclass
class Run:
    """What happened: the executed notebook (test cells hold the judge's output), verdicts, and why it stopped."""

    nb: object
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    stopped: str | None = None
    cell_errors: dict[int, str] = field(default_factory=dict)
    audits: dict[str, list] = field(default_factory=dict)  # grader/audit.py: {grade id: [[cheat, points], ...]}


LABEL_CHARS = 48  # of a cell's telling line in a progress line ("running cell 12 (`demo = …`) for 40 s")
SETUP_LINE = ("import ", "from ", "needs_setup(", "#")  # the same in many cells: they tell nothing of this one


def _cell_label(cell, index: int) -> str:
    """A cell as the progress lines name it: its grade id, else its number and its first line that tells it apart
    (not an import, a comment or the re-entry check), cut at a word with an ellipsis."""
    gid = grade_id(cell)
    if gid:
        return f"cell {gid}"
    lines = [ln.strip() for ln in cell.source.splitlines() if ln.strip()]
    first = next((ln for ln in lines if not ln.startswith(SETUP_LINE)), lines[0] if lines else "")
    if len(first) > LABEL_CHARS:
        first = first[:LABEL_CHARS - 1].rsplit(" ", 1)[0].rstrip(" ,(") + "…"
    return f"cell {index + 1} (`{first}`)" if first else f"cell {index + 1}"


def judge_spark():
    """The grader's own Spark session, for checks that run a query with the learner's options: the `spark_factory`
    that grading and the sandboxed worker give `run`."""
    import streamlab

    return streamlab.spark()


def run(nb, tests: dict[str, Test], owners: dict[str, str], workdir: Path, timeout: int,
        sandbox=None, spark_factory=None, kernel_log: Path | None = None, audit: bool | dict = False) -> Run:
    """Execute `nb` in a fresh kernel (inside `sandbox` when given); judge each test cell when its turn comes
    (`audit`: and again with wrong, constant and random answers, grader/audit.py; a dict also names other answers
    whose exercise's section is replayed, {exercise: {kind: {answer grade id: source}}})."""
    import nbformat
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.utils import run_sync
    from nbclient.exceptions import DeadKernelError

    manager = AsyncKernelManager
    if sandbox is not None:
        class SandboxedKernelManager(AsyncKernelManager):
            """Starts the kernel inside the grading sandbox."""

            def format_kernel_cmd(self, extra_arguments=None):
                return sandbox.wrap(super().format_kernel_cmd(extra_arguments))

        manager = SandboxedKernelManager
    client = _limited_client_class()(nb, timeout=timeout, allow_errors=True, interrupt_on_timeout=True,
                            error_on_timeout={"ename": "CellTimeoutError", "evalue": f"timed out after {timeout} s"},
                            kernel_name="python3", kernel_manager_class=manager,
                            extra_arguments=["--HistoryManager.hist_file=:memory:", "--IPKernelApp.log_level=ERROR"],
                            resources={"metadata": {"path": str(workdir)}})
    outcome = Run(nb)
    spark_made: list = []

    def spark():
        if not spark_made:
            spark_made.append(spark_factory())
        return spark_made[0]

    with kernel_started(client):
        side = client.km.blocking_client()
        side.start_channels()
        watchdog = MemoryWatchdog(_kernel_pid(client.km))
        client.watchdog = watchdog
        try:
            side.wait_for_ready(timeout=60)
            kernel = Kernel(side, run_sync(client.km.interrupt_kernel), timeout=float(timeout))
            kernel.install_agent()
            judge = Judge(kernel, spark, set(owners))
            if audit:
                from .audit import Auditor

                judge.auditor = Auditor(kernel, judge, tests, owners, [grade_id(c) for c in nb.cells],
                                        replays=audit if isinstance(audit, dict) else None, cells=nb.cells,
                                        answers={i: exercise_of(grade_id(c)) for i, c in enumerate(nb.cells)
                                                 if is_answer(c)}, execute=client.execute_cell)
                outcome.audits = judge.auditor.audits
            watchdog.start()
            _execute(client, nb, tests, owners, judge, kernel, timeout, outcome, DeadKernelError, nbformat)
        finally:
            watchdog.stop()
            side.stop_channels()
            _clean_up_checks(spark_made)
    return outcome


# The grader's limits, read from the settings when used ($STREAMLAB_GRADER_MEMORY_GIB: the kernel, its Spark JVM and
# children; $STREAMLAB_GRADER_OUTPUT_BYTES: per cell). A test may set MEMORY_LIMIT_GIB or OUTPUT_LIMIT_BYTES here.
_LIMITS = {"MEMORY_LIMIT_GIB": "grader_memory_gib", "OUTPUT_LIMIT_BYTES": "grader_output_bytes"}


def __getattr__(name: str):
    if name in _LIMITS:
        return _limit(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _limit(name: str):
    """One of the grader's limits: the value a test set on this module, else the setting's now."""
    from streamlab.settings import settings  # not at import: streamlab's package brings the lab with it

    return globals()[name] if name in globals() else getattr(settings, _LIMITS[name])


def _kernel_pid(km) -> int | None:
    """The pid of the kernel's process (the sandbox's outer process when sandboxed: its tree is the kernel's)."""
    for getter in (lambda: km.provisioner.process.pid, lambda: km.provisioner.pid, lambda: km.kernel.pid):
        try:
            pid = getter()
            if pid:
                return int(pid)
        except Exception:
            continue
    return None


class MemoryWatchdog:
    """Kills the learner's kernel (and everything it started) when their memory together passes the limit.

    An RLIMIT cannot do it: the Spark JVM reserves far more address space than it uses, and each process has its
    own limit. So a thread adds up the resident memory of the kernel's process tree twice a second; past the
    limit it kills the tree, and the cell running then is reported as the one that used too much.
    """

    def __init__(self, pid: int | None, limit_gib: float | None = None, every: float = 0.5):
        self.pid, self.every = pid, every
        self.limit_gib = _limit("MEMORY_LIMIT_GIB") if limit_gib is None else limit_gib
        self.tripped: str | None = None
        self.peak = 0
        self.cell = "a cell"
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="grader-memory-watchdog")

    def start(self) -> None:
        if self.pid is not None:
            self._thread.start()

    def stop(self) -> None:
        self._done.set()

    def _tree(self):
        import psutil

        root = psutil.Process(self.pid)
        return [root, *root.children(recursive=True)]

    def _run(self) -> None:
        import psutil

        limit = self.limit_gib * 2**30
        while not self._done.wait(self.every):
            try:
                procs = self._tree()
            except psutil.Error:
                return  # the kernel is gone
            used = 0
            for proc in procs:
                try:
                    used += proc.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, used)
            if used > limit:
                self.tripped = (f"{self.cell} used more than {self.limit_gib:g} GiB of memory (the kernel and its "
                                "Spark JVM together), so the check stopped it; nothing after it could be run")
                for proc in reversed(procs):
                    try:
                        proc.kill()
                    except psutil.Error:
                        pass
                return


@functools.lru_cache(maxsize=1)
def _limited_client_class():
    from nbclient import NotebookClient

    class LimitedClient(NotebookClient):
        """A NotebookClient that keeps at most OUTPUT_LIMIT_BYTES of output per cell (a print loop cannot fill the
        grader's memory) and says where it cut."""

        watchdog = None

        def output(self, outs, msg, display_id, cell_index):
            sizes = self.__dict__.setdefault("_output_sizes", {})
            content = msg.get("content", {})
            size = len(str(content.get("text", ""))) + sum(len(str(v)) for v in content.get("data", {}).values())
            sizes[cell_index] = sizes.get(cell_index, 0) + size
            limit = _limit("OUTPUT_LIMIT_BYTES")
            if sizes[cell_index] > limit:
                if sizes[cell_index] - size <= limit:
                    from nbformat.v4 import new_output

                    outs.append(new_output("stream", name="stderr", text=(
                        f"\n[the check kept the first {limit // 1_000_000} MB of this cell's output "
                        "and dropped the rest]\n")))
                return None
            return super().output(outs, msg, display_id, cell_index)

    return LimitedClient


def _write_progress(workdir, text: str) -> None:
    """What runs now, for the checker's progress lines (a file in the run's folder, which the parent can read)."""
    try:
        (Path(workdir) / ".grader-progress").write_text(text)
    except OSError:
        pass


def _clean_up_checks(sessions: list) -> None:
    """Queries, topics and folders the checks made in this process (the grader's own session stays for reuse)."""
    from streamlab.lab.lifecycle import cleanup

    try:
        cleanup(sessions[0] if sessions else None)
    except Exception:
        pass  # a broker lost mid-run is reported by the caller; leftovers have unique names


def _execute(client, nb, tests, owners, judge, kernel, timeout, outcome, DeadKernelError, nbformat) -> None:
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        gid = grade_id(cell)
        if gid in tests:
            test = tests[gid]
            needs = _unmet_prerequisite(test, owners, outcome.verdicts, tests)
            if needs:
                verdict = Verdict(gid, 0.0, test.points, skipped=f"skipped: needs {needs} first")
            else:
                try:
                    verdict = _judge(judge, test)
                except KernelStuck as exc:
                    outcome.stopped = getattr(getattr(client, "watchdog", None), "tripped", None) or str(exc)
                    return
            outcome.verdicts[gid] = verdict
            text = verdict.skipped or verdict.output + (f"✗ {verdict.error}\n" if verdict.error else "")
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)] if text else []
            continue
        started = time.monotonic()
        label = _cell_label(cell, index)
        if getattr(client, "watchdog", None) is not None:
            client.watchdog.cell = label
        _write_progress(client.resources.get("metadata", {}).get("path", "."), f"{label}|{time.time():.0f}")
        try:
            client.execute_cell(cell, index)
        except DeadKernelError:
            tripped = getattr(getattr(client, "watchdog", None), "tripped", None)
            outcome.stopped = tripped or (f"the kernel died while running {label} (os._exit, a crash or out "
                                          "of memory?); nothing after it could be run")
            return
        if time.monotonic() - started >= timeout:
            outcome.cell_errors[index] = (f"{_cell_label(cell, index)} did not finish within {timeout} s (an endless "
                                          "loop?) and was interrupted")
            cell.outputs.append(nbformat.v4.new_output("error", ename="CellTimeoutError",
                                                       evalue=f"interrupted after {timeout} s", traceback=[]))
            try:
                kernel.ping(timeout=15)
            except KernelStuck:
                outcome.stopped = (f"{_cell_label(cell, index)} did not stop when interrupted (does it catch "
                                   "KeyboardInterrupt?); nothing after it could be run")
                return
            continue
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                value = (out.evalue or "").strip().splitlines()
                outcome.cell_errors[index] = f"{_cell_label(cell, index)} raised {out.ename}" + (
                    f": {value[0][:200]}" if value else "")
                break


def _judge(judge, test: Test):
    """Judge one test cell; when auditing, its exercise also with the cheats of grader/audit.py (run.audits)."""
    auditor = getattr(judge, "auditor", None)
    return judge.judge(test.grade_id, test.source, test.points) if auditor is None else auditor.judge_test(test)


def _unmet_prerequisite(test: Test, owners: dict[str, str], verdicts: dict[str, Verdict],
                        tests: dict[str, Test]) -> str | None:
    """Another exercise whose answer this test uses and which did not pass, if any."""
    try:
        free, _ = free_names(test.source)
    except SyntaxError:
        return None
    for name in free:
        other = owners.get(name)
        if other and other != test.exercise:
            theirs = [v for g, v in verdicts.items() if tests[g].exercise == other]
            if theirs and any(v.points < v.max_points for v in theirs):
                return f"exercise {other}"
    return None
