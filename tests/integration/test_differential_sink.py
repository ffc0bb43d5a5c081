"""The Kafka sink behind df.write / writeStream .format("kafka"): write with Spark, read back with kafka-python."""
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


def write(df, bootstrap, **options):
    writer = df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        writer = writer.option(key, value)
    return writer


def test_keys_values_headers_partitions_and_timestamps_round_trip(spark, bootstrap, topic):
    name = topic(partitions=3)
    base = int(time.time() * 1000) - 3_600_000  # recent: the broker's retention drops week-old records at once
    df = spark.sql(f"""
        SELECT cast(id AS string) AS key,
               cast(concat('v', id) AS binary) AS value,
               cast(id % 3 AS int) AS partition,
               array(named_struct('key', 'source', 'value', cast('test' AS binary)),
                     named_struct('key', 'n', 'value', cast(cast(id AS string) AS binary))) AS headers,
               timestamp_millis({base} + id) AS timestamp
        FROM range(6)""")
    write(df, bootstrap, topic=name).save()
    got = sorted((p, k, v, h, ts) for p, k, v, h, ts in read_back(name, bootstrap))
    want = sorted((i % 3, str(i).encode(), f"v{i}".encode(), [("source", b"test"), ("n", str(i).encode())],
                   base + i) for i in range(6))
    assert got == want


def test_string_value_without_key_goes_to_the_topic_option(spark, bootstrap, topic):
    name = topic(partitions=1)
    write(spark.sql("SELECT concat('m', id) AS value FROM range(5)"), bootstrap, topic=name).save()
    assert sorted((p, k, v, h) for p, k, v, h, _ in read_back(name, bootstrap)) == \
        [(0, None, f"m{i}".encode(), []) for i in range(5)]


def test_topic_column_fans_out_and_the_option_overrides_it(spark, bootstrap, topic):
    even, odd, forced = topic(), topic(), topic()
    df = spark.sql(f"SELECT IF(id % 2 = 0, '{even}', '{odd}') AS topic, cast(id AS string) AS value FROM range(6)")
    write(df, bootstrap).save()  # no option: the column routes each row
    assert sorted(v for _, _, v, _, _ in read_back(even, bootstrap)) == [b"0", b"2", b"4"]
    assert sorted(v for _, _, v, _, _ in read_back(odd, bootstrap)) == [b"1", b"3", b"5"]
    write(df, bootstrap, topic=f"  {forced} ").save()  # the option wins (trimmed, as in the connector)
    assert sorted(v for _, _, v, _, _ in read_back(forced, bootstrap)) == [str(i).encode() for i in range(6)]
    assert len(read_back(even, bootstrap)) == 3 and len(read_back(odd, bootstrap)) == 3


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
def test_schema_problems_fail_before_anything_is_written(spark, bootstrap, topic, select, message):
    from pyspark.errors import AnalysisException

    name = topic()
    with pytest.raises(AnalysisException) as caught:  # raised on the driver, like the connector's
        write(spark.sql(f"SELECT {select} FROM range(3)"), bootstrap, topic=name).save()
    assert str(caught.value) == message
    assert read_back(name, bootstrap) == []


def test_no_topic_anywhere_and_a_null_topic(spark, bootstrap, topic):
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException) as caught:
        write(spark.sql("SELECT 'x' AS value"), bootstrap).save()
    assert str(caught.value) == ("topic option required when no 'topic' attribute is present. Use the topic "
                                 "option for setting a topic.")
    with pytest.raises(Exception) as caught:
        write(spark.sql("SELECT cast(NULL AS string) AS topic, 'x' AS value"), bootstrap).save()
    assert "null topic present in the data. Use the topic option for setting a default topic." in str(caught.value)
    with pytest.raises(Exception) as caught:
        write(spark.sql("SELECT 1 AS topic, 'x' AS value"), bootstrap).save()
    assert "topic attribute unsupported type int. topic must be a(n) string" in str(caught.value)


@pytest.mark.parametrize("option, message", [
    ("kafka.key.serializer",
     "Kafka option 'key.serializer' is not supported as keys are serialized with ByteArraySerializer."),
    ("kafka.value.serializer",
     "Kafka option 'value.serializer' is not supported as value are serialized with ByteArraySerializer."),
])
def test_serializer_options_are_rejected(spark, bootstrap, topic, option, message):
    from pyspark.errors import IllegalArgumentException

    name = topic()
    with pytest.raises(IllegalArgumentException) as caught:
        write(spark.sql("SELECT 'x' AS value"), bootstrap, topic=name,
              **{option: "org.apache.kafka.common.serialization.StringSerializer"}).save()
    assert str(caught.value) == message
    assert read_back(name, bootstrap) == []


def test_bootstrap_servers_are_required(spark, topic):
    from pyspark.errors import IllegalArgumentException

    with pytest.raises(IllegalArgumentException) as caught:
        spark.sql("SELECT 'x' AS value").write.format("kafka").option("topic", topic()).save()
    assert str(caught.value) == 'Missing required configuration "bootstrap.servers" which has no default value.'



def test_save_modes_append_and_errorifexists_only(spark, bootstrap, topic):
    from pyspark.errors import AnalysisException

    name = topic()
    df = spark.sql("SELECT 'x' AS value")
    write(df, bootstrap, topic=name).save()  # the default mode is ErrorIfExists
    write(df, bootstrap, topic=name).mode("append").save()
    write(df, bootstrap, topic=name).mode("errorifexists").save()
    write(df, bootstrap, topic=name).save(mode="error")
    for mode in ("overwrite", "ignore"):
        with pytest.raises(AnalysisException) as caught:
            write(df, bootstrap, topic=name).mode(mode).save()
        assert str(caught.value) == (f"Save mode {mode.capitalize()} not allowed for Kafka. Allowed save modes "
                                     "are Append and ErrorIfExists (default).")
    with pytest.raises(AnalysisException):  # the mode may come before the format, as in any writer chain
        df.write.mode("overwrite").format("kafka").option("kafka.bootstrap.servers", bootstrap) \
            .option("topic", name).save()
    assert len(read_back(name, bootstrap)) == 4


def test_transactional_id_does_not_make_the_sink_transactional(spark, bootstrap, topic):
    name = topic()
    with pytest.raises(Exception) as caught:
        write(spark.sql("SELECT 'x' AS value FROM range(3)"), bootstrap, topic=name,
              **{"kafka.transactional.id": "my-app-tx"}).save()
    # Spark never calls initTransactions, so the producer refuses every send and the task fails.
    assert ("IllegalStateException: Cannot perform a 'send' before completing a call to initTransactions when "
            "transactions are enabled.") in str(caught.value)
    assert read_back(name, bootstrap) == []


def test_a_failed_send_fails_the_write(spark, bootstrap, topic):
    name = topic(partitions=1)
    with pytest.raises(Exception) as caught:
        write(spark.sql("SELECT 'x' AS value, 5 AS partition"), bootstrap, topic=name).save()
    assert f"Unrecognized partition 5 for topic {name}" in str(caught.value)


def test_producer_options_reach_kafka_python(spark, bootstrap, topic):
    name = topic(partitions=2)
    df = spark.sql("SELECT cast(id AS string) AS key, repeat('x', 100) AS value FROM range(2000)")
    write(df, bootstrap, topic=name, **{"kafka.acks": "all", "kafka.linger.ms": "5", "kafka.batch.size": "65536",
                                        "kafka.compression.type": "gzip", "kafka.client.id": "sink-test"}).save()
    records = read_back(name, bootstrap)
    assert len(records) == 2000 and {v for _, _, v, _, _ in records} == {b"x" * 100}
    with pytest.raises(Exception) as caught:
        write(df, bootstrap, topic=name, **{"kafka.linger.ms": "soon"}).save()
    assert str(caught.value) == "Invalid value soon for configuration linger.ms: Not a number of type INT"


def test_streaming_write_commits_every_batch(spark, bootstrap, topic, tmp_path):
    name = topic(partitions=2)
    stream = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 50).load()
              .selectExpr("cast(value AS string) AS key", "cast(value AS string) AS value"))
    query = (stream.writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("topic", name).option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        deadline = time.monotonic() + 60
        while (query.lastProgress or {}).get("batchId", -1) < 2:
            assert query.exception() is None and time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        query.stop()
    written = sorted(int(v) for _, _, v, _, _ in read_back(name, bootstrap))
    assert len(written) >= 150 and written == list(range(len(written)))


def test_one_hundred_thousand_records_all_arrive(spark, bootstrap, topic):
    """A bulk write delivers every record (its speed is measured by `make bench`, not here)."""
    name = topic(partitions=3)
    df = spark.sql("SELECT cast(id AS string) AS key, to_json(named_struct('id', id)) AS value FROM range(100000)")
    write(df, bootstrap, topic=name).save()
    from streamlab.topics import describe_topic

    assert sum(last for _, last in describe_topic(name, bootstrap).values()) == 100_000


def test_streaming_write_with_a_bad_schema_fails_at_start(spark, bootstrap, topic, tmp_path):
    from pyspark.errors import AnalysisException

    stream = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load()
    with pytest.raises(AnalysisException) as caught:
        (stream.selectExpr("cast(value AS string) AS key").writeStream.format("kafka")
         .option("kafka.bootstrap.servers", bootstrap).option("topic", topic())
         .option("checkpointLocation", str(tmp_path / "cp")).start())
    assert str(caught.value) == "Required attribute 'value' not found"
    assert spark.streams.active == []


def test_update_mode_aggregation_writes_the_updated_rows(spark, bootstrap, topic, tmp_path):
    name = topic()
    counts = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 9).load()
              .selectExpr("cast(value % 3 AS string) AS key").groupBy("key").count()
              .selectExpr("key", "cast(count AS string) AS value"))
    query = (counts.writeStream.outputMode("update").format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("topic", name).option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(processingTime="300 milliseconds").start())
    try:
        deadline = time.monotonic() + 60
        while (query.lastProgress or {}).get("batchId", -1) < 1:
            assert query.exception() is None and time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        query.stop()
    got = sorted((k, v) for _, k, v, _, _ in read_back(name, bootstrap))
    batches = len(got) // 3  # every batch updates the three keys, each by 3 more rows
    assert batches >= 2 and got == sorted((str(k).encode(), str(3 * b).encode())
                                          for k in range(3) for b in range(1, batches + 1))
