"""Module 10's demo-only helpers: the account-updates stream, one crashable run into a table, the Delta log's
transactions, the small-files live demo and two writers racing.

Why a module of its own beside `tables` and `sinks`: those are what the crash lab and the bench use; these only
stage the notebook's lessons. Upserts need a business key that repeats (an account updated many times), which the
course's id stream (each id once) cannot show, so `produce_accounts` makes one: records keyed by account, so that
Kafka's partitioner keeps one account in one partition and the offset orders its updates. The live demo is a
configuration of `streamlab.demo.live.LiveDemo`, as every module's is.
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from streamlab.delivery.faults import MARK, InjectedCrash, quiet
from streamlab.demo.live import LiveDemo, Panel

ACCOUNT_SCHEMA = "account string, balance double, seq long"


def account_of(i: int, accounts: int) -> str:
    """The account update `i` is for: consecutive records hit different accounts, every account as often."""
    return f"acct-{i % accounts}"


def balance_of(i: int) -> float:
    """The balance update `i` sets (deterministic, so a check can recompute it)."""
    return round(((i * 37) % 1000) / 10, 1)


def produce_accounts(topic: str, n: int, accounts: int, start: int = 0) -> int:
    """Send updates start..start+n-1 to `topic`, keyed by account: value {"account", "balance", "seq"}."""
    from streamlab.lab.producer import produce

    return produce(topic, n, start=start, key_fn=lambda i: account_of(i, accounts),
                   value_fn=lambda i: json.dumps({"account": account_of(i, accounts), "balance": balance_of(i),
                                                  "seq": i}))


def accounts_frame(spark, topic: str, max_offsets: int | None = None, starting: str = "earliest"):
    """The account updates as a stream of typed columns: account, balance, seq, partition, offset."""
    from pyspark.sql import functions as F

    from streamlab.lab.broker import ensure_broker

    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", ensure_broker())
              .option("subscribe", topic).option("startingOffsets", starting))
    if max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", int(max_offsets))
    return (reader.load().select(F.from_json(F.col("value").cast("string"), ACCOUNT_SCHEMA).alias("u"),
                                 "partition", "offset").select("u.*", "partition", "offset"))


def latest_balances(topic: str) -> dict[str, float]:
    """{account: balance of its last update}, read from the topic with kafka-python (the offset decides)."""
    from streamlab.delivery.sinks import read_topic

    out: dict[str, tuple] = {}
    for partition, offset, value in read_topic(topic):
        update = json.loads(value)
        if update["account"] not in out or (partition, offset) > out[update["account"]][0]:
            out[update["account"]] = ((partition, offset), update["balance"])
    return {account: balance for account, (_, balance) in out.items()}


def run(df, write_batch, checkpoint: str, crash_after_write: bool = False, timeout: float = 300.0) -> str | None:
    """One availableNow run of `df` into foreachBatch(`write_batch`) on `checkpoint`; with `crash_after_write`,
    the first batch raises right after `write_batch` returned (before Spark's commits/N). Returns None, "crashed",
    or the first line of any other error (a learner's write_batch that fails)."""
    from pyspark.errors import StreamingQueryException

    from streamlab.errors import first_line

    fired: list = []

    def batch(batch_df, batch_id):
        write_batch(batch_df, batch_id)
        if crash_after_write and not fired:
            fired.append(batch_id)
            raise InjectedCrash(f"{MARK}: after the write of batch {batch_id}, before its commit")

    spark = df.sparkSession
    with quiet(spark):
        query = (df.writeStream.foreachBatch(batch).option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        try:
            if not query.awaitTermination(timeout):
                query.stop()
                return f"the run did not finish within {timeout:.0f} s"
        except StreamingQueryException as exc:
            text = str(exc)
            if MARK in text:
                return "crashed"
            return first_line(exc)
    return None


def log_transactions(path) -> "object":
    """The table's commits from its `_delta_log/*.json` files: version, operation, and the `txn` action (app id,
    version) each one recorded, as a pandas DataFrame."""
    import pandas as pd

    rows = []
    for file in sorted(Path(path, "_delta_log").glob("*.json")):
        row = {"version": int(file.stem), "operation": None, "txn appId": None, "txn version": None}
        for line in file.read_text(encoding="utf-8").splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                row["operation"] = action["commitInfo"].get("operation")
            if "txn" in action:
                row["txn appId"], row["txn version"] = action["txn"]["appId"], action["txn"]["version"]
        rows.append(row)
    return pd.DataFrame(rows, columns=["version", "operation", "txn appId", "txn version"])


def data_files(path) -> int:
    """Parquet files in the table's folder (before any OPTIMIZE or MERGE, the files its current version lists)."""
    return sum(1 for f in Path(path).glob("*.parquet"))


def _commits(path):
    """The table's commits from its log, oldest first: each a list of its actions (JSON objects)."""
    log = Path(path) / "_delta_log"
    for commit in sorted(log.glob("[0-9]*.json")) if log.is_dir() else []:
        yield [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]


def listed_files(path) -> int:
    """The data files the table's current version lists: every `add` in its log not `remove`d since. (Its log's
    commits, read as files: no Spark job per count, which a live demo's every batch would pay for.)"""
    listed: set[str] = set()
    for actions in _commits(path):
        for action in actions:
            if "add" in action:
                listed.add(action["add"]["path"])
            elif "remove" in action:
                listed.discard(action["remove"]["path"])
    return len(listed)


def compactions(path) -> int:
    """The table's auto-compaction commits (`OPTIMIZE` with auto=true in its commitInfo)."""
    return sum(1 for actions in _commits(path) for action in actions
               if action.get("commitInfo", {}).get("operation") == "OPTIMIZE"
               and action["commitInfo"].get("operationParameters", {}).get("auto") in ("true", True))


AUTO_COMPACT_FILES = 8  # auto-compaction's threshold in the demo (Delta's default, 50, is 25 batches of 2 files)


class SmallFilesDemo(LiveDemo):
    """The small-files problem, live: every micro-batch of `topic` is appended to the Delta table at `path` (one
    commit, at least one Parquet file each), and a panel plots the files the table lists over time. The trigger
    interval, the producer rate and the cap are on sliders: a short trigger writes many small files, a long one few
    larger ones, at the same rate; the cap changes rows per batch, not files. With `auto_compact` the table is made
    with `delta.autoOptimize.autoCompact=true` and Delta's threshold at AUTO_COMPACT_FILES small files (a session
    setting: only tables with that property compact), so the count climbs and folds back after a write."""

    def __init__(self, spark, topic: str, path, rate: int = 200, trigger_seconds: float = 1.0,
                 duration: float = 20.0, auto_compact: bool = False):
        self.path = str(path)
        self.files: list[tuple[float, int]] = []
        if auto_compact:
            spark.conf.set("spark.databricks.delta.autoCompact.minNumFiles", str(AUTO_COMPACT_FILES))
            spark.sql(f"CREATE TABLE IF NOT EXISTS delta.`{self.path}` (partition INT, offset BIGINT, json STRING) "
                      "USING delta TBLPROPERTIES ('delta.autoOptimize.autoCompact' = 'true')")
        panel = Panel("data files the Delta table lists", "files", self._draw)
        super().__init__(spark, topic, rate=rate, trigger_seconds=trigger_seconds, duration=duration,
                         starting_offsets="latest", controls=("rate", "cap", "trigger"), on_batch=self._append,
                         charts=("rows", "files"), panels={"files": panel}, status=self._status,
                         title=("every batch appended, auto-compaction on: small files folded after a write"
                                if auto_compact else "every batch appended to Delta: one commit, new files"))

    def _append(self, batch_df, batch_id: int) -> None:
        batch_df.selectExpr("partition", "offset", "cast(value AS string) AS json").write.format("delta") \
            .mode("append").save(self.path)
        self.files.append((self.now(), listed_files(self.path)))

    def _draw(self, ax, demo, shift) -> None:
        xs = [t + shift for t, _ in self.files]
        ax.step(xs, [n for _, n in self.files], where="post", color="#4c72b0", marker="o", markersize=3)
        ax.set_ylim(0, max([n for _, n in self.files] + [1]) * 1.15)

    def _status(self, demo=None) -> str:
        return f"{self.files[-1][1]} files" if self.files else "no file yet"

    def files_per_minute(self) -> float:
        """Data files written per minute of batches (from the first batch to the last)."""
        if len(self.files) < 2 or self.files[-1][0] <= self.files[0][0]:
            return 0.0
        return round((self.files[-1][1] - self.files[0][1]) * 60 / (self.files[-1][0] - self.files[0][0]), 1)


def race(spark, path, rounds: int = 3) -> dict:
    """Two writers MERGE into a new one-row accounts table at `path` at once (threads started together), up to
    `rounds` times: each attempt's outcome, "committed" or the conflict's error class. Delta's optimistic
    concurrency lets one commit and fails the other when both rewrote the same file."""
    from delta.tables import DeltaTable

    spark.createDataFrame([("acct-0", 0.0, 0)], ACCOUNT_SCHEMA).write.format("delta").mode("overwrite").save(str(path))
    outcomes: list[str] = []
    lock = threading.Lock()

    def writer(name: str, balance: float, gate: threading.Barrier) -> None:
        update = spark.createDataFrame([("acct-0", balance, 0)], ACCOUNT_SCHEMA)
        gate.wait()
        try:
            (DeltaTable.forPath(spark, str(path)).alias("t").merge(update.alias("s"), "t.account = s.account")
             .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
            result = "committed"
        except Exception as exc:  # the conflict is the lesson: its name is what is shown
            result = str(exc).split("]")[0].lstrip("[") if str(exc).startswith("[") else type(exc).__name__
        with lock:
            outcomes.append(f"{name}: {result}")

    for _ in range(rounds):
        gate = threading.Barrier(2)
        threads = [threading.Thread(target=writer, args=(name, b, gate), daemon=True)
                   for name, b in (("writer A", 1.0), ("writer B", 2.0))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        if any("committed" not in o for o in outcomes[-2:]):
            break
        time.sleep(0.1)
    return {"attempts": outcomes, "conflicts": sum("committed" not in o for o in outcomes)}


def produce_ids(topic: str, n: int, start: int = 0) -> int:
    """Send ids start..start+n-1 (value and key the id as text) to `topic`, alternating its two partitions."""
    from streamlab.lab.producer import produce

    return produce(topic, n, start=start, key_fn=str, value_fn=str, partitions=range(2))


def ids_frame(spark, topic: str, starting=None):
    """The id stream of `topic` as (topic, partition, offset, id), from `starting`: "earliest" (None) or the
    {partition: offset} a query should begin at (a new checkpoint picking up where an old one ended)."""
    from streamlab.lab.broker import ensure_broker

    start = "earliest" if not starting else json.dumps({topic: {str(p): int(o) for p, o in starting.items()}})
    return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", ensure_broker())
            .option("subscribe", topic).option("startingOffsets", start).load()
            .selectExpr("topic", "partition", "offset", "cast(cast(value AS string) AS long) AS id"))


def rows(spark, path, *columns) -> list[tuple]:
    """The table's rows as tuples of `columns` ([] when there is no Delta table at `path`, or Delta is not set up):
    what a check reads, never raising after cleanup() deleted the table."""
    try:
        from delta.tables import DeltaTable

        if not path or not DeltaTable.isDeltaTable(spark, str(path)):
            return []
        return [tuple(r) for r in spark.read.format("delta").load(str(path)).selectExpr(*columns).collect()]
    except Exception:
        return []


def fresh(folder, name: str) -> str:
    """A path in `folder` where nothing is yet: `name`, then `name-2`, `name-3`… An exercise's cell run again after a
    fix writes a new table from a new checkpoint, not onto what its last run left (a checkpoint that has read
    everything reads nothing more, and the check would read the old table)."""
    path, n = Path(str(folder), name), 1
    while path.exists():
        n += 1
        path = Path(str(folder), f"{name}-{n}")
    return str(path)


def table_written(path, name: str) -> None:
    """A visible check of an exercise's table: that the notebook's cell wrote it (its content is graded hidden)."""
    from streamlab.course.checks import expect_form

    there = bool(path) and Path(str(path), "_delta_log").is_dir()
    expect_form(there, f"{name}_table_written", "a Delta table" if there else "no Delta table",
                "write your answer, then run the cell under it", what="that the table exists")
