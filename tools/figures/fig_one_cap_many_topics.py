"""Module 6: one source's `maxOffsetsPerTrigger` is one budget for every partition of every topic it reads.

The numbers are a worked example of the rule module 6 teaches (cap 400, backlogs 600/250/148/2 over three topics):
each partition with a backlog gets `cap × backlog / total`, rounded down, or up to 1 when below 1, and reads
`min(backlog, share)`; the checkpoint's `offsets/0` then holds the end of batch 0 per topic and partition."""
from __future__ import annotations

import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent.parent)]
from svg import MUTED, box, frame, text  # noqa: E402
from streamlab.offline.planner import rate_limit  # noqa: E402  (the connector's rule, as the course computes it)

MODULES = ["06-multi-topic"]
CAP = 400
BACKLOGS = [("shop-orders", 0, 600), ("shop-orders", 1, 250), ("shop-payments", 0, 148), ("shop-refunds", 0, 2)]


def share(backlog: int, total: int) -> tuple[float, int]:
    """(the exact share, what the partition reads) by the connector's rule."""
    exact = CAP * backlog / total
    return exact, min(backlog, math.ceil(exact) if exact < 1 else math.floor(exact))


def draw() -> str:
    """The split of one cap over four partitions of three topics, and the offsets/0 it leaves."""
    total = sum(n for *_, n in BACKLOGS)
    reads = [share(n, total)[1] for *_, n in BACKLOGS]
    ends = rate_limit(CAP, {(t, p): 0 for t, p, _ in BACKLOGS}, {(t, p): n for t, p, n in BACKLOGS})
    assert reads == [ends[(t, p)] for t, p, _ in BACKLOGS], "the figure's arithmetic is not the connector's rule"
    scale = 400 / max(n for *_, n in BACKLOGS)  # px per record
    left, top, row = 190, 100, 54
    body = [text(20, 32, f"One source, one budget: maxOffsetsPerTrigger = {CAP} for every partition of every topic",
                 17, weight="bold"),
            text(20, 58, f"total backlog = {' + '.join(f'{n:,}' for *_, n in BACKLOGS)} = {total:,} records "
                         "(partitions with a backlog only)", 14, color=MUTED),
            box(left, 70, 14, 14, "dark"), text(left + 20, 82, "read in batch 0 (the share)", 13),
            box(left + 230, 70, 14, 14, "grey"), text(left + 250, 82, "backlog left for later batches", 13)]
    for i, ((topic, part, n), got) in enumerate(zip(BACKLOGS, reads)):
        y = top + i * row
        exact = CAP * n / total
        body.append(text(20, y + 22, f"{topic} · p{part}", 14, weight="bold"))
        body.append(text(20, y + 40, f"backlog {n:,}", 13, color=MUTED))
        body.append(box(left, y + 8, max(n * scale, 3), 30, "grey"))
        body.append(box(left, y + 8, max(got * scale, 3), 30, "dark"))
        if exact < 1:
            why = f"= {exact:.1f} → {got} (below 1: rounded up)"
        elif exact != int(exact):
            why = f"= {exact:.1f} → {got} (rounded down)"
        else:
            why = f"= {got:g}"
        body.append(text(610, y + 22, f"{CAP} × {n:,} / {total:,}", 14))
        body.append(text(610, y + 40, why, 14, weight="bold"))
    per_topic: dict[str, int] = {}
    for (topic, _, _), got in zip(BACKLOGS, reads):
        per_topic[topic] = per_topic.get(topic, 0) + got
    y = top + len(BACKLOGS) * row + 22
    body.append(text(20, y, f"Batch 0 reads {' + '.join(map(str, reads))} = {sum(reads)} rows: "
                            + ", ".join(f"{t.split('-')[1]} {n}" for t, n in per_topic.items())
                            + " — by backlog, not a third per topic.", 14))
    offsets = ", ".join(f'"{t}": {{' + ", ".join(f'"{p}": {g}' for (tt, p, _), g in zip(BACKLOGS, reads) if tt == t)
                        + "}" for t in per_topic)
    body += [box(20, y + 16, 860, 62, "blue"),
             text(32, y + 40, "The query's checkpoint, offsets/0 (the end of batch 0, per topic and partition):", 14,
                  weight="bold"),
             text(32, y + 64, "{" + offsets + "}", 14),
             text(20, y + 104, "A second Kafka source in the same query has a budget of its own; with no cap, batch 0 "
                               "would read all 1,000.", 14, color=MUTED)]
    desc = (f"One Kafka source reads four partitions of three topics with maxOffsetsPerTrigger {CAP}. Backlogs "
            f"600, 250, 148 and 2 make a total of {total}. Each gets {CAP} times its backlog over {total}: 240, "
            f"100, 59.2 rounded down to 59, and 0.8 rounded up to 1, so batch 0 reads {sum(reads)} rows: orders "
            f"{per_topic['shop-orders']}, payments {per_topic['shop-payments']}, refunds {per_topic['shop-refunds']}. "
            "The checkpoint's offsets/0 stores those ends per topic and partition. A second source would have its "
            "own cap.")
    return frame(900, y + 120, "One cap shared by every topic of a Kafka source", desc, body)
