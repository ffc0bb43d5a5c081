"""End-to-end latency per record, read from Kafka's own timestamps: Real-time Mode against micro-batches.

Lag (`observe.lag`) says how many records wait; this says how long each record took, from the moment its producer
sent it to the moment the broker appended Spark's output. Both ends are timestamps Kafka keeps, on one machine's
clock: the input record's `CreateTime` (set by the producer at `send()`, lingering off) and the output record's
`LogAppendTime` (the output topic is created with `message.timestamp.type=LogAppendTime`). A query copies each
record's value (its sequence number) to the output topic; matching the two by that number gives one latency per
record, with no consumer and no Spark metric in the measurement.

`compare()` runs one producer into a 2-partition topic and, one after the other (Real-time Mode holds a task slot
per partition for the whole batch, so on `local[2]` the two cannot share the session's cores), a Kafka-to-Kafka
query under a micro-batch trigger and the same query under `trigger(realTime=...)`. `refusals()` runs what Real-time
Mode refuses and keeps the first line of Spark's own error for each. The course's claims about both are checked
against Spark 4.2's sources in tests/integration/test_realtime_mode.py.
"""
from __future__ import annotations

import statistics
import time
import uuid
from dataclasses import dataclass, field

LOG_APPEND_TIME = {"message.timestamp.type": "LogAppendTime"}
MICRO_BATCH = {"processingTime": "0 seconds"}  # back-to-back micro-batches: the lowest micro-batch latency
REAL_TIME = {"realTime": "5 seconds"}  # the shortest checkpoint interval Spark allows (minBatchDuration, 5 s)
# After a run, how long to wait for what was sent during it to come out; what is still missing is counted in
# `Run.late` (not in the latencies: on a very busy machine that leaves out the micro-batches' slowest records).
DRAIN_S = 5.0


@dataclass
class Run:
    """One query's measurement: (seconds since it was ready, latency in ms) per record sent while it ran."""

    label: str
    trigger: dict
    points: list = field(default_factory=list)
    late: int = 0  # records sent during the run that had not come out when it was stopped

    def latencies(self) -> list:
        """The latencies in ms, in the order the records were sent."""
        return [ms for _, ms in self.points]

    def percentile(self, q: float) -> float | None:
        """The q-th percentile (0-100) of the latencies, in ms (nearest rank)."""
        values = sorted(self.latencies())
        if not values:
            return None
        return values[min(len(values) - 1, max(0, round(q / 100 * len(values)) - 1))]

    def median(self) -> float | None:
        """The median latency in ms."""
        values = self.latencies()
        return statistics.median(values) if values else None


@dataclass
class Comparison:
    """The runs of `compare()`, with a table and a chart."""

    runs: list

    def ratio(self) -> float | None:
        """The first run's median latency over the last one's (micro-batch / Real-time Mode)."""
        first, last = self.runs[0].median(), self.runs[-1].median()
        return first / last if first and last else None

    def table(self):
        """Records measured, median, p90, p99 and max latency per run (a pandas DataFrame)."""
        import pandas as pd

        rows = {}
        for run in self.runs:
            values = run.latencies()
            rows[run.label] = {"records": len(values), "median (ms)": _round(run.median()),
                               "p90 (ms)": _round(run.percentile(90)), "p99 (ms)": _round(run.percentile(99)),
                               "max (ms)": _round(max(values) if values else None), "not out at stop": run.late}
        return pd.DataFrame(rows)

    def figure(self, title: str = "end-to-end latency per record"):
        """Latency per record (ms, log scale) against seconds since each query was ready, as a matplotlib Figure."""
        from matplotlib.figure import Figure
        from matplotlib.ticker import FuncFormatter

        fig = Figure(figsize=(12.5, 5), dpi=100, layout="constrained")
        ax = fig.add_subplot()
        for run, colour in zip(self.runs, ["#d62728", "#1f77b4", "#2ca02c", "#9467bd"]):
            if run.points:
                xs, ys = zip(*run.points)
                median = run.median()
                ax.scatter(xs, [max(y, 1) for y in ys], s=10, color=colour, alpha=0.6,
                           label=f"{run.label}: median {median:,.0f} ms")
                ax.axhline(max(median, 1), color=colour, linewidth=1.5, linestyle="--")
        ax.set_yscale("log")
        ax.set_xlabel("seconds since the query was ready (when a record was sent)", fontsize=14)
        ax.set_ylabel("latency (ms, log scale)", fontsize=14)
        ax.set_title(title, fontsize=16)
        ax.tick_params(labelsize=13)
        ax.grid(True, which="major", alpha=0.3)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
        fig.legend(loc="outside lower center", ncols=2, fontsize=13, markerscale=2, frameon=False)
        return fig

    def chart(self, title: str = "end-to-end latency per record"):
        """The figure as an image sized to read at a laptop's width (1,280 px)."""
        import io

        from IPython.display import Image

        buf = io.BytesIO()
        self.figure(title).savefig(buf, format="png", dpi=90)
        return Image(buf.getvalue())


def _round(value):
    return None if value is None else round(value)


def _end_offsets(topic: str, bootstrap: str) -> dict:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or [])]
        return {tp.partition: offset for tp, offset in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()


def copy_query(spark, source: str, out: str, trigger: dict, start: dict, bootstrap: str, checkpoint: str):
    """Start a query copying each record's value from `source` (from offsets `start`) to `out`."""
    import json

    return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", source).option("startingOffsets", json.dumps({source: start})).load()
            .select("value")
            .writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", out)
            .option("checkpointLocation", checkpoint).outputMode("update").trigger(**trigger).start())


def _wait(condition, query, timeout: float, what: str) -> None:
    from streamlab.errors import LabError, first_line

    deadline = time.monotonic() + timeout
    while not condition():
        if query.exception() is not None:
            raise LabError(f"The query stopped: {first_line(query.exception())}")
        if time.monotonic() > deadline:
            raise LabError(f"{what} within {timeout:.0f} s: is the machine very busy? Run the cell again.")
        time.sleep(0.05)


def measure(spark, source: str, trigger: dict, seconds: float, label: str, bootstrap: str) -> Run:
    """Run the copy query under `trigger` for `seconds` after its first output; return each record's latency."""
    from streamlab.lab import topics
    from streamlab.lab.lifecycle import new_checkpoint, new_topic

    out = new_topic("latency-out", partitions=1, configs=LOG_APPEND_TIME)
    start = _end_offsets(source, bootstrap)
    query = copy_query(spark, source, out, trigger, start, bootstrap, new_checkpoint("latency"))
    try:
        _wait(lambda: sum(_end_offsets(out, bootstrap).values()) > 0, query, 90, "No record came out")
        ready = time.time()
        time.sleep(seconds)
        end = time.time()
        sent = _end_offsets(source, bootstrap)
        expected = sum(sent[p] - start.get(p, 0) for p in sent)
        try:  # let what was sent before `end` come out (a micro-batch or a checkpoint may be under way)
            _wait(lambda: sum(_end_offsets(out, bootstrap).values()) >= expected, query, DRAIN_S, "")
        except Exception:
            pass
    finally:
        query.stop()
    sent_at = {r.value: r.timestamp for r in topics.records(source, bootstrap)}
    appended = {r.value: r.timestamp for r in topics.records(out, bootstrap)}
    run = Run(label, trigger)
    for value, created in sorted(sent_at.items(), key=lambda item: item[1]):
        if ready * 1000 <= created <= end * 1000:
            if value in appended:
                run.points.append(((created - ready * 1000) / 1000, appended[value] - created))
            else:
                run.late += 1
    return run


def compare(spark, seconds: float = 5.0, rate: float = 200.0, micro_batch: dict | None = None,
            real_time: dict | None = None) -> Comparison:
    """One producer into a 2-partition topic; the copy query under a micro-batch trigger, then in Real-time Mode."""
    from streamlab.lab.lifecycle import new_topic
    from streamlab.lab.broker import ensure_broker
    from streamlab.lab.producer import BackgroundProducer

    bootstrap = ensure_broker()
    source = new_topic("latency", partitions=2)
    micro_batch, real_time = micro_batch or MICRO_BATCH, real_time or REAL_TIME
    producer = BackgroundProducer(source, rate=rate, partitions=[0, 1], value_fn=str, bootstrap=bootstrap,
                                  linger_ms=0).start()
    try:
        runs = [measure(spark, source, micro_batch, seconds, f"micro-batch {_describe(micro_batch)}", bootstrap),
                measure(spark, source, real_time, seconds, f"Real-time Mode {_describe(real_time)}", bootstrap)]
    finally:
        producer.stop()
    return Comparison(runs)


def _describe(trigger: dict) -> str:
    return ", ".join(f'{k}="{v}"' for k, v in trigger.items())


# What Real-time Mode refuses: {what: (how the query is built with that one thing changed, the part of Spark's error
# that names the refusal)}. `refusals()` runs them and keeps Spark's error; `names_refusal()` tells a refusal from a
# query that failed for another reason (a lost broker, say). Where each is checked in Spark 4.2 is cited in
# tests/integration/test_realtime_mode.py.
REFUSED = {
    "outputMode append": (dict(output_mode="append"), "OUTPUT_MODE_NOT_SUPPORTED"),
    'realTime="1 second"': (dict(trigger={"realTime": "1 second"}), "INVALID_STREAMING_REAL_TIME_MODE_TRIGGER_INTERVAL"),
    "the rate source": (dict(source="rate"), "INPUT_STREAM_NOT_SUPPORTED"),
    "foreachBatch": (dict(sink="foreachBatch"), "ForeachBatchSink"),
    "the memory sink": (dict(sink="memory"), "MemorySink"),
    "groupBy().count() (stateful)": (dict(shape="count"), "HashAggregateExec"),
    "maxOffsetsPerTrigger": (dict(options={"maxOffsetsPerTrigger": "100"}),
                             "maxOffsetsPerTrigger is not compatible with real time mode"),
    "minPartitions": (dict(options={"minPartitions": "4"}), "minpartitions is not compatible with real time mode"),
}


def names_refusal(what: str, error: str) -> bool:
    """Whether `error` (from `refusals()`) is Spark refusing the case `what`, not a failure of another kind."""
    return REFUSED[what][1] in error


def refused_query(spark, topic: str, bootstrap: str, output_mode: str = "update", trigger: dict | None = None,
                  source: str = "kafka", sink: str = "kafka", shape: str = "copy", options: dict | None = None):
    """Start (or fail to start) a Real-time query on `topic` with one thing changed; return the query."""
    from streamlab.lab.lifecycle import new_checkpoint

    reader = spark.readStream.format(source)
    if source == "kafka":
        reader = reader.option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
    frame = reader.options(**(options or {})).load()
    frame = frame.groupBy().count().selectExpr("CAST(count AS STRING) AS value") if shape == "count" else \
        frame.selectExpr("CAST(value AS STRING) AS value")
    writer = frame.writeStream.outputMode(output_mode).trigger(**(trigger or REAL_TIME))
    writer = writer.option("checkpointLocation", new_checkpoint("refused"))
    if sink == "foreachBatch":
        writer = writer.foreachBatch(lambda batch, batch_id: None)
    elif sink == "memory":
        writer = writer.format("memory").queryName(f"refused_{uuid.uuid4().hex[:8]}")
    else:
        writer = writer.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic + "-never")
    return writer.start()


def refusals(spark, topic: str, cases: dict | None = None, timeout: float = 60.0) -> dict:
    """{what: the first line of Spark's error} for each case ({what: (change, ...)}, REFUSED's shape); "(ran)" for a
    query Spark did not refuse."""
    from streamlab.errors import first_line
    from streamlab.lab.broker import ensure_broker

    bootstrap = ensure_broker()
    errors, started = {}, {}
    for what, (change, _) in (cases or REFUSED).items():
        try:  # most are refused by start(); the rest when the query plans its first batch, on its own thread
            started[what] = refused_query(spark, topic, bootstrap, **change)
        except Exception as exc:  # noqa: BLE001 - Spark's own error is the lesson
            errors[what] = first_line(exc)
    for what, query in started.items():
        try:
            query.awaitTermination(timeout)
        except Exception as exc:  # noqa: BLE001
            errors[what] = first_line(exc)
        else:
            errors[what] = "(ran)"
        finally:
            query.stop()
    return {what: errors[what] for what in (cases or REFUSED)}
