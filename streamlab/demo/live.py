"""The live demo every module uses: a producer, a real query on the Kafka source, controls, and Spark UI's charts.

`LiveDemo` feeds a topic with a `BackgroundProducer`, runs a Structured Streaming query on it, and polls the
query's progress events from one background thread. It draws, on one shared time axis, the charts of Spark UI's
Structured Streaming tab that engineers read: input rate against process rate, batch duration against the trigger
interval, rows per batch against the cap, and lag (total or per partition); optionally tasks per batch. A vertical
marker shows each restart of the query.

Controls act on real knobs. The producer rate (and a burst) changes at once. `maxOffsetsPerTrigger`, the trigger
interval, `minPartitions` and the demo's cost per record are read when a query *starts*, exactly as in Spark, so
moving them restarts the query on the same checkpoint: it resumes where it was, batches planned after the restart
use the new values, and the chart keeps its history across the restart. Adding topic partitions is a real
CreatePartitions request, seen by the running query at its next trigger (no restart).

Why widgets and start()/wait() in two cells: output written from a background thread is routed unreliably since
ipykernel 7, but a widget's value set from any thread reaches the browser; and a kernel applies widget changes
only while no cell runs. So start() shows the box and returns; the demo runs in the background and ends by itself
after `duration` seconds of batches (the "+30 s" button extends it); wait() in a later cell collects the result
and replaces the box's saved output with a static picture, so a headless run still shows the chart.

Extension points, so that a module's own demo is a configuration of this one (see `LiveDemo`): more source
topics with their own producers and rate sliders (`sources`), sliders on knobs the configuration defines (`knobs`),
a function called for every micro-batch from the demo's own foreachBatch (`on_batch`), panels of its own data on
the shared time axis (`panels`), restarts after failures injected on purpose (`restart_on`), a last step that lets
the query read everything produced (`drain`), and a few words of its own in the readout (`status`).
"""
from __future__ import annotations

import atexit
import os
import re
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Callable

from streamlab.observe import lag as _lag
from streamlab.lab.lifecycle import new_checkpoint
from streamlab.demo.widgets import png, slider

PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")
RESTART_COLOR = "#c44e52"
FIRST_BATCH_WAIT_S = 90  # how long a demo waits for its first batch before its own duration starts
REDRAW_EVERY_S = 1.0  # a four-panel figure costs ~0.1 s to draw; the machine is shared
GRADING_SECONDS = 20  # under the grader nobody plays: a demo runs this long after its script at most

CHARTS = ("rates", "duration", "rows", "lag")  # Spark UI's order: rates, then duration, then rows
KNOBS = ("rate", "cap", "trigger", "cost", "partitions", "min_partitions")
RESTARTING = ("cap", "trigger", "cost", "min_partitions")  # read when a query starts
COLUMNS = ("batch", "time", "rows", "cap", "duration_ms", "input_rate", "process_rate", "lag", "restart", "run",
           "trigger_s", "planned", "progress_lag", "max_behind", "tasks", "partitions", "min_partitions",
           "partitions_read")

_live: "weakref.WeakSet[LiveDemo]" = weakref.WeakSet()


@dataclass
class Source:
    """One more topic the demo's query reads, fed by its own producer (record i = `value_fn(i)`, key `key_fn(i)`),
    with its own rate slider, labelled `label`, when "rate" is a control."""

    rate: int = 100
    value_fn: Callable | None = None
    key_fn: Callable | None = None
    label: str = ""


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
class Panel:
    """A chart panel of the configuration's own data on the demo's time axis: `draw(ax, demo, shift)` draws it,
    `shift` added to every time in seconds since the demo started."""

    title: str
    ylabel: str
    draw: Callable


def _settings_text(s: dict) -> str:
    cap = "no cap" if not s.get("cap") else f"maxOffsetsPerTrigger {s['cap']:,}"
    trigger = "trigger: as fast as possible" if not s.get("trigger_seconds") else f"trigger {s['trigger_seconds']:g} s"
    parts = [cap, trigger]
    if s.get("cost_ms"):
        parts.append(f"cost {s['cost_ms'] * 1000:g} µs/record")
    if s.get("min_partitions"):
        parts.append(f"minPartitions {s['min_partitions']}")
    return " · ".join(parts)


def _knob_text(key: str, value) -> str:
    return {"cap": f"cap {value:,}" if value else "no cap",
            "trigger_seconds": f"trigger {value:g} s" if value else "trigger as fast as possible",
            "cost_ms": f"cost {value * 1000:g} µs", "min_partitions": f"minPartitions {value or 'unset'}"}.get(
        key, f"{key} {value}")


class LiveDemo:
    """Producer → Kafka → a Structured Streaming query, with controls, a one-line readout and Spark UI's charts.

    controls: which of "rate", "cap", "trigger", "cost", "partitions", "min_partitions" get a slider, plus
    "burst" for a burst button (of `burst` records). `script` moves knobs by itself: steps `(at, knob, value)`,
    `(at, rate)` or `(at, "burst", n)`, `at` counted in seconds after the first batch with data (or in batches
    with `script_in="batches"`); with `script_until_touched` a person's move cancels the rest of it.
    The demo ends `duration` s after its first batch with data (+30 s per click), `stop_after_script` batches after
    the last step, when the lag is at most `stop_when_caught_up` (a number, or "cap": the cap in force) once the
    script is done, on "stop", on cleanup(), or when the kernel exits. Then its controls are disabled, its
    query and producer stopped. What later cells read: `batches` (a DataFrame, one row per batch, also
    returned by wait()), `settings` / `values` (the knobs in force), `restarts`, `samples` (broker lag at each poll),
    `events` (every progress event, across restarts), `checkpoint`, `topic`.

    Extension points (all optional; without them the demo is the one modules 0-5 use):
    - `sources` {topic: Source}: more topics read by the same query, each fed by its own producer, with a rate
      slider each; `value_fn` / `key_fn` / `label` make the main topic's records and name its slider.
    - `knobs` [Knob]: sliders on the configuration's own knobs; `set(name, value)` and the script move them too.
    - `on_batch(batch_df, batch_id)`: called for every micro-batch from the demo's own foreachBatch (instead of
      its row count); what it raises fails the query.
    - `panels` {name: Panel}: extra chart panels under Spark UI's, on the shared time axis, restarts marked.
    - `restart_on` (strings): a query that fails with one of them in its error is restarted on the same checkpoint
      at once, marked on the chart like any restart (an injected crash); Spark's log of it is silenced.
    - `drain`: at the end, stop the producers first and let the query read all they sent (at most 60 s).
    - `status(demo)`: a few words appended to the readout.
    """

    def __init__(self, spark, topic: str, *, rate: int = 200, max_offsets: int | None = None,
                 trigger_seconds: float = 1.0, cost_ms: float = 0.0, min_partitions: int = 0,
                 duration: float = 60.0, starting_offsets: str = "latest", controls=("rate", "cap"),
                 burst: int = 5_000, script=(), script_in: str = "seconds", script_until_touched: bool = False,
                 stop_after_script: int | None = None, stop_when_caught_up=None, charts=CHARTS,
                 lag_lines: str = "partitions", title: str = "", bootstrap: str | None = None,
                 sources: dict | None = None, value_fn: Callable | None = None, key_fn: Callable | None = None,
                 label: str = "", knobs=(), on_batch: Callable | None = None, panels: dict | None = None,
                 restart_on=(), drain: bool = False, status: Callable | None = None):
        self.spark, self.topic, self.title = spark, topic, title
        self.sources = dict(sources or {})
        self.topics = [topic, *(t for t in self.sources if t != topic)]
        self.value_fn, self.key_fn, self.label = value_fn, key_fn, label or topic
        self.knobs = {k.name: k for k in knobs}
        self.knob_values = {k.name: k.value for k in knobs}  # the configuration's knobs, as last moved
        self.on_batch, self.panels = on_batch, dict(panels or {})
        self.restart_on, self.drain, self.status = tuple(restart_on), drain, status
        self.bootstrap = bootstrap
        self._settings = {"rate": int(rate), "cap": int(max_offsets) if max_offsets else None,
                          "trigger_seconds": float(trigger_seconds), "cost_ms": float(cost_ms),
                          "min_partitions": int(min_partitions or 0), "partitions": None}
        self.duration = float(duration)
        self.starting_offsets = starting_offsets
        self.controls = tuple(controls)
        self.burst_size = int(burst)
        self.script = [tuple(step) for step in script]
        self.script_in, self.script_until_touched = script_in, script_until_touched
        self.stop_after_script, self.stop_when_caught_up = stop_after_script, stop_when_caught_up
        self.charts, self.lag_lines = tuple(charts), lag_lines
        self.checkpoint = new_checkpoint("demo")  # kept after the demo ends; cleanup() deletes it
        # what the demo saw
        self.history: list[dict] = []  # one plain dict per batch (the rows of `batches`)
        self.events: list[dict] = []  # every progress event, across restarts
        self.samples: list[dict] = []  # the broker-measured lag at each poll: {"t", "lag", "partitions"}
        self.restarts: list[tuple[float, str]] = []  # (seconds since start, what changed)
        self.marks: list[tuple[float, str]] = []  # bursts, script steps, the first batch
        self.applied: list = []  # (seconds since start, script step) as the script applied them
        self.timeline: list[tuple[float, dict]] = []  # (seconds since start, settings in force from then)
        self.live_from: float | None = None  # seconds from start to the first batch with data
        self.alert_text = ""
        self.error: str | None = None
        self.ended = False
        self.query = _QueryHandle(self)
        # plumbing
        self._lock = threading.RLock()
        self._done = threading.Event()
        self._wake = threading.Event()
        self._pending_restart: list[str] = []
        self._pending_script = sorted(self.script, key=lambda step: step[0])
        self._auto = False  # True while the script moves a control, so its move is not taken for a person's
        self._touched = False
        self._run = 0
        self._run_stop = threading.Event()
        self._tasks: dict = {}  # (run, batch id) -> tasks, written by foreachBatch
        self._query = self._producer = self._consumer = self._thread = None
        self._producers: dict = {}  # the `sources`' producers, by topic
        self._quiet = None
        self._t0 = self._wall0 = 0.0
        self._position: dict = {}
        self._seen = -1
        self._last_draw = 0.0
        self._handle = None
        self._extra_s = 0.0
        self._wanted: dict = {}  # restarting knobs moved, applied by the next restart
        self._sliders: dict = {}
        self._buttons: list = []
        self._widgets_made = False
        self._stop_at_batches: int | None = None

    # -- what later cells read -------------------------------------------------------------------------------------
    @property
    def settings(self) -> dict:
        """The knobs in force now (after the last restart): rate, cap, trigger_seconds, cost_ms, min_partitions,
        partitions."""
        return dict(self._settings)

    @property
    def values(self) -> dict:
        """The same as `settings`: the values actually in force, whatever the controls were moved to."""
        return self.settings

    @property
    def max_offsets(self) -> int | None:
        """The cap in force (maxOffsetsPerTrigger; None: no cap)."""
        return self._settings["cap"]

    @property
    def rate(self) -> int:
        """The producer rate in force (records/s)."""
        return self._settings["rate"]

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
        return round(time.monotonic() - self._t0, 2) if self._t0 else 0.0

    def set(self, knob: str, value) -> None:
        """Turn a knob as its control would: the rate at once, partitions by a CreatePartitions request, the cap,
        trigger, cost and minPartitions by restarting the query on the same checkpoint."""
        if self.ended:
            return  # nothing acts after the demo ended
        if knob not in KNOBS and knob not in self.knobs and knob.removeprefix("rate:") not in self.sources:
            raise ValueError(f"unknown knob {knob!r}; one of {(*KNOBS, *self.knobs, *self._rate_knobs())}")
        if not self._auto:
            self._touched = True
            if self.script_until_touched:
                self._pending_script = []
        with self._lock:
            if knob == "rate":
                self._settings["rate"] = int(value)
                if self._producer is not None:
                    self._producer.set_rate(int(value))
                self._note(f"{int(value)}/s", restart=False)
            elif knob == "partitions":
                self._grow(int(value))
            elif knob.startswith("rate:"):
                source = self.sources[knob.removeprefix("rate:")]
                source.rate = int(value)
                if knob[5:] in self._producers:
                    self._producers[knob[5:]].set_rate(int(value))
                self._note(f"{source.label or knob[5:]} {int(value)}/s", restart=False)
            elif knob in self.knobs:
                self.knob_values[knob] = value
                if self.knobs[knob].apply is not None:
                    self.knobs[knob].apply(value)
                if self.knobs[knob].restart:
                    self._pending_restart.append(knob)
                else:
                    self._note(f"{knob.replace('_', ' ')} {value}", restart=False)
            else:
                key = {"cap": "cap", "trigger": "trigger_seconds", "cost": "cost_ms",
                       "min_partitions": "min_partitions"}[knob]
                self._wanted[key] = value
                self._pending_restart.append(knob)
        self._wake.set()

    def _rate_knobs(self) -> list[str]:
        return [f"rate:{t}" for t in self.sources]

    def burst(self, n: int | None = None) -> None:
        """Make the producer send `n` extra records at once (the burst button's size by default)."""
        n = self.burst_size if n is None else int(n)
        if self.ended or self._producer is None or not self._producer.running:
            return
        self._producer.burst(n)
        self.marks.append((self.now(), f"burst {n:,}"))
        self._wake.set()

    def extend(self, seconds: float = 30.0) -> None:
        """Let a running demo run `seconds` longer."""
        if not self.ended:
            self._extra_s += seconds

    def warn(self, message: str) -> None:
        """Show a warning line under the readout (e.g. a LagMonitor's on_warning); safe from any thread."""
        self.alert_text = message
        if self._widgets_made:
            self._alert.value = f"<b style='color:{RESTART_COLOR}'>{message}</b>"

    def _note(self, text: str, restart: bool) -> None:
        if self._t0:
            self.timeline.append((self.now(), self.settings))
            if not restart and not self._auto:
                self.marks.append((self.now(), text))

    def _grow(self, wanted: int) -> None:
        from streamlab.lab.topics import add_partitions

        current = self._settings["partitions"] or 0
        if wanted <= current:  # Kafka can add partitions, never remove them
            if "partitions" in self._sliders:
                self._sliders["partitions"].value = current
            return
        add_partitions(self.topic, wanted, self.bootstrap)
        self._settings["partitions"] = wanted
        self._note(f"{wanted} partitions", restart=False)
        if self._producer is not None:  # round-robin over every partition, the new ones included
            self._producer.stop()
            self._producer = self._new_producer()

    # -- the widget box -------------------------------------------------------------------------------------------
    def _make_widgets(self) -> None:
        import ipywidgets as W

        s = self._settings
        if "rate" in self.controls:
            name = f"{self.label} (rec/s)" if self.sources else "producer rate (rec/s)"
            self._sliders["rate"] = slider(name, s["rate"], 0, 5000, 50)
            for topic, source in self.sources.items():
                self._sliders[f"rate:{topic}"] = slider(f"{source.label or topic} (rec/s)", source.rate, 0, 5000, 50)
        if "cap" in self.controls:
            self._sliders["cap"] = slider("maxOffsetsPerTrigger (0=none)", s["cap"] or 0, 0, 10_000, 100)
        if "trigger" in self.controls:
            self._sliders["trigger"] = slider("trigger interval (ms)", int(s["trigger_seconds"] * 1000), 0, 5000, 250)
        if "cost" in self.controls:
            self._sliders["cost"] = slider("cost per record (µs)", int(s["cost_ms"] * 1000), 0, 5000, 100)
        if "partitions" in self.controls:
            self._sliders["partitions"] = slider("topic partitions", s["partitions"] or 1, 1, 12)
        if "min_partitions" in self.controls:
            self._sliders["min_partitions"] = slider("minPartitions (0 = unset)", s["min_partitions"], 0, 16)
        for knob in self.knobs.values():
            if knob.options:
                self._sliders[knob.name] = W.SelectionSlider(
                    options=list(knob.options), value=knob.value, description=knob.label, continuous_update=False,
                    style={"description_width": "210px"}, layout=W.Layout(width="470px"))
            else:
                self._sliders[knob.name] = slider(knob.label, knob.value, knob.lo, knob.hi, knob.step)
        convert = {"cap": lambda v: v or None, "trigger": lambda v: v / 1000, "cost": lambda v: v / 1000,
                   **{name: (lambda v: v) for name in self.knobs}}
        for knob, widget in self._sliders.items():
            widget.observe(lambda change, k=knob: self.set(k, convert.get(k, int)(change["new"])), names="value")
        if "burst" in self.controls:
            b = W.Button(description=f"burst {self.burst_size:,}", icon="bolt", layout=W.Layout(width="140px"))
            b.on_click(lambda _: self.burst())
            self._buttons.append(b)
        more = W.Button(description="+30 s", icon="clock-o", layout=W.Layout(width="90px"))
        more.on_click(lambda _: self.extend(30))
        stop = W.Button(description="stop demo", icon="stop", layout=W.Layout(width="120px"))
        stop.on_click(lambda _: self.stop_soon())
        self._buttons += [more, stop]
        self._readout = W.HTML(value="<code>not started</code>")
        self._alert = W.HTML(value="")
        self._image = W.Image(format="png", layout=W.Layout(max_width="100%"))
        sliders = list(self._sliders.values())
        columns = W.HBox([W.VBox(sliders[0::2]), W.VBox(sliders[1::2])]) if len(sliders) > 2 else W.VBox(sliders)
        self.box = W.VBox([columns, W.HBox(self._buttons), self._readout, self._alert, self._image])
        self._widgets_made = True

    def _show(self) -> None:
        from IPython.display import display

        bundle = self.box._repr_mimebundle_()
        bundle["text/plain"] = f"LiveDemo on {self.topic} (runs in the background; the next cell waits for it)"
        self._handle = display(bundle, raw=True, display_id=True)

    # -- life cycle -----------------------------------------------------------------------------------------------
    def start(self) -> "LiveDemo":
        """Show controls, readout and chart in one box, start producer, query and poller; returns at once."""
        from kafka import KafkaConsumer

        from streamlab.lab.broker import ensure_broker
        from streamlab.lab.topics import partition_count

        self.bootstrap = self.bootstrap or ensure_broker()
        self._settings["partitions"] = partition_count(self.topic, self.bootstrap)
        if os.environ.get("STREAMLAB_GRADING") == "1" and self.script_in == "seconds" and not (
                self.stop_when_caught_up is not None or self.stop_after_script is not None):
            # nobody plays under the grader: the script's story, then a few seconds, is enough
            self.duration = min(self.duration, max([GRADING_SECONDS, *(step[0] + 10 for step in self.script)]))
        self._make_widgets()
        self._consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False)
        # Before its first batch a query starting from "latest" is at the offsets Kafka had when it started.
        self._position = self._latest() if self.starting_offsets == "latest" else {}
        self._t0, self._wall0 = time.monotonic(), time.time()  # the clock starts with the producer
        self.timeline.append((0.0, self.settings))
        self._producer = self._new_producer()
        for topic, source in self.sources.items():
            self._producers[topic] = self._source_producer(topic, source)
        if self.restart_on:  # failures on purpose: the chart shows them, Spark's log need not
            from streamlab.observe.replay import quiet_query_errors

            self._quiet = quiet_query_errors(self.spark)
            self._quiet.__enter__()
        self._query = self._start_query()
        _live.add(self)
        self._show()
        self._thread = threading.Thread(target=self._run_poller, name="streamlab-live-demo", daemon=True)
        self._thread.start()
        return self

    def stop_soon(self) -> None:
        """Ask the demo to end (the poller stops query and producer); returns at once."""
        self._done.set()
        self._wake.set()

    def stop(self) -> None:
        """End the demo now: stop its query and producer and disable its controls (safe to call twice)."""
        self.stop_soon()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=60)
        self._finish()

    cleanup = stop

    def wait(self):
        """Wait until the demo has ended, leave a static chart as the box's saved output, and return `batches`."""
        if self._thread is not None:
            self._thread.join()
        self.stop()
        self._freeze()
        return self.batches

    def run(self):
        """start() then wait() in one cell (for scripts: in a notebook the controls act only between cells)."""
        self.start()
        return self.wait()

    def _freeze(self) -> None:
        # The live box stays for the browser; the PNG is what nbconvert, a saved notebook or no widget manager shows.
        if self._handle is None or not self._widgets_made:
            return
        bundle = self.box._repr_mimebundle_()
        bundle["image/png"] = self.png()
        bundle.pop("text/plain", None)
        self._handle.update(bundle, raw=True)

    def _new_producer(self):
        from streamlab.lab.producer import BackgroundProducer

        # With a partitions control, write round-robin to every partition so each has records in every batch.
        parts = range(self._settings["partitions"]) if "partitions" in self.controls else None
        return BackgroundProducer(self.topic, rate=self._settings["rate"], partitions=parts, key_fn=self.key_fn,
                                  value_fn=self.value_fn, bootstrap=self.bootstrap).start()

    def _source_producer(self, topic: str, source: Source):
        from streamlab.lab.producer import BackgroundProducer

        return BackgroundProducer(topic, rate=source.rate, key_fn=source.key_fn, value_fn=source.value_fn,
                                  bootstrap=self.bootstrap).start()

    def _start_query(self):
        s = self._settings
        reader = (self.spark.readStream.format("kafka")
                  .option("kafka.bootstrap.servers", self.bootstrap)
                  .option("subscribe", ",".join(self.topics))
                  .option("startingOffsets", self.starting_offsets))
        if s["cap"]:
            reader = reader.option("maxOffsetsPerTrigger", str(s["cap"]))
        if s["min_partitions"]:
            reader = reader.option("minPartitions", str(s["min_partitions"]))
        cost_s, stop, run, tasks = s["cost_ms"] / 1000, self._run_stop, self._run, self._tasks
        count_tasks, on_batch = "tasks" in self.charts, self.on_batch

        def process(batch_df, batch_id):
            if count_tasks:
                tasks[(run, batch_id)] = batch_df.rdd.getNumPartitions()  # the read tasks of this batch
            if on_batch is not None:
                on_batch(batch_df, batch_id)
            rows = batch_df.count() if on_batch is None or cost_s else 0
            if cost_s and rows:
                stop.wait(rows * cost_s)  # the simulated work ends early when the query is stopped

        writer = reader.load().writeStream.foreachBatch(process).option("checkpointLocation", self.checkpoint)
        if s["trigger_seconds"]:
            writer = writer.trigger(processingTime=f"{s['trigger_seconds']} seconds")
        return writer.start()

    def _stop_query(self) -> None:
        query = self._query
        if query is None:
            return
        self._run_stop.set()
        deadline = time.monotonic() + 10  # stop between batches: a batch cut mid-write logs alarming traces
        try:
            while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
                time.sleep(0.02)
            self._collect(query)  # the last batches of this run
        finally:
            query.stop()

    def _restart(self) -> None:
        with self._lock:
            knobs, self._pending_restart = self._pending_restart, []
            wanted, self._wanted = self._wanted, {}
        if not knobs:
            return
        self._stop_query()
        before = self.settings
        for key, value in wanted.items():
            self._settings[key] = (int(value) if value else None) if key == "cap" else value
        changed = [_knob_text(k, self._settings[k]) for k in wanted if self._settings[k] != before[k]]
        changed += [f"{self.knobs[k].label} {self.knob_values[k]}" for k in dict.fromkeys(knobs) if k in self.knobs]
        self._relaunch("restart: " + (", ".join(changed) or "same settings"))

    def _relaunch(self, label: str) -> None:
        """Start the query again on the same checkpoint, as a new run, marked `label` on the chart."""
        self._run += 1
        self._run_stop = threading.Event()
        self._seen = -1
        at = self.now()  # before start(): the new query may plan its first batch before start() returns
        self._query = self._start_query()
        self.restarts.append((at, label))
        self.timeline.append((at, self.settings))

    def _restart_after(self, query, exc) -> bool:
        """Restart a query that failed with one of `restart_on` in its error on the same checkpoint (True), else
        leave it failed (False)."""
        text = str(exc)
        marker = next((m for m in self.restart_on if m in text), None)
        if marker is None:
            return False
        self._collect(query)  # the batches it finished before the failure
        line = next(line for line in text.splitlines() if marker in line)
        # its first clause: a marker's label stands on the chart, vertically, and must fit a panel's height
        reason = re.split(r"\s*SQLSTATE|[,;)'\"\\]", line[line.index(marker) + len(marker):])[0].strip(" :")[:30]
        self._relaunch(f"crash: {reason or marker}")
        return True

    def _drain(self, timeout: float = 60.0) -> None:
        """Stop the producers and let the query read what they sent (it stops between batches afterwards)."""
        for producer in [self._producer, *self._producers.values()]:
            if producer is not None:
                producer.stop()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            query = self._query
            if query is None or not query.isActive:
                if query is not None and query.exception() is not None and self._restart_after(
                        query, query.exception()):
                    continue
                return
            self._collect(query)
            latest = self._latest()
            if all(self._position.get(k, 0) >= v for k, v in latest.items() if v):
                self._sample(self.now())  # the readout's last lag: 0
                return
            time.sleep(0.3)

    def _latest(self) -> dict:
        from kafka import TopicPartition

        wanted = [TopicPartition(t, p) for t in self.topics for p in (self._consumer.partitions_for_topic(t) or set())]
        ends = self._consumer.end_offsets(wanted)
        return {self._key(tp.topic, tp.partition): off for tp, off in ends.items()}

    def _key(self, topic: str, partition: int):
        """A partition's key in positions and samples: its number (one topic), or "<label>:<number>" (several)."""
        if len(self.topics) == 1:
            return partition
        source = self.sources.get(topic)
        return f"{(source.label if source else self.label) or topic}:{partition}"

    def _planned(self, progress: dict, default: float) -> float:
        from datetime import datetime

        try:
            stamp = datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00")).timestamp()
        except (KeyError, TypeError, ValueError, AttributeError):
            return default
        return round(stamp - self._wall0, 2)

    def _collect(self, query) -> None:
        now = self.now()
        for raw in list(query.recentProgress):
            p = _lag._as_dict(raw)
            if p.get("batchId", -1) <= self._seen or p.get("numInputRows") is None:
                continue
            self._seen = p["batchId"]
            self.add_event(p, now)

    def add_event(self, p: dict, now: float, latest: dict | None = None) -> dict:
        """Record one progress event (a dict) seen at `now` s; returns its row (the poller and the tests call it)."""
        self.events.append(p)
        sources = p.get("sources") or [{}]
        source = sources[0]
        starts, ends = _lag._offsets(source.get("startOffset")), _lag._offsets(source.get("endOffset"))
        if len(self.topics) == 1:
            start, end = starts.get(self.topic, {}), ends.get(self.topic)
        else:
            start = {self._key(t, k): v for t in self.topics for k, v in starts.get(t, {}).items()}
            end = {self._key(t, k): v for t in self.topics for k, v in ends.get(t, {}).items()} or None
        if end is not None:
            self._position = end
        if latest is None:
            try:
                latest = self._latest() if self._consumer is not None else {}
            except Exception:
                latest = {}
        broker_lag = sum(max(latest.get(k, 0) - v, 0) for k, v in self._position.items())
        behind = _lag.behind_latest(p).get("max")
        restart = bool(self.restarts) and not any(b["run"] == self._run for b in self.history)
        s = self._settings
        row = {"batch": p["batchId"], "time": self._planned(p, now), "rows": p.get("numInputRows") or 0,
               "cap": s["cap"], "duration_ms": (p.get("durationMs") or {}).get("triggerExecution", 0),
               "input_rate": round(p.get("inputRowsPerSecond") or 0.0, 1),
               "process_rate": round(p.get("processedRowsPerSecond") or 0.0, 1), "lag": broker_lag,
               "restart": restart and self._run > 0, "run": self._run, "trigger_s": s["trigger_seconds"],
               "planned": self._planned(p, now), "progress_lag": _lag.total_lag(p),
               "max_behind": None if behind is None else int(behind),
               "tasks": self._tasks.get((self._run, p["batchId"])), "partitions": s["partitions"],
               "min_partitions": s["min_partitions"],
               "partitions_read": ",".join(str(k) for k in sorted((end or {})) if (end or {})[k] > start.get(k, 0))}
        self.history.append(row)
        if row["rows"] and self.live_from is None:
            self.live_from = now  # durations and the script count from here
        return row

    def _apply_script(self, now: float) -> None:
        if self.live_from is None:
            return
        clock = len([b for b in self.history if b["rows"]]) if self.script_in == "batches" else now - self.live_from
        while self._pending_script and self._pending_script[0][0] <= clock:
            step = self._pending_script.pop(0)
            self.applied.append((round(now, 2), step))
            knob, value = ("rate", step[1]) if len(step) == 2 else (step[1], step[2])
            self._auto = True
            try:
                if knob == "burst":
                    self.burst(int(value))
                else:
                    name = knob.replace("_", " ") if knob in self.knobs else knob
                    self.marks.append((now, f"{name} {value}" if knob != "rate" else f"{int(value)}/s"))
                    if knob in self.knobs and knob in self._sliders:
                        self._sliders[knob].value = value
                    elif knob in self._sliders:  # the same path as a move in the browser, and the browser shows it
                        shown = {"trigger": value * 1000, "cost": value * 1000, "cap": value or 0}.get(knob, value)
                        self._sliders[knob].value = int(shown)
                    else:
                        self.set(knob, value)
            finally:
                self._auto = False
            if not self._pending_script and self.stop_after_script is not None:
                self._stop_at_batches = len(self.history) + self.stop_after_script

    def _sample(self, now: float) -> int:
        latest = self._latest()
        per_partition = {k: max(latest[k] - self._position.get(k, 0), 0) for k in sorted(latest)}
        total = sum(per_partition.values())
        self.samples.append({"t": round(now, 2), "lag": total, "partitions": per_partition})
        return total

    def time_left(self, now: float) -> float | None:
        """Seconds until the demo ends by itself (None before its first batch)."""
        if self.live_from is None:
            return None
        return max(self.live_from + self.duration + self._extra_s - now, 0.0)

    def _over(self, now: float, lag: int) -> bool:
        if self.live_from is None:
            return now >= self.duration + FIRST_BATCH_WAIT_S  # no batch at all: give up rather than run forever
        if self.time_left(now) <= 0:
            return True
        stop_at = self._stop_at_batches
        if stop_at is not None and not self._touched and len(self.history) >= stop_at:
            return True
        threshold = self.stop_when_caught_up
        if threshold == "cap":
            threshold = self._settings["cap"] or 0
        return (threshold is not None and not self._pending_script and bool(self.applied)
                and now - self.applied[-1][0] > 1 and lag <= threshold)

    def _poll(self) -> None:
        while not self._done.is_set():
            if self._pending_restart:
                self._restart()
            query = self._query
            if not query.isActive:  # stopped by cleanup(), or failed
                exc = query.exception()
                if exc is not None and self._restart_after(query, exc):
                    continue
                if exc is not None:
                    self.error = str(exc).splitlines()[0]
                    self.warn(f"the query failed: {self.error[:300]}")
                break
            now = self.now()
            self._apply_script(now)
            self._collect(query)
            lag = self._sample(now)
            if not self._query.isActive:
                continue  # failed while we looked: restart it (or end) before the next poll
            self._readout.value = f"<code>{self.readout(now)}</code>"
            if time.monotonic() - self._last_draw >= REDRAW_EVERY_S:
                self._image.value = self.png()
                self._last_draw = time.monotonic()
            if self._over(now, lag):
                break
            self._wake.wait(0.5)
            self._wake.clear()

    def _run_poller(self) -> None:
        try:
            self._poll()
        except Exception as exc:  # the broker went away, a bad knob: end the demo and say why
            self.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            self.warn(f"the demo stopped: {self.error[:300]}")
        finally:
            self._finish()

    def _finish(self) -> None:
        with self._lock:
            if self.ended:
                return
            self.ended = True
        self._done.set()
        if self.drain and self.error is None:
            try:
                self._drain()
            except Exception:
                pass  # the broker or the session is gone: stop what is left
        try:
            self._stop_query()
        except Exception:
            pass  # already stopped by cleanup(), or the broker is gone
        if self._producer is not None:
            self._producer.stop()
        for producer in self._producers.values():
            producer.stop()
        if self._quiet is not None:
            self._quiet.__exit__(None, None, None)
            self._quiet = None
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        _live.discard(self)
        if self._widgets_made:
            for widget in [*self._sliders.values(), *self._buttons]:
                widget.disabled = True
            now = self.now()
            self._readout.value = f"<code>{self.readout(now)} · ended</code>"
            self._image.value = self.png()

    # -- what it shows --------------------------------------------------------------------------------------------
    def readout(self, now: float) -> str:
        """The one line of current numbers under the controls."""
        last = self.history[-1] if self.history else None
        sample = self.samples[-1] if self.samples else {"lag": 0, "partitions": {}}
        prefix = "p" if len(self.topics) == 1 else ""
        parts = " / ".join(f"{prefix}{k} {v}" for k, v in sample["partitions"].items())
        cap = self._settings["cap"]
        left = self.time_left(now)
        batch = f"last batch {last['rows']} rows in {last['duration_ms']} ms" if last else "last batch -"
        rate = self._settings["rate"] + sum(s.rate for s in self.sources.values())
        extra = f" · {self.status(self)}" if self.status is not None else ""
        return (f"t={now:5.1f}s · producer {rate} rec/s · cap {cap if cap else 'none'} · "
                f"batches {len(self.history)} · {batch} · lag {sample['lag']} ({parts}){extra}"
                + (f" · {left:.0f} s left" if left is not None and not self.ended else ""))

    def figure(self):
        """Spark UI's charts of this demo on one time axis, as a matplotlib Figure."""
        title = self.title or f"topic {self.topic}"
        return figure({title: self}, charts=(*self.charts, *self.panels),
                      title=f"{title}\n{_settings_text(self._settings)}", lag_lines=self.lag_lines)

    def png(self) -> bytes:
        """The chart as PNG bytes."""
        return png(self.figure())

    def static(self):
        """The chart as an IPython Image (for a cell's saved output)."""
        from IPython.display import Image

        return Image(self.png())

    def __repr__(self) -> str:
        state = "ended" if self.ended else "running" if self._t0 else "not started"
        return f"LiveDemo({self.topic!r}, {_settings_text(self._settings)}, {len(self.history)} batches, {state})"


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


def _step(timeline: list, key: str, end: float, scale: float = 1.0):
    """(xs, ys) of a setting held from each change to the next, up to `end` (None values as gaps)."""
    xs, ys = [], []
    for t, s in timeline:
        xs.append(t)
        ys.append(float("nan") if s.get(key) in (None, 0) and key == "cap" else (s.get(key) or 0) * scale)
    if xs:
        xs.append(max(end, xs[-1]))
        ys.append(ys[-1])
    return xs, ys


def figure(demos: dict, charts=CHARTS, title: str = "", lag_lines: str = "total", width: float = 9.0):
    """Demos {label: LiveDemo} on one shared time axis (the wall clock of the earliest): one panel per chart of
    `charts` ("rates", "duration", "rows", "lag", "tasks", or the name of a demo's own `Panel`), restarts as red
    dashed lines, bursts and script steps dotted."""
    from matplotlib.figure import Figure

    own = {name: p for d in demos.values() for name, p in d.panels.items()}
    charts = [c for c in charts if c in ("rates", "duration", "rows", "lag", "tasks") or c in own] or list(CHARTS)
    fig = Figure(figsize=(width, 0.5 + 1.45 * len(charts)))
    axes = fig.subplots(len(charts), 1, sharex=True, squeeze=False)[:, 0]
    panel = dict(zip(charts, axes))
    origin = min((d._wall0 for d in demos.values() if d._wall0), default=0.0)
    n = max(len(demos), 1)
    end = max([1.0, *((d._wall0 - origin if d._wall0 else 0.0) + max([d.now() if not d.ended else 0.0,
                                                                     *(b["time"] for b in d.history),
                                                                     *(s["t"] for s in d.samples)])
                      for d in demos.values())])
    for i, (label, demo) in enumerate(demos.items()):
        shift = (demo._wall0 - origin) if demo._wall0 else 0.0
        color = PALETTE[i % len(PALETTE)]
        one = n == 1
        name = "" if one else f"{label}: "
        rows = demo.history
        xs = [b["time"] + shift for b in rows]
        width_bar = max(0.15, min(0.8 * (demo._settings["trigger_seconds"] or 0.5), 0.6) / n)
        offset = (i - (n - 1) / 2) * width_bar
        if "rates" in panel:
            ax = panel["rates"]
            ax.plot(xs, [b["input_rate"] for b in rows], color=color if not one else PALETTE[0], marker=".",
                    linewidth=1.5, label=f"{name}input rate")
            ax.plot(xs, [b["process_rate"] for b in rows], color=color if not one else PALETTE[1], marker=".",
                    linewidth=1.5, linestyle="--" if not one else "-", label=f"{name}process rate")
        if "duration" in panel:
            ax = panel["duration"]
            ax.bar([x + offset for x in xs], [b["duration_ms"] for b in rows], width=width_bar, color=color,
                   alpha=0.8, label=f"{name}batch duration")
            tx, ty = _step(demo.timeline, "trigger_seconds", end - shift, 1000)
            ax.step([x + shift for x in tx], ty, where="post", color=RESTART_COLOR if one else color,
                    linestyle="--", linewidth=1, label=f"{name}trigger interval")
        if "rows" in panel:
            ax = panel["rows"]
            ax.bar([x + offset for x in xs], [b["rows"] for b in rows], width=width_bar, color=color, alpha=0.8,
                   label=f"{name}rows per batch")
            cx, cy = _step(demo.timeline, "cap", end - shift)
            if any(y == y for y in cy):  # not all NaN: some cap was set
                ax.step([x + shift for x in cx], cy, where="post", color=RESTART_COLOR if one else color,
                        linestyle="--", linewidth=1, label=f"{name}maxOffsetsPerTrigger")
        if "lag" in panel:
            ax = panel["lag"]
            ts = [s["t"] + shift for s in demo.samples]
            if one and lag_lines == "partitions":
                keys = sorted({k for s in demo.samples for k in s["partitions"]})
                for j, k in enumerate(keys):
                    ax.plot(ts, [s["partitions"].get(k, 0) for s in demo.samples], color=PALETTE[j % len(PALETTE)],
                            linewidth=1.8, label=f"partition {k}")
            else:
                ax.plot(ts, [s["lag"] for s in demo.samples], color=color, linewidth=2, label=f"{name}total lag")
        if "tasks" in panel:
            ax = panel["tasks"]
            ax.bar([x + offset for x in xs], [b["tasks"] or 0 for b in rows], width=width_bar, color=color,
                   label=f"{name}tasks in the batch")
            px, py = _step(demo.timeline, "partitions", end - shift)
            ax.step([x + shift for x in px], py, where="post", color=PALETTE[1], linewidth=2,
                    label=f"{name}topic partitions")
            mx, my = _step(demo.timeline, "min_partitions", end - shift)
            ax.step([x + shift for x in mx], my, where="post", color=RESTART_COLOR, linestyle="--", linewidth=1,
                    label=f"{name}minPartitions (0 = unset)")
        for name, p in demo.panels.items():
            if name in panel:
                p.draw(panel[name], demo, shift)
        for t, text in demo.restarts:
            for ax in axes:
                ax.axvline(t + shift, color=RESTART_COLOR, linestyle="--", linewidth=1.2, alpha=0.9)
            axes[0].annotate(text if one else f"{label} {text}", (t + shift, 1), xycoords=("data", "axes fraction"),
                             fontsize=7, rotation=90, va="top", ha="right", color=RESTART_COLOR)
        for t, text in demo.marks:
            for ax in axes:
                ax.axvline(t + shift, color="#777777", linestyle=":", linewidth=1)
            axes[-1].annotate(text, (t + shift, 1), xycoords=("data", "axes fraction"), fontsize=7, rotation=90,
                              va="top", ha="right", color="#555555")
    labels = {"rates": "records/s", "duration": "batch ms", "rows": "rows per batch", "lag": "lag (offsets)",
              "tasks": "tasks"}
    heads = {"rates": "input rate vs process rate", "duration": "batch duration vs trigger interval",
             "rows": "rows per batch vs the cap", "lag": "lag (broker's latest − query's position)",
             "tasks": "tasks per batch vs topic partitions and minPartitions"}
    for key, ax in panel.items():
        ax.set_ylabel(labels[key] if key in labels else own[key].ylabel, fontsize=8)
        ax.set_ylim(bottom=0)
        ax.tick_params(labelsize=7)
        ax.set_title(heads[key] if key in heads else own[key].title, fontsize=8, loc="left", pad=3, color="#333333")
        handles, names = ax.get_legend_handles_labels()
        if handles and ax.get_legend() is None:  # a panel of its own may have made its legend already
            ax.legend(handles, names, fontsize=6.5, loc="upper left", bbox_to_anchor=(1.005, 1.0), borderaxespad=0)
    axes[0].set_xlim(0, end + 0.5)
    axes[-1].set_xlabel("seconds since the demo started")
    if title:
        fig.suptitle(title, fontsize=9.5)
    fig.tight_layout()
    return fig


def compare(demos: dict, title: str = "", charts=("rows", "duration", "lag")):
    """Finished demos {label: LiveDemo} on one time axis (rows vs each cap, batch duration, total lag): an Image."""
    from IPython.display import Image

    return Image(png(figure(demos, charts=charts, title=title)))


def stop_all() -> None:
    """End every demo still running (their queries and producers too); also runs when the kernel exits."""
    for demo in list(_live):
        try:
            demo.stop()
        except Exception:
            pass  # the broker or the session may already be gone


atexit.register(stop_all)
