"""The driver's offset reader, like the connector's KafkaOffsetReaderAdmin: which partitions, and their offsets.

It uses kafka-python's admin client (never a group member, never committing), kept open on the driver for the
life of the query and closed by `close()`. Topics and partitions are re-listed on every call, so new partitions
and topics that start matching `subscribePattern` are picked up at the next trigger. The pattern is matched
unanchored (`re.search`, like Scala's `findFirstIn`), so `events-.*` also matches `old-events-1`. Python's `re`
accepts the regexes learners write for Java (`^events-.*$`, `[a-z]+`, `\\d`); Java-only syntax such as
possessive quantifiers is rejected when the options are validated.
"""
from __future__ import annotations

import logging
import time

from streamlab.offline.options import (
    EARLIEST, LATEST, IllegalArgumentException, IllegalStateException, SourceOptions, client_config,
)
from streamlab.offline.planner import tp_name, tp_set

log = logging.getLogger("streamlab.offline")


UNKNOWN_TOPIC_OR_PARTITION = 3  # Kafka's error code


class UnknownTopicOrPartitionException(RuntimeError):
    """A subscribed topic that does not exist: Kafka's Java exception and text, which the connector lets through."""


class OffsetReader:
    """Lists the subscribed topic-partitions and their earliest, latest and by-timestamp offsets."""

    def __init__(self, opts: SourceOptions):
        self.opts = opts
        self._admin = None
        self._isolation = opts.kafka_params.get("isolation.level", "read_uncommitted").strip().lower()

    def _client(self):
        if self._admin is None:
            from kafka import KafkaAdminClient

            config = client_config(self.opts.kafka_params, consumer=False)
            config.setdefault("request_timeout_ms", 30_000)
            self._admin = KafkaAdminClient(**config)
        return self._admin

    def close(self) -> None:
        """Close the admin client; a later call opens a new one."""
        if self._admin is not None:
            try:
                self._admin.close()
            finally:
                self._admin = None

    def _with_retries(self, body):
        # As the connector's withRetries: fetchOffset.numRetries attempts, a fresh client after each failure.
        attempts = max(self.opts.fetch_offset_num_retries, 1)
        for attempt in range(1, attempts + 1):
            try:
                return body()
            except (IllegalArgumentException, IllegalStateException, AssertionError):
                raise
            except Exception as exc:  # noqa: BLE001 - any client failure is retried, then re-raised
                if attempt == attempts:
                    raise
                log.warning("Error in attempt %d getting Kafka offsets: %s", attempt, exc)
                time.sleep(self.opts.fetch_offset_retry_interval_ms / 1000)
                self.close()

    def _describe(self, topics) -> set:
        if not topics:
            return set()
        found = set()
        for info in self._client().describe_topics(sorted(topics)):
            name = info.get("name") or info.get("topic")
            if info.get("error_code") == UNKNOWN_TOPIC_OR_PARTITION:
                raise UnknownTopicOrPartitionException("This server does not host this topic-partition.")
            if info.get("error_code"):
                from kafka.errors import for_code

                error = for_code(info["error_code"])
                raise error(f"Topic '{name}': {error.description}")
            if info.get("is_internal"):
                continue
            found.update((name, p["partition_index"]) for p in info.get("partitions", []))
        return found

    def _assigned_once(self) -> set:
        opts = self.opts
        if opts.strategy == "subscribe":
            return self._describe(opts.topics)
        if opts.strategy == "assign":
            wanted = set(opts.assigned)
            return self._describe({t for t, _ in wanted}) & wanted
        import re

        regex = re.compile(opts.pattern)
        names = [t for t in self._client().list_topics() if not t.startswith("__") and regex.search(t)]
        return self._describe(names)

    def partitions(self) -> set:
        """The topic-partitions the subscription covers right now."""
        return self._with_retries(self._assigned_once)

    def _list(self, specs: dict) -> dict:
        if not specs:
            return {}
        from kafka import TopicPartition
        from kafka.admin import OffsetSpec
        from kafka.protocol.consumer.offsets import IsolationLevel

        committed = self._isolation == "read_committed"
        level = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
        request = {}
        for (topic, part), spec in specs.items():
            if spec == LATEST:
                spec = OffsetSpec.LATEST
            elif spec == EARLIEST:
                spec = OffsetSpec.EARLIEST
            request[TopicPartition(topic, part)] = spec
        result = self._client().list_partition_offsets(request, isolation_level=level)
        return {(tp.topic, tp.partition): info.offset for tp, info in result.items()}

    def earliest(self, tps=None) -> dict:
        """{tp: earliest offset} for `tps` (those still present), or for every subscribed partition."""
        def body():
            current = self._assigned_once()
            wanted = current if tps is None else set(tps) & current
            return self._list({tp: EARLIEST for tp in wanted})
        return self._with_retries(body)

    def latest(self, known: dict | None = None) -> dict:
        """{tp: latest offset} for every subscribed partition, re-fetched if it went behind `known`."""
        def body():
            specs = {tp: LATEST for tp in self._assigned_once()}
            attempt = 0
            while True:
                offsets = self._list(specs)
                attempt += 1
                wrong = [(tp, known[tp], off) for tp, off in offsets.items() if known and known.get(tp, -1) > off]
                if not wrong or attempt >= max(self.opts.fetch_offset_num_retries, 1):
                    return offsets
                log.warning("Found incorrect offsets in some partitions (partition, previous offset, fetched "
                            "offset): %s", [(tp_name(tp), k, o) for tp, k, o in wrong])
                time.sleep(self.opts.fetch_offset_retry_interval_ms / 1000)
        return self._with_retries(body)

    def specific(self, offsets: dict, stream: bool = False) -> dict:
        """Resolve a startingOffsets JSON map (-2 earliest, -1 latest), which must name every partition."""
        def body():
            assigned = self._assigned_once()
            if assigned != set(offsets) and stream:
                # The stream's check is still a Scala assert in the 4.2 connector, hence its prefix.
                raise AssertionError(
                    "assertion failed: If startingOffsets contains specific offsets, you must specify all "
                    "TopicPartitions.\nUse -1 for latest, -2 for earliest, if you don't care.\n"
                    f"Specified: {tp_set(offsets)} Assigned: {tp_set(assigned)}")
            if assigned != set(offsets):
                raise IllegalStateException(
                    "Partitions specified for Kafka start offsets don't match what are assigned. Maybe topic "
                    "partitions are created \nor deleted while the query is running. Use -1 for latest, -2 for "
                    f"earliest.\nSpecified: {tp_set(offsets)} Assigned: {tp_set(assigned)}")
            resolved = self._list({tp: off for tp, off in offsets.items() if off in (EARLIEST, LATEST)})
            return {tp: resolved.get(tp, off) for tp, off in offsets.items()}
        return self._with_retries(body)

    def by_timestamp(self, timestamps: dict | None, global_ts: int | None, starting: bool,
                     on_no_match: str = "error") -> dict:
        """Offsets of the first record at or after each timestamp (startingTimestamp / ...ByTimestamp)."""
        from kafka.admin import OffsetTimestamp

        def body():
            assigned = self._assigned_once()
            if timestamps is not None and set(timestamps) != assigned:
                which = "starting" if starting else "ending"
                raise IllegalStateException(
                    f"Partitions specified for Kafka timestamp based {which} offsets don't match what are assigned. "
                    "Maybe topic partitions are created \nor deleted while the query is running, or you didn't "
                    f"specify all the partitions.\nSpecified: {tp_set(timestamps)} Assigned: {tp_set(assigned)}")
            wanted = timestamps if timestamps is not None else {tp: global_ts for tp in assigned}
            found = self._list({tp: OffsetTimestamp(ts) for tp, ts in wanted.items()})
            missing = [tp for tp, off in found.items() if off < 0]
            if missing and starting and on_no_match == "error":
                tp = sorted(missing)[0]
                raise IllegalArgumentException(
                    f"No offset matched from request of topic-partition {tp_name(tp)} and timestamp {wanted[tp]}.")
            latest = self._list({tp: LATEST for tp in missing})
            return {tp: (latest[tp] if off < 0 else off) for tp, off in found.items()}
        return self._with_retries(body)

    def resolve(self, spec, starting: bool = True, stream: bool = False) -> dict:
        """Concrete offsets for a StartSpec (earliest, latest, JSON offsets or timestamps)."""
        if spec.kind == "earliest":
            return self.earliest()
        if spec.kind == "latest":
            return self.latest()
        if spec.kind == "offsets":
            return self.specific(spec.offsets, stream)
        if spec.kind == "timestamps":
            return self.by_timestamp(spec.offsets, None, starting, spec.strategy_on_no_match)
        return self.by_timestamp(None, spec.timestamp, starting, spec.strategy_on_no_match)

    def __repr__(self) -> str:
        opts = self.opts
        if opts.strategy == "subscribe":
            return f"Subscribe[{', '.join(opts.topics)}]"
        if opts.strategy == "assign":
            return f"Assign[{', '.join(tp_name(tp) for tp in opts.assigned)}]"
        return f"SubscribePattern[{opts.pattern}]"
