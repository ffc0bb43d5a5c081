"""Module 10: batch 7 of an account-updates stream lands in a Delta table three ways, then crashes before
`commits/7` and is replayed with the same offsets.

Why this picture: the module's whole argument in one batch. A plain append writes the replay again; Delta's own
sink finds (query id, batch 7) in the table's log and skips it; a MERGE keyed by the business key first keeps one
row per key (the higher Kafka offset wins, since one key's records share a partition), then matches the replay
against itself. The numbers are the shape of the module's demos: 4 records for 3 accounts, offsets 700 to 703 of
partition 0."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svg import MUTED, arrow, box, frame, text  # noqa: E402

MODULES = ["10-lakehouse"]

# batch 7: (offset, account, balance); acct-1 appears twice, offset 702 is its latest
BATCH = [(700, "acct-1", 40), (701, "acct-2", 15), (702, "acct-1", 55), (703, "acct-3", 90)]
LATEST = [(701, "acct-2", 15), (702, "acct-1", 55), (703, "acct-3", 90)]


def table(x: float, y: float, rows, title: str, fill: str, struck=()) -> list[str]:
    """A small table of (offset, account, balance) rows under a title; `struck` offsets are crossed out."""
    out = [text(x, y, title, 14, weight="bold")]
    for dx, head in ((8, "offset"), (78, "account"), (150, "balance")):
        out.append(text(x + dx, y + 22, head, 13, color=MUTED))
    for i, (offset, account, balance) in enumerate(rows):
        yy = y + 30 + i * 24
        out.append(box(x, yy, 210, 22, "red" if offset in struck else fill))
        for dx, cell in ((8, offset), (78, account), (150, balance)):
            out.append(text(x + dx, yy + 16, str(cell), 13))
        if offset in struck:
            out.append(f'<line x1="{x + 4}" y1="{yy + 11}" x2="{x + 206}" y2="{yy + 11}" stroke="#b42318" '
                       'stroke-width="2"/>')
    return out


def draw() -> str:
    """Batch 7 in, three ways into Delta, and what each holds after the replay."""
    body = [text(20, 30, "Batch 7 is written, the process dies before commits/7, batch 7 runs again", 17,
                 weight="bold")]
    body += table(20, 62, BATCH, "batch 7 (partition 0)", "blue")
    body += [text(20, 200, "acct-1 twice: its higher offset", 13, color=MUTED),
             text(20, 217, "(702) is its latest update", 13, color=MUTED)]
    rows = [
        (62, "foreachBatch + plain append", "nothing remembers batch 7", "8 rows: every row of batch 7",
         "twice (at-least-once)", "red"),
        (177, "writeStream.format(\"delta\")", "the log's txn: (query id, 7)", "4 rows: the replay is skipped,",
         "batch 7 is in the table once", "green"),
        (292, "foreachBatch + MERGE on account", "each row's business key", "3 rows, one per account: the",
         "replay matches itself, no change", "green"),
    ]
    for y, how, remembered, result1, result2, fill in rows:
        body.append(arrow(240, 120, 300, y + 32))
        body.append(box(302, y, 310, 100, fill))
        body.append(text(314, y + 22, how, 14, weight="bold"))
        body.append(text(314, y + 42, "remembers batch 7 in:", 13, color=MUTED))
        body.append(text(314, y + 60, remembered, 13))
        body.append(text(314, y + 78, result1, 13, weight="bold"))
        body.append(text(314, y + 94, result2, 13, weight="bold"))
    body += table(640, 62, LATEST, "MERGE's source: latest per key", "green", struck=())
    body += [text(640, 182, "dedup first: offset 700 dropped.", 13),
             text(640, 200, "Without it Delta refuses:", 13),
             text(640, 218, "\u201cmultiple source rows matched\u201d", 13, weight="bold"),
             text(640, 250, "MERGE ON t.account = s.account", 13, weight="bold"),
             text(640, 268, "matched → UPDATE SET *", 13),
             text(640, 286, "not matched → INSERT *", 13),
             text(640, 320, "The replay reads offsets 700-703", 13, color=MUTED),
             text(640, 338, "again: same keys, same values,", 13, color=MUTED),
             text(640, 356, "so the table does not change.", 13, color=MUTED)]
    desc = ("Batch 7 holds four records of partition 0, offsets 700 to 703: acct-1 with balance 40, acct-2 15, "
            "acct-1 55 and acct-3 90. It is written, the process dies before commits/7, and the restart runs batch "
            "7 again with the same offsets. A foreachBatch plain append remembers nothing and appends the four rows "
            "again: eight rows, duplicated. Delta's own streaming sink recorded a txn action (the query id, batch 7) "
            "in the table's log and skips the replay. A foreachBatch MERGE keyed by the account first keeps the "
            "latest row per account by Kafka offset (offset 702 for acct-1, offset 700 dropped), since Delta "
            "refuses a MERGE whose source has two rows for one target row; the replay then matches the same three "
            "rows and changes nothing.")
    return frame(900, 420, "Kafka into Delta: a plain append, Delta's sink and MERGE against one replayed batch",
                 desc, body)
