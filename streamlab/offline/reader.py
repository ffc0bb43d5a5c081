"""Executor side of the Kafka source: read one offset range of one partition into Arrow record batches.

Like the connector's KafkaDataConsumer, a range [start, end) is read exactly: records at or after `end` are
dropped, and offsets with no record (transaction markers, aborted records under read_committed, compaction) are
skipped silently. Offsets that no longer exist (start below the partition's earliest offset after retention, or
beyond its latest after the topic was recreated) are data loss: with failOnDataLoss=true the task fails with the
connector's message; with false it logs a warning and reads what is left of the range.

Like the connector's consumer pool, a Python worker keeps its consumers between tasks (Spark reuses Python
workers) and re-assigns them to each task's partition; a consumer that failed or stopped mid-range is closed.
Fetch sizes follow the range size, so a capped batch does not pull megabytes it will not use.
"""
from __future__ import annotations

import logging
import time

from streamlab.offline.options import (
    FAIL_ON_DATA_LOSS_FALSE, IllegalStateException, SourceOptions, client_config, data_loss_message,
)
from streamlab.offline.planner import OffsetRange, tp_name

log = logging.getLogger("streamlab.offline")

MAX_ROWS_PER_BATCH = 50_000
# Bigger fetches than kafka-python's defaults: a range is read start to end, so large responses are never wasted.
FETCH_DEFAULTS = {
    "fetch_max_bytes": 64 * 1024 * 1024,
    "receive_buffer_bytes": 4 * 1024 * 1024,
    "fetch_max_wait_ms": 100,
    "max_poll_records": MAX_ROWS_PER_BATCH,
    # kafka-python checks CRC32C in pure Python unless the optional crc32c wheel is installed, which costs
    # ~40% of the read time; TCP already checksums the transfer. kafka.check.crcs=true turns it back on.
    "check_crcs": False,
}


def arrow_schema(include_headers: bool):
    """The Arrow schema PySpark expects for the Kafka source's Spark schema."""
    import pyarrow as pa

    fields = [
        pa.field("key", pa.binary()), pa.field("value", pa.binary()), pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()), pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")), pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
        fields.append(pa.field("headers", pa.list_(header)))
    return pa.schema(fields)


def to_batch(records, topic: str, partition: int, schema, include_headers: bool):
    """One Arrow RecordBatch from kafka-python ConsumerRecords of one partition."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(records)
    # Kafka timestamps are milliseconds since the epoch; Spark's TimestampType is microseconds in UTC.
    millis = pa.array([r.timestamp for r in records], pa.int64())
    micros = pc.multiply(millis, 1000).cast(pa.timestamp("us", tz="UTC"))
    columns = [
        pa.array([r.key for r in records], pa.binary()), pa.array([r.value for r in records], pa.binary()),
        pa.array([topic] * n, pa.string()), pa.array([partition] * n, pa.int32()),
        pa.array([r.offset for r in records], pa.int64()), micros,
        pa.array([r.timestamp_type for r in records], pa.int32()),
    ]
    if include_headers:
        headers = [[(k, v) for k, v in (r.headers or [])] for r in records]
        columns.append(pa.array(headers, schema.field("headers").type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _fetch_bytes(records: int) -> int:
    # A fetch returns up to this many bytes of the partition even when the range needs far fewer, and kafka-python
    # pays for every byte in Python: small ranges (a capped micro-batch) get small fetches, whole partitions big
    # ones. Powers of two, so pooled consumers are reused across batches of similar size.
    wanted = min(16 * 1024 * 1024, max(256 * 1024, records * 256))
    return 1 << (wanted - 1).bit_length()


# One consumer per client configuration and Python worker process, reused by the tasks that worker runs (Spark
# reuses Python workers), as the connector pools its consumers: opening and closing one costs more than a small task.
_CONSUMERS: dict = {}


def _consumer(opts: SourceOptions, records: int):
    from kafka import KafkaConsumer

    config = dict(FETCH_DEFAULTS, max_partition_fetch_bytes=_fetch_bytes(records))
    config.update(client_config(opts.kafka_params))
    config.update(enable_auto_commit=False, group_id=None, auto_offset_reset="none")
    key = repr(sorted(config.items()))
    consumer = _CONSUMERS.pop(key, None)
    return key, consumer or KafkaConsumer(**config)


def _release(key: str, consumer, healthy: bool) -> None:
    if healthy and key not in _CONSUMERS and len(_CONSUMERS) < 4:
        consumer.assign([])
        _CONSUMERS[key] = consumer
    else:
        consumer.close()


def _data_loss(fail: bool, start: int, end: int, tp, group: str) -> None:
    reason = f"Could not read records in offset [{start}, {end}) for topic partition {tp_name(tp)}\nwith consumer " \
             f"group {group}."
    if fail:
        raise IllegalStateException(data_loss_message(reason))
    log.warning("%s %s", reason, FAIL_ON_DATA_LOSS_FALSE)


def read_range(rng: OffsetRange, opts: SourceOptions, group: str = ""):
    """Yield Arrow record batches holding exactly the records of `rng` (offsets start <= o < end).

    `group` is the consumer group the connector's executors would name in a data-loss message.
    """
    from kafka import TopicPartition

    if rng.size <= 0:
        return
    schema = arrow_schema(opts.include_headers)
    tp, key = TopicPartition(rng.topic, rng.partition), (rng.topic, rng.partition)
    pool_key, consumer = _consumer(opts, rng.size)
    healthy = False
    try:
        consumer.assign([tp])
        earliest = consumer.beginning_offsets([tp])[tp]
        latest = consumer.end_offsets([tp])[tp]
        position = rng.start
        if position < earliest or position >= latest:
            _data_loss(opts.fail_on_data_loss, position, rng.end, key, group)
            if position >= latest or earliest >= rng.end:
                log.warning("The current available offset range is [%d, %d). Offset %d is out of range, and "
                            "records in [%d, %d) will be skipped", earliest, latest, position, position, rng.end)
                return
            log.warning("Offset %d is out of range, and records in [%d, %d) will be skipped",
                        position, position, earliest)
            position = earliest
        if latest < rng.end:
            _data_loss(opts.fail_on_data_loss, max(latest, position), rng.end, key, group)
        stop = min(rng.end, latest)
        consumer.seek(tp, position)
        deadline = time.monotonic() + opts.poll_timeout_ms / 1000
        while position < stop:
            wanted = min(MAX_ROWS_PER_BATCH, max(stop - position, 1))
            fetched = consumer.poll(timeout_ms=200, max_records=wanted).get(tp, [])
            if not fetched:
                after = consumer.position(tp)
                if after is not None and after > position:
                    position = after  # offsets without visible records: markers, aborted, compacted
                    deadline = time.monotonic() + opts.poll_timeout_ms / 1000
                elif time.monotonic() > deadline:
                    raise TimeoutError(f"Cannot fetch record for offset {position} in {opts.poll_timeout_ms} "
                                       "milliseconds")
                continue
            if fetched[-1].offset >= rng.end:
                fetched = [r for r in fetched if r.offset < rng.end]
            if fetched:
                yield to_batch(fetched, rng.topic, rng.partition, schema, opts.include_headers)
                position = fetched[-1].offset + 1
            else:
                position = rng.end
            deadline = time.monotonic() + opts.poll_timeout_ms / 1000
        healthy = True
    finally:
        _release(pool_key, consumer, healthy)
