"""The offline engine's Kafka source: Spark's Kafka connector (4.2) re-done on PySpark's Python Data Source API.

It is the fallback (STREAMLAB_ENGINE=offline, or no jar cache outside CI) and is judged against the real connector:
tests/integration/test_differential*.py run every scenario on both stacks and require the same batches, offsets,
rows, checkpoint files and error texts. Options, schema, offsets and limits are the connector's
(../shared/spark-kafka-facts.md): offsets are `{"topic":{"0":4400}}` (next offset to read), written compactly, so
`offsets/N` reads byte for byte like the connector's; `sources/<i>/0` holds the initial offsets (so a restart, even
after a crash in batch 0, starts where the first run did); `maxOffsetsPerTrigger` is split by backlog
(planner.rate_limit); `minOffsetsPerTrigger` + `maxTriggerDelay` skip triggers, also under availableNow, which then
stops early as the connector does; `Trigger.Once` reads everything, `availableNow` in capped batches; new partitions
and topics start from earliest; vanished offsets fail the query with the connector's KAFKA_DATA_LOSS texts or are
skipped per `failOnDataLoss`; option errors come at `.load()` or at the query's start, as with the connector.
A batch read resolves earliest/latest again at every action, as the connector's KafkaRelation.buildScan does, so a
DataFrame reused after more records arrive reads them (replan_each_action: a filter that is always true, which
shows in explain()). `kafka.isolation.level=read_committed` reads skip aborted records and transaction markers and
stop at the last stable offset, in batch reads and streams alike.

The differences the Python Data Source API (and kafka-python) make unavoidable -- the only ones; each has a test
in tests/integration/test_differential.py (source) or test_differential_sink.py (sink):
- Progress: `sources[i].metrics` is `{}` (a Python stream cannot report the connector's minOffsetsBehindLatest,
  maxOffsetsBehindLatest, avgOffsetsBehindLatest) and `description` names Spark's Python stream class, not
  `KafkaV2[Subscribe[...]]`. `latestOffset` is reported, so lag = latestOffset[p] - endOffset[p] works on both.
  (test_unavoidable_no_kafka_metrics_and_another_description_in_progress)
- Errors raised while a query runs or in a task arrive wrapped: `[PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR] ...`
  or PythonException, with a Python traceback, where the connector's arrive as its Java exception; the
  connector's sentence is in the text. Errors the connector raises as a Java exception PySpark does not convert
  (Py4JJavaError) are raised with another class. Option errors at `.load()` are the connector's class and text.
  (test_starting_offsets_json_must_name_every_partition, test_bootstrap_servers_are_required)
- A subscription that matches no partition yet: the connector has no offset and plans no batch; a Python reader
  must return one (`{}`), so Spark plans an empty batch 0 and later batch ids are one higher.
  (test_unavoidable_a_subscription_matching_nothing_yet_runs_an_empty_batch_0)
- `subscribePattern` is matched by Python's `re`, not Java's regex: Java-only syntax such as `\\p{Alnum}` fails
  when the query starts, with Python's message. (test_unavoidable_subscribe_pattern_is_read_by_pythons_re)
- Sink, outputMode("update"): Spark refuses Update for Python sinks, so the query writes through foreachBatch and
  its progress names the sink ForeachBatchSink (same records). (test_update_mode_aggregation_writes_the_updated_rows)
- Sink progress: `sink.description` names Spark's PythonTable (ForeachBatchSink in Update mode), not the
  connector's KafkaTable; and in Update mode `sink.numOutputRows` is -1, since a foreachBatch sink reports no row
  count (in Append mode it is the number of rows written, as with the connector).
  (test_unavoidable_sink_progress_names_another_sink_and_update_mode_counts_no_rows)
- Sink: a header with a null value cannot be written (kafka-python's producer refuses it; the task fails with a
  message saying so). (test_unavoidable_a_null_header_value_cannot_be_written)
- Sink: Java-only producer options (buffer.memory, partitioner or interceptor classes, JKS stores) are ignored
  with a warning, or refused when ignoring them would change what is written.
  (test_unavoidable_java_only_producer_options_are_ignored_with_a_warning)

Scope: a Python stream reader is never told its checkpoint folder; the driver-side hooks (`route_reads`, and the
start() hook in sink.py) pass it on through a registry file, for local checkpoints started from classic PySpark --
the lab's only kind. Without them (Spark Connect, an hdfs:// checkpoint) no `sources/<i>/0` is kept.
Not visible in the lab (one local executor): a Python input partition cannot name a preferred executor.
A session that turns spark.sql.python.filterPushdown.enabled off again (register() turns it on) makes a reused batch
DataFrame read its first action's offsets at every action.
"""
from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable, ReadMaxRows, ReadMinRows, SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType, TimestampType,
)

from streamlab.offline.checkpoint import (
    SOURCE_ID_OPTION, claim_metadata_path, compact_json, read_initial_offsets, write_initial_offsets,
)
from streamlab.offline.options import (
    FAIL_ON_DATA_LOSS_FALSE, IllegalArgumentException, IllegalStateException, NumberFormatException, to_bool,
    check_batch_load, check_general, check_stream_load, client_config, data_loss_message, lower_keys,
    parse_source_options, starting_spec, validate_stream,
)
from streamlab.offline.planner import (
    OffsetRange, batch_ranges, from_json, rate_limit, should_delay, split_ranges, to_json, tp_name, tp_set,
)
from streamlab.offline.reader import read_range
from streamlab.offline.routing import OFFLINE_NAME, serves

log = logging.getLogger("streamlab.offline")

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
    """One Spark task: offsets [start, end) of one topic-partition, read as the executors of group `group` would."""

    topic: str
    partition: int
    start: int
    end: int
    group: str = ""


def _input_partitions(ranges, group: str) -> list:
    return [KafkaInputPartition(r.topic, r.partition, r.start, r.end, group) for r in ranges]


def _read(partition: KafkaInputPartition, opts):
    if not isinstance(partition, KafkaInputPartition):
        return iter(())  # PySpark plans one placeholder partition when a batch read has no ranges
    rng = OffsetRange(partition.topic, partition.partition, partition.start, partition.end)
    return read_range(rng, opts, partition.group)


def _java_hash(text: str) -> int:
    """Java's String.hashCode, which the connector puts in its group ids."""
    data, h = text.encode("utf-16-be"), 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


class KafkaDataSource(DataSource):
    """format("kafka") of the offline engine: batch and streaming reads here, writes in sink.py."""

    @classmethod
    def name(cls) -> str:
        """The name the source is registered under (install() also routes format("kafka") to it)."""
        return OFFLINE_NAME

    def schema(self):
        """The fixed Kafka schema (with headers when includeHeaders=true); bad general options fail at .load()."""
        # The load() hook already ran the stream's or the batch's full checks; this covers other entry points.
        check_general(self.options)
        return kafka_schema(to_bool("includeHeaders", lower_keys(self.options).get("includeheaders", "false")))

    def reader(self, schema):
        """A batch reader (startingOffsets default earliest, endingOffsets default latest)."""
        return KafkaBatchReader(self.options)

    def streamReader(self, schema):
        """A micro-batch stream reader."""
        return KafkaStreamReader(self.options)

    def writer(self, schema, overwrite):
        """The batch Kafka sink (sink.py)."""
        from streamlab.offline.sink import KafkaBatchWriter

        return KafkaBatchWriter(self.options, schema, overwrite)

    def streamWriter(self, schema, overwrite):
        """The streaming Kafka sink (sink.py)."""
        from streamlab.offline.sink import KafkaStreamWriter

        return KafkaStreamWriter(self.options, schema)


def _report_data_loss(fail: bool, reason: str) -> None:
    if fail:
        raise IllegalStateException(data_loss_message(reason))
    log.warning("%s. %s", reason, FAIL_ON_DATA_LOSS_FALSE)


def _source_runner():
    """Spark's Python streaming source runner module, when this process is one (else None)."""
    import sys

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "") in ("__main__", "pyspark.sql.streaming.python_streaming_source_runner") \
                and hasattr(module, "initial_offset_func"):
            return module
    return None


def _compact_offsets_in_this_process() -> None:
    # Spark's Python source process sends our offsets to the JVM with json.dumps' default ", " and ": ", so offsets/N
    # and the progress would read {"t": {"0": 4}}; the connector writes {"t":{"0":4}}. Only that process is touched.
    runner = _source_runner()
    if runner is not None and getattr(runner, "json", None) is json:
        runner.json = _CompactJson()


class _CompactJson:
    """The json module as the source runner uses it, with compact dumps."""

    loads = staticmethod(json.loads)
    dumps = staticmethod(compact_json)


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
        # Only the query's planning reader (in Spark's source runner) takes the entry; the readers Spark makes
        # elsewhere to read partitions must leave it for the next query started from the same DataFrame.
        in_runner = _source_runner() is not None
        self._metadata_path = claim_metadata_path(raw.get(SOURCE_ID_OPTION)) if in_runner else None
        where = f"file:{self._metadata_path}" if self._metadata_path else ""
        # Named like the connector's (spark-kafka-source-<uuid>-<hash of the metadata path>); the consumers use
        # assign() and never commit, so only messages show it.
        self._group = f"spark-kafka-source-{uuid.uuid4()}-{_java_hash(where)}-executor"
        self._offsets = None
        self._initial = None
        self._latest = None
        self._available_now = False
        self._available_now_target = None
        self._last_trigger_ms = 0  # 0, so the first trigger always runs
        _compact_offsets_in_this_process()

    def _offset_reader(self):
        if self._error is not None:
            raise self._error
        if self._offsets is None:
            from streamlab.offline.offsets import OffsetReader

            client_config(self.opts.kafka_params, warn=True)  # warns once about options Python cannot use
            self._offsets = OffsetReader(self.opts)
        return self._offsets

    def initialOffset(self) -> dict:
        """sources/<i>/0 when the checkpoint has it (a restart, even after a crash in batch 0), else startingOffsets."""
        reader = self._offset_reader()
        if self._initial is None:
            saved = read_initial_offsets(self._metadata_path) if self._metadata_path else None
            if saved is not None:
                self._initial = saved
            else:
                self._initial = to_json(reader.resolve(self._start_spec, stream=True))
                if self._metadata_path:
                    write_initial_offsets(self._metadata_path, self._initial)
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
        # PySpark passes a single limit, so the minimum (a ReadMinRows of its own only when no maximum is set) is
        # applied from the options, as the connector applies the min part of its composite limit.
        if opts.min_offsets_per_trigger is not None:
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
            _report_data_loss(fail, f"Cannot find initial offsets for partitions {tp_set(new - set(first_of_new))}. "
                                    "They may have been deleted.")
        for tp, off in sorted(first_of_new.items()):
            if off != 0:
                _report_data_loss(fail, f"Added partition {tp_name(tp)} starts from {off} instead of 0.")
        gone = set(begin) - set(until)
        if gone:
            reason = f"Partitions {tp_set(gone)} have been deleted."
            if "group.id" in self.opts.kafka_params:
                reason += ("\nKafka option 'kafka.group.id' has been set on this query, it is\n"
                           "not recommended to set this option. This option is unsafe to use since multiple "
                           "concurrent\nqueries or sources using the same group id will interfere with each other "
                           "as they are part\nof the same consumer group. Restarted queries may also suffer "
                           "interference from the\nprevious run having the same group id. The user should have only "
                           "one query per group id,\nand/or set the option 'kafka.session.timeout.ms' to be very "
                           "small so that the Kafka\nconsumers from the previous query are marked dead by the Kafka "
                           "group coordinator before the\nrestarted query starts running.")
            _report_data_loss(fail, reason)
        from_offsets = {**begin, **first_of_new}
        ranges = []
        for tp in sorted(until):
            if tp not in from_offsets:
                continue
            first, last = from_offsets[tp], until[tp]
            if last < first:
                _report_data_loss(fail, f"Partition {tp_name(tp)} offset was changed from {first} to {last}.\n"
                                        "This could be either 1) a user error that the start offset is set beyond "
                                        "available offset when starting query, or 2) the kafka topic-partition is "
                                        "deleted and re-created.")
            ranges.append(OffsetRange(tp[0], tp[1], first, last))
        opts = self.opts
        return _input_partitions(split_ranges(ranges, opts.min_partitions, opts.max_records_per_partition),
                                 self._group)

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
    """A bounded read of [startingOffsets, endingOffsets), like the connector's KafkaRelation."""

    def __init__(self, options):
        raw = lower_keys(options)
        self._start_spec, self._end_spec = check_batch_load(raw)
        self.opts = parse_source_options(raw)
        self._group = f"spark-kafka-relation-{uuid.uuid4()}-executor"

    def partitions(self) -> list:
        """Resolve both ends on the driver and plan one task per partition (split by minPartitions)."""
        from streamlab.offline.offsets import OffsetReader

        reader = OffsetReader(self.opts)
        try:
            first = reader.resolve(self._start_spec, starting=True)
            last = reader.resolve(self._end_spec, starting=False)
        finally:
            reader.close()
        if set(first) != set(last):
            raise IllegalStateException(
                "The specified start offset and end offset should have the same topic-partitions.\n"
                f"Topic-partitions for start offset: {tp_set(first)}, topic-partitions for end offset: "
                f"{tp_set(last)}.")
        ranges = []
        for tp in sorted(first):
            if first[tp] > last[tp]:
                raise IllegalStateException(
                    f"The resolved start offset {first[tp]} is greater than the resolved end offset {last[tp]} for "
                    f"topic {tp[0]} partition {tp[1]}.\n"
                    "Please investigate in this order:\n"
                    "1. Check whether start offset is set beyond the end offset or the latest available offset after "
                    "resolution. Possible inputs are:\n"
                    "  (a) Start offset is set to a timestamp, and the end offset is set to an index of offset.\n"
                    "  (b) Start offset is set to an index of offset, and the end offset is set to a timestamp.\n"
                    "  (c) Start offset is set, and the end offset is set to latest.\n"
                    "2. Check whether the Kafka topic-partition is deleted and re-created.")
            ranges.append(OffsetRange(tp[0], tp[1], first[tp], last[tp]))
        opts = self.opts
        return _input_partitions(batch_ranges(ranges, opts.min_partitions, opts.max_records_per_partition),
                                 self._group)

    def read(self, partition):
        """The records of one range, as Arrow record batches (runs on an executor)."""
        return _read(partition, self.opts)


# --- the driver-side hooks: option checks at load(), the checkpoint at start() -------------------------------------


def _raise_as_pyspark(exc: IllegalArgumentException):
    from pyspark.errors import IllegalArgumentException as PySparkIllegalArgument
    from pyspark.errors import NumberFormatException as PySparkNumberFormat

    kind = PySparkNumberFormat if isinstance(exc, NumberFormatException) else PySparkIllegalArgument
    raise kind(message=str(exc)) from None


def _check_user_schema(reader, options: dict, stream: bool) -> None:
    """A schema given to the reader: a stream refuses any, a batch read one that is not the Kafka schema."""
    given = getattr(reader, "_streamlab_user_schema", None)
    if given is None:
        return
    if stream:
        raise IllegalArgumentException(
            "requirement failed: Kafka source has a fixed schema and cannot be set with a custom one")
    from pyspark.errors import AnalysisException
    from pyspark.sql.types import _parse_datatype_string

    wanted = given if isinstance(given, StructType) else _parse_datatype_string(given)
    actual = kafka_schema(to_bool("includeHeaders", options.get("includeheaders", "false")))
    if wanted != actual:
        jvm = reader._spark._jvm

        def ddl(schema):
            return jvm.org.apache.spark.sql.types.DataType.fromJson(schema.json()).toDDL()

        # Spark's USER_SPECIFIED_AND_ACTUAL_SCHEMA_MISMATCH, raised by its relation resolution for the connector.
        raise AnalysisException(message=(
            "[USER_SPECIFIED_AND_ACTUAL_SCHEMA_MISMATCH] The user-specified schema doesn't match the actual schema:\n"
            f"user-specified: {ddl(wanted)}, actual: {ddl(actual)}. If you're using\nDataFrameReader.schema API or "
            "creating a table, please do not specify the schema.\nOr if you're scanning an existed table, please "
            "drop it and re-create it. SQLSTATE: 42K03"))


# The filter replan_each_action adds: always true (partition is never null), but Spark does not know that.
REPLAN_FILTER = "partition IS NOT NULL"


def replan_each_action(df):
    """A batch read whose offsets are resolved again each time a query over it is planned, as the connector's.

    The connector's KafkaRelation is a TableScan: its buildScan() resolves startingOffsets/endingOffsets (earliest,
    latest, timestamps) whenever a query over it is planned, so a DataFrame reused across actions sees the records
    produced, deleted, or the partitions added in between. Spark 4.2 asks a Python batch reader for its partitions
    once per relation and caches them (PythonDataSourceV2.getOrCreateReadInfo): every later action would read the
    first action's offsets. Only filter pushdown replaces that cache: when a filter reaches the scan and
    spark.sql.python.filterPushdown.enabled is true (register() sets it), PythonScanBuilder.pushFilters plans the
    read again (the reader's partitions(), hence fresh offsets) and stores it with setReadInfo. Spark pushes only
    real filters, so the read carries one that is always true; KafkaBatchReader pushes nothing (it inherits
    pushFilters, which returns every filter), so Spark still applies it. It shows in explain(), and nowhere else.
    """
    return df.where(REPLAN_FILTER)


def route_reads() -> None:
    """Check offline Kafka reads at load() as the connector does, and give each stream an id for its checkpoint.

    The connector validates its options when the DataFrame is created (IllegalArgumentException at `.load()`);
    a Python data source is only asked for its schema there, with no way to tell a stream from a batch. So on the
    driver, `load()` of this engine's format runs the checks of that kind of read first and raises the connector's
    exception type and message. A streaming read also gets the hidden SOURCE_ID_OPTION (see
    checkpoint.announce_checkpoint).
    """
    from streamlab import patches

    patches.install("offline-reads")


def read_hooks(cls, originals: dict) -> dict:
    """The patch "offline-reads" (streamlab.patches) on DataFrameReader or DataStreamReader: see route_reads."""
    from pyspark.sql.streaming.readwriter import DataStreamReader
    from pyspark.sql.utils import to_str

    check = check_stream_load if cls is DataStreamReader else check_batch_load

    def _format(self, source, _originals=originals):
        self._streamlab_kafka_read = serves(source)
        return _originals["format"](self, source)

    def _schema(self, schema, _originals=originals):
        self._streamlab_user_schema = schema
        return _originals["schema"](self, schema)

    def _option(self, key, value, _originals=originals):
        self.__dict__.setdefault("_streamlab_read_options", {})[str(key).lower()] = to_str(value)
        return _originals["option"](self, key, value)

    def _options(self, _originals=originals, **opts):
        self.__dict__.setdefault("_streamlab_read_options", {}).update(
            {str(k).lower(): to_str(v) for k, v in opts.items()})
        return _originals["options"](self, **opts)

    def _load(self, path=None, format=None, schema=None, _originals=originals, _check=check,
              _stream=cls is DataStreamReader, **opts):
        if format is not None:
            self.format(format)
        if opts:
            self.options(**opts)
        if schema is not None:
            self.schema(schema)
        if getattr(self, "_streamlab_kafka_read", False):
            given = {k: v for k, v in getattr(self, "_streamlab_read_options", {}).items() if v is not None}
            if path is not None:
                given["path"] = path
            try:
                _check(given)
                _check_user_schema(self, given, _stream)
            except IllegalArgumentException as exc:
                _raise_as_pyspark(exc)
            if _stream:
                _originals["option"](self, SOURCE_ID_OPTION, uuid.uuid4().hex)
        loaded = _originals["load"](self, path) if path is not None else _originals["load"](self)
        if getattr(self, "_streamlab_kafka_read", False) and not _stream:
            loaded = replan_each_action(loaded)
        return loaded

    hooks = {"format": _format, "option": _option, "options": _options, "schema": _schema, "load": _load}
    for name, new in hooks.items():
        new.__doc__ = originals[name].__doc__
    return hooks
