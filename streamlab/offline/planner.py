"""Pure planning functions of the Kafka source (no broker): offsets JSON, rate limit, trigger delay, range split.

Offsets are {(topic, partition): offset} maps here and `{"topic":{"0":4400}}` JSON dicts (string partition
keys, each number the next offset to read) at the Spark boundary, so `offsets/N` in a checkpoint reads like the
connector's. The rules follow KafkaMicroBatchStream.rateLimit / delayBatch and KafkaOffsetRangeCalculator.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

TopicPartition = tuple  # (topic, partition)


def to_json(offsets: dict) -> dict:
    """{(t, p): n} -> {"t": {"p": n}}, topics and partitions sorted as the connector writes them."""
    out: dict = {}
    for topic, part in sorted(offsets):
        out.setdefault(topic, {})[str(part)] = int(offsets[(topic, part)])
    return out


def from_json(data: dict | None) -> dict:
    """{"t": {"p": n}} -> {(t, p): n}."""
    return {(topic, int(part)): int(off) for topic, parts in (data or {}).items() for part, off in parts.items()}


def tp_name(tp: TopicPartition) -> str:
    """A topic-partition the way Kafka's Java client prints it: topic-partition."""
    return f"{tp[0]}-{tp[1]}"


def tp_set(tps) -> str:
    """A set of topic-partitions as Scala prints it, for messages copied from the connector."""
    return "Set(" + ", ".join(tp_name(tp) for tp in sorted(tps)) + ")"


def rate_limit(limit: int, start: dict, latest: dict, start_of_new: dict | None = None) -> dict:
    """End offsets for a batch capped at `limit` offsets, split in proportion to each partition's backlog."""
    start_of_new = start_of_new or {}
    sizes = {}
    for tp, end in latest.items():
        begin = start.get(tp, start_of_new.get(tp))
        if begin is not None and end - begin > 0:
            sizes[tp] = end - begin
    total = sum(sizes.values())
    if total < 1:
        return dict(latest)
    ends = {}
    for tp, end in latest.items():
        if tp not in sizes:
            ends[tp] = end
            continue
        begin = start.get(tp, start_of_new.get(tp))
        prorate = limit * (sizes[tp] / total)
        # A share below 1 is rounded up so small partitions are never starved.
        share = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        ends[tp] = min(end, begin + share)
    return ends


def new_offsets(start: dict, latest: dict) -> int:
    """How many offsets `latest` holds beyond `start` (partitions missing from start count from 0)."""
    return sum(off - start.get(tp, 0) for tp, off in latest.items())


def should_delay(min_offsets: int, start: dict, latest: dict, now_ms: int, last_trigger_ms: int,
                 max_delay_ms: int) -> tuple[bool, int]:
    """(skip this trigger?, new last-trigger time) for minOffsetsPerTrigger + maxTriggerDelay."""
    if now_ms - last_trigger_ms >= max_delay_ms:
        return False, now_ms
    if new_offsets(start, latest) < min_offsets:
        return True, last_trigger_ms
    return False, now_ms


@dataclass(frozen=True)
class OffsetRange:
    """Offsets [start, end) of one topic-partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        """The number of offsets in the range (records can be fewer: markers, compaction)."""
        return self.end - self.start


def _scala_round(x: float) -> int:
    # Math.round rounds halves up; Python's round() would round them to even.
    return math.floor(x + 0.5)


def _part_count(size: int, total: int, min_parts: int) -> int:
    return max(_scala_round(size / total * min_parts), 1)


def _divide(rng: OffsetRange, parts: int) -> list:
    remaining, start, out = rng.size, rng.start, []
    for part in range(parts):
        this = remaining // (parts - part)  # the last piece takes the rounding remainder
        remaining -= this
        end = min(start + this, rng.end)
        out.append(OffsetRange(rng.topic, rng.partition, start, end))
        start = end
    return out


def split_ranges(ranges, min_partitions: int | None = None, max_records: int | None = None) -> list:
    """Drop empty ranges, cut those above `max_records`, then split large ones into about `min_partitions` tasks.

    KafkaOffsetRangeCalculator.getRanges of the 4.x connector (maxRecordsPerPartition first, then minPartitions).
    """
    ranges = [r for r in ranges if r.size > 0]
    if (min_partitions is None or len(ranges) >= min_partitions) and max_records is None:
        return ranges
    if max_records is not None:
        ranges = [piece for r in ranges for piece in _divide(r, math.ceil(r.size / max_records))]
        ranges = [r for r in ranges if r.size > 0]
    if min_partitions is None or min_partitions <= len(ranges):
        return ranges
    total = sum(r.size for r in ranges)
    unsplit_ranges = [r for r in ranges if _part_count(r.size, total, min_partitions) == 1]
    # By topic-partition, as the connector does: one small piece keeps all pieces of its partition whole.
    unsplit = {(r.topic, r.partition) for r in unsplit_ranges}
    split_total = total - sum(r.size for r in unsplit_ranges)
    split_min = max(min_partitions - len(unsplit_ranges), 1)
    out = []
    for rng in ranges:
        parts = 1 if (rng.topic, rng.partition) in unsplit else _part_count(rng.size, split_total, split_min)
        out.extend(_divide(rng, parts))
    return [r for r in out if r.size > 0]


def batch_ranges(ranges, min_partitions: int | None = None, max_records: int | None = None) -> list:
    """A batch read's tasks: one per partition, empty ones included, unless minPartitions asks for more.

    As the 4.2 connector does it: only minPartitions above the partition count makes a batch read split its ranges
    (then maxRecordsPerPartition applies too); maxRecordsPerPartition alone splits streams only.
    """
    ranges = list(ranges)
    if min_partitions is not None and min_partitions > len(ranges):
        return split_ranges(ranges, min_partitions, max_records)
    return ranges
