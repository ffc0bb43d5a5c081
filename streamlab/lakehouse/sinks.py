"""Four ways a Structured Streaming query lands Kafka's records in a Delta table, and which of them are exactly-once.

A micro-batch is written, then Spark writes `commits/N`; a crash in between makes the restart run batch N again
with the same offsets. Whether the table then holds the batch once or twice depends on how it was written:

- `DeltaSink`: Delta's own streaming sink (`writeStream.format("delta")`). Each commit records a `SetTransaction`
  (the query id, the batch id) in the table's log, and a batch id the log already holds for that query is
  skipped: exactly-once, with no code of ours.
- `DeltaAppendSink`: `foreachBatch` + a plain append. Nothing remembers the batch: a replay appends it again
  (duplicates), the at-least-once that module 7's plain Kafka sink shows.
- `DeltaTxnAppendSink`: `foreachBatch` + an append carrying `txnAppId`/`txnVersion` (the batch id): Delta skips a
  write whose version for that app id is not above the last one committed, so a replay is skipped. The trap: the
  app id is ours, not the query's, so the same app id with a *new* checkpoint (batch ids from 0 again) silently
  skips every batch until the ids pass the old ones.
- `DeltaMergeSink`: `foreachBatch` + MERGE keyed by the business key: a replayed row matches itself and is updated,
  not added. The batch is deduplicated first (the latest row per key, the Kafka offset deciding), since a MERGE
  whose source has two rows for one target row fails ("multiple source rows matched").

Each has the interface of `streamlab.delivery.sinks` (`start(df, checkpoint)`, `write_batch(batch_df, batch_id)`,
`delivered()`), so `streamlab.delivery.faults.CrashTest` crashes them as it crashes module 7's sinks. Every write
is one Delta commit (atomic): a crash during it leaves data files no version references, never part of a batch.
"""
from __future__ import annotations

from pathlib import Path

from streamlab.lakehouse.tables import ids, session


def latest_per_key(batch_df, key="id", order="offset"):
    """The batch with one row per `key` (a column or a list of them): the one with the highest `order` (a column or
    a list, compared in turn).

    The Kafka offset orders the records of one key when they share a partition, which Kafka's default partitioner
    ensures for records keyed by it: the highest offset is the latest write.
    """
    from pyspark.sql import Window, functions as F

    keys = [key] if isinstance(key, str) else list(key)
    orders = [order] if isinstance(order, str) else list(order)
    window = Window.partitionBy(*keys).orderBy(*[F.col(c).desc() for c in orders])
    return (batch_df.withColumn("_streamlab_rank", F.row_number().over(window))
            .where(F.col("_streamlab_rank") == 1).drop("_streamlab_rank"))


def merge_batch(batch_df, path, key="id", order="offset", dedupe: bool = True, evolve: bool = False) -> None:
    """MERGE `batch_df` into the Delta table at `path` keyed by `key`: matched rows updated, the others inserted
    (the table is created with the batch's schema the first time). Idempotent: a replayed batch matches itself.

    With `dedupe` the batch first keeps the latest row per key (`latest_per_key`). Without it, two rows of the batch
    for a key the table already holds make Delta raise its "multiple source rows matched" error (left to surface);
    two rows for a key new to the table are both inserted. `evolve` adds the batch's new columns to the table
    (MERGE with schema evolution).
    """
    from delta.tables import DeltaTable

    spark = batch_df.sparkSession
    path = str(path)
    keys = [key] if isinstance(key, str) else list(key)
    if not DeltaTable.isDeltaTable(spark, path):
        DeltaTable.createIfNotExists(spark).location(path).addColumns(batch_df.schema).execute()
    source = latest_per_key(batch_df, keys, order) if dedupe else batch_df
    builder = (DeltaTable.forPath(spark, path).alias("t")
               .merge(source.alias("s"), " AND ".join(f"t.`{k}` = s.`{k}`" for k in keys)))
    if evolve:
        builder = builder.withSchemaEvolution()
    builder.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()


class _DeltaTable:
    """What the four sinks share: the table's path, a foreachBatch query, and reading back what arrived."""

    label = "Delta"
    builtin = False  # our write_batch runs between the write and Spark's commit (the crash harness's "after write")

    def __init__(self, path):
        self.path = str(path)

    def start(self, df, checkpoint: str):
        """Start the query (availableNow) with write_batch as its foreachBatch."""
        return (df.writeStream.foreachBatch(self.write_batch).option("checkpointLocation", checkpoint)
                .trigger(availableNow=True).start())

    def write_batch(self, batch_df, batch_id: int) -> None:  # pragma: no cover - each sink has its own
        """foreachBatch: write one batch."""
        raise NotImplementedError

    def delivered(self) -> list[int]:
        """The id of every row of the table's current version (duplicates kept); [] before the first commit."""
        from delta.tables import DeltaTable

        spark = session()
        if not DeltaTable.isDeltaTable(spark, self.path):
            return []
        return ids(spark, self.path)

    def listed(self) -> list[int]:
        """The ids in every data file of the folder, the log ignored: files of aborted writes and files a MERGE or
        OPTIMIZE replaced included (what reading the folder as plain Parquet would see). A file a failed task left
        half-written has no footer and is skipped."""
        files = sorted(str(f) for f in Path(self.path).glob("**/*.parquet") if "_delta_log" not in f.parts)
        if not files:
            return []
        frame = session().read.option("ignoreCorruptFiles", "true").schema("id long").parquet(*files)
        return sorted(int(r[0]) for r in frame.collect() if r[0] is not None)


class DeltaSink(_DeltaTable):
    """Delta's own streaming sink: `writeStream.format("delta")`, exactly-once by the (query id, batch id) it records
    in the table's log with each commit (a replayed batch id of the same query is skipped)."""

    label = "Delta sink"
    builtin = True  # no code of ours runs between its write and Spark's commit

    def start(self, df, checkpoint: str):
        """Start the query (availableNow) writing `df` with format("delta") to the path."""
        return (df.writeStream.format("delta").outputMode("append").option("checkpointLocation", checkpoint)
                .trigger(availableNow=True).start(self.path))

    def write_batch(self, batch_df, batch_id: int) -> None:
        """foreachBatch: hand the batch to Delta's own sink class (the JVM's DeltaSink on the same path), exactly as
        a query with format("delta") does: it takes the running query's id (Spark's local property in the batch's
        thread) and skips a batch id the log already holds for it."""
        spark = batch_df.sparkSession
        jvm = spark.sparkContext._jvm
        if spark.sparkContext.getLocalProperty("sql.streaming.queryId") is None:
            raise RuntimeError("DeltaSink.write_batch runs only inside a streaming query's foreachBatch "
                               "(it needs the query's id)")
        utils = jvm.org.apache.spark.api.python.PythonUtils
        jspark = spark._jsparkSession
        options = jvm.org.apache.spark.sql.delta.DeltaOptions(utils.toScalaMap(jvm.java.util.HashMap()),
                                                               jspark.sessionState().conf())
        sink = jvm.org.apache.spark.sql.delta.sources.DeltaSink.apply(
            jspark.sqlContext(), jvm.org.apache.hadoop.fs.Path(self.path), utils.toSeq(jvm.java.util.ArrayList()),
            jvm.org.apache.spark.sql.streaming.OutputMode.Append(), options, jvm.scala.Option.empty())
        sink.addBatch(batch_id, batch_df._jdf)


class DeltaAppendSink(_DeltaTable):
    """foreachBatch + a plain append: at-least-once. Nothing records which batch was written, so a batch replayed
    after a crash between the write and Spark's commit is appended a second time (duplicates)."""

    label = "Delta plain append"

    def write_batch(self, batch_df, batch_id: int) -> None:
        """foreachBatch: append the batch (one Delta commit)."""
        batch_df.write.format("delta").mode("append").save(self.path)


class DeltaTxnAppendSink(_DeltaTable):
    """foreachBatch + an append carrying `txnAppId=app_id`, `txnVersion=batch_id`: idempotent. Delta records the
    pair in the commit and skips a write whose version is not above the last one recorded for the app id, so a
    replayed batch is skipped.

    The trap: the app id names the writer, not the checkpoint. Start the same app id on a new checkpoint (batch ids
    from 0 again) and every batch up to the old last batch id is silently skipped: no error, no rows. A new
    checkpoint needs a new app id.
    """

    label = "Delta txn append"

    def __init__(self, path, app_id: str):
        super().__init__(path)
        self.app_id = str(app_id)

    def write_batch(self, batch_df, batch_id: int) -> None:
        """foreachBatch: append the batch with txnAppId/txnVersion (skipped by Delta if already written)."""
        (batch_df.write.format("delta").mode("append").option("txnAppId", self.app_id)
         .option("txnVersion", int(batch_id)).save(self.path))


class DeltaMergeSink(_DeltaTable):
    """foreachBatch + MERGE keyed by `key`, the batch first deduplicated to the latest row per key by `order` (the
    Kafka offset): exactly-once in effect, because a replayed batch's rows match themselves and update, not add."""

    label = "Delta MERGE"

    def __init__(self, path, key="id", order="offset"):
        super().__init__(path)
        self.key, self.order = key, order

    def write_batch(self, batch_df, batch_id: int) -> None:
        """foreachBatch: MERGE the deduplicated batch into the table (see merge_batch)."""
        merge_batch(batch_df, self.path, self.key, self.order)
