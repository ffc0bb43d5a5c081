"""streamlab.rates.pid.PIDRateEstimator against Spark's own PIDRateEstimator, run in the session's JVM (it ships in
pyspark's spark-streaming jar): the same inputs give the same doubles, bit for bit, on random sequences."""
from __future__ import annotations

import random
import struct

import pytest

from streamlab.rates.pid import PIDRateEstimator

pytestmark = pytest.mark.spark


def _spark_estimator(spark, *args):
    jvm = spark.sparkContext._jvm
    return jvm.org.apache.spark.streaming.scheduler.rate.PIDRateEstimator(*args)


def _bits(value):
    return None if value is None else struct.pack(">d", value)


def _spark_compute(estimator, *args):
    option = estimator.compute(*args)
    return option.get() if option.isDefined() else None


def _sequence(rng: random.Random, n: int) -> list[tuple[int, int, int, int]]:
    """Batch reports as Spark's scheduler makes them, with the awkward cases mixed in: time standing still or
    going back, empty batches, zero processing delay, bursts and long scheduling delays."""
    time_ms, out = rng.randint(0, 10_000), []
    for _ in range(n):
        time_ms += rng.choice([0, -500, 1, 999, 1000, 1000, 1000, 2000, 37_000])
        records = rng.choice([0, 1, 7, 100, 1000, 12_345, 10**6, rng.randint(0, 5 * 10**5)])
        processing = rng.choice([0, 1, 3, 250, 999, 1000, 4000, rng.randint(0, 60_000)])
        scheduling = rng.choice([0, 0, 0, 1, 500, 10_000, rng.randint(0, 120_000)])
        out.append((time_ms, records, processing, scheduling))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_matches_spark_bit_for_bit(spark, seed):
    """Random gains, floors, intervals and batch sequences: every returned rate (or None) equals Spark's."""
    rng = random.Random(seed)
    interval = rng.choice([1, 100, 1000, 2000, 10_000])
    gains = (rng.choice([0.0, 0.5, 1.0, 2.5]), rng.choice([0.0, 0.2, 1.0]), rng.choice([0.0, 0.0, 0.1, 3.0]))
    floor = rng.choice([0.001, 1.0, 100.0, 5000.0])
    ours = PIDRateEstimator(interval, *gains, floor)
    theirs = _spark_estimator(spark, interval, *gains, floor)
    rates = 0
    for step, report in enumerate(_sequence(rng, 60)):
        expected = _spark_compute(theirs, *report)
        found = ours.compute(*report)
        assert _bits(found) == _bits(expected), f"step {step} {report}: Spark {expected!r}, ours {found!r}"
        rates += expected is not None
    assert rates >= 10, "too few batches produced a rate for the comparison to mean much"


def test_defaults_are_spark_s(spark):
    """proportional 1.0, integral 0.2, derivative 0.0, minRate 100: a slow batch lands on the floor."""
    ours = PIDRateEstimator(1000)
    theirs = _spark_estimator(spark, 1000, 1.0, 0.2, 0.0, 100.0)
    reports = [(1000, 5000, 1000, 0), (2000, 5000, 5000, 4000), (3000, 100, 20_000, 30_000)]
    rates = [ours.compute(*r) for r in reports]
    assert rates == [_spark_compute(theirs, *r) for r in reports]
    assert rates[0] is None and rates[-1] == 100.0


@pytest.mark.parametrize("args, message", [
    ((0,), "Specified batch interval 0 in PIDRateEstimator is invalid."),
    ((1000, -1.0), "Proportional term -1.0 in PIDRateEstimator should be >= 0."),
    ((1000, 1.0, -0.2), "Integral term -0.2 in PIDRateEstimator should be >= 0."),
    ((1000, 1.0, 0.2, -1.0), "Derivative term -1.0 in PIDRateEstimator should be >= 0."),
    ((1000, 1.0, 0.2, 0.0, 0.0), "Minimum rate in PIDRateEstimator should be > 0"),
])
def test_refuses_what_spark_refuses(spark, args, message):
    """Invalid settings fail with Spark's own message."""
    full = (*args, *(1000, 1.0, 0.2, 0.0, 100.0)[len(args):])
    with pytest.raises(ValueError) as ours:
        PIDRateEstimator(*full)
    assert str(ours.value) == message
    with pytest.raises(Exception) as theirs:
        _spark_estimator(spark, *full)
    assert message in str(theirs.value)
