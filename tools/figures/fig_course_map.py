"""The course on one page, for the home (START-HERE): each module as the idea it adds, and which idea leads to which.

Read left to right, top to bottom: how a batch is planned from Kafka's log (0-3), how its size is controlled (4-6),
how it lands without loss or duplicates (7, then a lakehouse table in 10), and what a cluster's failures do to each
(9). Module 8 and the practice pages test it all."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svg import MUTED, arrow, box, frame, heading, text  # noqa: E402

MODULES = ["."]  # the top-level pages' figures (solutions/figures/), shown by START-HERE

W, H = 205, 86  # a module's box
# number: (column, row, fill, title, two lines of what it adds); the course runs along the rows as a snake
NODES = {
    0: (0, 0, "grey", "0 · setup", ["the broker, Spark, the", "connector; a capped read"]),
    1: (1, 0, "blue", "1 · source internals", ["a batch = offset ranges;", "one task per partition"]),
    2: (2, 0, "blue", "2 · offsets", ["offsets/N and commits/N;", "replays; data loss"]),
    3: (3, 0, "blue", "3 · consumer lag", ["lag per partition, from", "progress; no group to ask"]),
    4: (3, 1, "amber", "4 · backpressure", ["no feedback loop: a burst", "is one batch unless capped"]),
    5: (2, 1, "amber", "5 · rate limiting", ["size a cap from a cost;", "triggers; Real-time Mode"]),
    6: (1, 1, "amber", "6 · multi-topic", ["patterns and their traps;", "one cap split by backlog"]),
    8: (0, 1, "grey", "8 · cheat sheet", ["every option on a page,", "each claim proven live"]),
    7: (1, 2, "green", "7 · sinks, exactly-once", ["at-least-once, proven;", "upsert, transactions, files"]),
    10: (2, 2, "green", "10 · lakehouse", ["Kafka → Delta: MERGE by", "key, txnAppId, small files"]),
    9: (0, 2, "red", "9 · cluster failures", ["executors, leaders killed;", "acks, ISR, unclean election"]),
}
X0, Y0, DX, DY = 24, 96, 245, 140
# (from, to, label): what leads on (labels on the downward steps only: the rows' gaps are narrow)
EDGES = [(0, 1, ""), (1, 2, ""), (2, 3, ""), (3, 4, "lag grows: cap it"), (4, 5, ""), (5, 6, ""),
         (6, 7, "then write it out"), (7, 10, ""), (9, 7, "")]


def _at(number: int) -> tuple[float, float]:
    column, row = NODES[number][:2]
    return X0 + column * DX, Y0 + row * DY


def _node(number: int) -> list[str]:
    x, y = _at(number)
    _, _, fill, title, lines = NODES[number]
    return [box(x, y, W, H, fill), text(x + 12, y + 26, title, 15, weight="bold"),
            *(text(x + 12, y + 50 + 18 * i, line, 13) for i, line in enumerate(lines))]


def _edge(a: int, b: int, label: str) -> list[str]:
    (xa, ya), (xb, yb) = _at(a), _at(b)
    if ya == yb:  # along a row, either way
        start, end = ((xa + W, ya + H / 2), (xb - 4, yb + H / 2)) if xb > xa else \
            ((xa, ya + H / 2), (xb + W + 4, yb + H / 2))
    else:  # straight down
        start, end = (xa + W / 2, ya + H), (xb + W / 2, yb - 4)
    out = [arrow(*start, *end, MUTED if a == 9 else "#1f2328", dashed=a == 9)]
    if label:
        out.append(text(start[0] + 10, (start[1] + end[1]) / 2 + 4, label, 13, color=MUTED))
    return out


def draw() -> str:
    """The figure, as SVG text."""
    body = heading("The course on one page: what each module adds, and what leads to what",
                   "a batch planned from Kafka's log (0-3), its size controlled (4-6), landed once (7, 10), "
                   "and what failures do (9)", y=30)
    for a, b, label in EDGES:
        body += _edge(a, b, label)
    for number in NODES:
        body += _node(number)
    body.append(text(24, Y0 + 3 * DY - 16, "9 puts the checkpoint (2) and the sinks (7) through a cluster's failures. "
                                           "Practice: the interview track and the incident round.", 13, color=MUTED))
    desc = ("Eleven boxes. Row one, how a batch is planned: 0 setup, 1 source internals (a batch is offset ranges, one "
            "task per partition), 2 offsets (the checkpoint's offsets and commits, replays, data loss), 3 consumer "
            "lag (per partition, from progress). Lag that grows leads to row two, how a batch's size is controlled: "
            "4 backpressure (no feedback loop, a burst is one batch unless capped), 5 rate limiting (sizing a cap, "
            "triggers, Real-time Mode), 6 multi-topic (patterns, one cap split by backlog), with 8 the cheat sheet "
            "beside them. Then row three, landing records once: 7 sinks and exactly-once, then 10 the lakehouse "
            "(Delta MERGE by key, txnAppId, small files); 9 cluster failures puts the checkpoint and the sinks "
            "through a cluster's failures.")
    return frame(1000, Y0 + 3 * DY, "The course map", desc, body)
