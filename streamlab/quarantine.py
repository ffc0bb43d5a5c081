"""Dead-letter routing: each topic parsed with its own schema, messages that do not parse sent to a quarantine topic
(with where they came from and why), inspected, repaired and replayed, and counts that prove nothing was dropped.

Why a quarantine and not a filter: `from_json` never fails a query on bad input. In its default PERMISSIVE mode a
message that is not JSON becomes a row of nulls, a field of the wrong type becomes one null field, and a JSON
object without the schema's fields parses "fine" into nulls. A `where(data.id.isNotNull())` therefore drops bad
messages silently. `parse` names the problem of every row instead, so nothing can leave the pipeline unaccounted.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field

from .lab import new_checkpoint
from .widgets import LiveChart, finish_two_axes, png, slider

CORRUPT = "_corrupt"  # the column from_json fills with a message it could not parse
HEADERS = ("source-topic", "source-partition", "source-offset", "error")
COLORS = ("#4c72b0", "#55a868", "#8172b3", "#937860")
QUARANTINE_COLOR = "#c44e52"


# -- the messages: well-formed events and a share of malformed ones -----------------------------------------------

def order(i: int) -> str:
    """Order `i` as JSON: {"id", "user", "amount"}."""
    return f'{{"id":{i},"user":"user-{i % 50}","amount":{((i * 37) % 10_000) / 100:.2f}}}'


def payment(i: int) -> str:
    """Payment `i` as JSON: {"order_id", "method", "paid"}."""
    return f'{{"order_id":{i},"method":"{("card", "iban", "wallet")[i % 3]}","paid":{((i * 53) % 10_000) / 100:.2f}}}'


def malformed(good: str, i: int) -> str:
    """A broken copy of a good message: odd `i` cut off mid-way (beyond repair), even `i` with its last number
    written with a decimal comma as a string, e.g. "paid":"12,50" (repairable)."""
    if i % 2:
        return good[: len(good) // 2]
    name, _, number = good[:-1].rpartition(":")
    return f'{name}:"{number.replace(".", ",")}"}}'


class Messages:
    """A value function for a producer: message i is `make(i)`, or a malformed copy for a share of them.

    `share` (0 to 1) can change while a producer runs; record i is malformed when (i * 37) % 100 < share * 100,
    so the malformed ones are spread evenly and both kinds (`malformed`) occur.
    """

    def __init__(self, make, share: float = 0.0):
        self.make, self.share = make, float(share)

    def __call__(self, i: int) -> str:
        good = self.make(i)
        return malformed(good, i) if (i * 37) % 100 < self.share * 100 else good


# -- parsing and routing -------------------------------------------------------------------------------------------

def ddl_fields(schema: str) -> list[tuple[str, str]]:
    """[(name, type)] of a flat DDL schema string like "id long, user string" (plain Python, no Spark)."""
    out = []
    for part in schema.split(","):
        name, _, kind = part.strip().partition(" ")
        out.append((name.strip("`"), kind.strip().lower()))
    return out


def fields_of(schema: str) -> list[str]:
    """The field names of a flat DDL schema string like "id long, user string"."""
    return [name for name, _ in ddl_fields(schema)]


def parse(df, schema: str):
    """Kafka rows with the value parsed by the DDL `schema`: columns topic, partition, offset, value (text),
    data (the parsed struct) and error (None when the message is good, else why it is not).

    A message is malformed when it is empty, is not JSON of the schema's types (from_json's corrupt-record
    column catches both), or lacks one of the schema's fields.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructType

    names = fields_of(schema)
    with_corrupt = StructType.fromDDL(schema).add(CORRUPT, StringType())
    text = F.col("value").cast("string")
    parsed = df.select("topic", "partition", "offset", text.alias("value"),
                       F.from_json(text, with_corrupt, {"columnNameOfCorruptRecord": CORRUPT}).alias("data"))
    error = F.when(F.col("value").isNull() | (F.col("value") == ""), F.lit("empty message"))
    error = error.when(F.col(f"data.{CORRUPT}").isNotNull(), F.lit(f"not JSON of the schema ({schema})"))
    for name in names:
        error = error.when(F.col(f"data.{name}").isNull(), F.lit(f"missing field {name}"))
    return parsed.select("topic", "partition", "offset", "value",
                         F.struct(*[F.col(f"data.{n}").alias(n) for n in names]).alias("data"),
                         error.alias("error"))


def dead_letters(bad):
    """Rows of `parse` that failed, as Kafka sink rows: the original value, and headers saying where each came from
    (source-topic, source-partition, source-offset) and why (error). Add the quarantine topic as `topic`."""
    from pyspark.sql import functions as F

    header = lambda k, v: F.struct(F.lit(k).alias("key"), v.cast("string").cast("binary").alias("value"))  # noqa
    return bad.select(F.col("value"), F.array(header("source-topic", F.col("topic")),
                                              header("source-partition", F.col("partition")),
                                              header("source-offset", F.col("offset")),
                                              header("error", F.col("error"))).alias("headers"))


def write(df, topic: str, bootstrap: str | None = None) -> None:
    """Write a batch DataFrame with a `value` column (and optional key/headers) to `topic`."""
    from .broker import ensure_broker

    (df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap or ensure_broker())
     .option("topic", topic).save())


class Router:
    """A foreachBatch function: rows routed by their `topic` column, each topic parsed with its own schema, good
    rows written as JSON to that topic's clean topic, malformed ones to the quarantine topic with their headers.

    `history` holds one entry per batch: {'batch', 'at' (s since the router was made), 'clean': {source: n},
    'quarantined': {source: n}}.
    """

    def __init__(self, schemas: dict, clean: dict, quarantine_topic: str, bootstrap: str | None = None):
        from .broker import ensure_broker

        self.schemas, self.clean, self.quarantine_topic = dict(schemas), dict(clean), quarantine_topic
        self.bootstrap = bootstrap or ensure_broker()
        self.history: list[dict] = []
        self._t0 = time.monotonic()

    def __call__(self, batch_df, batch_id) -> None:
        from functools import reduce

        from pyspark.sql import functions as F

        batch_df.persist()
        try:
            # Each topic's parsed struct has its own type: turned back into JSON text, the parts union.
            parts = [parse(batch_df.where(F.col("topic") == source), schema)
                     .withColumn("data", F.to_json("data"))
                     .withColumn("target", F.lit(self.clean[source])) for source, schema in self.schemas.items()]
            routed = reduce(lambda a, b: a.unionByName(b), parts).persist()
            counts = routed.groupBy("topic", F.col("error").isNull().alias("good")).count().collect()
            good = routed.where(F.col("error").isNull())
            if any(r["good"] for r in counts):
                (good.select(F.col("target").alias("topic"), F.col("data").alias("value"))
                 .write.format("kafka").option("kafka.bootstrap.servers", self.bootstrap).save())
            if any(not r["good"] for r in counts):
                write(dead_letters(routed.where(F.col("error").isNotNull())), self.quarantine_topic, self.bootstrap)
            routed.unpersist()
        finally:
            batch_df.unpersist()
        entry = {"batch": batch_id, "at": round(time.monotonic() - self._t0, 2),
                 "clean": {s: 0 for s in self.schemas}, "quarantined": {s: 0 for s in self.schemas}}
        for r in counts:
            entry["clean" if r["good"] else "quarantined"][r["topic"]] += r["count"]
        self.history.append(entry)


def run(spark, sources: list, route, checkpoint: str, timeout: float = 120.0,
        bootstrap: str | None = None) -> str | None:
    """Run `route` (a foreachBatch function) over `sources` from earliest to the end of what is there
    (availableNow) on `checkpoint`; a second call on the same checkpoint reads only what arrived since.
    Returns None, or the failure's first line."""
    from .broker import ensure_broker

    query = None
    try:
        query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap or ensure_broker())
                 .option("subscribe", ",".join(sources)).option("startingOffsets", "earliest").load()
                 .writeStream.foreachBatch(route).trigger(availableNow=True)
                 .option("checkpointLocation", checkpoint).start())
        if not query.awaitTermination(timeout):
            return f"the query did not finish within {timeout:.0f} s"
        return None
    except Exception as exc:  # the learner's route raised: reported, not raised
        text = str(exc)
        inner = [line for line in text.splitlines() if "Error" in line or "Exception" in line]
        return (inner[-1] if inner else text.splitlines()[0]).strip()[:300]
    finally:
        if query is not None:
            query.stop()


# -- reading the topics back (plain Kafka clients: the ground truth, independent of Spark) -------------------------

def read_all(topic: str, bootstrap: str | None = None) -> list:
    """Every record of `topic` from its earliest to its latest offset now (kafka-python ConsumerRecords)."""
    from .topics import records

    return records(topic, bootstrap)


def _headers(record) -> dict:
    return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in (record.headers or [])}


def inspect(quarantine_topic: str, bootstrap: str | None = None):
    """The quarantine topic as a table: where each message came from, why it was quarantined, and its value."""
    import pandas as pd

    rows = [{"offset": r.offset, **{k.replace("-", "_"): v for k, v in _headers(r).items()},
             "value": r.value.decode(errors="replace") if r.value is not None else None}
            for r in read_all(quarantine_topic, bootstrap)]
    return pd.DataFrame(rows, columns=["offset", "source_topic", "source_partition", "source_offset", "error",
                                       "value"])


def _python_type_ok(kind: str, value) -> bool:
    if value is None:
        return False
    if kind in ("long", "bigint", "int", "integer", "short", "smallint", "byte", "tinyint"):
        return isinstance(value, int) and not isinstance(value, bool)
    if kind in ("double", "float"):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    return True


def is_good(value: bytes | str | None, schema: str) -> bool:
    """Whether a message parses as the flat DDL `schema` with every field present (plain Python, no Spark)."""
    try:
        data = json.loads(value) if value else None
    except ValueError:
        return False
    if not isinstance(data, dict):
        return False
    return all(_python_type_ok(kind, data.get(name)) for name, kind in ddl_fields(schema))


def ledger(schemas: dict, clean: dict, quarantine_topic: str, bootstrap: str | None = None) -> dict:
    """Counts that prove nothing was dropped, read from Kafka with a plain client: per source topic, its messages,
    how many of them are good (checked in Python), what reached its clean topic and the quarantine, and
    `missing` = messages − clean − quarantined (0 when every message is accounted for)."""
    quarantined: dict = {}
    for r in read_all(quarantine_topic, bootstrap):
        source = _headers(r).get("source-topic")
        quarantined[source] = quarantined.get(source, 0) + 1
    out = {}
    for source, schema in schemas.items():
        records = read_all(source, bootstrap)
        cleaned = len(read_all(clean[source], bootstrap))
        good = sum(is_good(r.value, schema) for r in records)
        out[source] = {"messages": len(records), "good": good, "clean": cleaned,
                       "quarantined": quarantined.get(source, 0),
                       "missing": len(records) - cleaned - quarantined.get(source, 0)}
    return out


def replay(quarantine_topic: str, repair, bootstrap: str | None = None) -> dict:
    """Send every quarantined message that `repair(value text)` fixes back to its source topic (header
    source-topic); `repair` returns the fixed text, or None to leave a message in quarantine.

    Returns {'read', 'replayed', 'kept', 'errors'} (a repair that raises counts as kept, with its error text).
    A production replay would also remember how far it got (a consumer group's committed offset) so that running
    it twice does not send the same messages twice; this one reads the whole topic every time.
    """
    from kafka import KafkaProducer

    from .broker import ensure_broker

    records = read_all(quarantine_topic, bootstrap)
    producer = KafkaProducer(bootstrap_servers=bootstrap or ensure_broker())
    replayed, errors = 0, []
    try:
        for r in records:
            try:
                fixed = repair(r.value.decode() if r.value is not None else None)
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            if fixed is not None:
                producer.send(_headers(r)["source-topic"], value=fixed.encode() if isinstance(fixed, str) else fixed)
                replayed += 1
        producer.flush()
    finally:
        producer.close(timeout=10)
    return {"read": len(records), "replayed": replayed, "kept": len(records) - replayed, "errors": errors[:3]}


# -- the live demo: a slider for the share of malformed messages, rows per topic per batch -----------------------

class RoutingChart(LiveChart):
    """Rows per batch, stacked by source topic, with the quarantined ones on top in red, and the quarantine's
    running total as a line."""

    def __init__(self, sources: dict, title: str = ""):
        super().__init__(title)
        self.sources = sources  # {topic: short label}
        self.entries: list[dict] = []

    def figure(self):
        """Draw the batches into a new matplotlib figure."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=self.size)
        ax = fig.add_subplot()
        xs = [e["at"] for e in self.entries]
        bottom = [0] * len(xs)
        for i, (topic, label) in enumerate(self.sources.items()):
            ys = [e["clean"].get(topic, 0) for e in self.entries]
            ax.bar(xs, ys, bottom=bottom, width=0.6, color=COLORS[i % len(COLORS)], label=f"{label}: clean")
            bottom = [b + y for b, y in zip(bottom, ys)]
        ys = [sum(e["quarantined"].values()) for e in self.entries]
        ax.bar(xs, ys, bottom=bottom, width=0.6, color=QUARANTINE_COLOR, label="quarantined")
        ax.set_xlabel("seconds since start")
        ax.set_ylabel("rows per batch")
        tallest = max([b + y for b, y in zip(bottom, ys)], default=0)
        ax.set_ylim(0, max(tallest, 1) * 1.45)  # room for the legend above the bars
        ax2 = ax.twinx()
        total, points = 0, []
        for e in self.entries:
            total += sum(e["quarantined"].values())
            points.append(total)
        if points:
            ax2.plot(xs, points, color=QUARANTINE_COLOR, linewidth=2, linestyle="--", label="quarantine total")
        ax2.set_ylabel("messages in quarantine")
        ax2.set_ylim(0, max(points, default=1) * 1.1 or 1)
        return finish_two_axes(fig, ax, ax2, self.title)


@dataclass
class RoutingDemo:
    """Producers → two topics with different schemas → one query whose foreachBatch routes them (a `Router`).

    Sliders: the share of malformed messages (both producers, applied at once) and each producer's rate. The
    query triggers every `trigger_seconds`; the demo stops itself `duration` s after its first batch; `script`
    moves the share slider by itself at given times (so a run nobody touches still shows a change). `wait()`
    stops the producers, lets the query read everything they sent (availableNow on the same checkpoint), and
    returns one row per batch.
    """

    spark: object
    schemas: dict  # {source topic: DDL schema}
    makers: dict  # {source topic: function i -> good message}
    clean: dict  # {source topic: clean topic}
    quarantine_topic: str
    rates: dict = field(default_factory=dict)  # {source topic: records/s}
    malformed_share: float = 0.1
    trigger_seconds: float = 1.0
    duration: float = 12.0
    labels: dict = field(default_factory=dict)  # {source topic: short name for the chart}
    script: list = field(default_factory=list)  # [(seconds after the first batch, malformed %)]: slider moves

    def __post_init__(self):
        import ipywidgets as W

        from .broker import ensure_broker

        self.bootstrap = ensure_broker()
        self.labels = {t: self.labels.get(t, t) for t in self.schemas}
        self.router = Router(self.schemas, self.clean, self.quarantine_topic, self.bootstrap)
        self.chart = RoutingChart(self.labels, "rows per batch by source topic, and the quarantine")
        self.readout = W.HTML(value="<code>not started</code>")
        self.messages = {t: Messages(self.makers[t], self.malformed_share) for t in self.schemas}
        self.sliders = {"share": slider("malformed messages (%)", round(self.malformed_share * 100), 0, 50, 5)}
        for t in self.schemas:
            self.sliders[t] = slider(f"{self.labels[t]} (rec/s)", int(self.rates.get(t, 100)), 0, 500, 25)
        self.sliders["share"].observe(self._on_share, names="value")
        for t in self.schemas:
            self.sliders[t].observe(lambda change, t=t: self._on_rate(t, change["new"]), names="value")
        self.checkpoint = new_checkpoint("routing")
        self.producers: dict = {}
        self._query = None
        self._done = threading.Event()
        self._thread = None
        self._t0 = 0.0
        self._steps = sorted(self.script)
        self._handle = None
        self._stop_button = None

    def _on_share(self, change) -> None:
        self.malformed_share = change["new"] / 100
        for m in self.messages.values():
            m.share = self.malformed_share

    def _on_rate(self, topic: str, rate: int) -> None:
        self.rates[topic] = rate
        if topic in self.producers:
            self.producers[topic].set_rate(rate)

    def start(self) -> None:
        """Show the sliders and the chart, start the producers and the query, and poll in the background."""
        import ipywidgets as W
        from IPython.display import display

        from .producer import BackgroundProducer

        for t in self.schemas:
            self.producers[t] = BackgroundProducer(t, rate=self.sliders[t].value, value_fn=self.messages[t],
                                                   key_fn=lambda i: None, bootstrap=self.bootstrap).start()
        self._t0 = time.monotonic()
        self._query = (self.spark.readStream.format("kafka").option("kafka.bootstrap.servers", self.bootstrap)
                       .option("subscribe", ",".join(self.schemas)).option("startingOffsets", "earliest").load()
                       .writeStream.foreachBatch(self.router)
                       .trigger(processingTime=f"{self.trigger_seconds} seconds")
                       .option("checkpointLocation", self.checkpoint).start())
        self._stop_button = W.Button(description="stop demo", icon="stop", layout=W.Layout(width="120px"))
        self._stop_button.on_click(lambda _: self._done.set())
        self.box = W.VBox([*self.sliders.values(), W.HBox([self._stop_button, self.readout]), self.chart.image])
        bundle = self.box._repr_mimebundle_()
        bundle["text/plain"] = "RoutingDemo (runs in the background; the next cell waits for it)"
        self._handle = display(bundle, raw=True, display_id=True)
        self._thread = threading.Thread(target=self._poll, name="streamlab-routing-demo", daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        first = None
        try:
            while not self._done.is_set():
                entries = list(self.router.history)
                if first is None and entries:
                    first = time.monotonic()
                while first is not None and self._steps and time.monotonic() - first >= self._steps[0][0]:
                    self.sliders["share"].value = int(self._steps.pop(0)[1])  # the observer applies it
                self.chart.entries = entries
                clean = sum(sum(e["clean"].values()) for e in entries)
                bad = sum(sum(e["quarantined"].values()) for e in entries)
                now = time.monotonic() - self._t0
                self.readout.value = (f"<code>t={now:5.1f}s · malformed {self.malformed_share:.0%} · sent "
                                      f"{sum(p.sent for p in self.producers.values())} · batches {len(entries)} · "
                                      f"clean {clean} · quarantined {bad}</code>")
                self.chart.redraw()
                if first is not None and time.monotonic() - first >= self.duration:
                    break
                if self._query.exception() is not None:
                    break
                self._done.wait(0.5)
        finally:
            self._done.set()

    def stop(self) -> None:
        """Stop the poller, the producers and the query (safe to call twice)."""
        from .monitor import stop_between_batches

        self._done.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=60)
        for p in self.producers.values():
            p.stop()
        if self._query is not None:
            # With the producers stopped the query soon idles between triggers. A batch cut short would be re-run
            # by the final routing run and write its messages twice (the Kafka sink is at-least-once), so wait for
            # a quiet moment rather than the usual 10 s.
            stop_between_batches(self._query, timeout=60)

    def wait(self):
        """Block until the demo is over, stop it, route what is left, leave a static chart as the box's saved
        output (what a headless run or a saved notebook shows), and return one row per batch."""
        import pandas as pd

        if self._thread is not None:
            self._thread.join()
        self.stop()
        error = run(self.spark, list(self.schemas), self.router, self.checkpoint, bootstrap=self.bootstrap)
        if error:
            print(f"⚠️ the final routing run failed: {error}")
        self.chart.entries = list(self.router.history)
        self.readout.value = self.readout.value.replace("</code>", " · ended</code>")
        for widget in [*self.sliders.values(), self._stop_button]:
            widget.disabled = True
        self.chart.redraw()
        bundle = self.box._repr_mimebundle_()
        bundle["image/png"] = png(self.chart.figure())
        bundle.pop("text/plain", None)
        if self._handle is not None:
            self._handle.update(bundle, raw=True)
        rows = [{"batch": e["batch"], "at": e["at"],
                 **{f"{self.labels[t]} clean": e["clean"][t] for t in self.schemas},
                 **{f"{self.labels[t]} quarantined": e["quarantined"][t] for t in self.schemas}}
                for e in self.router.history]
        return pd.DataFrame(rows)
