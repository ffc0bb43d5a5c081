"""Kafka in, Kafka out: what async progress tracking saves and costs, and how an open transaction stalls a reader.

`asyncProgressTrackingEnabled` (3.4, `AsyncProgressTrackingMicroBatchExecution`) writes the offset and commit logs
in the background, at most every `asyncProgressTrackingCheckpointIntervalMs` (default 1000 ms), instead of twice
per batch: less latency per batch, but a restart re-runs every batch since the last write, so it suits an
at-least-once sink such as Kafka's (the only sinks it accepts: Kafka, noop, console, memory). A reader with
`kafka.isolation.level=read_committed` sees a partition only up to its last stable offset: one transaction left
open on an input topic holds every record behind it, committed or not, until it ends.
"""
from __future__ import annotations

import time

from streamlab.errors import first_line
from streamlab.lab.broker import ensure_broker
from streamlab.lab.lifecycle import new_checkpoint


def log_files(checkpoint: str) -> dict:
    """How many batch files the checkpoint's `offsets/` and `commits/` folders hold."""
    from pathlib import Path

    return {name: sum(1 for f in (Path(checkpoint) / name).glob("*") if f.name.isdigit())
            for name in ("offsets", "commits")}


def relay(spark, source: str, target: str, seconds: float, cap: int = 100, bootstrap: str | None = None,
          **writer_options) -> dict:
    """Copy `source` to `target` with the Kafka sink for `seconds` (default trigger, `cap` offsets a batch); what it left.

    {"batches": batches that read data, "rows", "offsets": files in offsets/, "commits": files in commits/,
    "error": the first line of an error (at start or while running) or None}.
    """
    bootstrap = bootstrap or ensure_broker()
    checkpoint = new_checkpoint("relay")
    try:
        query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                 .option("subscribe", source).option("startingOffsets", "earliest")
                 .option("maxOffsetsPerTrigger", cap).load()
                 .selectExpr("key", "value").writeStream.format("kafka")
                 .option("kafka.bootstrap.servers", bootstrap).option("topic", target)
                 .option("checkpointLocation", checkpoint)
                 .options(**{k: str(v) for k, v in writer_options.items()}).start())
    except Exception as exc:
        return {"batches": 0, "rows": 0, **log_files(checkpoint), "error": first_line(exc)}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and query.isActive:
        time.sleep(0.2)
    between = time.monotonic() + 10  # stop between batches, as the live demo does
    while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < between:
        time.sleep(0.02)
    error = query.exception()
    query.stop()
    data = [p for p in query.recentProgress if p["numInputRows"]]
    return {"batches": len(data), "rows": sum(p["numInputRows"] for p in data), **log_files(checkpoint),
            "error": None if error is None else first_line(error)}


def refusal(spark, topic: str, bootstrap: str | None = None, **trigger) -> str | None:
    """The error of an async-progress query on `topic` into foreachBatch (or with `trigger`), None if it starts."""
    bootstrap = bootstrap or ensure_broker()
    stream = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).load())
    writer = stream.writeStream.option("asyncProgressTrackingEnabled", "true")
    writer = (writer.format("noop").trigger(**trigger) if trigger
              else writer.foreachBatch(lambda df, batch_id: None))
    try:
        query = writer.option("checkpointLocation", new_checkpoint("async-refused")).start()
        query.awaitTermination(30)
        query.stop()
        return None if query.exception() is None else first_line(query.exception())
    except Exception as exc:
        return first_line(exc)


class OpenTransaction:
    """A transactional producer that sends records to a topic and leaves its transaction open until `end()`."""

    def __init__(self, topic: str, records: int, bootstrap: str | None = None, partition: int = 0):
        from kafka import KafkaProducer

        from streamlab.lab.access import prefixed

        self.producer = KafkaProducer(bootstrap_servers=bootstrap or ensure_broker(),
                                      transactional_id=prefixed(f"open-{topic}"), enable_idempotence=True)
        self.producer.init_transactions()
        self.producer.begin_transaction()
        for i in range(records):
            self.producer.send(topic, value=f"in-transaction-{i}".encode(), partition=partition)
        self.producer.flush()

    def end(self, commit: bool = True) -> None:
        """Commit (or abort) the open transaction and close the producer."""
        if commit:
            self.producer.commit_transaction()
        else:
            self.producer.abort_transaction()
        self.producer.close(timeout=10)


def committed_read(spark, topic: str, bootstrap: str | None = None) -> dict:
    """Run `topic` with read_committed from earliest (availableNow); rows read and where Kafka said it ends.

    {"rows", "latestOffset": {partition: offset} the source saw (the last stable offset), "error"}.
    """
    import json

    bootstrap = bootstrap or ensure_broker()
    query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest")
             .option("kafka.isolation.level", "read_committed").load()
             .writeStream.format("noop").option("checkpointLocation", new_checkpoint("committed"))
             .trigger(availableNow=True).start())
    try:
        query.awaitTermination(60)
        error = None
    except Exception as exc:
        error = first_line(exc)
    query.stop()
    latest = {}
    for event in query.recentProgress:
        for source in event["sources"]:
            seen = source.get("latestOffset")
            seen = json.loads(seen) if isinstance(seen, str) else seen
            if isinstance(seen, dict) and topic in seen:
                latest = {int(p): int(o) for p, o in seen[topic].items()}
    return {"rows": sum(p["numInputRows"] for p in query.recentProgress), "latestOffset": latest, "error": error}
