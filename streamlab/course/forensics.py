"""Checkpoint forensics: a crashed query's frozen files, and questions graded from what those files imply.

Why: "the job crashed mid-batch; what happens on restart, and what lands twice?" is asked in every streaming
interview, and a multiple-choice question cannot ask it honestly: the answer is in the files, not in a rule. So a
case here is a folder of files exactly as Spark 4.2 and Delta 4.4 leave them on a local disk after a driver crash:

- `checkpoint/`: `metadata` (`{"id":...}`, no newline), `offsets/N` (`v1`, the batch metadata JSON with Spark
  4.2's `conf` keys, one compact Kafka offset JSON per source: the next offset to read per partition), `commits/N`
  (`v1`, `{"nextBatchWatermarkMs":0}`), `sources/0/0` (a NUL byte, `v1`, the initial offsets: SPARK-19517), and
  each file's Hadoop checksum `.<name>.crc` (the `crc\\0` magic, 512 bytes per checksum, CRC-32 per chunk), as the
  fixtures in tests/fixtures/spark-checkpoints/ show. Some cases also hold the temporary file of a `commits/N`
  whose write the crash cut (`.N.<uuid>.tmp`): Spark lists only files named by a batch id, so it is not a commit.
- `table/_delta_log/`: the Delta table's commits `000…N.json`, one action a line, each line ending in a newline
  (commitInfo first; protocol and metaData in version 0; `txn` with appId/version/lastUpdated; `add` with its
  per-file `stats`), and their Hadoop `.crc` files. Delta's optional version checksum files (`N.crc`) and the
  parquet data files are not part of the case: no reader needs them to replay the log.
- `broker/get-offsets-*.txt`: `kafka-get-offsets.sh` output (`topic:partition:offset`) for the output topic,
  taken after the crash; `job.py`: the query as deployed (a Kafka source, then `foreachBatch` writing a Kafka topic
  first and then the Delta table with `txnAppId`/`txnVersion=batch_id`).

Every number is drawn from the case's seed (the learner's variant seed, `variants.seed_for("forensics")`, and the
number of cases they have done): the partitions, the initial offsets, each batch's ranges under
`maxOffsetsPerTrigger` (split by backlog, as the connector does), the batch that crashed, the moment of the crash
(during the Kafka write, after it, or after the Delta commit), the app id, and a decoy writer's `txn` in the log.

The grader never keeps the answers it generated: `truth(folder)` reads the files (the checkpoint through
`streamlab.observe.checkpoint`, the course's own reader; the Delta log line by line; the broker's offsets) and
computes what they imply. A constant answer or one copied from another case scores about nothing, because every
question's answer is a number the files of *this* case decide, and tests/unit/test_forensics.py measures it.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import struct
import sys
import uuid
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

SINKS = ("append", "merge", "delta", "kafka")
SINK_TEXT = {
    "append": "a foreachBatch plain Delta append (the same write without txnAppId/txnVersion)",
    "merge": "a foreachBatch MERGE into the table keyed by (topic, partition, offset)",
    "delta": "Delta's own streaming sink, writeStream.format(\"delta\")",
    "kafka": "the job's Kafka write to the output topic, as deployed",
}
STAGES = ("kafka-partial", "kafka-done", "delta-done")  # where in batch N's foreachBatch the driver died
POINTS = {"replay_batch": 1, "ranges": 2, "twice": 2, "skip_through": 1}
# Spark 4.2's batch conf, as its offsets/N files carry it (tests/fixtures/spark-checkpoints/kafka/offsets/0).
SPARK_CONF = {
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "spark.sql.dropDuplicates.deterministicKeyOrder.enabled": "true",
    "spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion": "2",
    "spark.sql.streaming.stateStore.rocksdb.formatVersion": "5",
    "spark.sql.streaming.queryEvolution.enableSourceEvolution": "false",
    "spark.sql.streaming.stateStore.encodingFormat": "unsaferow",
    "spark.sql.streaming.statefulOperator.useStrictDistribution": "true",
    "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion": "2",
    "spark.sql.streaming.multipleWatermarkPolicy": "min",
    "spark.sql.streaming.stateStore.rowChecksum.enabled": "false",
    "spark.sql.streaming.statefulOperator.alwaysNullableOutput.enabled": "true",
    "spark.sql.streaming.aggregation.stateFormatVersion": "2",
    "spark.sql.function.protobufExtensions.enabled": "false",
    "spark.sql.shuffle.partitions": "200",
    "spark.sql.streaming.join.stateFormatVersion": "2",
    "spark.sql.streaming.stateStore.compression.codec": "lz4",
    "spark.sql.optimizer.pruneFiltersCanPruneStreamingSubplan": "false",
}
ENGINE = "Apache-Spark/4.2.0 Delta-Lake/4.4.0"
SCHEMA = {"type": "struct", "fields": [
    {"name": n, "type": t, "nullable": True, "metadata": {}}
    for n, t in (("order_id", "string"), ("topic", "string"), ("partition", "integer"), ("offset", "long"),
                 ("kafka_ts", "timestamp"))]}


def _json(value) -> str:
    return json.dumps(value, separators=(",", ":"))


def hadoop_crc(data: bytes) -> bytes:
    """The `.crc` file Hadoop's ChecksumFileSystem writes beside `data`: magic, bytes per checksum, CRC-32s."""
    sums = b"".join(struct.pack(">I", zlib.crc32(data[i:i + 512]) & 0xFFFFFFFF) for i in range(0, len(data), 512))
    return b"crc\0" + struct.pack(">i", 512) + sums


def _write(path: Path, data: bytes | str, crc: bool = True) -> None:
    data = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if crc:
        (path.parent / f".{path.name}.crc").write_bytes(hadoop_crc(data))


def _split(start: dict, latest: dict, cap: int) -> dict:
    """The end offsets of one batch under maxOffsetsPerTrigger, as the connector splits the cap by backlog."""
    sizes = {p: latest[p] - start[p] for p in start if latest[p] > start[p]}
    total = sum(sizes.values())
    if total < 1 or total <= cap:
        return dict(latest)
    end = dict(start)
    for p, size in sizes.items():
        prorate = cap * size / total
        share = 1 if prorate < 1 else int(prorate)
        end[p] = min(latest[p], start[p] + share)
    return end


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


# -- making a case ------------------------------------------------------------------------------------------------
@dataclass
class Case:
    """One frozen crash: its folder, the story told to the candidate, and the questions."""

    case_id: str
    folder: Path
    story: str
    questions: list = field(default_factory=list)

    def grade(self, answers: dict, record: bool = True) -> "Graded":
        """Grade `answers` against what this case's files imply, and keep the result in the interview history
        (an empty answer sheet is graded but not kept: running the page from the top records nothing)."""
        result = grade(self.folder, answers)
        if record and not blank(answers):
            record_result(self.case_id, result)
        return result

    def files(self) -> str:
        """The case's files as a candidate would `cat` them (checksums left out, long lines cut)."""
        return print_files(self.folder)

    def show(self) -> None:
        """Print the story and the questions."""
        print(self.story)
        print()
        print("\n".join(self.questions))


QUESTIONS = [
    "replay_batch: which batch id does Spark run when the query restarts on this checkpoint?",
    "ranges: which offsets does that batch re-read, per input partition? {partition: [first, end)} with end "
    "exclusive, e.g. {0: [1200, 1450], 1: [980, 1230]}",
    "twice: how many input records will each sink write a second time after the restart, had the job used it? "
    "{\"append\": n, \"merge\": n, \"delta\": n, \"kafka\": n}  — append: " + SINK_TEXT["append"] + "; merge: "
    + SINK_TEXT["merge"] + "; delta: " + SINK_TEXT["delta"] + "; kafka: " + SINK_TEXT["kafka"],
    "skip_through: the highest txnVersion the table's log holds for the job's txnAppId (Delta skips a write of "
    "that app id whose txnVersion is not above it); None if it holds none",
]


def make(seed, folder) -> Case:
    """Write the frozen files of case `seed` into `folder` (replaced) and return the case."""
    import shutil

    rng = random.Random(f"forensics:{seed}")
    folder = Path(folder)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    topic = rng.choice(["orders", "payments", "shipments", "invoices", "clicks", "refunds"])
    out_topic, table = f"{topic}-enriched", f"/lake/{topic}"
    parts = rng.randint(2, 4)
    out_parts = rng.randint(2, 3)
    cap = rng.choice([400, 600, 800, 1000, 1500, 2000])
    replay = rng.randint(1, 7)
    stage = rng.choice(STAGES)
    app_id = f"{topic}-to-lake-v{rng.randint(2, 6)}"
    query_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    interval = rng.choice([10, 20, 30, 60])
    t0 = 1795300000000 + rng.randint(0, 10 ** 9)

    # The query's batches: the initial offsets, then each batch's end under the cap as new records arrive.
    initial = {p: rng.randint(0, 40) * 100 + rng.randint(0, 99) for p in range(parts)}
    latest = {p: initial[p] + rng.randint(cap // 2, cap * 3) for p in range(parts)}
    ends, starts = [], []
    start = dict(initial)
    for _batch in range(replay + 1):
        end = _split(start, latest, cap)
        starts.append(start)
        ends.append(end)
        start = end
        latest = {p: latest[p] + rng.randint(max(1, cap // (4 * parts)), cap // parts + 50) for p in range(parts)}
    times = [t0 + i * interval * 1000 + rng.randint(0, 900) for i in range(replay + 1)]

    # checkpoint/
    ckpt = folder / "checkpoint"
    _write(ckpt / "metadata", _json({"id": query_id}))
    _write(ckpt / "sources" / "0" / "0", b"\0" + ("v1\n" + _json({topic: {str(p): initial[p] for p in initial}}))
           .encode())
    for n in range(replay + 1):
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": times[n], "conf": SPARK_CONF}
        _write(ckpt / "offsets" / str(n), "v1\n" + _json(meta) + "\n" + _json({topic: {str(p): ends[n][p]
                                                                                       for p in ends[n]}}))
        if n < replay:
            _write(ckpt / "commits" / str(n), "v1\n" + _json({"nextBatchWatermarkMs": 0}))
    if stage == "delta-done" and rng.random() < 0.5:  # the crash cut the write of commits/N: a temporary file
        _write(ckpt / "commits" / f".{replay}.{uuid.UUID(int=rng.getrandbits(128), version=4)}.tmp", "v1\n",
               crc=False)

    # table/_delta_log/: one commit per batch written (with its txn), and a backfill job's commit in between.
    table_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    written = replay + (1 if stage == "delta-done" else 0)  # batches whose Delta write committed
    commits = [("query", n) for n in range(written)]
    backfill_at = rng.randint(1, max(1, len(commits) - 1))  # a backfill job's commit between two of the query's
    backfill_version = int(datetime.fromtimestamp(t0 / 1000 - 86400 * rng.randint(1, 9), timezone.utc)
                           .strftime("%Y%m%d"))
    commits.insert(backfill_at, ("backfill", backfill_version))
    for version, (writer, n) in enumerate(commits):
        if writer == "query":
            when = times[n] + rng.randint(3000, 9000)
            files = [(p, starts[n][p], ends[n][p]) for p in range(parts) if ends[n][p] > starts[n][p]]
            txn = {"appId": app_id, "version": n, "lastUpdated": when}
        else:
            when = times[min(backfill_at, replay)] - rng.randint(1000, 9000)
            files = [(p, max(0, initial[p] - 700), initial[p]) for p in range(parts) if initial[p] > 0] or \
                [(0, 0, 1)]
            txn = {"appId": f"{topic}-backfill", "version": n, "lastUpdated": when}
        adds, rows, size = [], 0, 0
        for task, (p, first, end) in enumerate(files):
            count = end - first
            nbytes = 1500 + 41 * count + rng.randint(0, 200)
            low_ts, high_ts = _iso(when - 60000 - rng.randint(0, 9000)), _iso(when - rng.randint(0, 9000))
            stats = {"numRecords": count,
                     "minValues": {"order_id": f"{topic[:3].upper()}-{rng.randint(100000, 499999)}", "topic": topic,
                                   "partition": p, "offset": first, "kafka_ts": low_ts},
                     "maxValues": {"order_id": f"{topic[:3].upper()}-{rng.randint(500000, 999999)}", "topic": topic,
                                   "partition": p, "offset": end - 1, "kafka_ts": high_ts},
                     "nullCount": {"order_id": 0, "topic": 0, "partition": 0, "offset": 0, "kafka_ts": 0}}
            adds.append({"add": {"path": f"part-{task:05d}-{uuid.UUID(int=rng.getrandbits(128), version=4)}"
                                         "-c000.snappy.parquet",
                                 "partitionValues": {}, "size": nbytes, "modificationTime": when - 400,
                                 "dataChange": True, "stats": _json(stats)}})
            rows += count
            size += nbytes
        info = {"timestamp": when, "operation": "WRITE",
                "operationParameters": {"mode": "Append", "partitionBy": "[]"}}
        if version:
            info["readVersion"] = version - 1
        info.update({"isolationLevel": "Serializable", "isBlindAppend": True,
                     "operationMetrics": {"numFiles": str(len(adds)), "numOutputRows": str(rows),
                                          "numOutputBytes": str(size)},
                     "engineInfo": ENGINE, "txnId": str(uuid.UUID(int=rng.getrandbits(128), version=4))})
        actions = [{"commitInfo": info}]
        if version == 0:
            actions += [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
                        {"metaData": {"id": table_id, "format": {"provider": "parquet", "options": {}},
                                      "schemaString": _json(SCHEMA), "partitionColumns": [], "configuration": {},
                                      "createdTime": when - 900}}]
        actions += [{"txn": txn}, *adds]
        _write(folder / "table" / "_delta_log" / f"{version:020d}.json", "".join(_json(a) + "\n" for a in actions))

    # broker/: the output topic's offsets after the crash: every committed batch's records, and what batch N sent.
    committed_rows = sum(ends[replay - 1][p] - initial[p] for p in range(parts))
    batch_rows = sum(ends[replay][p] - starts[replay][p] for p in range(parts))
    sent = rng.randint(1, batch_rows - 1) if stage == "kafka-partial" and batch_rows > 1 else batch_rows
    total = committed_rows + sent
    weights = [rng.uniform(0.6, 1.4) for _ in range(out_parts)]
    shares = [int(total * w / sum(weights)) for w in weights]
    shares[0] += total - sum(shares)
    tool = f"kafka-get-offsets.sh --bootstrap-server kafka-1:9092 --topic {out_topic}"
    _write(folder / "broker" / "get-offsets-earliest.txt",
           f"$ {tool} --time earliest\n" + "".join(f"{out_topic}:{q}:0\n" for q in range(out_parts)), crc=False)
    _write(folder / "broker" / "get-offsets-latest.txt",
           f"$ {tool} --time latest\n" + "".join(f"{out_topic}:{q}:{s}\n" for q, s in enumerate(shares)), crc=False)
    _write(folder / "job.py", JOB.format(topic=topic, out_topic=out_topic, cap=cap, app_id=app_id, table=table,
                                         interval=interval), crc=False)
    crashed = _iso(times[replay] + rng.randint(2000, 8000)).replace("T", " ")[:19]
    story = (f"Case {seed}. The job in job.py reads the Kafka topic '{topic}' ({parts} partitions) and, in "
             f"foreachBatch, writes each batch to the topic '{out_topic}' and then appends it to the Delta table "
             f"{table}. Its driver was killed at {crashed} UTC. Before anyone restarted it, the files were copied "
             f"to {folder}: checkpoint/ (the query's checkpoint), table/_delta_log/ (the table's log; the data "
             f"files were left behind), and broker/ (kafka-get-offsets output for '{out_topic}', taken after the "
             "crash). The producer of '" + topic + "' is not transactional (one offset is one record), each input "
             f"record becomes one output record, and '{out_topic}' was created empty for this job.")
    return Case(str(seed), folder, story, list(QUESTIONS))


JOB = '''"""The job as deployed (the ingest team's repository, main branch)."""
from pyspark.sql import SparkSession, functions as F

spark = SparkSession.builder.appName("{topic}-to-lake").getOrCreate()
source = (spark.readStream.format("kafka")
          .option("kafka.bootstrap.servers", "kafka-1:9092")
          .option("subscribe", "{topic}")
          .option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", {cap})
          .load())
rows = source.select(F.col("key").cast("string").alias("order_id"), "topic", "partition", "offset",
                     F.col("timestamp").alias("kafka_ts"))


def write_batch(batch_df, batch_id):
    batch_df.persist()
    # 1. the enriched feed for the downstream services
    (batch_df.selectExpr("order_id AS key", "to_json(struct(*)) AS value")
     .write.format("kafka")
     .option("kafka.bootstrap.servers", "kafka-1:9092")
     .option("topic", "{out_topic}")
     .save())
    # 2. the lake table: Delta skips a batch id it already holds for this app id
    (batch_df.write.format("delta").mode("append")
     .option("txnAppId", "{app_id}")
     .option("txnVersion", batch_id)
     .save("{table}"))
    batch_df.unpersist()


(rows.writeStream.foreachBatch(write_batch)
 .option("checkpointLocation", "/checkpoints/{topic}-to-lake")
 .trigger(processingTime="{interval} seconds")
 .start()
 .awaitTermination())
'''


# -- what the files imply -------------------------------------------------------------------------------------------
def delta_log(table) -> list[tuple[int, list[dict]]]:
    """[(version, actions)] of a Delta table's JSON commits, in version order (as Delta replays its log)."""
    log = Path(table) / "_delta_log"
    files = sorted((f for f in log.iterdir() if re.fullmatch(r"\d{20}\.json", f.name)), key=lambda f: int(f.stem))
    return [(int(f.stem), [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()])
            for f in files]


def txn_versions(table) -> dict[str, int]:
    """{appId: the latest txn version} in the table's log (the last one in log order wins, as in Delta's replay)."""
    out: dict = {}
    for _version, actions in delta_log(table):
        for action in actions:
            if "txn" in action:
                out[action["txn"]["appId"]] = int(action["txn"]["version"])
    return out


def _get_offsets(file: Path) -> dict[int, int]:
    out = {}
    for line in file.read_text(encoding="utf-8").splitlines():
        hit = re.fullmatch(r"(.+):(\d+):(\d+)", line.strip())
        if hit:
            out[int(hit.group(2))] = int(hit.group(3))
    return out


def truth(folder) -> dict:
    """What the case's files imply, read from them: the replayed batch, its ranges, the rows each sink writes twice,
    and the highest txnVersion of the job's app id."""
    from streamlab.observe import checkpoint as cp

    folder = Path(folder)
    ckpt = folder / "checkpoint"
    job = (folder / "job.py").read_text(encoding="utf-8")
    topic = re.search(r'\.option\("subscribe", "([^"]+)"\)', job).group(1)
    app_id = re.search(r'\.option\("txnAppId", "([^"]+)"\)', job).group(1)
    replay = cp.pending_batch(ckpt)
    if replay is None:
        raise ValueError(f"{ckpt} has no planned batch without a commit: not a crashed query")
    end = cp.offsets(ckpt, replay).kafka()[topic]
    begin = (cp.offsets(ckpt, replay - 1).kafka() if replay else cp.kafka_offsets(cp.initial_offsets(ckpt)))[topic]
    initial = cp.kafka_offsets(cp.initial_offsets(ckpt))[topic]
    ranges = {p: [begin[p], end[p]] for p in sorted(end)}
    batch_rows = sum(end[p] - begin[p] for p in end)
    skip_through = txn_versions(folder / "table").get(app_id)
    delta_has_batch = skip_through is not None and skip_through >= replay
    latest = _get_offsets(folder / "broker" / "get-offsets-latest.txt")
    earliest = _get_offsets(folder / "broker" / "get-offsets-earliest.txt")
    produced = sum(latest[q] - earliest.get(q, 0) for q in latest)
    committed = sum(begin[p] - initial[p] for p in begin)
    twice = {"append": batch_rows if delta_has_batch else 0, "merge": 0, "delta": 0, "kafka": produced - committed}
    return {"replay_batch": replay, "ranges": ranges, "twice": twice, "skip_through": skip_through,
            "topic": topic, "app_id": app_id, "batch_rows": batch_rows, "committed_rows": committed,
            "produced": produced, "delta_has_batch": delta_has_batch}


# -- grading --------------------------------------------------------------------------------------------------------
@dataclass
class Graded:
    """A graded answer sheet: points per question, the verdict lines (with the evidence for a wrong answer)."""

    points: dict
    lines: list

    @property
    def score(self) -> int:
        return sum(self.points.values())

    @property
    def max_score(self) -> int:
        return sum(POINTS.values())

    def report(self) -> str:
        return "\n".join(self.lines + [f"score {self.score}/{self.max_score}"])


def _int(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    return None


def _ranges(value) -> dict | None:
    if not isinstance(value, dict):
        return None
    out = {}
    for p, r in value.items():
        if _int(p) is None or not isinstance(r, (list, tuple)) or len(r) != 2 or None in map(_int, r):
            return None
        out[_int(p)] = [_int(r[0]), _int(r[1])]
    return out


def grade(folder, answers) -> Graded:
    """Judge `answers` ({replay_batch, ranges, twice, skip_through}) against what the files in `folder` imply."""
    if not isinstance(answers, dict):
        raise TypeError("answers must be a dict like {'replay_batch': 3, 'ranges': {...}, 'twice': {...}, "
                        "'skip_through': 2}")
    t = truth(folder)
    if blank(answers):  # nothing to judge, and nothing given away
        return Graded(dict.fromkeys(POINTS, 0), ["no answer yet: fill in the answer sheet, then run the cell again"])
    n = t["replay_batch"]
    points, lines = {}, []

    def mark(key, right, why):
        points[key] = POINTS[key] if right else 0
        lines.append(f"{'✓' if right else '✗'} {key}: " + ("right" if right else why))

    mark("replay_batch", _int(answers.get("replay_batch")) == n,
         f"offsets/{n} exists and commits/{n} does not (a .tmp file is not a commit), so batch {n} runs again")
    mark("ranges", _ranges(answers.get("ranges")) == t["ranges"],
         f"batch {n} re-reads from where batch {n - 1} ended (offsets/{n - 1}) to its own planned end "
         f"(offsets/{n}): {t['ranges']}")
    given = answers.get("twice") if isinstance(answers.get("twice"), dict) else {}
    twice_ok = all(_int(given.get(s)) == t["twice"][s] for s in SINKS)
    where = ("the log holds its txn" if t["delta_has_batch"] else "the log holds no txn") + \
        f" for {t['app_id']} at version {n}"
    mark("twice", twice_ok,
         f"{t['twice']}: the Delta write of batch {n} " + ("committed" if t["delta_has_batch"] else "never committed")
         + f" ({where}), so a plain append writes its {t['batch_rows']} rows again only if it had landed; MERGE on "
         f"(topic, partition, offset) and Delta's own sink write nothing twice; the output topic holds "
         f"{t['produced']} records against {t['committed_rows']} from committed batches, so {t['twice']['kafka']} "
         f"of batch {n} were sent before the crash and are sent again")
    skip = answers.get("skip_through")
    mark("skip_through", (skip is None and t["skip_through"] is None) or _int(skip) == t["skip_through"],
         f"the last txn of appId {t['app_id']} (not the backfill's) has version {t['skip_through']}")
    return Graded(points, lines)


def blank(answers) -> bool:
    """Whether an answer sheet holds no answer at all (None, empty strings and empty dicts only)."""
    def empty(value):
        return value is None or value == "" or (isinstance(value, dict) and all(map(empty, value.values())))

    return not isinstance(answers, dict) or all(empty(v) for v in answers.values())


def print_files(folder, width: int = 160) -> str:
    """Every file of a case but the checksums, with its bytes shown as text (a NUL byte as \\0), lines cut at
    `width`: what `ls` and `cat` show a candidate."""
    folder = Path(folder)
    out = []
    for file in sorted(folder.rglob("*")):
        if not file.is_file() or file.name.endswith(".crc"):
            continue
        text = file.read_bytes().decode("utf-8", "replace").replace("\0", "\\0")
        out.append(f"== {file.relative_to(folder)} ({file.stat().st_size} bytes)")
        out += [line if len(line) <= width else line[:width - 1] + "…" for line in text.splitlines()]
    return "\n".join(out)


# -- the history, the front ends -----------------------------------------------------------------------------------
def record_result(case_id: str, result: Graded) -> None:
    """Keep a graded case in the interview history (shown by `python -m grader progress`)."""
    from . import mock

    mock.remember("forensics", {"case": case_id, "score": result.score, "max_score": result.max_score,
                                "missed": [k for k, v in result.points.items() if not v]})


def new_case(seed=None, folder=None) -> Case:
    """A new case for this learner: their variant seed and the number of cases done so far (so each is new)."""
    from streamlab.lab.machine import state_dir

    from . import mock

    if seed is None:
        done = mock.load().get("forensics")
        seed = f"{mock.learner_seed()}.{len(done) if isinstance(done, list) else 0}"
    return make(seed, folder or state_dir() / "forensics" / str(seed))


def _ask_answers(case: Case, ask, out) -> dict:
    from streamlab.observe import checkpoint as cp

    latest = cp.offsets(case.folder / "checkpoint").kafka()  # only to ask one line per input partition
    answers: dict = {"replay_batch": ask("replay_batch: "), "ranges": {}, "twice": {}}
    for p in sorted({p for parts in latest.values() for p in parts}):
        first_end = ask(f"ranges, partition {p} (first end): ").replace(",", " ").split()
        answers["ranges"][p] = first_end if len(first_end) == 2 else None
    for sink in SINKS:
        answers["twice"][sink] = ask(f"twice, {sink}: ")
    skip = ask("skip_through (or none): ").strip()
    answers["skip_through"] = None if skip.lower() in ("", "none") else skip
    return answers


def run_terminal(ask=None, out=print, seed=None) -> Graded:
    """A forensics round in a terminal: the case's folder and story, the questions, then the graded answers."""
    ask = ask or input
    case = new_case(seed)
    out(case.story)
    out("\nLook at the files (ls -la, cat; or streamlab.observe.checkpoint.describe), then answer:")
    out("\n".join(case.questions))
    out("")
    result = case.grade(_ask_answers(case, ask, out))
    out("\n" + result.report())
    return result


def main(argv=None) -> int:
    """`python -m grader interview --forensics`: one checkpoint forensics case in the terminal."""
    parser = argparse.ArgumentParser(prog="python -m grader interview --forensics", description=main.__doc__)
    parser.add_argument("--seed", help="the case to draw (default: your next one)")
    args = parser.parse_args(argv)
    try:
        run_terminal(seed=args.seed)
    except (EOFError, KeyboardInterrupt):
        print("\nround ended early: nothing graded", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
