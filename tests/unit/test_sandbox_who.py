"""Who the grading sandbox runs as: the machine's root drops to the grading account, and a learner's own account
(a laptop, a container) keeps the user-namespace sandbox it always had. A worker in that sandbox is root only inside
nested namespaces ("0 0 1"), which must not be taken for the machine's root (CI failed the container's check so)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from grader import sandbox

SOURCE = Path(sandbox.__file__).read_text()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not Path("/usr/bin/python3").exists(),
                    reason="needs root to become another account, util-linux's setpriv and /usr/bin/python3")
def test_a_learners_own_sandbox_is_not_taken_for_the_machines_root():
    # As a learner's own account (nobody here), through the same two namespaces a laptop's grader makes: the
    # worker's check (dropped) must say False there, or every check on a laptop is refused.
    inner = sandbox.Sandbox().script() if sandbox.Sandbox().account is None else None
    assert inner is not None
    probe = SOURCE + "\nimport os\nprint(os.geteuid(), dropped())\n"
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *sandbox.OUTER, "--",
                           "sh", "-c", inner, "sandbox", "/usr/bin/python3", "-"], input=probe, capture_output=True,
                          text=True, timeout=60, cwd="/")
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.split() == ["0", "False"], done.stdout + done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="the refusal is for root (CI runs as root)")
def test_no_sandbox_as_root_is_refused_before_anything_runs(tmp_path):
    """`grade --no-sandbox` as root would run learners' cells as root (H1): refused in one line, nothing graded."""
    from grader.cohort import grade_cohort
    from grader.course import GraderError

    (tmp_path / "in" / "ada" / "00-setup").mkdir(parents=True)
    (tmp_path / "in" / "ada" / "00-setup" / "00-setup.ipynb").write_text("{}")
    with pytest.raises(GraderError, match="--no-sandbox as root would run every learner's code as root"):
        grade_cohort(tmp_path / "in", tmp_path / "out", sandbox=False, quiet=True)
    assert not (tmp_path / "out" / "grades.csv").exists()
