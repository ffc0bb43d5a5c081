"""Live proofs of a reference sheet: small runs on the real stack that return plain data, and one ✓/✗ line per claim.

Each run is short (a `load()` that fails or not, a one-row batch write, an `availableNow` query over a small
backlog), so a whole sheet can be proven in well under a minute. Results are plain dicts and lists, so exercise
checks can read them without touching Spark objects.
"""
from __future__ import annotations

import time
import uuid

from streamlab.lab.broker import ensure_broker
from streamlab.lab.lifecycle import new_checkpoint

# The settings of the DStreams API that Structured Streaming never reads.
DSTREAM_SETTINGS = {"spark.streaming.backpressure.enabled": "true",
                    "spark.streaming.backpressure.initialRate": "10",
                    "spark.streaming.kafka.maxRatePerPartition": "10",
                    "spark.streaming.receiver.maxRate": "10"}

_claims: dict[str, dict] = {}  # by claim text, so a re-run cell replaces its verdicts instead of adding more


def claim(ok: bool, text: str, seen: str = "") -> None:
    """Print `✓ text` or `✗ text (seen: …)` and remember the verdict (see `verdicts()`)."""
    ok = bool(ok)
    _claims.pop(text, None)
    _claims[text] = {"claim": text, "ok": ok, "seen": seen}
    print(("✓ " if ok else "✗ ") + text + (f"  (seen: {seen})" if seen else ""))
    # None, so a cell ending in a claim shows no Out[] line


def verdicts() -> list[dict]:
    """Every claim checked so far in this kernel (the latest verdict of each): {"claim", "ok", "seen"}."""
    return list(_claims.values())


def _reader(spark, options: dict, bootstrap: str | None):
    reader = spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap or ensure_broker())
    return reader.options(**{k: str(v) for k, v in options.items()})


def load_error(spark, options: dict, bootstrap: str | None = None) -> str | None:
    """The one-line error `readStream.format("kafka")...load()` raises with these options, or None when it loads."""
    from streamlab.errors import first_line

    try:
        _reader(spark, options, bootstrap).load()
        return None
    except Exception as exc:  # the point of the call: which options the connector refuses at load()
        return first_line(exc)


def stream_columns(spark, options: dict, bootstrap: str | None = None) -> list[str]:
    """The columns of a Kafka stream loaded with these options."""
    return list(_reader(spark, options, bootstrap).load().columns)


def sink_write(spark, select: list[str], options: dict, bootstrap: str | None = None) -> str | None:
    """Write one row, shaped by SQL expressions `select`, with a batch Kafka write; the error line, or None."""
    from streamlab.errors import first_line

    try:
        (spark.range(1).selectExpr(*select).write.format("kafka")
         .option("kafka.bootstrap.servers", bootstrap or ensure_broker())
         .options(**{k: str(v) for k, v in options.items()}).save())
        return None
    except Exception as exc:
        return first_line(exc)


def fill(topic: str, per_partition: dict, bootstrap: str | None = None) -> dict:
    """Write `n` records into each partition `p` of {p: n}; returns the topic's latest offsets afterwards."""
    from streamlab.observe.lag import latest_offsets
    from streamlab.lab.producer import produce

    for partition, n in sorted(per_partition.items()):
        if n:
            produce(topic, int(n), partitions=[int(partition)], bootstrap=bootstrap, progress=False)
    return latest_offsets(topic, bootstrap)[topic]


def available_now(spark, topic: str, options: dict | None = None, *, checkpoint: str | None = None,
                  bootstrap: str | None = None, timeout: float = 90.0, trigger: dict | None = None) -> dict:
    """Run `topic` through an availableNow query (extra reader `options`) to its end; what it did, as plain data.

    {"checkpoint", "batches": [{"batch", "rows", "partitions": {p: rows}}] for batches that read data,
    "progress": [progress dicts of those batches], "stopped": it ended by itself, "error": text or None,
    "seconds": wall time}. Pass the `checkpoint` of an earlier run to restart that query, and `trigger`
    (keyword arguments of `.trigger()`, e.g. {"once": True}) for another trigger that stops by itself.
    """
    from streamlab.errors import first_line
    from streamlab.observe.progress import as_dict

    checkpoint = checkpoint or new_checkpoint("claims")
    batches: list = []

    def record(df, batch_id):
        counts = {int(r["partition"]): int(r["count"]) for r in df.groupBy("partition").count().collect()}
        if counts:
            batches.append({"batch": batch_id, "rows": sum(counts.values()), "partitions": dict(sorted(counts.items()))})

    t0 = time.monotonic()
    try:
        query = (_reader(spark, {"subscribe": topic, **(options or {})}, bootstrap).load()
                 .writeStream.foreachBatch(record).option("checkpointLocation", checkpoint)
                 .trigger(**(trigger or {"availableNow": True})).start())
    except Exception as exc:
        return {"checkpoint": checkpoint, "batches": [], "progress": [], "stopped": False,
                "error": first_line(exc), "seconds": 0.0}
    stopped = bool(query.awaitTermination(timeout))
    if not stopped:
        query.stop()
    error = query.exception()
    progress = [p for p in map(as_dict, query.recentProgress) if p.get("numInputRows")]
    return {"checkpoint": checkpoint, "batches": batches, "progress": progress, "stopped": stopped,
            "error": None if error is None else first_line(error), "seconds": round(time.monotonic() - t0, 1)}


def with_settings(spark, settings: dict):
    """A context manager that sets session settings and restores the old values afterwards."""
    from contextlib import contextmanager

    @contextmanager
    def scope():
        old = {k: spark.conf.get(k, None) for k in settings}
        for key, value in settings.items():
            spark.conf.set(key, value)
        try:
            yield
        finally:
            for key, value in old.items():
                if value is None:
                    spark.conf.unset(key)
                else:
                    spark.conf.set(key, value)

    return scope()


def spark_conf(spark):
    """The running SparkContext's own SparkConf (the JVM object, not a copy): where a DStreams job reads its settings."""
    return spark.sparkContext._jsc.sc().conf()


def with_spark_conf(spark, settings: dict):
    """A context manager that puts settings on the running SparkContext's SparkConf, then restores it.

    `spark.conf.set` reaches only the SQL session's settings; a DStreams job reads `spark.streaming.*` from the
    SparkContext's SparkConf (a StreamingContext made now would see these), so a proof that such settings do not
    affect Structured Streaming has to set them there. The session settings get them too, for good measure.
    """
    from contextlib import contextmanager

    @contextmanager
    def scope():
        conf = spark_conf(spark)
        old = {k: conf.get(k) if conf.contains(k) else None for k in settings}
        for key, value in settings.items():
            conf.set(key, str(value))
        try:
            with with_settings(spark, settings):
                yield
        finally:
            for key, value in old.items():
                if value is None:
                    conf.remove(key)
                else:
                    conf.set(key, value)

    return scope()


def spare_topic_name() -> str:
    """A topic name nobody uses (for a `topic` column the `topic` option should override)."""
    return f"nowhere-{uuid.uuid4().hex[:8]}"


def started_at(run: dict, topic: str) -> dict | None:
    """{partition: offset} where a run's first data batch started reading `topic` (its progress startOffset)."""
    import json

    for event in run.get("progress") or []:
        for source in event.get("sources") or []:
            start = source.get("startOffset")
            start = json.loads(start) if isinstance(start, str) else start
            if isinstance(start, dict) and topic in start:
                return {int(p): int(o) for p, o in start[topic].items()}
    return None
