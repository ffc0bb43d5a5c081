"""A grading run in a network namespace of its own (grader/relay.py) and the machine's kernels must not take each
other's topics for orphans: abstract sockets do not cross network namespaces (streamlab/lab/owners.py)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from streamlab.lab import owners

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CAN_UNSHARE = shutil.which("unshare") is not None and os.geteuid() == 0

ASK = "import sys; from streamlab.lab import owners; print(owners.alive(sys.argv[1]), owners.my_token())"


def _inside(token: str, env: dict) -> list[str]:
    """owners.alive(token) and my_token() as a process in a network namespace of its own answers them."""
    done = subprocess.run(["unshare", "--net", sys.executable, "-c", ASK, token], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT, **env}, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.skipif(not CAN_UNSHARE, reason="needs root and unshare (the grader's network namespace needs both)")
def test_a_process_in_its_own_network_namespace_takes_a_live_kernel_for_dead_unless_told():
    """The bug this guards against: without the grader's token, a live owner looks dead from inside."""
    mine = owners.my_token()
    assert _inside(mine, {})[0] == "False"  # what a graded kernel saw of a learner's live demo: it swept its topic
    alive, token = _inside(mine, {owners.SHARED_ENV: "0123456789"})
    assert alive == "True" and token == "0123456789"


def test_the_graders_token_is_alive_outside_while_held_and_dead_after():
    token = owners.new_token()
    with owners.holding(token):
        assert owners.alive(token)
    assert not owners.alive(token)


def test_a_malformed_shared_token_is_ignored(monkeypatch):
    monkeypatch.setenv(owners.SHARED_ENV, "../../x")
    assert owners.my_token() != "../../x"
    assert not owners.alive(owners.new_token())
