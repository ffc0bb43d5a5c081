"""How one Kafka source names its topics (subscribe, subscribePattern, assign), and what it reads from each.

Checked live against Spark 4.2's connector (AdminClient offset fetching, the default since 3.4):
- `subscribePattern` is matched with Scala's `findFirstIn` on that path, so it is *unanchored*: `orders-.*` also
  reads `old-orders-1`. With `spark.sql.streaming.kafka.useDeprecatedOffsetFetching=true` the consumer's
  `subscribe(Pattern)` is used and Kafka matches the whole name. `^...$` means the same on both paths.
- Topics are listed again at every trigger, so a topic created while a query runs is read from its next trigger,
  from its earliest offset (whatever `startingOffsets` said).
- A topic added to the subscription of a restarted query is new to its checkpoint: read from earliest. If
  retention already trimmed it (earliest offset above 0) that is reported as data loss ("Added partition … starts
  from N instead of 0"): the query fails, or with `failOnDataLoss=false` skips the trimmed records. A topic
  *removed* from the subscription is reported the same way (its partitions vanished from the query's view).
"""
from __future__ import annotations

import re
import threading
import time

from streamlab.errors import first_line
from streamlab.lab.lifecycle import new_checkpoint


def matches(pattern: str, topics, whole_name: bool = False) -> list[str]:
    """The topics `pattern` selects: as Spark 4's default path does (a match anywhere in the name) or, with
    `whole_name`, as Kafka's consumer does (the whole name must match)."""
    compiled = re.compile(pattern)
    pick = compiled.fullmatch if whole_name else compiled.search
    return sorted(t for t in topics if pick(t))


def run_counts(spark, options: dict, checkpoint: str | None = None, *, by_partition: bool = False,
               starting_offsets: str | None = "earliest", deprecated_offset_fetching: bool | None = None,
               timeout: float = 90.0, bootstrap: str | None = None) -> dict:
    """Run one Kafka source with `options` (subscribe / subscribePattern / assign and any other) to the end of what
    is there (availableNow) and count what it read.

    Returns plain data: {'rows': {topic: n} (or {'topic/partition': n}), 'batches': [{topic: n} per data batch],
    'error': the failure's first line (for data loss, its reason) or None}. `checkpoint` (a new one when None) is
    where the query keeps its offsets: pass the same one to restart it.
    """
    from pyspark.sql import functions as F

    from streamlab.lab.broker import ensure_broker

    if not isinstance(options, dict):
        return {"rows": {}, "batches": [], "error": f"options must be a dict of source options, got {options!r}"}
    bootstrap = bootstrap or ensure_broker()
    batches: list = []
    lock = threading.Lock()

    def count(df, _batch_id):
        key = F.concat_ws("/", "topic", F.col("partition").cast("string")) if by_partition else F.col("topic")
        found = {r["k"]: r["n"] for r in df.groupBy(key.alias("k")).agg(F.count("*").alias("n")).collect()}
        if found:
            with lock:
                batches.append(found)

    conf = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"
    previous = spark.conf.get(conf, None)
    if deprecated_offset_fetching is not None:
        spark.conf.set(conf, str(bool(deprecated_offset_fetching)).lower())
    query, error = None, None
    try:
        reader = spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
        if starting_offsets is not None and "startingOffsets" not in options:
            reader = reader.option("startingOffsets", starting_offsets)
        reader = reader.options(**{k: str(v) for k, v in options.items()})
        query = (reader.load().writeStream.foreachBatch(count).trigger(availableNow=True)
                 .option("checkpointLocation", checkpoint or new_checkpoint("counts")).start())
        if not query.awaitTermination(timeout):
            error = f"the query did not finish within {timeout:.0f} s"
    except Exception as exc:  # a bad option, or the query failed: reported, not raised
        error = first_line(exc)
    finally:
        if query is not None:
            query.stop()
        if deprecated_offset_fetching is not None:
            if previous is None:
                spark.conf.unset(conf)
            else:
                spark.conf.set(conf, previous)
    rows: dict = {}
    for found in batches:
        for k, n in found.items():
            rows[k] = rows.get(k, 0) + n
    return {"rows": dict(sorted(rows.items())), "batches": batches, "error": error}


def batch_rows(checkpoint: str, batch_id: int, source: int = 0) -> dict:
    """{topic: {partition: offsets read}} by batch `batch_id` of a query, from its checkpoint alone: that batch's
    end offsets (`offsets/N`) minus the previous batch's (or the initial offsets, `sources/<i>/0`, for batch 0);
    a partition new to the query starts at 0."""
    from streamlab.observe import checkpoint as ck

    end = ck.kafka_offsets(ck.offsets(checkpoint, batch_id).sources[source])
    if batch_id == 0:
        start = ck.kafka_offsets(ck.initial_offsets(checkpoint, source) or {})
    else:
        start = ck.kafka_offsets(ck.offsets(checkpoint, batch_id - 1).sources[source])
    return {t: {p: o - start.get(t, {}).get(p, 0) for p, o in sorted(parts.items())}
            for t, parts in sorted(end.items())}


def trim(topic: str, before: int, bootstrap: str | None = None) -> dict:
    """Delete every record below offset `before` in each partition of `topic`, as retention would; returns
    {partition: (earliest, latest)} afterwards."""
    from kafka import TopicPartition

    from streamlab.lab.topics import admin, describe_topic

    client = admin(bootstrap)
    try:
        ends = describe_topic(topic, bootstrap)
        client.delete_records({TopicPartition(topic, p): min(before, last) for p, (_, last) in ends.items()})
    finally:
        client.close()
    return describe_topic(topic, bootstrap)


def pickup(spark, pattern: str, make_topic, records: int = 100, trigger_seconds: float = 2.0,
           timeout: float = 60.0, bootstrap: str | None = None) -> dict:
    """Start a query on `pattern` from latest; once it runs, call `make_topic()` (it creates a matching topic and
    returns its name), write `records` to it, and time how long until the query reads them.

    Returns {'topic', 'seconds' (creation to the end of the first batch that read it), 'rows' (read from the new
    topic, all of them when it was read from its earliest offset), 'batches' (that read it), 'trigger_seconds'}.
    """
    from pyspark.sql import functions as F

    from streamlab.lab.broker import ensure_broker
    from streamlab.observe.progress import stop_between_batches
    from streamlab.lab.producer import produce

    bootstrap = bootstrap or ensure_broker()
    seen: list = []  # (monotonic time, batch id, {topic: rows})

    def record(df, batch_id):
        found = {r["topic"]: r["n"] for r in df.groupBy("topic").agg(F.count("*").alias("n")).collect()}
        seen.append((time.monotonic(), batch_id, found))

    query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribePattern", pattern).option("startingOffsets", "latest").load()
             .writeStream.foreachBatch(record).trigger(processingTime=f"{trigger_seconds} seconds")
             .option("checkpointLocation", new_checkpoint("pickup")).start())
    try:
        deadline = time.monotonic() + timeout
        while not query.recentProgress and time.monotonic() < deadline:  # started: its position is fixed
            if query.exception() is not None:
                raise RuntimeError(f"the query failed: {first_line(query.exception())}")
            time.sleep(0.05)
        created = time.monotonic()
        topic = make_topic()
        produce(topic, records, bootstrap=bootstrap)
        while sum(s[2].get(topic, 0) for s in seen) < records and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop_between_batches(query)
    hits = [s for s in seen if topic in s[2]]
    return {"topic": topic, "seconds": round(hits[0][0] - created, 2) if hits else None,
            "rows": sum(s[2][topic] for s in hits), "batches": len(hits),
            "trigger_seconds": trigger_seconds}
