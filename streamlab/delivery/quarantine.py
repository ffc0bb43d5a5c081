"""Dead-letter routing: each topic parsed with its own schema, messages that do not parse sent to a quarantine topic
(with where they came from and why), inspected, repaired and replayed, and counts that prove nothing was dropped.

Why a quarantine and not a filter: `from_json` never fails a query on bad input. In its default PERMISSIVE mode a
message that is not JSON becomes a row of nulls, a field of the wrong type becomes one null field, and a JSON
object without the schema's fields parses "fine" into nulls. A `where(data.id.isNotNull())` therefore drops bad
messages silently. `parse` names the problem of every row instead, so nothing can leave the pipeline unaccounted.
"""
from __future__ import annotations

import json
import time

from streamlab.demo.live import Knob, LiveDemo, Panel, Source
from streamlab.errors import first_line

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
    from streamlab.lab.broker import ensure_broker

    (df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap or ensure_broker())
     .option("topic", topic).save())


class Router:
    """A foreachBatch function: rows routed by their `topic` column, each topic parsed with its own schema, good
    rows written as JSON to that topic's clean topic, malformed ones to the quarantine topic with their headers.

    `history` holds one entry per batch: {'batch', 'at' (s by `clock`, default since the router was made),
    'clean': {source: n}, 'quarantined': {source: n}}.
    """

    def __init__(self, schemas: dict, clean: dict, quarantine_topic: str, bootstrap: str | None = None, clock=None):
        from streamlab.lab.broker import ensure_broker

        self.schemas, self.clean, self.quarantine_topic = dict(schemas), dict(clean), quarantine_topic
        self.bootstrap = bootstrap or ensure_broker()
        self.history: list[dict] = []
        t0 = time.monotonic()
        self.clock = clock or (lambda: time.monotonic() - t0)

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
        entry = {"batch": batch_id, "at": round(self.clock(), 2),
                 "clean": {s: 0 for s in self.schemas}, "quarantined": {s: 0 for s in self.schemas}}
        for r in counts:
            entry["clean" if r["good"] else "quarantined"][r["topic"]] += r["count"]
        self.history.append(entry)


def run(spark, sources: list, route, checkpoint: str, timeout: float = 120.0,
        bootstrap: str | None = None) -> str | None:
    """Run `route` (a foreachBatch function) over `sources` from earliest to the end of what is there
    (availableNow) on `checkpoint`; a second call on the same checkpoint reads only what arrived since.
    Returns None, or the failure's first line."""
    from streamlab.lab.broker import ensure_broker

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
        return first_line(exc, 300)
    finally:
        if query is not None:
            query.stop()


# -- reading the topics back (plain Kafka clients: the ground truth, independent of Spark) -------------------------

def read_all(topic: str, bootstrap: str | None = None) -> list:
    """Every record of `topic` from its earliest to its latest offset now (kafka-python ConsumerRecords)."""
    from streamlab.lab.topics import records

    return records(topic, bootstrap)


def copy_topic(topic: str, prefix: str, bootstrap: str | None = None) -> str:
    """A new topic (streamlab.new_topic, deleted by cleanup()) with every record of `topic`, in its partition."""
    from kafka import KafkaProducer

    from streamlab.errors import LabError
    from streamlab.lab.broker import ensure_broker
    from streamlab.lab.lifecycle import new_topic
    from streamlab.lab.topics import describe_topic

    partitions = describe_topic(topic, bootstrap)
    if not partitions:
        raise LabError(f"there is no topic {topic} to copy (cleanup() deletes a notebook's topics): run the cells "
                       "that make it again")
    copy = new_topic(prefix, partitions=len(partitions))
    producer = KafkaProducer(bootstrap_servers=bootstrap or ensure_broker())
    try:
        for r in read_all(topic, bootstrap):
            producer.send(copy, key=r.key, value=r.value, partition=r.partition, headers=list(r.headers or []))
        producer.flush()
    finally:
        producer.close(timeout=10)
    return copy


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

    from streamlab.lab.broker import ensure_broker

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

class RoutingDemo(LiveDemo):
    """Two producers → topics with different schemas → the course's live demo, whose query routes every batch with
    a `Router` (its `router`): good rows to clean topics, malformed ones to the quarantine topic.

    Sliders: the share of malformed messages (both producers, at once) and each producer's rate. A panel stacks
    each batch's rows by source topic, the quarantined ones on top in red, with the quarantine's running total.
    `script` [(seconds after the first batch, malformed %)] moves the share slider by itself. At the end the
    producers stop and the query routes everything they sent (so the counts can prove nothing was dropped);
    `routed()` is one row per batch: clean and quarantined rows per source.
    """

    def __init__(self, spark, schemas: dict, makers: dict, clean: dict, quarantine_topic: str,
                 rates: dict | None = None, malformed_share: float = 0.1, trigger_seconds: float = 1.0,
                 duration: float = 12.0, labels: dict | None = None, script=(), bootstrap: str | None = None):
        self.schemas, self.labels = dict(schemas), {t: (labels or {}).get(t, t) for t in schemas}
        self.messages = {t: Messages(makers[t], malformed_share) for t in schemas}
        self.router = Router(schemas, clean, quarantine_topic, bootstrap)
        rates = rates or {}
        first, *others = list(schemas)
        share = Knob("malformed", "malformed messages (%)", round(malformed_share * 100), 0, 50, 5,
                     apply=self.set_share)
        super().__init__(spark, first, rate=int(rates.get(first, 100)), trigger_seconds=trigger_seconds,
                         duration=duration, starting_offsets="earliest", controls=("rate",),
                         script=[(at, "malformed", pct) for at, pct in script], charts=("rates", "lag"),
                         lag_lines="total", title="rows per batch by source topic, and the quarantine",
                         bootstrap=self.router.bootstrap, value_fn=self.messages[first], key_fn=lambda i: None,
                         label=self.labels[first], knobs=[share], on_batch=self.router, drain=True,
                         sources={t: Source(int(rates.get(t, 100)), self.messages[t], lambda i: None, self.labels[t])
                                  for t in others},
                         panels={"routed": Panel("rows per batch by source topic, quarantined on top",
                                                 "rows per batch", self._draw)},
                         status=self._status)
        self.router.clock = self.now

    @property
    def malformed_share(self) -> float:
        """The share of malformed messages the producers send now (0 to 1)."""
        return next(iter(self.messages.values())).share

    def set_share(self, percent) -> None:
        """Make both producers send `percent` % malformed messages from now on."""
        for m in self.messages.values():
            m.share = percent / 100

    def _status(self, demo) -> str:
        entries = self.router.history
        clean = sum(sum(e["clean"].values()) for e in entries)
        bad = sum(sum(e["quarantined"].values()) for e in entries)
        return f"malformed {self.malformed_share:.0%} · clean {clean} · quarantined {bad}"

    def _draw(self, ax, demo, shift) -> None:
        planned = {b["batch"]: b["time"] for b in self.history}  # the batch's bar where Spark UI's would be
        entries = list(self.router.history)
        xs = [planned.get(e["batch"], e["at"]) + shift for e in entries]
        bottom = [0] * len(xs)
        for i, (topic, label) in enumerate(self.labels.items()):
            ys = [e["clean"].get(topic, 0) for e in entries]
            ax.bar(xs, ys, bottom=bottom, width=0.6, color=COLORS[i % len(COLORS)], label=f"{label}: clean")
            bottom = [b + y for b, y in zip(bottom, ys)]
        ys = [sum(e["quarantined"].values()) for e in entries]
        ax.bar(xs, ys, bottom=bottom, width=0.6, color=QUARANTINE_COLOR, label="quarantined")
        total, points = 0, []
        for y in ys:
            total += y
            points.append(total)
        twin = ax.twinx()
        twin.plot(xs, points, color=QUARANTINE_COLOR, linewidth=2, linestyle="--", label="quarantine total")
        twin.set_ylim(0, max(points, default=1) * 1.1 or 1)
        twin.tick_params(labelsize=7)
        twin.set_ylabel("in quarantine", fontsize=8)
        handles, names = ax.get_legend_handles_labels()
        more, more_names = twin.get_legend_handles_labels()
        ax.legend(handles + more, names + more_names, fontsize=6.5, loc="upper left", bbox_to_anchor=(1.08, 1.0),
                  borderaxespad=0)

    def routed(self):
        """One row per batch the router wrote: batch, at (s), and clean / quarantined rows per source."""
        import pandas as pd

        return pd.DataFrame([{"batch": e["batch"], "at": e["at"],
                              **{f"{self.labels[t]} clean": e["clean"][t] for t in self.schemas},
                              **{f"{self.labels[t]} quarantined": e["quarantined"][t] for t in self.schemas}}
                             for e in self.router.history])
