"""streamlab.rates.ratecontrol without a broker: the cost fit, the batch table, and how ControlledDemo asks its controller."""
from __future__ import annotations

import pytest

from streamlab.rates import ratecontrol
from streamlab.course.checks import fake_progress


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


def bare_demo(controller, events, cap=400):
    """A ControlledDemo without widgets, broker or Spark, its events already seen, its first batch behind it."""
    demo = ratecontrol.ControlledDemo(None, "t", controller=controller, max_offsets=cap, controls=())
    demo.events, demo.live_from = list(events), 0.0
    demo.warn = lambda message: setattr(demo, "warned", message)
    return demo


def test_a_new_cap_restarts_once_and_is_recorded():
    demo = bare_demo(lambda progress, cap: 900 if progress["numInputRows"] else cap, [made(0, 10), made(400, 500)])
    demo._apply_script(5.0)
    assert demo.caps == [(5.0, 900)] and demo._pending_restart == ["cap"] and demo._wanted == {"cap": 900}
    assert demo.max_offsets == 400, "the cap in force changes when the query restarts"
    assert not demo._touched, "the controller's move is not a person's"
    demo._apply_script(5.5)  # a restart is pending: the controller is not asked again
    assert demo.caps == [(5.0, 900)]


def test_the_same_cap_does_not_restart():
    demo = bare_demo(lambda progress, cap: cap, [made(400, 500)])
    demo._apply_script(1.0)
    assert not demo._pending_restart and demo.caps == []


def test_a_raising_or_bad_controller_is_reported_and_not_asked_again():
    demo = bare_demo(lambda progress, cap: 1 / 0, [made(400, 500)])
    demo._apply_script(1.0)
    assert demo.controller_error.startswith("ZeroDivisionError") and "cap stays at 400" in demo.warned
    assert demo.max_offsets == 400 and not demo._pending_restart
    demo = bare_demo(lambda progress, cap: 0, [made(400, 500)])
    demo._apply_script(1.0)
    assert demo.controller_error.startswith("ValueError")


def test_the_live_check_races_again_only_a_controller_the_machine_held_back(monkeypatch):
    """05's ex4_live on a loaded machine (CI: 6,983 and 8,264 behind against the fixed cap's 5,842 and 7,860): a
    controller that raised its cap and still lost, or kept it because its batches overran the trigger, races again,
    longer and with a bigger burst; one that never raised it on batches that fit gets no second race, and a cap
    never raised never wins."""
    from streamlab.course import scenarios

    asked = []

    def races(*runs):
        played = iter(runs)
        asked.clear()
        monkeypatch.setattr(scenarios, "_race", lambda *a, **k: asked.append(k) or dict(next(played)))
    calm = {"error": None, "busy": "b", "too_busy": False}
    lost = calm | {"lag": 6983, "fixed_lag": 5842, "caps": [(9.8, 2000)], "overran": False}
    won = calm | {"lag": 330, "fixed_lag": 5118, "caps": [(9.8, 2000), (16.4, 800)], "overran": False}
    held = calm | {"lag": 8469, "fixed_lag": 6760, "caps": [], "overran": True}
    never = calm | {"lag": 9000, "fixed_lag": 5000, "caps": [], "overran": False}
    tie = calm | {"lag": 4000, "fixed_lag": 4100, "caps": [], "overran": False}
    races(lost, won)
    assert scenarios.burst_against_fixed_cap(None, None) == won | {"tries": 2, "raised": True, "won": True}
    assert [(k["burst"], k["duration"]) for k in asked] == [(8_000, 20), (16_000, 40)]
    races(lost, lost)
    run = scenarios.burst_against_fixed_cap(None, None)
    assert not run["won"] and run["tries"] == 2 and "2 races on a busy machine" in scenarios.outcome(run)
    races(held, won)
    assert scenarios.burst_against_fixed_cap(None, None)["won"]
    races(never, won)
    run = scenarios.burst_against_fixed_cap(None, None)
    assert run["tries"] == 1 and not run["won"] and "never went above" in scenarios.outcome(run)
    races(tie)
    assert not scenarios.burst_against_fixed_cap(None, None)["won"]  # less lag at one cap is noise
    races(won)
    assert scenarios.burst_against_fixed_cap(None, None)["tries"] == 1


def test_on_a_machine_too_busy_for_a_race_the_controller_is_judged_on_its_answers(monkeypatch):
    """The rehearsal of cbed14a: the fixed cap's own batches took 3.4 s for a 2 s trigger, and the solution lost
    both races (14,843 behind against 13,998). There a race proves nothing: the answers the controller gave about
    the race's real batches decide, at once, with no second race."""
    from streamlab.course import scenarios

    busy = {"lag": 14843, "fixed_lag": 13998, "caps": [(20.1, 2000)], "error": None, "overran": True,
            "busy": "the fixed cap's batches took 3.4 s (median) for a 2 s trigger", "too_busy": True}
    for right in (True, False):
        monkeypatch.setattr(scenarios, "_race", lambda *a, **k: dict(busy, answers_right=right))
        run = scenarios.burst_against_fixed_cap(None, None)
        assert run["won"] is right and run["tries"] == 1 and "too busy for a race" in scenarios.outcome(run)


def test_right_answers_raise_the_cap_on_a_batch_behind_that_fit_its_trigger():
    from streamlab.course.checks import fake_progress
    from streamlab.course.scenarios import _answers_right, _behind

    def event(behind, took):
        made = fake_progress(5, {0: 20_000 + behind}, {0: 20_000}, rows=800)
        made["durationMs"].update(addBatch=took)
        return made

    class Demo:
        def __init__(self, decisions):
            self.decisions = decisions

    def answers_right(decisions):
        return _answers_right(_behind(Demo(decisions), 2000)[0])

    assert answers_right([(event(5000, 1500), 800, 2000)])
    assert not answers_right([(event(5000, 1500), 800, 800)])  # behind, within its trigger: kept
    assert answers_right([(event(5000, 2600), 800, 800)])  # overran: kept, rightly
    assert answers_right([(event(0, 900), 800, 800)])  # never behind: nothing to judge
    assert _behind(Demo([(event(5000, 2600), 800, 800), (event(0, 2600), 800, 800)]), 2000) == ([], [(800, 800)])


def test_a_race_compares_both_lags_at_one_moment():
    """The fixed cap's demo and the controller's keep clocks of their own: the race reads both lags at one moment
    of time.monotonic(), not at each demo's last poll."""
    from streamlab.demo import LiveDemo

    demo = LiveDemo.__new__(LiveDemo)
    demo._t0, demo.samples = 100.0, [{"t": t, "lag": lag} for t, lag in [(1.0, 50), (20.0, 900), (23.0, 1500)]]
    assert demo.lag_when(120.2) == 900 and demo.final_lag() == 1500


def test_only_a_controller_is_raced():
    """ex4_live's race takes half a minute, on the grader for every cheat the audit tries: a constant, a cap that
    never comes back or never goes up, and a controller that raises are told why on made-up batches instead."""
    from streamlab.course.scenarios import not_a_controller
    from streamlab.observe import lag

    def controller(progress, cap):
        behind = lag.total_lag(progress)
        return 800 if behind < 800 else 2000 if behind > cap else cap

    assert not_a_controller(controller) is None
    assert "no next_cap yet" in not_a_controller(None)
    assert "not NORMAL_CAP" in not_a_controller(lambda progress, cap: 2000)
    assert "not a higher cap" in not_a_controller(lambda progress, cap: 800)
    assert "not a higher cap" in not_a_controller(lambda progress, cap: 2001)
    assert "ZeroDivisionError" in not_a_controller(lambda progress, cap: 1 / 0)


def test_the_race_s_outcome_names_both_lags_in_records_and_shows_no_chart(monkeypatch):
    """Tried in the browser: the check cell showed both race demos' boxes above a bare '213 behind (the fixed cap:
    4668)'. Now the race's demos are not displayed, and the line says whose lag is whose, in records."""
    from types import SimpleNamespace

    from streamlab.course import scenarios
    from streamlab.demo.controls import Controls

    run = {"lag": 213, "fixed_lag": 4668, "won": True, "raised": True, "tries": 1}
    assert scenarios.outcome(run) == ("at the race's end your controller was 213 records behind, the fixed cap "
                                      "4,668 records: yours wins")
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: shown.append(a))
    Controls._show(SimpleNamespace(on_screen=False))  # what _race sets on both demos
    assert not shown
