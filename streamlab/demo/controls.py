"""The demo's controls: sliders and buttons on real knobs, that act whenever they are shown.

A slider moves a knob through `set()`, the same path as a script or a later cell, so every value is checked
(`settings.py`) and every move is drawn on the chart. Two things make controls trustworthy in a notebook:

- They act while a cell runs. A kernel handles a widget's messages only between cells, so under Run All the
  demo's `wait()` cell would leave every control deaf while the chart looks alive. ipykernel 7 runs *subshells*
  (threads with their own message loop, JEP 91) and routes a comm's messages to the subshell its kernel side
  names; `answer_while_busy` starts one subshell per kernel and names it for the demo's widgets, so a move is
  applied within a second whatever the main shell is doing (jupyter-ui-poll, the usual cure, calls a
  `do_one_iteration` that ipykernel 7 no longer has). Without subshells, controls act between cells as before.
- They never show a value the demo did not use: a person's move cancels the script's later moves of that knob
  (a script yields at the first touch), and when the demo ends every slider is set back to the value in force
  and disabled.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from streamlab.demo import settings as _settings
from streamlab.demo.charts import RESTART_COLOR
from streamlab.demo.widgets import freeze, show_box, slider

KNOBS = ("rate", "cap", "trigger", "cost", "partitions", "min_partitions", "min_offsets", "max_delay")
RESTARTING = ("cap", "trigger", "cost", "min_partitions", "min_offsets", "max_delay")  # read when a query starts
CONTROLS = (*KNOBS, "burst")
SCRIPT_CLOCKS = ("seconds", "batches")
_SUBSHELL: dict = {}


@dataclass
class Knob:
    """A slider on a knob the configuration defines: `apply(value)` runs when it moves (or the script moves it);
    with `restart=True` the query then restarts on the same checkpoint, like the cap. `options`: a slider over
    these values instead of the integer range lo..hi."""

    name: str
    label: str
    value: Any
    lo: int = 0
    hi: int = 100
    step: int = 1
    options: tuple = ()
    apply: Callable | None = None
    restart: bool = False



@dataclass
class ControlPlan:
    """What a demo lets a person (and its script) move: `controls` names the knobs that get a slider (and "burst"
    a button of `burst` records), `knobs` adds sliders on the configuration's own `Knob`s, `script` moves knobs by
    itself (steps `(at, knob, value)`, `(at, rate)` or `(at, "burst", n)`, `at` in seconds after the first batch
    with data or, with `script_in="batches"`, in batches), and `script_until_touched` makes a person's first move
    cancel the whole rest of the script (otherwise only its later moves of that knob). `ranges` {knob: (lo, hi,
    step)} narrows a slider to the values its demo is about, in the slider's unit (ms for the trigger): a cap
    slider over 0-10,000 moves 60 records a pixel, too coarse to set "above 400"."""

    controls: tuple = ("rate", "cap")
    burst: int = 5_000
    knobs: tuple = ()
    script: tuple = ()
    script_in: str = "seconds"
    script_until_touched: bool = False
    ranges: dict = field(default_factory=dict)

    def __post_init__(self):
        unknown = [c for c in self.controls if c not in CONTROLS]
        if unknown:
            raise _settings.KnobError(f"unknown control {unknown[0]!r}; one of {', '.join(CONTROLS)}")
        self.controls = tuple(self.controls)
        self.ranges = {knob: check_range(knob, span, self.controls) for knob, span in dict(self.ranges or {}).items()}
        self.burst = _settings.check_burst(self.burst)
        self.knobs = tuple(self.knobs)
        self.script = tuple(tuple(step) for step in self.script)
        if self.script_in not in SCRIPT_CLOCKS:
            raise _settings.KnobError(f"script_in must be one of {', '.join(SCRIPT_CLOCKS)}, got {self.script_in!r}")


def _slider_value(knob: str, value) -> int:
    """What a slider of `knob` shows for `value` (the trigger and cost in thousandths, no cap as 0)."""
    return int({"trigger": value * 1000, "cost": value * 1000, "cap": value or 0}.get(knob, value))


def _fits(widget, shown: int) -> bool:
    """Whether `widget` can show `shown` (a slider clamps a value outside its range: the script then sets the knob
    itself, and the slider shows its nearest end)."""
    return widget.min <= shown <= widget.max


def check_range(knob: str, span, controls: tuple) -> tuple[int, int, int]:
    """A slider's (lo, hi, step) for `knob`, one of the demo's controls: whole numbers, lo < hi, 0 < step <= hi - lo."""
    if knob not in KNOBS or knob not in controls:
        raise _settings.KnobError(f"ranges names {knob!r}, which is not one of this demo's sliders "
                                  f"({', '.join(c for c in controls if c in KNOBS) or 'none'})")
    try:
        lo, hi, step = (int(v) for v in span)
    except (TypeError, ValueError):
        raise _settings.KnobError(f"the range of {knob} must be (lo, hi, step) in whole numbers, "
                                  f"got {span!r}") from None
    if not (lo < hi and 0 < step <= hi - lo):
        raise _settings.KnobError(f"the range of {knob} must have lo < hi and a step from 1 to hi - lo, got {span!r}")
    return lo, hi, step


class Controls:
    """The controls of a demo: an object the demo holds (`demo.controls`), as it holds its loop.

    What they share with the loop is the demo's `state` (a DemoState); the widgets are their own. Of the demo they
    ask what runs (topic, sources, label, bootstrap), the clock (now, settings), the readout and chart
    (readout_html, png), a new producer after new partitions (_new_producer) and the stop button's stop_soon. The
    loop asks them to play a script step (`_play`) and to show the readout, the picture and the end."""

    def __init__(self, demo, plan: ControlPlan):
        """The controls of `demo` as `plan` says: what may move, the script, and the widgets (made at start)."""
        self.demo = demo
        self.names, self.burst_size = plan.controls, plan.burst  # names: the knobs with a slider ("burst": a button)
        self.knobs = {k.name: k for k in plan.knobs}
        self.knob_values = {k.name: k.value for k in plan.knobs}  # the configuration's knobs, as last moved
        self.script = list(plan.script)
        self.script_in, self.script_until_touched = plan.script_in, plan.script_until_touched
        self.ranges = plan.ranges
        self.alert_text = ""
        self.live_controls = False  # whether the controls act while another cell runs (a kernel with subshells)
        self.on_screen = True  # False: the demo shows no box (a check runs it for its numbers only)
        self.state.pending_script = sorted(self.script, key=lambda step: step[0])
        self._touched_knobs: set = set()
        self._handle = None
        self._sliders: dict = {}
        self._convert: dict = {}
        self._buttons: list = []
        self._widgets_made = False

    @property
    def state(self):
        """The demo's DemoState, shared with the loop."""
        return self.demo.state

    def _check_script(self) -> None:
        """Every step of the script names a knob and a value it can take (refused here, not mid-demo)."""
        for step in self.state.pending_script:
            if len(step) not in (2, 3) or not isinstance(step[0], (int, float)) or step[0] < 0:
                raise _settings.KnobError(
                    f"a script step is (at, knob, value), (at, rate) or (at, 'burst', n); got {step!r}")
            if len(step) == 2:
                _settings.check_rate(step[1])
            elif step[1] == "burst":
                _settings.check_burst(step[2])
            elif step[1] in self.knobs or step[1] in KNOBS or step[1].removeprefix("rate:") in self.demo.sources:
                self.checked(step[1], step[2])
            else:
                raise _settings.KnobError(f"the script moves an unknown knob {step[1]!r}; one of "
                                          f"{', '.join((*KNOBS, *self.knobs, *self._rate_knobs(), 'burst'))}")

    def set(self, knob: str, value) -> None:
        """Turn a knob as its control would: the rate at once, partitions by a CreatePartitions request, the cap,
        trigger, cost and minPartitions by restarting the query on the same checkpoint."""
        if knob not in KNOBS and knob not in self.knobs and knob.removeprefix("rate:") not in self.demo.sources:
            known = ", ".join((*KNOBS, *self.knobs, *self._rate_knobs()))
            raise _settings.KnobError(f"unknown knob {knob!r}; one of {known}")
        value = self.checked(knob, value)  # refused here, in the cell that gave it, not by the running query
        if self.state.ended:
            return  # nothing acts after the demo ended
        if not self.state.auto:
            self.state.touched = True
            self._touched_knobs.add(knob)
            self.state.person_moved = True  # a restart for a person is not kept waiting (loop.RESTART_IDLE_WAIT_S)
            # the script yields to a person: all of it (script_until_touched), or at least its moves of this knob
            self.state.pending_script = [] if self.script_until_touched else [
                step for step in self.state.pending_script if _step_knob(step) != knob]
        with self.state.lock:
            if knob == "rate":
                self.state.stream["rate"] = value
                if self.state.producer is not None:
                    self.state.producer.set_rate(value)
                self._note(f"{value}/s", restart=False)
            elif knob == "partitions":
                self._grow(value)
            elif knob.startswith("rate:"):
                source = self.demo.sources[knob.removeprefix("rate:")]
                source.rate = value
                if knob[5:] in self.state.producers:
                    self.state.producers[knob[5:]].set_rate(value)
                self._note(f"{source.label or knob[5:]} {value}/s", restart=False)
            elif knob in self.knobs:
                self.knob_values[knob] = value
                if self.knobs[knob].apply is not None:
                    self.knobs[knob].apply(value)
                if self.knobs[knob].restart:
                    self.state.pending_restart.append(knob)
                else:
                    self._note(f"{knob.replace('_', ' ')} {value}", restart=False)
            else:
                key = _settings.KNOB_KEYS[knob]
                wanted, stream = self.state.wanted, self.state.stream
                floor = value if knob == "min_offsets" else wanted.get("min_offsets", stream["min_offsets"])
                cap = value if knob == "cap" else wanted.get("cap", stream["cap"])
                _settings.check_floor_under_cap(floor, cap)
                self.state.wanted[key] = value
                self.state.pending_restart.append(knob)
        self.state.wake.set()

    def checked(self, knob: str, value):
        """The value `knob` would take, or a KnobError (one line, naming the knob) for one it cannot."""
        if knob in self.knobs:
            own = self.knobs[knob]
            if own.options:
                if value not in own.options:
                    raise _settings.KnobError(f"{own.label} must be one of {', '.join(map(str, own.options))}, "
                                              f"got {value!r}")
                return value
            return _settings.checked_number(own.label, value, whole=True, lo=own.lo, hi=own.hi,
                                     what=f"a whole number from {own.lo} to {own.hi}")
        if knob.startswith("rate:"):
            return _settings.check_rate(value, f"{self.demo.sources[knob[5:]].label or knob[5:]} rate")
        return _settings.check_knob(knob, value)

    def _rate_knobs(self) -> list[str]:
        return [f"rate:{t}" for t in self.demo.sources]

    def burst(self, n: int | None = None) -> None:
        """Make the producer send `n` extra records at once (the burst button's size by default)."""
        n = self.burst_size if n is None else _settings.check_burst(n)
        if self.state.ended or self.state.producer is None or not self.state.producer.running:
            return
        self.state.producer.burst(n)
        self.state.marks.append((self.demo.now(), f"burst {n:,}"))
        self.state.wake.set()

    def extend(self, seconds: float = 30.0) -> None:
        """Let a running demo run `seconds` longer."""
        seconds = _settings.check_positive("extra seconds", seconds, hi=3_600)
        if not self.state.ended:
            self.state.extra_s += seconds

    def warn(self, message: str) -> None:
        """Show a warning line under the readout (e.g. a LagMonitor's on_warning); safe from any thread."""
        self.alert_text = message
        if self._widgets_made:
            self._alert.value = f"<b style='color:{RESTART_COLOR}'>{message}</b>"

    def _note(self, text: str, restart: bool) -> None:
        if self.state.t0:
            self.state.timeline.append((self.demo.now(), self.demo.settings))
            if not restart and not self.state.auto:
                self.state.marks.append((self.demo.now(), text))

    def _grow(self, wanted: int) -> None:
        from streamlab.lab.topics import add_partitions

        current = self.state.stream["partitions"] or 0
        if wanted <= current:  # Kafka can add partitions, never remove them
            if "partitions" in self._sliders:
                self._sliders["partitions"].value = current
            return
        add_partitions(self.demo.topic, wanted, self.demo.bootstrap)
        self.state.stream["partitions"] = wanted
        self._note(f"{wanted} partitions", restart=False)
        if self.state.producer is not None:  # round-robin over every partition, the new ones included
            self.state.producer.stop()
            self.state.producer = self.demo._new_producer()

    # -- what the loop shows through them ------------------------------------------------------------------------
    def _play(self, step, now: float) -> None:
        """Play one script step at `now` s: a burst, or a knob moved through its slider when it has one that can
        show the value (the same path as a move in the browser, and the browser shows it), else through set()."""
        knob, value = ("rate", step[1]) if len(step) == 2 else (step[1], step[2])
        self.state.auto = True
        try:
            if knob == "burst":
                self.burst(int(value))
            else:
                name = knob.replace("_", " ") if knob in self.knobs else knob
                self.state.marks.append((now, f"{name} {value}" if knob != "rate" else f"{int(value)}/s"))
                if knob in self.knobs and knob in self._sliders:
                    self._sliders[knob].value = value
                elif knob in self._sliders and _fits(self._sliders[knob], _slider_value(knob, value)):
                    self._sliders[knob].value = _slider_value(knob, value)
                else:
                    self.set(knob, value)
        finally:
            self.state.auto = False

    def _show_readout(self, now: float, ended: bool | None = None) -> None:
        """The readout under the controls, from any thread (a widget's value reaches the browser from any)."""
        if self._widgets_made:
            self._readout.value = self.demo.readout_html(now, self.state.ended if ended is None else ended)

    def _show_picture(self, picture: bytes) -> None:
        """The chart under the readout (PNG bytes), from any thread."""
        if self._widgets_made:
            self._image.value = picture

    def show_ended(self) -> None:
        """The learner's view of a demo that is over: controls greyed out, the readout saying `ended` (also from
        the cell's thread on ■, while the poller may still be inside a client call)."""
        if self._widgets_made:
            self._sync_controls(disable=True)
            self._show_readout(self.demo.now(), ended=True)

    def _show_last(self) -> None:
        """The ended demo's last readout and chart, once its query and producers stopped."""
        if self._widgets_made:
            self._show_readout(self.demo.now(), ended=True)
            try:
                self._image.value = self.demo.png()
            except Exception:  # noqa: BLE001 - the interpreter is shutting down: the last picture stays
                pass

    # -- the widget box -------------------------------------------------------------------------------------------
    def _make_widgets(self) -> None:
        import ipywidgets as W

        s = self.state.stream
        spans = {"rate": (0, 5000, 50), "cap": (0, 10_000, 100), "trigger": (0, 5000, 250), "cost": (0, 5000, 100),
                 "partitions": (1, 12, 1), "min_partitions": (0, 16, 1), "min_offsets": (0, 5_000, 100),
                 "max_delay": (0, 10_000, 500), **self.ranges}

        def knob_slider(knob: str, description: str, value: int):
            lo, hi, step = spans[knob]
            if knob in self.ranges and not lo <= value <= hi:
                raise _settings.KnobError(f"{knob} starts at {value}, outside its slider's range {lo}..{hi}: "
                                          "widen the range or start inside it")
            return slider(description, value, lo, hi, step)

        if "rate" in self.names:
            name = f"{self.demo.label} (rec/s)" if self.demo.sources else "producer rate (rec/s)"
            self._sliders["rate"] = knob_slider("rate", name, s["rate"])
            for topic, source in self.demo.sources.items():
                self._sliders[f"rate:{topic}"] = knob_slider("rate", f"{source.label or topic} (rec/s)", source.rate)
        if "cap" in self.names:
            self._sliders["cap"] = knob_slider("cap", "maxOffsetsPerTrigger (0=none)", s["cap"] or 0)
        if "trigger" in self.names:
            self._sliders["trigger"] = knob_slider("trigger", "trigger interval (ms)", int(s["trigger_seconds"] * 1000))
        if "cost" in self.names:
            self._sliders["cost"] = knob_slider("cost", "cost per record (µs)", int(s["cost_ms"] * 1000))
        if "partitions" in self.names:
            self._sliders["partitions"] = knob_slider("partitions", "topic partitions", s["partitions"] or 1)
        if "min_partitions" in self.names:
            self._sliders["min_partitions"] = knob_slider("min_partitions", "minPartitions (0 = unset)",
                                                          s["min_partitions"])
        if "min_offsets" in self.names:
            self._sliders["min_offsets"] = knob_slider("min_offsets", "minOffsetsPerTrigger (0 = unset)",
                                                       s["min_offsets"])
        if "max_delay" in self.names:
            self._sliders["max_delay"] = knob_slider("max_delay", "maxTriggerDelay (ms, 0 = 15 min)",
                                                     int(s["max_delay_seconds"] * 1000))
        for knob in self.knobs.values():
            if knob.options:
                self._sliders[knob.name] = W.SelectionSlider(
                    options=list(knob.options), value=knob.value, description=knob.label, continuous_update=False,
                    style={"description_width": "initial"}, layout=W.Layout(width="460px"))
            else:
                self._sliders[knob.name] = slider(knob.label, knob.value, knob.lo, knob.hi, knob.step)
        convert = {"cap": lambda v: v or None, "trigger": lambda v: v / 1000, "cost": lambda v: v / 1000,
                   "max_delay": lambda v: v / 1000,
                   **{name: (lambda v: v) for name in self.knobs}}
        self._convert = convert
        for knob, widget in self._sliders.items():
            widget.observe(lambda change, k=knob: self._moved(k, change["new"]), names="value")
        if "burst" in self.names:
            b = W.Button(description=f"burst {self.burst_size:,}", icon="bolt", layout=W.Layout(width="140px"))
            b.on_click(lambda _: self.burst())
            self._buttons.append(b)
        more = W.Button(description="+30 s", icon="clock-o", layout=W.Layout(width="90px"))
        more.on_click(lambda _: self.extend(30))
        stop = W.Button(description="stop demo", icon="stop", layout=W.Layout(width="120px"))
        stop.on_click(lambda _: self.demo.stop_soon())
        self._buttons += [more, stop]
        self._readout = W.HTML(value="<code>not started</code>")
        self._alert = W.HTML(value="")
        self._image = W.Image(format="png", layout=W.Layout(max_width="100%"))
        sliders = list(self._sliders.values())
        # sliders wrap onto as many rows as the page's width needs: the box never scrolls sideways
        columns = W.Box(sliders, layout=W.Layout(display="flex", flex_flow="row wrap", width="100%"))
        self.box = W.VBox([columns, W.HBox(self._buttons), self._readout, self._alert, self._image],
                          layout=W.Layout(width="100%", overflow="hidden"))
        self._widgets_made = True
        self.live_controls = answer_while_busy([*self._sliders.values(), *self._buttons])

    def _show(self) -> None:
        """Show the box (not for a demo a check runs for its numbers only: `on_screen` False)."""
        if not self.on_screen:  # a demo a check runs for its numbers: no box in the check cell's output
            return
        self._handle = show_box(self.box, f"LiveDemo on {self.demo.topic} (runs in the background; the next cell "
                                          "waits for it)")

    def _freeze(self) -> None:
        """Keep the box live for the browser and the chart as a PNG beside it (what a saved notebook shows)."""
        if self._handle is None or not self._widgets_made:
            return
        freeze(self._handle, self.box, self.demo.png())

    def _moved(self, knob: str, shown) -> None:
        """A slider moved (by a person, or by the script through the slider): turn the knob; after the end, put
        the slider back to the value in force."""
        if self.state.ended:
            self._sync_controls()
            return
        try:
            self.set(knob, self._convert.get(knob, int)(shown))
        except Exception as exc:  # noqa: BLE001 - a knob that cannot move must not kill the widget's message loop
            from streamlab.errors import first_line

            self.warn(f"{knob} was not changed: {first_line(exc)}")
            self._sync_controls()

    def _shown(self, knob: str):
        """What the slider of `knob` shows for the value in force."""
        if knob in self.knobs:
            return self.knob_values[knob]
        if knob.startswith("rate:"):
            return self.demo.sources[knob[5:]].rate
        s = self.state.stream
        return {"rate": s["rate"], "cap": s["cap"] or 0, "trigger": int(round(s["trigger_seconds"] * 1000)),
                "cost": int(round(s["cost_ms"] * 1000)), "partitions": s["partitions"] or 1,
                "min_partitions": s["min_partitions"], "min_offsets": s["min_offsets"],
                "max_delay": int(round(s["max_delay_seconds"] * 1000))}[knob]

    def _sync_controls(self, disable: bool = False) -> None:
        """Every slider to the value in force (and disabled, once the demo ended): none shows a value not used."""
        for knob, widget in self._sliders.items():
            try:
                shown = self._shown(knob)
                if widget.value != shown:
                    self.state.auto = True
                    try:
                        widget.value = shown
                    finally:
                        self.state.auto = False
            except Exception:  # noqa: BLE001 - a value outside the slider's range: leave it, disabled
                pass
            if disable:
                widget.disabled = True
        if disable:
            for button in self._buttons:
                button.disabled = True


def _step_knob(step) -> str:
    """The knob a script step moves ("rate", "burst", a knob's name)."""
    return "rate" if len(step) == 2 else step[1]


def _subshell(kernel) -> str | None:
    """The id of this kernel's subshell for demo controls, started on first use (None: no subshells here)."""
    if "id" in _SUBSHELL or "error" in _SUBSHELL:
        return _SUBSHELL.get("id")
    thread = getattr(kernel, "shell_channel_thread", None)
    manager = getattr(thread, "manager", None)
    if not getattr(kernel, "_supports_kernel_subshells", False) or manager is None:
        _SUBSHELL["error"] = "this kernel has no subshells"
        return None
    made = threading.Event()

    def create():  # a subshell is created by the shell channel's own thread, as a create_subshell_request is
        try:
            _SUBSHELL["id"] = manager._create_subshell()
        except Exception as exc:  # noqa: BLE001 - an ipykernel without this API: controls act between cells
            _SUBSHELL["error"] = repr(exc)
        finally:
            made.set()

    thread.io_loop.add_callback(create)
    if not made.wait(5):
        _SUBSHELL["error"] = "the shell channel did not answer"
    return _SUBSHELL.get("id")


def answer_while_busy(widgets) -> bool:
    """Have the frontend's messages to `widgets` handled by a subshell of this kernel, so that they act while a
    cell runs (True), or leave them to the main shell, between cells (False: not in a kernel, or no subshells)."""
    try:
        from ipykernel.kernelbase import Kernel
    except ImportError:
        return False
    if not Kernel.initialized():
        return False
    subshell = _subshell(Kernel.instance())
    if subshell is None:
        return False
    for widget in widgets:
        comm = getattr(widget, "comm", None)
        if comm is not None and hasattr(comm, "_reply_subshell_for"):
            # ipykernel routes a comm's messages to the subshell this names (kernelbase.shell_channel_thread_main)
            comm._reply_subshell_for = lambda data, default, subshell=subshell: subshell
    return True
