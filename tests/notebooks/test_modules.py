"""Every assignment in solutions/: the solution scores full marks; the untouched student version runs and scores 0;
no wrong, constant or random answer earns a point on any exercise (grader/audit.py, run on the solution's grading).
The untouched version is graded only where checks read what its own cells made (UNTOUCHED_GRADED); elsewhere the
audit's `none` cheat gives each exercise the stubs' None on the solution's run.

Parametrised over whatever solutions/ holds when the tests are collected. Streaming notebooks spend much of their
time waiting (trigger intervals, demos that run for seconds), so every run goes at once, in one go before the
first test: the grader grades all solutions and untouched student versions as one cohort (GRADERS workers), while
the untouched versions run as in the lab, LAB_RUNS at a time, each kernel with a temporary folder of its own.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from grader.cohort import grade_cohort
from grader.course import SOURCE, assignments, release

IDS = assignments(SOURCE)
GRADERS, LAB_RUNS = 3, 2


def _judged_on_outcomes(aid: str) -> bool:
    from grader.audit import OUTCOME

    nb = nbformat.read(SOURCE / aid / f"{aid}.ipynb", as_version=4)
    return any(OUTCOME.search(cell.source) for cell in nb.cells if cell.cell_type == "code")


# The untouched student version is graded where some checks read what the notebook's cells made with the answer
# (grader/audit.py's `# audit: judged on`): only its own run can show that its stubs earn 0 there. Elsewhere the
# audit's `none` cheat judges each exercise with the stubs' None, on the solution's run.
UNTOUCHED_GRADED = {aid for aid in IDS if _judged_on_outcomes(aid)}

pytestmark = [pytest.mark.broker, pytest.mark.spark]


def _lab_run(path: Path, tmp: Path) -> dict:
    """Execute a notebook as a learner's Run All would (checks print, never raise): errors, stderr, last cell."""
    from nbclient import NotebookClient

    tmp.mkdir(parents=True)
    # A learner's kernel: its own temporary folder (what it leaves is its own), and ipykernel forwards a child
    # process's output (the JVM's) into the cell only when it does not think it runs under pytest.
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"} | {"TMPDIR": str(tmp)}
    into: dict = {}
    at = {"cell": "before the first cell"}  # which cell ran when a run stopped (a time-out names no cell)
    try:
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, timeout=600, allow_errors=True, kernel_name="python3",
                                extra_arguments=["--IPKernelApp.log_level=ERROR"],
                                resources={"metadata": {"path": str(path.parent)}})
        with client.setup_kernel(env=env):
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
            back = time.monotonic()
            into["reentry"] = _re_enter(client, nb, at)
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


def _re_enter(client, nb, at: dict) -> list[str]:
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
        if cell.cell_type == "markdown" and cell.source.startswith("#"):
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


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory, bootstrap):
    """{assignment id: ({'solution': Result, 'untouched': Result}, lab-run record)}, plus the folders all left.

    Only the assignments whose tests were selected (`-k 04`) run."""
    assert "STREAMLAB_GRADING" not in os.environ, "the lab run must not see STREAMLAB_GRADING"
    selected = {item.callspec.params["outcome"] for item in request.session.items
                if getattr(item, "callspec", None) and "outcome" in item.callspec.params}
    ids = [aid for aid in IDS if aid in selected] or IDS
    before, began = _temporary_folders(), time.monotonic()
    student_versions = tmp_path_factory.mktemp("release")
    release(student_versions, SOURCE, quiet=True)  # fresh, whether or not notebooks/ is up to date
    tmp = tmp_path_factory.mktemp("runs")
    subs = tmp / "submissions"
    for aid in ids:
        for student, nb in (("solution", SOURCE / aid / f"{aid}.ipynb"),
                            ("untouched", student_versions / aid / f"{aid}.ipynb")):
            if student == "untouched" and aid not in UNTOUCHED_GRADED:
                continue
            (subs / student / aid).mkdir(parents=True)
            shutil.copyfile(nb, subs / student / aid / f"{aid}.ipynb")
    from streamlab.lab import cluster

    cluster_before = cluster.folder().exists()  # module 9's lab run starts the cluster: stopped below if so
    with ThreadPoolExecutor(LAB_RUNS) as pool:
        labs = {}
        for aid in ids:
            copy = tmp / "lab" / aid
            shutil.copytree(student_versions / aid, copy)
            labs[aid] = pool.submit(_lab_run, copy / f"{aid}.ipynb", tmp / "lab-tmp" / aid)
        graded = grade_cohort(subs, tmp / "out", workers=GRADERS, source=SOURCE, quiet=True, audit={"solution"})
        lab = {aid: future.result(timeout=1800) for aid, future in labs.items()}
    if not cluster_before and cluster.folder().exists():
        cluster.stop()
    results = {aid: {r.student: r for r in graded if r.assignment == aid} for aid in ids}
    _report_timings(request.config, results, lab, time.monotonic() - began)
    return {aid: (results[aid], lab[aid]) for aid in ids}, sorted(_temporary_folders() - before)


def _report_timings(config, results: dict, lab: dict, total: float) -> None:
    """Where the fixture's minutes go (graded runs, lab runs), one line per assignment: tests/conftest.py prints
    them in pytest's summary (a fixture's own output is captured)."""
    lines = [f"notebook runs, {total:.0f} s in all (graded: solution / untouched; lab: Run All + going back):"]
    for aid, record in lab.items():
        graded = " / ".join(f"{results[aid][s].seconds:.0f} s" if s in results[aid] else "-"
                            for s in ("solution", "untouched"))
        lines.append(f"  {aid:28} graded {graded:16} lab {record.get('seconds', '-')} s + "
                     f"{record.get('reentry seconds', '-')} s")
    config.streamlab_summary = getattr(config, "streamlab_summary", []) + lines


@pytest.fixture(params=IDS)
def outcome(request, runs):
    """(assignment id, {'solution': Result, 'untouched': Result}, lab-run record) for one assignment."""
    results, lab = runs[0][request.param]
    return request.param, results, lab


def _temporary_folders() -> set[str]:
    """The checkpoint folders streamlab makes (streamlab.new_checkpoint) in the system's temporary folder, of
    processes that are gone. A live process's folders are its own: make test runs the compose, cluster and hub
    labs beside these runs (tests/lanes.py)."""
    from streamlab.lab.lifecycle import orphaned_folders

    return {folder.name for folder in orphaned_folders()}


def test_solutions_hold_assignments():
    assert IDS, "solutions/ holds no assignment (<id>/<id>.ipynb)"


@pytest.mark.timeout(3600)
def test_solution_scores_full_marks(outcome):
    aid, results, _ = outcome
    sol = results["solution"]
    assert sol.error is None, f"{aid}: the solution could not be graded: {sol.error}"
    missing = [f"{e.grade_id} {e.points:g}/{e.max_points:g}: {e.hint}" for e in sol.exercises if e.status != "passed"]
    assert sol.max_score > 0 and not missing, f"{aid}: the solution loses points:\n" + "\n".join(missing)


@pytest.mark.timeout(3600)
def test_untouched_student_version_scores_zero(outcome):
    aid, results, _ = outcome
    if "untouched" not in results:  # every test cell judged with the stubs' None (the audit's `none`)
        sol = results["solution"]
        tried = {gid: [p for kind, p in sol.audit.get(gid, []) if kind == "none"] for gid in
                 (e.grade_id for e in sol.exercises)}
        assert tried and all(p == [0] for p in tried.values()), f"{aid}: the stubs' None earns points: {tried}"
        return
    blank = results["untouched"]
    assert blank.error is None, f"{aid}: the untouched student version could not be graded: {blank.error}"
    earned = [f"{e.grade_id} {e.points:g}/{e.max_points:g}" for e in blank.exercises if e.points]
    assert blank.exercises and not earned, f"{aid}: the untouched student version earns points: {earned}"


@pytest.mark.timeout(3600)
def test_no_wrong_constant_or_random_answer_earns_a_point(outcome):
    """Each test cell, judged again right after the solution's with the exercise's answers swapped for 0 or empty,
    a function returning what the right one returned first (a memorised constant), the answer nudged, and random
    answers of the same shape (every other letter of a quiz), gives each of them 0 points."""
    from grader.audit import audit_points

    aid, results, _ = outcome
    sol = results["solution"]
    assert sol.error is None, f"{aid}: the solution could not be graded: {sol.error}"
    unaudited = [e.grade_id for e in sol.exercises if not sol.audit.get(e.grade_id)]
    assert not unaudited, f"{aid}: test cells no cheat was tried on: {unaudited}"
    scored = audit_points(sol.audit)
    assert not scored, f"{aid}: answers that are not the answer earn points:\n" + "\n".join(scored)


@pytest.mark.timeout(3600)
def test_untouched_student_version_runs_to_the_end(outcome):
    aid, _, lab = outcome
    assert not lab["errors"], f"{aid}: the untouched student version stops with an error:\n" + "\n".join(lab["errors"])
    assert lab["last_ran"], f"{aid}: the last code cell did not run"


@pytest.mark.timeout(3600)
def test_no_red_stderr_box_and_the_setup_cell_names_the_connector(outcome):
    """What a learner sees on Run All: no cell writes to stderr (the JVM's start-up lines, Spark's warnings)."""
    aid, _, lab = outcome
    assert not lab.get("stderr"), f"{aid}: cells wrote to stderr:\n" + "\n".join(lab["stderr"])
    assert "engine    connector" in lab.get("setup", ""), f"{aid}: the setup cell does not report the connector"


def _shown(lab: dict, cell_id: str):
    """The value a cell showed in the lab run (a dict or list literal, or text), parsed."""
    import ast

    assert cell_id in lab.get("shown", {}), f"cell {cell_id} showed nothing in the lab run"
    text = lab["shown"][cell_id]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _ints(mapping) -> dict:
    return {int(k): v for k, v in mapping.items()}


@pytest.mark.timeout(3600)
def test_what_is_new_since_3x_shows_the_numbers_its_text_states(runs):
    """Issue 15, item 3: the cells of 02 and 07 on what Spark added since 3.x show, live, the numbers the text under
    them states (KafkaSourceProvider.scala:569-582 by time; 550-557 the scan's metrics; StreamingQueryCheckpoint-
    Metadata.scala:62-76 the missing metadata file; KafkaMicroBatchStream's latestOffset with read_committed;
    AsyncProgressTrackingMicroBatchExecution.scala:253-295)."""
    labs = {aid[:2]: record for aid, (_, record) in runs[0].items()}
    assert "02" in labs and "07" in labs, "this test reads the lab runs of 02 and 07"
    if "02" in labs:
        lab = labs["02"]
        by_time = _shown(lab, "m2-bytime-code")
        assert _ints(by_time["startingTimestamp=cut"]) == {0: 20, 1: 20}, by_time
        assert _ints(by_time["by partition (0 from cut, 1 from 0)"]) == {0: 20, 1: 70}, by_time
        assert isinstance(by_time["an hour later"], str) and by_time["an hour later, strategy latest"] == {}, by_time
        lost = _shown(lab, "m2-dataloss-code")
        assert lost["failOnDataLoss=true"]["error"], lost
        kept = lost["failOnDataLoss=false"]
        assert kept["error"] is None and kept["rows"] == 40, lost
        assert kept["scan"].get("dataLoss") == 2 and kept["scan"].get("offsetOutOfRange") == 60, lost
        assert "STREAMING_CHECKPOINT_MISSING_METADATA_FILE" in str(_shown(lab, "m2-metadata-code"))
    if "07" in labs:
        lab = labs["07"]
        dedup = _shown(lab, "m7-dedup-code")
        assert dedup["rows kept"] == dedup["distinct ids kept"] == 200 and dedup["batches"] >= 2, dedup
        stalled = _shown(lab, "m7-open-tx-code")
        assert _ints(stalled["log end"]) == {0: 86}, stalled
        assert stalled["read_committed, transaction open"]["rows"] == 30, stalled
        assert stalled["read_committed, after the commit"]["rows"] == 85, stalled
        relay = _shown(lab, "m7-async-code")
        plain, asynchronous = relay["default"], relay["async, 10 s"]
        assert plain["error"] is None and plain["commits"] >= plain["batches"] >= 3, relay
        assert asynchronous["error"] is None and asynchronous["batches"] >= 3, relay
        # files at most every 10 s, not one per batch: the first batch's, then none within the 6 s run
        assert asynchronous["commits"] <= asynchronous["offsets"] <= 2 < asynchronous["batches"], relay
        assert relay["into foreachBatch"] and relay["with availableNow"], relay


@pytest.mark.timeout(3600)
def test_no_untouched_answer_cell_prints_ellipsis(outcome):
    """An answer stub (`# YOUR CODE HERE`, then `pass`) shows nothing under it: `...` printed `Ellipsis`."""
    aid, _, lab = outcome
    assert not lab.get("ellipsis"), f"{aid}: cells print Ellipsis: {lab['ellipsis']}"


@pytest.mark.timeout(3600)
def test_every_live_claim_of_a_self_test_holds(outcome):
    """A self-test (08's sheet) proves each row on the learner's broker: in the lab run every claim printed holds
    (a claim printing ✗ is a row of the sheet that Spark contradicts, or a proof that does not prove it)."""
    aid, _, lab = outcome
    source = (SOURCE / aid / f"{aid}.ipynb").read_text(encoding="utf-8")
    if "claims.claim" in source:
        assert lab.get("claims"), f"{aid}: its self-test printed no claim in the lab run"
    failed = [line for line in lab.get("claims", []) if line.startswith("✗")]
    assert not failed, f"{aid}: claims of its self-test do not hold:\n" + "\n".join(failed)


@pytest.mark.timeout(3600)
def test_every_section_and_check_can_be_run_again_after_run_all(outcome):
    """After Run All (which ends with cleanup()), each check cell and each section, entered afresh, runs without
    an error: what a cell needs is recreated, or the cell says in one line what to run."""
    aid, _, lab = outcome
    assert "reentry" in lab, f"{aid}: the lab run stopped before going back: {lab['errors']}"
    assert not lab["reentry"], f"{aid}: going back after Run All breaks:\n" + "\n".join(lab["reentry"])


@pytest.mark.timeout(3600)
def test_the_lab_run_leaves_no_temporary_folder(outcome):
    aid, _, lab = outcome
    assert not lab["left_behind"], f"{aid}: the lab run left {lab['left_behind']} in its temporary folder"


@pytest.mark.timeout(3600)
def test_the_gradings_leave_no_temporary_folder(runs):
    _, left = runs
    assert not left, f"grading the solutions and the untouched versions left {left}"
