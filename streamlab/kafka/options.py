"""Parse and validate the Kafka source options, with the checks and messages of Spark's KafkaSourceProvider.

Option names are case-insensitive, as in Spark. Validation is split the way the connector splits it:
`parse_source_options` runs the general checks (shared by batch and streaming reads, called from
`DataSource.schema()`, so they fail at `.load()`), `validate_stream` / `validate_batch` the checks that depend
on the kind of read. PySpark's `DataSource.schema()` cannot tell a stream from a batch, so "ending offset not
valid in streaming queries" surfaces when the query starts, not at `.load()` as with the connector. Writes never
call `schema()` (checked on PySpark 4.3), so these checks cannot break `df.write.format("kafka")`.

`maxRecordsPerPartition` (4.0) is rejected with a clear message: the offline engine does not split by it.
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field

log = logging.getLogger("streamlab.kafka")

STRATEGY_KEYS = ("subscribe", "subscribepattern", "assign")  # the connector's Set order, used in its messages
EARLIEST, LATEST = -2, -1
DEFAULT_MAX_TRIGGER_DELAY = "15m"

FAIL_ON_DATA_LOSS_TRUE = (
    "Some data may have been lost because they are not available in Kafka any more; either the data was aged "
    "out by Kafka or the topic may have been deleted before all the data in the topic was processed. If you "
    "don't want your streaming query to fail on such cases, set the source option \"failOnDataLoss\" to \"false\"."
)
FAIL_ON_DATA_LOSS_FALSE = (
    "Some data may have been lost because they are not available in Kafka any more; either the data was aged "
    "out by Kafka or the topic may have been deleted before all the data in the topic was processed. If you "
    "want your streaming query to fail on such cases, set the source option \"failOnDataLoss\" to \"true\"."
)
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


class IllegalStateException(RuntimeError):
    """Offsets that vanished (data loss) with failOnDataLoss=true, named like the connector's exception."""


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


def _to_bool(name: str, value: str) -> bool:
    # Scala's String.toBoolean: true/false in any case, anything else fails.
    low = value.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    raise IllegalArgumentException(f"Option '{name}' must be true or false, got '{value}'")


def _to_int(name: str, value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise IllegalArgumentException(f"Option '{name}' must be a whole number, got '{value}'") from None


_TIME_UNITS_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def time_string_ms(value: str) -> int:
    """Milliseconds in a Spark time string ('15m', '5s', '100ms', bare numbers are ms), as Utils.timeStringAsMs."""
    match = re.fullmatch(r"(-?[0-9]+)([a-z]+)?", value.strip().lower())
    if not match:
        raise IllegalArgumentException(
            "Time must be specified as seconds (s), milliseconds (ms), microseconds (us), minutes (m or min), "
            f"hour (h), or day (d). E.g. 50s, 100ms, or 250us. Got maxTriggerDelay '{value}'")
    number, suffix = int(match.group(1)), match.group(2) or "ms"
    if suffix not in _TIME_UNITS_MS:
        raise IllegalArgumentException(f"Invalid suffix: \"{suffix}\" in maxTriggerDelay '{value}'")
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


def parse_source_options(options) -> SourceOptions:
    """Validate the options shared by batch and streaming reads (the connector's validateGeneralOptions)."""
    raw = lower_keys(options)
    chosen = [k for k in STRATEGY_KEYS if k in raw]
    if not chosen:
        raise IllegalArgumentException("One of the following options must be specified for Kafka source: "
                                       + ", ".join(STRATEGY_KEYS) + ". See the docs for more details.")
    if len(chosen) > 1:
        raise IllegalArgumentException("Only one of the following options can be specified for Kafka source: "
                                       + ", ".join(STRATEGY_KEYS) + ". See the docs for more details.")
    strategy, value = chosen[0], raw[chosen[0]]
    topics, pattern, assigned = (), None, ()
    if strategy == "assign":
        if not value.strip().startswith("{"):
            raise IllegalArgumentException(
                f"No topicpartitions to assign as specified value for option 'assign' is '{value}'")
    elif strategy == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise IllegalArgumentException(
                f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'")
    else:
        pattern = value.strip()
        if not pattern:
            raise IllegalArgumentException(
                f"Pattern to subscribe is empty as specified value for option 'subscribePattern' is '{value}'")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise IllegalArgumentException(
                f"Option 'subscribePattern' is not a valid regex '{pattern}': {exc}") from None

    min_partitions = None
    if "minpartitions" in raw:
        min_partitions = _to_int("minPartitions", raw["minpartitions"])
        if min_partitions <= 0:
            raise IllegalArgumentException("minPartitions must be positive")
    if "maxrecordsperpartition" in raw:
        if _to_int("maxRecordsPerPartition", raw["maxrecordsperpartition"]) <= 0:
            raise IllegalArgumentException("maxRecordsPerPartition must be positive")
        raise IllegalArgumentException("Option 'maxRecordsPerPartition' is not supported by the offline engine: "
                                       "use minPartitions, or run with Spark's Kafka connector")

    if "kafka.group.id" in raw and raw["kafka.group.id"] not in _WARNED_GROUP_IDS:
        _WARNED_GROUP_IDS.add(raw["kafka.group.id"])  # schema(), the driver and each task parse the options
        log.warning(CUSTOM_GROUP_ID_WARNING)
        if "groupidprefix" in raw:
            log.warning("Option groupIdPrefix will be ignored as option kafka.group.id has been set.")
    _reject_consumer_options(raw)
    if "kafka.bootstrap.servers" not in raw:
        raise IllegalArgumentException(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer")

    max_offsets = _optional_int(raw, "maxoffsetspertrigger", "maxOffsetsPerTrigger")
    min_offsets = _optional_int(raw, "minoffsetspertrigger", "minOffsetsPerTrigger")
    if max_offsets is not None and min_offsets is not None and min_offsets > max_offsets:
        raise IllegalArgumentException(f"The value of minOffsetPerTrigger({min_offsets}) is higher than the "
                                       f"maxOffsetsPerTrigger({max_offsets}).")
    if strategy == "assign":
        assigned = parse_assign(value)
    return SourceOptions(
        strategy=strategy, topics=topics, pattern=pattern, assigned=assigned,
        bootstrap_servers=raw["kafka.bootstrap.servers"],
        kafka_params={k[len("kafka."):]: v for k, v in raw.items() if k.startswith("kafka.")},
        fail_on_data_loss=_to_bool("failOnDataLoss", raw.get("failondataloss", "true")),
        include_headers=_to_bool("includeHeaders", raw.get("includeheaders", "false")),
        min_partitions=min_partitions,
        max_offsets_per_trigger=max_offsets,
        min_offsets_per_trigger=min_offsets,
        max_trigger_delay_ms=time_string_ms(raw.get("maxtriggerdelay", DEFAULT_MAX_TRIGGER_DELAY)),
        poll_timeout_ms=_to_int("kafkaConsumer.pollTimeoutMs", raw.get("kafkaconsumer.polltimeoutms", "120000")),
        fetch_offset_num_retries=_to_int("fetchOffset.numRetries", raw.get("fetchoffset.numretries", "3")),
        fetch_offset_retry_interval_ms=_to_int("fetchOffset.retryIntervalMs",
                                               raw.get("fetchoffset.retryintervalms", "1000")),
        raw=raw,
    )


def _optional_int(raw: dict, key: str, name: str) -> int | None:
    return _to_int(name, raw[key]) if key in raw else None


def _reject_consumer_options(raw: dict) -> None:
    if "kafka.auto.offset.reset" in raw:
        raise IllegalArgumentException(
            "Kafka option 'auto.offset.reset' is not supported. Instead set the source option 'startingoffsets' to "
            "'earliest' or 'latest' to specify where to start. Structured Streaming manages which offsets are "
            "consumed internally, rather than relying on the kafkaConsumer to do it. This will ensure that no data "
            "is missed when new topics/partitions are dynamically subscribed. Note that 'startingoffsets' only "
            "applies when a new Streaming query is started, and that resuming will always pick up from where the "
            "query left off. See the docs for more details.")
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
    """The streaming checks (endingOffsets is batch-only), then the general ones."""
    raw = lower_keys(options)
    if "endingoffsets" in raw:
        raise IllegalArgumentException("ending offset not valid in streaming queries")
    if "endingoffsetsbytimestamp" in raw:
        raise IllegalArgumentException("ending timestamp not valid in streaming queries")
    return parse_source_options(raw)


def validate_batch(options) -> SourceOptions:
    """The batch checks (no latest start, no earliest end), then the general ones, as validateBatchOptions."""
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
    opts = parse_source_options(raw)
    for key, name in (("maxoffsetspertrigger", "maxOffsetsPerTrigger"),
                      ("minoffsetspertrigger", "minOffsetsPerTrigger"), ("maxtriggerdelay", "maxTriggerDelay")):
        if key in raw:
            log.warning("%s option ignored in batch queries", name)
    if start.kind == "offsets" and end.kind == "offsets":
        if set(start.offsets) != set(end.offsets):
            raise IllegalArgumentException(
                "The specified start and end offsets must cover the same topic-partitions: start "
                f"{_tp_set(start.offsets)}, end {_tp_set(end.offsets)}")
        for tp, first in start.offsets.items():
            last = end.offsets[tp]
            if first > last >= 0 and first >= 0:
                raise IllegalArgumentException(
                    f"The start offset {first} for {tp[0]}-{tp[1]} is greater than the end offset {last}")
    return opts


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
