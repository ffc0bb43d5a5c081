"""produce() backfills and BackgroundProducer's rates, pause, bursts and clean stop, checked on the broker."""
from __future__ import annotations

import json
import threading
import time

import pytest

from streamlab.lab.producer import BackgroundProducer, produce, stop_all
from streamlab.lab.topics import describe_topic

pytestmark = pytest.mark.broker


def total(topic: str, bootstrap: str) -> int:
    return sum(last - first for first, last in describe_topic(topic, bootstrap).values())


def per_partition(topic: str, bootstrap: str) -> dict:
    return {p: last - first for p, (first, last) in describe_topic(topic, bootstrap).items()}


def records(topic: str, bootstrap: str) -> list:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        out = []
        deadline = time.monotonic() + 20
        while any(consumer.position(tp) < end[tp] for tp in tps):
            assert time.monotonic() < deadline
            for batch in consumer.poll(timeout_ms=500).values():
                out.extend(batch)
        return out
    finally:
        consumer.close()


def no_producer_threads() -> bool:
    return not any(t.name.startswith("BackgroundProducer") for t in threading.enumerate())


def test_produce_backfills_and_flushes(bootstrap, topic):
    name = topic(partitions=3)
    assert produce(name, 3000, bootstrap=bootstrap, progress=False) == 3000
    assert total(name, bootstrap) == 3000  # flushed before returning
    sample = records(name, bootstrap)
    event = json.loads(sample[0].value)
    assert set(event) == {"id", "user", "action", "amount", "ts"}
    assert sample[0].key == event["user"].encode()


class ThreePartitions:
    """The slice of kafka-python's cluster metadata its DefaultPartitioner reads."""

    def topics(self):
        return {"t"}

    def partitions_for_topic(self, topic):
        return {0, 1, 2}

    available_partitions_for_topic = partitions_for_topic


def test_default_keys_go_where_kafkas_default_partitioner_puts_them(bootstrap, topic):
    from kafka.partitioner import DefaultPartitioner

    name = topic(partitions=3)
    produce(name, 500, bootstrap=bootstrap, progress=False)
    partitioner, cluster = DefaultPartitioner(), ThreePartitions()
    got = records(name, bootstrap)
    assert len(got) == 500
    for record in got:
        assert record.partition == partitioner.partition("t", None, record.key, None, record.value, cluster)


def test_produce_with_functions_partitions_and_a_progress_bar(bootstrap, topic, capsys):
    name = topic(partitions=3)
    sent = produce(name, 12_000, bootstrap=bootstrap, partitions=[1], key_fn=lambda i: None,
                   value_fn=lambda i: {"n": i}, start=5)
    assert sent == 12_000
    assert per_partition(name, bootstrap) == {0: 0, 1: 12_000, 2: 0}
    values = [json.loads(r.value)["n"] for r in records(name, bootstrap)]
    assert values == list(range(5, 12_005))
    assert f"→ {name}" in capsys.readouterr().err  # tqdm's bar (shown from 10,000 records)


@pytest.mark.parametrize("rate, seconds", [(10, 3.0), (500, 2.0), (2000, 2.0)])
def test_rate_is_kept_within_ten_percent(bootstrap, topic, rate, seconds):
    name = topic(partitions=2)
    with BackgroundProducer(name, rate=rate, bootstrap=bootstrap) as producer:
        time.sleep(0.5)  # connection and first batch
        before, started = producer.sent, time.monotonic()
        time.sleep(seconds)
        measured = (producer.sent - before) / (time.monotonic() - started)
    assert abs(measured - rate) <= 0.1 * rate, f"asked {rate}/s, measured {measured:.1f}/s"
    assert total(name, bootstrap) == producer.sent and producer.errors == 0


def test_set_rate_pause_burst_and_partition_list(bootstrap, topic):
    name = topic(partitions=3)
    producer = BackgroundProducer(name, rate=2000, partitions=[0, 2], bootstrap=bootstrap).start()
    try:
        time.sleep(0.5)
        producer.set_rate(0)
        time.sleep(0.3)
        paused = producer.sent
        time.sleep(1.0)
        assert producer.sent == paused  # 0 pauses
        producer.burst(4000)
        deadline = time.monotonic() + 20
        while producer.sent < paused + 4000 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        assert producer.sent == paused + 4000  # exactly the burst: still paused otherwise
        producer.set_rate(200)
        time.sleep(1.0)
        assert 150 <= producer.sent - paused - 4000 <= 260  # resumed at the new rate, no catch-up flood
    finally:
        sent = producer.stop()
    counts = per_partition(name, bootstrap)
    assert counts[1] == 0 and counts[0] + counts[2] == sent
    assert abs(counts[0] - counts[2]) <= 1  # round robin over the list


def test_stop_joins_flushes_and_is_idempotent(bootstrap, topic):
    name = topic()
    producer = BackgroundProducer(name, rate=3000, bootstrap=bootstrap).start()
    time.sleep(0.5)
    sent = producer.stop()
    assert sent > 0 and producer.stop() == sent and not producer.running
    assert no_producer_threads()
    assert total(name, bootstrap) == sent  # everything sent was flushed to the broker
    with pytest.raises(RuntimeError):
        producer.burst(10)  # a stopped producer sends nothing more


def test_stop_all_stops_forgotten_producers(bootstrap, topic):
    name = topic()
    forgotten = [BackgroundProducer(name, rate=100, bootstrap=bootstrap).start() for _ in range(2)]
    time.sleep(0.3)
    stop_all()  # what atexit runs when the kernel exits
    assert no_producer_threads() and not any(p.running for p in forgotten)
    assert total(name, bootstrap) == sum(p.sent for p in forgotten)


def test_bad_arguments(bootstrap):
    with pytest.raises(ValueError):
        BackgroundProducer("t", rate=-1, bootstrap=bootstrap)
    with pytest.raises(ValueError):
        BackgroundProducer("t", partitions=[], bootstrap=bootstrap)
    with pytest.raises(ValueError):
        produce("t", -5, bootstrap=bootstrap)


def test_failed_sends_are_counted_and_the_thread_survives(bootstrap, topic):
    name = topic(partitions=1)
    producer = BackgroundProducer(name, rate=50, partitions=[3], bootstrap=bootstrap).start()  # no partition 3
    time.sleep(1.2)
    assert producer.running and producer.errors >= 2 and producer.sent == 0
    assert "Unrecognized partition 3" in str(producer.last_error)
    producer.stop()
    assert no_producer_threads()
