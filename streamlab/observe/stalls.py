"""Stalled queries made on purpose, so a learner diagnoses one from what Spark reports (module 9's Exercise 6).

Why: at 03:00 the question is not "what is a micro-batch" but "this query's dashboard stopped moving: why?". The
answer is in three things anyone can read from a running query: its recent progress events (`lastProgress`, as
Spark gives them), `query.status`, and how long ago the last event came. So `run(spark, cause)` starts a real
streaming query on the lab's Kafka (one broker, or the cluster) in one of four conditions, waits until the
condition shows, takes those three readings and stops everything it started:
- "capped": `maxOffsetsPerTrigger` far below the producer's rate. Batches run back to back, each reads the cap,
  and the latest offset runs away from the batch's end;
- "slow sink": a `foreachBatch` that takes 1.5 s a batch. Most of each trigger is `addBatch`;
- "stuck batch": a `foreachBatch` that waits (a lock, a hung call). No progress for many trigger intervals, while
  the status says a trigger is active;
- "idle": nothing new to read. Healthy: the events read 0 rows and nothing waits.

Nothing here pauses or stops a broker (the lab's broker may be a workshop's, shared). Each run takes 4-12 s.
`runs(spark)` makes one run of each, for module 9's check (streamlab.course.exercises.m09.ex6_diagnose).
"""
from __future__ import annotations

import json
import threading
import time
from datetime import datetime

CAUSES = ("capped", "slow sink", "stuck batch", "idle")
ORDER = ("idle", "capped", "slow sink", "stuck batch")  # runs()' order: a cold first query only delays idle's data
SHOWN = 3  # the progress events a run hands over: the last few, as a dashboard shows them
CAP = 50  # the capped query's maxOffsetsPerTrigger, where its producer sends 1,000 records a second
SINK_S = 1.5  # the slow sink's time per batch
STUCK_AFTER = 4  # the stuck query's batches 0-3 run; batch 4 waits (the events shown: 1-3, after the first)
SILENT_S = 5.0  # a stuck run is read once its last event is this old, and 4 times its longest recent batch
TIMEOUT_S = 25.0  # a run that shows nothing of its condition by then fails with one line
IDLE_EVERY = "1000"  # ms between an idle query's progress events in the idle run (Spark's default is 10 s)
_NO_DATA = "spark.sql.streaming.noDataProgressEventInterval"


def ended_at(event: dict) -> float:
    """When a progress event was reported, in seconds since the epoch: its trigger's start plus its duration."""
    started = datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).timestamp()
    return started + (event.get("durationMs") or {}).get("triggerExecution", 0) / 1000


def reading(query, shown: int = SHOWN) -> dict:
    """What a dashboard reads from `query` now: its last `shown` progress events (Spark's JSON, as dicts), its
    status, and the seconds since the last event."""
    # Spark's own JSON of each event (PySpark 4's objects hold UUIDs and offsets as JSON text): plain data, as the
    # Spark UI, an event listener and Scala's `lastProgress.json` show it.
    progress = [json.loads(p.json) for p in query.recentProgress[-shown:]]
    status = dict(query.status)
    silent = time.time() - ended_at(progress[-1]) if progress else None
    return {"progress": progress, "status": status, "silent_s": None if silent is None else round(silent, 2)}


def run(spark, cause: str, timeout: float = TIMEOUT_S) -> dict:
    """Start a real query in condition `cause` (one of CAUSES), read it once the condition shows, stop it; returns
    {"progress": [the last events], "status": query.status, "silent_s": seconds since the last event}."""
    if cause not in CAUSES:
        raise ValueError(f"cause {cause!r} is not one of {', '.join(CAUSES)}")
    return _Run(spark, cause, timeout).go()


def runs(spark) -> dict:
    """{cause: run(spark, cause)} for every cause, made now (about 30 s)."""
    return {cause: run(spark, cause) for cause in ORDER}


def stalled_query(spark) -> dict:
    """The section's live example: one real query that stopped moving (what is wrong is for the learner to say)."""
    return run(spark, "stuck batch")


def table(run_: dict):
    """A run's progress events, one row each (batch, start, rows, addBatch and trigger ms, offsets behind latest),
    with its status and silence as the table's caption."""
    import pandas as pd

    from streamlab.observe.lag import total_lag

    rows = []
    for p in run_["progress"]:
        d = p.get("durationMs") or {}
        rows.append({"batch": p.get("batchId"), "started": p["timestamp"][11:22], "numInputRows": p.get("numInputRows"),
                     "addBatch ms": d.get("addBatch"), "triggerExecution ms": d.get("triggerExecution"),
                     "latestOffset − endOffset": total_lag(p)})
    frame = pd.DataFrame(rows)
    status = run_["status"]
    return frame.style.hide(axis="index").set_caption(
        f"status: {status.get('message')!r}, isTriggerActive={status.get('isTriggerActive')}, "
        f"isDataAvailable={status.get('isDataAvailable')}; last event {run_['silent_s']} s ago")


class _Run:
    """One run: a fresh topic, a producer where the condition needs one, the query, the wait, the reading."""

    def __init__(self, spark, cause: str, timeout: float):
        self.spark, self.cause, self.timeout = spark, cause, timeout
        self.release = threading.Event()  # the stuck batch waits on it; set before the query is stopped

    def go(self) -> dict:
        from streamlab.lab.broker import ensure_broker
        from streamlab.lab.lifecycle import new_checkpoint, new_topic
        from streamlab.lab.producer import BackgroundProducer, produce
        from streamlab.observe.progress import stop_between_batches

        bootstrap = ensure_broker()
        # one name, one sink and one checkpoint name for every cause: a run tells its cause only by what it does
        topic = new_topic("stall", partitions=2)
        rate = {"capped": 1000, "slow sink": 200, "stuck batch": 100}.get(self.cause)
        if self.cause == "capped":
            produce(topic, 2000, bootstrap=bootstrap, progress=False)  # a backlog from the first batch on
        elif self.cause == "idle":
            produce(topic, 100, bootstrap=bootstrap, progress=False)
        producer = BackgroundProducer(topic, rate=rate, bootstrap=bootstrap).start() if rate else None
        query = None
        try:
            query = self._start(topic, bootstrap, new_checkpoint("stall"))
            return self._wait(query)
        finally:
            self.release.set()
            if query is not None:
                try:  # back to back, a capped or slow query has no gap between batches to wait for
                    stop_between_batches(query, timeout=5 if self.cause in ("idle", "stuck batch") else 0)
                except Exception:  # noqa: BLE001 - a query that failed is stopped already; _wait said why
                    pass
            if producer is not None:
                producer.stop(timeout=2)

    def _start(self, topic: str, bootstrap: str, checkpoint: str):
        reader = (self.spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                  .option("subscribe", topic).option("startingOffsets", "earliest"))
        if self.cause == "capped":
            reader = reader.option("maxOffsetsPerTrigger", str(CAP))  # 50 a batch, where 1,000 a second arrive
        writer = reader.load().writeStream.option("checkpointLocation", checkpoint)
        sink = {"slow sink": self._slow_sink, "stuck batch": self._stuck_sink}.get(self.cause, self._quick_sink)
        writer = writer.foreachBatch(sink)  # one kind of sink: its description in the events names no cause
        if self.cause in ("stuck batch", "idle"):
            writer = writer.trigger(processingTime="500 milliseconds")
        if self.cause != "idle":
            return writer.start()
        # An idle query reports an event every 10 s by default; here every second, so the run shows some within
        # seconds. The query keeps the value it started with: the session's own is put back at once.
        before = self.spark.conf.get(_NO_DATA, None)
        self.spark.conf.set(_NO_DATA, IDLE_EVERY)
        try:
            return writer.start()
        finally:
            if before is None:
                self.spark.conf.unset(_NO_DATA)
            else:
                self.spark.conf.set(_NO_DATA, before)

    def _quick_sink(self, batch_df, batch_id: int) -> None:
        """A sink that only reads its batch (the capped and the idle runs)."""
        batch_df.count()

    def _slow_sink(self, batch_df, batch_id: int) -> None:
        """A sink that takes SINK_S a batch (a slow database, a remote API), until the run ends."""
        batch_df.count()
        self.release.wait(SINK_S)

    def _stuck_sink(self, batch_df, batch_id: int) -> None:
        """A sink whose batch STUCK_AFTER waits (a lock, a hung call) until the run ends."""
        batch_df.count()
        if batch_id >= STUCK_AFTER:
            self.release.wait(self.timeout + 10)

    def _shows(self, now: dict) -> bool:
        """Whether the reading `now` shows the run's condition (with a margin a learner's rule can rely on)."""
        from streamlab.observe.lag import total_lag

        progress, status = now["progress"], now["status"]
        if len(progress) < SHOWN:
            return False
        last = progress[-1]
        if self.cause == "capped":  # every batch read at most the cap, and ended behind the latest offset
            return all(0 < p.get("numInputRows", 0) <= CAP and total_lag(p) > 0
                       for p in progress)
        took = last.get("durationMs") or {}
        if self.cause == "slow sink":  # a batch after the first, with rows, most of it spent in the sink
            return (last.get("batchId", 0) >= 2 and last.get("numInputRows", 0) > 0
                    and took.get("addBatch", 0) > 0.6 * took.get("triggerExecution", 0))
        if self.cause == "stuck batch":
            longest = max((p.get("durationMs") or {}).get("triggerExecution", 0) for p in progress) / 1000
            return (last.get("batchId") == STUCK_AFTER - 1 and status.get("isTriggerActive") is True
                    and now["silent_s"] >= max(SILENT_S, 4 * longest))
        return last.get("numInputRows") == 0 and sum(p.get("numInputRows") == 0 for p in progress) >= 2

    def _wait(self, query) -> dict:
        from streamlab.errors import LabError

        deadline = time.monotonic() + self.timeout
        while True:
            if query.exception() is not None:
                raise LabError(f"the {self.cause} run's query failed: {str(query.exception()).splitlines()[0]}")
            now = reading(query)
            if self._shows(now):
                return now
            if time.monotonic() > deadline:
                raise LabError(f"the {self.cause} run showed nothing of its condition within {self.timeout:.0f} s "
                               "(a very busy machine?): run the cell again")
            time.sleep(0.2)

