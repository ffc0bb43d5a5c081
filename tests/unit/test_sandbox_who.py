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
