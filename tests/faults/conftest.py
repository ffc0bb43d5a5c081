"""The fault suite's brokers: every broker here runs on a port of its own (19800-19899, never the lab's), its
folder `.streamlab/kafka-<port>/` deleted afterwards, and no process of it may outlive a test."""
from __future__ import annotations

import pytest

from faultkit import free_port, processes_of, wipe
from streamlab.lab import broker


@pytest.fixture
def port(monkeypatch):
    """A free port for a broker of this test's own; whatever it started there is stopped and deleted afterwards."""
    number = free_port()
    monkeypatch.delenv("KAFKA_BOOTSTRAP", raising=False)
    monkeypatch.setenv("STREAMLAB_BROKER_PORT", str(number))
    broker.data_dir(number, "kafka").mkdir(parents=True, exist_ok=True)  # reserves the port for this test
    yield number
    wipe(number)
    assert not processes_of(broker.data_dir(number, "kafka")), "a broker process outlived its test"


@pytest.fixture(scope="module")
def shared_broker():
    """One broker for the tests of a module that do not stop it: (port, bootstrap)."""
    number = free_port()
    broker.data_dir(number, "kafka").mkdir(parents=True, exist_ok=True)
    try:
        address = broker.ensure_broker(kind="kafka", port=number)
        yield number, address
    finally:
        wipe(number)
