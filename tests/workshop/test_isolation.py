"""Learners on the room's broker cannot touch each other's data, and one learner's flood does not starve another.

Against a real KRaft broker with SCRAM, StandardAuthorizer, prefixed ACLs and a default user quota
(workshop.kafka), through kafka-python clients authenticated as each learner.
"""
from __future__ import annotations

import logging
import threading
import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import KafkaError

from workshop import kafka as room_kafka

pytestmark = pytest.mark.broker


@pytest.fixture(scope="module")
def learners(room):
    return {name: room_kafka.client_config(room.bootstrap, name, room_kafka.add_learner(room, name))
            for name in ("ada", "bob")}


class _ThrottleCount(logging.Handler):
    """Counts the produce responses the broker throttled, as kafka-python reports them."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record):
        if "ProduceResponse throttled by broker" in record.getMessage():
            self.count += 1


def _admin(config):
    return KafkaAdminClient(request_timeout_ms=10_000, **config)


def _offsets(admin, group):
    """A group's committed offsets, waiting while the broker creates __consumer_offsets (the first group used)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return admin.list_group_offsets(group)
        except KafkaError as exc:  # the coordinator not there yet, loading, or moved: Kafka says retry
            if not exc.retriable or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _produce(config, topic, n, size=100):
    producer = KafkaProducer(acks="all", **config)
    try:
        for i in range(n):
            producer.send(topic, b"x" * size)
        producer.flush(30)
    finally:
        producer.close()


def test_learners_cannot_read_write_delete_or_list_each_others_topics(room, learners):
    ada, bob = learners["ada"], learners["bob"]
    admin_bob = _admin(bob)
    admin_bob.create_topics([NewTopic("bob-secret", 2, 1)])
    _produce(bob, "bob-secret", 20)
    admin_ada = _admin(ada)
    try:
        admin_ada.create_topics([NewTopic("ada-mine", 1, 1)])
        listed = admin_ada.list_topics()
        assert "ada-mine" in listed and "bob-secret" not in listed  # Metadata shows only what ada may describe
        with pytest.raises(KafkaError, match="TopicAuthorization"):
            admin_ada.delete_topics(["bob-secret"])
        with pytest.raises(KafkaError, match="TopicAuthorization"):
            admin_ada.create_topics([NewTopic("bob-planted", 1, 1)])
        consumer = KafkaConsumer(enable_auto_commit=False, consumer_timeout_ms=5_000, **ada)
        try:
            consumer.assign([TopicPartition("bob-secret", 0)])
            consumer.seek(TopicPartition("bob-secret", 0), 0)
            got = []
            for _ in range(4):  # kafka-python logs "not authorized" and returns nothing
                got += [r for batch in consumer.poll(timeout_ms=1_000).values() for r in batch]
            assert got == []
        finally:
            consumer.close()
        producer = KafkaProducer(max_block_ms=5_000, **ada)
        try:
            with pytest.raises(KafkaError, match="TopicAuthorization|Timeout"):
                producer.send("bob-secret", b"from ada").get(timeout=10)
        finally:
            producer.close()
        with pytest.raises(KafkaError, match="GroupAuthorization"):
            _offsets(admin_ada, "bob-group")
        # bob still has all 20 records; ada's own topic works
        consumer = KafkaConsumer(enable_auto_commit=False, **bob)
        try:
            tps = [TopicPartition("bob-secret", p) for p in (0, 1)]
            assert sum(consumer.end_offsets(tps).values()) == 20
        finally:
            consumer.close()
        _produce(ada, "ada-mine", 5)
    finally:
        admin_ada.close()
        admin_bob.delete_topics(["bob-secret"])
        admin_bob.close()


def test_a_star_in_a_prefixed_acl_is_a_literal_character(room):
    """A PREFIXED ACL on "carol-*" (topic names cannot hold a '*', group ids can) covers only groups whose id
    starts with "carol-*": the star is not a wildcard, which is why the learners' prefix is "<name>-"."""
    from kafka.admin import (ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePattern,
                             ResourceType, ScramMechanism, UserScramCredentialUpsertion)

    admin = room_kafka.admin_client(room)
    try:
        admin.alter_user_scram_credentials([UserScramCredentialUpsertion("carol", ScramMechanism.SCRAM_SHA_512,
                                                                         "carol-pw")])
        admin.create_acls([ACL("User:carol", "*", ACLOperation.ALL, ACLPermissionType.ALLOW,
                               ResourcePattern(ResourceType.GROUP, "carol-*", ACLResourcePatternType.PREFIXED))])
    finally:
        admin.close()
    carol = _admin(room_kafka.client_config(room.bootstrap, "carol", "carol-pw"))
    try:
        with pytest.raises(KafkaError, match="GroupAuthorization"):
            _offsets(carol, "carol-x")
        assert _offsets(carol, "carol-*x") == {"carol-*x": {}}  # allowed: the id really starts with "carol-*"
    finally:
        carol.close()


def test_one_learners_flood_does_not_stop_anothers_live_stream(room, learners, quota):
    """ada floods her topic as fast as the broker acknowledges; the quota holds her near its byte rate, and bob's
    stream (a producer at 200 records/s and a consumer, as a live demo has) keeps flowing meanwhile."""
    ada, bob = learners["ada"], learners["bob"]
    for config, topic in ((ada, "ada-flood"), (bob, "bob-live")):
        admin = _admin(config)
        admin.create_topics([NewTopic(topic, 1, 1)])
        admin.close()
    stop = threading.Event()
    flooded = [0]  # bytes the broker acknowledged

    errors = []
    throttled = _ThrottleCount()
    logging.getLogger("kafka.net.connection").addHandler(throttled)

    def flood():
        try:
            producer = KafkaProducer(linger_ms=5, batch_size=256 * 1024, **ada)
            payload = b"f" * 10_000
            in_flight = threading.BoundedSemaphore(100)  # as fast as the broker acknowledges, ~1 MB ahead

            def acked(_meta):
                flooded[0] += len(payload)
                in_flight.release()

            while not stop.is_set():
                if in_flight.acquire(timeout=0.5):
                    producer.send("ada-flood", payload).add_callback(acked).add_errback(
                        lambda _e: in_flight.release())
            producer.flush(60)
            producer.close()
        except Exception as exc:  # the assertions below name it
            errors.append(repr(exc))

    def live(sent):
        producer = KafkaProducer(linger_ms=0, **bob)
        while not stop.is_set():
            producer.send("bob-live", b"tick")
            sent[0] += 1
            time.sleep(0.005)
        producer.flush(30)
        producer.close()

    sent = [0]
    threads = [threading.Thread(target=flood), threading.Thread(target=live, args=(sent,))]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    consumer = KafkaConsumer(enable_auto_commit=False, **bob)
    consumer.assign([TopicPartition("bob-live", 0)])
    consumer.seek(TopicPartition("bob-live", 0), 0)
    seen, windows = 0, []
    while time.monotonic() - start < 12:
        got = sum(len(v) for v in consumer.poll(timeout_ms=1_000).values())
        seen += got
        windows.append(got)
    stop.set()
    for thread in threads:
        thread.join(90)
    consumer.close()
    logging.getLogger("kafka.net.connection").removeHandler(throttled)
    elapsed = time.monotonic() - start
    rate = flooded[0] / elapsed
    print(f"ada got {rate / 1024:.0f} KiB/s acknowledged ({throttled.count} produce responses throttled) against a {quota // 1024} KiB/s quota; "
          f"bob's stream: {seen} of {sent[0]} records read in {elapsed:.1f} s")
    assert not errors, errors
    # The broker delayed ada's produce responses (kafka-python logs each throttle time the broker sends), and
    # what it acknowledged stayed near the quota.
    assert throttled.count > 0, "the broker never throttled the flood: is the user quota set?"
    assert rate < 3 * quota
    assert seen > 0.6 * sent[0] and all(w > 0 for w in windows[2:]), windows
