"""`make bench`: ratios measured side by side in one run (never a timed test: these machines are shared)."""
from __future__ import annotations

import statistics
import sys
import time

RECORDS = 200_000
BATCH = 2_000


def _raw_consumer_seconds(topic: str, bootstrap: str, expected: int, check_crcs: bool = True) -> float:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, check_crcs=check_crcs,
                             max_partition_fetch_bytes=8 << 20, fetch_max_bytes=64 << 20)
    parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
    consumer.assign(parts)
    consumer.seek_to_beginning()
    start, seen = time.perf_counter(), 0
    while seen < expected:
        for records in consumer.poll(timeout_ms=1000, max_records=50_000).values():
            seen += len(records)
    elapsed = time.perf_counter() - start
    consumer.close()
    return elapsed


def _engine_seconds(spark, topic: str, bootstrap: str, expected: int) -> float:
    start = time.perf_counter()
    rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).load().selectExpr("sum(length(value))").first())
    elapsed = time.perf_counter() - start
    assert rows is not None
    return elapsed


def _write_seconds(spark, bootstrap: str) -> tuple[float, float]:
    from streamlab import topics
    from streamlab.producer import produce

    df = spark.sql(f"SELECT cast(id AS string) AS key, repeat('x', 100) AS value FROM range({RECORDS})").cache()
    df.count()
    sink_topic, raw_topic = (topics.create_topic(topics.unique_name(p), 2) for p in ("bench-sink", "bench-raw"))
    try:
        start = time.perf_counter()
        df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", sink_topic).save()
        sink_s = time.perf_counter() - start
        start = time.perf_counter()
        produce(raw_topic, RECORDS, value_fn=lambda i: "x" * 100, progress=False)
        raw_s = time.perf_counter() - start
    finally:
        df.unpersist()
        topics.delete_topic(sink_topic, raw_topic)
    return sink_s, raw_s


def _batch_ms(query) -> list[float]:
    return [p["durationMs"]["triggerExecution"] for p in query.recentProgress if p["numInputRows"]]


def _per_batch_overhead(spark, topic: str, bootstrap: str) -> tuple[float, float]:
    kafka = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", BATCH).load())
    q = kafka.writeStream.format("noop").trigger(availableNow=True).start()
    q.awaitTermination()
    kafka_ms = statistics.median(_batch_ms(q)[1:21] or _batch_ms(q))
    rate = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", BATCH).load()
    q = rate.writeStream.format("noop").trigger(processingTime="0 seconds").start()
    while len(_batch_ms(q)) < 21:
        time.sleep(0.2)
    q.stop()
    rate_ms = statistics.median(_batch_ms(q)[1:21])
    return kafka_ms, rate_ms


def main() -> int:
    """Measure and print the benchmark ratios."""
    import streamlab
    from streamlab import topics
    from streamlab.producer import produce

    spark, bootstrap = streamlab.setup()
    topic = topics.create_topic(topics.unique_name("bench"), 2)
    try:
        produce(topic, RECORDS)
        spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option(
            "subscribe", topic).load().count()  # warm the Python workers before timing
        raw = _raw_consumer_seconds(topic, bootstrap, RECORDS)
        raw_no_crc = _raw_consumer_seconds(topic, bootstrap, RECORDS, check_crcs=False)
        eng = _engine_seconds(spark, topic, bootstrap, RECORDS)
        print(f"read {RECORDS:,} records: kafka-python consumer {RECORDS / raw:,.0f} rec/s "
              f"({RECORDS / raw_no_crc:,.0f} rec/s without CRC checks), offline engine {RECORDS / eng:,.0f} rec/s")
        print(f"  engine / raw consumer read rate: {raw / eng:.2f}  (target >= 0.70)")
        # the engine skips CRC checks by default (kafka.check.crcs=true restores them): the like-for-like ratio
        print(f"  engine / raw consumer without CRC checks: {raw_no_crc / eng:.2f}")
        sink_s, producer_s = _write_seconds(spark, bootstrap)
        print(f"write {RECORDS:,} records: kafka-python producer {RECORDS / producer_s:,.0f} rec/s, "
              f"offline engine's sink {RECORDS / sink_s:,.0f} rec/s")
        print(f"  sink / raw producer write rate: {producer_s / sink_s:.2f}")
        kafka_ms, rate_ms = _per_batch_overhead(spark, topic, bootstrap)
        print(f"median batch of {BATCH:,} rows: kafka source {kafka_ms:.0f} ms, built-in rate source {rate_ms:.0f} ms")
        print(f"  kafka batch / rate batch time: {kafka_ms / rate_ms:.2f}")
    finally:
        topics.delete_topic(topic)
    try:
        from grader import timing
    except ImportError:
        print("grading: grader.timing is not available")
    else:
        plain, graded = timing("notebooks/00-setup/00-setup.ipynb")
        print(f"00-setup: run {plain:.1f} s, check with hidden tests {graded:.1f} s")
        print(f"  check / run time: {graded / plain:.2f}")
    streamlab.cleanup(spark)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
