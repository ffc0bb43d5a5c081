"""Module 7's transactional writer as a sequence: one batch written in a Kafka transaction with its batch id in a
ledger group, a crash before Spark's `commits/N`, and the replay skipped because the ledger already holds the id.

The steps are those of `streamlab.delivery.sinks.TransactionalKafkaSink` (`last_batch()` reads the ledger group's
offset, `commit(batch_id)` sends the batch id to the transaction with `send_offsets_to_transaction` and commits;
a restarted producer's `init_transactions()` with the same transactional id fences the dead one and the broker
aborts its open transaction). Batch 7 and its 120 records are the crash lab's numbers of the module's figure
exactly-once-three-ways."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svg import FILL, INK, MUTED, arrow, box, frame, heading, text  # noqa: E402

MODULES = ["07-sinks-exactly-once"]

# the four lifelines: (x, name, what it is)
LANES = [(150, "Spark's driver", "checkpoint: offsets/N, commits/N"),
         (400, "the writer (driver)", "transactional producer, id fixed"),
         (640, "Kafka: output topic", "read with read_committed"),
         (860, "Kafka: ledger group", "its offset = last batch id")]
WIDTH = 980
X = {name: x for x, name, _ in LANES}
TOP, STEP = 118, 34

# (from lane, to lane, label, colour): one message per row; None as the target is a note on the lane itself
RUN_1 = [
    ("Spark's driver", None, "offsets/7: batch 7 planned", INK),
    ("Spark's driver", "the writer (driver)", "foreachBatch(df, 7)", INK),
    ("the writer (driver)", "Kafka: ledger group", "last_batch()?", INK),
    ("Kafka: ledger group", "the writer (driver)", "6: batch 7 is new", MUTED),
    ("the writer (driver)", "Kafka: output topic", "begin; send 120 records (not yet visible)", INK),
    ("the writer (driver)", "Kafka: ledger group", "send_offsets_to_transaction(batch id 7)", INK),
    ("the writer (driver)", "Kafka: output topic", "commit: records and batch id 7 at once", "#1a7f37"),
]
RUN_2 = [
    ("the writer (driver)", "Kafka: output topic", "init_transactions(): the old producer fenced", INK),
    ("Spark's driver", None, "offsets/7, no commits/7: replay 7", INK),
    ("Spark's driver", "the writer (driver)", "foreachBatch(df, 7), the same ranges", INK),
    ("the writer (driver)", "Kafka: ledger group", "last_batch()?", INK),
    ("Kafka: ledger group", "the writer (driver)", "7: already committed, skip", "#1a7f37"),
    ("Spark's driver", None, "commits/7: batch 7 done", INK),
]


def _rows(y: float, steps: list[tuple]) -> tuple[list[str], float]:
    out = []
    for source, target, label, color in steps:
        if target is None:
            out.append(box(X[source] - 120, y - 13, 240, 24, "grey"))
            out.append(text(X[source], y + 4, label, 12, "middle", color=color))
        else:
            x1, x2 = X[source], X[target]
            out.append(arrow(x1, y, x2 - 6 if x2 > x1 else x2 + 6, y, color))
            out.append(text((x1 + x2) / 2, y - 6, label, 12, "middle", color=color))
        y += STEP
    return out, y


def draw() -> str:
    """The figure, as SVG text."""
    body = heading("Exactly-once by a ledger: the batch id commits with the records, so a replay is skipped",
                   "module 7's transactional writer (streamlab.delivery.sinks.TransactionalKafkaSink), batch 7 of "
                   "the crash lab")
    for x, name, what in LANES:
        body += [box(x - 110, 66, 220, 38, "blue"), text(x, 82, name, 14, "middle", "bold"),
                 text(x, 98, what, 12, "middle", color=MUTED)]
    rows, y = _rows(TOP + 20, RUN_1)
    body += rows
    body.append(f'<line x1="20" y1="{y - 8}" x2="{WIDTH - 20}" y2="{y - 8}" stroke="{FILL["red"]}" '
                'stroke-width="10"/>')
    body.append(text(WIDTH / 2, y - 3, "✗ the process dies here: before commits/7 (the restart runs batch 7 again)", 13,
                     "middle", "bold", "#cf222e"))
    rows, end = _rows(y + 30, RUN_2)
    body += rows
    lines = [f'<line x1="{x}" y1="104" x2="{x}" y2="{end - 14}" stroke="{MUTED}" stroke-dasharray="3 4"/>'
             for x, _, _ in LANES]
    body = body[:2] + lines + body[2:]
    body += [text(20, end + 8, "Had the process died before the commit instead: the open transaction is aborted at "
                               "init_transactions(), read_committed", 13, color=MUTED),
             text(20, end + 26, "readers never see it, and the replay writes batch 7 once.", 13, color=MUTED)]
    desc = ("A sequence diagram with four lifelines: Spark's driver with its checkpoint, the transactional writer on "
            "the driver, the Kafka output topic and the Kafka ledger group. First run: Spark writes offsets/7 and calls "
            "foreachBatch with batch 7; the writer asks the ledger for the last batch id, gets 6, begins a "
            "transaction, sends 120 records, sends batch id 7 to the ledger group inside the transaction and commits "
            "both at once. The process dies before commits/7. Second run: the restarted producer's "
            "init_transactions fences the old one; Spark replays batch 7 with the same ranges; the ledger answers 7, "
            "so the writer skips the batch and Spark writes commits/7. Had the crash come before the commit, the "
            "open transaction would be aborted and invisible to read_committed readers, and the replay writes the "
            "batch once.")
    return frame(WIDTH, end + 42, "The transactional ledger as a sequence (module 7)", desc, body)
