"""Every assignment in solutions/: the solution scores full marks; the untouched student version runs and scores 0.

Parametrised over whatever solutions/ holds when the tests are collected. Per assignment, three runs go at
once (streaming notebooks spend much of their time waiting): the solution and the untouched student version
graded by the grader (two workers), and the untouched version executed as in the lab, in a thread.
"""
from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import nbformat
import pytest

from grader.cohort import grade_cohort
from grader.course import SOURCE, assignments, release

IDS = assignments(SOURCE)

pytestmark = [pytest.mark.broker, pytest.mark.spark]


@pytest.fixture(scope="module")
def student_versions(tmp_path_factory):
    """A fresh nbgrader release of solutions/ (independent of whether notebooks/ is up to date)."""
    out = tmp_path_factory.mktemp("release")
    release(out, SOURCE, quiet=True)
    return out


def _lab_run(path: Path, into: dict) -> None:
    """Execute a notebook as a learner's Run All would (checks print, never raise); record errors and the last cell."""
    from nbclient import NotebookClient

    try:
        nb = nbformat.read(path, as_version=4)
        NotebookClient(nb, timeout=600, allow_errors=True, kernel_name="python3",
                       extra_arguments=["--IPKernelApp.log_level=ERROR"],
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        into["errors"] = [f"cell {i + 1}: {o.ename}: {o.evalue.splitlines()[0] if o.evalue else ''}"
                          for i, c in enumerate(nb.cells) if c.cell_type == "code"
                          for o in c.get("outputs", []) if o.output_type == "error"]
        into["last_ran"] = bool([c for c in nb.cells if c.cell_type == "code"][-1].get("execution_count"))
    except Exception as exc:  # a dead kernel or a timeout: the test reports it
        into["errors"] = [f"the run stopped: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"]
        into["last_ran"] = False


@pytest.fixture(scope="module", params=IDS)
def outcome(request, student_versions, tmp_path_factory, bootstrap):
    """(assignment id, {'solution': Result, 'untouched': Result}, lab-run record) for one assignment."""
    assert "STREAMLAB_GRADING" not in os.environ, "the lab run must not see STREAMLAB_GRADING"
    aid = request.param
    before = _temporary_folders()
    tmp = tmp_path_factory.mktemp(aid)
    lab_copy = tmp / "lab" / aid
    shutil.copytree(student_versions / aid, lab_copy)
    lab: dict = {}
    runner = threading.Thread(target=_lab_run, args=(lab_copy / f"{aid}.ipynb", lab), daemon=True)
    runner.start()
    subs = tmp / "submissions"
    for student, nb in (("solution", SOURCE / aid / f"{aid}.ipynb"),
                        ("untouched", student_versions / aid / f"{aid}.ipynb")):
        (subs / student / aid).mkdir(parents=True)
        shutil.copyfile(nb, subs / student / aid / f"{aid}.ipynb")
    results = {r.student: r for r in grade_cohort(subs, tmp / "out", workers=2, source=SOURCE, quiet=True)}
    runner.join(timeout=1200)
    lab["left_behind"] = sorted(_temporary_folders() - before)
    return aid, results, lab


def _temporary_folders() -> set[str]:
    """The checkpoint folders streamlab makes (streamlab.new_checkpoint) in the system's temporary folder."""
    import tempfile

    return {p.name for p in Path(tempfile.gettempdir()).glob("streamlab-*")}


def test_solutions_hold_assignments():
    assert IDS, "solutions/ holds no assignment (<id>/<id>.ipynb)"


@pytest.mark.timeout(1800)
def test_solution_scores_full_marks(outcome):
    aid, results, _ = outcome
    sol = results["solution"]
    assert sol.error is None, f"{aid}: the solution could not be graded: {sol.error}"
    missing = [f"{e.grade_id} {e.points:g}/{e.max_points:g}: {e.hint}" for e in sol.exercises if e.status != "passed"]
    assert sol.max_score > 0 and not missing, f"{aid}: the solution loses points:\n" + "\n".join(missing)


@pytest.mark.timeout(1800)
def test_untouched_student_version_scores_zero(outcome):
    aid, results, _ = outcome
    blank = results["untouched"]
    assert blank.error is None, f"{aid}: the untouched student version could not be graded: {blank.error}"
    earned = [f"{e.grade_id} {e.points:g}/{e.max_points:g}" for e in blank.exercises if e.points]
    assert blank.exercises and not earned, f"{aid}: the untouched student version earns points: {earned}"


@pytest.mark.timeout(1800)
def test_untouched_student_version_runs_to_the_end(outcome):
    aid, _, lab = outcome
    assert "errors" in lab, f"{aid}: the lab run did not finish within 20 minutes"
    assert not lab["errors"], f"{aid}: the untouched student version stops with an error:\n" + "\n".join(lab["errors"])
    assert lab["last_ran"], f"{aid}: the last code cell did not run"


@pytest.mark.timeout(1800)
def test_runs_leave_no_temporary_folder(outcome):
    aid, _, lab = outcome
    assert not lab["left_behind"], f"{aid}: the lab run and the two gradings left {lab['left_behind']}"
