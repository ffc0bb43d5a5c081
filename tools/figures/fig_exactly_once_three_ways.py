"""Module 7: batch 7 crashes between its write and `commits/7`, and each sink meets the replay its own way.

Why this picture: "exactly-once" is a property of the sink, and the three ways differ in one thing, where the sink
remembers that batch 7 was written (the record's Kafka coordinates as a key, the batch id in the same Kafka
transaction as the records, the file sink's `_spark_metadata/7`). The plain Kafka sink remembers nowhere, so the
replay duplicates. The batch (two partitions, offsets 700 to 760 each, 120 records) is an example of the size the
module's crash demos use."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svg import MUTED, arrow, box, frame, text  # noqa: E402

MODULES = ["07-sinks-exactly-once"]
N = 120  # records in batch 7: p0 700→760, p1 700→760

# (sink, its mechanism, where batch 7 is remembered, what the replay does, what a reader sees, fill)
ROWS = [
    ("Spark's Kafka sink", "writeStream.format(\"kafka\")",
     "nowhere in the sink: only in commits/7, which the crash never wrote",
     f"sends the same {N} records again, at new offsets",
     f"{2 * N} records: {N} duplicates (at-least-once)", "red"),
    ("1 · Idempotent upsert", "foreachBatch → SQLite, ON CONFLICT",
     "in each row's key: (topic, partition, offset), the record's place in Kafka",
     f"same ranges, so the same {N} keys: each row overwrites itself (writes = 2)",
     f"{N} rows, each once", "green"),
    ("2 · Kafka transactions", "foreachBatch, one producer on the driver, stable transactional.id",
     "in Kafka, committed in the same transaction as the records: the ledger group's offset 7 + 1 = 8",
     "tx.last_batch() is 7, so batch 7 is skipped. Crashed before the commit? init_transactions() aborts it",
     f"read_committed: {N} once; read_uncommitted also sees aborted records", "green"),
    ("3 · Spark's file sink", "writeStream.format(\"json\")",
     "in <path>/_spark_metadata/7, which lists batch 7's files; written before commits/7",
     "batch 7 is in the log already: skipped. Files of failed attempts are never listed",
     f"Spark reading the folder: {N} once; a plain file listing may see orphans", "green"),
]


def lines(x: float, y: float, words: str, px: int, size: int = 13, **kw) -> list[str]:
    """`words` wrapped to fit about `px` pixels (a wide sans-serif's character width), one text line each."""
    per_char = size * (0.62 if kw.get("weight") == "bold" else 0.56)
    wrapped = textwrap.wrap(words, int(px / per_char))
    return [text(x, y + i * (size + 4), line, size, **kw) for i, line in enumerate(wrapped)]


def draw() -> str:
    """The life cycle of batch 7 with the crash, then the four sinks' answers to its replay."""
    body = [text(20, 30, "Batch 7 crashes after its write, before commits/7: who notices the replay?", 17,
                 weight="bold")]
    steps = [(20, "offsets/7 written", "p0 700→760, p1 700→760", "blue", False),
             (232, "the sink writes batch 7", f"{N} records out", "blue", False),
             (478, "commits/7 missing", "the process died here", "red", True),
             (690, "restart: batch 7 again", "the same ranges", "amber", False)]
    for x, title, sub, fill, dashed in steps:
        body.append(box(x, 48, 190, 54, fill, dashed=dashed))
        body.append(text(x + 95, 70, title, 14, "middle", "bold"))
        body.append(text(x + 95, 90, sub, 13, "middle"))
    body += [arrow(212, 75, 230, 75), arrow(424, 75, 476, 75), arrow(670, 75, 688, 75),
             text(450, 68, "✗", 20, "middle", "bold", "#b42318"), text(450, 118, "crash", 13, "middle",
                                                                        color="#b42318")]
    cols = [(20, "sink"), (215, "where batch 7 is remembered"), (468, "the replay of batch 7"),
            (692, "what a reader sees")]
    top = 140
    body += [text(x, top, title, 14, weight="bold", color=MUTED) for x, title in cols]
    y = top + 12
    for name, how, where, replay, seen, fill in ROWS:
        head = lines(20, y + 20, name, 185, 14, weight="bold")
        under = lines(20, y + 20 + 18 * len(head), how, 185, 12, color=MUTED)
        cells = [lines(215, y + 20, where, 235), lines(468, y + 20, replay, 210),
                 lines(692, y + 20, seen, 190, weight="bold")]
        height = max(18 * len(head) + 16 * len(under), *(17 * len(c) for c in cells)) + 20
        body.append(box(12, y, 876, height, fill))
        body += head + under + [line for c in cells for line in c]
        y += height + 8
    body.append(text(20, y + 18, "Each exactly-once way needs its reader too: readers that honour the key, "
                                 "read_committed, or the _spark_metadata log.", 14, color=MUTED))
    desc = (f"Batch 7 of a query (offsets 700 to 760 in partitions 0 and 1, {N} records) is planned in offsets/7 "
            "and written, then the process dies before commits/7; the restart runs batch 7 again with the same "
            f"ranges. Spark's plain Kafka sink remembers nothing and writes the {N} records again: {N} duplicates. "
            "An idempotent upsert keyed by topic, partition and offset overwrites the same rows. A transactional "
            "producer driven from foreachBatch committed batch id 7 with the records, finds it and skips the batch; "
            "readers must use read_committed. Spark's file sink finds batch 7 in _spark_metadata/7 and skips it; "
            "readers that follow that log see each record once.")
    return frame(900, y + 34, "Exactly-once, three ways: where each sink remembers batch 7", desc, body)
