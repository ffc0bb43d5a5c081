"""Module 3's visible exercise checks (03-consumer-lag): lag from a progress event, from a checkpoint, its trend,
the time to catch up.

Why here: a learner's check cell is 1-3 lines (the teaching standard), so the checks those cells ran moved here,
unchanged: the same check ids, expected text and hints, so the lab's feedback and the grade are the same. Each
function takes the notebook's names it needs (the learner's function, the live query's events and numbers) and
returns what a hidden test reads; the hidden tests stay in the notebook's test cells, and import `series` below to
make their hand-made windows the same way.
"""
from __future__ import annotations

import json
import math

from streamlab.course.checks import attempt, expect, expect_close, fake_progress, needs
from streamlab.observe import lag


def series(*lags) -> list:
    """Made-up progress events of one partition whose lag is each of `lags` in turn."""
    return [fake_progress(i, latest={0: 10_000 + x}, end={0: 10_000}) for i, x in enumerate(lags)]


def reference(events, tolerance=100) -> str:
    """The kind of a window of progress events, as classify_lag must say it."""
    lags = [lag.total_lag(e) for e in events]
    change = lags[-1] - lags[0] if len(lags) > 1 else 0
    if change > tolerance:
        return "falling behind"
    return "recovering" if change < -tolerance and lags[-1] > tolerance else "stable"


def ex1_live(lag_per_partition, p, orders) -> None:
    """Check lag_per_partition on the live query's last batch `p`."""
    expected = lag.lag_from_progress(p)[orders]
    got = attempt(lag_per_partition, p)
    expect(got == expected, "ex1_lag_live_event", repr(expected), repr(got),
           "for each partition of latestOffset, subtract the same partition's endOffset; keys as int")


def ex1_json_text(lag_per_partition) -> None:
    """Check lag_per_partition with offsets given as JSON text."""
    event = fake_progress(7, latest={0: 900, 1: 480}, end={0: 700, 1: 480}, topic="payments")
    for key in ("startOffset", "endOffset", "latestOffset"):
        event["sources"][0][key] = json.dumps(event["sources"][0][key])
    got = attempt(lag_per_partition, event)
    expect(got == {0: 200, 1: 0}, "ex1_lag_json_text", "{0: 200, 1: 0}", repr(got),
           "json.loads the offsets when they are strings")


def ex2_checkpoint(lag_from_checkpoint, q_checkpoint, orders) -> None:
    """Check lag_from_checkpoint on the stopped query q."""
    needs("Lag is a distance", topics=[orders], folders=[q_checkpoint])
    expected = lag.lag_from_checkpoint(q_checkpoint)[orders]
    got = attempt(lag_from_checkpoint, q_checkpoint, orders)
    expect(got == expected, "ex2_checkpoint_lag", repr(expected), repr(got),
           "latest offsets now minus checkpoint.committed_offsets(dir).kafka()[topic], per partition")


def ex2_other_query(lag_from_checkpoint, live):
    """Check lag_from_checkpoint on the live demo's stopped query: every partition; what it returned."""
    needs("Watch lag live", topics=[live.topic], folders=[live.checkpoint])
    got = attempt(lag_from_checkpoint, live.checkpoint, live.topic)
    expect(isinstance(got, dict) and set(got) == {0, 1, 2}, "ex2_all_partitions", "a lag for partitions 0, 1, 2",
           repr(got), "return every partition the broker has, as int keys")
    return got


def ex3_live_windows(classify_lag, rush, after) -> None:
    """Check classify_lag on the windows of the live run."""
    for name, window in {"rush": rush, "first_after": after[:4], "all_after": after}.items():
        expect(attempt(classify_lag, window) == reference(window), f"ex3_{name}", repr(reference(window)),
               repr(attempt(classify_lag, window)), "compare the last total lag with the first, with the tolerance")


def ex3_growing(classify_lag) -> None:
    """Check classify_lag on a growing lag."""
    expect(attempt(classify_lag, series(100, 600, 1500)) == "falling behind", "ex3_growing", "'falling behind'",
           repr(attempt(classify_lag, series(100, 600, 1500))), "the lag grew by 1,400")


def ex4_live_numbers(time_to_catch_up, backlog, throughput, input_rate, observed) -> None:
    """Check time_to_catch_up on the live run's numbers, and show the prediction against what happened."""
    want = backlog / (throughput - input_rate) if throughput > input_rate else math.inf
    got = attempt(time_to_catch_up, backlog, throughput, input_rate)
    ok = isinstance(got, (int, float)) and (got == want or math.isclose(got, want, rel_tol=1e-6))
    expect(ok, "ex4_live_numbers", f"{want:.2f} s", repr(got), "backlog / (processed rate - input rate)")
    if ok and observed is not None:
        print(f"predicted {got:.1f} s, observed {observed} s (the throughput varies from batch to batch)")
    elif ok:
        print(f"predicted {got:.1f} s; the lag had not drained when the demo ended, so there is nothing to compare")


def ex4_formula(time_to_catch_up) -> None:
    """Check time_to_catch_up on textbook numbers."""
    expect_close(attempt(time_to_catch_up, 12_000, 2_000, 1_500), 24.0, "ex4_formula", rel=1e-6,
                 hint="12,000 records drain at 2,000 - 1,500 = 500 records/s")


def ex4_never(time_to_catch_up) -> None:
    """Check that time_to_catch_up says never (math.inf) when the query is not faster than its input."""
    got = attempt(time_to_catch_up, 5_000, 1_000, 1_000)
    expect(got == math.inf, "ex4_never_equal_rates", "inf", repr(got), "return math.inf when processed <= input")
