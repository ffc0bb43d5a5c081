"""streamlab.delivery.faults without a broker: the crash plan, the delivery count, and reading a JVM error's causes."""
from __future__ import annotations

from streamlab.delivery import faults


def test_tally_counts_extra_copies_and_ignores_ids_never_sent():
    assert faults.tally([1, 2, 2, 3, 3, 3, 9], [1, 2, 3, 4]) == {"written": 3, "duplicated": 3, "lost": 1}
    assert faults.tally([], range(2)) == {"written": 0, "duplicated": 0, "lost": 2}


def test_plan_spreads_every_crash_and_each_point_at_least_once_in_life_cycle_order():
    plan = faults.plan(10, 3, seed=5)
    points = [p for ps in plan.values() for p in ps]
    assert sorted(plan) == [0, 1, 2] and len(points) == 10 and set(points) == set(faults.POINTS)
    order = {p: i for i, p in enumerate(faults.POINTS)}
    assert all([order[p] for p in ps] == sorted(order[p] for p in ps) for ps in plan.values())
    assert faults.plan(10, 3, seed=5) == plan


def test_crash_targets_stay_inside_the_batch():
    import random

    ranges = {0: (10, 20), 1: (5, 6)}
    assert faults.crash_targets("before write", ranges, random.Random(0)) == [(0, 10), (1, 5)]
    for seed in range(20):
        [(partition, offset)] = faults.crash_targets("mid write", ranges, random.Random(seed))
        assert partition == 0 and 10 < offset < 20
    assert faults.crash_targets("after write", ranges, random.Random(0)) == []
    assert faults.crash_targets("mid write", {}, random.Random(0)) == [], "an empty batch has no record to fail on"


def test_causes_reads_a_failed_task_and_its_suppressed_error():
    text = ("org.apache.spark.SparkException: Job aborted due to stage failure: Lost task 0.0 in stage 0.0 (TID 0) "
            "(192.0.2.2 executor driver): java.lang.IllegalStateException: Cannot add partition t-0\n"
            "\tat org.apache.spark.util.SparkErrorUtils.tryWithSafeFinally(SparkErrorUtils.scala:86)\n"
            "\tSuppressed: org.apache.kafka.common.errors.TimeoutException: Expiring 1 record(s)\n"
            "Caused by: java.lang.IllegalStateException: Cannot add partition t-0\n")
    assert faults.causes(text) == ["IllegalStateException: Cannot add partition t-0",
                                   "TimeoutException: Expiring 1 record(s)"]


def test_the_crash_demo_panels_and_status_read_the_running_tally():
    from matplotlib.figure import Figure

    hook = faults.CrashingSinks({"plain": None, "upsert": None}, point="after write", every=1)
    assert hook.status() == "0 crashes"
    hook.tallies.append({"t": 1.0, "counts": {"plain": {"written": 40, "duplicated": 7, "lost": 0},
                                              "upsert": {"written": 40, "duplicated": 0, "lost": 0}}})
    assert "plain: 40 once, 7 dup, 0 lost" in hook.status()
    ax = Figure().add_subplot()
    hook.panel("duplicated").draw(ax, None, 2.0)
    assert [list(line.get_ydata()) for line in ax.get_lines()] == [[7], [0]]
    assert list(ax.get_lines()[0].get_xdata()) == [3.0]
    hook.set_point("mid write")
    hook.set_every(0)
    assert (hook.point, hook.every) == ("mid write", 0)
