"""The cluster lab's one cluster, shared by every test file of tests/cluster (a start costs about a minute)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from streamlab.lab import cluster


@pytest.fixture(scope="session")
def running_cluster():
    """The cluster, started for these tests and stopped (folder deleted) after them."""
    started_here = not cluster.folder().exists()
    cluster.start()
    yield cluster.bootstrap()
    if started_here:
        cluster.stop()


ROOT = Path(__file__).resolve().parents[2]


def child_result(args: list[str], what: str, timeout: float) -> dict:
    """Run `python ARGS` on the cluster in a child process (a SparkContext is one per process, and the suite's is
    local) and return its last `RESULT {json}` line, parsed; when it printed none, fail with its last traceback."""
    env = dict(os.environ, STREAMLAB_CLUSTER="1")
    env.pop("KAFKA_BOOTSTRAP", None)
    done = subprocess.run([sys.executable, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    # its stderr ends with Spark's log: show the last Python traceback, which says why it stopped
    last = done.stderr.rfind("Traceback (most recent call last)")
    assert lines, f"the {what} printed no result (exit {done.returncode}): {done.stderr[last:][:3000]}"
    return json.loads(lines[-1][len("RESULT "):])


@pytest.fixture(scope="session")
def on_cluster_child():
    """child_result, for the module fixtures that run a child on the cluster."""
    return child_result


@contextmanager
def cluster_lab():
    """This test process as a kernel of the cluster lab: STREAMLAB_CLUSTER=1, no KAFKA_BOOTSTRAP, and new_topic() on
    the cluster (it remembers the broker it used first: not an earlier test's); undone after, its topics deleted."""
    import streamlab
    from streamlab.lab import lifecycle

    patch = pytest.MonkeyPatch()
    patch.setenv("STREAMLAB_CLUSTER", "1")
    patch.delenv("KAFKA_BOOTSTRAP", raising=False)
    patch.setattr(lifecycle, "_bootstrap", [])
    try:
        yield
    finally:
        streamlab.cleanup()
        patch.undo()


@pytest.fixture(scope="session")
def as_cluster_lab():
    """cluster_lab, for the tests and module fixtures that act as the cluster lab's kernel."""
    return cluster_lab
