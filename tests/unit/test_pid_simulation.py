"""streamlab.rates.pid.simulate, the DStreams backpressure model module 4 draws: what its charts claim holds."""
from __future__ import annotations

import math

from streamlab.rates.pid import PIDRateEstimator, simulate


def test_an_overloaded_job_without_backpressure_falls_further_behind_every_batch():
    run = simulate(batches=30, input_rate=2000, cost_ms=1.0, backpressure=False)
    # 2000 records/s at 1 ms each plus overhead: every second of data takes more than a second.
    assert list(run.scheduling_ms) == sorted(run.scheduling_ms) and run.scheduling_ms.iloc[-1] > 10_000
    assert run.estimate.isna().all(), "no estimator runs without backpressure"


def test_backpressure_bounds_the_delay_and_takes_about_what_it_can_process():
    run = simulate(batches=60, input_rate=2000, cost_ms=1.0)
    tail = run.tail(15)
    assert tail.scheduling_ms.max() < 3_000, "the PID loop should stop the scheduling delay from growing"
    capacity = 1000 / 1.0  # records/s at 1 ms per record
    assert 0.7 * capacity < tail.records.mean() < 1.05 * capacity
    assert run.backlog.iloc[-1] > run.backlog.iloc[10], "the rest waits in Kafka: producers are never slowed"


def test_estimates_are_exactly_those_of_the_estimator_fed_the_same_reports():
    run = simulate(batches=25, input_rate=1500, cost_ms=0.8, proportional=1.0, integral=0.2, min_rate=100)
    replay = PIDRateEstimator(1000, 1.0, 0.2, 0.0, 100.0)
    for row in run.itertuples():
        start = row.time_s * 1000 + row.scheduling_ms
        got = replay.compute(int(start + row.processing_ms), int(row.records), int(row.processing_ms),
                             int(row.scheduling_ms))
        assert (got is None and math.isnan(row.estimate)) or got == row.estimate


def test_a_very_slow_job_sits_on_the_min_rate_floor():
    run = simulate(batches=40, input_rate=2000, cost_ms=20.0, min_rate=100.0)
    assert (run.estimate.dropna().tail(10) == 100.0).all()
