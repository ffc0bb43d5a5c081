"""Module 3's plumbing: a live lag-per-partition demo, consumer-group look-ups, and progress tables.

- `LagDemo`: a `StreamDemo` whose chart draws the lag of *each partition* (the broker's latest offset now minus
  the end of the query's last finished batch), with an optional script of producer-rate changes and bursts, and a
  `query` handle that a `LagMonitor` can poll across restarts. The readout keeps StreamDemo's format
  (`t=… · producer N rec/s · sent … · batches N · last batch … rows · lag N`).
- `groups_on(topic)`, `describe_group(group, topic)`: what `kafka-consumer-groups --list / --describe` would
  show, asked of the broker with the AdminClient; `committing_consumer(topic, n)`: an ordinary Kafka consumer
  that joins a group, reads `n` records and commits them (the contrast to a Spark query, which commits nothing).
- `progress_table(events)`: one row per progress event with the fields the module reads.
"""
from __future__ import annotations

import atexit
import threading
import time
import uuid
from dataclasses import dataclass, field

from . import lag as _lag
from .widgets import LiveChart, StreamDemo, _offsets

PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860")

FIRST_BATCH_WAIT_S = 90  # how long a demo waits for its query's first batch before its own duration starts
_made_groups: list[str] = []


# -- consumer groups, asked of the broker ------------------------------------------------------------------------

def committing_consumer(topic: str, n: int, group: str | None = None, bootstrap: str | None = None) -> str:
    """An ordinary consumer: join `group` (a fresh one by default), read `n` records from the start, commit, leave.

    Returns the group id. Groups made here are deleted by `forget_groups()` (and when the kernel exits).
    """
    from kafka import KafkaConsumer

    from .broker import ensure_broker

    group = group or f"plain-app-{uuid.uuid4().hex[:6]}"
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap or ensure_broker(), group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    _made_groups.append(group)
    try:
        read, deadline = 0, time.monotonic() + 20
        while read < n and time.monotonic() < deadline:
            for records in consumer.poll(500, max_records=n - read).values():
                read += len(records)
        consumer.commit()  # commits the position: the next offset to read, per assigned partition
    finally:
        consumer.close()
    return group


def groups_on(topic: str, bootstrap: str | None = None) -> dict:
    """{group id: {partition: committed offset}} for every consumer group that committed offsets on `topic`."""
    from .topics import admin

    client = admin(bootstrap)
    try:
        found = {}
        for group in client.list_groups():
            gid = group["group_id"] if isinstance(group, dict) else group[0]
            committed = client.list_group_offsets(gid).get(gid, {})
            parts = {tp.partition: meta.offset for tp, meta in committed.items() if tp.topic == topic}
            if parts:
                found[gid] = dict(sorted(parts.items()))
        return found
    finally:
        client.close()


def all_groups(bootstrap: str | None = None) -> list[str]:
    """Every consumer group id the broker knows (what `kafka-consumer-groups --list` prints)."""
    from .topics import admin

    client = admin(bootstrap)
    try:
        return sorted(g["group_id"] if isinstance(g, dict) else g[0] for g in client.list_groups())
    finally:
        client.close()


def describe_group(group: str, topic: str, bootstrap: str | None = None):
    """A table like `kafka-consumer-groups --describe --group G`: committed offset, log end offset, lag."""
    import pandas as pd

    committed = groups_on(topic, bootstrap).get(group, {})
    ends = _lag.latest_offsets(topic, bootstrap)[topic]
    rows = [{"TOPIC": topic, "PARTITION": p, "CURRENT-OFFSET": committed.get(p, "-"), "LOG-END-OFFSET": end,
             "LAG": end - committed[p] if p in committed else "-"} for p, end in sorted(ends.items())]
    return pd.DataFrame(rows).set_index("PARTITION")


def forget_groups(bootstrap: str | None = None) -> list[str]:
    """Delete the consumer groups `committing_consumer` made; returns their ids."""
    from .topics import admin

    gone = list(dict.fromkeys(_made_groups))
    if gone:
        client = admin(bootstrap)
        try:
            known = set(all_groups(bootstrap))
            targets = [g for g in gone if g in known]
            if targets:
                client.delete_groups(targets)
        finally:
            client.close()
    _made_groups.clear()
    return gone


@atexit.register
def _at_exit() -> None:
    try:
        if _made_groups:
            forget_groups()
    except Exception:
        pass  # the broker may already be gone


# -- progress events ---------------------------------------------------------------------------------------------

def as_dict(progress) -> dict:
    """A progress report (PySpark's StreamingQueryProgress, a dict or JSON text) as a plain dict."""
    return _lag._as_dict(progress)


def progress_table(events):
    """One row per progress event: batch, rows, the two rates, duration, progress lag (latestOffset − endOffset,
    summed over the partitions) and the connector's maxOffsetsBehindLatest (the most-behind partition; None on
    the offline fallback, which reports no metrics)."""
    import pandas as pd

    rows = []
    for event in events:
        p = as_dict(event)
        if not p:
            continue
        rows.append({"batch": p.get("batchId"), "rows": p.get("numInputRows"),
                     "inputRowsPerSecond": round(p.get("inputRowsPerSecond") or 0.0, 1),
                     "processedRowsPerSecond": round(p.get("processedRowsPerSecond") or 0.0, 1),
                     "triggerExecution_ms": (p.get("durationMs") or {}).get("triggerExecution"),
                     "progress_lag": _lag.total_lag(p),
                     "maxOffsetsBehindLatest": _whole(_lag.behind_latest(p).get("max"))})
    return pd.DataFrame(rows)


def _whole(value):
    return None if value is None else int(value)


# -- the live demo -----------------------------------------------------------------------------------------------

class LagChart(LiveChart):
    """Lag of each partition over time (lines), and the rows of each batch (faint bars)."""

    def __init__(self, title: str = "", width: float = 8.0, height: float = 3.2):
        super().__init__(title, width, height)
        self.partition_lag: dict[int, list[tuple[float, int]]] = {}
        self.marks: list[tuple[float, str]] = []

    def figure(self):
        """Draw the lag lines and batch bars into a new matplotlib figure."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=self.size)
        ax = fig.add_subplot()
        for i, (partition, points) in enumerate(sorted(self.partition_lag.items())):
            if points:
                xs, ys = zip(*points)
                ax.plot(xs, ys, color=PALETTE[i % len(PALETTE)], linewidth=2, label=f"lag partition {partition}")
        ax.set_xlabel("seconds since start")
        ax.set_ylabel("lag (offsets behind latest)")
        ax.set_ylim(bottom=0)
        ax2 = ax.twinx()
        if self.batches:
            xs, ys = zip(*self.batches)
            ax2.bar(xs, ys, width=0.3, color="#999999", alpha=0.35, label="rows in batch")
        ax2.set_ylabel("rows per batch", color="#777777")
        ax2.set_ylim(bottom=0)
        for x, text in self.marks:
            ax.axvline(x, color="#777777", linestyle=":", linewidth=1)
            ax.annotate(text, (x, 1), xycoords=("data", "axes fraction"), fontsize=7, rotation=90,
                        va="top", ha="right", color="#555555")
        handles, labels = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        if handles or h2:
            ax.legend(handles + h2, labels + l2, loc="upper left", fontsize=8)
        ax.set_title(self.title, fontsize=10)
        return fig


class _QueryHandle:
    """Whatever query the demo runs right now (sliders can restart it): lastProgress, recentProgress, isActive."""

    def __init__(self, demo: "LagDemo"):
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
        return not self._demo._done.is_set()


@dataclass
class LagDemo(StreamDemo):
    """StreamDemo with a lag-per-partition chart, a script of rate changes and bursts, and every progress event.

    `script` is a list of `(seconds, rate)` or `(seconds, "burst", n)` steps, timed from the first batch that read
    data and applied from the poller thread (a rate step moves the rate slider, so the browser shows it).
    `duration` counts from that first batch too, so a slow Spark start does not eat the demo. With
    `stop_when_caught_up=N` the demo also ends once the script is done and the lag is at most N records.
    `events` holds every progress report as a dict, across query restarts; `samples` the broker-measured lag per
    partition at each poll; `applied` the script steps with the time they were applied.
    """

    script: list = field(default_factory=list)
    stop_when_caught_up: int | None = None
    alert_text: str = ""

    def __post_init__(self):
        import ipywidgets as W

        super().__post_init__()
        self.chart = LagChart(self.title or f"lag per partition, topic {self.topic}")
        self.alert = W.HTML(value="")
        self.events: list[dict] = []
        self.samples: list[dict] = []
        self.query = _QueryHandle(self)
        self._pending = sorted(self.script, key=lambda step: step[0])
        self.live_from: float | None = None  # seconds from start to the first batch with data
        self.applied: list = []  # (seconds since start, script step) as they were applied

    @property
    def checkpoint(self) -> str:
        """The query's checkpoint folder (kept after the demo stops)."""
        return self._checkpoint

    def events_between(self, start: float | None = None, end: float | None = None) -> list[dict]:
        """The progress events of batches *planned* (triggered) between `start` and `end` s since the demo started.

        Planning time, not finishing time, because a batch's latestOffset is read when it is planned.
        """
        return [e for b, e in zip(self.history, self.events)
                if (start is None or b.planned >= start) and (end is None or b.planned < end)]

    def lag_at(self, t: float) -> int:
        """The broker-measured total lag at the poll closest to `t` seconds since start."""
        return min(self.samples, key=lambda s: abs(s["t"] - t))["lag"] if self.samples else 0

    def caught_up_at(self, after: float, threshold: int) -> float | None:
        """The first poll after `after` seconds at which the total lag was at most `threshold` (None: never)."""
        return next((s["t"] for s in self.samples if s["t"] > after and s["lag"] <= threshold), None)

    def warn(self, message: str) -> None:
        """Show a warning under the chart (a LagMonitor's on_warning); safe from any thread."""
        self.alert_text = message
        self.alert.value = f"<b style='color:#c44e52'>{message}</b>"

    def _apply_script(self, now: float) -> None:
        if self.live_from is None:
            return
        while self._pending and self._pending[0][0] <= now - self.live_from:
            step = self._pending.pop(0)
            self.applied.append((round(now, 2), step))
            if len(step) == 3 and step[1] == "burst":
                self._producer.burst(int(step[2]))
                self.chart.marks.append((now, f"burst {step[2]:,}"))
            else:
                self.sliders["rate"].value = int(step[1])  # the observer sets the producer's rate
                self.chart.marks.append((now, f"{int(step[1])}/s"))

    def _poll(self) -> None:
        seen = -1
        # Before its first batch a query starting from "latest" is at the offsets Kafka had when it started.
        position: dict = dict(self._start_position)
        while not self._done.is_set():
            if self._restart.is_set():
                self._restart.clear()
                with self._lock:
                    self._query.stop()
                    self._query = self._start_query()
                    seen = -1
            now = time.monotonic() - self._t0
            self._apply_script(now)
            for raw in list(self._query.recentProgress):
                p = _lag._as_dict(raw)
                if p.get("batchId", -1) <= seen or p.get("numInputRows") is None:
                    continue
                seen = p["batchId"]
                self.events.append(p)
                source = (p.get("sources") or [{}])[0]
                position = _offsets(source.get("endOffset")).get(self.topic, position)
                progress_lag = _lag.total_lag(p)
                self.history.append(_Batch(p["batchId"], round(now, 2), p["numInputRows"], progress_lag,
                                           self.max_offsets, p.get("inputRowsPerSecond") or 0.0,
                                           p.get("processedRowsPerSecond") or 0.0,
                                           (p.get("durationMs") or {}).get("triggerExecution", 0),
                                           self._broker_lag(position), self._planned(p, now),
                                           _whole(_lag.behind_latest(p).get("max"))))
                if p["numInputRows"]:
                    self.chart.batches.append((now, p["numInputRows"]))
                    if self.live_from is None:
                        self.live_from = now
                        self.chart.marks.append((now, "first batch"))
            latest = self._latest()
            per_partition = {k: max(latest[k] - position.get(k, 0), 0) for k in sorted(latest)}
            live_lag = sum(per_partition.values())
            self.samples.append({"t": round(now, 2), "lag": live_lag, "partitions": per_partition})
            for k, v in per_partition.items():
                self.chart.partition_lag.setdefault(k, []).append((now, v))
            last = self.history[-1] if self.history else None
            parts = " / ".join(f"p{k} {v}" for k, v in per_partition.items())
            self.readout.value = (
                f"<code>t={now:5.1f}s · producer {self.rate} rec/s · sent {self._producer.sent}"
                f" · batches {len(self.history)} · last batch {last.rows if last else '-'} rows"
                f" · lag {live_lag} ({parts})</code>")
            self.chart.redraw()
            if self.live_from is not None and now - self.live_from >= self.duration:
                break  # `duration` seconds of live batches (a slow Spark start does not eat the demo)
            if self.live_from is None and now >= self.duration + FIRST_BATCH_WAIT_S:
                break  # no batch at all: give up rather than run forever
            if (self.stop_when_caught_up is not None and self.live_from is not None and not self._pending
                    and self.applied and now - self.applied[-1][0] > 1 and live_lag <= self.stop_when_caught_up):
                break
            self._done.wait(0.5)
        self._done.set()

    def _planned(self, progress: dict, default: float) -> float:
        """When the batch was triggered, in seconds since the demo started (from the report's timestamp)."""
        from datetime import datetime

        try:
            stamp = datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00")).timestamp()
        except (KeyError, TypeError, ValueError):
            return default
        return round(stamp - self._wall0, 2)

    def _broker_lag(self, position: dict) -> int:
        try:
            latest = self._latest()
        except Exception:
            return 0
        return sum(max(latest.get(k, 0) - v, 0) for k, v in position.items())

    def start(self) -> None:
        """Show the controls, readout, warning line and chart, then run producer, query and poller in the background.

        Returns at once: a kernel applies slider moves only between cells, so the demo runs (and stops itself after
        `duration`) while the notebook is idle; `wait()` in the next cell collects the result.
        """
        import ipywidgets as W
        from IPython.display import display
        from kafka import KafkaConsumer

        from .producer import BackgroundProducer

        self._consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False)
        self._start_position = self._latest() if self.starting_offsets == "latest" else {}
        self._t0 = time.monotonic()  # the clock starts with the producer: records sent while Spark starts count
        self._wall0 = time.time()
        self._producer = BackgroundProducer(self.topic, rate=self.rate, bootstrap=self.bootstrap).start()
        self._query = self._start_query()
        stop = W.Button(description="stop demo", icon="stop", layout=W.Layout(width="120px"))
        stop.on_click(lambda _: self._done.set())
        shown = [self.sliders[c] for c in self.controls]
        display(W.VBox([*shown, W.HBox([stop, self.readout]), self.alert, self.chart.image]))
        self._thread = threading.Thread(target=self._run_poller, name="streamlab-lag-demo", daemon=True)
        self._thread.start()

    def _run_poller(self) -> None:
        try:
            self._poll()
        finally:
            self._done.set()
            self._shutdown()
            self.readout.value = self.readout.value.replace("</code>", " · stopped</code>")

    def _shutdown(self) -> None:
        with self._lock:
            if self._query is not None:
                self._query.stop()
            if self._producer is not None:
                self._producer.stop()
            if self._consumer is not None:
                self._consumer.close()
                self._consumer = None

    def stop(self) -> None:
        """Stop the poller, the query and the producer (safe to call twice)."""
        self._done.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=60)
        self._shutdown()

    def wait(self):
        """Block until the demo is over, stop everything, show a static chart and return the batches."""
        import pandas as pd
        from IPython.display import display

        if self._thread is not None:
            self._thread.join()
        self.stop()
        display(self.chart.static())
        from dataclasses import fields

        frame = pd.DataFrame([vars(b) for b in self.history], columns=[f.name for f in fields(_Batch)])
        # the same columns even when no batch ran
        return frame.rename(columns={"lag": "progress_lag", "max_behind": "maxOffsetsBehindLatest"})

    def run(self):
        """start() then wait() in one cell (for scripts: in a notebook the sliders only act between cells)."""
        self.start()
        return self.wait()


def attempt(fn, *args, **kwargs):
    """Call a learner's function for a check: None when it is not written yet, the error text when it raises."""
    if not callable(fn):
        return None
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # shown by the check as what was found
        return f"{type(exc).__name__}: {exc}"


def fake_progress(batch: int, latest: dict, end: dict, topic: str = "t", rows: int = 100) -> dict:
    """A minimal progress event for tests: one Kafka source with the given {partition: offset} latest and end."""
    as_json = lambda parts: {topic: {str(p): o for p, o in parts.items()}}  # noqa: E731
    return {"batchId": batch, "numInputRows": rows, "inputRowsPerSecond": 0.0, "processedRowsPerSecond": 0.0,
            "durationMs": {"triggerExecution": 0},
            "sources": [{"startOffset": as_json({p: max(0, o - rows) for p, o in end.items()}),
                         "endOffset": as_json(end), "latestOffset": as_json(latest), "numInputRows": rows}]}


def stop_between_batches(query, timeout: float = 10.0) -> None:
    """Stop `query` while no trigger is running if that happens within `timeout` s (a batch interrupted mid-write
    makes Spark log an expected, but alarming, task-abort trace), else stop it anyway."""
    deadline = time.monotonic() + timeout
    while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
        time.sleep(0.02)
    query.stop()


def data_batches(query) -> list[dict]:
    """The progress events of `query` that read data (idle triggers report numInputRows = 0), as dicts."""
    return [p for p in map(as_dict, query.recentProgress) if p.get("numInputRows")]


def wait_for_batches(query, n: int, timeout: float = 90.0) -> list[dict]:
    """Wait until `query` has finished `n` batches that read data; returns their progress events."""
    deadline = time.monotonic() + timeout
    while len(data_batches(query)) < n:
        if query.exception() is not None:
            raise RuntimeError(f"the query failed: {query.exception()}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the query finished fewer than {n} batches within {timeout:.0f} s")
        time.sleep(0.2)
    return data_batches(query)


@dataclass
class _Batch:
    """One micro-batch as LagDemo saw it: progress lag (latestOffset − endOffset) and broker lag when it was seen."""

    batch: int
    at: float
    rows: int
    lag: int
    cap: int | None
    input_rate: float
    processed_rate: float
    duration_ms: int
    broker_lag: int
    planned: float
    max_behind: int | None = None  # the connector's maxOffsetsBehindLatest (None: the offline fallback has none)
