"""Shared fixtures: the brokers (started once, stopped at the end if these tests started them), Spark, and the two
Kafka stacks the differential tests run every scenario on."""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from support import guardian

ROOT = Path(__file__).resolve().parent.parent


def noida_port() -> int:
    """The offline stack's broker port: noida-db 100 above the lab's Kafka broker (9192 by default), so it never
    stands in for it, and test runs on another STREAMLAB_BROKER_PORT get their own."""
    from streamlab.lab.broker import broker_port

    return broker_port() + 100


# A test run killed with SIGKILL (or a CI time-out) runs no fixture's teardown, so the brokers it started would
# outlive it. A guardian process, in a session of its own, waits for this pytest process to end and then stops
# every broker listed in the run's registry (a fixture removes its line when it stops the broker itself) and
# removes the run's temporary folders.
_STOP_BROKERS = r"""
registry, basetemp = args
try:
    lines = open(registry).read().split()
except OSError:
    lines = []
if lines:
    from streamlab.lab.broker import stop_broker
    for entry in lines:
        kind, port = entry.split(":")
        try:
            stop_broker(kind, int(port))
        except Exception as exc:
            print(f"guardian: could not stop the {kind} broker on {port}: {exc}", file=sys.stderr)
for path in (registry, basetemp):
    shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else (os.path.exists(path) and os.remove(path))
"""


@pytest.fixture(scope="session")
def _broker_registry(tmp_path_factory):
    """Brokers this run started, as `kind:port` lines, stopped by a guardian process if the run is killed."""
    handle, path = tempfile.mkstemp(prefix="streamlab-test-brokers-")
    os.close(handle)
    watching = guardian(_STOP_BROKERS, path, tmp_path_factory.getbasetemp())
    yield Path(path)
    Path(path).write_text("")  # every broker was stopped by its fixture: the guardian has nothing left to do
    del watching  # it exits by itself when this process does


def _register(registry: Path, entry: str, present: bool) -> None:
    lines = [line for line in registry.read_text().split() if line != entry]
    registry.write_text("\n".join(lines + [entry] if present else lines))


@pytest.fixture(scope="session")
def bootstrap(_broker_registry):
    """The broker's bootstrap address; a broker these tests started is stopped when they end."""
    from streamlab.lab.broker import broker_port, ensure_broker, probe, stop_broker

    was_running = bool(os.environ.get("KAFKA_BOOTSTRAP")) or probe(f"127.0.0.1:{broker_port()}") == "kafka"
    address = ensure_broker()
    entry = f"kafka:{broker_port()}"
    if not was_running:
        _register(_broker_registry, entry, True)
    yield address
    if not was_running:
        stop_broker()
        _register(_broker_registry, entry, False)


@pytest.fixture(scope="session")
def spark(bootstrap):
    """The course's SparkSession, stopped when the tests end."""
    import streamlab

    session = streamlab.spark()
    yield session
    for query in session.streams.active:
        query.stop()
    session.stop()


@pytest.fixture(scope="module")
def delta(spark):
    """The session, with Delta Lake set up: a missing Delta fails (the lakehouse tests are its proof)."""
    from streamlab.errors import LabError
    from streamlab.lakehouse import require_delta

    try:
        require_delta()
    except LabError as missing:
        pytest.fail(str(missing))
    return spark


def _topic_factory(bootstrap: str):
    from streamlab.lab import topics

    made = []

    def make(partitions: int = 1, prefix: str = "t") -> str:
        name = topics.create_topic(topics.unique_name(prefix), partitions, bootstrap)
        made.append(name)
        return name

    return make, made


@pytest.fixture
def topic(bootstrap):
    """A factory for fresh topics, all deleted after the test: topic(partitions=3) -> name."""
    from streamlab.lab import topics

    make, made = _topic_factory(bootstrap)
    yield make
    topics.delete_topic(*made, bootstrap=bootstrap)


@pytest.fixture(scope="session")
def noida_bootstrap(_broker_registry):
    """A noida-db broker for the offline stack, stopped at the end if these tests started it."""
    from streamlab.lab.broker import ensure_broker, probe, stop_broker

    port = noida_port()
    was_running = probe(f"127.0.0.1:{port}") == "kafka"
    address = ensure_broker(kind="noida", port=port)
    if not was_running:
        _register(_broker_registry, f"noida:{port}", True)
    yield address
    if not was_running:
        stop_broker("noida", port)
        _register(_broker_registry, f"noida:{port}", False)


@dataclass(frozen=True)
class Stack:
    """One Kafka stack: the format name Spark reads and writes with, its broker, and a topic factory there."""

    name: str  # "connector" or "offline"
    format: str
    bootstrap: str
    topic: Callable[..., str]


STACKS = ("connector", "offline")


@pytest.fixture(scope="session")
def both_stacks_session(spark):
    """The course's session with the offline engine registered beside the connector (format "streamlab_kafka")."""
    import streamlab
    from streamlab.offline import register

    if streamlab.engine(spark) != "connector":
        # The connector is what the offline engine is judged against: without it there is nothing to compare.
        pytest.fail("Spark's Kafka connector is not on this session's class path (STREAMLAB_ENGINE=offline or no "
                    "jar cache): run `make setup` and unset STREAMLAB_ENGINE to run the differential tests")
    register(spark)
    return spark


def _open_stack(request, which: str):
    from streamlab.offline import OFFLINE_NAME

    if which == "connector":
        address, fmt = request.getfixturevalue("bootstrap"), "kafka"
    else:
        address, fmt = request.getfixturevalue("noida_bootstrap"), OFFLINE_NAME
    make, made = _topic_factory(address)
    return Stack(which, fmt, address, make), made


@pytest.fixture(params=STACKS)
def stack(request, both_stacks_session):
    """Each scenario runs twice: on Spark's connector against Apache Kafka, and on the offline engine against noida."""
    from streamlab.lab import topics

    opened, made = _open_stack(request, request.param)
    yield opened
    topics.delete_topic(*made, bootstrap=opened.bootstrap)


@pytest.fixture
def both_stacks(request, both_stacks_session):
    """Both stacks at once, {"connector": Stack, "offline": Stack}, for a test that compares their outputs."""
    from streamlab.lab import topics

    opened = {which: _open_stack(request, which) for which in STACKS}
    yield {which: pair[0] for which, pair in opened.items()}
    for each, made in opened.values():
        topics.delete_topic(*made, bootstrap=each.bootstrap)


def pytest_terminal_summary(terminalreporter, config):
    """Lines a fixture left for the end of the run (test_modules: where the notebook runs' minutes went)."""
    for line in getattr(config, "streamlab_summary", []):
        terminalreporter.write_line(line)
