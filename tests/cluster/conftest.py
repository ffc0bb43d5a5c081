"""The cluster lab's one cluster, shared by every test file of tests/cluster (a start costs about a minute)."""
from __future__ import annotations

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
