"""Module 2's crash test as a micro-batch life cycle: `offsets/N` written → batch N runs → `commits/N`, the two
crash points, and what a restart does after each.

The numbers are the lesson's own (section 4): `orders` has 2 partitions of 60 records (offsets 0-59); the query
reads with `maxOffsetsPerTrigger = 40`, so batch 0 is [0, 20) and batch 1 is [20, 40) on each partition; its
`foreachBatch` raises in batch 1, after `offsets/1` and before `commits/1`. Restarted with a cap of 100, it re-runs
batch 1 with exactly [20, 40) (not the 80 records the new cap would allow), then batch 2 reads [40, 60)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svg import MUTED, arrow, box, frame, text  # noqa: E402

MODULES = ["02-offset-tracking"]

W, GAP, H = 120, 18, 58
RED = "#b42318"


def _step(i: int, y: float, kind: str, title: str, sub: str, dashed: bool = False) -> list[str]:
    fill = {"log": "blue", "run": "green", "commit": "amber", "missing": "red"}[kind]
    x = 20 + i * (W + GAP)
    return [box(x, y, W, H, fill, dashed=dashed), text(x + W / 2, y + 24, title, 13, "middle", "bold"),
            text(x + W / 2, y + 44, sub, 12, "middle")]


def _row(y: float, steps: list[tuple]) -> list[str]:
    out = []
    for i, step in enumerate(steps):
        out += _step(i, y, *step)
        if i:
            x = 20 + i * (W + GAP)
            out.append(arrow(x - GAP + 1, y + H / 2, x - 2, y + H / 2))
    return out


def _crash(x: float, y: float, label: str) -> list[str]:
    return [f'<circle cx="{x}" cy="{y}" r="13" fill="{RED}"/>', text(x, y + 5, label, 14, "middle", "bold", "white")]


def draw() -> str:
    """The figure, as SVG text."""
    body = [text(20, 30, "The micro-batch life cycle: module 2's crash in batch 1, and the restart", 18,
                 weight="bold"),
            text(20, 62, "First run: maxOffsetsPerTrigger = 40, 2 partitions", 15, weight="bold")]
    y1 = 76
    body += _row(y1, [("log", "sources/0/0", "starts at 0, 0"), ("log", "offsets/0", "ends at 20, 20"),
                      ("run", "batch 0", "[0, 20) × 2: 40"), ("commit", "commits/0", "batch 0 done"),
                      ("log", "offsets/1", "ends at 40, 40"), ("run", "batch 1", "[20, 40): raises"),
                      ("missing", "commits/1", "never written", True)])
    # crash point 1: after commits/0, before offsets/1; crash point 2: after offsets/1, before commits/1
    body += _crash(20 + 4 * (W + GAP) - GAP / 2, y1 - 2, "1") + _crash(20 + 5 * (W + GAP) + W - 6, y1 - 2, "2")
    y2 = y1 + H + 58
    body.append(text(20, y2 - 14, "Restart on the same checkpoint, now with maxOffsetsPerTrigger = 100", 15,
                     weight="bold"))
    body += _row(y2, [("log", "offsets/1 found", "no commits/1"), ("run", "batch 1 again", "[20, 40) × 2: 40"),
                      ("commit", "commits/1", "batch 1 done"), ("log", "offsets/2", "ends at 60, 60"),
                      ("run", "batch 2", "[40, 60) × 2: 40"), ("commit", "commits/2", "batch 2 done")])
    y3 = y2 + H + 40
    body += _crash(32, y3, "1") + [
        text(56, y3 + 5, "Crash after commits/0, before offsets/1: nothing to replay. Batch 1 is planned anew from",
             13),
        text(56, y3 + 23, "the end of batch 0, with the new cap: [20, 60) × 2, 80 records.", 13)]
    body += _crash(32, y3 + 56, "2") + [
        text(56, y3 + 61, "Crash after offsets/1, before commits/1 (this demo): batch 1 re-runs with exactly the",
             13),
        text(56, y3 + 79, "offsets in offsets/1, [20, 40). The sink sees batch 1 twice: at-least-once by default.", 13)]
    body += [text(20, y3 + 118, "A restart replays after any stop that cut a batch short: the driver died, the "
                  "query failed (here, foreachBatch raised),", 13, color=MUTED),
             text(20, y3 + 136, "or stop() cancelled it. A crash in batch 0 restarts from sources/0/0, never from "
                  "startingOffsets again.", 13, color=MUTED)]
    return frame(980, int(y3 + 156), "The micro-batch life cycle with its two crash points",
                 "Module 2's query reads 2 partitions with a cap of 40. It writes sources/0/0 (start 0, 0), "
                 "offsets/0 (end 20, 20), runs batch 0 and writes commits/0; then writes offsets/1 (end 40, 40) and "
                 "batch 1 raises, so commits/1 is never written. Restarted with a cap of 100, it finds offsets/1 "
                 "without commits/1, re-runs batch 1 with exactly [20, 40), writes commits/1, then plans batch 2, "
                 "[40, 60). Crash point 1, before offsets/1, would have planned batch 1 anew with the new cap (80 "
                 "records); crash point 2, after offsets/1, replays it exactly.", body)
