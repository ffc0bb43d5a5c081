"""broker.already_running: a command that starts the lab's Kafka (`make bench`, `make lab`) asks it first, and stops
at its end only a broker it said was not there. A wrong True leaves a broker running for hours; a wrong False stops the
broker of a lab (or another's Kafka) that was running before them."""
from __future__ import annotations

import socket

import pytest

from streamlab.lab import broker, cluster


@pytest.fixture
def server(monkeypatch):
    """A socket listening on a port the system chose, made the lab broker's port ($STREAMLAB_BROKER_PORT)."""
    monkeypatch.delenv("KAFKA_BOOTSTRAP", raising=False)
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        monkeypatch.setenv("STREAMLAB_BROKER_PORT", str(listening.getsockname()[1]))
        yield listening


def test_anything_listening_on_the_port_was_there_before(server):
    """Not only a Kafka: whatever holds the port is somebody else's, and never stopped."""
    assert broker.already_running() is True


def test_nothing_listening_means_the_command_starts_and_stops_it(server):
    server.close()
    assert broker.already_running() is False


def test_a_kafka_bootstrap_is_never_ours_and_is_not_probed(server, monkeypatch):
    monkeypatch.setenv("KAFKA_BOOTSTRAP", "127.0.0.1:1")
    monkeypatch.setattr(broker, "probe", lambda *a, **k: pytest.fail("probed a broker the lab does not manage"))
    assert broker.already_running() is True
    assert broker.already_running(on_cluster=True) is True


def test_on_a_cluster_its_folder_says_whether_it_ran(server, monkeypatch, tmp_path):
    """A cluster is up while its folder exists (cluster.stop() deletes it); the single broker's port is not asked."""
    monkeypatch.setenv("STREAMLAB_HOME", str(tmp_path))
    monkeypatch.setattr(broker, "probe", lambda *a, **k: pytest.fail("probed the single broker's port"))
    assert broker.already_running(on_cluster=True) is False
    cluster.folder().mkdir(parents=True)
    assert broker.already_running(on_cluster=True) is True
