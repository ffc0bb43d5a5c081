"""`maxOffsetsPerTrigger`'s proportional split, with the numbers of modules 4 and 5: one budget per source per
trigger, shared in proportion to each partition's backlog, each share rounded down (a share below 1 rounded up).

Every row is computed by `rate_limit` of `streamlab.offline.planner`, the connector's rule
(`KafkaMicroBatchStream.rateLimit`): backlogs 800/200 with a cap of 1,000 (all of it) and of 500 (400 + 100);
module 4's uneven topic (5,000 / 1,200 / 40 / 3, cap 1,000 → 999 rows); and its 20 partitions of one record with a
cap of 10 (every share 0.5, rounded up: 20 rows)."""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent.parent)]
from svg import FILL, INK, MUTED, box, frame, heading, text  # noqa: E402

MODULES = ["04-backpressure", "05-rate-limiting"]

ROWS = [  # (heading, backlogs per partition, cap, a note under the row)
    ("Backlogs 800 and 200, cap 1,000", [800, 200], 1_000, "the cap covers the whole backlog: everything is read"),
    ("The same backlogs, cap 500", [800, 200], 500, "500 × 0.8 = 400 and 500 × 0.2 = 100: each keeps its share"),
    ("Module 4's uneven topic, cap 1,000", [5_000, 1_200, 40, 3], 1_000,
     "80% of the backlog gets 80% of the budget; 0.48 is rounded up to 1; the floors leave 999, not 1,000"),
]
TINY, TINY_CAP = 20, 10


def reads(backlogs: list[int], cap: int) -> list[int]:
    """Rows each partition reads in the next batch, by the connector's rule."""
    from streamlab.offline.planner import rate_limit

    start = {p: 0 for p in range(len(backlogs))}
    ends = rate_limit(cap, start, dict(enumerate(backlogs)))
    return [ends[p] for p in range(len(backlogs))]


def _num(x: float) -> str:
    """A share as a reader writes it: 800, 800.9, 0.48."""
    return f"{x:,.2f}".rstrip("0").rstrip(".")


def _row(y: float, heading: str, backlogs: list[int], cap: int, note: str) -> list[str]:
    got = reads(backlogs, cap)
    total = sum(backlogs)
    out = [text(20, y, f"{heading}  →  {' + '.join(f'{r:,}' for r in got)} = {sum(got):,} rows", 15,
                weight="bold")]
    left, width = 130, 600
    scale = width / max(total, 1)
    for p, (size, read) in enumerate(zip(backlogs, got)):
        top = y + 12 + 30 * p
        out.append(text(20, top + 17, f"partition {p}", 13))
        bar = max(size * scale, 3)
        done = max(read * scale, 3) if read else 0
        out.append(box(left, top, bar, 22, "grey"))
        if done:
            out.append(box(left, top, done, 22, "green"))
        share = cap * size / total
        out.append(text(left + bar + 10, top + 16, f"backlog {size:,}: share {_num(share)} → reads {read:,}", 13))
    out.append(text(20, y + 12 + 30 * len(backlogs) + 14, note, 13, color=MUTED))
    return out


def draw() -> str:
    """The figure, as SVG text."""
    body = heading("maxOffsetsPerTrigger: one budget per trigger, split in proportion to each backlog",
                   "share = cap × backlog / total backlog, rounded down (a share below 1 is rounded up); "
                   "no partition reads past its backlog")
    y = 88
    for title, backlogs, cap, note in ROWS:
        body += _row(y, title, backlogs, cap, note)
        y += 12 + 30 * len(backlogs) + 50
    tiny = reads([1] * TINY, TINY_CAP)
    body.append(text(20, y, f"Module 4's {TINY} partitions of 1 record, cap {TINY_CAP}  →  {sum(tiny)} rows, over "
                            "the cap", 15, weight="bold"))
    for p in range(TINY):
        body.append(box(20 + 34 * p, y + 12, 28, 22, "green" if tiny[p] else "grey", "1", 12))
    body.append(text(20, y + 12 + 22 + 20, f"each share is {TINY_CAP} × 1/{TINY} = {TINY_CAP / TINY}, rounded up "
                                           "to 1: two or more shares below 1 can push a batch over the cap", 13,
                     color=MUTED))
    y += 76
    body += [box(20, y, 22, 16, "green"), text(48, y + 13, "read by the next batch", 13),
             box(230, y, 22, 16, "grey"), text(258, y + 13, "left in Kafka for later batches", 13),
             text(520, y + 13, "Not 1,000 per partition, not an even split.", 13, weight="bold", color=INK)]
    desc = ("Bars of each partition's backlog with the part the next batch reads. Backlogs 800 and 200 with a cap of "
            "1,000: 800 + 200, everything. The same backlogs with a cap of 500: 400 + 100. Module 4's uneven topic, "
            "backlogs 5,000, 1,200, 40 and 3 with a cap of 1,000: 800 + 192 + 6 + 1 = 999 rows, because shares are "
            f"rounded down and the share 0.48 is rounded up to 1. {TINY} partitions of one record with a cap of "
            f"{TINY_CAP}: every share is 0.5, rounded up to 1, so the batch reads {sum(tiny)} rows, over the cap.")
    return frame(900, y + 30, "The proportional split of maxOffsetsPerTrigger, with modules 4 and 5's numbers",
                 desc, body)
