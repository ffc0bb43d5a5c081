"""The offline engine's Kafka source: Spark's Kafka connector re-done on PySpark's Python Data Source API.

Same options, schema, offsets and limits as the connector (see ../shared/spark-kafka-facts.md): offsets are
`{"topic":{"0":4400}}` dicts (next offset to read), so `offsets/N` in a checkpoint reads like the connector's;
`maxOffsetsPerTrigger` is split by backlog (planner.rate_limit); `minOffsetsPerTrigger` + `maxTriggerDelay` skip
triggers (planner.should_delay); `Trigger.Once` passes ReadAllAvailable (no cap) and `availableNow` the default
limit (capped batches up to the offsets seen when the query started); new partitions and newly matching topics
start from earliest; vanished offsets fail the query or are skipped per `failOnDataLoss`.

What the Python Data Source API cannot reproduce (each checked on PySpark 4.3):
- `sources[i].metrics` (minOffsetsBehindLatest, ...) in progress events is always `{}`: a Python stream reader
  cannot report custom metrics. `latestOffset` is reported, so lag = latestOffset[p] - endOffset[p] still works.
- `sources[i].description` names the Python stream, not `KafkaV2[Subscribe[...]]`.
- The checkpoint has no `sources/0/0` initial-offsets file; on restart Spark resumes from the offset log, so
  startingOffsets is still ignored as with the connector.
- PySpark writes offsets with `json.dumps`, so an `offsets/N` line reads `{"orders": {"0": 4400, "1": 3400}}`,
  with spaces the connector's `{"orders":{"0":4400,"1":3400}}` lacks; the JSON is the same.
- Not a source limit but worth knowing: in append mode the memory sink refuses to restart from a checkpoint
  ("This query does not support recovering from checkpoint location"), whatever the source; restart demos
  need foreachBatch or a file sink.
- Option errors that depend on the query kind (endingOffsets in a stream, latest start in a batch) surface when
  the query starts or the batch is planned, not at `.load()`: `DataSource.schema()` cannot tell them apart.
- An option error reaches the learner wrapped by PySpark ("[PYTHON_DATA_SOURCE_ERROR] ... Traceback ...") with
  our IllegalArgumentException and the connector's text on its last line, not as a bare Java exception.
- PySpark 4.3's stream runner calls `reader.stop()` on a reader that failed to construct, burying the error under
  an UnboundLocalError; so KafkaStreamReader keeps its option error and raises it from its first method instead.
- No `spark-kafka-source-<uuid>` group id is generated: the consumers never join a group or commit, so none
  is needed (the connector's never commits either).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable, ReadMaxRows, ReadMinRows, SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType, TimestampType,
)

from . import OFFLINE_NAME
from .options import (
    FAIL_ON_DATA_LOSS_FALSE, FAIL_ON_DATA_LOSS_TRUE, IllegalArgumentException, IllegalStateException,
    client_config, ending_spec, lower_keys, parse_source_options, starting_spec, validate_batch, validate_stream,
)
from .planner import OffsetRange, from_json, rate_limit, should_delay, split_ranges, to_json, tp_name, tp_set
from .reader import read_range

log = logging.getLogger("streamlab.kafka")


def kafka_schema(include_headers: bool = False) -> StructType:
    """The Kafka source's fixed schema, with `headers` when includeHeaders=true."""
    fields = [
        StructField("key", BinaryType()), StructField("value", BinaryType()), StructField("topic", StringType()),
        StructField("partition", IntegerType()), StructField("offset", LongType()),
        StructField("timestamp", TimestampType()), StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
        fields.append(StructField("headers", ArrayType(header)))
    return StructType(fields)


@dataclass
class KafkaInputPartition(InputPartition):
    """One Spark task: offsets [start, end) of one topic-partition."""

    topic: str
    partition: int
    start: int
    end: int


def _input_partitions(ranges) -> list:
    return [KafkaInputPartition(r.topic, r.partition, r.start, r.end) for r in ranges]


def _read(partition: KafkaInputPartition, opts):
    if not isinstance(partition, KafkaInputPartition):
        return iter(())  # PySpark plans one placeholder partition when a batch read has no ranges
    return read_range(OffsetRange(partition.topic, partition.partition, partition.start, partition.end), opts)


class KafkaDataSource(DataSource):
    """format("kafka") of the offline engine: batch and streaming reads here, writes in sink.py."""

    @classmethod
    def name(cls) -> str:
        """The name the source is registered under (format("kafka") is routed to it)."""
        return OFFLINE_NAME

    def schema(self):
        """The fixed Kafka schema; validates the general options, so bad ones fail at .load()."""
        opts = parse_source_options(self.options)
        return kafka_schema(opts.include_headers)

    def reader(self, schema):
        """A batch reader (startingOffsets default earliest, endingOffsets default latest)."""
        return KafkaBatchReader(self.options)

    def streamReader(self, schema):
        """A micro-batch stream reader."""
        return KafkaStreamReader(self.options)

    def writer(self, schema, overwrite):
        """The batch Kafka sink (sink.py)."""
        from .sink import KafkaBatchWriter

        return KafkaBatchWriter(self.options, schema, overwrite)

    def streamWriter(self, schema, overwrite):
        """The streaming Kafka sink (sink.py)."""
        from .sink import KafkaStreamWriter

        return KafkaStreamWriter(self.options, schema)


def _report_data_loss(fail: bool, message: str) -> None:
    if fail:
        raise IllegalStateException(f"{message}. {FAIL_ON_DATA_LOSS_TRUE}")
    log.warning("%s. %s", message, FAIL_ON_DATA_LOSS_FALSE)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans micro-batches like KafkaMicroBatchStream; the instance lives on the driver for the whole query."""

    def __init__(self, options):
        raw = lower_keys(options)
        # Raising here would surface in PySpark as a confusing UnboundLocalError, so the first call raises it.
        self._error = None
        try:
            self.opts = validate_stream(raw)
            self._start_spec = starting_spec(raw, "latest")
        except IllegalArgumentException as exc:
            self._error, self.opts = exc, None
        self._offsets = None
        self._initial = None
        self._latest = None
        self._available_now = False
        self._available_now_target = None
        self._last_trigger_ms = 0  # 0, so the first trigger always runs

    def _offset_reader(self):
        if self._error is not None:
            raise self._error
        if self._offsets is None:
            from .offsets import OffsetReader

            client_config(self.opts.kafka_params, warn=True)  # warns once about options Python cannot use
            self._offsets = OffsetReader(self.opts)
        return self._offsets

    def initialOffset(self) -> dict:
        """startingOffsets resolved once (Spark asks twice); on restart Spark uses the checkpoint instead."""
        reader = self._offset_reader()
        if self._initial is None:
            self._initial = to_json(reader.resolve(self._start_spec))
            log.info("Initial offsets: %s", self._initial)
        return self._initial

    def getDefaultReadLimit(self):
        """maxOffsetsPerTrigger as ReadMaxRows; minOffsetsPerTrigger alone as ReadMinRows; else everything."""
        if self._error is not None:
            raise self._error
        if self.opts.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        if self.opts.min_offsets_per_trigger is not None:
            return ReadMinRows(self.opts.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """availableNow: later batches stop at the latest offsets seen by the first latestOffset call."""
        self._available_now = True

    def latestOffset(self, start: dict, limit) -> dict:
        """The end of the next batch: latest offsets, capped and possibly delayed per the source options."""
        reader = self._offset_reader()
        begin = from_json(start)
        if self._available_now:
            if self._available_now_target is None:
                self._available_now_target = reader.latest(known=begin)
            latest = self._available_now_target
        else:
            latest = reader.latest(known=begin)
        self._latest = latest
        if isinstance(limit, ReadAllAvailable):
            return to_json(latest)
        opts = self.opts
        # Under availableNow a minimum could wait forever for data that will never be read, so it is ignored.
        if opts.min_offsets_per_trigger is not None and not self._available_now:
            skip, self._last_trigger_ms = should_delay(
                opts.min_offsets_per_trigger, begin, latest, int(time.time() * 1000), self._last_trigger_ms,
                opts.max_trigger_delay_ms)
            if skip:
                log.debug("Delaying batch as number of records available is less than minOffsetsPerTrigger")
                return start
        if isinstance(limit, ReadMaxRows):
            new = set(latest) - set(begin)
            start_of_new = reader.earliest(new) if new else {}
            return to_json(rate_limit(limit.max_rows, begin, latest, start_of_new))
        return to_json(latest)

    def reportLatestOffset(self):
        """The latest offsets fetched by the last latestOffset call, shown as sources[i].latestOffset."""
        return to_json(self._latest) if self._latest else None

    def partitions(self, start: dict, end: dict) -> list:
        """One task per topic-partition range (split by minPartitions), after the connector's data-loss checks."""
        reader = self._offset_reader()
        fail = self.opts.fail_on_data_loss
        begin, until = from_json(start), from_json(end)
        new = set(until) - set(begin)
        first_of_new = reader.earliest(new) if new else {}
        if set(first_of_new) != new:
            _report_data_loss(fail, f"Cannot find earliest offsets of {tp_set(new - set(first_of_new))}. "
                                    "Some data may have been missed")
        for tp, off in sorted(first_of_new.items()):
            if off != 0:
                _report_data_loss(fail, f"Added partition {tp_name(tp)} starts from {off} instead of 0. "
                                        "Some data may have been missed")
        gone = set(begin) - set(until)
        if gone:
            _report_data_loss(fail, f"{tp_set(gone)} are gone. Some data may have been missed.")
        from_offsets = {**begin, **first_of_new}
        ranges = []
        for tp in sorted(until):
            if tp not in from_offsets:
                continue
            first, last = from_offsets[tp], until[tp]
            if last < first:
                _report_data_loss(fail, f"Partition {tp_name(tp)}'s offset was changed from {first} to {last}, "
                                        "some data may have been missed")
            ranges.append(OffsetRange(tp[0], tp[1], first, last))
        return _input_partitions(split_ranges(ranges, self.opts.min_partitions))

    def read(self, partition):
        """The records of one range, as Arrow record batches (runs on an executor)."""
        return _read(partition, self.opts)

    def commit(self, end: dict) -> None:
        """Nothing: like the connector, offsets are never committed to Kafka."""

    def stop(self) -> None:
        """Close the driver's admin client."""
        if self._offsets is not None:
            self._offsets.close()
            self._offsets = None


class KafkaBatchReader(DataSourceReader):
    """A bounded read of [startingOffsets, endingOffsets), like the connector's KafkaBatch."""

    def __init__(self, options):
        raw = lower_keys(options)
        self.opts = validate_batch(raw)
        self._start_spec = starting_spec(raw, "earliest")
        self._end_spec = ending_spec(raw)

    def partitions(self) -> list:
        """Resolve both ends on the driver and plan one task per range (split by minPartitions)."""
        from .offsets import OffsetReader

        reader = OffsetReader(self.opts)
        try:
            first = reader.resolve(self._start_spec, starting=True)
            last = reader.resolve(self._end_spec, starting=False)
        finally:
            reader.close()
        if set(first) != set(last):
            raise IllegalStateException(
                f"different topic partitions for starting offsets topics[{','.join(sorted(tp_name(t) for t in first))}]"
                f" and ending offsets topics[{','.join(sorted(tp_name(t) for t in last))}]")
        ranges = []
        for tp in sorted(first):
            if first[tp] > last[tp]:
                raise IllegalStateException(
                    f"Beginning offset {first[tp]} is after the ending offset {last[tp]} for topic {tp[0]} "
                    f"partition {tp[1]}. You either provided an invalid fromOffset, or the Kafka topic has been "
                    "damaged")
            ranges.append(OffsetRange(tp[0], tp[1], first[tp], last[tp]))
        return _input_partitions(split_ranges(ranges, self.opts.min_partitions))

    def read(self, partition):
        """The records of one range, as Arrow record batches (runs on an executor)."""
        return _read(partition, self.opts)
