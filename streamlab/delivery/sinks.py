"""Four ways a Structured Streaming query writes a Kafka topic's records out, and how to count what arrived.

Each sink reads the same input (`topic`, `partition`, `offset`, `id` columns: the source record's Kafka
coordinates and the id it carries), starts a query with `trigger(availableNow=True)`, and can say which ids
arrived (`delivered()`: one entry per copy, read from the destination itself, never from Spark):

- `KafkaSink`: Spark's own Kafka sink, `writeStream.format("kafka")`: at-least-once;
- `SqliteSink`: `foreachBatch` upserting into SQLite, keyed by (topic, partition, offset): idempotent;
- `TransactionalKafkaSink`: `foreachBatch` driving a transactional producer (stable transactional id) that
  commits the batch id with the records, so a replayed batch is recognised and skipped; read back read_committed;
- `FileSink`: Spark's file sink (JSON files) whose `_spark_metadata` log lists the files of committed batches.

Every sink also has `write_batch(batch_df, batch_id)`, so that one query's foreachBatch can drive all four (the
crash demo of `streamlab.delivery.faults`): the Kafka sink's is the same batch writer Spark's streaming Kafka sink calls
(at-least-once), the file sink's is Spark's own file sink with its `_spark_metadata` log.
"""
from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from streamlab.errors import first_line
from streamlab.lab.broker import ensure_broker
from streamlab.lab.producer import close_now

COLUMNS = ("topic", "partition", "offset", "id")


def source_frame(spark, topic: str, bootstrap: str | None = None):
    """The input every sink writes: a stream of `topic` from its start, as (topic, partition, offset, id)."""
    return (spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap or ensure_broker())
            .option("subscribe", topic).option("startingOffsets", "earliest").load()
            .selectExpr("topic", "partition", "offset", "cast(cast(value AS string) AS long) AS id"))


def read_topic(topic: str, bootstrap: str | None = None, committed: bool = False, timeout: float = 30.0,
               keys: bool = False) -> list:
    """Every record of `topic` as (partition, offset, value bytes), read with kafka-python from the beginning
    ((partition, offset, key, value) with `keys=True`).

    `committed=True` reads with isolation_level=read_committed: records of aborted transactions are skipped.
    """
    from streamlab.lab.topics import records

    return [(r.partition, r.offset, r.key, r.value) if keys else (r.partition, r.offset, r.value)
            for r in records(topic, bootstrap or ensure_broker(), committed, timeout)]


def ids_in(values) -> list[int]:
    """The `id` of each JSON record value (bytes or str); values that are not such records are skipped."""
    out = []
    for value in values:
        try:
            out.append(int(json.loads(value)["id"]))
        except (TypeError, ValueError, KeyError):
            continue
    return out


class KafkaSink:
    """Spark's Kafka sink: each input row becomes one record, value = to_json(struct(topic, partition, offset, id))."""

    label = "Kafka sink (plain)"
    builtin = True  # no code of ours runs between its write and Spark's commit

    def __init__(self, topic: str, bootstrap: str | None = None):
        self.topic, self.bootstrap = topic, bootstrap or ensure_broker()

    def start(self, df, checkpoint: str):
        """Start the query (availableNow) writing `df` to the topic."""
        return (self._records(df).writeStream.format("kafka").option("kafka.bootstrap.servers", self.bootstrap)
                .option("topic", self.topic).option("checkpointLocation", checkpoint)
                .trigger(availableNow=True).start())

    @staticmethod
    def _records(df):
        return df.selectExpr("cast(id AS string) AS key", "to_json(struct(topic, partition, offset, id)) AS value")

    def write_batch(self, batch_df, batch_id: int) -> None:
        """foreachBatch: write the batch with Spark's Kafka writer (nothing remembers batch ids: a replay writes
        again, as the streaming sink does)."""
        (self._records(batch_df).write.format("kafka").option("kafka.bootstrap.servers", self.bootstrap)
         .option("topic", self.topic).save())

    def delivered(self) -> list[int]:
        """The id of every record in the topic (duplicates included)."""
        return ids_in(v for _, _, v in read_topic(self.topic, self.bootstrap))


class FileSink:
    """Spark's file sink (JSON lines): each batch's files are listed in `<path>/_spark_metadata/<batch id>`."""

    label = "file sink"
    builtin = True

    def __init__(self, path: str):
        self.path = str(path)

    def write_batch(self, batch_df, batch_id: int) -> None:
        """foreachBatch: hand the batch to Spark's own file sink (the JVM's FileStreamSink on the same path), which
        skips a batch id its `_spark_metadata` log already lists, exactly as in a query with format("json")."""
        session = batch_df.sparkSession
        jvm = session.sparkContext._jvm
        utils = jvm.org.apache.spark.api.python.PythonUtils
        sink = jvm.org.apache.spark.sql.execution.streaming.sinks.FileStreamSink(  # reads the log, as a restart does
            session._jsparkSession, self.path, jvm.org.apache.spark.sql.execution.datasources.json.JsonFileFormat(),
            utils.toSeq(jvm.java.util.ArrayList()), utils.toScalaMap(jvm.java.util.HashMap()))
        sink.addBatch(batch_id, batch_df._jdf)

    def start(self, df, checkpoint: str):
        """Start the query (availableNow) writing `df` as JSON files under the path."""
        return (df.writeStream.format("json").option("path", self.path).option("checkpointLocation", checkpoint)
                .trigger(availableNow=True).start())

    def committed_files(self) -> list[Path]:
        """The data files the `_spark_metadata` log lists (its compacted and delta files, deletions applied)."""
        log = Path(self.path) / "_spark_metadata"
        entries: dict[str, str] = {}
        if not log.is_dir():
            return []
        names = sorted((f for f in log.iterdir() if f.name.split(".")[0].isdigit() and not f.name.endswith(".crc")),
                       key=lambda f: int(f.name.split(".")[0]))
        for file in names:
            for line in file.read_text(encoding="utf-8").splitlines()[1:]:  # line 1: the log version
                if line.strip():
                    entry = json.loads(line)
                    if entry.get("action", "add") == "add":
                        entries[entry["path"]] = "add"
                    else:
                        entries.pop(entry["path"], None)
        return [Path(p.removeprefix("file:")) for p in entries]

    def all_files(self) -> list[Path]:
        """Every data file in the folder, whether the log lists it or not (what a plain directory listing sees)."""
        return sorted(f for f in Path(self.path).glob("part-*") if f.is_file())

    @staticmethod
    def _ids(files) -> list[int]:
        return ids_in(line for f in files for line in f.read_text(encoding="utf-8").splitlines())

    def delivered(self) -> list[int]:
        """The ids in the files the log lists: what Spark (or any reader honouring the log) reads back."""
        return self._ids(self.committed_files())

    def listed(self) -> list[int]:
        """The ids in every file of the folder, log ignored."""
        return self._ids(self.all_files())


UPSERT_DDL = ("CREATE TABLE IF NOT EXISTS events (topic TEXT NOT NULL, partition INTEGER NOT NULL, "
              "offset INTEGER NOT NULL, id INTEGER, batch_id INTEGER, writes INTEGER NOT NULL DEFAULT 1, "
              "PRIMARY KEY (topic, partition, offset))")


def upsert(conn, rows, batch_id: int) -> None:
    """Write rows (topic, partition, offset, id) keyed by their Kafka coordinates: a replayed row overwrites itself."""
    conn.executemany(
        "INSERT INTO events (topic, partition, offset, id, batch_id) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (topic, partition, offset) DO UPDATE SET id = excluded.id, batch_id = excluded.batch_id, "
        "writes = writes + 1", [(*row, batch_id) for row in rows])


class SqliteSink:
    """foreachBatch into the SQLite file `db`: `ddl` makes the table `events`, `save(conn, rows, batch_id)` writes
    a list of (topic, partition, offset, id) tuples. By default an upsert keyed by (topic, partition, offset),
    whose `writes` column counts how often a row was written (above 1 where a replay was absorbed).

    The batch is streamed to the driver partition by partition and committed every `chunk` rows, so a crash
    mid-batch really leaves part of the batch in the table.
    """

    label = "SQLite upsert"
    builtin = False

    def __init__(self, db: str, ddl: str = UPSERT_DDL, save=upsert, chunk: int = 50):
        self.db, self.save, self.chunk = str(db), save, chunk
        conn = sqlite3.connect(self.db)
        try:
            conn.execute(ddl)
            conn.commit()
        finally:
            conn.close()

    def write_batch(self, batch_df, batch_id: int) -> None:
        """foreachBatch: hand the batch's rows to `save`, `chunk` rows at a time, committing after each."""
        conn = sqlite3.connect(self.db)
        try:
            pending = []
            for row in batch_df.select(*COLUMNS).toLocalIterator():
                pending.append(tuple(row))
                if len(pending) >= self.chunk:
                    self.save(conn, pending, batch_id)
                    conn.commit()
                    pending = []
            if pending:
                self.save(conn, pending, batch_id)
            conn.commit()
        finally:
            conn.close()  # a crash before commit(): SQLite rolls the open part back

    def start(self, df, checkpoint: str):
        """Start the query (availableNow) with write_batch as its foreachBatch."""
        return (df.writeStream.foreachBatch(self.write_batch).option("checkpointLocation", checkpoint)
                .trigger(availableNow=True).start())

    def delivered(self) -> list[int]:
        """The id of every row in the table `events`."""
        return [row[0] for row in read_table(self.db, "SELECT id FROM events")]

    def rewrites(self) -> int | None:
        """Writes that hit an existing row (replays absorbed by the upsert); None without a `writes` column."""
        try:
            return int(read_table(self.db, "SELECT coalesce(sum(writes - 1), 0) FROM events")[0][0])
        except sqlite3.OperationalError:
            return None


def read_table(db: str, sql: str) -> list[tuple]:
    """Run one query against the SQLite file `db` and return its rows (a fresh connection, closed after)."""
    conn = sqlite3.connect(str(db))
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


class Transaction:
    """One Kafka transaction of a batch, handed to a `write_batch(tx, rows, batch_id)` function.

    `last_batch()` is the id of the last batch whose transaction committed (-1: none). `send()` adds a record;
    `commit(batch_id)` commits the records together with the batch id (as the offset of a consumer group that
    only serves as the sink's ledger: Kafka commits both atomically, or neither).
    """

    def __init__(self, sink: "TransactionalKafkaSink"):
        self._sink = sink
        self._producer = None

    def last_batch(self) -> int:
        """The last batch id committed to Kafka by this sink's transactional id (-1 when none)."""
        return self._sink.last_batch()

    def send(self, value, key=None) -> None:
        """Add one record to the open transaction (opened on the first send)."""
        if self._producer is None:
            self._producer = self._sink.producer()
            self._producer.begin_transaction()
        self._producer.send(self._sink.topic, value=_bytes(value), key=_bytes(key))

    def commit(self, batch_id: int) -> None:
        """Commit the records sent so far and `batch_id`, atomically."""
        from kafka import TopicPartition
        from kafka.structs import OffsetAndMetadata

        if self._producer is None:
            self._producer = self._sink.producer()
            self._producer.begin_transaction()
        manager = self._producer._transaction_manager
        _bounded(self._producer, "sending the batch id to the transaction", manager.send_offsets_to_transaction(
            {TopicPartition(self._sink.topic, 0): OffsetAndMetadata(batch_id + 1, "spark batch id + 1", -1)},
            self._sink.ledger))
        _bounded(self._producer, "committing the transaction", manager.begin_commit())
        self._producer = None


TX_WAIT_MS = 30_000  # what Java's producer bounds these calls by (max.block.ms, 60 s by default)


def _bounded(producer, what: str, result) -> None:
    """Wait for a transactional request at most TX_WAIT_MS, as Java's producer does. kafka-python 3.0.12's
    send_offsets_to_transaction() and commit_transaction() wait without a bound: after a broker kill moved the
    transaction coordinator, a batch then hung for ever (seen in the cluster lab's leader kills)."""
    from kafka.errors import KafkaTimeoutError

    producer._sender.wakeup()
    if not result.wait(timeout_ms=TX_WAIT_MS):
        raise KafkaTimeoutError(f"{what} got no answer within {TX_WAIT_MS // 1000} s")


def _bytes(data):
    if data is None or isinstance(data, bytes):
        return data
    return (data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))).encode()


def skip_replayed_batches(tx: Transaction, rows, batch_id: int) -> None:
    """The exactly-once batch writer: skip a batch whose transaction already committed, else send and commit."""
    if batch_id <= tx.last_batch():
        return
    for row in rows:
        tx.send(json.dumps({c: row[c] for c in COLUMNS}, separators=(",", ":")), key=str(row["id"]))
    tx.commit(batch_id)


class TransactionalKafkaSink:
    """foreachBatch driving kafka-python's transactional producer with one stable transactional id.

    A crash leaves the open transaction behind, as a dead process would; the next producer with the same id
    fences it at `init_transactions()` and the broker aborts it, so read_committed readers never see it.
    `write_batch(tx, rows, batch_id)` decides what one batch does (default: `skip_replayed_batches`).
    """

    label = "Kafka transactions"
    builtin = False

    def __init__(self, topic: str, transactional_id: str, bootstrap: str | None = None, write_batch=None):
        from streamlab.lab.access import prefixed

        # In a workshop the learner's ACLs cover only ids and topics that start with her prefix (the ledger too).
        self.topic, self.transactional_id = topic, prefixed(transactional_id)
        self.bootstrap = bootstrap or ensure_broker()
        self.ledger = f"{self.transactional_id}-batches"
        self.writer = write_batch or skip_replayed_batches
        self._producer = None
        self._zombies: list = []

    def producer(self):
        """The transactional producer (made and initialised on first use, fencing any earlier one with the id)."""
        from kafka import KafkaProducer

        if self._producer is None:
            producer = KafkaProducer(bootstrap_servers=self.bootstrap, transactional_id=self.transactional_id,
                                     linger_ms=5, max_block_ms=30_000, transaction_timeout_ms=60_000)
            producer.init_transactions()
            self._producer = producer
            for zombie in self._zombies:  # fenced now: their open transaction was aborted by the broker
                close_now(zombie, timeout=0.2)
            self._zombies.clear()
        return self._producer

    def last_batch(self) -> int:
        """The last batch id whose transaction committed (-1 when none), from the ledger group's offset."""
        from kafka.errors import KafkaTimeoutError

        from streamlab.observe.replay import group_offsets

        # Not "-1 on any error": a ledger that could not be read during a broker kill would let a replayed batch be
        # written twice. The first lookup on a fresh broker fails while Kafka creates __consumer_offsets, and a
        # lookup during a failover while the coordinator moves: both pass within seconds.
        deadline = time.monotonic() + TX_WAIT_MS / 1000
        while True:
            try:
                offsets = [o for o in group_offsets(self.ledger, self.bootstrap).get(self.topic, {}).values()
                           if o >= 0]
                return max(offsets) - 1 if offsets else -1
            except Exception as exc:
                if time.monotonic() > deadline:
                    raise KafkaTimeoutError(f"the sink's ledger (group {self.ledger}) could not be read within "
                                            f"{TX_WAIT_MS // 1000} s: {first_line(exc)}") from exc
                time.sleep(0.5)

    def write_batch(self, batch_df, batch_id: int, attempts: int = 3) -> None:
        """foreachBatch: hand the batch's rows (streamed) to the writer inside one transaction. A transaction that
        times out (its coordinator lost with a broker) is abandoned and the batch written again by a new producer,
        whose init_transactions() fences the old one (the broker aborts its transaction); a commit that did reach
        the broker is in the ledger, so the writer skips the batch."""
        from kafka.errors import KafkaTimeoutError

        for attempt in range(1, attempts + 1):
            tx = Transaction(self)
            try:
                self.writer(tx, batch_df.toLocalIterator(), batch_id)
                return
            except BaseException as exc:
                if self._producer is not None:
                    # What a crashed process leaves: a producer that never commits nor aborts. Forget it.
                    self._zombies.append(self._producer)
                    self._producer = None
                if not isinstance(exc, KafkaTimeoutError) or attempt == attempts:
                    raise

    def start(self, df, checkpoint: str):
        """Start the query (availableNow) with write_batch as its foreachBatch."""
        return (df.writeStream.foreachBatch(self.write_batch).option("checkpointLocation", checkpoint)
                .trigger(availableNow=True).start())

    def delivered(self) -> list[int]:
        """The ids a read_committed consumer sees."""
        return ids_in(v for _, _, v in read_topic(self.topic, self.bootstrap, committed=True))

    def in_log(self) -> list[int]:
        """The ids a read_uncommitted consumer sees (aborted transactions' records included)."""
        return ids_in(v for _, _, v in read_topic(self.topic, self.bootstrap))

    def close(self) -> None:
        """Close the producer(s) and delete the ledger group."""
        for producer in [self._producer, *self._zombies]:
            if producer is not None:
                close_now(producer, timeout=2)
        self._producer, self._zombies = None, []
        from streamlab.observe.replay import delete_group

        delete_group(self.ledger)


def topic_family(prefix: str, suffixes, partitions: int = 1) -> tuple[str, dict]:
    """Topics `<base>-<suffix>` for a fan-out (base made unique), deleted by cleanup(); returns (base, {suffix: name})."""
    from streamlab.lab import lifecycle as lab, topics

    base = topics.unique_name(prefix)
    made = {}
    for suffix in suffixes:
        name = topics.create_topic(f"{base}-{suffix}", partitions, lab.chosen_bootstrap())
        lab.track_topic(name)
        made[suffix] = name
    return base, made


def four_sinks(label_prefix: str = "lab") -> dict:
    """The plain Kafka sink and the three exactly-once ones, each with a fresh destination (cleaned up by cleanup())."""
    import streamlab

    folder = streamlab.new_checkpoint(f"{label_prefix}-sinks")
    transactional = streamlab.new_topic(f"{label_prefix}-tx", partitions=2)
    return {"plain Kafka": KafkaSink(streamlab.new_topic(f"{label_prefix}-plain", partitions=2)),
            "SQLite upsert": SqliteSink(f"{folder}/sink.db"),
            "Kafka transactions": TransactionalKafkaSink(transactional, f"streamlab-{transactional}"),
            "file sink": FileSink(f"{folder}/files")}
