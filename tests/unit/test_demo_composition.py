"""The live demo's parts share one DemoState: the controls work on a state without a loop, the loop without widgets,
and neither reads the other's data except through the state and a few named methods (issue 34, review §8). Both are
objects the demo holds (`demo.loop`, `demo.controls`), not base classes: the loop runs one look at a time as a list
of named steps and asks the held controls to play a script step and to show what it saw. Module 9's FailoverDemo
plays its script with the same player and shows and freezes its box with the same helpers."""
from __future__ import annotations

import ast
import pathlib
import threading
import time
from types import SimpleNamespace

from streamlab.course.checks import fake_progress
from streamlab.delivery.failover import FailoverDemo
from streamlab.demo import widgets
from streamlab.demo.controls import ControlPlan, Controls
from streamlab.demo.live import LiveDemo
from streamlab.demo.loop import LiveLoop, RunPlan, play_due
from streamlab.demo.settings import StreamSettings
from streamlab.demo.state import DemoState, state_of

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEMO = ROOT / "streamlab" / "demo"


class BareDemo:
    """What the controls ask of their demo, on a bare state: no loop, no producer, no query, no widgets."""

    topic, sources, label, bootstrap = "t", {}, "t", None
    state = property(state_of)

    def now(self) -> float:
        return round(time.monotonic() - self.state.t0, 2)

    @property
    def settings(self) -> dict:
        return self.state.stream.as_dict()


class ViewOnly:
    """What a loop asks of its demo, on a bare state: its controls are a recorder (no sliders, no readout) of the
    steps the loop asks them to play."""

    topic, charts, spark = "t", (), None
    state = property(state_of)

    def __init__(self):
        self.played: list = []
        self.controls = SimpleNamespace(names=(), knobs={}, knob_values={}, script_in="seconds",
                                        _play=lambda step, now: self.played.append((now, step)))

    def now(self) -> float:
        return 0.0

    def _apply_script(self, now: float) -> None:
        self.loop._apply_script(now)


def loop_only(plan: RunPlan) -> LiveLoop:
    """A loop held by a ViewOnly demo."""
    view = ViewOnly()
    view.loop = LiveLoop(view, plan)
    return view.loop


def test_the_demos_old_names_read_and_write_its_one_state():
    d = LiveDemo(None, "t", rate=300, max_offsets=500, controls=("rate", "cap"))
    assert isinstance(d.state, DemoState) and d._settings is d.state.stream and d.timeline is d.state.timeline
    d._t0, d._wall0 = 5.0, 6.0
    assert (d.state.t0, d.state.wall0) == (5.0, 6.0)
    d.marks.append((1.0, "burst"))
    assert d.state.marks == [(1.0, "burst")]
    other = LiveDemo(None, "u")
    assert other.marks == [] and other.state.lock is not d.state.lock, "two demos share no state"
    bare = LiveDemo.__new__(LiveDemo)  # a test's demo made without __init__ gets a state of its own
    bare._t0, bare.samples = 100.0, [{"t": 20.0, "lag": 900, "partitions": {}}]
    assert bare.lag_when(120.2) == 900 and bare.state.t0 == 100.0


def test_the_controls_work_on_a_state_without_a_loop():
    """A person's moves and the script's go into the state: the rate at once (with a mark), a restarting knob
    queued for the loop, and the script yields the knob a person touched."""
    demo = BareDemo()
    demo.state.stream = StreamSettings(rate=100, cap=500)
    c = Controls(demo, ControlPlan(controls=("rate", "cap"), script=((2, "cap", 700), (3, 200))))
    c._check_script()
    c.state.t0 = time.monotonic() - 5
    c.set("cap", 900)
    assert c.state is demo.state and c.names == ("rate", "cap")
    assert c.state.wanted == {"cap": 900} and c.state.pending_restart == ["cap"] and c.state.wake.is_set()
    assert c.state.stream["cap"] == 500, "the cap in force changes only when the loop restarts the query"
    assert c.state.touched and c.state.pending_script == [(3, 200)], "the script yields the knob a person moved"
    c._play((3, 200), now=5.0)  # the script's step: no slider here, so through set(), not taken for a person's
    assert c.state.stream["rate"] == 200 and c.state.marks[-1] == (5.0, "200/s") and not c.state.auto
    assert c.state.timeline and c.state.timeline[-1][1]["rate"] == 200


def test_the_loop_runs_on_a_state_without_widgets():
    """Batches become rows, the script's clock starts at the first batch with data, a step is handed to the view
    through _play, and the demo's time runs out, with no widget made."""
    loop = loop_only(RunPlan(duration=5))
    loop.state.stream = StreamSettings(rate=100, cap=500, partitions=1)
    loop.state.pending_script = [(1, 300)]
    row = loop.add_event(fake_progress(0, {0: 400}, {0: 300}, topic="t", rows=300), 2.0, latest={0: 400})
    assert row["rows"] == 300 and row["cap"] == 500 and row["lag"] == 100
    assert loop.state.history == [row] and loop.state.live_from == 2.0
    loop._apply_script(3.5)
    assert loop.demo.played == [(3.5, (1, 300))] and loop.state.applied == [(3.5, (1, 300))], "played by the controls"
    assert loop.time_left(4.0) == 3.0 and not loop._over(4.0, lag=100) and loop._over(7.5, lag=100)


def _reads(cls_name: str, path: pathlib.Path) -> tuple[set, dict]:
    """(names a class defines: its methods and what it assigns to self; {"self.demo": names it reads from its demo,
    "self.demo.controls": names it reads from its demo's controls})."""
    tree = ast.parse(path.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name)
    defined, read = set(), {"self.demo": set(), "self.demo.controls": set()}
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef):
            defined.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            if isinstance(node.ctx, ast.Store):
                defined.add(node.attr)
        elif isinstance(node, ast.Attribute) and ast.unparse(node.value) in read:
            read[ast.unparse(node.value)].add(node.attr)
    return defined, read


def test_the_loop_and_the_controls_share_data_only_through_the_state():
    """What one part reads of the other is a short list of methods and of its configuration (review §1.3 B counted
    14 and 12 attributes, the queue, the lock, the timeline among them); neither assigns the other's attributes, and
    the loop asks the controls it plays and shows through for nothing they do not define."""
    loop_defines, loop_reads = _reads("LiveLoop", DEMO / "loop.py")
    controls_define, controls_reads = _reads("Controls", DEMO / "controls.py")
    assert loop_reads["self.demo.controls"] == {
        "_play", "_show_readout", "_show_picture", "_show_last", "show_ended", "warn",  # the view
        "names", "knobs", "knob_values", "script_in"}  # what may move
    assert loop_reads["self.demo.controls"] <= controls_define
    assert loop_reads["self.demo"] - {"controls"} <= {  # and the rest of what it asks its demo
        "spark", "topic", "charts", "now", "settings", "png", "state", "_apply_script", "_drain"}, loop_reads
    assert not loop_reads["self.demo"] & (controls_define - {"state"}), "the loop reaches the controls by name"
    assert controls_reads["self.demo"] <= {  # what the controls ask their demo
        "topic", "sources", "label", "bootstrap", "now", "settings", "state", "png", "readout_html", "stop_soon",
        "_new_producer"}, controls_reads
    assert not controls_reads["self.demo.controls"]
    shared = {"demo", "state", "__init__"}
    assert not (loop_defines - shared) & (controls_define - shared)


def test_the_demo_holds_its_loop_and_controls_and_inherits_neither():
    """Composition, not inheritance: LiveDemo has no base class but object; its controls and its loop are its
    attributes, each pointing back at it, sharing its one state; the names notebooks use on the demo reach them."""
    assert LiveDemo.__bases__ == (object,) and Controls not in LiveDemo.__mro__ and LiveLoop not in LiveDemo.__mro__
    d = LiveDemo(None, "t", rate=300, max_offsets=500, controls=("rate", "cap", "burst"), burst=700)
    assert isinstance(d.controls, Controls) and d.controls.demo is d and d.controls.state is d.state
    assert d.controls.names == ("rate", "cap", "burst") and d.burst_size == 700
    d.script_until_touched = True  # a test (or a configuration) sets what the controls hold, on the demo
    assert d.controls.script_until_touched is True and d.knob_values is d.controls.knob_values
    d.set("cap", 900)  # the demo's set() is its controls'
    assert d.state.wanted == {"cap": 900} and d._pending_restart == ["cap"]
    d.warn("a line")
    assert d.alert_text == d.controls.alert_text == "a line"
    assert "cap 500" in d.knobs_text() and "partitions" not in d.knobs_text()


def test_the_loop_is_held_by_the_demo_and_looks_in_named_steps():
    """The demo holds its loop; a look is the loop's explicit list of steps, in order, and a configuration's own
    script step (ControlledDemo's `_apply_script`) is the one the loop runs; the step is played by the held
    controls."""
    d = LiveDemo(None, "t", rate=300, max_offsets=500)
    assert d.loop.demo is d and d.loop.state is d.state and d.checkpoint == d.loop.checkpoint
    assert [name for name, _ in d.loop.steps] == ["script", "collect", "sample", "readout", "picture"]
    d.duration = 40  # the demo's names of what the loop runs read and write the loop
    assert d.loop.duration == 40 and d.topics == ["t"] and d.time_left(1.0) is None

    class Configured(LiveDemo):
        def _apply_script(self, now: float) -> None:
            self.asked.append(now)
            super()._apply_script(now)

    c = Configured(None, "t")
    c.asked = []
    c.state.live_from, c.state.pending_script = 0.0, [(1, 200)]
    c.controls._play = lambda step, now: c.asked.append(step)
    dict(c.loop.steps)["script"](2.0)
    assert c.asked == [2.0, (1, 200)], "the loop's script step is the demo's, so a configuration adds to it"


def test_the_script_player_holds_a_step_until_it_may_play():
    """play_due plays the steps due, in order, noting each; a step that is not ready waits with those behind it."""
    state = DemoState(pending_script=[(1, "a"), (2, "b"), (9, "c")])
    played, ready = [], [False]
    assert play_due(state, 5.0, 5.0, lambda step, now: played.append(step), lambda: ready[0]) == 0
    assert played == [] and len(state.pending_script) == 3, "held: not ready"
    ready[0] = True
    assert play_due(state, 5.0, 5.25, lambda step, now: played.append(step), lambda: ready[0]) == 2
    assert played == [(1, "a"), (2, "b")] and state.pending_script == [(9, "c")]
    assert state.applied == [(5.25, (1, "a")), (5.25, (2, "b"))]


def test_failover_plays_its_kills_with_the_live_demos_player_and_waits_for_a_broker():
    """FailoverDemo's script is the DemoState's pending_script, played by play_due in its own thread: a kill waits
    for the broker killed before to be back, then plays; the thread ends with the script."""
    demo = FailoverDemo(None, "127.0.0.1:1", partitions=1, show=False, script=[(2, "leader"), (0, "executor")])
    assert demo.state.pending_script == [(0, "executor"), (2, "leader")]
    kills = []
    demo.kill_executor = lambda: kills.append("executor")
    demo.kill_leader = lambda: kills.append("leader")
    demo.state.t0, demo.state.live_from = time.monotonic() - 10, 0.0  # 10 s after the first batch: both are due
    demo.killed_nodes = [2]  # a broker killed and not back yet
    player = threading.Thread(target=demo._play, daemon=True)
    player.start()
    time.sleep(0.5)
    assert kills == [] and player.is_alive(), "no kill while a broker is down"
    demo.killed_nodes = []
    player.join(3)
    assert kills == ["executor", "leader"] and not player.is_alive()
    assert [step for _, step in demo.state.applied] == [(0, "executor"), (2, "leader")]


def test_both_demos_show_and_freeze_their_box_with_the_same_helpers(monkeypatch):
    """The box is shown with a handle and frozen by widgets.show_box / widgets.freeze: the live box for the
    browser, a PNG beside it, no text line; neither demo builds a display bundle of its own."""
    for path, cls in ((DEMO / "controls.py", "Controls"), (ROOT / "streamlab/delivery/failover.py", "FailoverDemo")):
        tree = ast.parse(path.read_text())
        body = ast.unparse(next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls))
        assert "_repr_mimebundle_" not in body and "display(" not in body, cls
        assert "show_box(" in body and "freeze(" in body, cls

    class Box:
        def _repr_mimebundle_(self):
            return {"text/plain": "VBox(...)", "application/vnd.jupyter.widget-view+json": {"model_id": "m"}}

    class Handle:
        def update(self, bundle, raw):
            self.bundle = bundle

    shown = []
    monkeypatch.setattr("IPython.display.display", lambda bundle, **kw: shown.append((bundle, kw)) or Handle())
    handle = widgets.show_box(Box(), "LiveDemo on t")
    assert shown[0][0]["text/plain"] == "LiveDemo on t" and shown[0][1] == {"raw": True, "display_id": True}
    widgets.show_box(Box())
    assert shown[1][0]["text/plain"] == "VBox(...)", "no line given: the widget's own"
    widgets.freeze(handle, Box(), b"png")
    assert handle.bundle == {"application/vnd.jupyter.widget-view+json": {"model_id": "m"}, "image/png": b"png"}
