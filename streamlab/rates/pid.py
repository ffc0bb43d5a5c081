"""DStreams' automatic backpressure, re-created: Spark's PID rate estimator, in Python.

`spark.streaming.backpressure.enabled=true` made a DStreams job adapt its own ingestion rate with this controller
after every batch (`org.apache.spark.streaming.scheduler.rate.PIDRateEstimator`). Structured Streaming has no
such loop: none of the `spark.streaming.backpressure.*` settings affects it, and PySpark has had no Kafka DStream
since 3.0, so the course can only simulate it. The arithmetic below follows Spark's `compute` operation for
operation (the same order of floating-point steps), so it returns the same doubles;
tests/integration/test_pid.py runs both on random sequences and compares them bit for bit.
"""
from __future__ import annotations

import math


class PIDRateEstimator:
    """Spark's PID rate estimator: after each batch, the ingestion rate (records/s) for the next one."""

    def __init__(self, batch_interval_ms: int, proportional: float = 1.0, integral: float = 0.2,
                 derivative: float = 0.0, min_rate: float = 100.0):
        # The same preconditions, in the same order, with Spark's own messages.
        if not batch_interval_ms > 0:
            raise ValueError(f"Specified batch interval {batch_interval_ms} in PIDRateEstimator is invalid.")
        if not proportional >= 0:
            raise ValueError(f"Proportional term {proportional} in PIDRateEstimator should be >= 0.")
        if not integral >= 0:
            raise ValueError(f"Integral term {integral} in PIDRateEstimator should be >= 0.")
        if not derivative >= 0:
            raise ValueError(f"Derivative term {derivative} in PIDRateEstimator should be >= 0.")
        if not min_rate > 0:
            raise ValueError("Minimum rate in PIDRateEstimator should be > 0")
        self.batch_interval_ms = int(batch_interval_ms)
        self.proportional, self.integral, self.derivative = float(proportional), float(integral), float(derivative)
        self.min_rate = float(min_rate)
        self._first_run = True
        self._latest_time = -1
        self._latest_rate = -1.0
        self._latest_error = -1.0

    def compute(self, time_ms: int, num_elements: int, processing_delay_ms: int,
                scheduling_delay_ms: int) -> float | None:
        """The new rate after a batch, or None (first batch, time not moving forward, no records or no delay)."""
        if not (time_ms > self._latest_time and num_elements > 0 and processing_delay_ms > 0):
            return None
        delay_since_update = float(time_ms - self._latest_time) / 1000
        processing_rate = float(num_elements) / processing_delay_ms * 1000
        error = self._latest_rate - processing_rate
        historical_error = float(scheduling_delay_ms) * processing_rate / self.batch_interval_ms
        d_error = (error - self._latest_error) / delay_since_update
        new_rate = _java_max(self._latest_rate - self.proportional * error - self.integral * historical_error
                             - self.derivative * d_error, self.min_rate)
        self._latest_time = time_ms
        if self._first_run:
            self._latest_rate = processing_rate
            self._latest_error = 0.0
            self._first_run = False
            return None
        self._latest_rate = new_rate
        self._latest_error = error
        return new_rate

    @property
    def latest_rate(self) -> float:
        """The rate the estimator last settled on (the first batch's processing rate before any estimate)."""
        return self._latest_rate


def _java_max(a: float, b: float) -> float:
    """Scala's `Double.max`, i.e. java.lang.Math.max: NaN wins, and +0.0 beats -0.0."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == b == 0.0:
        return b if math.copysign(1.0, a) < 0 else a
    return a if a > b else b


# -- a simulated DStream driven by the estimator -------------------------------------------------------------------

def simulate(batches: int = 40, interval_ms: int = 1000, input_rate=2000, cost_ms: float = 1.0,
             overhead_ms: float = 50.0, backpressure: bool = True, max_rate: float | None = None,
             initial_rate: float | None = None, proportional: float = 1.0, integral: float = 0.2,
             derivative: float = 0.0, min_rate: float = 100.0):
    """Run a simulated DStreams job batch by batch; returns a pandas DataFrame with one row per batch.

    The model, kept small on purpose: records arrive in Kafka at `input_rate` records/s (a number, or a function
    of the batch's time in seconds). Every `interval_ms` a batch is generated and takes at most
    `ingest_rate × interval` records of the backlog, where `ingest_rate` is the newest rate the estimator had
    published by then (before its first estimate: `initial_rate`, or no limit), capped by `max_rate` (the total of
    `spark.streaming.kafka.maxRatePerPartition` over the partitions; None: no cap). With `backpressure=False` only
    `max_rate` limits. Batches run one at a time: a batch costs `overhead_ms + records × cost_ms` and starts when
    both its time has come and the previous batch has finished, so a slow batch delays the next one (its
    scheduling delay). After each batch `PIDRateEstimator.compute(end time, records, processing delay,
    scheduling delay)` is called as Spark's RateController does, and its rate applies to batches generated after.

    Columns: batch, time_s (when it was generated), input_rate, ingest_rate (the limit it was generated with, NaN
    when unlimited), records, backlog (left in Kafka after it was generated), processing_ms, scheduling_ms,
    estimate (what compute returned, NaN for None, and always NaN without backpressure: no estimator runs).
    """
    import pandas as pd

    estimator = PIDRateEstimator(interval_ms, proportional, integral, derivative, min_rate)
    arrival = input_rate if callable(input_rate) else (lambda _t, r=float(input_rate): r)
    published: list[tuple[float, float]] = []  # (time ms, rate), in order of time
    backlog, arrived_until, previous_end, rows = 0.0, 0.0, 0.0, []
    for k in range(batches):
        now = float((k + 1) * interval_ms)
        rate_in = float(arrival(now / 1000))
        backlog += rate_in * (now - arrived_until) / 1000
        arrived_until = now
        limit = initial_rate if backpressure else None
        if backpressure:
            for at, rate in published:
                if at <= now:
                    limit = rate
        if max_rate is not None:
            limit = max_rate if limit is None else min(limit, max_rate)
        take = int(backlog) if limit is None else min(int(backlog), int(limit * interval_ms / 1000))
        backlog -= take
        start = max(now, previous_end)
        processing = int(round(overhead_ms + take * cost_ms))
        end = start + processing
        previous_end = end
        estimate = estimator.compute(int(end), take, processing, int(start - now)) if backpressure else None
        if estimate is not None:
            published.append((end, estimate))
        rows.append({"batch": k, "time_s": now / 1000, "input_rate": rate_in,
                     "ingest_rate": math.nan if limit is None else float(limit), "records": take,
                     "backlog": int(backlog), "processing_ms": processing, "scheduling_ms": int(start - now),
                     "estimate": math.nan if estimate is None else estimate})
    return pd.DataFrame(rows)


def chart(runs: dict, capacity: float | None = None, title: str = "", width: float = 9.0, height: float = 5.0):
    """Two panels for simulated runs {label: simulate(...) frame}: records/s taken per batch (with the input rate
    and, if given, the processing capacity), and the scheduling delay. Returns an IPython Image."""
    from IPython.display import Image
    from matplotlib.figure import Figure

    from streamlab.demo.widgets import png

    colors = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3")
    fig = Figure(figsize=(width, height))
    top, bottom = fig.subplots(2, 1, sharex=True)
    first = None
    for i, (label, frame) in enumerate(runs.items()):
        seconds = frame["time_s"]
        interval = float(seconds.iloc[1] - seconds.iloc[0]) if len(frame) > 1 else 1.0
        top.plot(seconds, frame["records"] / interval, color=colors[i % len(colors)], linewidth=2,
                 label=f"{label}: records/s taken")
        bottom.plot(seconds, frame["scheduling_ms"] / 1000, color=colors[i % len(colors)], linewidth=2, label=label)
        first = frame if first is None else first
    if first is not None:
        top.plot(first["time_s"], first["input_rate"], color="#777777", linestyle=":", label="input rate")
    if capacity:
        top.axhline(capacity, color="#c44e52", linestyle="--", linewidth=1, label="processing capacity")
    top.set_ylabel("records/s")
    top.set_ylim(bottom=0)
    top.legend(fontsize=7, loc="center right")
    top.set_title(title, fontsize=10)
    bottom.set_ylabel("scheduling delay (s)")
    bottom.set_xlabel("batch time (s)")
    bottom.set_ylim(bottom=0)
    bottom.legend(fontsize=7, loc="upper left")
    return Image(png(fig))


def explorer(batches: int = 40, interval_ms: int = 1000, input_rate: int = 2000, cost_ms: float = 1.0,
             max_rate: int = 800):
    """Sliders for the PID gains, the load and a fixed cap, redrawing `chart` of the PID run against the fixed cap."""
    import ipywidgets as W

    from streamlab.demo.widgets import slider

    sliders = {"kp": W.FloatSlider(value=1.0, min=0, max=3, step=0.1, description="proportional"),
               "ki": W.FloatSlider(value=0.2, min=0, max=2, step=0.05, description="integral"),
               "kd": W.FloatSlider(value=0.0, min=0, max=1, step=0.05, description="derivative"),
               "rate": slider("input rate (rec/s)", input_rate, 0, 5000, 100),
               "cap": slider("fixed cap (rec/s)", max_rate, 100, 5000, 100)}
    for s in sliders.values():
        s.continuous_update = False
    image = W.Image(format="png")

    def redraw(_=None):
        common = dict(batches=batches, interval_ms=interval_ms, input_rate=sliders["rate"].value, cost_ms=cost_ms)
        runs = {"PID": simulate(proportional=sliders["kp"].value, integral=sliders["ki"].value,
                                derivative=sliders["kd"].value, **common),
                f"fixed cap {sliders['cap'].value}/s": simulate(backpressure=False, max_rate=sliders["cap"].value,
                                                                 **common)}
        image.value = chart(runs, capacity=1000 / cost_ms).data

    for s in sliders.values():
        s.observe(redraw, names="value")
    redraw()
    return W.VBox([*sliders.values(), image])


def replay(frame, interval_ms: int = 1000, **gains) -> list[tuple]:
    """(estimator state before the call, call arguments, what compute returned) for every batch of a simulated run."""
    estimator, steps = PIDRateEstimator(interval_ms, **gains), []
    for row in frame.itertuples():
        end = int(row.time_s * 1000) + row.scheduling_ms + row.processing_ms
        state = (estimator.latest_rate, estimator._latest_error, (end - estimator._latest_time) / 1000)
        call = (row.records, row.processing_ms, row.scheduling_ms)
        steps.append((state, call, estimator.compute(end, *call)))
    return steps
