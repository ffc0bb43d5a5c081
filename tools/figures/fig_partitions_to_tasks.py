"""Module 1's read of `orders`: Kafka partitions → offset ranges → tasks → an executor's cores, without and with
`minPartitions = 8`, and the four things called "partition" along the way.

The numbers are the lesson's own: `produce(orders, 1_000)` keys each event by one of 50 users, and Kafka's default
partitioner (murmur2 of the key) puts 260, 240, 260 and 240 of them in partitions 0-3; `split_ranges` of
`streamlab.offline.planner` (the connector's rule) cuts each range in two for `minPartitions = 8`. The lab runs
Spark as `local[2]`: one executor, inside the driver's JVM, with two cores."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svg import MUTED, arrow, box, frame, text  # noqa: E402

MODULES = ["01-source-internals"]

SIZES = [260, 240, 260, 240]          # offsets per Kafka partition of `orders` (1,000 records, keyed by user)
COLS = {"kafka": 20, "range": 250, "task": 500, "exec": 740}
ROW = 34


def _panel(y: float, heading: str, split: bool) -> tuple[list[str], float]:
    out = [text(20, y, heading, 15, weight="bold")]
    y += 14
    task = 0
    rows_top = y
    for p, size in enumerate(SIZES):
        pieces = [(0, size // 2), (size // 2, size)] if split else [(0, size)]
        top = y
        height = ROW * len(pieces) - 6
        out.append(box(COLS["kafka"], top, 170, height, "blue", f"orders-{p}: {size} records", 13))
        for start, end in pieces:
            out.append(arrow(COLS["kafka"] + 172, top + 14 if len(pieces) == 1 else y + 14, COLS["range"] - 4, y + 14))
            out.append(box(COLS["range"], y, 190, ROW - 6, "amber", f"[{start}, {end})  {end - start} records", 13))
            out.append(arrow(COLS["range"] + 192, y + 14, COLS["task"] - 4, y + 14))
            out.append(box(COLS["task"], y, 170, ROW - 6, "green", f"task {task}", 13))
            out.append(arrow(COLS["task"] + 172, y + 14, COLS["exec"] - 4, y + 14, MUTED, dashed=True))
            task += 1
            y += ROW
    cores = "2 cores: 4 tasks in 2 waves" if not split else "2 cores: 8 tasks in 4 waves"
    ex_h = y - rows_top - 6
    out.append(box(COLS["exec"], rows_top, 200, ex_h, "grey"))
    mid = rows_top + ex_h / 2
    out += [text(COLS["exec"] + 100, mid - 18, "executor", 14, "middle", "bold"),
            text(COLS["exec"] + 100, mid, "(local[2]: the driver's JVM)", 12, "middle", color=MUTED),
            text(COLS["exec"] + 100, mid + 18, cores, 12, "middle")]
    return out, y


def draw() -> str:
    """The figure, as SVG text."""
    body = [text(20, 28, "Kafka partitions → offset ranges → tasks → executor: module 1's orders topic", 18,
                 weight="bold")]
    y = 62
    for key, label, sub in (("kafka", "Kafka partition", "a log on the broker"),
                            ("range", "input partition = offset range", "planned by the driver"),
                            ("task", "Spark partition = task", "spark_partition_id()"),
                            ("exec", "executor", "runs tasks on its cores")):
        body += [text(COLS[key], y, label, 14, weight="bold"), text(COLS[key], y + 17, sub, 12, color=MUTED)]
    panel, y = _panel(y + 48, "No option: one range per Kafka partition with new records → 4 tasks", False)
    body += panel
    panel, y = _panel(y + 26, "minPartitions = 8: each range cut in proportion to its size → 8 tasks", True)
    body += panel
    body += [text(20, y + 16, "minPartitions counts input partitions (tasks), never Kafka partitions: the topic "
                  "still has 4.", 13),
             text(20, y + 36, "Each task assigns its one Kafka partition, seeks to start and polls to end, straight "
                  "from the broker.", 13),
             text(20, y + 56, "The driver plans offsets only; it never touches a record.", 13)]
    height = int(y + 76)
    return frame(960, height, "Kafka partitions become offset ranges, tasks and an executor's work",
                 "Module 1's orders topic has 4 Kafka partitions holding 260, 240, 260 and 240 records. With no "
                 "option the driver plans one offset range per partition, [0, 260), [0, 240), [0, 260), [0, 240): "
                 "4 input partitions, 4 tasks. With minPartitions = 8 each range is cut in two, [0, 130) and "
                 "[130, 260), [0, 120) and [120, 240), and so on: 8 tasks over the same 4 Kafka partitions. The "
                 "lab's single executor (local[2], inside the driver's JVM) runs them two at a time; each task "
                 "fetches its range straight from the broker.", body)
