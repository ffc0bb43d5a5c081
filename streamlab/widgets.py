"""Live demos: sliders that change a real knob, and a chart and readout that follow a running query.

Why widgets and not prints: output written from a background thread is routed unreliably since ipykernel 7,
but a widget's value set from any thread reaches the browser. So the poller only ever sets widget values,
and `wait()`, called from the notebook's own thread, leaves a static picture for headless runs.

Why start() and wait() are two cells: a kernel applies slider moves only while it is idle (they queue behind a
running cell; jupyter-ui-poll, which used to work around that, no longer sees them under ipykernel 7). So
start() returns at once and the demo runs in the background, stopping itself after `duration` seconds;
wait() in the next cell collects the result.
"""
from __future__ import annotations

import io
import json
import threading
import time
from dataclasses import dataclass, field

from .lab import new_checkpoint

_REDRAW_EVERY_S = 0.5


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    return buf.getvalue()


def _offsets(value) -> dict:
    """Progress offsets arrive as JSON strings or dicts; return {topic: {partition: offset}}."""
    if value is None:
        return {}
    if isinstance(value, str):
        value = json.loads(value) if value.strip().startswith("{") else {}
    return {t: {int(p): int(o) for p, o in parts.items()} for t, parts in value.items()}


class LiveChart:
    """Batch sizes as bars and lag as a line, redrawn into an ipywidgets.Image."""

    def __init__(self, title: str = "", width: float = 8.0, height: float = 3.2):
        import ipywidgets as W

        self.title, self.size = title, (width, height)
        self.image = W.Image(format="png", layout=W.Layout(max_width="100%"))
        self.batches: list[tuple[float, int]] = []
        self.lag: list[tuple[float, int]] = []
        self.cap: int | None = None

    def figure(self):
        """Draw the current data into a new matplotlib figure."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=self.size)
        ax = fig.add_subplot()
        if self.batches:
            xs, ys = zip(*self.batches)
            ax.bar(xs, ys, width=0.35, color="#4c72b0", label="rows in batch")
        if self.cap:
            ax.axhline(self.cap, color="#c44e52", linestyle="--", linewidth=1, label="maxOffsetsPerTrigger")
        ax.set_xlabel("seconds since start")
        ax.set_ylabel("rows per batch")
        ax2 = ax.twinx()
        if self.lag:
            lx, ly = zip(*self.lag)
            ax2.plot(lx, ly, color="#dd8452", linewidth=2, label="lag (offsets behind latest)")
        ax2.set_ylabel("lag")
        ax.set_ylim(bottom=0)
        ax2.set_ylim(bottom=0)
        handles = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
        labels = ax.get_legend_handles_labels()[1] + ax2.get_legend_handles_labels()[1]
        if handles:
            ax.legend(handles, labels, loc="upper left", fontsize=8)
        ax.set_title(self.title, fontsize=10)
        return fig

    def redraw(self) -> None:
        """Render into the widget (safe from a background thread)."""
        self.image.value = _png(self.figure())

    def static(self):
        """A static PNG of the chart for the notebook's saved output."""
        from IPython.display import Image

        return Image(_png(self.figure()))


def slider(description: str, value: int, lo: int, hi: int, step: int = 1):
    """An integer slider that reports only when released, so each move is one change."""
    import ipywidgets as W

    return W.IntSlider(value=value, min=lo, max=hi, step=step, description=description,
                       continuous_update=False, style={"description_width": "160px"},
                       layout=W.Layout(width="520px"))


@dataclass
class BatchRecord:
    """One micro-batch as the demo saw it."""

    batch: int
    at: float
    rows: int
    lag: int
    cap: int | None
    input_rate: float
    processed_rate: float
    duration_ms: int


@dataclass
class StreamDemo:
    """Producer → Kafka → a Structured Streaming query, with sliders for its knobs and a live chart.

    Moving the producer-rate slider changes the running producer at once. The cap, trigger and
    per-record cost are read when a query starts, exactly as in Spark, so moving them restarts the
    query on the same checkpoint: batches planned after the restart use the new values.
    """

    spark: object
    topic: str
    rate: int = 200
    max_offsets: int | None = None
    trigger_seconds: float = 1.0
    cost_ms: float = 0.0
    duration: float = 15.0
    starting_offsets: str = "latest"
    controls: tuple = ("rate", "cap", "trigger", "cost")
    title: str = ""
    history: list = field(default_factory=list)

    def __post_init__(self):
        import ipywidgets as W

        from .broker import ensure_broker

        self.bootstrap = ensure_broker()
        self.chart = LiveChart(self.title or f"topic {self.topic}")
        self.readout = W.HTML(value="<code>not started</code>")
        self.sliders = {
            "rate": slider("producer rate (rec/s)", self.rate, 0, 5000, 50),
            "cap": slider("maxOffsetsPerTrigger (0=none)", self.max_offsets or 0, 0, 5000, 50),
            "trigger": slider("trigger interval (ms)", int(self.trigger_seconds * 1000), 0, 5000, 250),
            "cost": slider("cost per record (µs)", int(self.cost_ms * 1000), 0, 5000, 100),
        }
        self.sliders["rate"].observe(self._on_rate, names="value")
        for name in ("cap", "trigger", "cost"):
            self.sliders[name].observe(self._on_query_knob, names="value")
        self._restart = threading.Event()
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._query = None
        self._producer = None
        self._thread = None
        self._consumer = None
        self._checkpoint = new_checkpoint("demo")
        self._initial: dict = {}
        self._t0 = 0.0

    # -- knobs ---------------------------------------------------------------------------------
    def _on_rate(self, change) -> None:
        self.rate = change["new"]
        if self._producer is not None:
            self._producer.set_rate(self.rate)

    def _on_query_knob(self, change) -> None:
        self.max_offsets = self.sliders["cap"].value or None
        self.trigger_seconds = self.sliders["trigger"].value / 1000
        self.cost_ms = self.sliders["cost"].value / 1000
        self._restart.set()

    # -- the query -----------------------------------------------------------------------------
    def _start_query(self):
        reader = (self.spark.readStream.format("kafka")
                  .option("kafka.bootstrap.servers", self.bootstrap)
                  .option("subscribe", self.topic)
                  .option("startingOffsets", self.starting_offsets))
        if self.max_offsets:
            reader = reader.option("maxOffsetsPerTrigger", str(self.max_offsets))
        cost_s, done = self.cost_ms / 1000, self._done

        def process(batch_df, batch_id):
            rows = batch_df.count()
            if cost_s:
                done.wait(rows * cost_s)  # the simulated work ends early when the demo stops

        writer = reader.load().writeStream.foreachBatch(process).option("checkpointLocation", self._checkpoint)
        if self.trigger_seconds:
            writer = writer.trigger(processingTime=f"{self.trigger_seconds} seconds")
        self.chart.cap = self.max_offsets
        return writer.start()

    def _latest(self) -> dict:
        from kafka import TopicPartition

        parts = self._consumer.partitions_for_topic(self.topic) or set()
        ends = self._consumer.end_offsets([TopicPartition(self.topic, p) for p in parts])
        return {tp.partition: off for tp, off in ends.items()}

    def _poll(self) -> None:
        seen = -1
        position: dict = dict(self._initial)
        while not self._done.is_set():
            if self._restart.is_set():
                self._restart.clear()
                with self._lock:
                    self._query.stop()
                    self._query = self._start_query()
            now = time.monotonic() - self._t0
            progress = list(self._query.recentProgress)
            for p in progress:
                if p["batchId"] <= seen or p["numInputRows"] is None:
                    continue
                seen = p["batchId"]
                source = p["sources"][0]
                position = _offsets(source.get("endOffset")).get(self.topic, position)
                latest = _offsets(source.get("latestOffset")).get(self.topic, {})
                lag = sum(max(latest.get(k, 0) - v, 0) for k, v in position.items())
                self.history.append(BatchRecord(p["batchId"], round(now, 2), p["numInputRows"], lag,
                                                self.max_offsets, p.get("inputRowsPerSecond") or 0.0,
                                                p.get("processedRowsPerSecond") or 0.0,
                                                p["durationMs"].get("triggerExecution", 0)))
                if p["numInputRows"]:
                    self.chart.batches.append((now, p["numInputRows"]))
            latest = self._latest()
            live_lag = sum(max(latest.get(k, 0) - position.get(k, 0), 0) for k in latest)
            self.chart.lag.append((now, live_lag))
            last = self.history[-1] if self.history else None
            self.readout.value = (
                f"<code>t={now:5.1f}s · producer {self.rate} rec/s · sent {self._producer.sent}"
                f" · batches {len(self.history)} · last batch {last.rows if last else '-'} rows"
                f" · lag {live_lag}</code>")
            self.chart.redraw()
            if now >= self.duration:
                break
            self._done.wait(_REDRAW_EVERY_S)
        self._done.set()
        self._shutdown()
        self.readout.value = self.readout.value.replace("</code>", " · stopped</code>")

    # -- life cycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Show the controls and chart, then run producer, query and poller in the background."""
        import ipywidgets as W
        from IPython.display import display
        from kafka import KafkaConsumer

        from .producer import BackgroundProducer

        self._consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False)
        self._producer = BackgroundProducer(self.topic, rate=self.rate, bootstrap=self.bootstrap)
        self._producer.start()
        # the query's position before its first batch: where startingOffsets puts it
        self._initial = self._latest() if self.starting_offsets == "latest" else {}
        self._query = self._start_query()
        self._t0 = time.monotonic()
        shown = [self.sliders[c] for c in self.controls]
        stop = W.Button(description="stop demo", icon="stop", layout=W.Layout(width="120px"))
        stop.on_click(lambda _: self._done.set())
        display(W.VBox([*shown, W.HBox([stop, self.readout]), self.chart.image]))
        self._thread = threading.Thread(target=self._poll, name="streamlab-demo", daemon=True)
        self._thread.start()

    def wait(self):
        """Block until the demo's time is up, stop everything and return its batches as a DataFrame."""
        import pandas as pd
        from IPython.display import display

        if self._thread is not None:
            self._thread.join()
        self.stop()
        display(self.chart.static())
        from dataclasses import fields

        # the columns exist even when no batch ran (a starved machine), so later cells can still index them
        return pd.DataFrame([vars(b) for b in self.history], columns=[f.name for f in fields(BatchRecord)])

    def stop(self) -> None:
        """Stop the poller, the query and the producer (safe to call twice)."""
        self._done.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
        self._shutdown()

    def _shutdown(self) -> None:
        with self._lock:
            if self._query is not None:
                self._query.stop()
            if self._producer is not None:
                self._producer.stop()
            if self._consumer is not None:
                self._consumer.close()
                self._consumer = None


# -- additions for module 4: a burst button and two demos on one chart --------------------------------------------

def burst_button(demo, n: int = 5000):
    """A button that makes `demo`'s producer send `n` extra records at once (and marks the chart, if it has marks)."""
    import time as _time

    import ipywidgets as W

    button = W.Button(description=f"burst {n:,}", icon="bolt", layout=W.Layout(width="160px"))

    def fire(_):
        producer = getattr(demo, "_producer", None)
        if producer is None or not producer.running:
            return  # not started yet, or already stopped
        producer.burst(n)
        marks = getattr(demo.chart, "marks", None)
        if marks is not None:
            marks.append((_time.monotonic() - demo._t0, f"burst {n:,}"))

    button.on_click(fire)
    return button


def compare_demos(demos: dict, title: str = "", width: float = 9.0, height: float = 5.0):
    """Finished LagDemos {label: demo} on one time axis (the wall clock of the first): rows per batch on top, with
    each demo's cap, and the broker-measured lag below. Returns an IPython Image."""
    from IPython.display import Image
    from matplotlib.figure import Figure

    colors = ("#4c72b0", "#dd8452", "#55a868", "#c44e52")
    fig = Figure(figsize=(width, height))
    top, bottom = fig.subplots(2, 1, sharex=True)
    origin = min(d._wall0 for d in demos.values())
    n = max(len(demos), 1)
    for i, (label, demo) in enumerate(demos.items()):
        shift, color = demo._wall0 - origin, colors[i % len(colors)]
        bars = [(b.at + shift, b.rows) for b in demo.history if b.rows]
        if bars:
            xs, ys = zip(*bars)
            top.bar([x + (i - (n - 1) / 2) * 0.3 for x in xs], ys, width=0.3, color=color, alpha=0.8,
                    label=f"{label}: rows per batch")
        if demo.max_offsets:
            top.axhline(demo.max_offsets, color=color, linestyle="--", linewidth=1,
                        label=f"{label}: maxOffsetsPerTrigger")
        if demo.samples:
            bottom.plot([s["t"] + shift for s in demo.samples], [s["lag"] for s in demo.samples], color=color,
                        linewidth=2, label=label)
        for t, text in getattr(demo.chart, "marks", []):
            if text.startswith("burst"):
                for ax in (top, bottom):
                    ax.axvline(t + shift, color="#777777", linestyle=":", linewidth=1)
                bottom.annotate(text, (t + shift, 1), xycoords=("data", "axes fraction"), fontsize=7, rotation=90,
                                va="top", ha="right", color="#555555")
    top.set_ylabel("rows per batch")
    top.set_ylim(bottom=0)
    top.legend(fontsize=7, loc="upper right")
    top.set_title(title, fontsize=10)
    bottom.set_ylabel("lag (broker latest − position)")
    bottom.set_xlabel("seconds since start")
    bottom.set_ylim(bottom=0)
    bottom.legend(fontsize=7, loc="upper right")
    return Image(_png(fig))
