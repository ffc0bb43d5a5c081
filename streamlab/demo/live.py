"""The live demo every module uses: a producer, a real query on the Kafka source, controls, and Spark UI's charts.

`LiveDemo` feeds a topic with a `BackgroundProducer`, runs a Structured Streaming query on it, and follows the
query's progress events from one background thread. It is filed by what it does, one module each:

- `settings`: the knobs a query starts with (cap, trigger, minPartitions, cost) and the producer's rate, in a
  small dataclass that validates every value, from the constructor, `set()`, a slider or a script alike;
- `controls`: sliders and buttons on those knobs, which act even while another cell runs, in a `Controls` the
  demo holds (`demo.controls`), as it holds its loop;
- `loop`: the producers, the query, restarts on the same checkpoint, and the polling thread, in a `LiveLoop`
  the demo holds (`demo.loop`), whose every look is its list of named `steps`;
- `state`: what the loop and the controls share (the knobs in force, the timeline and marks, the running
  clients, the knobs waiting for a restart), one `DemoState` that each part reads and writes, and nothing of the
  other's besides a few named methods;
- `charts`: Spark UI's charts (input vs process rate, batch duration vs trigger, rows vs cap, lag), one demo or
  several on one time axis.

Controls act on real knobs. The producer rate (and a burst) changes at once. `maxOffsetsPerTrigger`, the trigger
interval, `minPartitions` and the demo's cost per record are read when a query *starts*, exactly as in Spark, so
moving them restarts the query on the same checkpoint: it resumes where it was, batches planned after the restart
use the new values, and the chart keeps its history across the restart. Adding topic partitions is a real
CreatePartitions request, seen by the running query at its next trigger (no restart).

Why start() and wait() in two cells: output written from a background thread is routed unreliably since ipykernel
7, but a widget's value set from any thread reaches the browser. So start() shows the box and returns; the demo runs
in the background and ends by itself after `duration` seconds of batches (the "+30 s" button extends it); wait() in
a later cell collects the result and replaces the box's saved output with a static picture, so a headless run still
shows the chart. While wait() blocks, the controls still act (see `controls`), and ■ (KeyboardInterrupt) stops the
demo with one line.

Its options are split the same way: each goes to the part it configures (`StreamSettings`, `ControlPlan`,
`RunPlan`, `ChartPlan`), which checks it before anything starts, so a notebook's call stays one flat line while
no class takes thirty arguments. Extension points, so that a module's own demo is a configuration of this one:
more source topics with their own producers and rate sliders (`sources`), sliders on knobs the configuration
defines (`knobs`), a function called for every micro-batch from the demo's own foreachBatch (`on_batch`), panels of
its own data on the shared time axis (`panels`), restarts after failures injected on purpose (`restart_on`), a last
step that lets the query read everything produced (`drain`), and a few words of its own in the readout (`status`).
"""
from __future__ import annotations

import difflib
import inspect
import os
import threading
from dataclasses import MISSING, fields

from streamlab.demo import settings as _settings
from streamlab.demo.charts import (CHARTS, PALETTE, RESTART_COLOR, ChartPlan, Panel, compare,  # noqa: F401 - re-exported
                                   figure)
from streamlab.demo.controls import (CONTROLS, KNOBS, RESTARTING, ControlPlan, Controls, Knob,  # noqa: F401
                                     answer_while_busy)
from streamlab.demo.loop import (DEMO_SECONDS_ENV, FIRST_BATCH_WAIT_S, REDRAW_EVERY_S, LiveLoop,  # noqa: F401
                                 RunPlan, Source, running_demos, stop_all)
from streamlab.demo.settings import KnobError, StreamSettings, settings_text
from streamlab.demo.state import DemoState, add_aliases, state_of  # noqa: F401 - DemoState re-exported
from streamlab.demo.widgets import png
from streamlab.errors import LabError
from streamlab.settings import SettingError, settings as lab_settings

GRADING_SECONDS = 12  # under the grader nobody plays: a demo runs this long after its script at most
COLUMNS = ("batch", "time", "rows", "cap", "duration_ms", "input_rate", "process_rate", "lag", "restart", "run",
           "trigger_s", "planned", "progress_lag", "max_behind", "tasks", "partitions", "min_partitions",
           "partitions_read")
PARTS = (ControlPlan, RunPlan, ChartPlan)  # the demo's parts, each with the options it takes
STREAM_OPTIONS = {"rate": "rate", "max_offsets": "cap", "trigger_seconds": "trigger_seconds", "cost_ms": "cost_ms",
                  "min_partitions": "min_partitions", "min_offsets": "min_offsets",
                  "max_delay_seconds": "max_delay_seconds"}  # LiveDemo's name → StreamSettings' field

def plans(options: dict, settings: StreamSettings | None = None):
    """LiveDemo's options, each handed to the part it configures: (StreamSettings, ControlPlan, RunPlan,
    ChartPlan), every value checked; an option no part takes is refused with the nearest one's name."""
    by_part: dict = {part: {} for part in PARTS}
    stream: dict = {}
    owner = {f.name: part for part in PARTS for f in fields(part)}
    for name, value in options.items():
        if name in STREAM_OPTIONS:
            stream[STREAM_OPTIONS[name]] = value
        elif name in owner:
            by_part[owner[name]][name] = value
        else:
            known = [*STREAM_OPTIONS, *owner, "settings"]
            near = difflib.get_close_matches(name, known, n=1)
            raise KnobError(f"LiveDemo has no option {name!r}" + (f": did you mean {near[0]!r}?" if near else
                            f"; its options: {', '.join(known)}"))
    if settings is not None and stream:
        raise KnobError(f"give the query's knobs either as settings=StreamSettings(...) or as options "
                        f"({', '.join(stream)}), not both")
    return (settings if settings is not None else StreamSettings(**stream),
            *(part(**by_part[part]) for part in PARTS))


def _signature() -> inspect.Signature:
    """LiveDemo(spark, topic, *, settings, <every option with its default>): what help() and ⇧⇥ show."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    defaults = {f.name: f.default for f in fields(StreamSettings)}
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
              inspect.Parameter("spark", inspect.Parameter.POSITIONAL_OR_KEYWORD),
              inspect.Parameter("topic", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=str),
              inspect.Parameter("settings", keyword, default=None)]
    params += [inspect.Parameter(name, keyword, default=defaults[key]) for name, key in STREAM_OPTIONS.items()]
    for part in PARTS:
        params += [inspect.Parameter(f.name, keyword, default=f.default_factory() if f.default is MISSING else f.default)
                   for f in fields(part)]
    return inspect.Signature(params)


def duration_cap() -> float | None:
    """How long a demo may run after its script when nobody plays: under the grader, or $STREAMLAB_DEMO_SECONDS."""
    try:
        value = lab_settings.demo_seconds
    except SettingError as exc:  # a demo's knobs are refused as KnobErrors
        raise KnobError(str(exc)) from None
    if value is not None:
        return _settings.check_positive(DEMO_SECONDS_ENV, value)
    return GRADING_SECONDS if lab_settings.grading else None


class LiveDemo:
    """Producer → Kafka → a Structured Streaming query, with controls, a one-line readout and Spark UI's charts.

    `LiveDemo(spark, topic, **options)`: each option belongs to one part of the demo and is checked there, before
    anything starts (a value one cannot take is a `KnobError`, one line naming it; so is an option no part has):
    - the query's knobs (`StreamSettings`): `rate` (records/s), `max_offsets` (maxOffsetsPerTrigger, None: no cap),
      `trigger_seconds` (0: as fast as possible), `cost_ms` (simulated work per record), `min_partitions`,
      `min_offsets` (minOffsetsPerTrigger) and `max_delay_seconds` (maxTriggerDelay), 0 leaving each unset; or
      all of them as one `settings=StreamSettings(...)`;
    - what may move (`ControlPlan`, controls.py): `controls` (which of "rate", "cap", "trigger", "cost",
      "partitions", "min_partitions", "min_offsets", "max_delay" get a slider, "burst" a button of `burst`
      records), `ranges` ({knob: (lo, hi, step)} of a slider), `knobs` (sliders on the configuration's own
      `Knob`s), `script`, `script_in`, `script_until_touched`;
    - what runs and when it ends (`RunPlan`, loop.py): `duration` (s after the first batch with data; +30 s per
      click), `starting_offsets`, `stop_after_script`, `stop_when_caught_up`, `bootstrap`, `sources`, `value_fn`,
      `key_fn`, `label`, `on_batch`, `restart_on`, `drain`;
    - what it draws (`ChartPlan`, charts.py): `charts`, `lag_lines`, `title`, `panels`, `status`, `show_offsets`.

    The demo also ends on "stop", on ■, on cleanup(), when its broker stops answering, or when the kernel exits;
    then its controls show the values in force and are disabled, its query and producer stopped. What later cells
    read: `batches` (a DataFrame, one row per batch, also returned by wait()), `settings` / `values` (the knobs in
    force), `restarts`, `samples` (broker lag at each poll), `events` (every progress event, across restarts),
    `checkpoint`, `topic`. Without the extension options (`sources`, `knobs`, `on_batch`, `panels`, `restart_on`,
    `drain`, `status`) the demo is the one modules 0-5 use; with them, a module's own demo is a configuration of it.
    """

    def __init__(self, spark, topic: str, *, settings: StreamSettings | None = None, **options):
        stream, control, run, chart = plans(options, settings)
        self.spark, self.topic = spark, topic
        state_of(self).stream = stream  # the state the loop and the controls share (state.py)
        self.loop = LiveLoop(self, run)  # producers, query and the polling thread (loop.py)
        self.controls = Controls(self, control)  # sliders, buttons, the script's moves, the box (controls.py)
        self.charts, self.lag_lines, self.title, self.panels = chart.charts, chart.lag_lines, chart.title, chart.panels
        self.status, self.show_offsets = chart.status, chart.show_offsets
        self.query = _QueryHandle(self)
        self.controls._check_script()  # needs every part: a step may move a source's rate or a configuration's knob
        for knob, (lo, hi, _) in self.ranges.items():  # a slider must be able to show the value it starts at
            shown = self.controls._shown(knob)
            if knob != "partitions" and not lo <= shown <= hi:
                raise KnobError(f"{knob} starts at {shown}, outside its slider's range {lo}..{hi}: "
                                "widen the range or start inside it")

    __init__.__signature__ = _signature()

    # -- what later cells read -------------------------------------------------------------------------------------
    @property
    def settings(self) -> dict:
        """The knobs in force now (after the last restart): rate, cap, trigger_seconds, cost_ms, min_partitions,
        partitions."""
        return self.state.stream.as_dict()

    @property
    def values(self) -> dict:
        """The same as `settings`: the values actually in force, whatever the controls were moved to."""
        return self.settings

    @property
    def max_offsets(self) -> int | None:
        """The cap in force (maxOffsetsPerTrigger; None: no cap)."""
        return self.state.stream["cap"]

    @property
    def rate(self) -> int:
        """The producer rate in force (records/s)."""
        return self.state.stream["rate"]

    @property
    def batches(self):
        """One row per micro-batch: batch, time (s since start, when planned), rows, cap, duration_ms, input_rate,
        process_rate, lag (broker-measured, when the demo saw the batch), restart (first batch of a restarted
        query), run, trigger_s, planned, progress_lag, max_behind, tasks, partitions, min_partitions,
        partitions_read."""
        import pandas as pd

        return pd.DataFrame([dict(b) for b in self.history], columns=list(COLUMNS))

    def events_between(self, start: float | None = None, end: float | None = None) -> list[dict]:
        """The progress events of batches *planned* between `start` and `end` s since the demo started (planning
        time, because a batch's latestOffset is read when it is planned)."""
        return [e for b, e in zip(self.history, self.events)
                if (start is None or b["planned"] >= start) and (end is None or b["planned"] < end)]

    def lag_at(self, t: float) -> int:
        """The broker-measured total lag at the poll closest to `t` seconds since start."""
        return min(self.samples, key=lambda s: abs(s["t"] - t))["lag"] if self.samples else 0

    def caught_up_at(self, after: float, threshold: int) -> float | None:
        """The first poll after `after` seconds at which the total lag was at most `threshold` (None: never)."""
        return next((s["t"] for s in self.samples if s["t"] > after and s["lag"] <= threshold), None)

    def lag_when(self, moment: float) -> int:
        """The broker-measured total lag at the poll closest to `moment`, a `time.monotonic()` value: two demos
        compared at one moment, whatever their own clocks."""
        return self.lag_at(moment - self.state.t0)

    def final_lag(self) -> int:
        """The broker-measured total lag at the demo's last poll."""
        return self.samples[-1]["lag"] if self.samples else 0

    def largest_batch(self) -> int:
        """The largest batch the demo's query read (rows)."""
        return max((b["rows"] for b in self.history), default=0)

    # -- knobs ----------------------------------------------------------------------------------------------------
    def cap_honoured_after(self) -> float | None:
        """Seconds from the last cap change to the first batch, planned after it, whose rows stay within the new cap
        (None until there is one). The batch a stop interrupted is replayed first with its old range, so it may not
        count: that is why this is not simply the first batch after the restart."""
        changes = [(at, text) for at, text in self.restarts if "cap" in text]
        if not changes:
            return None
        at = changes[-1][0]
        for b in self.history:
            if b["time"] is not None and b["time"] >= at and b["rows"] and b["cap"] and b["rows"] <= b["cap"]:
                return round(b["time"] - at, 2)
        return None

    def now(self) -> float:
        """Seconds since the demo started (0 before start)."""
        return self.state.now()

    # -- life cycle -----------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Show controls, readout and chart in one box, start producer, query and poller; returns at once (None,
        so that a cell ending in `demo.start()` shows the box only, not a line of text under it)."""
        from streamlab.lab.broker import ensure_broker
        from streamlab.lab.topics import partition_count

        self.bootstrap = self.bootstrap or ensure_broker()
        self.state.stream["partitions"] = partition_count(self.topic, self.bootstrap)
        cap = duration_cap()
        if cap is not None and not (self.stop_when_caught_up is not None or self.stop_after_script is not None):
            # nobody plays: the script's story, then a few seconds, is enough (a script counted in batches plays
            # within the first seconds)
            steps = [step[0] + 10 for step in self.script] if self.script_in == "seconds" else []
            self.duration = min(self.duration, max([cap, *steps]))
        self.controls._make_widgets()
        self.loop.start()
        self.controls._show()
        self.loop.follow()

    def stop_soon(self) -> None:
        """Ask the demo to end (the poller stops query and producer); returns at once."""
        self.state.done.set()
        self.state.wake.set()

    def stop(self) -> None:
        """End the demo now: stop its query and producer and disable its controls (safe to call twice)."""
        self.stop_soon()
        thread = self.loop.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=60)
        self.loop._finish()
        if thread is not None and thread.is_alive():  # the poller was stuck in a client call
            thread.join(timeout=15)

    cleanup = stop

    def wait(self):
        """Wait until the demo has ended, leave a static chart as the box's saved output, and return `batches`.

        The controls act while it waits. ■ (KeyboardInterrupt) stops the demo and says so in one line; a broker
        that stopped answering ends it at once with the line that names the fix."""
        try:
            while self.loop.thread is not None and self.loop.thread.is_alive():
                self.loop.thread.join(0.25)  # short joins: ■ is answered at once
            self.stop()
            self.controls._freeze()
        except KeyboardInterrupt:
            # The poller stops query and producer by itself (its `finally`); the cell answers at once, in one line.
            self.drain = False  # ■ means now: no waiting for the query to read what was sent
            self.stop_soon()
            self.show_ended()
            self.warn("stopped by ■ (interrupt): the chart shows what the demo ran until then")
            raise LabError(f"The demo on {self.topic} was interrupted and stopped after {len(self.history)} batches; "
                           "run its cells again to start it anew.") from None
        if self.lost is not None:
            raise LabError(self.lost)
        return self.batches

    def run(self):
        """start() then wait() in one cell (for scripts: in a notebook the controls act only between cells)."""
        self.start()
        return self.wait()

    # -- the loop's steps a configuration may add to (ControlledDemo, CrashDemo), and what it runs --------------------
    def _apply_script(self, now: float) -> None:
        """The script's steps that are due at `now` (the loop asks it at every look)."""
        self.loop._apply_script(now)

    def _drain(self, timeout: float = 60.0) -> None:
        """Stop the producers and let the query read what they sent (the loop asks it at the end, with `drain`)."""
        self.loop._drain(timeout)

    def _new_producer(self):
        """A new producer on the main topic (the controls make one after adding partitions)."""
        return self.loop._new_producer()

    def time_left(self, now: float) -> float | None:
        """Seconds until the demo ends by itself (None before its first batch)."""
        return self.loop.time_left(now)

    def add_event(self, p: dict, now: float, latest: dict | None = None) -> dict:
        """Record one progress event (a dict) seen at `now` s; returns its row."""
        return self.loop.add_event(p, now, latest)

    # -- the controls' moves, under the demo's names (notebooks and checks call them on the demo) ------------------
    def set(self, knob: str, value) -> None:
        """Turn a knob as its control would: the rate at once, partitions by a CreatePartitions request, the cap,
        trigger, cost and minPartitions by restarting the query on the same checkpoint."""
        self.controls.set(knob, value)

    def checked(self, knob: str, value):
        """The value `knob` would take, or a KnobError (one line, naming the knob) for one it cannot."""
        return self.controls.checked(knob, value)

    def burst(self, n: int | None = None) -> None:
        """Make the producer send `n` extra records at once (the burst button's size by default)."""
        self.controls.burst(n)

    def extend(self, seconds: float = 30.0) -> None:
        """Let a running demo run `seconds` longer."""
        self.controls.extend(seconds)

    def warn(self, message: str) -> None:
        """Show a warning line under the readout (e.g. a LagMonitor's on_warning); safe from any thread."""
        self.controls.warn(message)

    def show_ended(self) -> None:
        """Grey out the controls and say `ended` in the readout."""
        self.controls.show_ended()

    def _freeze(self) -> None:
        """The box's saved output: the live box for the browser, the chart as a PNG beside it (CrashDemo's wait())."""
        self.controls._freeze()

    # -- what it shows --------------------------------------------------------------------------------------------
    def readout(self, now: float) -> str:
        """The one line of current numbers under the controls."""
        last = self.history[-1] if self.history else None
        sample = self.samples[-1] if self.samples else {"lag": 0, "partitions": {}}
        prefix = "p" if len(self.topics) == 1 else ""
        parts = " / ".join(f"{prefix}{k} {v}" for k, v in sample["partitions"].items())
        left = self.time_left(now)
        batch = f"last batch {last['rows']} rows in {last['duration_ms']} ms" if last else "last batch -"
        rate = self.state.stream["rate"] + sum(s.rate for s in self.sources.values())
        extra = f" · {self.status(self)}" if self.status is not None else ""
        if self.show_offsets:
            extra += f" · {self.offsets_text()}"
        return (f"t={now:5.1f}s · producer {rate} rec/s · {self.knobs_text()} · "
                f"batches {len(self.history)} · {batch} · lag {sample['lag']} ({parts}){extra}"
                + (f" · {left:.0f} s left" if left is not None and not self.ended else ""))

    def readout_html(self, now: float, ended: bool = False) -> str:
        """The readout as the browser shows it: its parts, each kept whole, wrapping between parts (at " · ") on a
        narrow page, never inside one; its text is the same line as `readout()` (the browser tests read it)."""
        import html

        parts = self.readout(now).split(" · ") + (["ended"] if ended else [])
        spans = " · ".join(f'<span style="white-space:nowrap">{html.escape(part)}</span>' for part in parts)
        return f'<code style="white-space:normal;line-height:1.6">{spans}</code>'

    def offsets_text(self) -> str:
        """The last planned batch's offset ranges, as its `offsets/N` file and the one before it give them:
        "offsets/N: p0 120→220 (100) · p1 …"."""
        from streamlab.observe import checkpoint as ck

        try:
            ids = ck.batches(self.checkpoint)
            if not ids:
                return "offsets/-: no batch planned yet"
            last = ck.offsets(self.checkpoint, ids[-1]).kafka().get(self.topic, {})
            before = ck.offsets(self.checkpoint, ids[-2]).kafka().get(self.topic, {}) if len(ids) > 1 else {}
        except (OSError, ValueError):  # a file being written: the next poll reads it whole
            return "offsets/…"
        start = before or {}
        parts = [f"p{p} {start.get(p, '?')}→{end}" + (f" ({end - start[p]})" if p in start else "")
                 for p, end in sorted(last.items())]
        return f"offsets/{ids[-1]}: " + " ".join(parts)

    def knobs_text(self) -> str:
        """Every knob in force on one line: the cap, trigger, cost, partitions, minPartitions, the demo's own."""
        s = self.state.stream
        parts = [f"cap {s['cap']}" if s["cap"] else "no cap",
                 f"trigger {s['trigger_seconds']:g} s" if s["trigger_seconds"] else "trigger as fast as possible"]
        if s["cost_ms"] or "cost" in self.controls.names:
            parts.append(f"cost {s['cost_ms'] * 1000:g} µs/rec")
        if "partitions" in self.controls.names or "tasks" in self.charts:
            parts.append(f"partitions {s['partitions']}")
        if s["min_partitions"] or "min_partitions" in self.controls.names:
            parts.append(f"minPartitions {s['min_partitions'] or 'unset'}")
        if s["min_offsets"] or "min_offsets" in self.controls.names or "max_delay" in self.controls.names:
            parts.append(f"minOffsetsPerTrigger {s['min_offsets'] or 'unset'}")
            parts.append(f"maxTriggerDelay {s['max_delay_seconds']:g} s" if s["max_delay_seconds"]
                         else "maxTriggerDelay 15 min")
        parts += [f"{k.label.split(' (')[0]} {self.knob_values[k.name]}" for k in self.knobs.values()]
        wanted = {**self.state.restarting, **self.state.wanted}
        if wanted:  # moved, in force at the restart that is under way
            parts.append("restarting with " + ", ".join(_settings.knob_text(k, v) for k, v in wanted.items()))
        return " · ".join(parts)

    def figure(self):
        """Spark UI's charts of this demo on one time axis, as a matplotlib Figure."""
        title = self.title or f"topic {self.topic}"
        return figure({title: self}, charts=tuple(dict.fromkeys((*self.charts, *self.panels))),  # a panel named once
                      title=f"{title}\n{settings_text(self.state.stream.as_dict())}", lag_lines=self.lag_lines)

    def png(self) -> bytes:
        """The chart as PNG bytes."""
        return png(self.figure())

    def static(self):
        """The chart as an IPython Image (for a cell's saved output)."""
        from IPython.display import Image

        return Image(self.png())

    def __repr__(self) -> str:
        phase = "ended" if self.ended else "running" if self.state.t0 else "not started"
        return (f"LiveDemo({self.topic!r}, {settings_text(self.state.stream.as_dict())}, {len(self.history)} batches, "
                f"{phase})")


class _QueryHandle:
    """Whatever query the demo runs right now (a restart replaces it): lastProgress, recentProgress, isActive."""

    def __init__(self, demo: LiveDemo):
        self._demo = demo

    @property
    def lastProgress(self):
        query = self._demo._query
        return None if query is None else query.lastProgress

    @property
    def recentProgress(self):
        query = self._demo._query
        return [] if query is None else query.recentProgress

    @property
    def isActive(self) -> bool:
        return not self._demo.ended  # a monitor made before start() must not stop at once


# What the loop runs and what the controls hold, under the demo's names: notebooks, checks, module configurations
# and tests read (and set) them on the demo.
LOOP_NAMES = ("duration", "starting_offsets", "bootstrap", "stop_after_script", "stop_when_caught_up", "sources",
              "topics", "value_fn", "key_fn", "label", "on_batch", "restart_on", "drain", "checkpoint")
CONTROL_NAMES = ("knobs", "knob_values", "script", "script_in", "script_until_touched", "ranges", "burst_size",
                 "alert_text", "live_controls", "on_screen", "box",
                 # the widgets and the view's steps, which the unit tests drive as the browser and the loop would
                 "_sliders", "_buttons", "_readout", "_image", "_handle", "_make_widgets", "_show_readout", "_play")


def _held(part: str, name: str) -> property:
    """A property of the demo that reads and writes the attribute `name` of the part it holds as `part`."""
    return property(lambda demo: getattr(getattr(demo, part), name),
                    lambda demo, value: setattr(getattr(demo, part), name, value),
                    doc=f"The demo's `{part}.{name}`.")


for _name in LOOP_NAMES:
    setattr(LiveDemo, _name, _held("loop", _name))
for _name in CONTROL_NAMES:
    setattr(LiveDemo, _name, _held("controls", _name))
add_aliases(LiveDemo)  # demo.timeline, demo._t0, demo._settings, … read and write demo.state
