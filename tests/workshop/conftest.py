"""A room's SCRAM broker for the workshop tests, on free ports in a temporary folder; stopped afterwards."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def room():
    from streamlab.lab.broker import free_port
    from streamlab.workshop import kafka

    folder = Path(tempfile.mkdtemp(prefix="streamlab-room-"))
    here = kafka.Room(folder, free_port(), free_port())
    try:
        kafka.start(here)
        yield here
    finally:
        kafka.stop(here)
        shutil.rmtree(folder, ignore_errors=True)
