"""The offline engine's Kafka source against a real broker, in the manner of Spark's KafkaMicroBatchSourceSuite:
exact offsets and batch sizes for the same options the connector takes."""
from __future__ import annotations

import json
import re
import time
import uuid

import pytest

pytestmark = [pytest.mark.broker, pytest.mark.spark]


def produce(bootstrap: str, topic: str, counts: dict, headers=None, timestamp_ms=None) -> None:
    """Write counts[p] records to each partition p: key b'p-i', value b'v-p-i'."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        for part, n in counts.items():
            for i in range(n):
                producer.send(topic, key=f"{part}-{i}".encode(), value=f"v-{part}-{i}".encode(), partition=part,
                              headers=headers, timestamp_ms=timestamp_ms)
        producer.flush()
    finally:
        producer.close()


def delete_records(bootstrap: str, topic: str, partition: int, before: int) -> None:
    """Drop the records below offset `before`, as retention would."""
    from kafka import KafkaAdminClient, TopicPartition

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.delete_records({TopicPartition(topic, partition): before})
    finally:
        admin.close()


def stream(spark, bootstrap, **options):
    reader = spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load()


def batch(spark, bootstrap, **options):
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load()


def run(df, checkpoint, trigger=None, timeout=120):
    """Run to completion (availableNow unless told); (query, rows as sorted (partition, offset)).

    foreachBatch rather than the memory sink, because the memory sink refuses to restart from a checkpoint."""
    from pyspark.errors import StreamingQueryException

    rows = []
    query = (df.writeStream.foreachBatch(lambda batch_df, _: rows.extend(
                 (r.partition, r.offset) for r in batch_df.select("partition", "offset").collect()))
             .option("checkpointLocation", str(checkpoint)).trigger(**(trigger or {"availableNow": True})).start())
    try:
        query.awaitTermination(timeout)
    except StreamingQueryException:
        pass  # the caller checks query.exception()
    if query.isActive:
        query.stop()
    return query, sorted(rows)


def batches(query) -> list:
    """(numInputRows, startOffset, endOffset, latestOffset) of each batch that ran, in order."""
    seen = {}
    for progress in query.recentProgress:
        source = progress["sources"][0]
        seen[progress["batchId"]] = (progress["numInputRows"], json.loads(source["startOffset"] or "null"),
                                     json.loads(source["endOffset"]), json.loads(source["latestOffset"] or "null"))
    return [seen[b] for b in sorted(seen)]


def wait_for(condition, timeout=30.0, what="the query"):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not get there within {timeout:.0f} s"
        time.sleep(0.2)


def produce_transactions(bootstrap: str, topic: str) -> None:
    """3 committed records, 2 aborted ones, and their 2 markers: offsets 0-6 on partition 0, 3 visible records."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"tx-{uuid.uuid4().hex[:8]}")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(3):
            producer.send(topic, value=f"c{i}".encode(), partition=0)
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(2):
            producer.send(topic, value=f"a{i}".encode(), partition=0)
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close()


# --- rate limits and triggers -------------------------------------------------------------------------------


def test_cap_is_split_by_backlog_and_available_now_runs_capped_batches(spark, bootstrap, topic, tmp_path):
    name = topic(partitions=3)
    produce(bootstrap, name, {0: 100, 1: 50, 2: 1})
    query, rows = run(stream(spark, bootstrap, subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger=100),
                      tmp_path / "ck")
    assert query.exception() is None
    got = batches(query)
    # 100 * 100/151 = 66.2 -> 66, 100 * 50/151 = 33.1 -> 33, 100 * 1/151 = 0.66 -> 1; then the remaining 51
    assert [b[0] for b in got] == [100, 51]
    assert got[0][2] == {name: {"0": 66, "1": 33, "2": 1}}
    assert got[1][2] == {name: {"0": 100, "1": 50, "2": 1}}
    # latestOffset is reported, so lag per partition = latestOffset - endOffset
    assert got[0][3] == {name: {"0": 100, "1": 50, "2": 1}}
    assert rows == sorted([(0, i) for i in range(100)] + [(1, i) for i in range(50)] + [(2, 0)])
    # offsets/0: "v1", batch metadata, then the source's offsets in the connector's shape
    lines = (tmp_path / "ck" / "offsets" / "0").read_text().splitlines()
    assert lines[0] == "v1" and json.loads(lines[2]) == {name: {"0": 66, "1": 33, "2": 1}}


def test_trigger_once_ignores_the_cap(spark, bootstrap, topic, tmp_path):
    name = topic(partitions=2)
    produce(bootstrap, name, {0: 30, 1: 20})
    query, rows = run(stream(spark, bootstrap, subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger=5),
                      tmp_path / "ck", trigger={"once": True})
    assert query.exception() is None
    assert [b[0] for b in batches(query)] == [50]
    assert len(rows) == 50


def test_many_small_partitions_push_a_batch_over_the_cap(spark, bootstrap, topic, tmp_path):
    name = topic(partitions=20)
    produce(bootstrap, name, {p: 1 for p in range(20)})
    query, rows = run(stream(spark, bootstrap, subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger=10),
                      tmp_path / "ck")
    assert query.exception() is None
    assert [b[0] for b in batches(query)] == [20]
    assert rows == [(p, 0) for p in range(20)]


def test_min_offsets_skips_triggers_until_max_trigger_delay_then_fires(spark, bootstrap, topic, tmp_path):
    from datetime import datetime

    name = topic(partitions=1)
    produce(bootstrap, name, {0: 5})
    assert batch(spark, bootstrap, subscribe=name).count() == 5  # warms Python workers so batch 0 is quick
    table = f"q_{uuid.uuid4().hex[:10]}"
    df = stream(spark, bootstrap, subscribe=name, startingOffsets="earliest", minOffsetsPerTrigger=10,
                maxTriggerDelay="15s")
    query = (df.writeStream.format("memory").queryName(table).option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        ran = lambda: [b for b in batches(query) if b[0]]  # noqa: E731
        wait_for(lambda: len(ran()) == 1, what="the first batch (which always runs, below the minimum)")
        produce(bootstrap, name, {0: 3})  # 3 < minOffsetsPerTrigger: held until 15 s after the last batch
        produced = time.time()
        wait_for(lambda: len(ran()) == 2, timeout=60, what="the delayed batch")
        assert query.exception() is None
        assert [b[0] for b in ran()] == [5, 3]
        assert ran()[1][2] == {name: {"0": 8}}
        stamps = {p["batchId"]: datetime.fromisoformat(p["timestamp"]).timestamp() for p in query.recentProgress
                  if p["numInputRows"]}
        first, second = sorted(stamps.values())
        assert produced < first + 13, "the first batch took so long that the delay had passed already"
        assert second - first >= 14.5  # fired by maxTriggerDelay, not by the records' arrival
        assert spark.table(table).count() == 8
    finally:
        query.stop()


def test_read_committed_batches_count_offsets_not_rows(spark, bootstrap, topic, tmp_path):
    name = topic(partitions=1)
    produce_transactions(bootstrap, name)
    query, rows = run(stream(spark, bootstrap, subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger=100,
                             **{"kafka.isolation.level": "read_committed"}), tmp_path / "ck")
    assert query.exception() is None
    assert [(b[0], b[2]) for b in batches(query)] == [(3, {name: {"0": 7}})]  # 7 offsets, 3 rows
    assert rows == [(0, 0), (0, 1), (0, 2)]
    assert batch(spark, bootstrap, subscribe=name).count() == 5  # read_uncommitted also sees the aborted records


# --- starting positions and the checkpoint ----------------------------------------------------------------


def test_restart_resumes_from_the_checkpoint_whatever_starting_offsets_says(spark, bootstrap, topic, tmp_path):
    name = topic(partitions=1)
    produce(bootstrap, name, {0: 10})
    first, rows = run(stream(spark, bootstrap, subscribe=name, startingOffsets="earliest"), tmp_path / "ck")
    assert first.exception() is None and rows == [(0, i) for i in range(10)]
    produce(bootstrap, name, {0: 5})
    again, rows = run(stream(spark, bootstrap, subscribe=name, startingOffsets="earliest"), tmp_path / "ck")
    assert again.exception() is None
    assert rows == [(0, i) for i in range(10, 15)]


def test_starting_offsets_json_with_earliest_latest_and_exact_offsets(spark, bootstrap, topic, tmp_path):
    name = topic(partitions=3)
    produce(bootstrap, name, {0: 5, 1: 5, 2: 5})
    start = json.dumps({name: {"0": -2, "1": -1, "2": 3}})
    query, rows = run(stream(spark, bootstrap, subscribe=name, startingOffsets=start), tmp_path / "ck")
    assert query.exception() is None
    assert batches(query)[0][2] == {name: {"0": 5, "1": 5, "2": 5}}
    assert rows == [(0, i) for i in range(5)] + [(2, 3), (2, 4)]


def test_starting_offsets_json_must_name_every_partition(spark, bootstrap, topic, tmp_path):
    name = topic(partitions=2)
    query, _ = run(stream(spark, bootstrap, subscribe=name, startingOffsets=json.dumps({name: {"0": 0}})),
                   tmp_path / "ck")
    assert query.exception() is not None
    assert "you must specify all TopicPartitions" in str(query.exception())


def test_a_new_partition_is_read_from_earliest(spark, bootstrap, topic, tmp_path):
    from streamlab.topics import add_partitions

    name = topic(partitions=1)
    produce(bootstrap, name, {0: 3})
    table = f"q_{uuid.uuid4().hex[:10]}"
    query = (stream(spark, bootstrap, subscribe=name, startingOffsets="earliest").writeStream.format("memory")
             .queryName(table).option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        query.processAllAvailable()
        add_partitions(name, 2, bootstrap)
        produce(bootstrap, name, {1: 4})
        wait_for(lambda: spark.table(table).count() == 7, what="the new partition's records")
        assert query.exception() is None
        rows = sorted((r.partition, r.offset) for r in spark.table(table).collect())
        assert rows == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (1, 3)]
    finally:
        query.stop()


def test_a_new_partition_not_starting_at_zero_is_data_loss(spark, bootstrap, topic, tmp_path):
    from streamlab.topics import add_partitions

    name = topic(partitions=1)
    produce(bootstrap, name, {0: 2})
    first, _ = run(stream(spark, bootstrap, subscribe=name, startingOffsets="earliest"), tmp_path / "ck")
    assert first.exception() is None
    add_partitions(name, 2, bootstrap)
    produce(bootstrap, name, {1: 4})
    delete_records(bootstrap, name, 1, 2)
    failed, _ = run(stream(spark, bootstrap, subscribe=name), tmp_path / "ck")
    assert failed.exception() is not None
    message = str(failed.exception())
    assert f"Added partition {name}-1 starts from 2 instead of 0" in message
    assert 'set the source option "failOnDataLoss" to "false"' in message
    tolerant, rows = run(stream(spark, bootstrap, subscribe=name, failOnDataLoss="false"), tmp_path / "ck")
    assert tolerant.exception() is None
    assert rows == [(1, 2), (1, 3)]


def test_pattern_is_unanchored_and_picks_up_new_topics(spark, bootstrap, topic, tmp_path):
    tag = uuid.uuid4().hex[:6]
    events = topic(partitions=1, prefix=f"events-{tag}")
    old = topic(partitions=1, prefix=f"old-events-{tag}")
    produce(bootstrap, events, {0: 2})
    produce(bootstrap, old, {0: 1})
    anchored = batch(spark, bootstrap, subscribePattern=f"^events-{tag}-.*$").select("topic").distinct().collect()
    assert [r.topic for r in anchored] == [events]
    table = f"q_{uuid.uuid4().hex[:10]}"
    query = (stream(spark, bootstrap, subscribePattern=f"events-{tag}-.*", startingOffsets="earliest")
             .writeStream.format("memory").queryName(table).option("checkpointLocation", str(tmp_path / "ck"))
             .start())
    try:
        query.processAllAvailable()
        assert query.exception() is None
        assert sorted(r.topic for r in spark.table(table).collect()) == sorted([events, events, old])
        late = topic(partitions=1, prefix=f"events-{tag}")
        produce(bootstrap, late, {0: 2})
        wait_for(lambda: spark.table(table).count() == 5, what="the new topic's records")
        assert query.exception() is None
        assert sorted((r.offset for r in spark.table(table).where(f"topic = '{late}'").collect())) == [0, 1]
    finally:
        query.stop()


# --- failOnDataLoss ---------------------------------------------------------------------------------------------


def test_recreated_topic_fails_the_query_or_moves_on_per_fail_on_data_loss(spark, bootstrap, topic, tmp_path):
    from streamlab.topics import create_topic, delete_topic

    name = topic(partitions=1)
    produce(bootstrap, name, {0: 10})
    first, rows = run(stream(spark, bootstrap, subscribe=name, startingOffsets="earliest"), tmp_path / "ck")
    assert first.exception() is None and len(rows) == 10
    delete_topic(name, bootstrap=bootstrap)
    create_topic(name, 1, bootstrap)
    produce(bootstrap, name, {0: 3})
    failed, _ = run(stream(spark, bootstrap, subscribe=name), tmp_path / "ck")
    assert failed.exception() is not None
    message = str(failed.exception())
    assert f"Partition {name}-0's offset was changed from 10 to 3, some data may have been missed" in message
    assert "failOnDataLoss" in message
    tolerant, rows = run(stream(spark, bootstrap, subscribe=name, failOnDataLoss="false"), tmp_path / "ck")
    assert tolerant.exception() is None
    assert rows == []  # like the connector, the next batch starts at the new latest offset
    assert batches(tolerant)[-1][2] == {name: {"0": 3}}


def test_a_deleted_topic_is_data_loss_for_a_pattern_subscription(bootstrap, topic):
    """Driver-side planning only (no Spark): what the stream reader does once a matched topic is deleted."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from streamlab.kafka.options import IllegalStateException
    from streamlab.kafka.source import KafkaStreamReader
    from streamlab.topics import delete_topic

    tag = uuid.uuid4().hex[:6]
    keep, drop = topic(partitions=1, prefix=f"gone-{tag}"), topic(partitions=1, prefix=f"gone-{tag}")
    produce(bootstrap, keep, {0: 2})
    produce(bootstrap, drop, {0: 3})
    options = {"kafka.bootstrap.servers": bootstrap, "subscribePattern": f"^gone-{tag}-",
               "startingOffsets": "earliest"}
    strict, tolerant = KafkaStreamReader(options), KafkaStreamReader({**options, "failOnDataLoss": "false"})
    try:
        start = strict.initialOffset()
        assert start == {keep: {"0": 0}, drop: {"0": 0}}
        delete_topic(drop, bootstrap=bootstrap)
        end = strict.latestOffset(start, ReadAllAvailable())
        assert end == {keep: {"0": 2}}
        with pytest.raises(IllegalStateException, match=re.escape(f"Set({drop}-0) are gone. Some data may have")):
            strict.partitions(start, end)
        planned = tolerant.partitions(start, end)
        assert [(p.topic, p.partition, p.start, p.end) for p in planned] == [(keep, 0, 0, 2)]
    finally:
        strict.stop()
        tolerant.stop()


def test_records_lost_to_retention_fail_the_read_or_are_skipped(spark, bootstrap, topic):
    name = topic(partitions=1)
    produce(bootstrap, name, {0: 10})
    delete_records(bootstrap, name, 0, 4)
    start = json.dumps({name: {"0": 0}})
    with pytest.raises(Exception) as info:
        batch(spark, bootstrap, subscribe=name, startingOffsets=start).count()
    assert "Cannot fetch offset 0" in str(info.value) and "failOnDataLoss" in str(info.value)
    rows = batch(spark, bootstrap, subscribe=name, startingOffsets=start, failOnDataLoss="false").collect()
    assert sorted(r.offset for r in rows) == list(range(4, 10))


# --- tasks, batch reads, schema ---------------------------------------------------------------------------------


def test_min_partitions_splits_large_ranges_into_more_tasks(spark, bootstrap, topic, tmp_path):
    name = topic(partitions=2)
    produce(bootstrap, name, {0: 90, 1: 10})
    seen = []

    def record(df, batch_id):
        seen.append(sorted(df.rdd.glom().map(len).collect()))

    query = (stream(spark, bootstrap, subscribe=name, startingOffsets="earliest", minPartitions=4)
             .writeStream.foreachBatch(record).option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None
    # 90 of 100 offsets -> 4 pieces by share, but the small range keeps one task: 3 x 30 and 10
    assert seen == [[10, 30, 30, 30]]
    assert batch(spark, bootstrap, subscribe=name, minPartitions=4).rdd.getNumPartitions() == 4


def test_batch_read_counts_exactly_the_range_between_starting_and_ending_offsets(spark, bootstrap, topic):
    name = topic(partitions=3)
    produce(bootstrap, name, {0: 10, 1: 10, 2: 10})
    df = batch(spark, bootstrap, subscribe=name,
               startingOffsets=json.dumps({name: {"0": 2, "1": -2, "2": 5}}),
               endingOffsets=json.dumps({name: {"0": 7, "1": 3, "2": -1}}))
    rows = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert rows == [(0, i) for i in range(2, 7)] + [(1, i) for i in range(3)] + [(2, i) for i in range(5, 10)]
    assert batch(spark, bootstrap, assign=json.dumps({name: [1]})).count() == 10
    at_end = json.dumps({name: {"0": 10, "1": 10, "2": 10}})
    assert batch(spark, bootstrap, subscribe=name, startingOffsets=at_end).count() == 0


def test_timestamp_positions_pick_the_first_record_at_or_after_the_timestamp(spark, bootstrap, topic):
    from kafka import KafkaProducer

    name = topic(partitions=1)
    base = int(time.time() * 1000) - 60_000  # recent, or the broker's retention would drop the records
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(6):
        producer.send(name, value=b"x", partition=0, timestamp_ms=base + 10 * i)
    producer.flush()
    producer.close()

    def offsets(**options):
        return sorted(r.offset for r in batch(spark, bootstrap, subscribe=name, **options).select("offset").collect())

    assert offsets(startingTimestamp=base + 25) == [3, 4, 5]
    assert offsets(startingOffsetsByTimestamp=json.dumps({name: {"0": base + 40}})) == [4, 5]
    assert offsets(startingOffsets="earliest", endingTimestamp=base + 20) == [0, 1]
    late = base + 3_600_000
    with pytest.raises(Exception) as info:
        offsets(startingTimestamp=late)
    assert f"No offset matched from request of topic-partition {name}-0 and timestamp {late}." in str(info.value)
    assert offsets(startingTimestamp=late, startingOffsetsByTimestampStrategy="latest") == []


def test_headers_keys_values_and_utc_timestamps(spark, bootstrap, topic):
    name = topic(partitions=1)
    stamp = int(time.time() * 1000) - 60_000
    produce(bootstrap, name, {0: 2}, headers=[("source", b"test"), ("n", b"1")], timestamp_ms=stamp)
    plain = batch(spark, bootstrap, subscribe=name)
    assert plain.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    rows = (batch(spark, bootstrap, subscribe=name, includeHeaders="true")
            .selectExpr("key", "cast(value as string) v", "topic", "unix_millis(timestamp) ms", "timestampType",
                        "headers").orderBy("offset").collect())
    assert [(r.key, r.v, r.topic, r.ms, r.timestampType) for r in rows] == [
        (b"0-0", "v-0-0", name, stamp, 0), (b"0-1", "v-0-1", name, stamp, 0)]
    assert [(h.key, h.value) for h in rows[0].headers] == [("source", b"test"), ("n", b"1")]


# --- rejected options -------------------------------------------------------------------------------------------


def test_missing_bootstrap_servers_and_rejected_kafka_options_fail_at_load(spark):
    with pytest.raises(Exception) as info:
        spark.readStream.format("kafka").option("subscribe", "t").load()
    assert "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer" in str(info.value)
    with pytest.raises(Exception) as info:
        (spark.readStream.format("kafka").option("kafka.bootstrap.servers", "127.0.0.1:1").option("subscribe", "t")
         .option("kafka.auto.offset.reset", "earliest").load())
    assert "Kafka option 'auto.offset.reset' is not supported." in str(info.value)
    with pytest.raises(Exception) as info:
        spark.read.format("kafka").option("kafka.bootstrap.servers", "127.0.0.1:1").load()
    assert "One of the following options must be specified for Kafka source: subscribe, subscribepattern, assign" \
        in str(info.value)


def test_ending_offsets_fail_a_stream_and_latest_start_fails_a_batch(spark, bootstrap, topic, tmp_path):
    name = topic(partitions=1)
    query, _ = run(stream(spark, bootstrap, subscribe=name, endingOffsets="latest"), tmp_path / "ck")
    assert query.exception() is not None
    assert "ending offset not valid in streaming queries" in str(query.exception())
    with pytest.raises(Exception) as info:
        batch(spark, bootstrap, subscribe=name, startingOffsets="latest").count()
    assert "starting offset can't be latest for batch queries on Kafka" in str(info.value)
