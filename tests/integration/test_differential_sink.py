"""The differential test of the Kafka sink: df.write / writeStream on both stacks (Spark's connector against Apache
Kafka, the offline engine against noida-db), read back with kafka-python; the same records and the connector's
error texts must come out of both (see test_differential.py)."""
from __future__ import annotations

import time

import pytest

pytestmark = [pytest.mark.broker, pytest.mark.spark]

HEADERS = "array<struct<key:string,value:binary>>"


def read_back(topic: str, bootstrap: str) -> list[tuple]:
    """Every record of `topic` as (partition, key, value, headers, timestamp ms), in partition/offset order."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or [])]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        out = {tp: [] for tp in tps}
        deadline = time.monotonic() + 20
        while any(consumer.position(tp) < end[tp] for tp in tps):
            assert time.monotonic() < deadline, "could not read the topic back within 20 s"
            for tp, records in consumer.poll(timeout_ms=500).items():
                out[tp].extend((r.partition, r.key, r.value, list(r.headers), r.timestamp) for r in records)
        return [r for tp in tps for r in out[tp]]
    finally:
        consumer.close()


def write(df, stack, **options):
    """A batch write on `stack`."""
    writer = df.write.format(stack.format).option("kafka.bootstrap.servers", stack.bootstrap)
    for key, value in options.items():
        writer = writer.option(key, value)
    return writer


def test_keys_values_headers_and_partitions_round_trip_and_a_timestamp_column_is_ignored(spark, stack):
    name = stack.topic(partitions=3)
    base = int(time.time() * 1000) - 3_600_000  # recent: the broker's retention drops week-old records at once
    df = spark.sql(f"""
        SELECT cast(id AS string) AS key,
               cast(concat('v', id) AS binary) AS value,
               cast(id % 3 AS int) AS partition,
               array(named_struct('key', 'source', 'value', cast('test' AS binary)),
                     named_struct('key', 'n', 'value', cast(cast(id AS string) AS binary))) AS headers,
               timestamp_millis({base} + id) AS timestamp
        FROM range(6)""")
    before = int(time.time() * 1000)
    write(df, stack, topic=name).save()
    got = read_back(name, stack.bootstrap)
    assert sorted((p, k, v, h) for p, k, v, h, _ in got) == sorted(
        (i % 3, str(i).encode(), f"v{i}".encode(), [("source", b"test"), ("n", str(i).encode())]) for i in range(6))
    # The 4.2 connector has no timestamp column: every record carries the producer's time, not the column's.
    assert all(ts >= before - 1000 for *_, ts in got)


def test_a_row_with_a_null_key_and_a_null_value_is_written(spark, stack):
    name = stack.topic(partitions=1)
    write(spark.sql("SELECT cast(NULL AS string) AS key, cast(NULL AS binary) AS value"), stack, topic=name).save()
    assert [(k, v) for _, k, v, _, _ in read_back(name, stack.bootstrap)] == [(None, None)]


def test_string_value_without_key_goes_to_the_topic_option(spark, stack):
    name = stack.topic(partitions=1)
    write(spark.sql("SELECT concat('m', id) AS value FROM range(5)"), stack, topic=name).save()
    assert sorted((p, k, v, h) for p, k, v, h, _ in read_back(name, stack.bootstrap)) == \
        [(0, None, f"m{i}".encode(), []) for i in range(5)]


def test_topic_column_fans_out_and_the_option_overrides_it(spark, stack):
    even, odd, forced = stack.topic(), stack.topic(), stack.topic()
    df = spark.sql(f"SELECT IF(id % 2 = 0, '{even}', '{odd}') AS topic, cast(id AS string) AS value FROM range(6)")
    write(df, stack).save()  # no option: the column routes each row
    assert sorted(v for _, _, v, _, _ in read_back(even, stack.bootstrap)) == [b"0", b"2", b"4"]
    assert sorted(v for _, _, v, _, _ in read_back(odd, stack.bootstrap)) == [b"1", b"3", b"5"]
    write(df, stack, topic=f"  {forced} ").save()  # the option wins (trimmed, as in the connector)
    assert sorted(v for _, _, v, _, _ in read_back(forced, stack.bootstrap)) == [str(i).encode() for i in range(6)]
    assert len(read_back(even, stack.bootstrap)) == 3 and len(read_back(odd, stack.bootstrap)) == 3


@pytest.mark.parametrize("select, message", [
    ("cast(id AS string) AS key",
     "Required attribute 'value' not found"),
    ("id AS value",
     "value attribute unsupported type bigint. value must be a(n) string or binary"),
    ("cast(id AS int) AS key, 'x' AS value",
     "key attribute unsupported type int. key must be a(n) string or binary"),
    ("'x' AS value, 'p1' AS partition",
     "partition attribute unsupported type string. partition must be a(n) int"),
    ("'x' AS value, array('h') AS headers",
     f"headers attribute unsupported type array<string>. headers must be a(n) {HEADERS}"),
])
def test_schema_problems_fail_before_anything_is_written(spark, stack, select, message):
    from pyspark.errors import AnalysisException

    name = stack.topic()
    with pytest.raises(AnalysisException) as caught:  # raised on the driver, like the connector's
        write(spark.sql(f"SELECT {select} FROM range(3)"), stack, topic=name).save()
    assert str(caught.value) == message
    assert read_back(name, stack.bootstrap) == []


def test_no_topic_anywhere_and_a_null_topic(spark, stack):
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException) as caught:
        write(spark.sql("SELECT 'x' AS value"), stack).save()
    assert str(caught.value) == ("topic option required when no 'topic' attribute is present. Use the topic "
                                 "option for setting a topic.")
    with pytest.raises(Exception) as caught:
        write(spark.sql("SELECT cast(NULL AS string) AS topic, 'x' AS value"), stack).save()
    assert ("The Kafka message data sent to the producer contains a null topic. Use the `topic` option for setting a "
            "default topic.") in str(caught.value)
    with pytest.raises(Exception) as caught:
        write(spark.sql("SELECT 1 AS topic, 'x' AS value"), stack).save()
    assert "topic attribute unsupported type int. topic must be a(n) string" in str(caught.value)


@pytest.mark.parametrize("option, message", [
    ("kafka.key.serializer",
     "Kafka option 'key.serializer' is not supported as keys are serialized with ByteArraySerializer."),
    ("kafka.value.serializer",
     "Kafka option 'value.serializer' is not supported as value are serialized with ByteArraySerializer."),
])
def test_serializer_options_are_rejected(spark, stack, option, message):
    from pyspark.errors import IllegalArgumentException

    name = stack.topic()
    with pytest.raises(IllegalArgumentException) as caught:
        write(spark.sql("SELECT 'x' AS value"), stack, topic=name,
              **{option: "org.apache.kafka.common.serialization.StringSerializer"}).save()
    assert str(caught.value) == message
    assert read_back(name, stack.bootstrap) == []


def test_bootstrap_servers_are_required(spark, stack):
    name = stack.topic()
    with pytest.raises(Exception) as caught:
        spark.sql("SELECT 'x' AS value").write.format(stack.format).option("topic", name).save()
    assert "Kafka option bootstrap.servers is not set. Please make sure it is set and retry." in str(caught.value)
    assert read_back(name, stack.bootstrap) == []
    # Unavoidable: the connector's SparkException is not one PySpark converts, and only the JVM raises Py4JJavaError.
    assert type(caught.value).__name__ == ("Py4JJavaError" if stack.name == "connector" else "PySparkException")


def test_save_modes_append_and_errorifexists_only(spark, stack):
    from pyspark.errors import AnalysisException

    name = stack.topic()
    df = spark.sql("SELECT 'x' AS value")
    write(df, stack, topic=name).save()  # the default mode is ErrorIfExists
    write(df, stack, topic=name).mode("append").save()
    write(df, stack, topic=name).mode("errorifexists").save()
    write(df, stack, topic=name).save(mode="error")
    for mode in ("overwrite", "ignore"):
        with pytest.raises(AnalysisException) as caught:
            write(df, stack, topic=name).mode(mode).save()
        assert str(caught.value) == (f"Save mode {mode.capitalize()} not allowed for Kafka. Allowed save modes "
                                     "are Append and ErrorIfExists (default).")
    with pytest.raises(AnalysisException):  # the mode may come before the format, as in any writer chain
        df.write.mode("overwrite").format(stack.format).option("kafka.bootstrap.servers", stack.bootstrap) \
            .option("topic", name).save()
    assert len(read_back(name, stack.bootstrap)) == 4


def test_transactional_id_does_not_make_the_sink_transactional(spark, stack):
    name = stack.topic()
    started = time.monotonic()
    with pytest.raises(Exception) as caught:
        write(spark.sql("SELECT 'x' AS value FROM range(3)").coalesce(1), stack, topic=name,
              **{"kafka.transactional.id": "my-app-tx", "kafka.delivery.timeout.ms": "1500",
                 "kafka.request.timeout.ms": "1000", "kafka.linger.ms": "0"}).save()
    # Spark never calls initTransactions: the producer holds the records until delivery.timeout.ms, then fails.
    assert f"Cannot add partition {name}-0 to transaction before completing a call to initTransactions" \
        in str(caught.value)
    assert time.monotonic() - started >= 1.5
    assert read_back(name, stack.bootstrap) == []


def test_a_partition_the_topic_lacks_fails_the_write_after_max_block_ms(spark, stack):
    name = stack.topic(partitions=1)
    with pytest.raises(Exception) as caught:
        write(spark.sql("SELECT 'x' AS value, 5 AS partition"), stack, topic=name,
              **{"kafka.max.block.ms": "1500"}).save()
    assert f"Partition 5 of topic {name} with partition count 1 is not present in metadata after 1500 ms." \
        in str(caught.value)


def test_producer_options_reach_kafka_python(spark, stack):
    name = stack.topic(partitions=2)
    df = spark.sql("SELECT cast(id AS string) AS key, repeat('x', 100) AS value FROM range(2000)")
    write(df, stack, topic=name, **{"kafka.acks": "all", "kafka.linger.ms": "5", "kafka.batch.size": "65536",
                                        "kafka.compression.type": "gzip", "kafka.client.id": "sink-test"}).save()
    records = read_back(name, stack.bootstrap)
    assert len(records) == 2000 and {v for _, _, v, _, _ in records} == {b"x" * 100}
    with pytest.raises(Exception) as caught:
        write(df, stack, topic=name, **{"kafka.linger.ms": "soon"}).save()
    assert "Invalid value soon for configuration linger.ms: Not a number of type LONG" in str(caught.value)


def test_streaming_write_commits_every_batch(spark, stack, tmp_path):
    name = stack.topic(partitions=2)
    stream = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 50).load()
              .selectExpr("cast(value AS string) AS key", "cast(value AS string) AS value"))
    query = (stream.writeStream.format(stack.format).option("kafka.bootstrap.servers", stack.bootstrap)
             .option("topic", name).option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        deadline = time.monotonic() + 60
        while (query.lastProgress or {}).get("batchId", -1) < 2:
            assert query.exception() is None and time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        query.stop()
    written = sorted(int(v) for _, _, v, _, _ in read_back(name, stack.bootstrap))
    # Batches 0-2 were committed, so all their rows are there, once; stop() may cut a later batch short, whose
    # rows a restart would write again (at-least-once).
    assert set(range(150)) <= set(written) and len(set(written)) == len(written)


def progress_of_two_batches(df, stack, name, checkpoint, mode="append") -> list:
    """The progress of batches 0 and 1 of a streaming write of `df` to topic `name` on `stack`."""
    query = (df.writeStream.outputMode(mode).format(stack.format).option("kafka.bootstrap.servers", stack.bootstrap)
             .option("topic", name).option("checkpointLocation", str(checkpoint))
             .trigger(processingTime="300 milliseconds").start())
    try:
        deadline = time.monotonic() + 60
        while (query.lastProgress or {}).get("batchId", -1) < 1:
            assert query.exception() is None and time.monotonic() < deadline
            time.sleep(0.2)
        return [p for p in query.recentProgress if p["batchId"] <= 1]
    finally:
        query.stop()


def test_streaming_progress_counts_the_rows_written_to_kafka(spark, stack, tmp_path):
    name = stack.topic(partitions=2)
    rows = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 7).load()
            .selectExpr("cast(value AS string) AS key", "cast(value AS string) AS value"))
    progress = progress_of_two_batches(rows, stack, name, tmp_path / "cp")
    # sink.numOutputRows is the number of rows the V2 write's tasks wrote (both stacks write through
    # WriteToDataSourceV2Exec; the connector's KafkaDataWriter.write sends one record per row,
    # KafkaDataWriter.scala:50 in spark-sql-kafka-0-10 4.2.0).
    assert [(p["numInputRows"], p["sink"]["numOutputRows"]) for p in progress] == [(7, 7), (7, 7)]
    assert len(read_back(name, stack.bootstrap)) >= 14


def test_one_hundred_thousand_records_all_arrive(spark, stack):
    """A bulk write delivers every record (its speed is measured by `make bench`, not here)."""
    name = stack.topic(partitions=3)
    df = spark.sql("SELECT cast(id AS string) AS key, to_json(named_struct('id', id)) AS value FROM range(100000)")
    write(df, stack, topic=name).save()
    from streamlab.lab.topics import describe_topic

    assert sum(last for _, last in describe_topic(name, stack.bootstrap).values()) == 100_000


def test_streaming_write_with_a_bad_schema_starts_and_fails_in_its_first_batch(spark, stack, tmp_path):
    from pyspark.errors import StreamingQueryException

    name = stack.topic()
    stream = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load()
    query = (stream.selectExpr("cast(value AS string) AS key").writeStream.format(stack.format)
             .option("kafka.bootstrap.servers", stack.bootstrap).option("topic", name)
             .option("checkpointLocation", str(tmp_path / "cp")).start())
    with pytest.raises(StreamingQueryException) as caught:
        query.awaitTermination(60)
    assert "Required attribute 'value' not found" in str(caught.value)
    assert query.recentProgress == [] and read_back(name, stack.bootstrap) == []


def test_update_mode_aggregation_writes_the_updated_rows(spark, stack, tmp_path):
    name = stack.topic()
    counts = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 9).load()
              .selectExpr("cast(value % 3 AS string) AS key").groupBy("key").count()
              .selectExpr("key", "cast(count AS string) AS value"))
    query = (counts.writeStream.outputMode("update").format(stack.format)
             .option("kafka.bootstrap.servers", stack.bootstrap).option("topic", name)
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(processingTime="300 milliseconds").start())
    try:
        deadline = time.monotonic() + 60
        while (query.lastProgress or {}).get("batchId", -1) < 1:
            assert query.exception() is None and time.monotonic() < deadline
            time.sleep(0.2)
        sink = query.lastProgress["sink"]["description"]
    finally:
        query.stop()
    got = sorted((k, v) for _, k, v, _, _ in read_back(name, stack.bootstrap))
    batches = len(got) // 3  # every batch updates the three keys, each by 3 more rows
    assert batches >= 2 and got == sorted((str(k).encode(), str(3 * b).encode())
                                          for k in range(3) for b in range(1, batches + 1))
    # Unavoidable: Spark refuses Update to a Python sink, so the offline engine writes each batch by foreachBatch.
    assert (sink == "ForeachBatchSink") == (stack.name == "offline"), sink


# --- the differences kafka-python and the Python Data Source API make unavoidable (streamlab/offline/source.py) -----


def test_unavoidable_sink_progress_names_another_sink_and_update_mode_counts_no_rows(spark, stack, tmp_path):
    rows = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 9).load()
            .selectExpr("cast(value AS string) AS key", "cast(value AS string) AS value"))
    append = progress_of_two_batches(rows, stack, stack.topic(), tmp_path / "append")
    counts = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 9).load()
              .selectExpr("cast(value % 3 AS string) AS key").groupBy("key").count()
              .selectExpr("key", "cast(count AS string) AS value"))
    update = progress_of_two_batches(counts, stack, stack.topic(), tmp_path / "update", mode="update")
    if stack.name == "connector":
        # Each batch updates the 3 keys: 3 rows written; the sink is the connector's table.
        assert [(p["numInputRows"], p["sink"]["numOutputRows"]) for p in update] == [(9, 3), (9, 3)]
        table = "org.apache.spark.sql.kafka010.KafkaSourceProvider$KafkaTable@"
        assert append[0]["sink"]["description"].startswith(table)
        assert update[0]["sink"]["description"].startswith(table)
    else:
        # Spark names the Python sink by its PythonTable; and Update mode runs through foreachBatch (Spark refuses
        # Update for Python sinks), a V1 sink whose progress has no row count: numOutputRows is -1.
        assert [(p["numInputRows"], p["sink"]["numOutputRows"]) for p in update] == [(9, -1), (9, -1)]
        assert append[0]["sink"]["description"].startswith(
            "org.apache.spark.sql.execution.datasources.v2.python.PythonTable@")
        assert update[0]["sink"]["description"] == "ForeachBatchSink"
    # What both report: the rows written in Append mode.
    assert [p["sink"]["numOutputRows"] for p in append] == [9, 9]


def test_unavoidable_a_null_header_value_cannot_be_written(spark, stack):
    name = stack.topic(partitions=1)
    df = spark.sql("SELECT 'x' AS value, array(named_struct('key', 'k', 'value', cast(NULL AS binary))) AS headers")
    if stack.name == "connector":
        write(df, stack, topic=name).save()
        assert [h for _, _, _, h, _ in read_back(name, stack.bootstrap)] == [[("k", None)]]
    else:  # kafka-python's producer refuses (str, None) headers
        with pytest.raises(Exception) as caught:
            write(df, stack, topic=name).save()
        assert "cannot write null header values" in str(caught.value)
        assert read_back(name, stack.bootstrap) == []


def test_unavoidable_java_only_producer_options_are_ignored_with_a_warning(spark, stack):
    import warnings

    name = stack.topic(partitions=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        write(spark.sql("SELECT 'x' AS value"), stack, topic=name, **{"kafka.buffer.memory": "1048576"}).save()
    ignored = [str(w.message) for w in caught if "kafka.buffer.memory" in str(w.message)]
    assert len(read_back(name, stack.bootstrap)) == 1
    if stack.name == "connector":
        assert ignored == []
    else:
        assert ignored == ["Kafka option 'kafka.buffer.memory' only means something to Java's Kafka client; it is "
                           "ignored."]
