"""The live loop: a demo's producers and query, and one background thread that follows them.

A notebook cell must return for the learner to see anything, so the demo runs in a thread of its own: it polls the
query's progress (every batch becomes a row of `batches`), the broker's latest offsets (the lag), plays the script,
restarts the query on the same checkpoint when a knob Spark reads at start moved (or after a crash injected on
purpose), redraws the chart once a second, and ends the demo when its time is up. It also watches what a learner
cannot see from the chart: a broker that stopped answering ends the demo within seconds with one line in the
demo's own alert naming the cause and the fix, so that `wait()` returns at once instead of sitting out its time.
"""
from __future__ import annotations

import re
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Callable

from streamlab.demo import settings as _settings
from streamlab.demo.settings import knob_text as _knob_text
from streamlab.lab import teardown
from streamlab.observe import lag as _lag
from streamlab.settings import Settings as _LabSettings
from streamlab.settings import settings as _lab_settings

FIRST_BATCH_WAIT_S = 90  # how long a demo waits for its first batch before its own duration starts
REDRAW_EVERY_S = 1.0  # the chart is redrawn at most once a second...
DRAW_SHARE = 1 / 3  # ...and for at most a third of the time: a PNG costs 0.15-0.5 s, more on a busy hub...
REDRAW_AT_MOST_S = 2.0  # ...but never less often than this (a kernel's first draw also imports matplotlib)
BROKER_PROBE_S = 2.0  # how often the loop asks whether the broker still answers
BROKER_MISSES = 2  # failed probes in a row that end the demo (the first batch of a loaded machine can be slow)
STOP_IDLE_WAIT_S = 10.0  # a stop waits this long at most for the query to be between batches...
RESTART_IDLE_WAIT_S = 1.0  # ...but a person's move only this long when batches outlast the trigger: such a query is
# never between batches, and a learner who typed a trigger must see it applied now, not 10 s later (the batch cut is
# replayed). Batches that fit in the trigger are let finish: the next idle moment comes within one interval. A
# script's or a controller's restart keeps the long wait: the query works on meanwhile, where a cut batch and a
# replay would cost a short race (module 05's Exercise 4) seconds.


STARTING_OFFSETS = ("latest", "earliest")
DEMO_SECONDS_ENV = "STREAMLAB_DEMO_SECONDS"  # a cap on a demo where nobody plays: a test's Run All, the site's run


running_demos: weakref.WeakSet = weakref.WeakSet()  # the demos running in this kernel


def stop_all() -> None:
    """End every demo still running (their queries and producers too); also runs when the kernel exits."""
    for demo in list(running_demos):
        try:
            demo.stop()
        except Exception:  # noqa: BLE001
            pass  # the broker or the session may already be gone


teardown.register("live demos", stop_all)


def nobody_watches() -> bool:
    """A graded run, or a run capped by $STREAMLAB_DEMO_SECONDS (a test's Run All, the site's): no one sees the chart
    until the demo ends, so it is drawn once, then (a quarter of a demo's kernel CPU went to redraws no one saw)."""
    return _lab_settings.grading or _LabSettings.demo_seconds.is_set()


def redraw_interval(draw_seconds: float) -> float:
    """Seconds until the next redraw after one that took `draw_seconds`: the chart backs off when drawing is slow
    (a loaded machine, a hub of many learners) so that it takes at most DRAW_SHARE of the time, up to a redraw
    every REDRAW_AT_MOST_S."""
    return min(REDRAW_AT_MOST_S, max(REDRAW_EVERY_S, draw_seconds / DRAW_SHARE))


def play_due(state, clock: float, now: float, play: Callable, ready: Callable[[], bool] = lambda: True) -> int:
    """The script player both kinds of demo use: play the steps of `state.pending_script` (in time order) due by
    `clock`, each noted in `state.applied` at `now` and handed to `play(step, now)`; returns how many it played.
    `ready()` holds a due step, and the rest behind it, until it says yes: module 9's kill steps wait so for a broker
    killed before to be back (FailoverDemo); a live demo's knob moves never wait."""
    played = 0
    while state.pending_script and state.pending_script[0][0] <= clock and ready():
        step = state.pending_script.pop(0)
        state.applied.append((round(now, 2), step))
        play(step, now)
        played += 1
    return played


@dataclass
class Source:
    """One more topic the demo's query reads, fed by its own producer (record i = `value_fn(i)`, key `key_fn(i)`),
    with its own rate slider, labelled `label`, when "rate" is a control."""

    rate: int = 100
    value_fn: Callable | None = None
    key_fn: Callable | None = None
    label: str = ""


@dataclass
class RunPlan:
    """What the demo runs and when it ends.

    The query reads the main topic from `starting_offsets` ("latest" or "earliest") on `bootstrap` (None: the
    lab's broker), fed by a producer whose record i is `value_fn(i)`, key `key_fn(i)`, its slider labelled `label`;
    `sources` {topic: Source} adds topics read by the same query, each with its own producer. `on_batch(batch_df,
    batch_id)` runs for every micro-batch in the demo's own foreachBatch (what it raises fails the query), and a
    failure whose error holds one of `restart_on` restarts the query on its checkpoint at once (an injected crash).
    The demo ends `duration` s after its first batch with data, `stop_after_script` batches after the script's last
    step, or once the script is done and the lag is at most `stop_when_caught_up` (a number, or "cap": the cap in
    force); with `drain` the producers stop first and the query reads all they sent (60 s at most)."""

    duration: float = 60.0
    starting_offsets: str = "latest"
    stop_after_script: int | None = None
    stop_when_caught_up: int | str | None = None
    bootstrap: str | None = None
    sources: dict = field(default_factory=dict)
    value_fn: Callable | None = None
    key_fn: Callable | None = None
    label: str = ""
    on_batch: Callable | None = None
    restart_on: tuple = ()
    drain: bool = False

    def __post_init__(self):
        self.duration = _settings.check_positive("duration (s)", self.duration)
        if self.starting_offsets not in STARTING_OFFSETS:
            raise _settings.KnobError(f"startingOffsets must be 'latest' or 'earliest' here, got "
                                      f"{self.starting_offsets!r}")
        if self.stop_after_script is not None:
            self.stop_after_script = _settings.check_positive("stop_after_script (batches)", self.stop_after_script,
                                                              whole=True, hi=10_000)
        if self.stop_when_caught_up not in (None, "cap"):
            self.stop_when_caught_up = _settings.check_positive("stop_when_caught_up (records)",
                                                                self.stop_when_caught_up, whole=True, hi=10_000_000)
        self.sources = dict(self.sources or {})
        for name, source in self.sources.items():
            source.rate = _settings.check_rate(source.rate, f"{source.label or name} rate")
        self.restart_on = tuple(self.restart_on)


class LiveLoop:
    """The producers, the query and the polling thread of one demo: an object the demo holds (`demo.loop`).

    What it shares with the controls is the demo's `state` (a DemoState); the rest below is its own. Of the demo it
    asks the session and topic, the charts, the clock (now, settings) and the chart's picture (png); of the demo's
    controls (`demo.controls`), what may move (names, knobs, knob_values, script_in) and the view: _show_readout,
    _show_picture, _show_last, show_ended, warn, and _play for a script's step. Two steps are the demo's, so that a
    module's demo can add to them (ControlledDemo, CrashDemo): `_apply_script` at every look and `_drain` at the
    end; the demo's own versions hand them back to the loop.
    """

    def __init__(self, demo, plan: RunPlan):
        """The loop of `demo`, running what `plan` says: what it runs, what it saw, and the threads' plumbing."""
        from streamlab.lab.lifecycle import new_checkpoint

        self.demo = demo
        self.duration, self.starting_offsets, self.bootstrap = plan.duration, plan.starting_offsets, plan.bootstrap
        self.stop_after_script, self.stop_when_caught_up = plan.stop_after_script, plan.stop_when_caught_up
        self.sources = plan.sources
        self.topics = [self.demo.topic, *(t for t in self.sources if t != self.demo.topic)]
        self.value_fn, self.key_fn, self.label = plan.value_fn, plan.key_fn, plan.label or self.demo.topic
        self.on_batch, self.restart_on, self.drain = plan.on_batch, plan.restart_on, plan.drain
        self.checkpoint = new_checkpoint("demo")  # kept after the demo ends; cleanup() deletes it
        # the shared state (what it saw, the clients, the moves, the end) is `self.state`, a DemoState
        # plumbing of its own
        self._run = 0
        self._run_stop = threading.Event()
        self._tasks: dict = {}  # (run, batch id) -> tasks, written by foreachBatch
        self._consumer = self.thread = None
        self._quiet = None
        self._position: dict = {}
        self._seen = -1
        self._last_draw = 0.0
        self._draw_every = REDRAW_EVERY_S
        self._probed_at, self._misses = 0.0, 0
        self._stop_at_batches: int | None = None
        self.lag = 0  # the broker-measured total lag at the last look
        # One look of the poller, step by step: each takes the look's `now`, and one that returns True ends the look
        # early (the query failed while it looked: the next look restarts it, or ends the demo).
        self.steps: list[tuple[str, Callable]] = [
            ("script", lambda now: self.demo._apply_script(now)),  # due script steps (a configuration adds its own)
            ("collect", lambda now: self._collect(self.state.query)),  # finished batches become rows
            ("sample", self._look_at_lag),  # the broker's latest offsets: the lag
            ("readout", lambda now: self.demo.controls._show_readout(now)),
            ("picture", self._redraw),  # the chart, at most once a second (never where nobody watches)
        ]

    @property
    def state(self):
        """The demo's DemoState, shared with the controls."""
        return self.demo.state

    def start(self) -> None:
        """Start the clock, the producers and the query (the demo shows its box next, then calls follow())."""
        from kafka import KafkaConsumer

        # short client timeouts: the loop must notice a lost broker in seconds, not in kafka-python's 30 s
        self._consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False,
                                       request_timeout_ms=5_000)
        # Before its first batch a query starting from "latest" is at the offsets Kafka had when it started.
        self._position = self._latest() if self.starting_offsets == "latest" else {}
        self.state.t0, self.state.wall0 = time.monotonic(), time.time()  # the clock starts with the producer
        self.state.timeline.append((0.0, self.demo.settings))
        self.state.producer = self._new_producer()
        for topic, source in self.sources.items():
            self.state.producers[topic] = self._source_producer(topic, source)
        if self.restart_on:  # failures on purpose: the chart shows them, Spark's log need not
            from streamlab.observe.replay import quiet_query_errors

            self._quiet = quiet_query_errors(self.demo.spark)
            self._quiet.__enter__()
        self.state.query = self._start_query()
        running_demos.add(self.demo)

    def follow(self) -> None:
        """Start the polling thread, which runs the looks until the demo ends, then stops everything."""
        self.thread = threading.Thread(target=self._run_poller, name="streamlab-live-demo", daemon=True)
        self.thread.start()

    def _new_producer(self):
        from streamlab.lab.producer import BackgroundProducer

        # With a partitions control, write round-robin to every partition so each has records in every batch.
        parts = range(self.state.stream["partitions"]) if "partitions" in self.demo.controls.names else None
        return BackgroundProducer(self.demo.topic, rate=self.state.stream["rate"], partitions=parts, key_fn=self.key_fn,
                                  value_fn=self.value_fn, bootstrap=self.bootstrap).start()

    def _source_producer(self, topic: str, source):
        from streamlab.lab.producer import BackgroundProducer

        return BackgroundProducer(topic, rate=source.rate, key_fn=source.key_fn, value_fn=source.value_fn,
                                  bootstrap=self.bootstrap).start()

    def _start_query(self):
        s = self.state.stream
        reader = (self.demo.spark.readStream.format("kafka")
                  .option("kafka.bootstrap.servers", self.bootstrap)
                  .option("subscribe", ",".join(self.topics))
                  .option("startingOffsets", self.starting_offsets))
        if s["cap"]:
            reader = reader.option("maxOffsetsPerTrigger", str(s["cap"]))
        if s["min_partitions"]:
            reader = reader.option("minPartitions", str(s["min_partitions"]))
        if s["min_offsets"]:
            reader = reader.option("minOffsetsPerTrigger", str(s["min_offsets"]))
            if s["max_delay_seconds"]:
                reader = reader.option("maxTriggerDelay", f"{int(round(s['max_delay_seconds'] * 1000))}ms")
        cost_s, stop, run, tasks = s["cost_ms"] / 1000, self._run_stop, self._run, self._tasks
        count_tasks, on_batch = "tasks" in self.demo.charts, self.on_batch

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

    def _stop_query(self, idle_wait: float = STOP_IDLE_WAIT_S) -> None:
        """Stop the running query, between batches if it gets there within `idle_wait` s (a batch cut mid-write
        logs alarming traces), else at once: Spark replays the cut batch, its `offsets/N` without `commits/N`, when
        the query restarts. Meanwhile the poller's work goes on: batches collected, the readout kept live."""
        query = self.state.query
        if query is None:
            return
        self._run_stop.set()  # the simulated work of the running batch ends at once
        deadline = time.monotonic() + idle_wait
        shown = time.monotonic()
        try:
            while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
                if time.monotonic() - shown >= 0.25:
                    self._collect(query)
                    self.demo.controls._show_readout(self.demo.now())
                    shown = time.monotonic()
                time.sleep(0.02)
            self._collect(query)  # the last batches of this run
        finally:
            query.stop()

    def _restart(self) -> None:
        with self.state.lock:
            knobs, self.state.pending_restart = self.state.pending_restart, []
            wanted, self.state.wanted = self.state.wanted, {}
            by_person, self.state.person_moved = self.state.person_moved, False
            self.state.restarting = dict(wanted)  # the readout says "restarting with …" until the new query runs
        if not knobs:
            return
        try:
            self.demo.controls._show_readout(self.demo.now())
            prompt = by_person and self._never_idle()
            self._stop_query(idle_wait=RESTART_IDLE_WAIT_S if prompt else STOP_IDLE_WAIT_S)
            before = self.demo.settings
            for key, value in wanted.items():
                self.state.stream[key] = value  # checked by set()
            changed = [_knob_text(k, self.state.stream[k]) for k in wanted if self.state.stream[k] != before[k]]
            own = self.demo.controls.knobs
            changed += [f"{own[k].label} {self.demo.controls.knob_values[k]}" for k in dict.fromkeys(knobs) if k in own]
            self._relaunch("restart: " + (", ".join(changed) or "same settings"))
        finally:
            self.state.restarting = {}

    def _never_idle(self) -> bool:
        """Whether the query is never between batches: the demo's last batch took at least the trigger interval (or
        the trigger is "as fast as possible"), so the next one starts as soon as it ends. False before any batch."""
        if not self.state.history:
            return False
        last = self.state.history[-1]
        trigger_ms = self.state.stream["trigger_seconds"] * 1000
        return not trigger_ms or (last["duration_ms"] or 0) >= trigger_ms

    def _relaunch(self, label: str) -> None:
        """Start the query again on the same checkpoint, as a new run, marked `label` on the chart."""
        self._run += 1
        self._run_stop = threading.Event()
        self._seen = -1
        at = self.demo.now()  # before start(): the new query may plan its first batch before start() returns
        self.state.query = self._start_query()
        self.state.restarts.append((at, label))
        self.state.timeline.append((at, self.demo.settings))

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
        for producer in [self.state.producer, *self.state.producers.values()]:
            if producer is not None:
                producer.stop()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            query = self.state.query
            if query is None or not query.isActive:
                if query is not None and query.exception() is not None and self._restart_after(
                        query, query.exception()):
                    continue
                return
            self._collect(query)
            latest = self._latest()
            if all(self._position.get(k, 0) >= v for k, v in latest.items() if v):
                self._sample(self.demo.now())  # the readout's last lag: 0
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
        return round(stamp - self.state.wall0, 2)

    def _collect(self, query) -> None:
        now = self.demo.now()
        # recentProgress costs a JVM round trip per event Spark keeps (up to 100), twice a second: lastProgress
        # is one, and enough unless more than one batch ended since the last look
        last = _lag.as_dict(query.lastProgress)
        if last.get("batchId", -1) <= self._seen:
            return
        for raw in [last] if last["batchId"] == self._seen + 1 else list(query.recentProgress):
            p = _lag.as_dict(raw)
            if p.get("batchId", -1) <= self._seen or p.get("numInputRows") is None:
                continue
            self._seen = p["batchId"]
            self.add_event(p, now)

    def add_event(self, p: dict, now: float, latest: dict | None = None) -> dict:
        """Record one progress event (a dict) seen at `now` s; returns its row (the poller and the tests call it)."""
        self.state.events.append(p)
        sources = p.get("sources") or [{}]
        source = sources[0]
        starts, ends = _lag.source_offsets(source.get("startOffset")), _lag.source_offsets(source.get("endOffset"))
        if len(self.topics) == 1:
            start, end = starts.get(self.demo.topic, {}), ends.get(self.demo.topic)
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
        restart = bool(self.state.restarts) and not any(b["run"] == self._run for b in self.state.history)
        s = self.state.stream
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
        self.state.history.append(row)
        if row["rows"] and self.state.live_from is None:
            self.state.live_from = now  # durations and the script count from here
        return row

    def _apply_script(self, now: float) -> None:
        if self.state.live_from is None:
            return
        state = self.state
        by_batches = self.demo.controls.script_in == "batches"
        clock = len([b for b in state.history if b["rows"]]) if by_batches else now - state.live_from
        # the controls move the knob, as a person's move would (controls.py)
        if play_due(state, clock, now, self.demo.controls._play) and not state.pending_script \
                and self.stop_after_script is not None:
            self._stop_at_batches = len(state.history) + self.stop_after_script

    def _sample(self, now: float) -> int:
        latest = self._latest()
        per_partition = {k: max(latest[k] - self._position.get(k, 0), 0) for k in sorted(latest)}
        total = sum(per_partition.values())
        self.state.samples.append({"t": round(now, 2), "lag": total, "partitions": per_partition})
        return total

    def time_left(self, now: float) -> float | None:
        """Seconds until the demo ends by itself (None before its first batch)."""
        if self.state.live_from is None:
            return None
        return max(self.state.live_from + self.duration + self.state.extra_s - now, 0.0)

    def _over(self, now: float, lag: int) -> bool:
        if self.state.live_from is None:
            return now >= self.duration + FIRST_BATCH_WAIT_S  # no batch at all: give up rather than run forever
        if self.time_left(now) <= 0:
            return True
        stop_at = self._stop_at_batches
        if stop_at is not None and not self.state.touched and len(self.state.history) >= stop_at:
            return True
        threshold = self.stop_when_caught_up
        if threshold == "cap":
            threshold = self.state.stream["cap"] or 0
        return (threshold is not None and not self.state.pending_script and bool(self.state.applied)
                and now - self.state.applied[-1][0] > 1 and lag <= threshold)

    def _broker_lost(self) -> str | None:
        """One line naming the cause and the fix when the demo's broker stopped answering, else None (asked at most
        every BROKER_PROBE_S; the lab's BrokerWatch, which stops the session's queries, is read when it has spoken)."""
        from streamlab.lab.broker import probe

        if time.monotonic() - self._probed_at < BROKER_PROBE_S:
            return None
        self._probed_at = time.monotonic()
        if probe(self.bootstrap, timeout=1.0) == "kafka":
            self._misses = 0
            return None
        self._misses += 1
        if self._misses < BROKER_MISSES:
            return None
        return (f"The Kafka broker at {self.bootstrap} stopped answering, so the demo stopped. Start it again "
                "(`python -m streamlab broker start` in a terminal, or re-run the setup cell), then re-run the demo's "
                "cells.")

    def _poll(self) -> None:
        while not self.state.done.is_set():
            lost = self._broker_lost()
            if lost is not None:
                self.state.error = self.state.lost = lost
                self.demo.controls.warn(lost)
                break
            if self.state.pending_restart:
                self._restart()
            query = self.state.query
            if not query.isActive:  # stopped by cleanup(), by the lab's broker watch, or failed
                exc = query.exception()
                if exc is not None and self._restart_after(query, exc):
                    continue
                if exc is not None:
                    from streamlab.errors import first_line

                    self.state.error = first_line(exc, limit=300)
                    self.demo.controls.warn(f"the query failed: {self.state.error}")
                elif not self.state.done.is_set():  # stopped by someone else: say who, if it was the broker watch
                    self._probed_at, self._misses = 0.0, BROKER_MISSES - 1
                    lost = self._broker_lost()
                    if lost is not None:
                        self.state.error = self.state.lost = lost
                        self.demo.controls.warn(lost)
                break
            now = self.demo.now()
            if any(step(now) for _name, step in self.steps):
                continue  # the query failed while we looked: restart it (or end) before the next look
            if self._over(now, self.lag):
                break
            self.state.wake.wait(0.5)
            self.state.wake.clear()

    def _look_at_lag(self, now: float) -> bool:
        """The "sample" step: the lag now; True when the query failed meanwhile."""
        self.lag = self._sample(now)
        return not self.state.query.isActive

    def _redraw(self, now: float) -> None:
        """The "picture" step: redraw the chart when it is due, backing off when drawing is slow."""
        if time.monotonic() - self._last_draw >= self._draw_every and not nobody_watches():
            began = time.monotonic()
            self.demo.controls._show_picture(self.demo.png())
            self._last_draw = time.monotonic()
            self._draw_every = redraw_interval(self._last_draw - began)

    def _run_poller(self) -> None:
        try:
            self._poll()
        except Exception as exc:  # the broker went away, the session stopped: end the demo and say why in one line
            from streamlab.errors import first_line

            self._probed_at, self._misses = 0.0, BROKER_MISSES - 1
            self.state.error = self._broker_lost() or first_line(exc, limit=300)
            error = self.state.error
            self.demo.controls.warn(error if error.startswith("The Kafka broker") else f"the demo stopped: {error}")
        finally:
            self._finish()

    def _finish(self) -> None:
        with self.state.lock:
            if self.state.ended:
                return
            self.state.ended = True
        self.state.done.set()
        self.demo.controls.show_ended()  # first, so that nothing is moved while the demo stops
        if self.state.lost is not None:
            # Stopping a query, a producer and a consumer of a lost broker can take each their client's timeout:
            # the learner has the line already, so stop them in the background and let wait() return now.
            threading.Thread(target=self._stop_everything, name="streamlab-demo-stop", daemon=True).start()
        else:
            self._stop_everything()
        self.demo.controls._show_last()

    def _stop_everything(self) -> None:
        """Stop the query (after the drain, if asked), the producers and the consumer; never raises."""
        if self.drain and self.state.error is None:
            try:
                self.demo._drain()  # the demo's step: a configuration may add to it (CrashDemo)
            except Exception:  # noqa: BLE001
                pass  # the broker or the session is gone: stop what is left
        try:
            self._stop_query()
        except Exception:  # noqa: BLE001
            pass  # already stopped by cleanup(), or the broker is gone
        for producer in [self.state.producer, *self.state.producers.values()]:
            if producer is not None:
                try:
                    producer.stop()
                except Exception:  # noqa: BLE001 - the broker is gone: the producer says what it left in its repr
                    pass
        if self._quiet is not None:
            self._quiet.__exit__(None, None, None)
            self._quiet = None
        if self._consumer is not None:
            try:
                self._consumer.close()
            except Exception:  # noqa: BLE001
                pass
            self._consumer = None
        running_demos.discard(self.demo)

