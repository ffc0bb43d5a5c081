"""Run a submission cell by cell in its own (sandboxed) kernel and judge each test cell in the grader's process."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from .judge import Judge, Kernel, KernelStuck, Verdict, assigned_names, free_names


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
    from nbgrader.utils import is_locked

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


def _cell_label(cell, index: int) -> str:
    gid = grade_id(cell)
    if gid:
        return f"cell {gid}"
    first = next((ln.strip() for ln in cell.source.splitlines() if ln.strip()), "")
    return f"cell {index + 1} (`{first[:40]}`)" if first else f"cell {index + 1}"


def run(nb, tests: dict[str, Test], owners: dict[str, str], workdir: Path, timeout: int,
        sandbox=None, spark_factory=None, kernel_log: Path | None = None) -> Run:
    """Execute `nb` in a fresh kernel (inside `sandbox` when given); judge each test cell when its turn comes."""
    import nbformat
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.utils import run_sync
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    manager = AsyncKernelManager
    if sandbox is not None:
        class SandboxedKernelManager(AsyncKernelManager):
            """Starts the kernel inside the grading sandbox."""

            def format_kernel_cmd(self, extra_arguments=None):
                return sandbox.wrap(super().format_kernel_cmd(extra_arguments))

        manager = SandboxedKernelManager
    client = NotebookClient(nb, timeout=timeout, allow_errors=True, interrupt_on_timeout=True,
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

    with client.setup_kernel():
        side = client.km.blocking_client()
        side.start_channels()
        try:
            side.wait_for_ready(timeout=60)
            kernel = Kernel(side, run_sync(client.km.interrupt_kernel), timeout=float(timeout))
            kernel.install_agent()
            judge = Judge(kernel, spark, set(owners))
            _execute(client, nb, tests, owners, judge, kernel, timeout, outcome, DeadKernelError, nbformat)
        finally:
            side.stop_channels()
            _clean_up_checks(spark_made)
    return outcome


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
                    verdict = judge.judge(gid, test.source, test.points)
                except KernelStuck as exc:
                    outcome.stopped = str(exc)
                    return
            outcome.verdicts[gid] = verdict
            text = verdict.skipped or verdict.output + (f"✗ {verdict.error}\n" if verdict.error else "")
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)] if text else []
            continue
        started = time.monotonic()
        try:
            client.execute_cell(cell, index)
        except DeadKernelError:
            outcome.stopped = (f"the kernel died while running {_cell_label(cell, index)} (os._exit, a crash or out "
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
