"""Shared fixtures: the broker (started once, stopped at the end if these tests started it) and Spark."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def bootstrap():
    """The broker's bootstrap address; a broker these tests started is stopped when they end."""
    from streamlab.broker import broker_port, ensure_broker, probe, stop_broker

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


@pytest.fixture
def topic(bootstrap):
    """A factory for fresh topics, all deleted after the test: topic(partitions=3) -> name."""
    from streamlab import topics

    made = []

    def make(partitions: int = 1, prefix: str = "t") -> str:
        name = topics.create_topic(topics.unique_name(prefix), partitions, bootstrap)
        made.append(name)
        return name

    yield make
    topics.delete_topic(*made, bootstrap=bootstrap)
