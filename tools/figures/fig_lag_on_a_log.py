"""Module 3's lag on a log: one Kafka partition of `orders`, with the four offsets that lag is measured between —
the earliest offset, a batch's `endOffset`, the `latestOffset` Spark planned against, and the log end now — for the
capped query `q` and for the same partition read without a cap.

The numbers are the lesson's own, computed here as the notebook makes them: `produce(orders, 6_000)` keys each event
by user and Kafka's default partitioner (murmur2 of the key) puts 1,800, 2,160 and 2,040 of them in partitions 0-2;
`q` reads with `maxOffsetsPerTrigger = 500`, which the connector's proportional split (`rate_limit` of
`streamlab.offline.planner`) turns into 150 + 180 + 170 per batch; exercise 2 writes 900 more records
(`start=6_000`) while `q` is stopped, 324 of them into partition 1."""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent.parent)]
from svg import FILL, INK, MUTED, box, frame, text  # noqa: E402

MODULES = ["03-consumer-lag"]

PARTITIONS, RECORDS, MORE, CAP, BATCH, SHOWN = 3, 6_000, 900, 500, 2, 1


def _counts(first: int, n: int) -> Counter:
    """Records per partition for events first..first+n-1, as the lab's producer keys and Kafka partitions them."""
    from kafka.partitioner.default import murmur2

    from streamlab.lab.producer import default_key

    return Counter((murmur2(default_key(i).encode()) & 0x7FFFFFFF) % PARTITIONS for i in range(first, first + n))


def numbers() -> dict:
    """The offsets of partition SHOWN: earliest, batch BATCH's start and end, latest at planning, log end now."""
    from streamlab.offline.planner import rate_limit

    latest = _counts(0, RECORDS)
    start = {p: 0 for p in range(PARTITIONS)}
    for _ in range(BATCH):
        start = rate_limit(CAP, start, dict(latest))
    end = rate_limit(CAP, start, dict(latest))
    return {"earliest": 0, "start": start[SHOWN], "end": end[SHOWN], "latest": latest[SHOWN],
            "now": latest[SHOWN] + _counts(RECORDS, MORE)[SHOWN], "per_batch": end[SHOWN] - start[SHOWN],
            "sizes": [latest[p] for p in range(PARTITIONS)]}


def _mark(x: float, y_bar: float, label: str, above: bool, tier: int = 0) -> list[str]:
    """A tick at x with its label above (or below) the bar; tier lifts a label clear of a neighbour's."""
    lift = 18 * tier
    if above:
        y1, y2, ty = y_bar - 8 - lift, y_bar, y_bar - 12 - lift
    else:
        y1, y2, ty = y_bar + 34, y_bar + 42 + lift, y_bar + 56 + lift
    return [f'<line x1="{x:g}" y1="{y1:g}" x2="{x:g}" y2="{y2:g}" stroke="{INK}" stroke-width="2"/>',
            text(x, ty, label, 13, "middle")]


def _bracket(x1: float, x2: float, y: float, label: str, color: str = INK) -> list[str]:
    """A bracket under the bar from x1 to x2 with a label under its middle."""
    return [f'<path d="M{x1:g},{y - 6:g} L{x1:g},{y:g} L{x2:g},{y:g} L{x2:g},{y - 6:g}" fill="none" '
            f'stroke="{color}" stroke-width="2"/>', text((x1 + x2) / 2, y + 18, label, 13, "middle", color=color)]


def draw() -> str:
    """The figure, as SVG text."""
    n = numbers()
    left, width = 70, 800
    x = lambda offset: left + width * offset / n["now"]  # noqa: E731
    lag_planned, lag_now, arrived = n["latest"] - n["end"], n["now"] - n["end"], n["now"] - n["latest"]
    body = [text(20, 28, f"Lag on a log: partition {SHOWN} of module 3's orders topic", 18, weight="bold"),
            text(20, 50, f"{n['sizes'][SHOWN]:,} of the {RECORDS:,} records land here "
                         f"({' / '.join(f'{s:,}' for s in n['sizes'])} in partitions 0–2).", 13, color=MUTED),
            text(20, 67, f"Query q has maxOffsetsPerTrigger = {CAP}, split by backlog: {n['per_batch']} offsets a "
                         "batch from this partition.", 13, color=MUTED),
            text(20, 84, f"Later, exercise 2 writes {MORE} more records, {arrived} of them here.", 13, color=MUTED)]
    # Row 1: the capped query q, batch BATCH.
    y = 160
    body.append(text(20, y - 44, f"The capped query q, batch {BATCH}", 15, weight="bold"))
    body += [box(x(0), y, x(n["start"]) - x(0), 34, "grey"),
             box(x(n["start"]), y, x(n["end"]) - x(n["start"]), 34, "green"),
             box(x(n["end"]), y, x(n["latest"]) - x(n["end"]), 34, "amber",
                 f"planned, not read yet: {lag_planned:,}", 13),
             box(x(n["latest"]), y, x(n["now"]) - x(n["latest"]), 34, FILL["red"]),
             text((x(n["latest"]) + x(n["now"])) / 2, y + 22, f"+{arrived}", 13, "middle")]
    body += _mark(x(0), y, "earliest 0", True)
    body += _mark(x(n["end"]), y, f"endOffset {n['end']:,}", True)
    body += _mark(x(n["now"]) - 1, y, "", True)
    body.append(text(x(n["now"]), y - 12, f"log end now {n['now']:,}", 13, "end"))
    body += _mark(x(n["start"]), y, f"startOffset {n['start']:,}", False)
    body += _mark(x(n["latest"]), y, f"latestOffset {n['latest']:,} (at planning)", False)
    body += _bracket(x(n["end"]), x(n["latest"]), y + 100, f"progress lag = latestOffset − endOffset = {lag_planned:,}")
    body += _bracket(x(n["end"]), x(n["now"]) - 1, y + 140,
                     f"broker lag now = log end − endOffset = {lag_now:,}", FILL["dark"])
    # Row 2: the same partition read with no cap.
    y2 = 400
    body.append(text(20, y2 - 30, "The same partition with no cap: the batch reads everything it planned", 15,
                     weight="bold"))
    body += [box(x(0), y2, x(n["latest"]) - x(0), 34, "green", f"batch reads 0 → {n['latest']:,}", 13),
             box(x(n["latest"]), y2, x(n["now"]) - x(n["latest"]), 34, FILL["red"]),
             text((x(n["latest"]) + x(n["now"])) / 2, y2 + 22, f"+{arrived}", 13, "middle")]
    body += _mark(x(n["latest"]), y2, "", False)
    body.append(text(x(n["latest"]), y2 + 56, f"endOffset = latestOffset = {n['latest']:,}", 13, "end"))
    body += _mark(x(n["now"]) - 1, y2, "", True)
    body.append(text(x(n["now"]), y2 - 12, f"log end now {n['now']:,}", 13, "end"))
    body += [text(20, y2 + 82, "progress lag = 0", 13, weight="bold"),
             text(160, y2 + 82, f"broker lag now = {arrived} (records that arrived while the batch ran)", 13,
                  color=FILL["dark"])]
    # Legend and the consumer-group note.
    ly = 520
    for i, (fill, label) in enumerate((("grey", "read by earlier batches"), ("green", "read by this batch"),
                                       ("amber", "planned, still in Kafka"),
                                       (FILL["red"], "arrived after planning"))):
        body += [box(20 + 215 * i, ly, 22, 16, fill), text(48 + 215 * i, ly + 13, label, 13)]
    body.append(text(20, ly + 44, "kafka-consumer-groups shows neither lag: Spark commits no offset to Kafka, "
                                  "so the CLI has nothing to subtract.", 13, color=MUTED))
    desc = (f"Partition {SHOWN} of the orders topic drawn as a log from offset 0 to {n['now']:,}. For the capped "
            f"query q, batch {BATCH} starts at {n['start']} and ends at endOffset {n['end']}; the latestOffset Spark "
            f"planned against was {n['latest']:,}, so the progress lag is {lag_planned:,}; {arrived} more records "
            f"arrived after planning, so the broker lag now is {lag_now:,}. Without a cap the batch reads to "
            f"{n['latest']:,}: the progress lag is 0 while the broker lag is {arrived}. Consumer-group tools show "
            "nothing, because Spark commits no offsets to Kafka.")
    return frame(900, 585, "Lag on a log: earliest, endOffset, the planned latestOffset and the log end now", desc,
                 body)
