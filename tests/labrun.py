"""A notebook run as a learner runs it, and what a learner would see go wrong: Run All, then going back.

`run_as_a_learner` executes the untouched student version top to bottom (checks print, never raise), then goes
back after the last cell's cleanup(): every check cell again, then each section afresh. `problems` names what a
learner would see: an error, a red stderr box, `Ellipsis` under a stub, a self-test's claim that fails, a section
that breaks when entered again, files left in the kernel's temporary folder. tests/notebooks/test_modules.py runs
every module this way; tests/cluster/test_cluster.py runs module 9 on the cluster it already has.
"""
from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import nbformat

from grader.runner import kernel_started
from streamlab.demo.live import DEMO_SECONDS_ENV

DEMO_SECONDS = 15


def run_as_a_learner(path: Path, tmp: Path, save: Path | None = None) -> dict:
    """Execute a notebook as a learner's Run All would (checks print, never raise): errors, stderr, last cell.
    `save`: write the notebook as Run All left it there (the static site shows its outputs, grader/site.py)."""
    from nbclient import NotebookClient

    tmp.mkdir(parents=True)
    # A learner's kernel: its own temporary folder (what it leaves is its own), and ipykernel forwards a child
    # process's output (the JVM's) into the cell only when it does not think it runs under pytest.
    # Its demos end DEMO_SECONDS after their script, as under the grader: nobody moves a slider here (the
    # browser tests do), and full-length demos made the course's lab runs the suite's longest wait.
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"} | {
        "TMPDIR": str(tmp), DEMO_SECONDS_ENV: str(DEMO_SECONDS)}
    into: dict = {}
    at = {"cell": "before the first cell"}  # which cell ran when a run stopped (a time-out names no cell)
    try:
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, timeout=600, allow_errors=True, kernel_name="python3",
                                extra_arguments=["--IPKernelApp.log_level=ERROR"],
                                resources={"metadata": {"path": str(path.parent)}})
        with kernel_started(client, env=env):
            started = time.monotonic()
            for index, cell in enumerate(nb.cells):
                at["cell"] = f"Run All, cell {index + 1} ({cell.source.splitlines()[0][:60] if cell.source else ''})"
                client.execute_cell(cell, index)
            into["seconds"] = round(time.monotonic() - started, 1)
            # what Run All showed, read before going back: nbclient puts each re-run cell into nb.cells
            code = [c for c in nb.cells if c.cell_type == "code"]
            into["errors"] = [f"cell {i + 1}: {o.ename}: {o.evalue.splitlines()[0] if o.evalue else ''}"
                              for i, c in enumerate(nb.cells) if c.cell_type == "code"
                              for o in c.get("outputs", []) if o.output_type == "error"]
            into["stderr"] = [f"cell {i + 1}: {o.get('text', '')[:300]}" for i, c in enumerate(nb.cells)
                              if c.cell_type == "code" for o in c.get("outputs", [])
                              if o.output_type == "stream" and o.name == "stderr"]
            # what each cell with an id showed last (its execute_result), read by the tests of printed numbers
            into["shown"] = {c.get("id"): o["data"]["text/plain"] for c in code for o in c.get("outputs", [])
                             if o.output_type == "execute_result" and "text/plain" in o.get("data", {})}
            into["ellipsis"] = [f"cell {i + 1}" for i, c in enumerate(nb.cells) if c.cell_type == "code"
                                for o in c.get("outputs", []) if o.output_type == "execute_result"
                                and o.get("data", {}).get("text/plain") == "Ellipsis"]
            into["setup"] = "".join(o.get("text", "") for o in code[0].get("outputs", [])
                                    if o.output_type == "stream")
            # every claim a live self-test printed (claims.claim: "✓ text" or "✗ text  (seen: …)")
            into["claims"] = [line for c in code if "claims.claim" in c.source
                              for o in c.get("outputs", []) if o.output_type == "stream"
                              and o.name == "stdout" for line in o.get("text", "").splitlines()
                              if line.startswith(("✓ ", "✗ "))]
            into["last_ran"] = bool(code[-1].get("execution_count"))
            if save is not None:  # whole or not at all: the browser lane may build the site from it meanwhile
                save.parent.mkdir(parents=True, exist_ok=True)
                nbformat.write(nb, save.with_suffix(".partial"))
                os.replace(save.with_suffix(".partial"), save)
            back = time.monotonic()
            into["reentry"] = re_enter(client, nb, at)
            into["reentry seconds"] = round(time.monotonic() - back, 1)
    except Exception as exc:  # a dead kernel or a timeout: the test reports it, and where
        into["errors"] = [f"the run stopped in {at['cell']}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"]
        into["last_ran"] = False
    # A kernel with a Spark session does not exit within jupyter_client's shutdown wait and is killed, so its exit
    # handlers do not run: its JVM's temporary folder stays until the next setup() sweeps it (that sweep is proven
    # by tests/integration/test_killed_run.py). Everything else it made is its own to remove.
    jvm = [p for p in tmp.iterdir() if p.name.startswith("streamlab-jvm-")]
    into["left_behind"] = sorted(p.name for p in tmp.iterdir() if p not in jvm)
    for folder in jvm:
        shutil.rmtree(folder, ignore_errors=True)
    return into


def re_enter(client, nb, at: dict) -> list[str]:
    """Go back after Run All (whose cleanup() deleted the topics and checkpoints), as learners do: re-run every
    check cell, then enter each section afresh (its cells in order, then cleanup() again). The errors, one a line.

    Demos run as briefly as under the grader (STREAMLAB_GRADING=1 in this kernel from here on): what is tested is
    that a section finds or recreates what it needs, not the demo's story again."""
    import copy

    def run(index: int, source: str | None = None) -> list[str]:
        cell = copy.deepcopy(nb.cells[index]) if source is None else nbformat.v4.new_code_cell(source)
        at["cell"] = f"going back, cell {index + 1} ({cell.source.splitlines()[0][:60] if cell.source else ''})"
        client.execute_cell(cell, index)
        return [f"{o.ename}: {(o.evalue or '').splitlines()[0][:200] if o.evalue else ''}"
                for o in cell.get("outputs", []) if o.output_type == "error"]

    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    cleanup = next((i for i in code if "streamlab.cleanup(" in nb.cells[i].source), None)
    last = [i for i in code if "check_button" in nb.cells[i].source or i == cleanup]
    errors = [f"re-running check cell {i + 1} ({nb.cells[i].metadata['nbgrader']['grade_id']}): {e}"
              for i in code if nb.cells[i].metadata.get("nbgrader", {}).get("grade") for e in run(i)]
    run(code[0], "import os; os.environ['STREAMLAB_GRADING'] = '1'")
    sections: list[tuple[str, list[int]]] = []
    for i, cell in enumerate(nb.cells):
        # A section is what a learner goes back to: a heading of level 1 or 2; a ### sub-section (one that builds
        # on its section's topics, a Going deeper) is run with its section.
        if cell.cell_type == "markdown" and re.match(r"#{1,2}\s", cell.source):
            sections.append((cell.source.splitlines()[0].lstrip("# "), []))
        elif cell.cell_type == "code" and sections and i not in last:
            sections[-1][1].append(i)
    for title, cells in sections:
        for i in cells:
            cell = copy.deepcopy(nb.cells[i])
            at["cell"] = f"going back, section {title!r}, cell {i + 1}"
            client.execute_cell(cell, i)
            errors += [f"section {title!r}, cell {i + 1} after cleanup(): {o.ename}: "
                       f"{(o.evalue or '').splitlines()[0][:200] if o.evalue else ''}"
                       for o in cell.get("outputs", []) if o.output_type == "error"]
            told = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.output_type == "stream")
            if "down to this one again" in told:
                break  # the cell said in one line where to start again (checks.needs): a learner goes there
        if cells and cleanup is not None:
            run(cleanup)
    return errors


def problems(lab: dict) -> dict[str, list[str]]:
    """What went wrong in a learner's run, by kind (each list empty when all is well)."""
    return {
        "errors": list(lab.get("errors", [])) + ([] if lab.get("last_ran") else ["the last code cell did not run"]),
        "stderr": list(lab.get("stderr", [])) + (
            [] if "engine    connector" in lab.get("setup", "") else ["the setup cell does not report the connector"]),
        "ellipsis": list(lab.get("ellipsis", [])),
        "claims": [line for line in lab.get("claims", []) if line.startswith("✗")],
        "going back": list(lab["reentry"]) if "reentry" in lab else [
            f"the run stopped before going back: {lab.get('errors')}"],
        "left behind": list(lab.get("left_behind", [])),
    }
