"""Parse and validate the Kafka source options, with the checks, timing and messages of Spark's KafkaSourceProvider.

Option names are case-insensitive, as in Spark. The connector checks options at two moments, and so does this
module: `check_stream_load` / `check_batch_load` are what the connector checks at `.load()` (its
validateStreamOptions / validateBatchOptions, then the Boolean options its schema needs); they run on the driver
from the `load()` hook `source.route_reads` installs, so the learner gets the connector's exception type and text.
Everything else (JSON in assign or startingOffsets, failOnDataLoss, maxOffsetsPerTrigger, maxTriggerDelay, the
pattern) is parsed only by `parse_source_options`, which the stream reader calls when the query starts, where the
connector fails too. Values are parsed like the JVM parses them (`For input string: "x"`).
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field

log = logging.getLogger("streamlab.offline")

STRATEGY_KEYS = ("subscribe", "subscribepattern", "assign")  # the connector's Set order, used in its messages
EARLIEST, LATEST = -2, -1
DEFAULT_MAX_TRIGGER_DELAY = "15m"

# The connector's KAFKA_DATA_LOSS error class (kafka-error-conditions.json in spark-sql-kafka-0-10 4.2): the
# reason follows "Reason: ".
DATA_LOSS_PREFIX = (
    "Some data may have been lost because they are not available in Kafka any more;\n"
    "either the data was aged out by Kafka or the topic may have been deleted before all the data in the\n"
    "topic was processed.\n"
    "If you don't want your streaming query to fail on such cases, set the source option failOnDataLoss to false.\n"
    "Reason: ")
FAIL_ON_DATA_LOSS_FALSE = (
    "Some data may have been lost because they are not available in Kafka any more; either the data was aged "
    "out by Kafka or the topic may have been deleted before all the data in the topic was processed. If you "
    "want your streaming query to fail on such cases, set the source option \"failOnDataLoss\" to \"true\"."
)
AUTO_OFFSET_RESET_MESSAGE = (
    "\nKafka option 'auto.offset.reset' is not supported.\n"
    "Instead set the source option 'startingoffsets' to 'earliest' or 'latest'\n"
    "to specify where to start. Structured Streaming manages which offsets are consumed\n"
    "internally, rather than relying on the kafkaConsumer to do it. This will ensure that no\n"
    "data is missed when new topics/partitions are dynamically subscribed. Note that\n"
    "'startingoffsets' only applies when a new Streaming query is started, and\n"
    "that resuming will always pick up from where the query left off. See the docs for more\n"
    "details.\n         ")
CUSTOM_GROUP_ID_WARNING = (
    "Kafka option 'kafka.group.id' has been set on this query, it is not recommended to set this option. This "
    "option is unsafe to use since multiple concurrent queries or sources using the same group id will interfere "
    "with each other as they are part of the same consumer group. Restarted queries may also suffer interference "
    "from the previous run having the same group id. The user should have only one query per group id, and/or set "
    "the option 'kafka.session.timeout.ms' to be very small so that the Kafka consumers from the previous query "
    "are marked dead by the Kafka group coordinator before the restarted query starts running."
)


_WARNED_GROUP_IDS: set = set()


class IllegalArgumentException(ValueError):
    """A bad source option; named like the connector's exception so tracebacks read the same."""


class NumberFormatException(IllegalArgumentException):
    """A number option that is not a number, as java.lang.NumberFormatException (a kind of IllegalArgument)."""


class IllegalStateException(RuntimeError):
    """Offsets that vanished (data loss) with failOnDataLoss=true, named like the connector's exception."""


KafkaIllegalStateException = IllegalStateException


def data_loss_message(reason: str) -> str:
    """The connector's KAFKA_DATA_LOSS message for `reason` (one of its sub-class texts)."""
    return DATA_LOSS_PREFIX + reason


@dataclass(frozen=True)
class StartSpec:
    """Where a read starts or ends: kind is 'earliest', 'latest', 'offsets', 'timestamp' or 'timestamps'."""

    kind: str
    offsets: dict = field(default_factory=dict)  # {(topic, partition): offset or timestamp}
    timestamp: int | None = None
    strategy_on_no_match: str = "error"


@dataclass(frozen=True)
class SourceOptions:
    """The validated source options the stream and batch readers work from."""

    strategy: str
    topics: tuple = ()
    pattern: str | None = None
    assigned: tuple = ()  # ((topic, partition), ...)
    bootstrap_servers: str = ""
    kafka_params: dict = field(default_factory=dict)  # kafka.* options without the prefix, keys lower-cased
    fail_on_data_loss: bool = True
    include_headers: bool = False
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    poll_timeout_ms: int = 120_000
    fetch_offset_num_retries: int = 3
    fetch_offset_retry_interval_ms: int = 1000
    raw: dict = field(default_factory=dict)  # every option, keys lower-cased


def lower_keys(options) -> dict:
    """The options as a plain dict with lower-cased keys (Spark's options are case-insensitive)."""
    return {str(k).lower(): str(v) for k, v in dict(options or {}).items()}


def to_bool(name: str, value: str) -> bool:
    """Option `name`'s value as Scala's String.toBoolean reads it: true/false in any case, no spaces, anything
    else fails with Spark's text."""
    low = value.lower()
    if low in ("true", "false"):
        return low == "true"
    raise IllegalArgumentException(f'For input string: "{value}"')


_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def _to_int(name: str, value: str, bits: int = 32) -> int:
    # Integer.parseInt / Long.parseLong (Scala's toInt / toLong): no spaces, no decimals, within range.
    if _JAVA_INT.fullmatch(value):
        number = int(value)
        if -(1 << (bits - 1)) <= number < (1 << (bits - 1)):
            return number
    raise NumberFormatException(f'For input string: "{value}"')


def _to_long(name: str, value: str) -> int:
    return _to_int(name, value, bits=64)


_TIME_UNITS_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


_TIME_ERROR = ("Time must be specified as seconds (s), milliseconds (ms), microseconds (us), minutes (m or min), "
               "hour (h), or day (d). E.g. 50s, 100ms, or 250us.")


def time_string_ms(value: str) -> int:
    """Milliseconds in a Spark time string ('15m', '5s', '100ms', bare numbers are ms), as JavaUtils.timeStringAsMs."""
    lower = value.lower().strip()
    match = re.fullmatch(r"(-?[0-9]+)([a-z]+)?", lower)
    if not match:
        raise NumberFormatException(f"{_TIME_ERROR}\nFailed to parse time string: {value}")
    number, suffix = int(match.group(1)), match.group(2) or "ms"
    if suffix not in _TIME_UNITS_MS:
        raise NumberFormatException(f'{_TIME_ERROR}\nInvalid suffix: "{suffix}"')
    return int(number * _TIME_UNITS_MS[suffix])


def parse_assign(value: str) -> tuple:
    """The (topic, partition) pairs of an `assign` JSON value such as {"t":[0,1]}."""
    try:
        data = json.loads(value)
        pairs = [(str(t), int(p)) for t, parts in data.items() for p in parts]
        if any(not isinstance(p, int) or isinstance(p, bool) for parts in data.values() for p in parts):
            raise TypeError
    except (ValueError, TypeError, AttributeError):
        raise IllegalArgumentException(f'Expected e.g. {{"topicA":[0,1],"topicB":[0,1]}}, got {value}') from None
    return tuple(pairs)


def parse_partition_offsets(value: str) -> dict:
    """{(topic, partition): offset} from JSON such as {"t":{"0":23,"1":-2}} (-2 earliest, -1 latest)."""
    try:
        data = json.loads(value)
        result = {}
        for topic, parts in data.items():
            for part, off in parts.items():
                if isinstance(off, bool) or not isinstance(off, int):
                    raise TypeError
                result[(str(topic), int(part))] = off
    except (ValueError, TypeError, AttributeError):
        raise IllegalArgumentException(
            f'Expected e.g. {{"topicA":{{"0":23,"1":-1}},"topicB":{{"0":-2}}}}, got {value}') from None
    return result


def _parse_partition_timestamps(value: str) -> dict:
    try:
        return parse_partition_offsets(value)
    except IllegalArgumentException:
        raise IllegalArgumentException(
            f'Expected e.g. {{"topicA": {{"0": 123456789, "1": 123456789}}, '
            f'"topicB": {{"0": 123456789, "1": 123456789}}}}, got {value}') from None


def offset_range_limit(raw: dict, ts_key: str, by_ts_key: str, offsets_key: str, default: str) -> StartSpec:
    """Starting or ending position, in the connector's order of preference: timestamp, per-partition, offsets."""
    strategy = raw.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise IllegalArgumentException(
            f"Option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', got '{strategy}'")
    if ts_key in raw:
        text = raw[ts_key].strip()
        try:
            return StartSpec("timestamp", timestamp=int(text), strategy_on_no_match=strategy)
        except ValueError:
            raise IllegalArgumentException(f"Expected a single long value, got {text}") from None
    if by_ts_key in raw:
        return StartSpec("timestamps", offsets=_parse_partition_timestamps(raw[by_ts_key].strip()),
                         strategy_on_no_match=strategy)
    value = raw.get(offsets_key)
    if value is None:
        return StartSpec(default)
    value = value.strip()
    if value.lower() in ("earliest", "latest"):
        return StartSpec(value.lower())
    return StartSpec("offsets", offsets=parse_partition_offsets(value))


def starting_spec(raw: dict, default: str) -> StartSpec:
    """The startingTimestamp / startingOffsetsByTimestamp / startingOffsets position."""
    return offset_range_limit(raw, "startingtimestamp", "startingoffsetsbytimestamp", "startingoffsets", default)


def ending_spec(raw: dict) -> StartSpec:
    """The endingTimestamp / endingOffsetsByTimestamp / endingOffsets position (batch reads only)."""
    return offset_range_limit(raw, "endingtimestamp", "endingoffsetsbytimestamp", "endingoffsets", "latest")


def _strategy(raw: dict) -> tuple[str, str]:
    chosen = [k for k in STRATEGY_KEYS if k in raw]
    if not chosen:
        raise IllegalArgumentException("One of the following options must be specified for Kafka source: "
                                       + ", ".join(STRATEGY_KEYS) + ". See the docs for more details.")
    if len(chosen) > 1:
        raise IllegalArgumentException("Only one of the following options can be specified for Kafka source: "
                                       + ", ".join(STRATEGY_KEYS) + ". See the docs for more details.")
    return chosen[0], raw[chosen[0]]


def _topics(value: str) -> tuple:
    return tuple(t.strip() for t in value.split(",") if t.strip())


def check_general(options) -> None:
    """The connector's validateGeneralOptions, in its order: what fails any Kafka read at `.load()`."""
    raw = lower_keys(options)
    strategy, value = _strategy(raw)
    if strategy == "assign" and not value.strip().startswith("{"):
        raise IllegalArgumentException(
            f"No topicpartitions to assign as specified value for option 'assign' is '{value}'")
    if strategy == "subscribe" and not _topics(value):
        raise IllegalArgumentException(
            f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'")
    if strategy == "subscribepattern" and not value.strip():
        raise IllegalArgumentException(
            f"Pattern to subscribe is empty as specified value for option 'subscribePattern' is '{value}'")
    if "minpartitions" in raw and _to_int("minPartitions", raw["minpartitions"]) <= 0:
        raise IllegalArgumentException("minPartitions must be positive")
    if "maxrecordsperpartition" in raw and _to_long("maxRecordsPerPartition", raw["maxrecordsperpartition"]) <= 0:
        raise IllegalArgumentException("maxrecordsperpartition must be positive")
    if "kafka.group.id" in raw and raw["kafka.group.id"] not in _WARNED_GROUP_IDS:
        _WARNED_GROUP_IDS.add(raw["kafka.group.id"])  # the driver, the stream reader and each task parse the options
        log.warning(CUSTOM_GROUP_ID_WARNING)
        if "groupidprefix" in raw:
            log.warning("Option groupIdPrefix will be ignored as option kafka.group.id has been set.")
    _reject_consumer_options(raw)
    if "kafka.bootstrap.servers" not in raw:
        raise IllegalArgumentException(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer")
    if "maxoffsetspertrigger" in raw and "minoffsetspertrigger" in raw:
        max_offsets = _to_long("maxOffsetsPerTrigger", raw["maxoffsetspertrigger"])
        min_offsets = _to_long("minOffsetsPerTrigger", raw["minoffsetspertrigger"])
        if min_offsets > max_offsets:
            raise IllegalArgumentException(f"The value of minOffsetPerTrigger({min_offsets}) is higher than the "
                                           f"maxOffsetsPerTrigger({max_offsets}).")


def check_stream_load(options) -> None:
    """What the connector rejects at `spark.readStream...load()`: endingOffsets, then the general checks."""
    raw = lower_keys(options)
    if "endingoffsets" in raw:
        raise IllegalArgumentException("ending offset not valid in streaming queries")
    if "endingoffsetsbytimestamp" in raw:
        raise IllegalArgumentException("ending timestamp not valid in streaming queries")
    check_general(raw)
    to_bool("includeHeaders", raw.get("includeheaders", "false"))  # the schema depends on it


def check_batch_load(options) -> tuple[StartSpec, StartSpec]:
    """What the connector rejects at `spark.read...load()`; returns the starting and ending positions."""
    raw = lower_keys(options)
    start = starting_spec(raw, "earliest")
    if start.kind == "latest":
        raise IllegalArgumentException("starting offset can't be latest for batch queries on Kafka")
    if start.kind == "offsets":
        for (topic, part), off in start.offsets.items():
            if off == LATEST:
                raise IllegalArgumentException(
                    f"startingOffsets for {topic}-{part} can't be latest for batch queries on Kafka")
    end = ending_spec(raw)
    if end.kind == "earliest":
        raise IllegalArgumentException("ending offset can't be earliest for batch queries on Kafka")
    if end.kind == "offsets":
        for (topic, part), off in end.offsets.items():
            if off == EARLIEST:
                raise IllegalArgumentException(
                    f"ending offset for {topic}-{part} can't be earliest for batch queries on Kafka")
    check_general(raw)
    for key, name in (("maxoffsetspertrigger", "maxOffsetsPerTrigger"),
                      ("minoffsetspertrigger", "minOffsetsPerTrigger"), ("maxtriggerdelay", "maxTriggerDelay")):
        if key in raw:
            log.warning("%s option ignored in batch queries", name)
    _check_offset_limits(start, end)
    to_bool("failOnDataLoss", raw.get("failondataloss", "true"))
    to_bool("includeHeaders", raw.get("includeheaders", "false"))
    return start, end


def _check_offset_limits(start: StartSpec, end: StartSpec) -> None:
    # The connector's checkOffsetLimitValidity: only when both ends are given the same way.
    if start.kind == end.kind and start.kind in ("offsets", "timestamps"):
        if set(start.offsets) != set(end.offsets):
            raise IllegalArgumentException(
                "The specified start offset and end offset should have the same topic-partitions.\n"
                f"Topic-partitions for start offset: {_tp_set(start.offsets)}, topic-partitions for end offset: "
                f"{_tp_set(end.offsets)}.")
        kind = "offset" if start.kind == "offsets" else "timestamp"
        for (topic, part), first in sorted(start.offsets.items()):
            last = end.offsets[(topic, part)]
            if first >= 0 and last >= 0 and first > last:
                raise IllegalArgumentException(
                    f"The specified start {kind} {first} is greater than the end {kind} {last} for topic {topic} "
                    f"partition {part}.")
    elif start.kind == end.kind == "timestamp" and start.timestamp > end.timestamp:
        raise IllegalArgumentException(
            f"The specified start timestamp {start.timestamp} is greater than the end timestamp {end.timestamp} "
            "for all topic partitions.")


def _java_regex(pattern: str):
    # Python's re reads the regexes learners write for Java; Java-only syntax fails here with Python's words.
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise IllegalArgumentException(f"{exc.msg} near index {exc.pos}\n{pattern}") from None


def parse_source_options(options) -> SourceOptions:
    """Every source option parsed: the general checks, then what the connector parses when the query starts."""
    raw = lower_keys(options)
    check_general(raw)
    strategy, value = _strategy(raw)
    topics, pattern, assigned = (), None, ()
    if strategy == "assign":
        assigned = parse_assign(value)
    elif strategy == "subscribe":
        topics = _topics(value)
    else:
        pattern = value.strip()
        _java_regex(pattern)
    return SourceOptions(
        strategy=strategy, topics=topics, pattern=pattern, assigned=assigned,
        bootstrap_servers=raw["kafka.bootstrap.servers"],
        kafka_params={k[len("kafka."):]: v for k, v in raw.items() if k.startswith("kafka.")},
        fail_on_data_loss=to_bool("failOnDataLoss", raw.get("failondataloss", "true")),
        include_headers=to_bool("includeHeaders", raw.get("includeheaders", "false")),
        min_partitions=_optional_int(raw, "minpartitions", "minPartitions"),
        max_records_per_partition=_optional_long(raw, "maxrecordsperpartition", "maxRecordsPerPartition"),
        max_offsets_per_trigger=_optional_long(raw, "maxoffsetspertrigger", "maxOffsetsPerTrigger"),
        min_offsets_per_trigger=_optional_long(raw, "minoffsetspertrigger", "minOffsetsPerTrigger"),
        max_trigger_delay_ms=time_string_ms(raw.get("maxtriggerdelay", DEFAULT_MAX_TRIGGER_DELAY)),
        poll_timeout_ms=_to_long("kafkaConsumer.pollTimeoutMs", raw.get("kafkaconsumer.polltimeoutms", "120000")),
        fetch_offset_num_retries=_to_int("fetchOffset.numRetries", raw.get("fetchoffset.numretries", "3")),
        fetch_offset_retry_interval_ms=_to_long("fetchOffset.retryIntervalMs",
                                                raw.get("fetchoffset.retryintervalms", "1000")),
        raw=raw,
    )


def _optional_int(raw: dict, key: str, name: str) -> int | None:
    return _to_int(name, raw[key]) if key in raw else None


def _optional_long(raw: dict, key: str, name: str) -> int | None:
    return _to_long(name, raw[key]) if key in raw else None


def _reject_consumer_options(raw: dict) -> None:
    if "kafka.auto.offset.reset" in raw:
        raise IllegalArgumentException(AUTO_OFFSET_RESET_MESSAGE)
    if "kafka.key.deserializer" in raw:
        raise IllegalArgumentException(
            "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte arrays with "
            "ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the keys.")
    if "kafka.value.deserializer" in raw:
        raise IllegalArgumentException(
            "Kafka option 'value.deserializer' is not supported as values are deserialized as byte arrays with "
            "ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the values.")
    for name in ("enable.auto.commit", "interceptor.classes"):
        if f"kafka.{name}" in raw:
            raise IllegalArgumentException(f"Kafka option '{name}' is not supported")


def validate_stream(options) -> SourceOptions:
    """A streaming read's options, checked as the connector checks them from `.load()` to the query's start."""
    check_stream_load(options)
    return parse_source_options(options)


def validate_batch(options) -> SourceOptions:
    """A batch read's options: the batch checks (no latest start, no earliest end), then every option parsed."""
    check_batch_load(options)
    return parse_source_options(options)


def _tp_set(offsets: dict) -> str:
    return "Set(" + ", ".join(f"{t}-{p}" for t, p in sorted(offsets)) + ")"


# kafka.* options that map onto kafka-python's client arguments, and how to convert their values.
_INT = int
_CLIENT_OPTIONS = {
    "bootstrap.servers": ("bootstrap_servers", lambda v: [s.strip() for s in v.split(",") if s.strip()]),
    "client.id": ("client_id", str),
    "security.protocol": ("security_protocol", str),
    "sasl.mechanism": ("sasl_mechanism", str),
    "sasl.kerberos.service.name": ("sasl_kerberos_service_name", str),
    "ssl.endpoint.identification.algorithm": ("ssl_check_hostname", lambda v: v.strip().lower() == "https"),
    "ssl.ca.location": ("ssl_cafile", str),
    "ssl.certificate.location": ("ssl_certfile", str),
    "ssl.key.location": ("ssl_keyfile", str),
    "ssl.key.password": ("ssl_password", str),
    "request.timeout.ms": ("request_timeout_ms", _INT),
    "retry.backoff.ms": ("retry_backoff_ms", _INT),
    "reconnect.backoff.ms": ("reconnect_backoff_ms", _INT),
    "connections.max.idle.ms": ("connections_max_idle_ms", _INT),
    "metadata.max.age.ms": ("metadata_max_age_ms", _INT),
    "receive.buffer.bytes": ("receive_buffer_bytes", _INT),
    "send.buffer.bytes": ("send_buffer_bytes", _INT),
}
_CONSUMER_ONLY = {
    "isolation.level": ("isolation_level", lambda v: v.strip().lower()),
    "fetch.max.bytes": ("fetch_max_bytes", _INT),
    "fetch.min.bytes": ("fetch_min_bytes", _INT),
    "fetch.max.wait.ms": ("fetch_max_wait_ms", _INT),
    "max.partition.fetch.bytes": ("max_partition_fetch_bytes", _INT),
    "max.poll.records": ("max_poll_records", _INT),
    "check.crcs": ("check_crcs", lambda v: v.strip().lower() == "true"),
}
# Consumers here are assigned partitions and never join a group or commit, so group.id names nothing; the
# others matter only to group membership or topic auto-creation.
_SILENTLY_IGNORED = {"group.id", "session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms",
                     "default.api.timeout.ms", "auto.commit.interval.ms", "partition.assignment.strategy",
                     "allow.auto.create.topics"}


def _jaas_credentials(jaas: str) -> dict:
    user = re.search(r'username\s*=\s*"([^"]*)"', jaas)
    password = re.search(r'password\s*=\s*"([^"]*)"', jaas)
    out = {}
    if user:
        out["sasl_plain_username"] = user.group(1)
    if password:
        out["sasl_plain_password"] = password.group(1)
    return out


def client_config(kafka_params: dict, consumer: bool = True, warn: bool = False) -> dict:
    """kafka-python keyword arguments for the kafka.* options that have a Python equivalent."""
    table = dict(_CLIENT_OPTIONS, **(_CONSUMER_ONLY if consumer else {}))
    config = {}
    for key, value in kafka_params.items():
        if key in table:
            name, convert = table[key]
            try:
                config[name] = convert(value)
            except ValueError:
                raise IllegalArgumentException(f"Kafka option '{key}' has an invalid value '{value}'") from None
        elif key == "sasl.jaas.config":
            config.update(_jaas_credentials(value))
        elif key not in _SILENTLY_IGNORED and warn:
            log.warning("Kafka option 'kafka.%s' has no equivalent in the offline engine's Python client "
                        "and is ignored", key)
    if config.get("isolation_level") not in (None, "read_committed", "read_uncommitted"):
        raise IllegalArgumentException("Kafka option 'isolation.level' must be read_committed or read_uncommitted, "
                                       f"got '{kafka_params.get('isolation.level')}'")
    return config
