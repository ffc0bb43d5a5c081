"""Module 9's unclean election as two logs: replicas, the ISR shrinking, the high watermark, acknowledged offsets
20-39 lost, and what failOnDataLoss=true / false do with the offset that went backwards.

The numbers are those of `streamlab.delivery.failover.unclean_experiment` and of its run on the lab's cluster
(tests/cluster/test_cluster.py asserts them): 20 records a step, 60 acknowledged under acks=all, 20 of them read and
then gone, "offset was changed from 40 to 20", the other query reading on 20 later records."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svg import FILL, INK, MUTED, box, frame, heading, text  # noqa: E402

MODULES = ["09-cluster-failures"]

X0, PX = 300, 10  # where offset 0 starts; px per offset (offsets 0-39 span 400 px)
BAR_H = 30


def _segment(first: int, last: int, y: float, fill: str, label: str, dashed: bool = False) -> str:
    return box(X0 + first * PX, y, (last - first + 1) * PX, BAR_H, fill, label, 13, dashed=dashed)


def _log(y: float, node: str, role: str, segments: list[tuple]) -> list[str]:
    out = [text(X0 - 12, y + 14, node, 14, "end", "bold"), text(X0 - 12, y + 28, role, 12, "end", color=MUTED)]
    out += [_segment(*seg[:2], y, *seg[2:]) for seg in segments]
    return out


def _mark(offset: int, y: float, label: str, color: str = INK) -> list[str]:
    x = X0 + offset * PX
    return [f'<line x1="{x}" y1="{y - 6}" x2="{x}" y2="{y + 2 * BAR_H + 16}" stroke="{color}" stroke-width="2" '
            f'stroke-dasharray="4 3"/>', text(x, y - 10, label, 12, "middle", "bold", color)]


def _stage(y: float, number: str, lines: list[str]) -> list[str]:
    out = [f'<circle cx="34" cy="{y + 10}" r="13" fill="{FILL["dark"]}"/>',
           text(34, y + 15, number, 14, "middle", "bold", "white")]
    out += [text(56, y + 15 + 17 * i, line, 13) for i, line in enumerate(lines)]
    return out


def _note(y: float, lines: list[str]) -> list[str]:
    return [text(722, y + 14 + 17 * i, line, 13, color=INK if i == 0 else MUTED, weight="bold" if i == 0 else
                 "normal") for i, line in enumerate(lines)]


# The three stages: (y, number, what happened, (node 1's log, node 2's log), high-watermark mark, note).
STAGES = [
    # 1 - both replicas in sync
    (105, "1", ["Both in sync:", "20 records written"],
     (("node 1", "leader", [(0, 19, "green", "before-0 … 19")]),
      ("node 2", "follower", [(0, 19, "green", "before-0 … 19")])),
     (20, "HW 20"), ["ISR = {1, 2}", "both queries read", "offsets 0-19"]),
    # 2 - the follower dies, the ISR shrinks, the leader alone acknowledges 20 more
    (240, "2", ["node 2 killed:", "ISR shrinks, 20 more", "acknowledged by the", "leader alone"],
     (("node 1", "leader", [(0, 19, "green", "before-0 … 19"), (20, 39, "amber", "after-0 … 19")]),
      ("node 2", "down", [(0, 19, "grey", "before-0 … 19"), (20, 39, "white", "never copied", True)])),
     (40, "HW 40"), ["ISR = {1}", "both queries read", "all 40 (offsets 0-39)"]),
    # 3 - the leader dies, the out-of-sync replica is elected, offsets 20-39 are reused
    (375, "3", ["node 1 killed; node 2", "restarts and is elected", "out of sync (unclean);", "20 later records"],
     (("node 1", "down", [(0, 19, "grey", "before-0 … 19"), (20, 39, "red", "after-0 … 19: LOST")]),
      ("node 2", "new leader", [(0, 19, "green", "before-0 … 19"), (20, 39, "blue", "later-0 … 19")])),
     (20, "latest 40 → 20 at election"),
     ["ISR = {2}", "20 acknowledged and read", "records are gone; offsets", "20-39 now hold others"]),
]


def draw() -> str:
    body = heading("An unclean election loses acknowledged, already-read records (module 9's run)",
                   "One partition, replicas on node 1 (leader) and node 2; min.insync.replicas=1; "
                   "producer acks=all; offsets 0-39 drawn 10 px each", y=30)
    body += [text(X0 + o * PX, 78, f"offset {o}" if o == 0 else str(o), 12, "middle", color=MUTED)
             for o in (0, 10, 20, 30, 40)]
    for y, number, told, (leader, follower), mark, note in STAGES:
        body += _stage(y, number, told)
        body += _log(y, *leader)
        body += _log(y + BAR_H + 8, *follower)
        body += _mark(*mark[:1], y, *mark[1:])
        body += _note(y, note)
    # what each query does when it next plans a batch
    y = 505
    body.append(box(20, y, 440, 92, "red"))
    body += [text(32, y + 22, "failOnDataLoss=true (the default)", 14, weight="bold"),
             text(32, y + 42, "fails: KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED", 13),
             text(32, y + 60, "\"offset was changed from 40 to 20\"", 13),
             text(32, y + 78, "13.5 s after the kill (API timeout 10 s; 65 s at its 60 s default)", 13)]
    body.append(box(480, y, 420, 92, "blue"))
    body += [text(492, y + 22, "failOnDataLoss=false", 14, weight="bold"),
             text(492, y + 42, "logs a warning and reads on from offset 20:", 13),
             text(492, y + 60, "the 20 later records, at offsets where it", 13),
             text(492, y + 78, "had read other records. Neither brings data back.", 13)]
    body.append(text(20, 625, "HW: the high watermark, the offset below which every in-sync replica holds the records; "
                              "consumers (Spark too) read only below it.", 13, color=MUTED))
    desc = ("Three stages of two replica logs. 1: nodes 1 and 2 both hold offsets 0 to 19, ISR {1, 2}, high "
            "watermark 20. 2: node 2 is killed, the ISR shrinks to node 1, which alone acknowledges 20 more records "
            "at offsets 20 to 39 (acks=all with min.insync.replicas=1); high watermark 40; both queries read all 40. "
            "3: node 1 is killed, node 2 restarts and is elected out of sync; its log ends at 20, so offsets 20 to 39 "
            "of node 1, acknowledged and read, are lost, and 20 later records take offsets 20 to 39. "
            "With failOnDataLoss=true the query fails with PARTITION_OFFSET_CHANGED, offset changed from 40 to 20; "
            "with false it logs a warning and reads the later records at reused offsets.")
    return frame(920, 640, "Replicas, the ISR, the high watermark and an unclean election (module 9)", desc, body)
