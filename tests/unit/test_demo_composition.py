"""The live demo's parts share one DemoState: the controls work on a state without a loop, the loop without widgets,
and neither reads the other's data except through the state and a few named methods (issue 34, review §8). The loop
is an object the demo holds (`demo.loop`), not a base class: it runs one look at a time as a list of named steps."""
from __future__ import annotations

import ast
import pathlib
import time

from streamlab.course.checks import fake_progress
from streamlab.demo.controls import ControlPlan, Controls
from streamlab.demo.live import LiveDemo
from streamlab.demo.loop import LiveLoop, RunPlan
from streamlab.demo.settings import StreamSettings
from streamlab.demo.state import DemoState, state_of

DEMO = pathlib.Path(__file__).resolve().parents[2] / "streamlab" / "demo"


class ControlsOnly(Controls):
    """Controls on a bare state: no loop, no producer, no query, no widgets."""

    topic, sources, label, bootstrap = "t", {}, "t", None
    state = property(state_of)

    def now(self) -> float:
        return round(time.monotonic() - self.state.t0, 2)

    @property
    def settings(self) -> dict:
        return self.state.stream.as_dict()


class ViewOnly:
    """What a loop asks of its demo, on a bare state: no sliders, no readout; what it asks the view is recorded."""

    topic, charts, spark, script_in = "t", (), None, "seconds"
    controls, knobs, knob_values = (), {}, {}
    state = property(state_of)

    def __init__(self):
        self.played: list = []

    def now(self) -> float:
        return 0.0

    def _play(self, step, now: float) -> None:
        self.played.append((now, step))

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
    c = ControlsOnly()
    c.state.stream = StreamSettings(rate=100, cap=500)
    c._init_controls(ControlPlan(controls=("rate", "cap"), script=((2, "cap", 700), (3, 200))))
    c._check_script()
    c.state.t0 = time.monotonic() - 5
    c.set("cap", 900)
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
    assert loop.demo.played == [(3.5, (1, 300))] and loop.state.applied == [(3.5, (1, 300))]
    assert loop.time_left(4.0) == 3.0 and not loop._over(4.0, lag=100) and loop._over(7.5, lag=100)


def _self_attributes(cls_name: str, path: pathlib.Path, owner: str = "self") -> tuple[set, set]:
    """(names a class defines: its methods and what it assigns to self, names it reads from `owner`: self, or
    self.demo for the loop, which reaches its demo through that attribute)."""
    tree = ast.parse(path.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name)
    defined, read = set(), set()
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef):
            defined.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            if isinstance(node.ctx, ast.Store):
                defined.add(node.attr)
            elif owner == "self":
                read.add(node.attr)
        if (owner == "self.demo" and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                and node.value.attr == "demo" and isinstance(node.value.value, ast.Name)
                and node.value.value.id == "self"):
            read.add(node.attr)
    return defined, read


def test_the_loop_and_the_controls_share_data_only_through_the_state():
    """What one part reads of the other is a short list of methods and of its configuration (review §1.3 B counted
    14 and 12 attributes, the queue, the lock, the timeline among them); neither assigns the other's attributes."""
    loop_defines, loop_reads = _self_attributes("LiveLoop", DEMO / "loop.py", owner="self.demo")
    controls_define, controls_read = _self_attributes("Controls", DEMO / "controls.py")
    assert (loop_reads - loop_defines) & controls_define == {
        "_play", "_show_readout", "_show_picture", "_show_last", "show_ended", "warn",  # the view
        "controls", "knobs", "knob_values", "script_in"}  # what may move
    assert loop_reads - controls_define <= {  # and the rest of what it asks its demo
        "spark", "topic", "charts", "now", "settings", "png", "state", "_apply_script", "_drain"}, loop_reads
    assert (controls_read - controls_define) & (loop_defines - {"state"}) == {  # both reach the one DemoState
        "_new_producer", "bootstrap", "label", "sources"}  # a new producer after new partitions; what runs
    assert not loop_defines & controls_define


def test_the_loop_is_held_by_the_demo_and_looks_in_named_steps():
    """Composition, not inheritance: the demo holds its loop; a look is the loop's explicit list of steps, in order,
    and a configuration's own script step (ControlledDemo's `_apply_script`) is the one the loop runs."""
    assert LiveLoop not in LiveDemo.__mro__
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
    c._play = lambda step, now: c.asked.append(step)
    dict(c.loop.steps)["script"](2.0)
    assert c.asked == [2.0, (1, 200)], "the loop's script step is the demo's, so a configuration adds to it"
