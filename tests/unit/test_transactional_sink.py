"""The transactional Kafka sink (streamlab.delivery.sinks) without a broker: a transaction whose coordinator never
answers ends in a bounded time, and the batch is written again by a new producer that fences the old one."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from kafka.errors import KafkaTimeoutError

from streamlab.delivery import sinks


class _Result:
    def __init__(self, answered: bool):
        self.answered = answered

    def wait(self, timeout_ms=None):
        assert timeout_ms == sinks.TX_WAIT_MS  # never an unbounded wait
        return self.answered


class _Producer:
    """kafka-python's transactional producer as the sink uses it; `hangs`: its coordinator never answers."""

    def __init__(self, hangs: bool):
        self.hangs, self.sent, self.closed = hangs, [], False
        self._sender = SimpleNamespace(wakeup=lambda: None)
        self._transaction_manager = SimpleNamespace(
            send_offsets_to_transaction=lambda offsets, group: _Result(not self.hangs),
            begin_commit=lambda: _Result(not self.hangs))

    def begin_transaction(self):
        pass

    def send(self, topic, value=None, key=None):
        self.sent.append(value)

    def close(self, timeout=None):
        self.closed = True


def _sink(monkeypatch, *hangs: bool):
    sink = sinks.TransactionalKafkaSink("out", "tx-id", bootstrap="127.0.0.1:1")
    made = []

    def producer():
        if sink._producer is None:
            sink._producer = _Producer(hangs[len(made)])
            made.append(sink._producer)
        return sink._producer
    monkeypatch.setattr(sink, "producer", producer)
    monkeypatch.setattr(sink, "last_batch", lambda: -1)
    return sink, made


ROWS = [{"id": i, "value": f"v{i}", "partition": 0, "offset": i} for i in range(3)]
BATCH = SimpleNamespace(toLocalIterator=lambda: iter(ROWS))


def test_a_transaction_whose_coordinator_is_gone_is_written_again_by_a_new_producer(monkeypatch):
    monkeypatch.setattr(sinks, "COLUMNS", ["id", "value"])
    sink, made = _sink(monkeypatch, True, False)
    sink.write_batch(BATCH, 7)
    assert len(made) == 2 and len(made[1].sent) == 3  # the whole batch again, in the new transaction
    assert sink._zombies == [made[0]]  # closed once the new producer's init_transactions() fenced it


def test_a_coordinator_that_never_answers_fails_the_batch_after_three_bounded_tries(monkeypatch):
    monkeypatch.setattr(sinks, "COLUMNS", ["id", "value"])
    sink, made = _sink(monkeypatch, True, True, True)
    with pytest.raises(KafkaTimeoutError, match="no answer within 30 s"):
        sink.write_batch(BATCH, 7)
    assert len(made) == 3


def test_a_ledger_that_cannot_be_read_is_never_taken_for_no_batch_yet(monkeypatch):
    """-1 ('nothing committed') on a failed lookup would write a replayed batch twice."""
    from streamlab.observe import replay

    sink = sinks.TransactionalKafkaSink("out", "tx-id", bootstrap="127.0.0.1:1")
    answers = iter([RuntimeError("CoordinatorNotAvailableError"), {"out": {0: 5}}])

    def lookup(group, bootstrap):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer
    monkeypatch.setattr(replay, "group_offsets", lookup)
    assert sink.last_batch() == 4  # the second lookup, half a second later
    monkeypatch.setattr(sinks, "TX_WAIT_MS", 0)
    monkeypatch.setattr(replay, "group_offsets", lambda g, b: (_ for _ in ()).throw(RuntimeError("gone")))
    with pytest.raises(KafkaTimeoutError, match="ledger"):
        sink.last_batch()
