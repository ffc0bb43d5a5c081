"""A broker outage longer than every timeout of Kafka's producer client: the lab's BackgroundProducer (the one the
live demos and lag labs send with) loses nothing and duplicates nothing, however long the broker is away.

kafka-python gives up on a record after delivery_timeout_ms (120 s by default) and on a request after 30 s; the lab
once lost 30,000 of 31,000 records "sent" through a two-minute outage (issue 17). tests/faults proves an outage of
seconds; this one waits out more than two minutes, so it runs in lane 2 (tests/lanes.py), beside lane 1.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "faults"))
from faultkit import free_port, kill_broker, processes_of, wait_until, wipe  # noqa: E402

from streamlab.lab import broker, topics  # noqa: E402
from streamlab.lab.producer import BackgroundProducer  # noqa: E402

pytestmark = pytest.mark.broker
OUTAGE_S = 130  # past the client's default delivery timeout (120 s) and four of its request timeouts (30 s)


@pytest.mark.timeout(600)
def test_a_broker_outage_longer_than_the_clients_delivery_timeout_loses_nothing(monkeypatch):
    """kill -9 the broker under a producer at 100/s for 130 s, start it again: every record counted as sent is
    on the topic, once, and stop() counts no failure."""
    number = free_port()
    monkeypatch.delenv("KAFKA_BOOTSTRAP", raising=False)
    monkeypatch.setenv("STREAMLAB_BROKER_PORT", str(number))
    folder = broker.data_dir(number, "kafka")
    folder.mkdir(parents=True, exist_ok=True)  # reserves the port against lane 1's fault tests
    try:
        address = broker.ensure_broker(kind="kafka", port=number)
        name = topics.create_topic(topics.unique_name("long-outage"), 1, address)
        producer = BackgroundProducer(name, rate=100, bootstrap=address, key_fn=lambda i: None, value_fn=str).start()
        try:
            assert wait_until(lambda: producer.delivered >= 100, 30), repr(producer)
            kill_broker(number)
            time.sleep(OUTAGE_S)
            during = producer.sent
            assert producer.pending > 0 and producer.failed == 0, repr(producer)
            broker.ensure_broker(kind="kafka", port=number)
            assert wait_until(lambda: producer.sent > during + 100 and producer.pending < 200, 120), repr(producer)
        finally:
            sent = producer.stop()
        assert producer.failed == 0 and producer.delivered == sent, repr(producer)
        values = [int(r.value) for r in topics.records(name, address)]
        assert sorted(values) == list(range(sent)), f"{len(values)} records on the topic for {sent} sent ({producer!r})"
    finally:
        wipe(number)
        assert not processes_of(folder), "a broker process outlived the test"
