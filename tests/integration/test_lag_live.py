"""Lag against the broker: latest offsets, lag from a checkpoint, and LagMonitor on a running Kafka query."""
from __future__ import annotations

import time

import pytest

from streamlab.observe.lag import LagMonitor, lag_from_checkpoint, latest_offsets, total_lag
from streamlab.lab.producer import BackgroundProducer, produce

pytestmark = pytest.mark.broker


def test_latest_offsets_per_partition(bootstrap, topic):
    name, other = topic(partitions=2), topic()
    produce(name, 30, partitions=[0, 1, 1], bootstrap=bootstrap, progress=False)
    assert latest_offsets(name, bootstrap) == {name: {0: 10, 1: 20}}
    assert latest_offsets([name, other], bootstrap) == {name: {0: 10, 1: 20}, other: {0: 0}}


def test_lag_from_a_checkpoint_is_broker_latest_minus_the_committed_end(bootstrap, topic, tmp_path):
    name = topic(partitions=2)
    produce(name, 40, partitions=[0, 1], bootstrap=bootstrap, progress=False)  # 20 in each
    root = tmp_path / "cp"
    for folder in ("offsets", "commits"):
        (root / folder).mkdir(parents=True)
    (root / "offsets" / "0").write_text('v1\n{"batchWatermarkMs":0}\n{"%s":{"0":5,"1":20}}' % name)
    (root / "offsets" / "1").write_text('v1\n{"batchWatermarkMs":0}\n{"%s":{"0":15,"1":20}}' % name)
    (root / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}')
    # Batch 1 is planned but not committed: a restart resumes from the end of batch 0.
    assert lag_from_checkpoint(root, bootstrap) == {name: {0: 15, 1: 0}}
    (root / "commits" / "1").write_text('v1\n{"nextBatchWatermarkMs":0}')
    assert lag_from_checkpoint(root, bootstrap) == {name: {0: 5, 1: 0}}


@pytest.mark.spark
def test_monitor_sees_a_capped_query_fall_behind(spark, bootstrap, topic, tmp_path):
    name = topic(partitions=2)
    warnings = []
    stream = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", name).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", 20).load())
    query = (stream.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(processingTime="300 milliseconds").start())
    try:
        with BackgroundProducer(name, rate=400, bootstrap=bootstrap):  # far more than 20 per batch
            with LagMonitor(query, interval=0.2, on_warning=warnings.append, grow_polls=2) as monitor:
                deadline = time.monotonic() + 60
                while not warnings and time.monotonic() < deadline:
                    assert query.exception() is None
                    time.sleep(0.2)
    finally:
        query.stop()
    assert warnings and "falling behind" in warnings[0]
    assert monitor.status == "falling behind"
    last = monitor.history[-1]
    assert last["lag"] == total_lag(last["partitions"]) > 0
