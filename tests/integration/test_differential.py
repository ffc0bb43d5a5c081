"""The differential test of the Kafka source: every scenario runs on both stacks, in the manner of Spark's
KafkaMicroBatchSourceSuite, and the same exact batches, offsets, rows and error texts must hold on both:

- `connector`: Spark's own spark-sql-kafka-0-10 against Apache Kafka (the truth);
- `offline`: streamlab's engine on the Python Data Source API (format "streamlab_kafka") against noida-db.

An expectation that fails on the connector is wrong. Error texts are the connector's: the offline engine may wrap
them (see the unavoidable differences at the end of this file, listed in streamlab/offline/source.py), but the
connector's sentence must appear in both. The sink's scenarios are in test_differential_sink.py.
"""
from __future__ import annotations

import json
import time
import uuid
from datetime import datetime

import pytest
from support import wait_for

pytestmark = [pytest.mark.broker, pytest.mark.spark]

DATA_LOSS = ("Some data may have been lost because they are not available in Kafka any more;\n"
             "either the data was aged out by Kafka or the topic may have been deleted before all the data in the\n"
             "topic was processed.\n"
             "If you don't want your streaming query to fail on such cases, set the source option failOnDataLoss "
             "to false.\nReason: ")


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


def stream(spark, stack, **options):
    """A streaming read on `stack` (its format, its broker)."""
    reader = spark.readStream.format(stack.format).option("kafka.bootstrap.servers", stack.bootstrap)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load()


def batch(spark, stack, **options):
    """A batch read on `stack`."""
    reader = spark.read.format(stack.format).option("kafka.bootstrap.servers", stack.bootstrap)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load()


def run(df, checkpoint, trigger=None, timeout=120, fail_in_batch=None):
    """Run to completion (availableNow unless told); (query, rows as sorted (partition, offset)).

    foreachBatch rather than the memory sink, because the memory sink refuses to restart from a checkpoint.
    `fail_in_batch=N` makes batch N fail before its rows are kept: a crash after offsets/N, before commits/N."""
    from pyspark.errors import StreamingQueryException

    rows = []

    def keep(batch_df, batch_id):
        if batch_id == fail_in_batch:
            raise RuntimeError(f"crash in batch {batch_id}")
        rows.extend((r.partition, r.offset) for r in batch_df.select("partition", "offset").collect())

    for attempt in (1, 2):
        query = (df.writeStream.foreachBatch(keep).option("checkpointLocation", str(checkpoint))
                 .trigger(**(trigger or {"availableNow": True})).start())
        try:
            query.awaitTermination(timeout)
        except StreamingQueryException:
            pass  # the caller checks query.exception()
        if query.isActive:
            query.stop()
        # Spark waits a fixed time for a new Python worker (the offline stack's source runs in one) to connect
        # back; on a saturated machine (make test's two lanes, load 20) its start missed it twice in a row at
        # lane 1's start. Not what these tests compare: the query restarts once from its checkpoint, as after any
        # failure, and is judged on that run.
        error = query.exception()
        if attempt == 2 or error is None or "Python worker failed to connect back" not in str(error):
            return query, sorted(rows)


def batches(query) -> list:
    """(numInputRows, startOffset, endOffset, latestOffset) of each batch that ran, in order."""
    seen = {}
    for progress in query.recentProgress:
        source = progress["sources"][0]
        seen[progress["batchId"]] = (progress["numInputRows"], json.loads(source["startOffset"] or "null"),
                                     json.loads(source["endOffset"] or "null"),
                                     json.loads(source["latestOffset"] or "null"))
    return [seen[b] for b in sorted(seen)]


def offsets_line(checkpoint, batch_id: int) -> str:
    """The source's line of offsets/N, byte for byte."""
    return (checkpoint / "offsets" / str(batch_id)).read_text().splitlines()[2]


def message(error) -> str:
    """An error's text, without the query description Spark appends to a StreamingQueryException."""
    return str(error).split("=== Streaming Query ===")[0]


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


def test_cap_is_split_by_backlog_and_available_now_runs_capped_batches(spark, stack, tmp_path):
    name = stack.topic(partitions=3)
    produce(stack.bootstrap, name, {0: 100, 1: 50, 2: 1})
    query, rows = run(stream(spark, stack, subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger=100),
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
    # The checkpoint byte for byte: offsets/0 ends with the source's compact JSON, sources/0/0 holds the start.
    lines = (tmp_path / "ck" / "offsets" / "0").read_text().splitlines()
    assert lines[0] == "v1" and lines[2] == f'{{"{name}":{{"0":66,"1":33,"2":1}}}}'
    assert (tmp_path / "ck" / "sources" / "0" / "0").read_bytes() == \
        f'\x00v1\n{{"{name}":{{"0":0,"1":0,"2":0}}}}'.encode()


def test_trigger_once_ignores_the_cap(spark, stack, tmp_path):
    name = stack.topic(partitions=2)
    produce(stack.bootstrap, name, {0: 30, 1: 20})
    query, rows = run(stream(spark, stack, subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger=5),
                      tmp_path / "ck", trigger={"once": True})
    assert query.exception() is None
    assert [b[0] for b in batches(query)] == [50]
    assert len(rows) == 50


def test_many_small_partitions_push_a_batch_over_the_cap(spark, stack, tmp_path):
    name = stack.topic(partitions=12)
    produce(stack.bootstrap, name, {p: 1 for p in range(12)})
    query, rows = run(stream(spark, stack, subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger=6),
                      tmp_path / "ck")
    assert query.exception() is None
    # each share is 6 * 1/12 = 0.5, rounded up to 1: one batch of 12 under a cap of 6
    assert [b[0] for b in batches(query)] == [12]
    assert rows == [(p, 0) for p in range(12)]


def test_two_small_backlogs_beside_a_large_one_go_over_the_cap_one_does_not(spark, stack, tmp_path):
    """04's Q1 and 08's table: a batch exceeds the cap once two shares below one are rounded up, whatever the
    partition count; a single share rounded up is paid back by the floors of the others."""
    # KafkaMicroBatchStream.rateLimit (spark-sql-kafka-0-10 4.2.0, KafkaMicroBatchStream.scala:420-422):
    #   val prorate = limit * (size / total)
    #   val prorateLong = (if (prorate < 1) Math.ceil(prorate) else Math.floor(prorate)).toLong
    two, one = stack.topic(partitions=3), stack.topic(partitions=2)
    produce(stack.bootstrap, two, {0: 1, 1: 1, 2: 1000})
    produce(stack.bootstrap, one, {0: 1, 1: 1000})
    # cap 10 over 1, 1, 1000: 0.01 -> 1, 0.01 -> 1, 9.98 -> 9, so 11 in the first batch
    assert _first_batch(spark, stack, two, tmp_path / "two") == (11, {two: {"0": 1, "1": 1, "2": 9}})
    # cap 10 over 1, 1000: 0.01 -> 1, 9.99 -> 9, so 10: not over
    assert _first_batch(spark, stack, one, tmp_path / "one") == (10, {one: {"0": 1, "1": 9}})


def _first_batch(spark, stack, topic, checkpoint):
    """(rows, endOffset) of the first batch of a query capped at 10 that starts at the earliest offsets."""
    sizes = []
    query = (stream(spark, stack, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger=10)
             .writeStream.foreachBatch(lambda df, _: sizes.append(df.count()))
             .option("checkpointLocation", str(checkpoint)).trigger(processingTime="200 milliseconds").start())
    try:
        wait_for(lambda: batches(query), what="the first batch's progress")
        assert query.exception() is None
        return sizes[0], batches(query)[0][2]
    finally:
        query.stop()


def test_two_sources_in_one_query_each_get_their_own_budget_and_sources_folder(spark, stack, tmp_path):
    first, second = stack.topic(partitions=1), stack.topic(partitions=1)
    produce(stack.bootstrap, first, {0: 10})
    produce(stack.bootstrap, second, {0: 4})
    both = stream(spark, stack, subscribe=first, startingOffsets="earliest", maxOffsetsPerTrigger=3).union(
        stream(spark, stack, subscribe=second, startingOffsets=json.dumps({second: {"0": 1}}), maxOffsetsPerTrigger=2))
    query, rows = run(both, tmp_path / "ck")
    assert query.exception() is None and len(rows) == 13
    assert [(p["numInputRows"], [json.loads(s["endOffset"]) for s in p["sources"]]) for p in query.recentProgress] == [
        (5, [{first: {"0": 3}}, {second: {"0": 3}}]), (4, [{first: {"0": 6}}, {second: {"0": 4}}]),
        (3, [{first: {"0": 9}}, {second: {"0": 4}}]), (1, [{first: {"0": 10}}, {second: {"0": 4}}])]
    sources = tmp_path / "ck" / "sources"
    assert (sources / "0" / "0").read_bytes() == f'\x00v1\n{{"{first}":{{"0":0}}}}'.encode()
    assert (sources / "1" / "0").read_bytes() == f'\x00v1\n{{"{second}":{{"0":1}}}}'.encode()


def test_processing_time_runs_capped_batches_that_round_down(spark, stack, tmp_path):
    name = stack.topic(partitions=2)
    produce(stack.bootstrap, name, {0: 8, 1: 4})
    sizes = []
    query = (stream(spark, stack, subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger=5)
             .writeStream.foreachBatch(lambda df, _: sizes.append(df.count()))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="200 milliseconds").start())
    try:
        wait_for(lambda: sum(sizes) >= 12, what="the backlog")
        time.sleep(0.6)  # a few more triggers: with nothing new, no batch runs
        assert query.exception() is None
        # 5 * 8/12 = 3.3 -> 3 and 5 * 4/12 = 1.7 -> 1: 4 a batch, under the cap; then 5 * 2/4 = 2.5 -> 2 each
        assert sizes == [4, 4, 4]
        assert [b[2] for b in batches(query)] == [{name: {"0": 3, "1": 1}}, {name: {"0": 6, "1": 2}},
                                                  {name: {"0": 8, "1": 4}}]
    finally:
        query.stop()


def test_min_offsets_skips_triggers_until_max_trigger_delay_then_fires(spark, stack, tmp_path):
    name = stack.topic(partitions=1)
    produce(stack.bootstrap, name, {0: 5})
    assert batch(spark, stack, subscribe=name).count() == 5  # warms Python workers so batch 0 is quick
    df = stream(spark, stack, subscribe=name, startingOffsets="earliest", minOffsetsPerTrigger=10,
                maxTriggerDelay="8s")
    query = (df.writeStream.foreachBatch(lambda d, _: d.count()).option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        ran = lambda: [b for b in batches(query) if b[0]]  # noqa: E731
        wait_for(lambda: len(ran()) == 1, what="the first batch (which always runs, below the minimum)")
        produce(stack.bootstrap, name, {0: 3})  # 3 < minOffsetsPerTrigger: held until 8 s after the last batch
        produced = time.time()
        wait_for(lambda: len(ran()) == 2, what="the delayed batch")
        assert query.exception() is None
        assert [(b[0], b[2]) for b in ran()] == [(5, {name: {"0": 5}}), (3, {name: {"0": 8}})]
        stamps = sorted(datetime.fromisoformat(p["timestamp"]).timestamp() for p in query.recentProgress
                        if p["numInputRows"])
        # The delay counts from the first batch's planning (its timestamp), not from its end: under load the first
        # batch has taken 3.6 s to end (a fresh Python process per query on the offline stack), hence 8 s.
        assert produced < stamps[0] + 6, "the first batch took so long that the delay had nearly passed already"
        assert stamps[1] - stamps[0] >= 7.5  # fired by maxTriggerDelay ...
        assert stamps[1] - produced >= 1.5  # ... not by the records' arrival (a trigger every 200 ms)
    finally:
        query.stop()


def test_available_now_with_a_minimum_stops_before_the_backlog_is_read(spark, stack, tmp_path):
    name = stack.topic(partitions=1)
    produce(stack.bootstrap, name, {0: 15})
    query, rows = run(stream(spark, stack, subscribe=name, startingOffsets="earliest", minOffsetsPerTrigger=10,
                             maxOffsetsPerTrigger=10), tmp_path / "ck")
    assert query.exception() is None
    # The second batch would hold 5 < minOffsetsPerTrigger, so it is delayed: to availableNow that means no new
    # data, and the query ends with 5 records unread.
    assert [(b[0], b[2]) for b in batches(query)] == [(10, {name: {"0": 10}})]
    assert rows == [(0, i) for i in range(10)]


def test_read_committed_batches_count_offsets_not_rows(spark, stack, tmp_path):
    name = stack.topic(partitions=1)
    produce_transactions(stack.bootstrap, name)
    query, rows = run(stream(spark, stack, subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger=100,
                             **{"kafka.isolation.level": "read_committed"}), tmp_path / "ck")
    assert query.exception() is None
    assert [(b[0], b[2]) for b in batches(query)] == [(3, {name: {"0": 7}})]  # 7 offsets, 3 rows
    assert rows == [(0, 0), (0, 1), (0, 2)]
    assert batch(spark, stack, subscribe=name).count() == 5  # read_uncommitted also sees the aborted records


def test_read_committed_batch_reads_skip_aborted_records_markers_and_open_transactions(spark, stack):
    from kafka import KafkaProducer

    name = stack.topic(partitions=1)
    produce_transactions(stack.bootstrap, name)  # offsets 0-2 committed, 3 marker, 4-5 aborted, 6 marker
    committed = {"kafka.isolation.level": "read_committed"}

    def read(**options):
        return [(r.offset, r.value.decode()) for r in
                batch(spark, stack, subscribe=name, **options).select("offset", "value").orderBy("offset").collect()]

    assert read(**committed) == [(0, "c0"), (1, "c1"), (2, "c2")]
    assert read() == [(0, "c0"), (1, "c1"), (2, "c2"), (4, "a0"), (5, "a1")]  # read_uncommitted: the aborted too
    # Offsets with no visible record (markers, aborted records) are skipped by the executors' consumer
    # (consumer/KafkaDataConsumer.scala:73-77, 4.2.0). An explicit end inside the aborted transaction: its
    # offsets are read, but hold no row.
    assert read(endingOffsets=json.dumps({name: {"0": 5}}), **committed) == [(0, "c0"), (1, "c1"), (2, "c2")]
    # An open transaction: under read_committed, `latest` is the last stable offset (KafkaOffsetReaderAdmin.scala:
    # 74-84 lists offsets with ListOffsetsOptions(isolationLevel)), so the read stops before the open transaction,
    # even for records written after it outside of any transaction.
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap, transactional_id=f"tx-{uuid.uuid4().hex[:8]}")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(name, value=b"open", partition=0)  # offset 7
        producer.flush()
        produce(stack.bootstrap, name, {0: 1})  # offset 8, no transaction
        assert read(**committed) == [(0, "c0"), (1, "c1"), (2, "c2")]
        assert read()[-2:] == [(7, "open"), (8, "v-0-0")]
        producer.commit_transaction()  # marker at 9
    finally:
        producer.close()
    assert read(**committed) == [(0, "c0"), (1, "c1"), (2, "c2"), (7, "open"), (8, "v-0-0")]


# --- starting positions, restarts and the checkpoint --------------------------------------------------------


def test_a_crash_in_batch_0_replays_from_sources_0_0_not_from_a_new_latest(spark, stack, tmp_path):
    name = stack.topic(partitions=1)
    produce(stack.bootstrap, name, {0: 3})
    crashed, _ = run(stream(spark, stack, subscribe=name), tmp_path / "ck", fail_in_batch=0)
    assert "crash in batch 0" in message(crashed.exception())
    assert offsets_line(tmp_path / "ck", 0) == f'{{"{name}":{{"0":3}}}}'  # planned, never committed
    assert not (tmp_path / "ck" / "commits" / "0").exists()
    produce(stack.bootstrap, name, {0: 2})  # "latest" is 5 now, but the restart starts where batch 0 did
    again, rows = run(stream(spark, stack, subscribe=name), tmp_path / "ck")
    assert again.exception() is None
    assert [(b[0], b[2]) for b in batches(again)] == [(0, {name: {"0": 3}}), (2, {name: {"0": 5}})]
    assert rows == [(0, 3), (0, 4)]
    assert (tmp_path / "ck" / "sources" / "0" / "0").read_bytes() == f'\x00v1\n{{"{name}":{{"0":3}}}}'.encode()


def test_a_restart_resumes_from_the_checkpoint_and_replays_a_crashed_batch_as_planned(spark, stack, tmp_path):
    name = stack.topic(partitions=1)
    produce(stack.bootstrap, name, {0: 12})
    crashed, rows = run(stream(spark, stack, subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger=5),
                        tmp_path / "ck", fail_in_batch=1)
    assert crashed.exception() is not None and rows == [(0, i) for i in range(5)]
    again, rows = run(stream(spark, stack, subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger=2),
                      tmp_path / "ck")
    assert again.exception() is None
    # startingOffsets=earliest is ignored: the checkpoint wins. Batch 1 keeps its planned range [5, 10) and the new
    # cap applies from batch 2 on.
    assert [(b[0], b[1], b[2]) for b in batches(again)] == [
        (5, {name: {"0": 5}}, {name: {"0": 10}}), (2, {name: {"0": 10}}, {name: {"0": 12}})]
    assert rows == [(0, i) for i in range(5, 12)]


def test_two_queries_from_one_dataframe_keep_their_own_checkpoints(spark, stack, tmp_path):
    name = stack.topic(partitions=1)
    produce(stack.bootstrap, name, {0: 4})
    df = stream(spark, stack, subscribe=name, startingOffsets=json.dumps({name: {"0": 1}}))
    counts = {}
    queries = [df.writeStream.foreachBatch(lambda d, _, k=k: counts.__setitem__(k, counts.get(k, 0) + d.count()))
               .option("checkpointLocation", str(tmp_path / k)).trigger(availableNow=True).start() for k in "ab"]
    for query in queries:
        query.awaitTermination(60)
        assert query.exception() is None
    assert counts == {"a": 3, "b": 3}
    for k in "ab":
        assert (tmp_path / k / "sources" / "0" / "0").read_bytes() == f'\x00v1\n{{"{name}":{{"0":1}}}}'.encode()


def test_starting_offsets_json_with_earliest_latest_and_exact_offsets(spark, stack, tmp_path):
    name = stack.topic(partitions=3)
    produce(stack.bootstrap, name, {0: 5, 1: 5, 2: 5})
    start = json.dumps({name: {"0": -2, "1": -1, "2": 3}})
    query, rows = run(stream(spark, stack, subscribe=name, startingOffsets=start), tmp_path / "ck")
    assert query.exception() is None
    assert batches(query)[0][2] == {name: {"0": 5, "1": 5, "2": 5}}
    assert rows == [(0, i) for i in range(5)] + [(2, 3), (2, 4)]
    # -2 and -1 are resolved once, into sources/0/0
    assert (tmp_path / "ck" / "sources" / "0" / "0").read_bytes() == \
        f'\x00v1\n{{"{name}":{{"0":0,"1":5,"2":3}}}}'.encode()


def test_starting_offsets_json_must_name_every_partition(spark, stack, tmp_path):
    name = stack.topic(partitions=2)
    partial = json.dumps({name: {"0": 0}})
    query, _ = run(stream(spark, stack, subscribe=name, startingOffsets=partial), tmp_path / "ck")
    text = message(query.exception())
    sentence = ("If startingOffsets contains specific offsets, you must specify all TopicPartitions.\n"
                "Use -1 for latest, -2 for earliest, if you don't care.\n"
                f"Specified: Set({name}-0) Assigned: Set({name}-0, {name}-1)")
    assert sentence in text
    # Unavoidable: an error raised while a query runs comes out of Spark's Python source process, wrapped by
    # PySpark with its traceback, where the connector's is its own exception (here a Scala assert).
    if stack.name == "connector":
        assert text.startswith(f"assertion failed: {sentence}")
    else:
        assert text.startswith("[PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR] Failed when Python streaming data "
                               "source perform")
        assert "Traceback (most recent call last)" in text
    with pytest.raises(Exception) as info:  # a batch read checks with another text
        batch(spark, stack, subscribe=name, startingOffsets=partial).count()
    assert ("Partitions specified for Kafka start offsets don't match what are assigned. Maybe topic partitions "
            "are created \nor deleted while the query is running. Use -1 for latest, -2 for earliest.\n"
            f"Specified: Set({name}-0) Assigned: Set({name}-0, {name}-1)") in str(info.value)


# --- new partitions and pattern subscriptions ---------------------------------------------------------------


def test_a_new_partition_is_read_from_earliest(spark, stack, tmp_path):
    from streamlab.lab.topics import add_partitions

    name = stack.topic(partitions=1)
    produce(stack.bootstrap, name, {0: 3})
    table = f"q_{uuid.uuid4().hex[:10]}"
    query = (stream(spark, stack, subscribe=name, startingOffsets="earliest").writeStream.format("memory")
             .queryName(table).option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        query.processAllAvailable()
        add_partitions(name, 2, stack.bootstrap)
        produce(stack.bootstrap, name, {1: 4})
        wait_for(lambda: spark.table(table).count() == 7, what="the new partition's records")
        assert query.exception() is None
        rows = sorted((r.partition, r.offset) for r in spark.table(table).collect())
        assert rows == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (1, 3)]
    finally:
        query.stop()


def test_a_new_partition_not_starting_at_zero_is_data_loss(spark, stack, tmp_path):
    from streamlab.lab.topics import add_partitions

    name = stack.topic(partitions=1)
    produce(stack.bootstrap, name, {0: 2})
    first, _ = run(stream(spark, stack, subscribe=name, startingOffsets="earliest"), tmp_path / "ck")
    assert first.exception() is None
    add_partitions(name, 2, stack.bootstrap)
    produce(stack.bootstrap, name, {1: 4})
    delete_records(stack.bootstrap, name, 1, 2)
    failed, _ = run(stream(spark, stack, subscribe=name), tmp_path / "ck")
    assert f"{DATA_LOSS}Added partition {name}-1 starts from 2 instead of 0." in message(failed.exception())
    tolerant, rows = run(stream(spark, stack, subscribe=name, failOnDataLoss="false"), tmp_path / "ck")
    assert tolerant.exception() is None
    assert rows == [(1, 2), (1, 3)]
    # the batch planned before the failure is replayed as it was, without a new latestOffset
    assert batches(tolerant) == [(2, {name: {"0": 2}}, {name: {"0": 2, "1": 4}}, None)]


def test_pattern_is_unanchored_and_picks_up_new_topics(spark, stack, tmp_path):
    tag = uuid.uuid4().hex[:6]
    events = stack.topic(partitions=1, prefix=f"events-{tag}")
    old = stack.topic(partitions=1, prefix=f"old-events-{tag}")
    produce(stack.bootstrap, events, {0: 2})
    produce(stack.bootstrap, old, {0: 1})
    anchored = batch(spark, stack, subscribePattern=f"^events-{tag}-.*$").select("topic").distinct().collect()
    assert [r.topic for r in anchored] == [events]
    table = f"q_{uuid.uuid4().hex[:10]}"
    query = (stream(spark, stack, subscribePattern=f"events-{tag}-.*", startingOffsets="earliest")
             .writeStream.format("memory").queryName(table).option("checkpointLocation", str(tmp_path / "ck"))
             .start())
    try:
        query.processAllAvailable()
        assert query.exception() is None
        assert sorted(r.topic for r in spark.table(table).collect()) == sorted([events, events, old])
        late = stack.topic(partitions=1, prefix=f"events-{tag}")  # created while the query runs
        produce(stack.bootstrap, late, {0: 2})
        wait_for(lambda: spark.table(table).count() == 5, what="the new topic's records")
        assert query.exception() is None
        assert sorted((r.offset for r in spark.table(table).where(f"topic = '{late}'").collect())) == [0, 1]
    finally:
        query.stop()


def test_subscribing_to_a_topic_that_does_not_exist_fails(spark, stack, tmp_path):
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    quick = {"fetchOffset.retryIntervalMs": 10}  # the listing is retried fetchOffset.numRetries times first
    query, _ = run(stream(spark, stack, subscribe=missing, **quick), tmp_path / "ck")
    assert "UnknownTopicOrPartitionException: This server does not host this topic-partition." \
        in message(query.exception())
    with pytest.raises(Exception) as info:
        batch(spark, stack, subscribe=missing, **quick).count()
    assert "UnknownTopicOrPartitionException: This server does not host this topic-partition." in str(info.value)


# --- failOnDataLoss ---------------------------------------------------------------------------------------------


def test_recreated_topic_fails_the_query_or_moves_on_per_fail_on_data_loss(spark, stack, tmp_path):
    from streamlab.lab.topics import create_topic, delete_topic

    name = stack.topic(partitions=1)
    produce(stack.bootstrap, name, {0: 10})
    first, rows = run(stream(spark, stack, subscribe=name, startingOffsets="earliest"), tmp_path / "ck")
    assert first.exception() is None and len(rows) == 10
    delete_topic(name, bootstrap=stack.bootstrap)
    create_topic(name, 1, stack.bootstrap)
    produce(stack.bootstrap, name, {0: 3})
    failed, _ = run(stream(spark, stack, subscribe=name), tmp_path / "ck")
    assert (f"{DATA_LOSS}Partition {name}-0 offset was changed from 10 to 3.\nThis could be either 1) a user error "
            "that the start offset is set beyond available offset when starting query, or 2) the kafka "
            "topic-partition is deleted and re-created.") in message(failed.exception())
    tolerant, rows = run(stream(spark, stack, subscribe=name, failOnDataLoss="false"), tmp_path / "ck")
    assert tolerant.exception() is None
    assert rows == []  # the next batch starts at the new latest offset
    assert batches(tolerant) == [(0, {name: {"0": 10}}, {name: {"0": 3}}, None)]


def test_a_deleted_topic_is_data_loss_for_a_pattern_subscription(spark, stack, tmp_path):
    from streamlab.lab.topics import delete_topic

    tag = uuid.uuid4().hex[:6]
    keep, drop = sorted(stack.topic(partitions=1, prefix=f"gone-{tag}") for _ in range(2))
    produce(stack.bootstrap, keep, {0: 2})
    produce(stack.bootstrap, drop, {0: 3})
    first, rows = run(stream(spark, stack, subscribePattern=f"^gone-{tag}-", startingOffsets="earliest"),
                      tmp_path / "ck")
    assert first.exception() is None and len(rows) == 5
    delete_topic(drop, bootstrap=stack.bootstrap)
    produce(stack.bootstrap, keep, {0: 1})
    failed, _ = run(stream(spark, stack, subscribePattern=f"^gone-{tag}-"), tmp_path / "ck")
    assert f"{DATA_LOSS}Partitions Set({drop}-0) have been deleted." in message(failed.exception())
    tolerant, rows = run(stream(spark, stack, subscribePattern=f"^gone-{tag}-", failOnDataLoss="false"),
                         tmp_path / "ck")
    assert tolerant.exception() is None and rows == [(0, 2)]
    assert [b[2] for b in batches(tolerant)] == [{keep: {"0": 3}}]


def test_records_lost_to_retention_fail_the_read_or_are_skipped(spark, stack):
    name = stack.topic(partitions=1)
    produce(stack.bootstrap, name, {0: 10})
    delete_records(stack.bootstrap, name, 0, 4)
    start = json.dumps({name: {"0": 0}})
    with pytest.raises(Exception) as info:
        batch(spark, stack, subscribe=name, startingOffsets=start).count()
    assert f"{DATA_LOSS}Could not read records in offset [0, 10) for topic partition {name}-0\nwith consumer " \
           "group spark-kafka-relation-" in str(info.value)
    rows = batch(spark, stack, subscribe=name, startingOffsets=start, failOnDataLoss="false").collect()
    assert sorted(r.offset for r in rows) == list(range(4, 10))


# --- tasks, batch reads, schema ---------------------------------------------------------------------------------


def test_min_partitions_and_max_records_per_partition_split_ranges_into_tasks(spark, stack, tmp_path):
    name = stack.topic(partitions=3)
    produce(stack.bootstrap, name, {0: 90, 1: 10})  # partition 2 stays empty
    seen = []
    query = (stream(spark, stack, subscribe=name, startingOffsets="earliest", maxRecordsPerPartition=40,
                    minPartitions=6)
             .writeStream.foreachBatch(lambda df, _: seen.append(sorted(df.rdd.glom().map(len).collect())))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None
    # No task for the empty partition; 90 -> ceil(90/40) = 3 pieces of 30; then 4 ranges < 6: each 30 gets
    # round(30/100 * 6) = 2 parts, the 10 only round(0.6) = 1, so it stays whole and the 30s share 5: 15 each.
    assert seen == [[10, 15, 15, 15, 15, 15, 15]]

    def tasks(**options):
        return sorted(batch(spark, stack, subscribe=name, **options).rdd.glom().map(len).collect())

    assert tasks() == [0, 10, 90]  # a batch read plans every partition, the empty one included
    # 90 of 100 offsets -> 4 pieces by share, but the small range keeps one task: 3 x 30 and 10
    assert tasks(minPartitions=4) == [10, 30, 30, 30]
    assert tasks(maxRecordsPerPartition=40) == [0, 10, 90]  # alone, it splits only streams (4.2)
    assert tasks(maxRecordsPerPartition=40, minPartitions=6) == [10, 15, 15, 15, 15, 15, 15]


def test_batch_read_counts_exactly_the_range_between_starting_and_ending_offsets(spark, stack):
    name = stack.topic(partitions=3)
    produce(stack.bootstrap, name, {0: 10, 1: 10, 2: 10})
    df = batch(spark, stack, subscribe=name,
               startingOffsets=json.dumps({name: {"0": 2, "1": -2, "2": 5}}),
               endingOffsets=json.dumps({name: {"0": 7, "1": 3, "2": -1}}))
    rows = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert rows == [(0, i) for i in range(2, 7)] + [(1, i) for i in range(3)] + [(2, i) for i in range(5, 10)]
    assert batch(spark, stack, assign=json.dumps({name: [1]})).count() == 10
    at_end = json.dumps({name: {"0": 10, "1": 10, "2": 10}})
    assert batch(spark, stack, subscribe=name, startingOffsets=at_end).count() == 0
    with pytest.raises(Exception) as info:
        batch(spark, stack, subscribe=name, startingOffsets=json.dumps({name: {"0": 5, "1": 0, "2": 0}}),
              endingOffsets=json.dumps({name: {"0": 3, "1": 1, "2": 1}}))
    assert f"The specified start offset 5 is greater than the end offset 3 for topic {name} partition 0." \
        in str(info.value)


def test_a_batch_dataframe_resolves_earliest_and_latest_again_at_every_action(spark, stack):
    from streamlab.lab.topics import add_partitions

    name = stack.topic(partitions=2)
    produce(stack.bootstrap, name, {0: 3, 1: 2})
    df = batch(spark, stack, subscribe=name)  # startingOffsets=earliest, endingOffsets=latest
    assert df.count() == 5
    # KafkaRelation is a TableScan whose buildScan() (KafkaRelation.scala:55-70, spark-sql-kafka-0-10 4.2.0) calls
    # getOffsetRangesFromUnresolvedOffsets(startingOffsets, endingOffsets) each time a query over it is planned:
    # every action binds `earliest` and `latest` anew, on the same DataFrame.
    produce(stack.bootstrap, name, {0: 4, 1: 1})
    assert df.count() == 10
    delete_records(stack.bootstrap, name, 0, 5)  # `earliest` moves too
    assert sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect()) == \
        [(0, 5), (0, 6)] + [(1, i) for i in range(3)]
    # A fixed JSON range is the same at every action.
    fixed = batch(spark, stack, subscribe=name, startingOffsets=json.dumps({name: {"0": 5, "1": 0}}),
                  endingOffsets=json.dumps({name: {"0": 6, "1": 2}}))
    produce(stack.bootstrap, name, {0: 2, 1: 2})
    assert fixed.count() == 3 and fixed.count() == 3 and df.count() == 9
    # The subscription's partitions are listed again too: a partition added since is read, in a task of its own.
    add_partitions(name, 3, stack.bootstrap)
    produce(stack.bootstrap, name, {2: 4})
    assert df.count() == 13 and df.rdd.getNumPartitions() == 3


def test_timestamp_positions_pick_the_first_record_at_or_after_the_timestamp(spark, stack, tmp_path):
    from kafka import KafkaProducer

    name = stack.topic(partitions=1)
    base = int(time.time() * 1000) - 60_000  # recent, or the broker's retention would drop the records
    producer = KafkaProducer(bootstrap_servers=stack.bootstrap)
    for i in range(6):
        producer.send(name, value=b"x", partition=0, timestamp_ms=base + 10 * i)
    producer.flush()
    producer.close()

    def offsets(**options):
        return sorted(r.offset for r in batch(spark, stack, subscribe=name, **options).select("offset").collect())

    assert offsets(startingTimestamp=base + 25) == [3, 4, 5]
    assert offsets(startingOffsetsByTimestamp=json.dumps({name: {"0": base + 40}})) == [4, 5]
    assert offsets(startingOffsets="earliest", endingTimestamp=base + 20) == [0, 1]
    late = base + 3_600_000
    with pytest.raises(Exception) as info:
        offsets(startingTimestamp=late)
    assert f"No offset matched from request of topic-partition {name}-0 and timestamp {late}." in str(info.value)
    assert offsets(startingTimestamp=late, startingOffsetsByTimestampStrategy="latest") == []
    # A stream resolves its start the same way, once, into sources/0/0.
    query, rows = run(stream(spark, stack, subscribe=name,
                             startingOffsetsByTimestamp=json.dumps({name: {"0": base + 35}})), tmp_path / "ck")
    assert query.exception() is None and rows == [(0, 4), (0, 5)]
    assert (tmp_path / "ck" / "sources" / "0" / "0").read_bytes() == f'\x00v1\n{{"{name}":{{"0":4}}}}'.encode()


def test_headers_keys_values_and_utc_timestamps(spark, stack):
    name = stack.topic(partitions=1)
    stamp = int(time.time() * 1000) - 60_000
    produce(stack.bootstrap, name, {0: 2}, headers=[("source", b"test"), ("n", b"1")], timestamp_ms=stamp)
    plain = batch(spark, stack, subscribe=name)
    assert plain.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    rows = (batch(spark, stack, subscribe=name, includeHeaders="true")
            .selectExpr("key", "cast(value as string) v", "topic", "unix_millis(timestamp) ms", "timestampType",
                        "headers").orderBy("offset").collect())
    assert [(r.key, r.v, r.topic, r.ms, r.timestampType) for r in rows] == [
        (b"0-0", "v-0-0", name, stamp, 0), (b"0-1", "v-0-1", name, stamp, 0)]
    assert [(h.key, h.value) for h in rows[0].headers] == [("source", b"test"), ("n", b"1")]


# --- rejected options: at load(), or when the query starts, as the connector does ---------------------------


AUTO_OFFSET_RESET = (
    "\nKafka option 'auto.offset.reset' is not supported.\n"
    "Instead set the source option 'startingoffsets' to 'earliest' or 'latest'\n"
    "to specify where to start. Structured Streaming manages which offsets are consumed\n"
    "internally, rather than relying on the kafkaConsumer to do it. This will ensure that no\n"
    "data is missed when new topics/partitions are dynamically subscribed. Note that\n"
    "'startingoffsets' only applies when a new Streaming query is started, and\n"
    "that resuming will always pick up from where the query left off. See the docs for more\n"
    "details.\n         ")

# (read, options without kafka.bootstrap.servers unless None, exception class name, the connector's exact text)
LOAD_ERRORS = [
    ("stream", {"subscribe": "t", "kafka.bootstrap.servers": None}, "IllegalArgumentException",
     "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"),
    ("batch", {}, "IllegalArgumentException",
     "One of the following options must be specified for Kafka source: subscribe, subscribepattern, assign. See the "
     "docs for more details."),
    ("stream", {"subscribe": "t", "assign": '{"t":[0]}'}, "IllegalArgumentException",
     "Only one of the following options can be specified for Kafka source: subscribe, subscribepattern, assign. See "
     "the docs for more details."),
    ("stream", {"subscribe": " , "}, "IllegalArgumentException",
     "No topics to subscribe to as specified value for option 'subscribe' is ' , '"),
    ("stream", {"subscribePattern": ""}, "IllegalArgumentException",
     "Pattern to subscribe is empty as specified value for option 'subscribePattern' is ''"),
    ("stream", {"assign": "t"}, "IllegalArgumentException",
     "No topicpartitions to assign as specified value for option 'assign' is 't'"),
    ("stream", {"subscribe": "t", "minPartitions": "0"}, "IllegalArgumentException", "minPartitions must be positive"),
    ("stream", {"subscribe": "t", "minPartitions": "x"}, "NumberFormatException", 'For input string: "x"'),
    ("batch", {"subscribe": "t", "maxRecordsPerPartition": "0"}, "IllegalArgumentException",
     "maxrecordsperpartition must be positive"),
    ("stream", {"subscribe": "t", "kafka.auto.offset.reset": "earliest"}, "IllegalArgumentException",
     AUTO_OFFSET_RESET),
    ("stream", {"subscribe": "t", "kafka.key.deserializer": "x"}, "IllegalArgumentException",
     "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte arrays with "
     "ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the keys."),
    ("stream", {"subscribe": "t", "kafka.value.deserializer": "x"}, "IllegalArgumentException",
     "Kafka option 'value.deserializer' is not supported as values are deserialized as byte arrays with "
     "ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the values."),
    ("stream", {"subscribe": "t", "kafka.enable.auto.commit": "true"}, "IllegalArgumentException",
     "Kafka option 'enable.auto.commit' is not supported"),
    ("stream", {"subscribe": "t", "kafka.interceptor.classes": "x"}, "IllegalArgumentException",
     "Kafka option 'interceptor.classes' is not supported"),
    ("stream", {"subscribe": "t", "minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"},
     "IllegalArgumentException", "The value of minOffsetPerTrigger(10) is higher than the maxOffsetsPerTrigger(5)."),
    ("stream", {"subscribe": "t", "includeHeaders": "yes"}, "IllegalArgumentException", 'For input string: "yes"'),
    ("stream", {"subscribe": "t", "endingOffsets": "latest"}, "IllegalArgumentException",
     "ending offset not valid in streaming queries"),
    ("stream", {"subscribe": "t", "endingOffsetsByTimestamp": '{"t":{"0":1}}'}, "IllegalArgumentException",
     "ending timestamp not valid in streaming queries"),
    ("batch", {"subscribe": "t", "startingOffsets": "latest"}, "IllegalArgumentException",
     "starting offset can't be latest for batch queries on Kafka"),
    ("batch", {"subscribe": "t", "endingOffsets": "earliest"}, "IllegalArgumentException",
     "ending offset can't be earliest for batch queries on Kafka"),
]


@pytest.mark.parametrize("read, options, kind, text", LOAD_ERRORS,
                         ids=[f"{r}-{'-'.join(o) or 'none'}" for r, o, _, _ in LOAD_ERRORS])
def test_option_errors_at_load(spark, stack, read, options, kind, text):
    reader = spark.readStream if read == "stream" else spark.read
    reader = reader.format(stack.format)
    for key, value in {"kafka.bootstrap.servers": "127.0.0.1:1", **options}.items():
        if value is not None:
            reader = reader.option(key, value)
    with pytest.raises(Exception) as info:
        reader.load()
    # The same exception class (PySpark's conversion of the JVM one) and the same text, on both stacks.
    assert type(info.value).__name__ == kind
    assert str(info.value) == text


def test_a_custom_schema_is_refused_at_load(spark, stack):
    def reader(kind):
        return kind.format(stack.format).option("kafka.bootstrap.servers", "127.0.0.1:1").option("subscribe", "t")

    with pytest.raises(Exception) as info:
        reader(spark.readStream).schema("a INT").load()
    assert (type(info.value).__name__, str(info.value)) == (
        "IllegalArgumentException", "requirement failed: Kafka source has a fixed schema and cannot be set with a "
                                    "custom one")
    with pytest.raises(Exception) as info:
        reader(spark.read).schema("a INT").load()
    assert (type(info.value).__name__, str(info.value)) == ("AnalysisException", (
        "[USER_SPECIFIED_AND_ACTUAL_SCHEMA_MISMATCH] The user-specified schema doesn't match the actual schema:\n"
        "user-specified: a INT, actual: key BINARY,value BINARY,topic STRING,partition INT,offset BIGINT,timestamp "
        "TIMESTAMP,timestampType INT. If you're using\nDataFrameReader.schema API or creating a table, please do not "
        "specify the schema.\nOr if you're scanning an existed table, please drop it and re-create it. SQLSTATE: "
        "42K03"))
    fixed = reader(spark.read).load().schema
    assert reader(spark.read).schema(fixed).load().columns == fixed.names  # the Kafka schema itself is fine


START_ERRORS = [
    ({"assign": "{x"}, 'Expected e.g. {"topicA":[0,1],"topicB":[0,1]}, got {x'),
    ({"failOnDataLoss": "maybe"}, 'For input string: "maybe"'),
    ({"startingOffsets": "middle"}, 'Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got middle'),
    ({"maxOffsetsPerTrigger": "ten"}, 'For input string: "ten"'),
    ({"maxTriggerDelay": "soon"}, "Time must be specified as seconds (s), milliseconds (ms), microseconds (us), "
                                  "minutes (m or min), hour (h), or day (d). E.g. 50s, 100ms, or 250us.\n"
                                  "Failed to parse time string: soon"),
]


def test_option_errors_when_the_query_starts(spark, stack, tmp_path):
    from pyspark.errors import StreamingQueryException

    name = stack.topic(partitions=1)
    queries = []
    for options, _ in START_ERRORS:  # all started at once: each fails on its own
        df = stream(spark, stack, **({"subscribe": name} if "assign" not in options else {}), **options)  # loads
        queries.append(df.writeStream.foreachBatch(lambda d, _: None).trigger(availableNow=True)
                       .option("checkpointLocation", str(tmp_path / uuid.uuid4().hex)).start())
    for query, (options, text) in zip(queries, START_ERRORS):
        with pytest.raises(StreamingQueryException) as info:
            query.awaitTermination(120)
        assert text in message(info.value), options


# --- the two stacks side by side ----------------------------------------------------------------------------


def test_both_stacks_plan_read_and_checkpoint_the_same_batches(spark, both_stacks, tmp_path):
    """One scenario (uneven backlog, a cap, a crash in batch 1, a restart) run on both stacks, outputs compared."""
    from pyspark.errors import StreamingQueryException

    outputs = {}
    for which, stack in both_stacks.items():
        name = stack.topic(partitions=3)
        produce(stack.bootstrap, name, {0: 40, 1: 15, 2: 2})
        ck = tmp_path / which
        seen, crashed = [], []

        def keep(df, batch_id):
            if batch_id == 1 and not crashed:
                crashed.append(batch_id)
                raise RuntimeError("crash in batch 1")
            seen.extend((batch_id, r.partition, r.offset, r.key.decode(), r.value.decode()) for r in df.collect())

        progress = []
        for _ in range(2):  # the crash, then the restart
            query = (stream(spark, stack, subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger=20)
                     .writeStream.foreachBatch(keep).option("checkpointLocation", str(ck))
                     .trigger(availableNow=True).start())
            try:
                query.awaitTermination(120)
            except StreamingQueryException:
                pass
            progress += batches(query)
        checkpoint = {}
        for f in sorted(ck.rglob("*")):
            kept = f.is_file() and not f.name.startswith(".") and f.parent.name in ("offsets", "commits", "0")
            if kept:
                text = f.read_bytes().decode()
                checkpoint[str(f.relative_to(ck))] = text.splitlines()[2] if f.parent.name == "offsets" else text
        # The topics' names differ between the two brokers, so each is compared under the same stand-in.
        outputs[which] = json.loads(json.dumps([progress, sorted(seen), checkpoint]).replace(name, "TOPIC"))
    assert outputs["offline"] == outputs["connector"]
    # What they agree on is the connector's documented plan: 20 split 14/5/1, then 14/5/1, and batch 1 replayed
    # after the crash before the remaining 17.
    progress, rows, checkpoint = outputs["connector"]
    assert [(p[0], p[2]) for p in progress] == [
        (20, {"TOPIC": {"0": 14, "1": 5, "2": 1}}), (20, {"TOPIC": {"0": 28, "1": 10, "2": 2}}),
        (17, {"TOPIC": {"0": 40, "1": 15, "2": 2}})]
    assert len(rows) == 57 and checkpoint["sources/0/0"] == '\x00v1\n{"TOPIC":{"0":0,"1":0,"2":0}}'


# --- the differences the Python Data Source API makes unavoidable (listed in streamlab/offline/source.py) ------


def test_unavoidable_no_kafka_metrics_and_another_description_in_progress(spark, stack, tmp_path):
    name = stack.topic(partitions=2)
    produce(stack.bootstrap, name, {0: 6, 1: 2})
    query, _ = run(stream(spark, stack, subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger=4),
                   tmp_path / "ck")
    source = query.recentProgress[0]["sources"][0]
    # What both report: the lag can be computed as latestOffset - endOffset on either stack.
    assert (json.loads(source["endOffset"]), json.loads(source["latestOffset"])) == (
        {name: {"0": 3, "1": 1}}, {name: {"0": 6, "1": 2}})
    if stack.name == "connector":
        assert source["metrics"] == {"avgOffsetsBehindLatest": "2.0", "maxOffsetsBehindLatest": "3",
                                     "minOffsetsBehindLatest": "1"}
        assert source["description"] == f"KafkaV2[Subscribe[{name}]]"
    else:  # a Python stream reader cannot report custom metrics, and Spark names its own Python stream class
        assert source["metrics"] == {}
        assert source["description"].startswith("org.apache.spark.sql.execution.datasources.v2.python."
                                                "PythonMicroBatchStream")


def test_unavoidable_a_subscription_matching_nothing_yet_runs_an_empty_batch_0(spark, stack, tmp_path):
    ran = []
    query = (stream(spark, stack, subscribePattern=f"^nothing-{uuid.uuid4().hex[:6]}-.*", startingOffsets="earliest")
             .writeStream.foreachBatch(lambda df, batch_id: ran.append((batch_id, df.count())))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination(60)
    assert query.exception() is None
    planned = sorted(p.name for p in (tmp_path / "ck" / "offsets").glob("[0-9]*"))
    if stack.name == "connector":  # no partition, no offset (latestOffset is null): no batch is planned
        assert (ran, planned) == ([], [])
    else:  # a Python reader must return an offset ({}), and Spark plans batch 0 on it: later batch ids are one up
        assert (ran, planned) == ([(0, 0)], ["0"])
        assert offsets_line(tmp_path / "ck", 0) == "{}"


def test_unavoidable_subscribe_pattern_is_read_by_pythons_re(spark, stack, tmp_path):
    tag = uuid.uuid4().hex[:6]
    name = stack.topic(partitions=1, prefix=f"re-{tag}")
    produce(stack.bootstrap, name, {0: 1})
    query, rows = run(stream(spark, stack, subscribePattern=rf"^re-{tag}-\p{{Alnum}}+$", startingOffsets="earliest"),
                      tmp_path / "ck")
    if stack.name == "connector":  # a Java regex
        assert query.exception() is None and rows == [(0, 0)]
    else:
        assert r"bad escape \p" in message(query.exception())
