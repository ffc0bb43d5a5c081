"""The offline engine's Kafka sink: Spark's KafkaWriter/KafkaWriteTask (4.2) rebuilt on kafka-python.

What it copies from the connector (connector/kafka-0-10-sql: KafkaWriter.scala, KafkaWriteTask.scala,
KafkaSourceProvider.scala), with the same message texts (the differential tests compare them):
- the schema is checked when the write is planned: `value` (string or binary) is required; `key` (string or
  binary), `topic` (string), `headers` (array<struct<key:string,value:binary>>) and `partition` (int) are
  optional; the `topic` option overrides a `topic` column; any other column, `timestamp` included, is ignored
  (the 4.2 connector has no timestamp column: records get the producer's time);
- `kafka.key.serializer` / `kafka.value.serializer` are rejected, every other `kafka.*` option goes to the producer,
  and a bad value fails with the Java producer's ConfigException text;
- rows with a null key and a null value are written, as the Java producer writes them;
- each task sends its rows asynchronously, stops at the first failed send, flushes before it reports success and
  fails if any record failed: a task never succeeds with records missing (at-least-once, like Spark);
- nothing happens at job commit or abort: records a failed job already sent stay in the topic;
- failures the Java producer only reports after a timeout take that long here too: a `partition` the topic does
  not have fails after `max.block.ms` ("Partition 5 of topic t with partition count 1 is not present in metadata
  after 60000 ms."), and `kafka.transactional.id` (Spark never calls initTransactions) fails after
  `delivery.timeout.ms` ("Cannot add partition t-0 to transaction before completing a call to initTransactions").

Save modes. Spark gives a Python data source only an `overwrite` flag, and its planner itself rejects
ErrorIfExists (the default) and Ignore for every Python data source ("UNSUPPORTED_DATA_SOURCE_SAVE_MODE ... Please
use either the "Append" or "Overwrite" mode instead") before any of our code runs. So `route_save_modes`
(installed with the offline engine) checks the mode in `DataFrameWriter.save` on the driver: Append and
ErrorIfExists write (as Append), Overwrite and Ignore raise AnalysisException("Save mode Overwrite not allowed for
Kafka. Allowed save modes are Append and ErrorIfExists (default)."), the connector's _LEGACY_ERROR_TEMP_3081. The
same hook checks the schema and options on the driver, so those errors are the connector's AnalysisException /
IllegalArgumentException with its one-line messages. A writer reached without the hook (another entry point)
still refuses Overwrite, with the same text, from `KafkaBatchWriter`.

Streaming. Spark refuses the Update output mode for every Python data source sink ("... does not support Update
mode"), which the connector accepts; `route_stream_writes` runs such a query through foreachBatch, each batch
written by the batch sink (same records, same checkpoint; its progress names the sink ForeachBatchSink). As with
the connector, a streaming write starts whatever its schema, and a bad schema fails its first batch.

What kafka-python cannot do (listed with the other unavoidable differences in source.py): write a header whose
value is null (the task fails with a clear message), and use Java-only options (JKS stores, partitioner or
interceptor classes, buffer.memory), which are ignored with a warning, or refused when ignoring them would change
what is written.
"""
from __future__ import annotations

import re
import threading
import warnings
from dataclasses import dataclass
from itertools import repeat

from kafka.serializer import Serializer
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from streamlab.offline.checkpoint import announce_checkpoint, await_claims
from streamlab.offline.options import IllegalArgumentException, IllegalStateException
from streamlab.offline.routing import OFFLINE_NAME, serves

TOPIC, KEY, VALUE, HEADERS, PARTITION = "topic", "key", "value", "headers", "partition"
HEADERS_TYPE = "array<struct<key:string,value:binary>>"

# The connector's _LEGACY_ERROR_TEMP_3081 text (Spark's error-conditions.json).
SAVE_MODE_MESSAGE = ("Save mode {mode} not allowed for Kafka. "
                     "Allowed save modes are Append and ErrorIfExists (default).")
# The connector's KAFKA_NULL_TOPIC_IN_DATA.
NULL_TOPIC_MESSAGE = ("The Kafka message data sent to the producer contains a null topic. Use the `topic` option for "
                      "setting a default topic.")
# The Java producer's IllegalStateException when transactional.id is set and initTransactions was never called.
NO_INIT_TRANSACTIONS_MESSAGE = "Cannot add partition {tp} to transaction before completing a call to initTransactions"
NO_BOOTSTRAP_MESSAGE = "Kafka option bootstrap.servers is not set. Please make sure it is set and retry."


class KafkaWriteError(RuntimeError):
    """A record the producer could not deliver; the Spark task fails with it."""


class TimeoutException(KafkaWriteError):
    """Named like the Java producer's org.apache.kafka.common.errors.TimeoutException."""


class SparkException(RuntimeError):
    """Named like the driver-side org.apache.spark.SparkException the connector raises."""


# ---------------------------------------------------------------------------------------------------------------
# Schema: which column feeds which part of the record (KafkaWriter.validateQuery)


@dataclass(frozen=True)
class WritePlan:
    """The validated shape of a write: the topic option (if any) and the type of each optional column."""

    topic: str | None
    columns: dict  # column name -> its Spark type as a catalog string, for the columns the sink uses


def _expression(types: dict, name: str, desired: tuple, required_message: str | None = None) -> str | None:
    found = types.get(name)
    if found is None:
        if required_message:
            raise ValueError(required_message)
        return None
    if found.lower() not in desired:
        raise ValueError(f"{name} attribute unsupported type {found}. {name} must be a(n) {' or '.join(desired)}")
    return found


def plan_write(schema, topic_option: str | None) -> WritePlan:
    """Check a DataFrame schema the way the connector does and say which columns the sink will use."""
    types = {f.name: f.dataType.simpleString() for f in schema.fields}
    topic = topic_option.strip() if topic_option is not None else None
    columns = {}
    if topic is None:  # with the option, a topic column is ignored, whatever its type
        columns[TOPIC] = _expression(
            types, TOPIC, ("string",),
            f"topic option required when no '{TOPIC}' attribute is present. Use the {TOPIC} option for setting "
            "a topic.")
    # The connector checks in this order, so the first problem reported is the same one.
    columns[KEY] = _expression(types, KEY, ("string", "binary"))
    columns[VALUE] = _expression(types, VALUE, ("string", "binary"), f"Required attribute '{VALUE}' not found")
    columns[HEADERS] = _expression(types, HEADERS, (HEADERS_TYPE,))
    columns[PARTITION] = _expression(types, PARTITION, ("int",))
    return WritePlan(topic, {k: v for k, v in columns.items() if v is not None})


# ---------------------------------------------------------------------------------------------------------------
# Options: `kafka.*` source options -> kafka-python KafkaProducer arguments


def _int(name, kind: str = "INT"):
    def convert(raw):
        try:
            return int(str(raw).strip())
        except ValueError:
            raise IllegalArgumentException(
                f"Invalid value {raw} for configuration {name}: Not a number of type {kind}") from None
    return convert


def _bool(name):
    def convert(raw):
        text = str(raw).strip().lower()
        if text not in ("true", "false"):
            raise IllegalArgumentException(
                f"Invalid value {raw} for configuration {name}: Expected value to be either true or false")
        return text == "true"
    return convert


def _acks(raw):
    text = str(raw).strip().lower()
    if text == "all":
        return "all"
    if text in ("-1", "0", "1"):
        return int(text)
    raise IllegalArgumentException(
        f"Invalid value {raw} for configuration acks: String must be one of: all, -1, 0, 1")


def _compression(raw):
    text = str(raw).strip().lower()
    return None if text == "none" else text


def _servers(raw):
    return [s.strip() for s in str(raw).split(",") if s.strip()]


def _text(raw):
    return str(raw)


# Their types in the Java producer (kafka-clients 3.9, the connector's), which its ConfigException names.
_INT_OPTIONS = ("batch.size", "retries", "request.timeout.ms", "delivery.timeout.ms", "max.request.size",
                "max.in.flight.requests.per.connection", "send.buffer.bytes", "receive.buffer.bytes",
                "transaction.timeout.ms")
_LONG_OPTIONS = ("linger.ms", "max.block.ms", "retry.backoff.ms", "reconnect.backoff.ms", "reconnect.backoff.max.ms",
                 "metadata.max.age.ms", "connections.max.idle.ms")
# Java producer config -> (kafka-python argument, converter). The names differ only by '.' -> '_'.
PRODUCER_OPTIONS = {
    "bootstrap.servers": ("bootstrap_servers", _servers),
    "client.id": ("client_id", _text),
    "acks": ("acks", _acks),
    "compression.type": ("compression_type", _compression),
    "enable.idempotence": ("enable_idempotence", _bool("enable.idempotence")),
    "transactional.id": ("transactional_id", _text),
    "security.protocol": ("security_protocol", _text),
    "sasl.mechanism": ("sasl_mechanism", _text),
    "sasl.kerberos.service.name": ("sasl_kerberos_service_name", _text),
    "client.dns.lookup": ("client_dns_lookup", _text),
    "ssl.cipher.suites": ("ssl_ciphers", _text),
    "ssl.key.password": ("ssl_password", _text),
    **{name: (name.replace(".", "_"), _int(name)) for name in _INT_OPTIONS},
    **{name: (name.replace(".", "_"), _int(name, "LONG")) for name in _LONG_OPTIONS},
}
# Options that only mean something to the Java client; kept out of kafka-python, with a warning.
JAVA_ONLY_OPTIONS = ("buffer.memory", "partitioner.class", "interceptor.classes", "compression.gzip.level",
                     "compression.lz4.level", "compression.zstd.level", "metrics.recording.level",
                     "sasl.login.callback.handler.class", "ssl.protocol", "ssl.enabled.protocols")


def option(options, name: str):
    """The value of option `name`, matched case-insensitively as Spark does, or None."""
    for key, value in dict(options).items():
        if key.lower() == name.lower():
            return value
    return None


def kafka_params(options) -> dict:
    """The `kafka.*` options with the prefix removed (keys lower-cased: Spark's options are case-insensitive)."""
    return {k[6:].lower(): v for k, v in dict(options).items() if k.lower().startswith("kafka.")}


def producer_config(options) -> dict:
    """kafka-python KafkaProducer arguments for the sink's options, refusing what the connector refuses."""
    params = kafka_params(options)
    # KafkaSourceProvider.kafkaParamsForProducer: the sink always sends bytes.
    if "key.serializer" in params:
        raise IllegalArgumentException(
            "Kafka option 'key.serializer' is not supported as keys are serialized with ByteArraySerializer.")
    if "value.serializer" in params:
        raise IllegalArgumentException(
            "Kafka option 'value.serializer' is not supported as value are serialized with ByteArraySerializer.")
    if not params.get("bootstrap.servers", "").strip():
        # The connector's check (KafkaTokenProviderExceptions.missingKafkaOption), on the driver.
        raise SparkException(NO_BOOTSTRAP_MESSAGE)
    config = {}
    for name, raw in params.items():
        if name in PRODUCER_OPTIONS:
            argument, convert = PRODUCER_OPTIONS[name]
            config[argument] = convert(raw)
        elif name == "sasl.jaas.config":
            config.update(_jaas(raw))
        elif name == "ssl.endpoint.identification.algorithm":
            config["ssl_check_hostname"] = bool(str(raw).strip())
        elif name in ("ssl.truststore.location", "ssl.keystore.location"):
            kind = str(params.get(name.replace("location", "type"), "JKS")).upper()
            if kind != "PEM":
                raise IllegalArgumentException(
                    f"Kafka option '{name}' points to a {kind} store, which the offline engine (kafka-python) "
                    f"cannot read: convert it to PEM and set kafka.{name.replace('location', 'type')}=PEM.")
            config["ssl_cafile" if "truststore" in name else "ssl_certfile"] = str(raw)
        elif name in ("ssl.truststore.type", "ssl.keystore.type"):
            pass  # read together with the matching location
        else:
            reason = "only means something to Java's Kafka client" if name in JAVA_ONLY_OPTIONS else \
                "is not known to the offline engine's producer (kafka-python)"
            warnings.warn(f"Kafka option 'kafka.{name}' {reason}; it is ignored.", stacklevel=2)
    return config


def _jaas(raw) -> dict:
    # PLAIN and SCRAM logins: kafka-python takes the user name and password as arguments.
    found = dict(re.findall(r'(username|password)\s*=\s*"([^"]*)"', str(raw)))
    out = {}
    if "username" in found:
        out["sasl_plain_username"] = found["username"]
    if "password" in found:
        out["sasl_plain_password"] = found["password"]
    return out


# ---------------------------------------------------------------------------------------------------------------
# Producers: one per configuration per Python worker, like the connector's InternalKafkaProducerPool

_producers: dict = {}
_producers_lock = threading.Lock()


def _acquire(config: dict):
    from kafka import KafkaProducer

    if config.get("transactional_id"):
        # never shared: a transactional id belongs to one producer at a time
        return KafkaProducer(**config, key_serializer=_NullKeySerializer())
    key = repr(sorted(config.items()))
    with _producers_lock:
        producer = _producers.get(key)
        if producer is None:
            producer = _producers[key] = KafkaProducer(**config, key_serializer=_NullKeySerializer())
        return producer


def _discard(config: dict, producer) -> None:
    with _producers_lock:
        for key, cached in list(_producers.items()):
            if cached is producer:
                del _producers[key]
    try:
        producer.close(timeout=5)
    except Exception:
        pass  # closing a broken producer is best effort; the task already fails with the real error


def close_producers() -> None:
    """Flush and close every cached producer (the lab's teardown calls it when the kernel exits).

    The offline engine imports nothing of the lab, so it has no exit handler of its own: in the kernel the lab's
    teardown (streamlab.lab.teardown, step "offline sink producers") calls this; in a Spark Python worker each
    KafkaProducer closes itself at exit (kafka-python registers that), and every task flushed before it returned."""
    with _producers_lock:
        cached = list(_producers.values())
        _producers.clear()
    for producer in cached:
        try:
            producer.close(timeout=5)
        except Exception:
            pass


# ---------------------------------------------------------------------------------------------------------------
# Writing: Arrow batches in, Kafka records out


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    """What one task wrote: the number of records the broker acknowledged."""

    records: int


class _NullKeySerializer(Serializer):
    """Passes keys through, and turns NULL_KEY into None: how a row with a null key and value reaches the wire.

    kafka-python's send() refuses a record whose key and value are both None ("Need at least one: key or value");
    the Java producer writes it, and so does the connector.
    """

    def serialize(self, topic, headers, data):
        """The key as given, None for NULL_KEY."""
        return None if data is NULL_KEY else data


NULL_KEY = object()


def _column(batch, name: str, kind: str | None):
    import pyarrow as pa

    if kind is None:
        return None
    column = batch.column(batch.schema.get_field_index(name))
    if name in (KEY, VALUE):
        # Cast(..., BinaryType) in the connector: strings become their UTF-8 bytes (zero-copy in Arrow).
        return column.cast(pa.large_binary()).to_pylist() if kind == "string" else column.to_pylist()
    if name == HEADERS:
        rows = [None if hs is None else [(h["key"], h["value"]) for h in hs] for hs in column.to_pylist()]
        if any(value is None for hs in rows if hs for _, value in hs):
            # kafka-python's producer cannot write a null header value (the Java producer can).
            raise KafkaWriteError("A header value is null: the offline engine's producer (kafka-python) cannot "
                                  "write null header values; use an empty value instead")
        return rows
    return column.to_pylist()


def _partition_of(producer, topic, partition, key, value) -> int:
    # Which partition the producer picked, for messages that name it (pinned kafka-python's own partitioner).
    try:
        return producer._partition(topic, partition, key, value, key, value)
    except Exception:  # noqa: BLE001 - only a message depends on it
        return 0 if partition is None else partition


def write_batches(plan: WritePlan, config: dict, batches) -> KafkaCommitMessage:
    """Send every row of the Arrow batches to Kafka, flush, and fail if any record was not delivered."""
    import time

    from kafka.errors import IllegalStateError

    producer = _acquire(config)
    outstanding: list = []  # futures not yet acknowledged
    sent = 0
    try:
        send = producer.send
        cols = plan.columns
        for batch in batches:
            n = batch.num_rows
            if n == 0:
                continue
            topics = repeat(plan.topic, n) if plan.topic is not None else _column(batch, TOPIC, "string")
            keys = _column(batch, KEY, cols.get(KEY)) or repeat(None, n)
            values = _column(batch, VALUE, cols[VALUE])
            headers = _column(batch, HEADERS, cols.get(HEADERS)) or repeat(None, n)
            partitions = _column(batch, PARTITION, cols.get(PARTITION)) or repeat(None, n)
            append = outstanding.append
            for topic, key, value, hs, partition in zip(topics, keys, values, headers, partitions):
                if topic is None:
                    raise IllegalStateException(NULL_TOPIC_MESSAGE)
                if key is None and value is None:
                    key = NULL_KEY
                try:
                    append(send(topic, value=value, key=key, headers=hs, partition=partition))
                except ValueError as exc:
                    if "Unrecognized partition" not in str(exc):
                        raise
                    # The Java producer waits max.block.ms for metadata that would show the partition.
                    wait_ms = config.get("max_block_ms", 60_000)
                    time.sleep(wait_ms / 1000)
                    count = len(producer.partitions_for(topic) or ())
                    raise TimeoutException(f"Partition {partition} of topic {topic} with partition count {count} "
                                           f"is not present in metadata after {wait_ms} ms.") from None
                except IllegalStateError as exc:
                    if "init_transactions" not in str(exc):
                        raise
                    # The Java producer accepts the record and fails once delivery.timeout.ms has passed.
                    time.sleep(config.get("delivery_timeout_ms", 120_000) / 1000)
                    where = f"{topic}-{_partition_of(producer, topic, partition, key, value)}"
                    raise IllegalStateException(NO_INIT_TRANSACTIONS_MESSAGE.format(tp=where)) from None
            sent += n
            # Like KafkaWriteTask, stop sending once a record has failed (checked once per Arrow batch).
            outstanding = _unacknowledged(outstanding)
        producer.flush()
        if _unacknowledged(outstanding):
            raise KafkaWriteError("Some records were still unacknowledged after flush()")
    except BaseException:
        _discard(config, producer)  # its state is unknown; the next task gets a fresh one
        raise
    if config.get("transactional_id"):
        producer.close(timeout=5)
    return KafkaCommitMessage(records=sent)


def _unacknowledged(futures: list) -> list:
    """The futures still in flight; raises on the first one that failed."""
    waiting = []
    for future in futures:
        if not future.is_done:
            waiting.append(future)
        elif future.failed():
            raise KafkaWriteError(f"Failed to send a record to Kafka: {future.exception!r}") from future.exception
    return waiting


# ---------------------------------------------------------------------------------------------------------------
# The writers Spark's Python data source API asks for


class _KafkaWriterBase:
    def __init__(self, options, schema):
        # Checked when the write is planned, so a bad schema or option fails before any task runs.
        self.config = producer_config(options)
        self.plan = plan_write(schema, option(options, TOPIC))

    def write(self, iterator):
        """Write one task's Arrow batches to Kafka and return how many records were sent."""
        return write_batches(self.plan, self.config, iterator)


class KafkaBatchWriter(_KafkaWriterBase, DataSourceArrowWriter):
    """The batch sink (`df.write.format("kafka")`): save modes Append and ErrorIfExists only."""

    def __init__(self, options, schema, overwrite: bool = False):
        if overwrite:
            # Spark passes only this flag to a Python sink; Ignore and ErrorIfExists are handled in
            # route_save_modes before Spark rejects them on its own terms.
            raise ValueError(SAVE_MODE_MESSAGE.format(mode="Overwrite"))
        super().__init__(options, schema)

    def commit(self, messages) -> None:
        """Nothing to do: each task flushed its own records (Kafka writes cannot be made atomic here)."""

    def abort(self, messages) -> None:
        """Nothing to undo: records already sent stay in the topic, as with Spark's connector."""


class KafkaStreamWriter(_KafkaWriterBase, DataSourceStreamArrowWriter):
    """The streaming sink (`writeStream.format("kafka")`): at-least-once, a re-run batch is written again."""

    def commit(self, messages, batchId: int) -> None:
        """Nothing to do: the records are in Kafka once every task has flushed."""

    def abort(self, messages, batchId: int) -> None:
        """Nothing to undo: a failed batch's records stay in the topic and the re-run writes them again."""


# ---------------------------------------------------------------------------------------------------------------
# Save modes: Spark's Python data source path knows only Append and Overwrite


def _checked_write_options(writer) -> dict:
    """The writer's Kafka options, validated on the driver as the connector does before any task runs."""
    from pyspark.errors import AnalysisException, PySparkException
    from pyspark.errors import IllegalArgumentException as PySparkIllegalArgumentException

    given = {k: v for k, v in getattr(writer, "_streamlab_options", {}).items() if v is not None}
    try:
        producer_config(given)
        plan_write(writer._df.schema, option(given, TOPIC))
    except IllegalArgumentException as exc:
        raise PySparkIllegalArgumentException(message=str(exc)) from None
    except ValueError as exc:
        raise AnalysisException(message=str(exc)) from None
    except SparkException as exc:
        raise PySparkException(message=str(exc)) from None
    return given


def route_save_modes() -> None:
    """Make `df.write.format("kafka")` accept Append and ErrorIfExists and reject Overwrite and Ignore, as Spark does.

    Spark hands a Python data source only an `overwrite` flag and itself refuses ErrorIfExists (the default!)
    and Ignore with UNSUPPORTED_DATA_SOURCE_SAVE_MODE before any Python code runs. So on the driver the Kafka
    write's mode is checked here: Overwrite and Ignore get the connector's AnalysisException, ErrorIfExists
    (Kafka has no "exists") is written as Append. The schema and options are checked here too, so their errors
    are raised on the driver with the connector's exception types (AnalysisException, IllegalArgumentException)
    and its one-line messages, instead of a Python worker's traceback wrapped in PYTHON_DATA_SOURCE_ERROR.
    """
    from streamlab import patches

    patches.install("offline-save-modes")
    patches.install("offline-stream-writes")  # with the batch hook, so the engine's install() needs one call


def _option_recorders(originals: dict):
    """A writer's format/option/options, each also noting on the writer what it was given (Spark keeps a writer's
    options in the JVM only): whether its format is this engine's, and its options by lower-cased key, the last one
    winning as in Spark. The save-mode and stream-write hooks read them."""
    from pyspark.sql.utils import to_str

    def _format(self, source):
        result = originals["format"](self, source)
        self._streamlab_kafka = serves(source)
        return result

    def _option(self, key, value):
        result = originals["option"](self, key, value)
        self.__dict__.setdefault("_streamlab_options", {})[key.lower()] = to_str(value)
        return result

    def _options(self, **opts):
        result = originals["options"](self, **opts)
        self.__dict__.setdefault("_streamlab_options", {}).update({k.lower(): to_str(v) for k, v in opts.items()})
        return result

    return _format, _option, _options


def save_mode_hooks(cls, originals: dict) -> dict:
    """The patch "offline-save-modes" (streamlab.patches) on DataFrameWriter: see route_save_modes."""
    from pyspark.errors import AnalysisException

    def _mode(self, saveMode):
        result = originals["mode"](self, saveMode)  # Spark validates the name first
        if saveMode is not None:
            self._streamlab_mode = str(saveMode).strip().lower()
        return result

    _format, _option, _options = _option_recorders(originals)

    def _save(self, path=None, format=None, mode=None, partitionBy=None, **opts):
        self.mode(mode).options(**opts)
        if partitionBy is not None:
            self.partitionBy(partitionBy)
        if format is not None:
            self.format(format)
        if getattr(self, "_streamlab_kafka", False):
            chosen = getattr(self, "_streamlab_mode", "errorifexists")
            if chosen in ("overwrite", "ignore"):
                raise AnalysisException(message=SAVE_MODE_MESSAGE.format(mode=chosen.capitalize()))
            _checked_write_options(self)
            originals["mode"](self, "append")
        return originals["save"](self, path)

    hooks = {}
    for new in (_mode, _format, _option, _options, _save):
        name = new.__name__.lstrip("_")
        new.__doc__ = originals[name].__doc__
        hooks[name] = new
    return hooks


def route_stream_writes() -> None:
    """Serve outputMode("update") of streaming Kafka writes through foreachBatch, and announce checkpoints.

    The connector accepts the Update output mode (it writes the rows each batch updated); it checks the schema and
    options only when the query runs its first batch, and so does the Python sink. A Python data source sink is
    refused Update by Spark itself ("... does not support Update mode", PySpark 4.2), so an Update-mode Kafka query
    runs as foreachBatch, each batch written by the batch sink with the query's options: the same records,
    at-least-once, with the same checkpoint; only its progress names the sink ForeachBatchSink. The hook also
    tells the offline source of any query where its checkpoint is (checkpoint.announce_checkpoint).
    """
    from streamlab import patches

    patches.install("offline-stream-writes")


def stream_write_hooks(cls, originals: dict) -> dict:
    """The patch "offline-stream-writes" (streamlab.patches) on DataStreamWriter: see route_stream_writes."""
    def _outputMode(self, outputMode):
        result = originals["outputMode"](self, outputMode)  # Spark validates the name first
        self._streamlab_output_mode = str(outputMode).strip().lower()
        return result

    _format, _option, _options = _option_recorders(originals)

    def _queryName(self, queryName):
        self._streamlab_query_name = queryName
        return originals["queryName"](self, queryName)

    def _start(self, path=None, format=None, outputMode=None, partitionBy=None, queryName=None, **opts):
        self.options(**opts)
        if outputMode is not None:
            self.outputMode(outputMode)
        if partitionBy is not None:
            self.partitionBy(partitionBy)
        if format is not None:
            self.format(format)
        if queryName is not None:
            self.queryName(queryName)
        if getattr(self, "_streamlab_kafka", False) and getattr(self, "_streamlab_output_mode", "append") == "update":
            # No checks here: like the connector's, a bad schema or option fails the query's first batch.
            given = {k: v for k, v in getattr(self, "_streamlab_options", {}).items() if v is not None}
            self.foreachBatch(_batch_writer(given))
        # Any query may read with the offline source, whatever it writes to: tell that source its checkpoint.
        entries = announce_checkpoint(self._df, getattr(self, "_streamlab_options", {}),
                                      getattr(self, "_streamlab_query_name", None))
        query = originals["start"](self, path)
        await_claims(entries, query)
        return query

    hooks = {}
    for new in (_outputMode, _format, _option, _options, _queryName, _start):
        name = new.__name__.lstrip("_")
        new.__doc__ = originals[name].__doc__
        hooks[name] = new
    return hooks


def _batch_writer(options: dict):
    def write(batch_df, batch_id):
        writer = batch_df.write.format(OFFLINE_NAME)
        for key, value in options.items():
            writer = writer.option(key, value)
        writer.save()

    return write
