"""Live scenarios a check runs from scratch (its own topic and queries), so what it measures is never a value
the notebook could have changed: the grader runs them in its own Spark session."""
from __future__ import annotations

import contextlib
import io


def burst_against_fixed_cap(spark, controller, *, normal_cap: int = 800, cost_ms: float = 0.4,
                            trigger_seconds: float = 2, burst: int = 8_000, rate: int = 200,
                            duration: float = 20, tries: int = 2) -> dict:
    """A burst of `burst` records against a fixed cap and against `controller(progress, cap)`, side by side.

    Returns plain numbers: the lag each had at the end (measured at the broker), the controlled query's largest
    batch, the caps it chose and the controller's error, if it raised. Both queries race on one machine, and on a
    loaded one a restart can take seconds more than the controller could know: a controller that raised its cap
    but still lost gets a second race (`tries`), and the better of the two counts. One that never raised it loses
    both, so a second try gives nothing a wrong controller could use.
    """
    run: dict = {}
    for attempt in range(1, tries + 1):
        run = _race(spark, controller, normal_cap=normal_cap, cost_ms=cost_ms, trigger_seconds=trigger_seconds,
                    burst=burst, rate=rate, duration=duration) | {"tries": attempt}
        raised = any(cap > normal_cap for _, cap in run["caps"])
        if run["error"] is not None or run["fixed_lag"] is None or run["lag"] < run["fixed_lag"] or not raised:
            break
    return run


def _race(spark, controller, *, normal_cap, cost_ms, trigger_seconds, burst, rate, duration) -> dict:
    """One race of the fixed cap against the controller, on a topic of its own."""
    from streamlab.lab.lifecycle import new_topic
    from streamlab.demo import LiveDemo
    from streamlab.rates.ratecontrol import ControlledDemo

    topic = new_topic("scenario", partitions=3)
    common = dict(cost_ms=cost_ms, trigger_seconds=trigger_seconds, duration=duration, controls=())
    with contextlib.redirect_stdout(io.StringIO()):  # the demos' own charts are not part of a check's output
        fixed = LiveDemo(spark, topic, rate=rate, max_offsets=normal_cap, script=[(3, "burst", burst)],
                         title="fixed cap", **common)
        controlled = ControlledDemo(spark, topic, rate=0, max_offsets=normal_cap, controller=controller,
                                    title="controller", **common)
        fixed.start()
        controlled.start()
        fixed.wait()
        controlled.wait()
    return {"fixed_lag": fixed.samples[-1]["lag"] if fixed.samples else None, "lag": controlled.final_lag(),
            "largest_batch": int(controlled.largest_batch()), "caps": list(controlled.caps),
            "error": controlled.controller_error, "batches": len(controlled.history)}
