"""Module 1's visible exercise checks (01-source-internals): tasks per batch, the pay topics, assign, parsing.

Why here: a learner's check cell is 1-3 lines (the teaching standard), so the checks those cells ran moved here,
unchanged: the same check ids, expected text and hints, so the lab's feedback and the grade are the same. Each
function takes the notebook's names it needs (the learner's answer, the lesson's topics, `spark`) and returns what
a later test cell reads (the checked source, the traced run); the hidden tests stay in the notebook's test cells.
"""
from __future__ import annotations

import datetime as dt
import json

from streamlab.course.checks import expect, expect_form, notebook
from streamlab.lab import topics
from streamlab.observe import internals


def prediction(ex1_tasks, name: str):
    """The learner's predicted task count `name` of Exercise 1 (None when ex1_tasks is not a dict)."""
    return ex1_tasks.get(name) if isinstance(ex1_tasks, dict) else None


def ex1_tasks_plain(ex1_tasks, ex1_source, spark):
    """Check the prediction without minPartitions against a live batch; the checked source (None if changed)."""
    import streamlab

    # The check measures the lesson's topic, and makes sure it still is that topic (your variant's sizes, 3 empty).
    n = streamlab.variant().numbers("ex1", p0=(300, 900, 50), p1=(100, 600, 50), p2=(50, 400, 50))
    checked = dict(ex1_source) if isinstance(ex1_source, dict) else {}
    if topics.layout(checked.get("subscribe")) != {0: n["p0"], 1: n["p1"], 2: n["p2"], 3: 0, 4: 0, 5: 0} or set(
            checked) != {"kafka.bootstrap.servers", "subscribe", "startingOffsets"}:
        checked = None
    measured = internals.count_tasks(spark, checked) if checked else "ex1_source was changed: run all cells again"
    expect(prediction(ex1_tasks, "plain") == measured, "ex1_tasks_plain", f"{measured} tasks",
           repr(prediction(ex1_tasks, "plain")), "one task per partition *with new records*; partitions 3-5 are empty")
    return checked


def ex1_answered(ex1_tasks, key: str) -> None:
    """Check the form of the prediction ex1_tasks[key] (a whole number); the hidden test grades it."""
    expect_form(isinstance(prediction(ex1_tasks, key), int), f"ex1_{key}_answered", repr(prediction(ex1_tasks, key)),
                f"set ex1_tasks['{key}'] to a whole number", what="that it is a whole number")


def ex2_topics(spark, pay, pay_tag, ex2_options):
    """Check that the stream reads the current pay topics and not the retired one; the traced run."""
    # The lesson's topics, checked at the broker: two current ones of 2 x 200 records, one retired of 400.
    pay_intact = isinstance(pay, dict) and all(
        isinstance(pay.get(r), str) and pay[r].startswith(f"{'old-' if r == 'old' else ''}pay-{pay_tag}-{'eu' if r == 'old' else r}-")
        and topics.layout(pay[r]) == ({0: 400} if r == "old" else {0: 200, 1: 200}) for r in ("eu", "us", "old"))
    run = (internals.trace(spark, ex2_options) if pay_intact else
           internals.Trace(options={}, error="the lesson's pay topics were changed: run all cells again"))
    expect(run.error is None and run.topics == {pay["eu"], pay["us"]}, "ex2_topics",
           f"rows from {pay['eu']} and {pay['us']} only", run.error or sorted(run.topics),
           "subscribePattern is unanchored: start it with ^ so old-pay-… does not match")
    return run


def ex2_from_beginning(ex2_run) -> None:
    """Check that the stream starts from the beginning of every topic."""
    expect(ex2_run.rows == 800, "ex2_from_beginning", "800 rows (400 per current topic)",
           ex2_run.error or f"{ex2_run.rows} rows", "streams start at latest unless startingOffsets says otherwise")


def ex2_headers(ex2_run) -> None:
    """Check that the stream has a headers column."""
    expect("headers" in ex2_run.columns, "ex2_headers", "a headers column", ex2_run.error or repr(ex2_run.columns),
           "headers are dropped unless includeHeaders is true")


def ex2_batches(ex2_run):
    """Check that every batch holds at most 500 offsets and is read by at least 6 tasks; the run's batches."""
    b = ex2_run.batches
    ok = b is not None and len(b) > 0 and (b.rows <= 500).all() and (b.tasks >= 6).all()
    expect(ok, "ex2_batches", "every batch ≤ 500 rows and ≥ 6 tasks",
           ex2_run.error or b[["batch", "rows", "tasks"]].to_dict("records"),
           "maxOffsetsPerTrigger caps a batch; minPartitions asks for more tasks than the 4 partitions")
    return b


def ex3_partitions(spark, bootstrap, ex3_topic, ex3_assign, ex3_starting):
    """Check that only partitions 1 and 2 are read; the traced run and your variant's numbers."""
    import streamlab

    n3 = streamlab.variant().numbers("ex3", skip=(0, 2), offset=(10, 90, 5))
    first3, second3 = [p for p in (0, 1, 2) if p != n3["skip"]]  # from the offset, from the beginning
    try:
        named = set(json.loads(ex3_assign)) if isinstance(ex3_assign, str) else set()
    except ValueError:
        named = set()
    intact = topics.layout(ex3_topic) == {0: 100, 1: 100, 2: 100} and named <= {ex3_topic}
    run = (internals.trace(spark, {"kafka.bootstrap.servers": bootstrap, "assign": ex3_assign,
                                   "startingOffsets": ex3_starting}) if intact else
           internals.Trace(options={}, error="assign names another topic than the lesson's ex3_topic (100 records in "
                                             "each of its 3 partitions)"))
    read = set(run.tasks.partition) if run.tasks is not None else set()
    expect(run.error is None and read == {first3, second3}, "ex3_partitions", f"partitions {{{first3}, {second3}}}",
           run.error or repr(read), 'assign takes JSON like {"topic": [1, 2]}')
    return run, n3


def ex3_rows(ex3_run, n3) -> None:
    """Check where each partition starts, by the rows read."""
    want3 = (100 - n3["offset"]) + 100
    expect(ex3_run.rows == want3, "ex3_rows", f"{want3} rows", ex3_run.error or f"{ex3_run.rows} rows",
           'startingOffsets JSON names each assigned partition: {"topic": {"<p>": <offset>, "<q>": -2}}')


def ex4_types(parse_orders):
    """Check the column names and types, on fresh orders the function has not seen; (truth, rows) for later checks."""
    # A new topic made by the check: the rows it must give are known here, never in the notebook beforehand.
    options, truth = internals.fresh_orders()
    result = notebook().call("internals.collect_records", notebook().ref("spark"), options, parse_orders)
    want = {"id": "bigint", "user": "string", "action": "string", "amount": "double", "event_time": "timestamp"}
    rows = result["rows"] if isinstance(result, dict) and isinstance(result.get("rows"), list) else []
    expect(isinstance(result, dict) and result.get("dtypes") == want, "ex4_types", repr(want),
           repr(result.get("error") or result.get("dtypes")) if isinstance(result, dict) else repr(result),
           "select exactly these five columns, with these types")
    return truth, rows


def ex4_no_row_lost(ex4_rows, ex4_truth) -> None:
    """Check that every record, the malformed one included, becomes one row."""
    want_rows = ex4_truth["n"] + ex4_truth["malformed"]
    expect(len(ex4_rows) == want_rows, "ex4_no_row_lost", f"{want_rows} rows", f"{len(ex4_rows)} rows",
           "from_json returns nulls for a malformed value; do not filter rows out")


def ex4_event_time(ex4_rows) -> None:
    """Check the parsed event times: from the last day, so read as milliseconds."""
    times = [dt.datetime.fromisoformat(r["event_time"]) for r in ex4_rows
             if isinstance(r, dict) and isinstance(r.get("event_time"), str)]
    now = dt.datetime.now()
    recent = bool(times) and all(abs(t.replace(tzinfo=None) - now) < dt.timedelta(days=1) for t in times)
    expect(recent, "ex4_event_time_unit", "event times from the last day (the events were made minutes ago)",
           f"{len(times)} times, from {min(times)} to {max(times)}" if times else "no event times",
           "ts is in milliseconds: F.timestamp_millis, not a cast")
