"""Real-time Mode (Spark 4.1, SPARK-53736; `trigger(realTime=...)` in PySpark 4.2) live on the lab's broker.

What modules 5 and 8 say about it, each proven here with Spark's own error or a measurement, the source line of
Spark 4.2.0 that makes it so cited next to each assertion (paths under the sources' artifact folders:
sql = spark-sql_2.13, catalyst = spark-catalyst_2.13, kafka = spark-sql-kafka-0-10_2.13).
"""
from __future__ import annotations

import time

import pytest

from streamlab.lab.producer import produce
from streamlab.lab import topics
from streamlab.observe import latency

pytestmark = [pytest.mark.broker, pytest.mark.spark]


def test_what_realtime_mode_refuses_fails_with_sparks_own_error(spark, topic):
    name = topic(partitions=2)
    errors = latency.refusals(spark, name)
    # update only: catalyst/.../analysis/UnsupportedOperationChecker.scala:643-646, called by
    # sql/.../streaming/runtime/ResolveWriteToStream.scala:55-57 when the query is started.
    assert "STREAMING_REAL_TIME_MODE.OUTPUT_MODE_NOT_SUPPORTED" in errors["outputMode append"]
    # The duration is at least spark.sql.streaming.realTimeMode.minBatchDuration (5000 ms,
    # catalyst/.../internal/SQLConf.scala:3537-3541), checked at start: sql/.../classic/StreamingQueryManager.scala:194-205.
    assert "INVALID_STREAMING_REAL_TIME_MODE_TRIGGER_INTERVAL" in errors['realTime="1 second"']
    assert "5000 ms minimum" in errors['realTime="1 second"']
    # Only a source implementing SupportsRealTimeMode: sql/.../runtime/MicroBatchExecution.scala:341-349; in Spark
    # the Kafka stream is the one (kafka/.../KafkaMicroBatchStream.scala:64, `with SupportsRealTimeMode`).
    assert "STREAMING_REAL_TIME_MODE.INPUT_STREAM_NOT_SUPPORTED" in errors["the rate source"]
    assert "RateStreamMicroBatchStream" in errors["the rate source"]
    # foreachBatch's ForeachBatchSink is not in the sink allowlist (Kafka, console, ContinuousMemorySink, foreach):
    # sql/.../runtime/RealTimeModeAllowlist.scala:28-33 and 86-97, checked by sql/.../classic/DataStreamWriter.scala:311-316.
    assert "OPERATOR_OR_SINK_NOT_IN_ALLOWLIST" in errors["foreachBatch"]
    assert "ForeachBatchSink" in errors["foreachBatch"]
    # So is `format("memory")`'s MemorySink (DataStreamWriter.scala:237; only ContinuousMemorySink is listed).
    assert "OPERATOR_OR_SINK_NOT_IN_ALLOWLIST" in errors["the memory sink"] and "MemorySink" in errors["the memory sink"]
    # Stateful operators (and the shuffle they need) are not in the operator allowlist in 4.2: RealTimeModeAllowlist
    # .scala:35-60, checked on the planned batch at sql/.../runtime/MicroBatchExecution.scala:1220-1225.
    assert "OPERATOR_OR_SINK_NOT_IN_ALLOWLIST" in errors["groupBy().count() (stateful)"]
    assert "HashAggregateExec" in errors["groupBy().count() (stateful)"]
    # The source's trigger-bound options: kafka/.../KafkaMicroBatchStream.scala:230-255 (planInputPartitions for Real-time
    # Mode refuses maxOffsetsPerTrigger, minOffsetsPerTrigger, minPartitions, endingTimestamp, maxTriggerDelay).
    assert errors["maxOffsetsPerTrigger"] == (
        "UnsupportedOperationException: maxOffsetsPerTrigger is not compatible with real time mode")
    assert errors["minPartitions"] == "UnsupportedOperationException: minpartitions is not compatible with real time mode"


def test_realtime_median_latency_is_below_micro_batch_on_the_same_stream(spark, bootstrap):
    import streamlab

    # AQE on (the session's default) does not stop a Real-time query: Spark turns it off for the query's batches with
    # a warning, sql/.../runtime/MicroBatchExecution.scala:588-590; it is not a refusal.
    assert spark.conf.get("spark.sql.adaptive.enabled") == "true"
    try:
        # A 10 s checkpoint interval, so that the 4 s measured sit inside one batch even on a busy machine: the
        # duration is a checkpoint interval, not a latency target (the median does not wait for it).
        result = latency.compare(spark, seconds=4.0, rate=100, real_time={"realTime": "10 seconds"})
    finally:
        streamlab.cleanup(spark)
    micro, real_time = result.runs
    assert len(micro.points) > 50 and len(real_time.points) > 50, result.table()
    # The relation the course teaches, measured in one run (never a timed threshold).
    assert real_time.median() < micro.median(), result.table()
    assert result.ratio() > 1


def test_a_partition_without_a_task_slot_is_never_read(spark, bootstrap, topic, tmp_path):
    # One long-running task per partition for the whole batch (sql/.../datasources/v2/RealTimeStreamScanExec.scala:
    # 58-79: a reader stops at the batch's end time). On local[2] the third partition's task only starts when the
    # first two end, at that end time, and reads nothing: no error, its records never come out.
    source, out = topic(partitions=3), topic(partitions=1)
    produce(source, 300, partitions=[0, 1, 2], value_fn=lambda i: str(i % 3), bootstrap=bootstrap, progress=False)
    query = latency.copy_query(spark, source, out, latency.REAL_TIME, {"0": 0, "1": 0, "2": 0}, bootstrap,
                               str(tmp_path / "cp"))
    try:
        deadline = time.monotonic() + 90
        while sum(latency._end_offsets(out, bootstrap).values()) < 200:  # two partitions' records are out
            assert query.exception() is None and time.monotonic() < deadline
            time.sleep(0.1)
        time.sleep(7)  # past the end of the first 5 s batch: the next batch starts its three tasks again
        assert query.exception() is None
    finally:
        query.stop()
    seen = {}
    for record in topics.records(out, bootstrap):
        seen[record.value] = seen.get(record.value, 0) + 1
    assert sorted(seen.values()) == [100, 100] and len(seen) == 2, seen


def test_the_kafka_sink_stays_at_least_once_in_realtime_mode(spark, bootstrap, topic, tmp_path):
    # Offsets are logged at the end of a Real-time batch, after its records were written (sql/.../runtime/
    # MicroBatchExecution.scala:1278-1293 and 1415-1419), and a restart drops an offset entry without its commit
    # (497-509): records written by a batch that did not finish are written again.
    source, out = topic(partitions=2), topic(partitions=1)
    produce(source, 100, partitions=[0, 1], value_fn=str, bootstrap=bootstrap, progress=False)
    checkpoint = str(tmp_path / "cp")
    first = latency.copy_query(spark, source, out, {"realTime": "60 seconds"}, {"0": 0, "1": 0}, bootstrap, checkpoint)
    try:
        deadline = time.monotonic() + 60
        while sum(latency._end_offsets(out, bootstrap).values()) < 100:
            assert first.exception() is None and time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        first.stop()  # within the 60 s batch: nothing is committed
    again = latency.copy_query(spark, source, out, {"realTime": "60 seconds"}, {"0": 0, "1": 0}, bootstrap, checkpoint)
    try:
        deadline = time.monotonic() + 60
        while sum(latency._end_offsets(out, bootstrap).values()) < 200:
            assert again.exception() is None and time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        again.stop()
    values = [r.value for r in topics.records(out, bootstrap)]
    assert len(values) == 200 and len(set(values)) == 100  # every record written twice
