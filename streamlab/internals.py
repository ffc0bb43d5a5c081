"""Module 1 (Kafka source internals): trace which task read which offsets, ask the broker about consumer groups,
send hand-made records, and a live demo of partitions → tasks.

The tracing runs a real query (`trigger(availableNow=True)`, foreachBatch) and, per micro-batch, records how many
Spark partitions (= tasks of the stage that reads Kafka) the batch has and which Kafka offsets each task read,
using `spark_partition_id()`. It works the same on both engines.

Consumer groups: Spark's connector gives its executors' Kafka consumers a generated `group.id`, but they
`assign()` their partitions and never commit, so the broker never hears of that group. `spark_group_ids` finds
the ids where they do exist: in the Kafka clients living in Spark's JVM (local mode: the driver's), each
registered under JMX as `consumer-<group.id>-<n>`.
"""
from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, fields, field

from .lab import new_checkpoint
from .broker import ensure_broker

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


def error_line(exc: BaseException) -> str:
    """A Spark or connector error reduced to `ExceptionName: message` on one line: the JVM root cause when there is
    one (a failed query's `StreamingQueryException` is only the envelope), else the last error named in its text."""
    root = _jvm_root_cause(exc)
    if root is not None and root[0] != "PythonException" and "Traceback (most recent call last)" not in root[1]:
        name, message = root
    else:
        # A Python error (in foreachBatch, or the offline engine's source) arrives as a Python traceback in the text.
        text = str(exc)
        found = re.findall(r"(\w+(?:Exception|Error|Invalid)): (.+?)(?:\s+SQLSTATE|\s+at [\w.$]+\(|\Z)", text,
                           flags=re.S)
        if found:
            name, message = found[-1]
        else:
            name, message = type(exc).__name__, text
    message = " ".join(str(message).split())
    if message.startswith(f"{name}: "):  # kafka-python repeats its class name in the message
        message = message[len(name) + 2:]
    line = f"{name}: {message}"
    if "out of bounds timestamp" in line:  # pandas cannot hold years past 2262: usually ms read as seconds
        line += " (a timestamp far in the future: were milliseconds read as seconds?)"
    return line if len(line) <= 400 else line[:397] + "..."


def _jvm_root_cause(exc: BaseException):
    """(simple class name, message) of the deepest cause of a JVM exception behind `exc`, or None (not from the JVM)."""
    origin = getattr(exc, "_origin", None) or getattr(exc, "java_exception", None)
    if origin is None:
        return None
    try:
        for _ in range(20):  # a cause chain, not a cycle
            cause = origin.getCause()
            if cause is None:
                break
            origin = cause
        return origin.getClass().getSimpleName(), origin.getMessage() or ""
    except Exception:  # noqa: BLE001 - the gateway is gone, or not a Throwable: fall back to the text
        return None


def _clean_options(options) -> dict:
    if options is None or options is Ellipsis:
        raise TypeError(f"no reader options yet (got {options!r})")
    if not isinstance(options, dict):
        raise TypeError(f"reader options must be a dict of option name -> value, got {type(options).__name__}")
    return {str(k): str(v) for k, v in options.items()}


def trace(spark, options, *, cache: bool = True, timeout: float = 60.0) -> Trace:
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
        result.error = error_line(exc)
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


def collect(spark, options, transform=None, *, timeout: float = 60.0) -> Collected:
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
        result.error = error_line(exc)
    finally:
        if query is not None and query.isActive:
            query.stop()
    return result


# -- consumer groups ---------------------------------------------------------------------------------------

def consumer_groups(bootstrap: str | None = None):
    """Every consumer group the broker knows, with its committed offsets (as `kafka-consumer-groups --describe`)."""
    import pandas as pd

    from .topics import admin

    client = admin(bootstrap)
    try:
        rows = []
        for group in client.list_groups():
            gid = group["group_id"]
            committed = client.list_group_offsets(gid).get(gid, {})
            if not committed:
                rows.append({"group": gid, "state": group.get("group_state"), "topic": None, "partition": None,
                             "committed_offset": None})
            for tp, meta in sorted(committed.items()):
                rows.append({"group": gid, "state": group.get("group_state"), "topic": tp.topic,
                             "partition": tp.partition, "committed_offset": meta.offset})
        return pd.DataFrame(rows, columns=["group", "state", "topic", "partition", "committed_offset"])
    finally:
        client.close()


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


def consume_and_commit(topic: str, group: str, bootstrap: str | None = None, timeout: float = 10.0) -> int:
    """Read `topic` to its end as a plain Kafka consumer in `group` (subscribe, poll, commit); return records read."""
    from kafka import KafkaConsumer

    from .topics import describe_topic

    total = sum(last for _, last in describe_topic(topic, bootstrap).values())
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap or ensure_broker(), group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    read, deadline = 0, time.monotonic() + timeout
    try:
        while read < total and time.monotonic() < deadline:
            read += sum(len(batch) for batch in consumer.poll(timeout_ms=500).values())
        consumer.commit()  # what Spark never does
    finally:
        consumer.close()
    return read


def delete_group(group: str, bootstrap: str | None = None) -> None:
    """Delete a consumer group (and its committed offsets) from the broker; a missing group is ignored."""
    from .topics import admin

    client = admin(bootstrap)
    try:
        if any(g["group_id"] == group for g in client.list_groups()):
            client.delete_groups([group])
    finally:
        client.close()


# -- hand-made records -------------------------------------------------------------------------------------

def send(topic: str, records, bootstrap: str | None = None) -> int:
    """Send dicts with `value` and optional `key`, `partition`, `headers` ([(name, bytes)]); return how many."""
    from kafka import KafkaProducer

    from .producer import encode

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


def stop_between_batches(query, timeout: float = 2.0) -> None:
    """Stop a query once its current trigger has finished (cancelling a running batch logs Spark errors)."""
    deadline = time.monotonic() + timeout
    while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
        time.sleep(0.05)
    query.stop()


def _partition_offsets(value) -> dict:
    """{partition: offset} of the single topic in a progress offset (a dict or its JSON text)."""
    if isinstance(value, str):
        value = json.loads(value) if value.strip().startswith("{") else {}
    merged = {}
    for parts in (value or {}).values():
        merged.update({int(p): int(o) for p, o in parts.items()})
    return merged


# -- the live demo: partitions and minPartitions -> tasks ---------------------------------------------------

@dataclass
class BatchTasks:
    """One micro-batch of the demo."""

    batch: int
    at: float
    topic_partitions: int
    min_partitions: int
    partitions_read: str
    tasks: int
    rows: int


class PartitionDemo:
    """A live stream whose topic can grow (partitions slider) and whose minPartitions can change; charts tasks.

    Growing the topic is a real `CreatePartitions` request, picked up by the running query at its next trigger.
    minPartitions is read when a query starts, so moving it restarts the query on the same checkpoint.
    `schedule` moves the sliders by itself, counted in batches so the story is the same on a slow machine:
    [(after this many batches, "partitions" | "min_partitions", value)]. The demo stops `then` batches after the
    last scheduled move, or `duration` seconds after the first batch (at once if someone moves a slider, the
    schedule stops and the demo runs for `duration`).
    """

    def __init__(self, spark, topic: str, rate: int = 200, min_partitions: int = 0, trigger_seconds: float = 1.0,
                 duration: float = 30.0, schedule=(), then: int = 2, title: str = "tasks per micro-batch"):
        import ipywidgets as W

        from .topics import partition_count
        from .widgets import slider

        self.spark, self.topic, self.rate = spark, topic, rate
        self.bootstrap = ensure_broker()
        self.partitions = partition_count(topic)
        self.min_partitions = min_partitions
        self.trigger_seconds, self.duration, self.title = trigger_seconds, duration, title
        self.schedule, self.then = sorted(schedule), then
        self._auto = False  # True while the schedule moves a slider; a move without it is a person's
        self._manual = False
        self.history: list[BatchTasks] = []
        self.sliders = {
            "partitions": slider("topic partitions", self.partitions, 1, 12),
            "min_partitions": slider("minPartitions (0 = unset)", min_partitions, 0, 16),
        }
        self.sliders["partitions"].observe(self._on_partitions, names="value")
        self.sliders["min_partitions"].observe(self._on_min_partitions, names="value")
        self.readout = W.HTML(value="<code>not started</code>")
        self.image = W.Image(format="png", layout=W.Layout(max_width="100%"))
        self._lock = threading.RLock()  # the knobs may be moved by the browser and by the schedule at once
        self._done = threading.Event()
        self._checkpoint = new_checkpoint("partitions")
        self._query = self._producer = self._thread = None
        self._t0 = 0.0
        self._steps: list[tuple[float, int, int]] = []  # (t, topic partitions, minPartitions) when they changed
        self._tasks: dict = {}  # batch id -> (tasks, minPartitions, topic partitions, t), set by foreachBatch
        self._seen: set = set()

    # -- knobs ---------------------------------------------------------------------------------------------
    def _now(self) -> float:
        return round(time.monotonic() - self._t0, 2) if self._t0 else 0.0

    def _on_partitions(self, change) -> None:
        from .topics import add_partitions

        wanted = change["new"]
        self._manual = self._manual or not self._auto
        with self._lock:
            if wanted <= self.partitions:  # Kafka can add partitions, never remove them
                self.sliders["partitions"].value = self.partitions
                return
            add_partitions(self.topic, wanted, self.bootstrap)
            self.partitions = wanted
            self._steps.append((self._now(), self.partitions, self.min_partitions))
            self._restart_producer()

    def _on_min_partitions(self, change) -> None:
        self._manual = self._manual or not self._auto
        with self._lock:
            self.min_partitions = change["new"]
            self._steps.append((self._now(), self.partitions, self.min_partitions))
            if self._query is not None:
                stop_between_batches(self._query)  # minPartitions is read when the query starts
                self._collect()  # the old query's last batches
                self._query = self._start_query()

    # -- producer and query --------------------------------------------------------------------------------
    def _restart_producer(self) -> None:
        from .producer import BackgroundProducer

        if self._producer is not None:
            self._producer.stop()
        # Round-robin over every partition, so each one has new records in every batch.
        self._producer = BackgroundProducer(self.topic, rate=self.rate, partitions=range(self.partitions),
                                            bootstrap=self.bootstrap).start()

    def _start_query(self):
        reader = (self.spark.readStream.format("kafka")
                  .option("kafka.bootstrap.servers", self.bootstrap)
                  .option("subscribe", self.topic)
                  .option("startingOffsets", "latest"))
        if self.min_partitions:
            reader = reader.option("minPartitions", self.min_partitions)
        minimum = self.min_partitions

        def record(batch_df, batch_id):
            tasks = batch_df.rdd.getNumPartitions()  # the Spark partitions of this batch = its read tasks
            batch_df.count()  # run those tasks: each fetches its range from the broker
            self._tasks[batch_id] = (tasks, minimum, self.partitions, self._now())

        return (reader.load().writeStream.foreachBatch(record).option("checkpointLocation", self._checkpoint)
                .trigger(processingTime=f"{self.trigger_seconds} seconds").start())

    def _collect(self) -> None:
        # Which partitions each batch read comes from the driver's plan in the progress: end - start > 0.
        query = self._query
        if query is None:
            return
        for p in query.recentProgress:
            batch = p["batchId"]
            if batch in self._seen or batch not in self._tasks or not p["sources"]:
                continue
            source = p["sources"][0]
            start = _partition_offsets(source.get("startOffset"))
            end = _partition_offsets(source.get("endOffset"))
            read = sorted(q for q, off in end.items() if off > start.get(q, 0))
            tasks, minimum, partitions, at = self._tasks[batch]
            if not tasks:
                continue
            self._seen.add(batch)
            self.history.append(BatchTasks(batch, at, partitions, minimum, ",".join(map(str, read)), tasks,
                                           int(p["numInputRows"] or 0)))

    # -- drawing -------------------------------------------------------------------------------------------
    def figure(self):
        """Tasks per batch as bars, the topic's partitions and minPartitions as steps."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(8, 3.2))
        ax = fig.add_subplot()
        if self.history:
            ax.bar([b.at for b in self.history], [b.tasks for b in self.history], width=0.4, color="#4c72b0",
                   label="tasks in the batch")
        if self._steps:  # each knob change, held until the next one and drawn to the end of the demo
            steps = self._steps + [(self._end(), *self._steps[-1][1:])]
            xs = [s[0] for s in steps]
            ax.step(xs, [s[1] for s in steps], where="post", color="#dd8452", linewidth=2,
                    label="partitions of the topic")
            ax.step(xs, [s[2] for s in steps], where="post", color="#c44e52", linestyle="--", linewidth=1,
                    label="minPartitions (0 = unset)")
        ax.set_xlim(0, self._end() + 0.5)
        ax.set_ylim(0, max([b.tasks for b in self.history] + [self.partitions, self.min_partitions, 1]) + 2)
        ax.set_xlabel("seconds since the first batch")
        ax.set_ylabel("count")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
        ax.set_title(self.title, fontsize=10)
        return fig

    def _end(self) -> float:
        # The chart ends at the last batch (or now), not at the time limit.
        return max([self._now(), *(b.at for b in self.history), 1.0])

    def _png(self) -> bytes:
        import io

        buf = io.BytesIO()
        self.figure().savefig(buf, format="png", dpi=80, bbox_inches="tight")
        return buf.getvalue()

    # -- life cycle ----------------------------------------------------------------------------------------
    def _poll(self) -> None:
        pending = list(self.schedule)
        started, stop_at = time.monotonic(), None
        while not self._done.is_set():
            with self._lock:
                self._collect()
            # The clock starts at the first batch: starting a query takes longer on a busy machine.
            if not self._t0 and (self.history or time.monotonic() - started > 10):
                self._t0 = time.monotonic()
            if self._manual:
                pending, stop_at = [], None  # someone is at the sliders: no more automatic moves
            while pending and len(self.history) >= pending[0][0]:
                _, knob, value = pending.pop(0)
                self._auto = True
                try:
                    self.sliders[knob].value = value  # the same path as a move in the browser
                finally:
                    self._auto = False
                if not pending:
                    stop_at = len(self.history) + self.then
            last = self.history[-1] if self.history else None
            now = self._now()
            self.readout.value = (
                f"<code>t={now:4.1f}s · topic partitions {self.partitions} · minPartitions "
                f"{self.min_partitions or 'unset'} · batches {len(self.history)} · last batch "
                f"{f'{last.tasks} tasks over partitions {last.partitions_read}' if last else '-'}</code>")
            self.image.value = self._png()
            if (self._t0 and now >= self.duration) or (stop_at is not None and len(self.history) >= stop_at):
                break
            self._done.wait(0.25)
        self._done.set()

    def start(self) -> None:
        """Show the sliders and the chart and start producer, query and poller; returns at once.

        The demo runs in the background and stops itself: a kernel applies slider moves only while no cell
        runs, so waiting belongs in the next cell (wait()).
        """
        import ipywidgets as W
        from IPython.display import display

        self._restart_producer()
        self._query = self._start_query()
        self._t0 = 0.0  # set by the poller when the first batch arrives
        self._steps = [(0.0, self.partitions, self.min_partitions)]
        stop = W.Button(description="stop demo", icon="stop", layout=W.Layout(width="120px"))
        stop.on_click(lambda _: self._done.set())
        display(W.VBox([self.sliders["partitions"], self.sliders["min_partitions"], W.HBox([stop, self.readout]),
                        self.image]))
        self._thread = threading.Thread(target=self._run, name="streamlab-partition-demo", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._poll()
        finally:
            self._shutdown()

    def _shutdown(self) -> None:
        with self._lock:
            if self._query is not None:
                stop_between_batches(self._query)
                self._collect()
                self._query = None
            if self._producer is not None:
                self._producer.stop()
                self._producer = None

    def stop(self) -> None:
        """Stop the poller, the query and the producer (safe to call twice)."""
        self._done.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
        self._shutdown()

    def wait(self):
        """Wait until the demo has stopped itself, leave a static chart and return the batches as a DataFrame."""
        import pandas as pd
        from IPython.display import Image, display

        if self._thread is not None:
            self._thread.join()
        self.stop()
        display(Image(self._png()))
        # the columns exist even when no batch ran (a starved machine), so later cells can still index them
        return pd.DataFrame([vars(b) for b in self.history], columns=[f.name for f in fields(BatchTasks)])


def collect_records(spark, options, transform=None, *, timeout: float = 60.0) -> dict:
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

    from .lab import new_topic
    from .producer import default_value, produce

    n, first = random.randint(120, 240), random.randint(1_000, 900_000)
    topic = new_topic("fresh-orders", partitions=partitions)
    produce(topic, n, value_fn=lambda i: default_value(first + i))
    send(topic, [{"value": "this is not json"}])
    truth = {"n": n, "first_id": first, "malformed": 1,
             "amount": round(sum(((first + i) * 37 % 10_000) / 100 for i in range(n)), 2)}
    return {"kafka.bootstrap.servers": ensure_broker(), "subscribe": topic, "startingOffsets": "earliest"}, truth
