"""Module 0's first capped read: 3,000 records in 3 partitions, `maxOffsetsPerTrigger = 500`, `availableNow` →
six micro-batches of 500, each split across the partitions in proportion to their backlogs.

The numbers are the lesson's own: `produce(demo_topic, 3_000)` keys each event by one of 50 users, and Kafka's
default partitioner (murmur2 of the key) puts 900, 1,080 and 1,020 of them in partitions 0-2; the connector's rule
(`streamlab.offline.planner.rate_limit`) then reads 150 + 180 + 170 = 500 offsets per batch, six times."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svg import FILL, INK, MUTED, box, frame, text  # noqa: E402

MODULES = ["00-setup"]

BACKLOG = [900, 1080, 1020]   # records per partition
SHARE = [150, 180, 170]       # what each batch reads from each partition, cap 500
COLOURS = ["blue", "amber", "green"]
BASE, PX = 330, 0.4           # y of the bars' foot; px per offset (500 offsets = 200 px)


def draw() -> str:
    """The figure, as SVG text."""
    body = [text(20, 30, "One cap for the whole source: 3,000 records, maxOffsetsPerTrigger = 500 → 6 batches",
                 18, weight="bold")]
    cap_y = BASE - 500 * PX
    for b in range(6):
        x, y = 90 + b * 105, BASE
        for p, share in enumerate(SHARE):
            h = share * PX
            y -= h
            body.append(box(x, y, 80, h, COLOURS[p], f"{share}", 13))
        body.append(text(x + 40, BASE + 20, f"batch {b}", 13, "middle"))
        body.append(text(x + 40, BASE + 37, f"{500 * b:,}–{500 * (b + 1):,}", 12, "middle", color=MUTED))
    body += [f'<line x1="70" y1="{cap_y}" x2="705" y2="{cap_y}" stroke="{INK}" stroke-width="2" '
             f'stroke-dasharray="6 4"/>', text(90, cap_y - 8, "cap = 500 offsets per batch", 13, weight="bold"),
             text(60, BASE + 5, "0", 12, "end", color=MUTED), text(60, cap_y + 5, "500", 12, "end", color=MUTED),
             text(20, BASE + 58, "offsets read so far, under each batch", 12, color=MUTED)]
    lx = 735
    body.append(text(lx, 70, "backlog at the start", 14, weight="bold"))
    for p, (backlog, share) in enumerate(zip(BACKLOG, SHARE)):
        y = 84 + p * 48
        body += [box(lx, y, 22, 22, COLOURS[p]), text(lx + 30, y + 16, f"partition {p}: {backlog:,}", 13),
                 text(lx + 30, y + 34, f"{share} a batch = 500 × {backlog:,} / 3,000", 12, color=MUTED)]
    body += [text(lx, 250, "Not 500 per partition:", 13, weight="bold"),
             text(lx, 268, "that would read up to 1,500", 13),
             text(lx, 286, "a batch: 3 batches, not 6.", 13)]
    return frame(980, 400, "A cap of 500 offsets per micro-batch, shared by three partitions",
                 "Module 0's read: 3,000 records in 3 partitions (900, 1,080 and 1,020), read with "
                 "maxOffsetsPerTrigger = 500 and availableNow. Six batches of 500 offsets each; every batch takes "
                 "150, 180 and 170 offsets from partitions 0, 1 and 2, in proportion to their backlogs. The cap is "
                 "one budget for the whole source, not 500 per partition.", body)
