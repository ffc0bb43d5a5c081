"""Module 8's visible exercise checks (08-cheat-sheet): the cap's split, a catch-up plan, lag from a progress event
and where a restart resumes, each against what the lesson's live query did.

Why here: a learner's check cell is 1-3 lines (the teaching standard), so the checks those cells ran moved here,
unchanged: the same check ids, expected text and hints, so the lab's feedback and the grade are the same. A check
whose hidden tests go on with the learner's answer returns it; the hidden tests stay in the notebook's test cells and
share `int_keys` and `ask_split` with these checks.
"""
from __future__ import annotations

from streamlab.course.checks import attempt, expect


def int_keys(found):
    """{int: int} of a dict of partitions (keys and numbers may come as text); anything else as it is."""
    return {int(p): int(n) for p, n in found.items()} if isinstance(found, dict) else found


def ask_split(split_cap, waiting: dict, budget: int):
    """The learner's split_cap(waiting, budget), its partitions and shares as ints."""
    return int_keys(attempt(split_cap, waiting, budget))


def ex1_live_batch(split_cap, backlogs: dict, cap: int, first: dict):
    """Check split_cap against the first capped batch Spark read live; return the learner's answer."""
    got = attempt(split_cap, backlogs, cap)
    seen = int_keys(first["batches"][0]["partitions"]) if first["batches"] else None
    expect(seen is not None and int_keys(got) == seen, "ex1_live_batch", repr(seen), repr(got),
           "share = cap × (size / total), rounded down per partition")
    return got


def ex1_rules(split_cap) -> None:
    """Check split_cap on ten even backlogs."""
    got = ask_split(split_cap, {p: 20_000 for p in range(10)}, 100_000)
    expect(got == {p: 10_000 for p in range(10)}, "ex1_ten_partitions", "10,000 each", repr(got),
           "one budget for the source: 100,000 × 20,000 / 200,000")


def ex2_catch_up(catch_up_batches, backlogs: dict, cap: int, first: dict):
    """Check catch_up_batches against the live availableNow run; return the learner's answer."""
    got = attempt(catch_up_batches, backlogs, cap)
    seen = [int(b["rows"]) for b in first["batches"]]
    expect(isinstance(got, list) and bool(seen) and [int(x) for x in got] == seen, "ex2_live", repr(seen), repr(got),
           "apply split_cap to what is left, batch after batch, until nothing is left")
    return got


def ex3_lag(lag_of, first: dict, sheet_topic: str) -> None:
    """Check lag_of on every live progress event of the catch-up run."""
    from streamlab.observe import lag

    events = first["progress"]
    got = [attempt(lag_of, e) for e in events]
    want = [int_keys(lag.lag_from_progress(e).get(sheet_topic, {})) for e in events]
    expect(bool(events) and [int_keys(g) for g in got] == want, "ex3_live", repr(want), repr(got),
           "json.loads the offsets, then latestOffset − endOffset per partition")


def ex4_resume(resume, started) -> None:
    """Check resume against where the restarted query started."""
    seen = int_keys(started) if isinstance(started, dict) else None
    expect(seen is not None and int_keys(resume) == seen, "ex4_restart_started_there", repr(seen), repr(resume),
           "the end offsets of the last committed batch (offsets/N with a commits/N)")
