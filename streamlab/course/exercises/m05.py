"""Module 5's visible exercise checks (05-rate-limiting): sizing a cap, the catch-up job, a cap controller.

Why here: a learner's check cell is 1-3 lines (the teaching standard), so the checks those cells ran moved here,
unchanged: the same check ids, expected text and hints, so the lab's feedback and the grade are the same. Each
function takes the notebook's names it needs (the learner's function, the demo's values); the hidden tests stay in
the notebook's test cells, and import the batch makers below (`made_sized`, `made_behind`) to share their inputs.
"""
from __future__ import annotations

from streamlab.course.checks import attempt, expect, fake_progress


def made_sized(rows: int, ms: float) -> dict:
    """A made-up batch for per_record_ms: `rows` records whose trigger took `ms`."""
    event = fake_progress(0, {0: 10_000}, {0: 5_000}, rows=rows)
    event["durationMs"]["triggerExecution"] = ms
    return event


def made_behind(rows: int, ms: float, behind: int) -> dict:
    """A made-up batch for next_cap: `rows` records, `ms` of work, `behind` records left on the log."""
    event = fake_progress(5, {0: 20_000 + behind}, {0: 20_000}, rows=rows)
    event["durationMs"].update(triggerExecution=ms + 100, addBatch=ms)
    return event


def ex1_live(per_record_ms, measured_events) -> None:
    """Check per_record_ms on the live batches of the three sizing queries."""
    from streamlab.rates import ratecontrol

    want = ratecontrol.least_squares_slope(measured_events)
    got = attempt(per_record_ms, measured_events)
    ok = isinstance(got, (int, float)) and want is not None and abs(got - want) <= 1e-6 * max(1.0, abs(want))
    expect(ok, "ex1_live", f"{want:.3f} ms (the slope over the live batches)" if want else "a slope", repr(got),
           "fit duration = overhead + c * rows by least squares over the batches with data; c is the answer")


def ex1_synthetic(per_record_ms) -> None:
    """Check per_record_ms on two hand-made batches."""
    got = attempt(per_record_ms, [made_sized(100, 400), made_sized(300, 800)])
    expect(got == 2.0, "ex1_two_batches", "2.0", repr(got),
           "how many ms more does the larger batch take, for how many rows more?")


def ex2_demo(size_cap, sizing) -> None:
    """Check size_cap on the sizing demo's numbers, and print the lag the demo's caps ended with."""
    got = attempt(size_cap, 1.0, 2, 200)
    expect(got == 800, "ex2_demo", "800", repr(got),
           "work out both bounds for 1 ms a record, a 2 s trigger and 200/s: which is smaller?")
    right, low = sizing["just right (800)"], sizing["too low (300)"]
    end = {name: demo.samples[-1]["lag"] if demo.samples else None for name, demo in (("800", right), ("300", low))}
    # What the demo showed, for reading: not a check of your code.
    print(f"lag at the end of the sizing demo: cap 800 -> {end['800']}, cap 300 -> {end['300']}")


def ex2_rules(size_cap) -> None:
    """Check size_cap when the interval, not the headroom, limits the cap."""
    got = attempt(size_cap, 2.0, 1, 300)
    expect(got == 400, "ex2_fits_limits", "400", repr(got),
           "at 2 ms a record, how many records fit in 80% of 1 s? Compare that with the headroom bound")


def ex3_stops(spark, catch_up_options, catch_up_trigger) -> dict | None:
    """Run the catch-up job again on a fresh topic, check it read everything and stopped; return the run."""
    from streamlab.lab.lifecycle import new_topic
    from streamlab.lab.producer import produce
    from streamlab.rates import ratecontrol

    run = None
    if isinstance(catch_up_trigger, dict):  # a run of your options and trigger, on data your notebook never saw
        fresh = new_topic("catch-up-check", partitions=2)
        produce(fresh, 4000)
        run = ratecontrol.catch_up_run(spark, fresh, catch_up_options if isinstance(catch_up_options, dict)
                                       else None, catch_up_trigger, timeout=90)
    ran = isinstance(run, dict)
    expect(ran and run["error"] is None, "ex3_ran", "a run without an error",
           repr(run["error"]) if ran else "no trigger yet", "catch_up_trigger is a dict like {'name': value}")
    expect(ran and run["stopped"] and sum(run["rows"]) == 4000, "ex3_stops",
           "4000 rows read and the query stopped by itself",
           f"{sum(run['rows'])} rows, stopped: {run['stopped']}" if ran else "no run",
           "which trigger processes what is there and then stops?")
    return run


def ex3_capped(catch_up_check) -> None:
    """Check that no batch of the catch-up check's run read more than 1,000 records."""
    rows = catch_up_check["rows"] if isinstance(catch_up_check, dict) else []
    expect(bool(rows) and max(rows) <= 1000, "ex3_capped", "batches of at most 1,000 rows",
           f"batches of {rows}" if rows else "no batch", "a trigger that ignores the cap reads the backlog in one "
           "batch; and is the cap set in catch_up_options?")


def ex4_rules(next_cap, normal_cap: int, max_batch: int) -> None:
    """Check that next_cap raises the cap when far behind, within the largest batch."""
    got = attempt(next_cap, made_behind(800, 1000, 8000), 800)
    expect(isinstance(got, int) and normal_cap < got <= max_batch, "ex4_raises_when_behind",
           "a cap above 800 and at most 2000", repr(got), "8,000 behind a cap of 800: raise it, within MAX_BATCH")


def ex4_live(spark, next_cap) -> dict | None:
    """Race the learner's controller against the fixed cap of 800 in a burst; check it ran; return the run."""
    from streamlab.course import scenarios

    why_not = scenarios.not_a_controller(next_cap)  # asked on made-up batches first: a race takes half a minute
    run = None if why_not else scenarios.burst_against_fixed_cap(spark, next_cap)
    if run is not None and run["error"] is None:
        print(scenarios.outcome(run))
    expect(run is not None and run["error"] is None and run["batches"] > 0, "ex4_ran",
           "a live run whose controller did not raise", why_not or repr(run["error"]),
           "next_cap(progress, cap) returns a whole number: higher when far behind, NORMAL_CAP once caught up")
    return run
