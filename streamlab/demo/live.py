"""The live demo every module uses: a producer, a real query on the Kafka source, controls, and Spark UI's charts.

`LiveDemo` feeds a topic with a `BackgroundProducer`, runs a Structured Streaming query on it, and follows the
query's progress events from one background thread. It is filed by what it does, one module each:

- `settings`: the knobs a query starts with (cap, trigger, minPartitions, cost) and the producer's rate, in a
  small dataclass that validates every value, from the constructor, `set()`, a slider or a script alike;
- `controls`: sliders and buttons on those knobs, which act even while another cell runs;
- `loop`: the producers, the query, restarts on the same checkpoint, and the polling thread;
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

Extension points, so that a module's own demo is a configuration of this one (see `LiveDemo`): more source
topics with their own producers and rate sliders (`sources`), sliders on knobs the configuration defines (`knobs`),
a function called for every micro-batch from the demo's own foreachBatch (`on_batch`), panels of its own data on
the shared time axis (`panels`), restarts after failures injected on purpose (`restart_on`), a last step that lets
the query read everything produced (`drain`), and a few words of its own in the readout (`status`).
"""
from __future__ import annotations

import atexit
import os
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Callable

from streamlab.demo import settings as _settings
from streamlab.demo.charts import CHARTS, PALETTE, RESTART_COLOR, Panel, compare, figure  # noqa: F401 - re-exported
from streamlab.demo.controls import KNOBS, RESTARTING, Controls, Knob, answer_while_busy  # noqa: F401
from streamlab.demo.loop import FIRST_BATCH_WAIT_S, REDRAW_EVERY_S, LiveLoop  # noqa: F401
from streamlab.demo.settings import KnobError, StreamSettings, settings_text
from streamlab.demo.widgets import png
from streamlab.errors import LabError
from streamlab.lab.lifecycle import new_checkpoint

GRADING_SECONDS = 12  # under the grader nobody plays: a demo runs this long after its script at most
DEMO_SECONDS_ENV = "STREAMLAB_DEMO_SECONDS"  # the same cap where nobody plays either: a test's Run All
COLUMNS = ("batch", "time", "rows", "cap", "duration_ms", "input_rate", "process_rate", "lag", "restart", "run",
           "trigger_s", "planned", "progress_lag", "max_behind", "tasks", "partitions", "min_partitions",
           "partitions_read")
CONTROLS = (*KNOBS, "burst")

_live: "weakref.WeakSet[LiveDemo]" = weakref.WeakSet()


def duration_cap() -> float | None:
    """How long a demo may run after its script when nobody plays: under the grader, or $STREAMLAB_DEMO_SECONDS."""
    raw = os.environ.get(DEMO_SECONDS_ENV, "").strip()
    if raw:
        try:
            value = float(raw)
        except ValueError:
            raise KnobError(f"{DEMO_SECONDS_ENV}={raw!r} is not a number of seconds: unset it or give e.g. 20") from None
        return _settings.check_positive(DEMO_SECONDS_ENV, value)
    return GRADING_SECONDS if os.environ.get("STREAMLAB_GRADING") == "1" else None


@dataclass
class Source:
    """One more topic the demo's query reads, fed by its own producer (record i = `value_fn(i)`, key `key_fn(i)`),
    with its own rate slider, labelled `label`, when "rate" is a control."""

    rate: int = 100
    value_fn: Callable | None = None
    key_fn: Callable | None = None
    label: str = ""


class LiveDemo(Controls, LiveLoop):
    """Producer → Kafka → a Structured Streaming query, with controls, a one-line readout and Spark UI's charts.

    The query's knobs: `rate` (records/s), `max_offsets` (maxOffsetsPerTrigger, None: no cap), `trigger_seconds`
    (0: as fast as possible), `cost_ms` (simulated work per record), `min_partitions` (0: unset), or all of them
    as one `settings=StreamSettings(...)`, which alone also holds `min_offsets` (minOffsetsPerTrigger, 0: unset)
    and `max_delay_seconds` (maxTriggerDelay, 0: Spark's 15 min); a value a knob cannot take is refused at once
    (`KnobError`, one line naming the knob). controls: which of "rate", "cap", "trigger", "cost", "partitions",
    "min_partitions", "min_offsets", "max_delay" get a slider, plus "burst" for a burst button (of `burst`
    records). `script` moves knobs by itself: steps `(at, knob, value)`, `(at, rate)` or `(at, "burst", n)`, `at`
    counted in seconds after the first batch with data (or in batches with `script_in="batches"`); a person's move
    of a knob cancels the script's later moves of it (with `script_until_touched`, the whole rest of the script).
    The demo ends `duration` s after its first batch with data (+30 s per click), `stop_after_script` batches after
    the last step, when the lag is at most `stop_when_caught_up` (a number, or "cap": the cap in force) once the
    script is done, on "stop", on ■, on cleanup(), when its broker stops answering, or when the kernel exits. Then
    its controls show the values in force and are disabled, its query and producer stopped. What later cells read:
    `batches` (a DataFrame, one row per batch, also returned by wait()), `settings` / `values` (the knobs in force),
    `restarts`, `samples` (broker lag at each poll), `events` (every progress event, across restarts),
    `checkpoint`, `topic`.

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
    - `status(demo)`: a few words appended to the readout; `show_offsets`: the readout also shows the range of
      offsets the last batch planned, read from its `offsets/N` file in the checkpoint (`offsets_text()`).
    """

    def __init__(self, spark, topic: str, *, rate: int = 200, max_offsets: int | None = None,
                 trigger_seconds: float = 1.0, cost_ms: float = 0.0, min_partitions: int = 0,
                 settings: StreamSettings | None = None,
                 duration: float = 60.0, starting_offsets: str = "latest", controls=("rate", "cap"),
                 burst: int = 5_000, script=(), script_in: str = "seconds", script_until_touched: bool = False,
                 stop_after_script: int | None = None, stop_when_caught_up=None, charts=CHARTS,
                 lag_lines: str = "partitions", title: str = "", bootstrap: str | None = None,
                 sources: dict | None = None, value_fn: Callable | None = None, key_fn: Callable | None = None,
                 label: str = "", knobs=(), on_batch: Callable | None = None, panels: dict | None = None,
                 restart_on=(), drain: bool = False, status: Callable | None = None, show_offsets: bool = False):
        # the stream's settings, checked before anything starts
        self._settings = settings if settings is not None else StreamSettings(
            rate=rate, cap=max_offsets, trigger_seconds=trigger_seconds, cost_ms=cost_ms,
            min_partitions=min_partitions)
        self.spark, self.topic, self.title = spark, topic, title
        self.sources = dict(sources or {})
        for name, source in self.sources.items():
            source.rate = _settings.check_rate(source.rate, f"{source.label or name} rate")
        self.topics = [topic, *(t for t in self.sources if t != topic)]
        self.value_fn, self.key_fn, self.label = value_fn, key_fn, label or topic
        self.knobs = {k.name: k for k in knobs}
        self.knob_values = {k.name: k.value for k in knobs}  # the configuration's knobs, as last moved
        self.on_batch, self.panels = on_batch, dict(panels or {})
        self.restart_on, self.drain, self.status = tuple(restart_on), drain, status
        self.show_offsets = show_offsets
        self.bootstrap = bootstrap
        self.duration = _settings.check_positive("duration (s)", duration)
        if starting_offsets not in ("latest", "earliest"):
            raise KnobError(f"startingOffsets must be 'latest' or 'earliest' here, got {starting_offsets!r}")
        self.starting_offsets = starting_offsets
        unknown = [c for c in controls if c not in CONTROLS]
        if unknown:
            raise KnobError(f"unknown control {unknown[0]!r}; one of {', '.join(CONTROLS)}")
        self.controls = tuple(controls)
        self.burst_size = _settings.check_positive("burst size", burst, whole=True, hi=1_000_000)
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
        self.lost: str | None = None  # the line that says the broker stopped answering, if it did
        self.ended = False
        self.live_controls = False  # whether the controls act while another cell runs (a kernel with subshells)
        self.query = _QueryHandle(self)
        # plumbing
        self._lock = threading.RLock()
        self._done = threading.Event()
        self._wake = threading.Event()
        self._pending_restart: list[str] = []
        self._pending_script = sorted(self.script, key=lambda step: step[0])
        self._check_script()
        self._auto = False  # True while the script moves a control, so its move is not taken for a person's
        self._touched = False
        self._touched_knobs: set = set()
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
        self._probed_at, self._misses = 0.0, 0
        self._handle = None
        self._extra_s = 0.0
        self._wanted: dict = {}  # restarting knobs moved, applied by the next restart
        self._sliders: dict = {}
        self._convert: dict = {}
        self._buttons: list = []
        self._widgets_made = False
        self._stop_at_batches: int | None = None

    def _check_script(self) -> None:
        """Every step of the script names a knob and a value it can take (refused here, not mid-demo)."""
        for step in self._pending_script:
            if len(step) not in (2, 3) or not isinstance(step[0], (int, float)) or step[0] < 0:
                raise KnobError(f"a script step is (at, knob, value), (at, rate) or (at, 'burst', n); got {step!r}")
            if len(step) == 2:
                _settings.check_rate(step[1])
            elif step[1] == "burst":
                _settings.check_positive("burst size", step[2], whole=True, hi=1_000_000)
            elif step[1] in self.knobs or step[1] in KNOBS or step[1].removeprefix("rate:") in self.sources:
                self.checked(step[1], step[2])
            else:
                raise KnobError(f"the script moves an unknown knob {step[1]!r}; one of "
                                f"{', '.join((*KNOBS, *self.knobs, *self._rate_knobs(), 'burst'))}")

    # -- what later cells read -------------------------------------------------------------------------------------
    @property
    def settings(self) -> dict:
        """The knobs in force now (after the last restart): rate, cap, trigger_seconds, cost_ms, min_partitions,
        partitions."""
        return self._settings.as_dict()

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

    # -- life cycle -----------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Show controls, readout and chart in one box, start producer, query and poller; returns at once (None,
        so that a cell ending in `demo.start()` shows the box only, not a line of text under it)."""
        from kafka import KafkaConsumer

        from streamlab.lab.broker import ensure_broker
        from streamlab.lab.topics import partition_count

        self.bootstrap = self.bootstrap or ensure_broker()
        self._settings["partitions"] = partition_count(self.topic, self.bootstrap)
        cap = duration_cap()
        if cap is not None and not (self.stop_when_caught_up is not None or self.stop_after_script is not None):
            # nobody plays: the script's story, then a few seconds, is enough (a script counted in batches plays
            # within the first seconds)
            steps = [step[0] + 10 for step in self.script] if self.script_in == "seconds" else []
            self.duration = min(self.duration, max([cap, *steps]))
        self._make_widgets()
        # short client timeouts: the loop must notice a lost broker in seconds, not in kafka-python's 30 s
        self._consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False,
                                       request_timeout_ms=5_000)
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
        if self._thread is not None and self._thread.is_alive():  # the poller was stuck in a client call
            self._thread.join(timeout=15)

    cleanup = stop

    def wait(self):
        """Wait until the demo has ended, leave a static chart as the box's saved output, and return `batches`.

        The controls act while it waits. ■ (KeyboardInterrupt) stops the demo and says so in one line; a broker
        that stopped answering ends it at once with the line that names the fix."""
        try:
            while self._thread is not None and self._thread.is_alive():
                self._thread.join(0.25)  # short joins: ■ is answered at once
            self.stop()
            self._freeze()
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

    def _freeze(self) -> None:
        # The live box stays for the browser; the PNG is what nbconvert, a saved notebook or no widget manager shows.
        if self._handle is None or not self._widgets_made:
            return
        bundle = self.box._repr_mimebundle_()
        bundle["image/png"] = self.png()
        bundle.pop("text/plain", None)
        self._handle.update(bundle, raw=True)

    # -- what it shows --------------------------------------------------------------------------------------------
    def readout(self, now: float) -> str:
        """The one line of current numbers under the controls."""
        last = self.history[-1] if self.history else None
        sample = self.samples[-1] if self.samples else {"lag": 0, "partitions": {}}
        prefix = "p" if len(self.topics) == 1 else ""
        parts = " / ".join(f"{prefix}{k} {v}" for k, v in sample["partitions"].items())
        left = self.time_left(now)
        batch = f"last batch {last['rows']} rows in {last['duration_ms']} ms" if last else "last batch -"
        rate = self._settings["rate"] + sum(s.rate for s in self.sources.values())
        extra = f" · {self.status(self)}" if self.status is not None else ""
        if self.show_offsets:
            extra += f" · {self.offsets_text()}"
        return (f"t={now:5.1f}s · producer {rate} rec/s · {self.knobs_text()} · "
                f"batches {len(self.history)} · {batch} · lag {sample['lag']} ({parts}){extra}"
                + (f" · {left:.0f} s left" if left is not None and not self.ended else ""))

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
        s = self._settings
        parts = [f"cap {s['cap']}" if s["cap"] else "no cap",
                 f"trigger {s['trigger_seconds']:g} s" if s["trigger_seconds"] else "trigger as fast as possible"]
        if s["cost_ms"] or "cost" in self.controls:
            parts.append(f"cost {s['cost_ms'] * 1000:g} µs/rec")
        if "partitions" in self.controls or "tasks" in self.charts:
            parts.append(f"partitions {s['partitions']}")
        if s["min_partitions"] or "min_partitions" in self.controls:
            parts.append(f"minPartitions {s['min_partitions'] or 'unset'}")
        if s["min_offsets"] or "min_offsets" in self.controls or "max_delay" in self.controls:
            parts.append(f"minOffsetsPerTrigger {s['min_offsets'] or 'unset'}")
            parts.append(f"maxTriggerDelay {s['max_delay_seconds']:g} s" if s["max_delay_seconds"]
                         else "maxTriggerDelay 15 min")
        parts += [f"{k.label.split(' (')[0]} {self.knob_values[k.name]}" for k in self.knobs.values()]
        wanted = {**self._wanted}
        if wanted:  # moved, in force at the restart that is under way
            parts.append("restarting with " + ", ".join(_settings.knob_text(k, v) for k, v in wanted.items()))
        return " · ".join(parts)

    def figure(self):
        """Spark UI's charts of this demo on one time axis, as a matplotlib Figure."""
        title = self.title or f"topic {self.topic}"
        return figure({title: self}, charts=(*self.charts, *self.panels),
                      title=f"{title}\n{settings_text(self._settings.as_dict())}", lag_lines=self.lag_lines)

    def png(self) -> bytes:
        """The chart as PNG bytes."""
        return png(self.figure())

    def static(self):
        """The chart as an IPython Image (for a cell's saved output)."""
        from IPython.display import Image

        return Image(self.png())

    def __repr__(self) -> str:
        state = "ended" if self.ended else "running" if self._t0 else "not started"
        return (f"LiveDemo({self.topic!r}, {settings_text(self._settings.as_dict())}, {len(self.history)} batches, "
                f"{state})")


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



def stop_all() -> None:
    """End every demo still running (their queries and producers too); also runs when the kernel exits."""
    for demo in list(_live):
        try:
            demo.stop()
        except Exception:
            pass  # the broker or the session may already be gone


atexit.register(stop_all)
