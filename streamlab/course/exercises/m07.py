"""Module 7's visible exercise checks (07-sinks-exactly-once): a fan-out to many topics, counting delivery (the
course's one rule, `streamlab.delivery.count_delivery`, which module 9 uses again), and exactly-once through crashes
into SQLite and into a transactional Kafka writer.

Why here: a learner's check cell is 1-3 lines (the teaching standard), so the checks those cells ran moved here,
unchanged: the same check ids, expected text and hints, so the lab's feedback and the grade are the same. The crash
checks still believe a crash test's report only when the sink itself agrees, recounted from the table or the topic;
they return what they recounted, which the cells' hidden tests (kept in the notebook) judge again.
"""
from __future__ import annotations

import os

from streamlab.course.checks import attempt, expect, expect_equal, expect_form
from streamlab.course.scaffold import filled
from streamlab.delivery.faults import tally
from streamlab.delivery.sinks import ids_in, read_table, read_topic


def ex1_fan_out(ex1_topics: dict, ex1_count: int) -> None:
    """Check that every event was written to the action topics (their topics, keys and values are not shown)."""
    total = sum(len(read_topic(name)) for name in ex1_topics.values())
    expect_form(total == ex1_count, "ex1_all_events_written", f"{total} records in the action topics",
                "write route(ex1_events) with only kafka.bootstrap.servers; a topic column decides each record's topic",
                what="that every event was written (topics, keys and values are not)")


def ex2_count_delivery(count_delivery) -> None:
    """Check count_delivery on a small list (None until the skeleton's `...` are filled in)."""
    expect_equal(attempt(count_delivery if filled(count_delivery) else None, [1, 2, 2, 3, 3, 3, 9], [1, 2, 3, 4]),
                 {"written": 3, "duplicated": 3, "lost": 1}, "ex2_small",
                 "3 ids found, 1 + 2 extra copies, id 4 never found, 9 was never sent")


def _exactly_once(found: list, sent: list) -> bool:
    return len(sent) >= 90 and tally(found, sent) == {"written": len(sent), "duplicated": 0, "lost": 0}


def ex3_sqlite_exactly_once(ex3_result, ex3_source: str, ex3_db: str):
    """Check the SQLite crash test and its counts, recounted from the file; return (sent ids, stored ids)."""
    # What the crash test reported is only believed when the table itself agrees (recounted here from the file).
    sent = [int(value) for _, _, value in read_topic(ex3_source)]
    try:
        stored = [row[0] for row in read_table(ex3_db, "SELECT id FROM events")] if os.path.exists(ex3_db) else []
    except Exception:
        stored = []
    ran = isinstance(ex3_result, dict) and ex3_result["error"] is None and _exactly_once(stored, sent)
    expect(ran and ex3_result["crashes"] >= 10, "ex3_crashed_and_ran", "a crash test with at least 10 crashes",
           repr(ex3_result if not isinstance(ex3_result, dict) else ex3_result["error"]),
           "define ex3_ddl and ex3_save, run the crash-test cell; the table must hold each record once")
    expect(ran and ex3_result["duplicated"] == 0 and ex3_result["lost"] == 0, "ex3_counts", "0 duplicated, 0 lost",
           repr({k: ex3_result[k] for k in ("duplicated", "lost")}) if ran else "no run",
           "a replayed batch has the same (topic, partition, offset): make that the key and upsert")
    return sent, stored


def ex4_transactions_exactly_once(ex4_result, ex4_source: str, ex4_topic: str):
    """Check the transactional crash test and its counts, read with read_committed; return (sent ids, seen ids)."""
    # What the crash test reported is only believed when the topic itself agrees (read here with read_committed).
    sent = [int(value) for _, _, value in read_topic(ex4_source)]
    seen = ids_in(value for _, _, value in read_topic(ex4_topic, committed=True))
    ran = isinstance(ex4_result, dict) and ex4_result["error"] is None and _exactly_once(seen, sent)
    expect(ran and ex4_result["crashes"] >= 10 and "after write" in ex4_result["points"], "ex4_crashed_and_ran",
           "a crash test with at least 10 crashes, some after the write", repr(ex4_result if not isinstance(
               ex4_result, dict) else ex4_result["error"]), "define ex4_write, then run the crash-test cell")
    expect(ran and ex4_result["duplicated"] == 0 and ex4_result["lost"] == 0, "ex4_counts", "0 duplicated, 0 lost",
           repr({k: ex4_result[k] for k in ("duplicated", "lost")}) if ran else "no run",
           "a replayed batch whose id is <= tx.last_batch() was committed already: skip it")
    return sent, seen
