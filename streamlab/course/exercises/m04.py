"""Module 4's visible exercise checks (04-backpressure): the cap's split, availableNow's batches, a PID step, levers.

Why here: a learner's check cell is 1-3 lines (the teaching standard), so the checks those cells ran moved here,
unchanged: the same check ids, expected text and hints, so the lab's feedback and the grade are the same. Each
function takes the notebook's names it needs (the learner's function or answer, the live run's backlogs and PID
steps) and returns what a hidden test reads; the hidden tests stay in the notebook's test cells, and import
`spark_split` below for Spark's own split of a cap.
"""
from __future__ import annotations

import math

from streamlab.course.checks import attempt, expect, expect_form
from streamlab.offline.planner import rate_limit


def spark_split(cap, backlogs) -> dict:
    """Spark's own split of `cap` (streamlab's planner, proven equal to the connector's by the differential tests)."""
    ends = rate_limit(cap, {("t", p): 0 for p in backlogs}, {("t", p): n for p, n in backlogs.items()})
    return {tp[1]: end for tp, end in ends.items()}


def ex1_live_batch(split_cap, backlogs) -> None:
    """Check split_cap against the rows per partition of the live capped batch."""
    # Spark's own split (streamlab's planner, equal to the connector's in the differential tests): the live batch.
    want = spark_split(1000, backlogs)
    got = attempt(split_cap, backlogs, 1000)
    expect(got == want, "ex1_live_batch", repr(want), repr(got),
           "each partition gets floor(cap * size / total) of the budget, not cap / partitions (compare rows_first)")


def ex1_textbook(split_cap) -> None:
    """Check split_cap on small hand-made backlogs."""
    got = attempt(split_cap, {0: 300, 1: 100, 2: 0}, 100)
    expect(got == {0: 75, 1: 25, 2: 0}, "ex1_textbook", "{0: 75, 1: 25, 2: 0}", repr(got),
           "100 * 300/400 = 75 and 100 * 100/400 = 25; an empty partition reads 0")


def ex1_many_small(split_cap) -> None:
    """Check split_cap when many small partitions push a batch over the cap."""
    got = attempt(split_cap, {p: 1 for p in range(20)}, 10)
    total = sum(got.values()) if isinstance(got, dict) and all(isinstance(v, int) for v in got.values()) else got
    want = sum(spark_split(10, {p: 1 for p in range(20)}).values())
    expect(isinstance(got, dict) and total == want, "ex1_many_small", f"{want} rows in all, as the live batch read",
           repr(total), "a share below 1 is rounded up to 1")


def ex2_live_run(available_now_batches, backlogs) -> None:
    """Check available_now_batches against the live availableNow run on the uneven topic."""
    # The batches Spark's planner makes (the live run made as many): capped batches until nothing is left.
    start, latest, want = {("t", p): 0 for p in backlogs}, {("t", p): n for p, n in backlogs.items()}, 0
    while any(latest[tp] > start[tp] for tp in latest):
        start, want = rate_limit(1000, start, latest), want + 1
    got = attempt(available_now_batches, backlogs, 1000)
    expect(got == want, "ex2_live_run", f"{want} batches (as the live run)", repr(got),
           "apply split_cap to what is left until nothing is left, counting batches")


def ex2_many_small(available_now_batches) -> None:
    """Check available_now_batches where rounding changes the count."""
    got = attempt(available_now_batches, {p: 1 for p in range(20)}, 10)
    expect(got == 1, "ex2_many_small", "1", repr(got), "20 partitions of 1 record, cap 10: each share is rounded up")


def ex3_one_step(pid_step, state, call, spark_rate) -> None:
    """Check pid_step on one step of the simulated run."""
    got = attempt(pid_step, *state, *call, 1000)
    ok = isinstance(got, (int, float)) and math.isclose(got, spark_rate, rel_tol=1e-9)
    expect(ok, "ex3_one_step", repr(spark_rate), repr(got),
           "latest_rate - kp*error - ki*historical_error - kd*d_error, never below min_rate")


def ex3_returns_a_number(pid_step, steps) -> None:
    """Check the form of pid_step's answer (a number); the hidden test grades every step."""
    got = attempt(pid_step, *steps[1][0], *steps[1][1], 1000)
    expect_form(isinstance(got, (int, float)), "ex3_returns_a_number", repr(got), "return the new rate",
                what="that it returns a number")


def ex3_proportional(pid_step) -> None:
    """Check pid_step on a proportional step with no delay."""
    got = attempt(pid_step, 1000.0, 0.0, 1.0, 500, 1000, 0, 1000)
    expect(got == 500.0, "ex3_proportional", "500.0", repr(got), "processing rate 500/s, error 500, no delay")


def ex4_burst_is_a_lever(burst_fix, levers) -> None:
    """Check that the lever for the burst is one of LEVERS (its form; the hidden test grades it)."""
    expect_form(burst_fix in levers, "ex4_burst_is_a_lever", repr(burst_fix), "copy a string from LEVERS",
                what="that it is one of LEVERS")


def ex4_overload_are_levers(overload_fixes, levers) -> bool:
    """Check that the levers for steady overload are a list from LEVERS (their form); whether they are."""
    ok = isinstance(overload_fixes, (list, tuple, set)) and bool(overload_fixes) and set(overload_fixes) <= set(levers)
    expect_form(ok, "ex4_overload_are_levers", repr(overload_fixes), "a non-empty list of strings from LEVERS",
                what="that it is a list of levers from LEVERS")
    return ok
