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
