"""Every assignment in solutions/: the solution scores full marks; the untouched student version runs and scores 0.

Parametrised over whatever solutions/ holds when the tests are collected.
"""
from __future__ import annotations

import os
import shutil
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


def test_solutions_hold_assignments():
    assert IDS, "solutions/ holds no assignment (<id>/<id>.ipynb)"


@pytest.mark.timeout(1500)
@pytest.mark.parametrize("aid", IDS)
def test_solution_full_marks_and_untouched_zero(aid, student_versions, tmp_path, bootstrap):
    subs = tmp_path / "submissions"
    for student, nb in (("solution", SOURCE / aid / f"{aid}.ipynb"), ("untouched", student_versions / aid / f"{aid}.ipynb")):
        (subs / student / aid).mkdir(parents=True)
        shutil.copyfile(nb, subs / student / aid / f"{aid}.ipynb")
    results = {r.student: r for r in grade_cohort(subs, tmp_path / "out", workers=2, source=SOURCE, quiet=True)}

    sol = results["solution"]
    assert sol.error is None, f"{aid}: the solution could not be graded: {sol.error}"
    missing = [f"{e.grade_id} {e.points:g}/{e.max_points:g}: {e.hint}" for e in sol.exercises if e.status != "passed"]
    assert sol.max_score > 0 and not missing, f"{aid}: the solution loses points:\n" + "\n".join(missing)

    blank = results["untouched"]
    assert blank.error is None, f"{aid}: the untouched student version could not be graded: {blank.error}"
    earned = [f"{e.grade_id} {e.points:g}/{e.max_points:g}" for e in blank.exercises if e.points]
    assert not earned, f"{aid}: the untouched student version earns points: {earned}"


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("aid", IDS)
def test_untouched_student_version_runs_to_the_end(aid, student_versions, tmp_path, bootstrap):
    from nbclient import NotebookClient

    work = tmp_path / aid
    shutil.copytree(student_versions / aid, work)
    nb = nbformat.read(work / f"{aid}.ipynb", as_version=4)
    env_before = os.environ.pop("STREAMLAB_GRADING", None)  # as in the lab: checks print, never raise
    try:
        NotebookClient(nb, timeout=600, allow_errors=True, kernel_name="python3",
                       resources={"metadata": {"path": str(work)}}).execute()
    finally:
        if env_before is not None:
            os.environ["STREAMLAB_GRADING"] = env_before
    errors = [f"cell {i + 1}: {o.ename}: {o.evalue.splitlines()[0] if o.evalue else ''}"
              for i, c in enumerate(nb.cells) if c.cell_type == "code"
              for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, f"{aid}: the untouched student version stops with an error:\n" + "\n".join(errors)
    last = [c for c in nb.cells if c.cell_type == "code"][-1]
    assert last.get("execution_count"), f"{aid}: the last code cell did not run"
