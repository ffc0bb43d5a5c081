"""A knob moved mid-demo takes effect promptly and the readout stays live meanwhile (issue 29, item 7), a slider's
range fits its demo, and the readout wraps between its parts, never inside one — without a broker or Spark.

Module 05's trade-off demo met the worst case: batches longer than the trigger, so the query is never between
batches. A restart waited 10 s for an idle moment that never came, with the readout frozen. The clock here is a
fake one (the loop's `time`), so the test measures the loop's own waiting, not this machine's speed."""
from __future__ import annotations

import re
import time
import types

import pytest

from streamlab.demo import loop
from streamlab.demo.live import LiveDemo
from streamlab.demo.settings import KnobError


class BusyQuery:
    """A StreamingQuery whose batches outlast the trigger: a trigger is always active, so it is never idle."""

    def __init__(self, busy=True):
        self.isActive, self.stopped, self.recentProgress = True, False, []
        self.status = {"isTriggerActive": busy}
        self.lastProgress = None

    def stop(self):
        self.isActive, self.stopped = False, True

    def exception(self):
        return None


@pytest.fixture
def clock(monkeypatch):
    """The loop's clock, advanced only by its own sleeps; records what the readout showed at each sleep."""
    fake = types.SimpleNamespace(now=0.0, shown=[])
    fake.monotonic = lambda: fake.now

    def sleep(seconds):
        fake.now += seconds
        fake.shown.append((round(fake.now, 2), fake.demo._readout.value))

    fake.sleep = sleep
    monkeypatch.setattr(loop, "time", fake)
    return fake


def started(clock, busy=True, batch_ms=2000, **options) -> LiveDemo:
    """A demo 10 s in, its query's last batch `batch_ms` long against a 0.5 s trigger (2,000: it outlasts it)."""
    d = LiveDemo(None, "t", rate=300, max_offsets=4000, cost_ms=0.5, trigger_seconds=0.5,
                 controls=("cap", "trigger"), **options)
    d._t0, d._wall0 = time.monotonic() - 10, time.time() - 10
    d._settings["partitions"] = 3
    d.timeline.append((0.0, d.settings))
    d._make_widgets()
    d.history.append({"batch": 0, "run": 0, "duration_ms": batch_ms, "rows": 4000})
    d._query = BusyQuery(busy)
    d.started = []
    d.loop._start_query = lambda: d.started.append(BusyQuery(busy)) or d.started[-1]
    clock.demo = d
    return d


def text(html: str) -> str:
    """What the browser's textContent of the readout is."""
    return re.sub(r"<[^>]+>", "", html).replace("&amp;", "&")


def test_a_trigger_typed_while_batches_outlast_the_trigger_is_applied_within_the_bounded_wait(clock):
    demo = started(clock)
    old, shows = demo._query, []
    show = demo._show_readout
    demo._show_readout = lambda now, ended=None: shows.append(clock.now) or show(now, ended)
    demo._sliders["trigger"].value = 4000  # typed into the slider, as a learner does
    assert demo.settings["trigger_seconds"] == 0.5, "in force only once the query restarts"
    demo.loop._restart()
    assert old.stopped, "the busy query was stopped without an idle moment"
    assert demo.started and demo.settings["trigger_seconds"] == 4.0
    assert demo.restarts[-1][1] == "restart: trigger 4 s"
    assert loop.RESTART_IDLE_WAIT_S <= clock.now <= loop.RESTART_IDLE_WAIT_S + 0.05, \
        f"the restart waited {clock.now:.2f} s of the loop's clock for an idle moment, not at most " \
        f"{loop.RESTART_IDLE_WAIT_S} s"
    # the readout went on while it waited, and said what is coming
    assert len(shows) >= 4 and max(b - a for a, b in zip(shows, shows[1:])) <= 0.3, \
        f"the readout was refreshed at {shows} s while the restart waited, not every 0.25 s"
    refreshed = [at for at, html in clock.shown if "restarting with trigger 4 s" in text(html)]
    assert refreshed and refreshed[0] <= 0.3, "the readout named the restart under way at once"
    demo._show_readout(0.0)
    assert "restarting" not in text(demo._readout.value), "once restarted, the readout shows the trigger in force"
    assert "trigger 4 s" in text(demo._readout.value)


def test_between_batches_at_once_within_the_trigger_let_finish_and_a_script_s_move_or_the_end_waits_longer(clock):
    demo = started(clock, busy=False)
    demo._sliders["cap"].value = 800
    demo.loop._restart()
    assert clock.now == 0 and demo.settings["cap"] == 800
    # batches that fit in the trigger (module 05's rate controller): the restart lets the running one finish
    fits = started(clock, batch_ms=300)
    clock.now = 0.0
    query = fits._query
    ends_at = 2.5  # the batch ends 2.5 s into the wait: then, between batches, the query stops

    def sleep(seconds):
        clock.now += seconds
        query.status["isTriggerActive"] = clock.now < ends_at

    clock.sleep = sleep
    fits._sliders["cap"].value = 800
    fits.loop._restart()
    assert ends_at <= clock.now <= ends_at + 0.05 and query.stopped, \
        f"a batch within the trigger was cut at {clock.now:.2f} s instead of let finish at {ends_at} s"
    # the same move by a script or a controller (module 05's Exercise 4): the query works on, up to the long wait
    scripted = started(clock)
    clock.now, clock.sleep = 0.0, lambda seconds: setattr(clock, "now", clock.now + seconds)
    scripted._auto = True
    scripted.set("cap", 2000)
    scripted._auto = False
    scripted.loop._restart()
    assert clock.now >= loop.STOP_IDLE_WAIT_S - 0.05 and scripted.settings["cap"] == 2000
    busy = started(clock)
    clock.now, clock.sleep = 0.0, lambda seconds: setattr(clock, "now", clock.now + seconds)
    busy.loop._stop_query()  # the demo's end: its last batch may write a sink, so it gets the longer wait
    assert clock.now >= loop.STOP_IDLE_WAIT_S - 0.05 and busy._query.stopped


def test_a_slider_s_range_fits_its_demo_and_a_bad_range_is_named():
    demo = LiveDemo(None, "t", max_offsets=300, controls=("cap",), ranges={"cap": (0, 2000, 50)})
    demo._settings["partitions"] = 3
    demo._make_widgets()
    cap = demo._sliders["cap"]
    assert (cap.min, cap.max, cap.step, cap.value) == (0, 2000, 50, 300)
    with pytest.raises(KnobError, match="outside its slider's range"):
        LiveDemo(None, "t", max_offsets=8000, controls=("cap",), ranges={"cap": (0, 2000, 50)})
    with pytest.raises(KnobError, match="not one of this demo's sliders"):
        LiveDemo(None, "t", controls=("cap",), ranges={"trigger": (0, 5000, 250)})
    with pytest.raises(KnobError, match="lo < hi"):
        LiveDemo(None, "t", controls=("cap",), ranges={"cap": (2000, 0, 50)})


def test_the_readout_wraps_between_its_parts_and_reads_as_the_one_line(clock):
    demo = started(clock)
    html = demo.readout_html(12.0)
    line = demo.readout(12.0)
    assert text(html) == line, "the browser reads the same line as before"
    parts = re.findall(r'<span style="white-space:nowrap">([^<]*)</span>', html)
    assert parts == line.split(" · ") and "white-space:normal" in html
    assert text(demo.readout_html(12.0, ended=True)).endswith(" · ended")
