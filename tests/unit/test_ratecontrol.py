"""streamlab.ratecontrol without a broker: the cost fit, the batch table, and how ControlledDemo asks its controller."""
from __future__ import annotations

import threading

import pytest

from streamlab import ratecontrol
from streamlab.monitor import fake_progress


def made(rows: int, ms: int, behind: int = 0, batch: int = 0) -> dict:
    event = fake_progress(batch, {0: 10_000 + behind}, {0: 10_000}, rows=rows)
    event["durationMs"]["triggerExecution"] = ms
    return event


def test_slope_ignores_overhead_and_idle_batches():
    events = [made(n, 300 + 2 * n) for n in (100, 500, 900)] + [made(0, 40)]
    assert ratecontrol.least_squares_slope(events) == pytest.approx(2.0)


def test_slope_needs_two_different_batch_sizes():
    assert ratecontrol.least_squares_slope([made(100, 300)]) is None
    assert ratecontrol.least_squares_slope([made(100, 300), made(100, 500)]) is None


def test_batch_table_keeps_data_batches_with_lag():
    table = ratecontrol.batch_table([made(100, 300, behind=50, batch=3), made(0, 20, batch=4)])
    assert table.to_dict("records") == [{"batch": 3, "rows": 100, "duration_ms": 300, "lag": 50}]


class _Chart:
    def __init__(self):
        self.marks = []


def bare_demo(controller, events, cap=400):
    """A ControlledDemo without widgets, broker or Spark: just what _apply_script touches."""
    demo = ratecontrol.ControlledDemo.__new__(ratecontrol.ControlledDemo)
    demo.controller, demo.max_offsets, demo.caps, demo.controller_error = controller, cap, [], None
    demo.events, demo._asked, demo._ask_lock = list(events), 0, threading.Lock()
    demo._restart, demo.chart, demo.live_from, demo._pending, demo.applied = threading.Event(), _Chart(), None, [], []
    demo.warn = lambda message: setattr(demo, "warned", message)
    return demo


def test_a_new_cap_restarts_once_and_is_recorded():
    demo = bare_demo(lambda progress, cap: 900 if progress["numInputRows"] else cap, [made(0, 10), made(400, 500)])
    demo._apply_script(5.0)
    assert demo.max_offsets == 900 and demo.caps == [(5.0, 900)] and demo._restart.is_set()
    demo._apply_script(5.5)  # a restart is pending: the controller is not asked again
    assert demo.caps == [(5.0, 900)]


def test_the_same_cap_does_not_restart():
    demo = bare_demo(lambda progress, cap: cap, [made(400, 500)])
    demo._apply_script(1.0)
    assert not demo._restart.is_set() and demo.caps == []


def test_a_raising_or_bad_controller_is_reported_and_not_asked_again():
    demo = bare_demo(lambda progress, cap: 1 / 0, [made(400, 500)])
    demo._apply_script(1.0)
    assert demo.controller_error.startswith("ZeroDivisionError") and "cap stays at 400" in demo.warned
    assert demo.max_offsets == 400 and not demo._restart.is_set()
    demo = bare_demo(lambda progress, cap: 0, [made(400, 500)])
    demo._apply_script(1.0)
    assert demo.controller_error.startswith("ValueError")
