"""The lab's BackgroundProducer under broker faults: nothing it counts as sent is lost without being counted as
not delivered, it rides out a broker outage, and it stops within seconds whatever the broker does."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from faultkit import ROOT, kill_broker, wait_until
from streamlab.lab import broker, topics
from streamlab.lab.producer import BACKGROUND_OPTIONS, BackgroundProducer

pytestmark = pytest.mark.broker
BOUND_S = 20  # "within seconds", generous for a loaded 2-core CI machine


def test_batches_never_expire():
    """kafka-python drops a batch after delivery_timeout_ms (120 s by default): the lab's producer waits ~24 days."""
    assert BACKGROUND_OPTIONS["delivery_timeout_ms"] >= 24 * 24 * 3600 * 1000


def test_a_broker_outage_loses_nothing(port):
    """kill -9 the broker under a producer at 200/s, restart it 8 s later: every record sent arrives, once."""
    address = broker.ensure_broker(kind="kafka", port=port)
    name = topics.create_topic(topics.unique_name("outage"), 1, address)
    producer = BackgroundProducer(name, rate=200, bootstrap=address, key_fn=lambda i: None, value_fn=str).start()
    try:
        assert wait_until(lambda: producer.delivered >= 200, 30)
        kill_broker(port)
        time.sleep(8)
        during = producer.sent
        assert producer.pending > 0, repr(producer)
        assert "pending" in producer.readout()
        broker.ensure_broker(kind="kafka", port=port)
        assert wait_until(lambda: producer.sent > during + 200 and producer.pending < 400, 60), repr(producer)
    finally:
        started = time.monotonic()
        sent = producer.stop()
        stopped_in = time.monotonic() - started
    assert stopped_in < BOUND_S, f"stop() took {stopped_in:.1f} s"
    assert producer.failed == 0 and producer.delivered == sent, repr(producer)
    values = [int(r.value) for r in topics.records(name, address)]
    assert sorted(values) == list(range(sent)), f"{len(values)} records on the topic for {sent} sent ({producer!r})"
    topics.delete_topic(name, bootstrap=address)


def test_stop_with_the_broker_gone_is_quick_and_counts_the_loss(port, capsys):
    """stop() while the broker is down: back within seconds (no 40 s KafkaTimeoutError), every record not
    acknowledged counted as failed, in repr, readout and one printed line."""
    address = broker.ensure_broker(kind="kafka", port=port)
    name = topics.create_topic(topics.unique_name("gone"), 1, address)
    producer = BackgroundProducer(name, rate=200, bootstrap=address).start()
    assert wait_until(lambda: producer.delivered >= 100, 30)
    kill_broker(port)
    time.sleep(3)
    started = time.monotonic()
    sent = producer.stop()
    seconds = time.monotonic() - started
    assert seconds < BOUND_S, f"stop() took {seconds:.1f} s"
    assert producer.failed > 0 and producer.delivered + producer.failed == sent and producer.pending == 0
    assert f"failed={producer.failed}" in repr(producer) and "NOT delivered" in producer.readout()
    printed = capsys.readouterr().out
    assert f"{producer.failed:,} of {sent:,} records were NOT delivered" in printed, printed


def test_its_topic_deleted_under_it(port):
    """The topic is deleted under a running producer: it goes on (the broker makes the topic again), stops within
    seconds, and sent == delivered + failed."""
    from kafka import KafkaAdminClient

    address = broker.ensure_broker(kind="kafka", port=port)
    name = topics.create_topic(topics.unique_name("deleted"), 1, address)
    producer = BackgroundProducer(name, rate=200, bootstrap=address).start()
    try:
        assert wait_until(lambda: producer.delivered >= 100, 30)
        admin = KafkaAdminClient(bootstrap_servers=address)
        admin.delete_topics([name])
        admin.close()
        before = producer.delivered
        assert wait_until(lambda: producer.delivered > before + 200, 60), repr(producer)
    finally:
        started = time.monotonic()
        sent = producer.stop()
        seconds = time.monotonic() - started
    assert seconds < BOUND_S and producer.running is False
    assert producer.delivered + producer.failed == sent and producer.pending == 0, repr(producer)


EXIT_SCRIPT = r'''
import os, signal, sys, time
from streamlab.lab import broker, topics
from streamlab.lab.producer import BackgroundProducer
address = sys.argv[1]
p = BackgroundProducer(topics.create_topic(topics.unique_name("exit"), 1, address), rate=200, bootstrap=address).start()
while p.delivered < 100:
    time.sleep(0.1)
os.killpg(int(sys.argv[2]), signal.SIGKILL)
time.sleep(2)
print("exiting", flush=True)
'''


def test_the_exit_handler_with_the_broker_gone(port):
    """A script exits with a producer running and the broker killed: it exits within seconds, saying what was
    not delivered."""
    address = broker.ensure_broker(kind="kafka", port=port)
    pid = (broker.data_dir(port, "kafka") / "broker.pid").read_text().strip()
    proc = subprocess.Popen([sys.executable, "-c", EXIT_SCRIPT, address, pid], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline().strip() == "exiting"
    started = time.monotonic()
    _, err = proc.communicate(timeout=60)
    seconds = time.monotonic() - started
    assert proc.returncode == 0 and seconds < BOUND_S, f"exit took {seconds:.1f} s: {err[-1000:]}"
    assert "records were NOT delivered" in err and "Traceback" not in err, err[-2000:]


def test_a_producer_closed_with_the_broker_gone_prints_nothing_later(port):
    """close_now(), which the transactional sink (its fenced producers) and the failover demo close with: records
    pending and the broker gone, it returns within seconds, no sender thread is left, and the producer's own
    __del__ later prints no 'Exception ignored' traceback into whatever cell is running (kafka-python's close()
    raises at its flush and leaves the producer open: CI's module 9 run caught that traceback in a learner's cell)."""
    import gc

    from kafka import KafkaProducer

    from streamlab.lab.producer import close_now

    address = broker.ensure_broker(kind="kafka", port=port)
    name = topics.create_topic(topics.unique_name("pending"), 1, address)
    producer = KafkaProducer(bootstrap_servers=address, linger_ms=60_000)
    producer.send(name, b"first")
    producer.flush(timeout=30)  # the topic's metadata is known from here on
    for i in range(10):
        producer.send(name, str(i).encode())  # pending: linger_ms holds them in the accumulator
    kill_broker(port)
    started = time.monotonic()
    close_now(producer, timeout=0.5)
    assert time.monotonic() - started < BOUND_S
    sender = producer._sender
    unraisable = []
    hook, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        del producer
        gc.collect()
    finally:
        sys.unraisablehook = hook
    assert not sender.is_alive(), "the producer's sender thread outlived close_now()"
    assert not unraisable, [str(u.exc_value) for u in unraisable]
