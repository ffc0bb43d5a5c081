"""The Kafka source from the inside: which task read which offsets of a query (`trace`, `count_tasks`), what a
stream's rows look like (`collect`), the group ids Spark gives its consumers, one-line Spark errors, and
hand-made records (`send`).

The tracing runs a real query (`trigger(availableNow=True)`, foreachBatch) and, per micro-batch, records how many
Spark partitions (= tasks of the stage that reads Kafka) the batch has and which Kafka offsets each task read,
using `spark_partition_id()`. It works the same on both engines.

Spark's group ids: the connector gives its executors' Kafka consumers a generated `group.id`, but they
`assign()` their partitions and never commit, so the broker never hears of that group. `spark_group_ids` finds
the ids where they do exist: in the Kafka clients living in Spark's JVM (local mode: the driver's), each
registered under JMX as `consumer-<group.id>-<n>`. Consumer groups as the broker knows them are `streamlab.observe.groups`
(re-exported here because module 1's cells call `internals.consumer_groups()` and friends).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from streamlab.errors import first_line
from streamlab.lab.lifecycle import new_checkpoint
from streamlab.lab.broker import ensure_broker
# consumer groups live in streamlab.observe.groups; module 1's cells call them as internals.<name>
from streamlab.observe.groups import consume_and_commit, consumer_groups, delete_group  # noqa: F401

# How long a lesson's bounded query (availableNow over what is there) may run before it is called stuck. It takes
# seconds; a minute was too short when a loaded 2-core machine grades several notebooks at once (CI), and a check
# that times out blames a right answer.
FINISH_S = 180.0

_TRACES: dict = {}  # options JSON -> Trace, so several test cells can look at one run


# -- tracing a query ---------------------------------------------------------------------------------------

@dataclass
class Trace:
    """What one availableNow run of a Kafka stream did: per-task rows, per-batch summary, schema, or an error."""

    options: dict
    tasks: object = None  # pandas DataFrame: batch, task, topic, partition, from_offset, until_offset, rows
    batches: object = None  # pandas DataFrame: batch, rows, tasks, kafka_partitions, topics
    columns: list = field(default_factory=list)
    error: str | None = None

    @property
    def tasks_per_batch(self) -> list:
        """The number of tasks of each batch, in batch order."""
        return [] if self.batches is None else [int(n) for n in self.batches["tasks"]]

    @property
    def topics(self) -> set:
        """Every topic the run read at least one row from."""
        return set() if self.tasks is None else set(self.tasks["topic"])

    @property
    def rows(self) -> int:
        """All rows the run read."""
        return 0 if self.batches is None else int(self.batches["rows"].sum())


def _clean_options(options) -> dict:
    if options is None or options is Ellipsis:
        raise TypeError(f"no reader options yet (got {options!r})")
    if not isinstance(options, dict):
        raise TypeError(f"reader options must be a dict of option name -> value, got {type(options).__name__}")
    return {str(k): str(v) for k, v in options.items()}


def trace(spark, options, *, cache: bool = True, timeout: float = FINISH_S) -> Trace:
    """Run a Kafka stream with `options` until it has read what is there now; record each batch's tasks."""
    import pandas as pd

    try:
        opts = _clean_options(options)
    except TypeError as exc:
        return Trace(options=options if isinstance(options, dict) else {}, error=str(exc),
                     tasks=pd.DataFrame(columns=_TASK_COLUMNS), batches=pd.DataFrame(columns=_BATCH_COLUMNS))
    key = json.dumps(opts, sort_keys=True)
    if cache and key in _TRACES:
        return _TRACES[key]
    result = _run_trace(spark, opts, timeout)
    if result.error and "failed to connect back" in result.error:
        # On an overloaded machine the offline engine's Python source process can miss Spark's 10 s
        # connect-back window; that says nothing about the options, so try once more.
        result = _run_trace(spark, opts, timeout)
    if cache and result.error is None:
        _TRACES[key] = result
    return result


_TASK_COLUMNS = ["batch", "task", "topic", "partition", "from_offset", "until_offset", "rows"]
_BATCH_COLUMNS = ["batch", "rows", "tasks", "kafka_partitions", "topics"]


def _run_trace(spark, opts: dict, timeout: float) -> Trace:
    import pandas as pd
    from pyspark.sql import functions as F

    result, tasks, batches = Trace(options=opts), [], []

    def record(batch_df, batch_id):
        planned = batch_df.rdd.getNumPartitions()  # one Spark partition per planned offset range = one task
        rows = (batch_df.groupBy(F.spark_partition_id().alias("task"), "topic", "partition")
                .agg(F.count("*").alias("rows"), F.min("offset").alias("from_offset"),
                     (F.max("offset") + 1).alias("until_offset"))
                .collect())
        tasks.extend({"batch": batch_id, **r.asDict()} for r in rows)
        batches.append({"batch": batch_id, "rows": sum(r["rows"] for r in rows), "tasks": planned,
                        "kafka_partitions": len({(r["topic"], r["partition"]) for r in rows}),
                        "topics": ", ".join(sorted({r["topic"] for r in rows}))})

    query = None
    try:
        stream = spark.readStream.format("kafka").options(**opts).load()
        result.columns = stream.columns
        query = (stream.writeStream.foreachBatch(record).trigger(availableNow=True)
                 .option("checkpointLocation", new_checkpoint("trace")).start())
        if not query.awaitTermination(timeout):
            raise TimeoutError(f"the query did not finish within {timeout:.0f} s")
        if query.exception() is not None:
            raise query.exception()
    except Exception as exc:  # noqa: BLE001 - a learner's bad option becomes a one-line error, not a trace
        result.error = first_line(exc)
    finally:
        if query is not None and query.isActive:
            query.stop()
    result.tasks = pd.DataFrame(tasks, columns=_TASK_COLUMNS).sort_values(["batch", "task"], ignore_index=True)
    result.batches = pd.DataFrame(batches, columns=_BATCH_COLUMNS)
    return result


def count_tasks(spark, options) -> int | None:
    """The tasks of the first batch of a stream with `options` (None when the query fails or reads nothing)."""
    return _first_batch_tasks(trace(spark, options))


def count_tasks_many(spark, many: dict) -> dict:
    """{name: tasks of the first batch} for {name: options}, one stream after the other."""
    # Not side by side: on a busy machine several Python sources starting at once miss Spark's connect-back window.
    return {name: count_tasks(spark, options) for name, options in many.items()}


def _first_batch_tasks(found: Trace):
    return found.tasks_per_batch[0] if found.error is None and found.tasks_per_batch else None


@dataclass
class Collected:
    """The rows a stream produced (pandas), its column types, or the one-line error that stopped it."""

    rows: object = None
    dtypes: dict = field(default_factory=dict)
    error: str | None = None


_COLLECTED: dict = {}


def collect(spark, options, transform=None, *, timeout: float = FINISH_S) -> Collected:
    """Run a Kafka stream with `options`, apply `transform(df)` to it, and collect every row it writes."""
    if not callable(transform):
        return Collected(error=f"no function DataFrame -> DataFrame yet (got {transform!r})")
    try:
        opts = _clean_options(options)
    except TypeError as exc:
        return Collected(error=str(exc))
    key = (json.dumps(opts, sort_keys=True), id(transform))
    if key in _COLLECTED:
        return _COLLECTED[key]
    result = _run_collect(spark, opts, transform, timeout)
    if result.error and "failed to connect back" in result.error:
        result = _run_collect(spark, opts, transform, timeout)  # a busy machine, not the learner's code (see trace)
    if result.error is None:
        _COLLECTED[key] = result
    return result


def _run_collect(spark, opts: dict, transform, timeout: float) -> Collected:
    import pandas as pd

    parts, result, query = [], Collected(), None
    try:
        out = transform(spark.readStream.format("kafka").options(**opts).load())
        result.dtypes = dict(out.dtypes)
        query = (out.writeStream.foreachBatch(lambda df, _: parts.append(df.toPandas()))
                 .trigger(availableNow=True)
                 .option("checkpointLocation", new_checkpoint("collect")).start())
        if not query.awaitTermination(timeout):
            raise TimeoutError(f"the query did not finish within {timeout:.0f} s")
        if query.exception() is not None:
            raise query.exception()
        result.rows = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(result.dtypes))
    except Exception as exc:  # noqa: BLE001 - a learner's bug becomes a one-line error
        result.error = first_line(exc)
    finally:
        if query is not None and query.isActive:
            query.stop()
    return result


# -- Spark's own group ids ---------------------------------------------------------------------------------

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_SPARK_GROUP = re.compile(rf"^(?P<prefix>.+?)-(?P<uuid>{_UUID})(?:-(?P<hash>-?\d+))?(?P<role>-executor|-driver)?$")


def spark_group_ids(spark):
    """The group ids of the Kafka consumers living in Spark's JVM (in local mode the executors run there too).

    Kafka clients register under JMX as `consumer-<group.id>-<n>`. One row per group id: which query kind made
    it (`spark-kafka-source-…` for a stream, `spark-kafka-relation-…` for a batch read, unless `groupIdPrefix`
    says otherwise), the uuid, the hash of the source's checkpoint path (streams only), the role suffix and how
    many consumers use it. Empty on the offline engine, whose Python consumers have no group id.
    """
    import pandas as pd

    columns = ["group", "kind", "uuid", "checkpoint_hash", "role", "consumers"]
    counts: dict = {}
    for client in _jmx_client_ids(spark, "kafka.consumer:type=app-info,*"):
        found = re.match(r"^consumer-(.+)-\d+$", client)
        if found:
            counts[found.group(1)] = counts.get(found.group(1), 0) + 1
    rows = []
    for group, n in sorted(counts.items()):
        parts = _SPARK_GROUP.match(group)
        if parts is None:
            continue  # a consumer that is not Spark's
        kind = {"spark-kafka-source": "stream", "spark-kafka-relation": "batch read"}.get(parts["prefix"], "?")
        rows.append({"group": group, "kind": kind, "uuid": parts["uuid"],
                     "checkpoint_hash": int(parts["hash"]) if parts["hash"] else None,
                     "role": (parts["role"] or "").lstrip("-") or None, "consumers": n})
    frame = pd.DataFrame(rows, columns=columns)
    frame["checkpoint_hash"] = frame["checkpoint_hash"].astype("Int64")  # whole numbers, <NA> for batch reads
    return frame


def _jmx_client_ids(spark, pattern: str) -> list[str]:
    """The `client-id` of every MBean matching `pattern` in Spark's JVM ([] when there is no JVM to ask)."""
    try:
        jvm, gateway = spark.sparkContext._jvm, spark.sparkContext._gateway
        server = jvm.java.lang.management.ManagementFactory.getPlatformMBeanServer()
        # The server's class is internal to the JDK: call queryNames through its public interface.
        types = gateway.new_array(jvm.java.lang.Class, 2)
        types[0] = jvm.java.lang.Class.forName("javax.management.ObjectName")
        types[1] = jvm.java.lang.Class.forName("javax.management.QueryExp")
        query = jvm.java.lang.Class.forName("javax.management.MBeanServer").getMethod("queryNames", types)
        args = gateway.new_array(jvm.java.lang.Object, 2)
        args[0] = jvm.javax.management.ObjectName(pattern)
        names = query.invoke(server, args)
        return sorted({str(n.getKeyProperty("client-id")) for n in names if n.getKeyProperty("client-id")})
    except Exception:  # noqa: BLE001 - Spark Connect or a stopped session: nothing to list
        return []


def checkpoint_hash(checkpoint_dir, source: int = 0) -> int:
    """The number Spark puts in a stream's group id: Java's String.hashCode of the source's metadata path,
    `file:<checkpoint>/sources/<source>` for a local checkpoint folder."""
    from pathlib import Path

    text = f"file:{Path(checkpoint_dir).resolve()}/sources/{source}"
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():  # Java hashes UTF-16 code units
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def driver_groups(spark, bootstrap: str | None = None):
    """Consumer groups on the broker named `<base>-driver-<n>`, where `<base>-executor` is a group of this JVM's
    Spark consumers: the groups the driver's consumer leaves behind on the old offset-fetching path
    (spark.sql.streaming.kafka.useDeprecatedOffsetFetching=true, the default before Spark 3.4)."""
    ours = {g[: -len("-executor")] for g in spark_group_ids(spark).group if g.endswith("-executor")}
    groups = consumer_groups(bootstrap)
    base = groups.group.str.replace(r"-driver-\d+$", "", regex=True)
    keep = groups.group.str.contains(r"-driver-\d+$", regex=True) & base.isin(ours)
    return groups[keep].reset_index(drop=True)


# -- hand-made records -------------------------------------------------------------------------------------

def send(topic: str, records, bootstrap: str | None = None) -> int:
    """Send dicts with `value` and optional `key`, `partition`, `headers` ([(name, bytes)]); return how many."""
    from kafka import KafkaProducer

    from streamlab.lab.producer import encode

    producer = KafkaProducer(bootstrap_servers=bootstrap or ensure_broker(), linger_ms=5)
    try:
        futures = [producer.send(topic, value=encode(r.get("value")), key=encode(r.get("key")),
                                 partition=r.get("partition"), headers=r.get("headers") or [])
                   for r in records]
        producer.flush()
        failed = [f for f in futures if f.failed()]
        if failed:
            raise RuntimeError(f"{len(failed)} records were not delivered to {topic}: {failed[0].exception!r}")
        return len(futures)
    finally:
        producer.close(timeout=10)


def collect_records(spark, options, transform=None, *, timeout: float = FINISH_S) -> dict:
    """collect() as plain data: {"dtypes": {...}, "rows": [{column: value}] (times as ISO text), "error": ...}."""
    run = collect(spark, options, transform, timeout=timeout)
    rows = None
    if run.rows is not None:
        frame = run.rows.astype(object).where(run.rows.notna(), None)
        rows = [{k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in rec.items()}
                for rec in frame.to_dict("records")]
    return {"dtypes": dict(run.dtypes), "rows": rows, "error": run.error}


def fresh_orders(partitions: int = 2) -> tuple[dict, dict]:
    """A new topic of order events no notebook has seen (random count and ids) plus one malformed record:
    (reader options for it, what a correct parse gives: n, first id, amount total, malformed count)."""
    import random

    from streamlab.lab.lifecycle import new_topic
    from streamlab.lab.producer import default_value, produce

    n, first = random.randint(120, 240), random.randint(1_000, 900_000)
    topic = new_topic("fresh-orders", partitions=partitions)
    produce(topic, n, value_fn=lambda i: default_value(first + i))
    send(topic, [{"value": "this is not json"}])
    truth = {"n": n, "first_id": first, "malformed": 1,
             "amount": round(sum(((first + i) * 37 % 10_000) / 100 for i in range(n)), 2)}
    return {"kafka.bootstrap.servers": ensure_broker(), "subscribe": topic, "startingOffsets": "earliest"}, truth
