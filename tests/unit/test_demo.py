"""streamlab.demo.live.LiveDemo without a broker or Spark: restart markers, history across restarts, the values in force,
controls disabled after the end, and the chart rendered headless."""
from __future__ import annotations

import json
import time

import pytest

from streamlab.demo.live import COLUMNS, LiveDemo, compare, figure
from streamlab.course.checks import fake_progress


class FakeQuery:
    """What the demo touches of a StreamingQuery."""

    def __init__(self, events=()):
        self.recentProgress, self.isActive, self.status, self.stopped = list(events), True, {}, False

    @property
    def lastProgress(self):
        return self.recentProgress[-1] if self.recentProgress else None

    def stop(self):
        self.isActive, self.stopped = False, True

    def exception(self):
        return None


def event(batch, end, latest, rows=100, ms=400):
    e = fake_progress(batch, latest, end, topic="t", rows=rows)
    e.update(inputRowsPerSecond=rows * 1.0, processedRowsPerSecond=rows / ms * 1000)
    e["durationMs"]["triggerExecution"] = ms
    return e


def _started(d: LiveDemo, monkeypatch, partitions: int) -> LiveDemo:
    """`d` as if start() had run 10 s ago: a clock, widgets, a fake query; starting a query makes another fake one."""
    d._t0, d._wall0 = time.monotonic() - 10, time.time() - 10
    d._settings["partitions"] = partitions
    d.timeline.append((0.0, d.settings))
    d._make_widgets()
    d._query = FakeQuery()
    made = []
    monkeypatch.setattr(d.loop, "_start_query", lambda: made.append(FakeQuery()) or made[-1])
    d.started_queries = made
    return d


@pytest.fixture
def demo(monkeypatch):
    """A LiveDemo that has 'started': a clock, widgets, a fake query; starting a query makes another fake one."""
    d = LiveDemo(None, "t", rate=300, max_offsets=500, trigger_seconds=1, controls=("rate", "cap", "trigger", "burst"),
                 title="test")
    return _started(d, monkeypatch, partitions=2)


def test_a_cap_move_restarts_on_the_same_checkpoint_with_a_marker_and_keeps_history(demo):
    checkpoint = demo.checkpoint
    demo.add_event(event(0, {0: 100, 1: 100}, {0: 300, 1: 300}), 1.0, latest={0: 300, 1: 300})
    demo.add_event(event(1, {0: 350, 1: 350}, {0: 600, 1: 600}, rows=500), 2.0, latest={0: 600, 1: 600})
    demo._sliders["cap"].value = 2000  # as the browser would
    assert demo.settings["cap"] == 500, "the cap in force changes only when the query restarts"
    demo.loop._restart()
    assert demo.started_queries and demo.checkpoint == checkpoint
    assert demo.settings["cap"] == 2000 and demo.values["cap"] == 2000 and demo.max_offsets == 2000
    assert len(demo.restarts) == 1 and "cap 2,000" in demo.restarts[0][1]
    demo.add_event(event(2, {0: 600, 1: 600}, {0: 600, 1: 600}, rows=500), 3.0, latest={0: 600, 1: 600})
    frame = demo.batches
    assert list(frame.columns) == list(COLUMNS)
    assert frame.batch.tolist() == [0, 1, 2], "the batches before the restart are kept"
    assert frame.restart.tolist() == [False, False, True]
    assert frame.run.tolist() == [0, 0, 1]
    assert frame.cap.tolist() == [500, 500, 2000]
    assert frame.lag.tolist() == [400, 500, 0]
    assert [s["cap"] for _, s in demo.timeline] == [500, 2000]


def test_a_trigger_move_and_the_rate_are_values_in_force(demo):
    demo._sliders["trigger"].value = 2500
    demo._sliders["rate"].value = 900
    assert demo.settings["rate"] == 900, "the producer rate changes at once"
    assert demo.settings["trigger_seconds"] == 1.0
    demo.loop._restart()
    assert demo.settings["trigger_seconds"] == 2.5 and "trigger 2.5 s" in demo.restarts[0][1]


def test_after_the_end_controls_are_disabled_and_nothing_acts(demo):
    query = demo._query
    demo.loop._finish()
    assert demo.ended and query.stopped
    assert all(w.disabled for w in [*demo._sliders.values(), *demo._buttons])
    demo.set("cap", 42)
    demo.burst(10)
    assert demo._pending_restart == [] and demo.settings["cap"] == 500 and not demo.marks
    assert "ended" in demo._readout.value
    demo.stop()  # twice is fine


def test_the_script_moves_controls_and_a_person_cancels_it_when_asked(demo):
    demo.script_until_touched = True
    demo._pending_script = [(1, "rate", 50), (2, "cap", 100)]
    demo.add_event(event(0, {0: 100}, {0: 100}), 1.0, latest={0: 100})  # the first batch with data
    demo._apply_script(demo.live_from + 1.5)
    assert demo.settings["rate"] == 50 and not demo._touched, "a script move is not a person's"
    demo._sliders["rate"].value = 700  # a person
    assert demo._pending_script == [] and demo._touched


def test_stop_when_caught_up_follows_the_cap_in_force(demo):
    demo.stop_when_caught_up = "cap"
    demo.add_event(event(0, {0: 100}, {0: 100}), 1.0, latest={0: 100})
    demo.applied.append((1.0, (1, 50)))
    assert demo.loop._over(5.0, 400) and not demo.loop._over(5.0, 900)


def test_the_chart_renders_headless_with_every_panel(demo):
    demo.add_event(event(0, {0: 100, 1: 100}, {0: 300, 1: 300}), 1.0, latest={0: 300, 1: 300})
    demo.samples += [{"t": 1.0, "lag": 400, "partitions": {0: 200, 1: 200}}]
    demo.set("cap", 800)
    demo.loop._restart()
    fig = demo.figure()
    assert len(fig.axes) == 4
    restart_lines = [line for ax in fig.axes for line in ax.get_lines() if line.get_linestyle() == "--"
                     and len(set(line.get_xdata())) == 1]
    assert len(restart_lines) >= 4, "one restart marker on each panel"
    assert demo.png()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "maxOffsetsPerTrigger 800" in fig._suptitle.get_text(), "the title says the cap in force"
    assert len(figure({"a": demo, "b": demo}, charts=("rows", "lag", "tasks")).axes) == 3
    assert compare({"a": demo}).data[:4] == b"\x89PNG"


def test_the_readout_is_one_line_the_browser_test_reads(demo):
    demo.add_event(event(0, {0: 100}, {0: 300}), 1.0, latest={0: 300})
    demo.samples.append({"t": 1.0, "lag": 200, "partitions": {0: 200}})
    line = demo.readout(1.0)
    assert "\n" not in line and "producer 300 rec/s" in line and "batches 1" in line and "lag 200" in line


def test_plus_30_s_extends_a_running_demo_only(demo):
    demo.duration = 60
    demo.add_event(event(0, {0: 100}, {0: 100}), 2.0, latest={0: 100})
    assert demo.time_left(32.0) == 30 and not demo.loop._over(32.0, 0)
    assert demo.loop._over(62.0, 0)
    demo.extend(30)
    assert demo.time_left(62.0) == 30 and not demo.loop._over(62.0, 0)
    demo.loop._finish()
    demo.extend(30)
    assert demo.time_left(62.0) == 30, "an ended demo is not extended"


# -- the extension points that modules 6 and 7 configure -------------------------------------------------------------

@pytest.fixture
def extended(monkeypatch):
    """A started LiveDemo with a second source, two knobs of its own, a panel and restarts on an injected failure."""
    from streamlab.demo.live import Knob, Panel, Source

    moved, drawn = [], []
    d = LiveDemo(None, "a", rate=100, controls=("rate",), sources={"b": Source(50, label="bees")}, label="ays",
                 knobs=[Knob("share", "share (%)", 10, 0, 50, 5, apply=moved.append),
                        Knob("point", "point", "x", options=("x", "y"), apply=moved.append, restart=True)],
                 panels={"own": Panel("my panel", "things", lambda ax, demo, shift: drawn.append(shift))},
                 restart_on=("on purpose",), status=lambda demo: "all fine")
    d.moved, d.drawn = moved, drawn
    return _started(d, monkeypatch, partitions=1)


def test_each_source_has_its_rate_slider_and_knobs_of_its_own_apply_at_once(extended):
    d = extended
    assert d.topics == ["a", "b"] and {"rate", "rate:b", "share", "point"} <= set(d._sliders)
    d._sliders["rate:b"].value = 400
    assert d.sources["b"].rate == 400
    d._sliders["share"].value = 30
    assert d.moved == [30] and d.knob_values["share"] == 30 and not d._pending_restart
    d._sliders["point"].value = "y"
    assert d.moved == [30, "y"] and d._pending_restart == ["point"]
    d.loop._restart()
    assert d.started_queries and "point y" in d.restarts[-1][1]
    with pytest.raises(ValueError):
        d.set("nothing", 1)


def test_the_script_moves_a_knob_of_its_own(extended):
    d = extended
    d._pending_script = [(1, "share", 40)]
    d.add_event(fake_progress(0, {0: 10}, {0: 10}, topic="a"), 1.0, latest={"ays:0": 10, "bees:0": 0})
    d._apply_script(d.live_from + 2)
    assert d.moved == [40] and d._sliders["share"].value == 40 and not d._touched
    assert any("share 40" in text for _, text in d.marks)


def test_several_topics_are_positioned_and_lagged_per_topic_and_partition(extended):
    d = extended
    event = fake_progress(0, {0: 10}, {0: 10}, topic="a")
    event["sources"][0]["endOffset"]["b"] = {"0": 4}
    row = d.add_event(event, 1.0, latest={"ays:0": 10, "bees:0": 9})
    assert d.loop._position == {"ays:0": 10, "bees:0": 4} and row["lag"] == 5
    d.samples.append({"t": 1.0, "lag": 5, "partitions": {"ays:0": 0, "bees:0": 5}})
    line = d.readout(1.0)
    assert "bees:0 5" in line and "producer 150 rec/s" in line and "all fine" in line


def test_an_injected_failure_restarts_on_the_same_checkpoint_with_a_marker(extended):
    d = extended
    failed = d._query
    assert d.loop._restart_after(failed, RuntimeError("Job aborted\nInjected: on purpose: after write, batch 3\n"))
    assert d._query is d.started_queries[-1] and d.loop._run == 1
    assert d.restarts[-1][1] == "crash: after write"
    assert not d.loop._restart_after(d._query, RuntimeError("a real bug")), "other failures end the demo"


def test_a_panel_of_its_own_is_drawn_under_spark_uis_on_the_same_axis(extended):
    d = extended
    d.add_event(fake_progress(0, {0: 10}, {0: 10}, topic="a"), 1.0, latest={"ays:0": 10, "bees:0": 0})
    fig = d.figure()
    assert len(fig.axes) == len(d.charts) + 1 and d.drawn == [0.0]
    assert fig.axes[-1].get_title(loc="left") == "my panel"


def test_a_panel_also_named_in_charts_is_drawn_once(extended):
    """Module 10's small-files demo names its panel in `charts` to place it: it drew an empty axis above it."""
    d = extended
    d.charts = ("rows", "own")
    d.add_event(fake_progress(0, {0: 10}, {0: 10}, topic="a"), 1.0, latest={"ays:0": 10, "bees:0": 0})
    fig = d.figure()
    assert [ax.get_title(loc="left") for ax in fig.axes][1:] == ["my panel"] and len(fig.axes) == 2, \
        [ax.get_title(loc="left") for ax in fig.axes]


# -- issue 17.6 and 16.1: knobs refused by name, a script that yields, sliders that never show a value not used ----

def test_a_bad_cap_rate_or_trigger_is_refused_at_once_naming_the_knob():
    from streamlab.demo import KnobError

    with pytest.raises(KnobError, match="maxOffsetsPerTrigger") as refused:
        LiveDemo(None, "t", max_offsets=-5)
    assert "\n" not in str(refused.value) and "-5" in str(refused.value)
    for kwargs, knob in (({"rate": -1}, "producer rate"), ({"trigger_seconds": "soon"}, "trigger interval"),
                         ({"min_partitions": 2.5}, "minPartitions"), ({"cost_ms": -1}, "cost per record"),
                         ({"script": [(1, "cap", "lots")]}, "maxOffsetsPerTrigger"),
                         ({"controls": ("speed",)}, "unknown control")):
        with pytest.raises(KnobError, match=knob):
            LiveDemo(None, "t", **kwargs)
    assert LiveDemo(None, "t", max_offsets=0).settings["cap"] is None, "0 means no cap, as the slider says"


def test_each_option_goes_to_the_part_it_configures_and_a_typo_is_named_with_the_nearest_option():
    """Issue 15.5: LiveDemo's options are split by what they configure (the query's knobs, what may move, what runs,
    what it draws), each checked by its part before anything starts; help() still lists every option."""
    import inspect

    from streamlab.demo import KnobError
    from streamlab.demo.live import ChartPlan, ControlPlan, RunPlan, StreamSettings, plans

    stream, control, run, chart = plans({"max_offsets": 300, "controls": ("cap",), "burst": 700, "duration": 9,
                                         "starting_offsets": "earliest", "charts": ("rows",), "title": "t"})
    assert (type(stream), type(control), type(run), type(chart)) == (StreamSettings, ControlPlan, RunPlan, ChartPlan)
    assert (stream.cap, control.controls, control.burst, run.duration, run.starting_offsets, chart.charts) == (
        300, ("cap",), 700, 9, "earliest", ("rows",))
    with pytest.raises(KnobError, match="no option 'max_offset': did you mean 'max_offsets'"):
        LiveDemo(None, "t", max_offset=300)
    with pytest.raises(KnobError, match="either as settings=StreamSettings"):
        LiveDemo(None, "t", settings=StreamSettings(rate=10), rate=20)
    for kwargs, refused in (({"script_in": "minutes"}, "script_in"), ({"charts": ("latency",)}, "unknown chart"),
                            ({"lag_lines": "each"}, "lag_lines"), ({"starting_offsets": "2024"}, "startingOffsets"),
                            ({"stop_when_caught_up": -3}, "stop_when_caught_up"), ({"duration": -1}, "duration")):
        with pytest.raises(KnobError, match=refused):
            LiveDemo(None, "t", **kwargs)
    demo = LiveDemo(None, "t", settings=StreamSettings(rate=10, cap=50), charts=("rows", "mine"),
                    panels={"mine": object()}, duration=5)
    assert (demo.rate, demo.max_offsets, demo.duration, demo.charts) == (10, 50, 5, ("rows", "mine"))
    shown = inspect.signature(LiveDemo)
    for option in ("rate", "max_offsets", "controls", "script", "duration", "sources", "charts", "show_offsets"):
        assert shown.parameters[option].kind is inspect.Parameter.KEYWORD_ONLY, option
    assert shown.parameters["max_offsets"].default is None and shown.parameters["duration"].default == 60.0


def test_set_refuses_a_bad_value_in_one_line_and_the_demo_runs_on(demo):
    from streamlab.demo import KnobError

    with pytest.raises(KnobError, match="maxOffsetsPerTrigger") as refused:
        demo.set("cap", "abc")
    assert "\n" not in str(refused.value)
    with pytest.raises(KnobError, match="producer rate"):
        demo.set("rate", -3)
    assert demo._pending_restart == [] and demo.settings["cap"] == 500 and not demo.ended
    demo.set("cap", "800")  # a number written as text is a number
    assert demo._wanted == {"cap": 800}


def test_a_person_s_move_cancels_the_script_s_moves_of_that_knob_only(demo):
    demo._pending_script = [(5, "rate", 50), (6, "cap", 100), (7, "rate", 900)]
    demo._sliders["rate"].value = 1200  # a person
    assert demo._pending_script == [(6, "cap", 100)], "the script yields the rate to the person"
    demo.add_event(event(0, {0: 100}, {0: 100}), 1.0, latest={0: 100})
    demo._apply_script(demo.live_from + 10)
    assert demo.settings["rate"] == 1200 and demo._wanted == {"cap": 100}


def test_after_the_end_every_slider_shows_the_value_in_force(demo):
    demo._sliders["cap"].value = 3000  # moved, but the demo ends before the restart applies it
    demo.loop._finish()
    assert demo._sliders["cap"].value == 500 and demo._sliders["cap"].disabled
    demo._sliders["rate"].value = 4000  # a message that arrives after the end
    assert demo._sliders["rate"].value == 300 and demo.settings["rate"] == 300


def test_the_readout_names_every_knob_in_force(extended):
    d = extended
    d.charts = (*d.charts, "tasks")
    line = d.readout(1.0)
    assert "no cap" in line and "trigger 1 s" in line and "partitions 1" in line
    assert "share 10" in line and "point x" in line
    d._sliders["share"].value = 20
    assert "share 20" in d.readout(1.0)


def test_start_returns_nothing_to_print_under_the_chart():
    assert LiveDemo.start.__annotations__.get("return") in (None, "None")


def test_controls_act_while_another_cell_runs_in_a_real_kernel():
    """The kernel runs a cell that blocks for 6 s (as wait() does); a slider move sent meanwhile, as JupyterLab
    sends it, is applied during that cell (ipykernel's subshells, `controls.answer_while_busy`)."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", extra_arguments=["--IPKernelApp.log_level=ERROR"])
    try:
        def run(code):
            reply = kc.execute_interactive(code, timeout=60, output_hook=lambda m: out.append(m))
            assert reply["content"]["status"] == "ok", reply["content"]

        out: list = []
        run("from streamlab.demo import LiveDemo\nimport time\n"
            "d = LiveDemo(None, 't', rate=300, controls=('rate',))\n"
            "d._t0 = time.monotonic(); d._make_widgets()\nprint(d.live_controls, d._sliders['rate'].comm.comm_id)")
        text = "".join(m["content"].get("text", "") for m in out if m["msg_type"] == "stream").split()
        assert text[0] == "True", f"no subshell for the controls: {text}"
        busy = kc.execute("t0 = time.monotonic()\nwhile time.monotonic() - t0 < 6: time.sleep(0.05)\n"
                          "print('during', d.settings['rate'])")
        time.sleep(1.5)
        kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": text[1], "data": {
            "method": "update", "state": {"value": 1750}, "buffer_paths": []}}))
        seen = []
        while not any(m["msg_type"] == "status" and m["content"]["execution_state"] == "idle" for m in seen
                      if m["parent_header"].get("msg_id") == busy):
            seen.append(kc.get_iopub_msg(timeout=30))
        printed = "".join(m["content"].get("text", "") for m in seen if m["msg_type"] == "stream"
                          and m["parent_header"].get("msg_id") == busy)
        assert "during 1750" in printed, f"the move waited for the cell to end: {printed!r}"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_the_readout_shows_the_ranges_the_last_offsets_file_planned(demo, tmp_path):
    """Module 2's demo: the readout reads `offsets/N` (and N-1 for the start) from the demo's checkpoint."""
    demo.show_offsets, demo.checkpoint = True, str(tmp_path)
    assert "no batch planned yet" in demo.readout(1.0)
    (tmp_path / "offsets").mkdir()
    for n, ends in ((0, {"0": 100, "1": 90}), (1, {"0": 200, "1": 190})):
        (tmp_path / "offsets" / str(n)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{{"t":{json.dumps(ends)}}}\n')
    assert "offsets/1: p0 100→200 (100) p1 90→190 (100)" in demo.readout(1.0)


def test_interrupting_wait_stops_the_demo_with_one_line(demo, monkeypatch):
    """■ during wait(): a LabError of one line (shown without a traceback), and the demo is asked to stop."""
    from streamlab.errors import LabError

    class Stuck:
        def is_alive(self):
            return True

        def join(self, timeout=None):
            if not demo._done.is_set():
                raise KeyboardInterrupt

    demo.loop.thread = Stuck()
    with pytest.raises(LabError, match="interrupted and stopped") as stopped:
        demo.wait()
    assert "\n" not in str(stopped.value) and demo._done.is_set() and "■" in demo.alert_text


def test_a_lost_broker_ends_the_demo_with_one_line_in_its_alert_and_wait_raises_it(demo, monkeypatch):
    import streamlab.lab.broker as broker
    from streamlab.errors import LabError

    monkeypatch.setattr(broker, "probe", lambda bootstrap, timeout=2.0: "closed")
    demo.bootstrap = "127.0.0.1:1"
    demo._query.isActive = False  # the lab's BrokerWatch stopped the query
    demo.loop._collect = lambda query: None
    demo.loop._poll()  # returns at once: the query is gone and the broker does not answer
    assert demo.lost and "stopped answering" in demo.alert_text and "broker start" in demo.alert_text
    demo.loop._finish()
    with pytest.raises(LabError, match="stopped answering") as raised:
        demo.wait()
    assert "\n" not in str(raised.value)


def test_the_floor_and_its_delay_are_knobs_that_restart_the_query_and_a_floor_over_the_cap_is_refused(monkeypatch):
    from streamlab.demo import KnobError
    from streamlab.demo.settings import StreamSettings

    d = _started(LiveDemo(None, "t", settings=StreamSettings(rate=100, cap=1_000, min_offsets=500,
                                                             max_delay_seconds=3),
                          controls=("rate", "min_offsets", "max_delay")), monkeypatch, partitions=3)
    assert "minOffsetsPerTrigger 500 · maxTriggerDelay 3 s" in d.readout(1.0)
    d._sliders["max_delay"].value = 6_000  # the browser's milliseconds
    d._sliders["min_offsets"].value = 800
    assert d._wanted == {"max_delay_seconds": 6.0, "min_offsets": 800}
    d.loop._restart()
    assert d.settings["min_offsets"] == 800 and d.settings["max_delay_seconds"] == 6.0 and d.started_queries
    with pytest.raises(KnobError, match="above maxOffsetsPerTrigger 1,000"):
        d.set("min_offsets", 1_200)  # Spark would refuse it at load(): refused before the restart
    with pytest.raises(KnobError, match="minOffsetsPerTrigger"):
        StreamSettings(cap=100, min_offsets=500)
    with pytest.raises(KnobError, match="maxTriggerDelay"):
        StreamSettings(max_delay_seconds=-1)


def test_where_nobody_plays_a_demo_s_duration_is_capped_and_a_bad_cap_is_named(monkeypatch):
    """Under the grader a demo runs GRADING_SECONDS after its script; $STREAMLAB_DEMO_SECONDS caps a test's Run All."""
    from streamlab.demo import live
    from streamlab.demo.settings import KnobError

    monkeypatch.delenv("STREAMLAB_GRADING", raising=False)
    monkeypatch.delenv(live.DEMO_SECONDS_ENV, raising=False)
    assert live.duration_cap() is None
    monkeypatch.setenv("STREAMLAB_GRADING", "1")
    assert live.duration_cap() == live.GRADING_SECONDS
    monkeypatch.setenv(live.DEMO_SECONDS_ENV, "15")
    assert live.duration_cap() == 15
    monkeypatch.setenv(live.DEMO_SECONDS_ENV, "soon")
    with pytest.raises(KnobError, match="STREAMLAB_DEMO_SECONDS='soon' is not a number of seconds"):
        live.duration_cap()


def test_where_nobody_watches_the_chart_waits_for_the_demo_s_end(monkeypatch):
    """A learner's lab redraws the chart as batches come; a graded run or a capped test run (nobody sees it) does not."""
    from streamlab.demo import loop

    monkeypatch.delenv("STREAMLAB_GRADING", raising=False)
    monkeypatch.delenv(loop.DEMO_SECONDS_ENV, raising=False)
    assert not loop.nobody_watches()
    monkeypatch.setenv(loop.DEMO_SECONDS_ENV, "15")
    assert loop.nobody_watches()
    monkeypatch.delenv(loop.DEMO_SECONDS_ENV)
    monkeypatch.setenv("STREAMLAB_GRADING", "1")
    assert loop.nobody_watches()


def test_the_poller_collects_every_batch_that_ended_between_two_looks(demo):
    """lastProgress is read first (one JVM call); when more than one batch ended since, all of them are added."""
    def at(batch):
        return event(batch, {0: 100 * batch, 1: 100 * batch}, {0: 100 * batch, 1: 100 * batch})

    demo.loop._latest = lambda: {}
    query = FakeQuery([at(0)])
    demo.loop._collect(query)
    query.recentProgress += [at(1), at(2), at(3)]
    demo.loop._collect(query)
    demo.loop._collect(query)  # nothing new: nothing added twice
    assert [e["batchId"] for e in demo.events] == [0, 1, 2, 3]


def test_the_chart_backs_off_when_drawing_is_slow(demo, monkeypatch):
    """A redraw that took long (a busy machine) spaces the next ones out: drawing never takes more than DRAW_SHARE
    of the demo's time; a quick one keeps the once-a-second chart."""
    from streamlab.demo import loop

    assert loop.redraw_interval(0.1) == loop.REDRAW_EVERY_S
    assert loop.redraw_interval(0.6) == pytest.approx(0.6 / loop.DRAW_SHARE)
    assert loop.redraw_interval(5.0) == loop.REDRAW_AT_MOST_S, "a slow first draw (matplotlib's import) is no rule"
    monkeypatch.delenv("STREAMLAB_GRADING", raising=False)
    monkeypatch.setattr(demo, "png", lambda: time.sleep(0.5) or b"png")
    monkeypatch.setattr(demo.loop, "_collect", lambda query: None)
    monkeypatch.setattr(demo.loop, "_sample", lambda now: 0)
    monkeypatch.setattr(demo.loop, "_over", lambda now, lag: True)  # one pass of the loop
    demo.loop._poll()
    assert demo._image.value == b"png"
    assert demo.loop._draw_every >= min(0.5 / loop.DRAW_SHARE, loop.REDRAW_AT_MOST_S), "a slow draw did not space out"
