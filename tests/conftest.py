"""Shared fixtures: the brokers (started once, stopped at the end if these tests started them), Spark, and the two
Kafka stacks the differential tests run every scenario on."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parent.parent


def noida_port() -> int:
    """The offline stack's broker port: noida-db 100 above the lab's Kafka broker (9192 by default), so it never
    stands in for it, and test runs on another STREAMLAB_BROKER_PORT get their own."""
    from streamlab.lab.broker import broker_port

    return broker_port() + 100


@pytest.fixture(scope="session")
def bootstrap():
    """The broker's bootstrap address; a broker these tests started is stopped when they end."""
    from streamlab.lab.broker import broker_port, ensure_broker, probe, stop_broker

    was_running = bool(os.environ.get("KAFKA_BOOTSTRAP")) or probe(f"127.0.0.1:{broker_port()}") == "kafka"
    address = ensure_broker()
    yield address
    if not was_running:
        stop_broker()


@pytest.fixture(scope="session")
def spark(bootstrap):
    """The course's SparkSession, stopped when the tests end."""
    import streamlab

    session = streamlab.spark()
    yield session
    for query in session.streams.active:
        query.stop()
    session.stop()


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
def noida_bootstrap():
    """A noida-db broker for the offline stack, stopped at the end if these tests started it."""
    from streamlab.lab.broker import ensure_broker, probe, stop_broker

    port = noida_port()
    was_running = probe(f"127.0.0.1:{port}") == "kafka"
    address = ensure_broker(kind="noida", port=port)
    yield address
    if not was_running:
        stop_broker("noida", port)


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
