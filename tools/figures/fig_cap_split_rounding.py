"""Module 8's rule for `maxOffsetsPerTrigger`, worked on three batches: the split in proportion to backlog, and the
rounding that reads under the cap or over it (the sheet's "1, 1 and 1,000 with a cap of 10 read 11").

Every number is computed here by the course's own model of the connector's rule
(`streamlab.offline.planner.rate_limit`, KafkaMicroBatchStream.scala:420-422), so the picture cannot drift from it."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from svg import MUTED, box, frame, heading, text  # noqa: E402

from streamlab.offline.planner import rate_limit  # noqa: E402

MODULES = ["08-cheat-sheet"]

CASES = [("a) cap 500, backlogs 800 and 200: in proportion, not 250 + 250", 500, [800, 200]),
         ("b) cap 10, backlogs 1, 1 and 1,000: two shares rounded up, over the cap", 10, [1, 1, 1000]),
         ("c) cap 10, backlogs 1 and 1,000: one share rounded up, paid back by a floor", 10, [1, 1000])]


def reads(cap: int, backlogs: list[int]) -> list[int]:
    """What the next batch reads per partition, by the course's model of the connector's rule."""
    ends = rate_limit(cap, {("t", p): 0 for p in range(len(backlogs))},
                      {("t", p): size for p, size in enumerate(backlogs)})
    return [ends[("t", p)] for p in range(len(backlogs))]


def number(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:.2f}"


def draw() -> str:
    body = heading("How maxOffsetsPerTrigger splits one budget across a source's partitions",
                   "share = floor(cap × backlog / total backlog); a share below 1 becomes 1; "
                   "never more than the backlog", y=30, size=14)
    y = 85
    for title, cap, backlogs in CASES:
        total = sum(backlogs)
        body.append(text(20, y, title, 14, weight="bold"))
        got_all = reads(cap, backlogs)
        read = sum(got_all)
        for i, (size, got) in enumerate(zip(backlogs, got_all)):
            exact = cap * size / total
            x = 20 + i * 245
            rounded = " (up)" if exact < 1 else ""
            body.append(box(x, y + 10, 235, 56, "amber" if exact < 1 else "blue"))
            body += [text(x + 10, y + 32, f"partition {i}: backlog {size:,}", 13),
                     text(x + 10, y + 54, f"{cap:,} × {size:,} / {total:,} = {number(exact)} → {got}{rounded}", 13)]
        over = read > cap
        body.append(box(765, y + 10, 135, 56, "red" if over else "green"))
        body += [text(832, y + 32, f"reads {read:,}", 14, "middle", "bold"),
                 text(832, y + 54, "over the cap" if over else ("= the cap" if read == cap else "under the cap"), 13,
                      "middle")]
        y += 105
    body.append(text(20, y - 5, "Amber: a share below 1, rounded up to 1. The cap counts offsets, not rows.", 13,
                     color=MUTED))
    desc = ("Three worked batches of the maxOffsetsPerTrigger split. a) cap 500, backlogs 800 and 200: shares 400 "
            "and 100, total 500, in proportion to backlog. b) cap 10, backlogs 1, 1 and 1,000: shares 0.01, 0.01 "
            "and 9.98 become 1, 1 and 9, total 11, over the cap because two shares were rounded up. c) cap 10, "
            "backlogs 1 and 1,000: shares 0.01 and 9.99 become 1 and 9, total 10, the one share rounded up paid "
            "back by the other's floor.")
    return frame(920, y + 10, "The proportional split of a cap and its rounding (module 8, section 2)", desc, body)
