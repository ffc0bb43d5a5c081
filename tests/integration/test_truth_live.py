"""Issue 15's corrections that a live run can prove, on Spark's connector against the lab's Kafka broker: the memory
myth, who checks `kafka.bootstrap.servers`, `once` without a Python warning, and where the DStreams proof puts its
settings. Each test cites the line of Spark 4.2.0's source (the artifacts' -sources.jar on Maven Central; for
spark-streaming and spark-streaming-kafka-0-10, which publish none for 4.2.0, the released class files' line numbers)
or PySpark 4.2.0 that decides it."""
from __future__ import annotations

import warnings

import pytest


def test_an_uncapped_map_only_batch_does_not_hold_the_burst_a_collecting_one_does(spark, topic):
    # A Kafka task streams its range record by record (KafkaBatchPartitionReader.scala:92-105); collect() gathers
    # every row on the driver first (Dataset.scala:2138-2146: plan.executeCollect(), then served to Python).
    from streamlab.observe import memory

    burst, size = topic(partitions=2, prefix="truth-memory"), 20_000
    memory.fill_burst(spark, burst, size, value_bytes=1_000)
    data_mib = size * 1_000 / memory.MIB
    streamed = memory.batch_memory(spark, burst, memory.map_only)
    collected = memory.batch_memory(spark, burst, memory.collects)
    assert streamed["batches"] == collected["batches"] == [size], "both read the burst in one uncapped batch"
    # The same batch: what the collecting sink held beyond the streaming one is the batch itself (rows and strings
    # take more room on the heap than the bytes in Kafka), while a map-only batch holds a fixed amount (consumers,
    # plans), a fraction of what collect() holds.
    assert collected["heap_mib"] - streamed["heap_mib"] > 0.8 * data_mib, (streamed, collected, data_mib)
    assert streamed["heap_mib"] < collected["heap_mib"] / 3, (streamed, collected)


def test_the_source_checks_bootstrap_servers_at_load_the_sink_does_not(spark, topic):
    # KafkaSourceProvider.scala:334-338 (validateGeneralOptions, source side only); createRelation for a batch
    # write (171-189) goes straight to KafkaWriter.write: the producer's own configuration check fails in the task.
    from streamlab.errors import first_line

    with pytest.raises(Exception, match="Option 'kafka.bootstrap.servers' must be specified"):
        spark.readStream.format("kafka").option("subscribe", "anything").load()
    with pytest.raises(Exception) as failed:
        spark.range(1).selectExpr("'x' AS value").write.format("kafka").option("topic", topic()).save()
    error = str(failed.value)
    assert "must be specified" not in first_line(failed.value) and "bootstrap.servers" in error


def test_pyspark_warns_nothing_for_trigger_once(spark, topic):
    # pyspark/sql/streaming/readwriter.py:1442-1452: trigger(once=True) calls Trigger.Once() and nothing else;
    # Trigger.java:97-102 only annotates it @Deprecated.
    from streamlab.course import claims

    source = topic(partitions=1, prefix="truth-once")
    claims.fill(source, {0: 5})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        run = claims.available_now(spark, source, {"startingOffsets": "earliest"}, trigger={"once": True})
    assert [b["rows"] for b in run["batches"]] == [5] and run["error"] is None
    assert not [w for w in seen if "once" in str(w.message).lower()], [str(w.message) for w in seen]


def test_the_dstreams_proof_puts_its_settings_on_the_spark_conf_and_restores_it(spark):
    # DStreams read spark.streaming.* from the SparkContext's SparkConf; spark.conf.set never reaches it
    # (spark-streaming-kafka-0-10_2.13 4.2.0: KafkaUtils.scala:115 builds
    # DefaultPerPartitionConfig(ssc.sparkContext.getReadOnlyConf), PerPartitionConfig.scala:40-42 reads
    # MAX_RATE_PER_PARTITION from it; DirectKafkaInputDStream.scala:60-61 and 122-123 read initialRate and, through
    # spark-streaming's RateController.scala:90, backpressure.enabled from the same conf). Nothing in sql,
    # sql-kafka-0-10, sql-api, catalyst or core reads these keys (grep over their 4.2.0 sources jars: no hit).
    from streamlab.course import claims

    key = "spark.streaming.kafka.maxRatePerPartition"
    spark.conf.set(key, "7")
    try:
        assert spark.sparkContext.getConf().get(key) is None, "spark.conf.set should not reach the SparkConf"
    finally:
        spark.conf.unset(key)
    with claims.with_spark_conf(spark, claims.DSTREAM_SETTINGS):
        assert spark.sparkContext.getConf().get(key) == "10"
        assert spark.conf.get(key) == "10"
    assert spark.sparkContext.getConf().get(key) is None and spark.conf.get(key, None) is None
