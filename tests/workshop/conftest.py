"""A room's SCRAM broker for the workshop tests, on free ports in a temporary folder; stopped afterwards."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

QUOTA = 128 * 1024  # bytes/s each learner may produce on the test room's broker


@pytest.fixture(scope="session")
def room():
    from streamlab.lab.broker import free_port
    from workshop import kafka

    folder = Path(tempfile.mkdtemp(prefix="streamlab-room-"))
    here = kafka.Room(folder, free_port(), free_port())
    try:
        kafka.start(here, produce=QUOTA)  # low enough that a flood exceeds it even on a loaded machine
        yield here
    finally:
        kafka.stop(here)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def quota(room) -> int:
    """The produce quota (bytes/s) of each learner on the test room's broker."""
    return QUOTA
