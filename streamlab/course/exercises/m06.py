"""Module 6's visible exercise checks (06-multi-topic): a pattern subscription, one cap over many topics, a
quarantine topic and its replay.

Why here: a learner's check cell is 1-3 lines (the teaching standard), so the checks those cells ran moved here,
unchanged: the same check ids, expected text and hints, so the lab's feedback and the grade are the same. Each
function takes the notebook's names it needs and returns what the cell's hidden tests go on to read (the variant's
backlogs and cap, the ledger, the quarantined messages); the hidden tests stay in the notebook's test cells.
"""
from __future__ import annotations

import json

from streamlab.course.checks import attempt, expect, expect_equal, needs


def ex1_pattern_live(ex1_rows, orders_topic, payments_topic) -> None:
    """Check that ex1_options's live run read every row of the shop's two topics and nothing else."""
    from streamlab.lab.topics import describe_topic

    needs("One source, many topics", topics=[orders_topic, payments_topic])
    sizes = {t: sum(last - first for first, last in describe_topic(t).values()) for t in (orders_topic, payments_topic)}
    expect_equal(ex1_rows, sizes, "ex1_reads_the_shop",
                 "read every row of orders and payments and nothing else; anchor the pattern with ^ and $")


def ex2_live_first_batch(first_batch_rows, cap_checkpoint, cap_orders, cap_payments, cap_refunds):
    """Check first_batch_rows against the live first batch of the variant; return (backlogs, cap)."""
    import streamlab
    from streamlab.observe.subscriptions import batch_rows

    v = streamlab.variant()
    cap = v.randint("ex2.cap", 400, 1000, step=50)
    backlogs = {cap_orders: {p: v.randint(f"ex2.orders.{p}", 100, 900, step=50) for p in range(3)},
                cap_payments: {0: v.randint("ex2.payments", 100, 900, step=50)},
                cap_refunds: {0: v.randint("ex2.refunds", 1, 3)}}
    live = {t: sum(parts.values()) for t, parts in batch_rows(cap_checkpoint, 0).items()}
    expect_equal(attempt(first_batch_rows, backlogs, cap), live, "ex2_live",
                 "one budget for all partitions of all topics, in proportion to backlog, rounded down")
    return backlogs, cap


def ex2_rules(first_batch_rows) -> None:
    """Check first_batch_rows rounds each partition's share down."""
    got = attempt(first_batch_rows, {"a": {0: 1000}, "b": {0: 1000, 1: 1000}}, 100)
    expect_equal(got, {"a": 33, "b": 66}, "ex2_round_down", "100 × 1000/3000 = 33.3 per partition, rounded down")


def ex3_accounted(ex3_error, ex3_schemas, ex3_clean, ex3_quarantine) -> dict:
    """Check the route ran and no message is missing (recounted from Kafka); return the ledger."""
    from streamlab.delivery import quarantine

    ledger = quarantine.ledger(ex3_schemas, ex3_clean, ex3_quarantine)
    expect(ex3_error is None, "ex3_ran", "a run without errors", repr(ex3_error),
           "write route, then run the cell after it")
    expect_equal({t: row["missing"] for t, row in ledger.items()}, {t: 0 for t in ex3_schemas},
                 "ex3_nothing_missing", "each message must reach the clean topic or the quarantine, exactly once")
    return ledger


def ex3_traceable(ex3_quarantine):
    """Check every quarantined message has the headers that say where it came from; return (held, heads)."""
    from streamlab.delivery import quarantine

    held = quarantine.read_all(ex3_quarantine)
    heads = [{k: v.decode() for k, v in (r.headers or [])} for r in held]
    expect(bool(held) and all({"source-topic", "source-offset", "error"} <= set(h) for h in heads), "ex3_headers",
           "headers source-topic, source-partition, source-offset and error on every quarantined message",
           f"{len(held)} messages, headers {sorted(heads[0]) if heads else None}", "use quarantine.dead_letters(bad)")
    return held, heads


def ex4_repair(repair) -> None:
    """Check repair turns a decimal-comma string into its number."""
    got = attempt(repair, '{"id":1,"user":"u","amount":"12,50"}')
    ok = isinstance(got, str) and got[:1] == "{" and json.loads(got) == {"id": 1, "user": "u", "amount": 12.5}
    expect(ok, "ex4_decimal_comma", '{"id": 1, "user": "u", "amount": 12.5}', repr(got), "json.loads, fix, json.dumps")


def _loads(value):
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return None


def ex4_replayed_live(ex4_quarantine, ex4_replay):
    """Check the live replay brought back every quarantined message that is JSON; return how many it replayed."""
    from streamlab.delivery import quarantine

    held = quarantine.read_all(ex4_quarantine)
    repairable = sum(isinstance(_loads(r.value), dict) for r in held)
    replayed = ex4_replay.get("replayed") if isinstance(ex4_replay, dict) else None
    expect(replayed == repairable and repairable > 0, "ex4_replayed_all_repairable",
           f"{repairable} messages replayed (every quarantined message that is JSON)", repr(replayed),
           "repair returns None only for messages that are not JSON")
    return replayed
