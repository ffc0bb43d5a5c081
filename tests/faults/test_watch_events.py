"""BrokerWatch on a list of brokers (the cluster lab's case): one broker down is its own event, 'lost' only when
none answers; the public hooks (BrokerWatch.listeners, BrokerWatch.lost) report both."""
from __future__ import annotations

import time

import pytest

from streamlab.lab.lifecycle import BrokerWatch

pytestmark = pytest.mark.broker


class _NoQueries:
    class streams:
        active: list = []


def _events(watch, seconds: float) -> list:
    seen = []
    BrokerWatch.listeners.append(lambda event, message: seen.append((event, message)))
    watch.start()
    time.sleep(seconds)
    watch.stop()
    BrokerWatch.listeners.clear()
    return seen


def test_one_broker_down_is_not_a_lost_cluster(shared_broker):
    """Two brokers listed, one answers: a 'broker down' event naming the other, and never 'lost'."""
    _, address = shared_broker
    BrokerWatch.lost.clear()
    watch = BrokerWatch(_NoQueries(), f"{address},127.0.0.1:1")
    seen = _events(watch, 4)
    assert [e for e, _ in seen] == ["broker down"], seen
    assert "127.0.0.1:1 stopped answering; 1 of 2 still answer" in seen[0][1]
    assert not BrokerWatch.lost.is_set()


def test_no_broker_answering_is_lost():
    """None of the listed brokers answers: 'lost' within MISSES seconds, and BrokerWatch.lost is set."""
    BrokerWatch.lost.clear()
    watch = BrokerWatch(_NoQueries(), "127.0.0.1:1,127.0.0.1:2")
    started = time.monotonic()
    seen = _events(watch, BrokerWatch.MISSES + 3)
    assert [e for e, _ in seen] == ["lost"], seen
    assert "stopped answering" in seen[0][1] and "broker start" in seen[0][1]
    assert BrokerWatch.lost.is_set() and time.monotonic() - started < 20
    BrokerWatch.lost.clear()
