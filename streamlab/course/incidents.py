"""The live incident round: a running pipeline with one fault injected, diagnosed with the course's own tools.

Why: an interviewer's hardest question is "the job is misbehaving, what do you look at?", and a quiz cannot ask
it honestly. Here the lab starts a real pipeline (a producer thread into a topic, a streaming query, a sink) and
injects ONE fault, drawn at random or named. The candidate investigates as the course taught: the query's
`lastProgress` / `recentProgress` (`observe.progress.progress_table`), lag on the log
(`observe.lag.lag_from_checkpoint`), the checkpoint's files (`observe.checkpoint.describe`), the broker's own view
(`lab.topics.describe_topic`) and what reached the sink (`Incident.output()`), then answers
`diagnose(cause, fix)` with ids from the published lists `CAUSES` and `FIXES`. There are more causes and fixes
than faults (decoys that fit a symptom half-way), so elimination alone does not win, and each fault has its own
cause and its own fix, so a constant answer scores at most one fault's worth over the set. `apply_fix()` then
applies the candidate's fix when it is the right one and waits until the pipeline is seen to recover.

The duplicates fault (`replayed-batch`) is modules 2 and 7's crash, for real: the sink is a `foreachBatch` that
appends each batch to a table (SQLite, `Incident.table`), and every few batches the "driver" dies after that write
and before Spark writes `commits/N`; a supervisor restarts the query, batch N runs again with the same offsets, and
its rows land twice. The fix keys the table by (topic, partition, offset) and upserts: crashes go on, duplicates stop.

The cluster fault (`broker-lost`, in `CLUSTER_ONLY`) runs only on the lab's cluster (setup(cluster=True)): once
the query has read a few batches, the broker leading partition 0 of its topic is killed (kill -9) and stays down.
Spark's consumers follow the new leader, so nothing fails; what shows is the brokers' own view (`brokers()`: a
short ISR, the leaders moved) and a slow batch in the progress. The fix starts the broker again and the ISR fills
up while the query reads on. A round on the single broker never draws it, and naming it there is refused in one
line.

Everything an incident starts goes through the lab's registries: the topics through `lab.lifecycle.new_topic`,
the checkpoint through `new_checkpoint`, the producer is a `BackgroundProducer` and the query a Spark query, so
`streamlab.cleanup()` and the kernel's exit handler stop them; the incident's own watcher thread ends when its
query is no longer active, and `Incident.stop()` stops and deletes all of it at once.
"""
from __future__ import annotations

import random
import re
import shutil
import threading
import time
from dataclasses import dataclass

from streamlab.errors import LabError, first_line
from streamlab.lab import teardown

TIME_BOX_S = 600  # the candidate's time box: the elapsed time is printed against it at diagnose()
RECOVERY_S = 90.0  # apply_fix() waits this long for the pipeline to be seen recovering

CAUSES = {
    "cap-too-low": "maxOffsetsPerTrigger is below the producer's rate: every batch is full and lag climbs",
    "slow-records": "the per-record work is too slow for the read tasks: each batch takes longer than the "
                    "time it covers, so batches and lag grow",
    "retention-gap": "retention deletes records before the query reads them, and failOnDataLoss=false skips "
                     "the gap silently",
    "open-transaction": "a producer's transaction was left open: the read_committed reader stops at the last "
                        "stable offset",
    "wide-pattern": "an unanchored subscribePattern also matches another topic",
    "replayed-batch": "a batch re-run after a crash was written again by an at-least-once sink",
    "hot-partition": "one hot key sends most records to one Kafka partition, so one task does most of the work",
    "trigger-too-long": "the processingTime interval is too long: records wait for the next trigger",
    "latest-on-new-checkpoint": "the query was restarted on a new checkpoint with startingOffsets=latest and "
                                "skipped the backlog",
    "producer-retries": "the producer retried sends without idempotence and wrote some records twice to the topic",
    "broker-lost": "a broker died: the partitions it led moved to another replica, and their ISR is a replica short",
    "executor-lost": "an executor died: its tasks ran again on another executor and its Worker started a new one",
}
FIXES = {
    "raise-cap": "raise maxOffsetsPerTrigger above the input rate (or remove it) and restart the query",
    "add-parallelism": "more read tasks: minPartitions or more Kafka partitions, with cores to match",
    "keep-longer": "raise the topic's retention.ms beyond the query's worst delay, and keep failOnDataLoss=true",
    "abort-transaction": "abort (or fence) the open transaction, with its producer or kafka-transactions.sh",
    "anchor-pattern": "anchor the pattern (^…$) and restart from the old checkpoint's offsets of the wanted topic",
    "idempotent-sink": "make the sink idempotent: an upsert keyed by (topic, partition, offset)",
    "read-uncommitted": "read with kafka.isolation.level=read_uncommitted",
    "spread-keys": "salt the hot key so its records spread over the partitions",
    "shorter-trigger": "shorten the trigger interval",
    "restart-from-earliest": "restart on a new checkpoint with startingOffsets=earliest",
    "drop-duplicates-in-batch": "dropDuplicates() on the batch before writing it",
    "restart-broker": "start the lost broker again: it catches up from the leaders and rejoins the ISR; the query "
                      "needs no change",
    "lower-min-isr": "lower min.insync.replicas to 1 so that writes go on with a single replica",
}


@dataclass(frozen=True)
class Fault:
    """One injectable fault: its true cause and fix, and the story the candidate is told (symptom-free)."""

    cause: str
    fix: str
    story: str


FAULTS = {
    "cap-too-low": Fault("cap-too-low", "raise-cap",
                         "The orders feed doubled last week. The dashboard now shows orders minutes late."),
    "slow-records": Fault("slow-records", "add-parallelism",
                          "A new enrichment step shipped this morning. Since then the dashboard falls behind."),
    "retention-gap": Fault("retention-gap", "keep-longer",
                           "Finance says some orders never reached the ledger. The job shows no error."),
    "open-transaction": Fault("open-transaction", "abort-transaction",
                              "The orders job has shown nothing new for a while, yet orders keep coming in."),
    "wide-pattern": Fault("wide-pattern", "anchor-pattern",
                          "The order counts are too high since the platform team's migration."),
    "replayed-batch": Fault("replayed-batch", "idempotent-sink",
                            "The orders job keeps crashing and its supervisor restarts it. Billing says some "
                            "customers were charged twice."),
    "broker-lost": Fault("broker-lost", "restart-broker",
                         "The orders dashboard froze for a few seconds a moment ago, and the Kafka team's alert is "
                         "still red."),
}
# Faults that need the lab's cluster (three brokers, Spark executors): the single-broker round never draws them.
CLUSTER_ONLY = frozenset({"broker-lost"})
KILL_AFTER_BATCHES = 2  # broker-lost: the leader of partition 0 is killed once this many batches read rows

CRASH_EVERY = 4  # replayed-batch: the driver dies after the sink's write of every 4th batch, before commits/N
SINK_TABLE = "orders"  # replayed-batch: the sink's table, in a SQLite file (Incident.table)


def grade(fault: str, cause: str, fix: str) -> dict:
    """Score an answer against the fault really injected: 1 point for the right cause, 1 for the right fix."""
    _known(cause, CAUSES, "cause")
    _known(fix, FIXES, "fix")
    truth = FAULTS[fault]
    got = {"cause": int(cause == truth.cause), "fix": int(fix == truth.fix)}
    return {**got, "score": got["cause"] + got["fix"], "of": 2}


def _known(value, table: dict, what: str) -> None:
    if value not in table:
        raise LabError(f"{value!r} is not a {what} id: pick one of {', '.join(table)} "
                       f"(incidents.menu() lists them with their meaning)")


def menu() -> None:
    """Print the published causes and fixes, each id with what it means."""
    import textwrap

    for title, table in (("Causes:", CAUSES), ("Fixes:", FIXES)):
        print(title)
        for key, says in table.items():  # wrapped under its column: a notebook 1,280 px wide shows ~100 characters
            print(textwrap.fill(says, width=96, initial_indent=f"  {key:<26} ", subsequent_indent=" " * 29))


_current: list = []  # the one incident running in this kernel (starting another stops it)


def on_cluster() -> bool:
    """Whether this kernel's lab runs on the cluster (setup(cluster=True)), where the cluster-only faults can run."""
    from streamlab.lab import cluster

    return cluster.wanted() and cluster.folder().exists()


def drawable(cluster: bool) -> list[str]:
    """The faults a round may draw: the cluster-only ones only on the cluster (the others keep their seeds)."""
    return sorted(f for f in FAULTS if cluster or f not in CLUSTER_ONLY)


def start(spark, bootstrap: str, seed: int | None = None, fault: str | None = None) -> "Incident":
    """Start a pipeline with one fault (drawn from `seed`, or the named `fault`) and return the incident."""
    if fault is not None and fault not in FAULTS:
        raise LabError(f"fault={fault!r} is not one this round injects: give one of {', '.join(FAULTS)}, "
                       "or None to draw one")
    cluster = on_cluster()
    if fault in CLUSTER_ONLY and not cluster:
        raise LabError(f"fault={fault!r} needs the lab's cluster: run the setup cell with "
                       "streamlab.setup(cluster=True), or leave fault out to draw a single-broker one")
    if seed is None:
        seed = random.SystemRandom().randrange(10_000)
    chosen = fault or random.Random(seed).choice(drawable(cluster))
    for old in list(_current):
        old.stop()
    incident = Incident(spark, bootstrap, chosen, seed)
    _current.append(incident)
    try:
        incident._start()
    except BaseException:
        incident.stop()
        raise
    return incident


def _stop_at_exit() -> None:
    """At the kernel's exit: stop the incident still running (the lab's own handlers stop the rest)."""
    for incident in list(_current):
        try:
            incident.stop()
        except Exception:
            pass


teardown.register("incidents", _stop_at_exit)


def _slow(cost_s: float):
    """A task function that spends `cost_s` on every (topic, value) row of its partition and passes it on."""
    def run(rows):
        for row in rows:
            time.sleep(cost_s)
            yield row[0], row[1]
    return run


def make_table(path: str) -> None:
    """Create the sink's table (no key: an append writes a replayed batch's rows a second time)."""
    import sqlite3

    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE IF NOT EXISTS {SINK_TABLE} "
                   "(topic TEXT, partition INTEGER, offset INTEGER, value TEXT, batch INTEGER)")


def append_write(path: str):
    """The at-least-once sink's write function for foreachBatch: it appends every row of the batch to the table."""
    def write(batch_df, batch_id):
        import sqlite3

        rows = [(r["topic"], r["partition"], r["offset"], bytes(r["value"]).decode(), batch_id)
                for r in batch_df.select("topic", "partition", "offset", "value").collect()]
        with sqlite3.connect(path, timeout=30) as db:
            db.executemany(f"INSERT INTO {SINK_TABLE} VALUES (?, ?, ?, ?, ?)", rows)
    return write


def upsert_write(path: str):
    """The idempotent sink's write function: an upsert keyed by (topic, partition, offset), after
    `dedupe_table` gave the table that key."""
    def write(batch_df, batch_id):
        import sqlite3

        rows = [(r["topic"], r["partition"], r["offset"], bytes(r["value"]).decode(), batch_id)
                for r in batch_df.select("topic", "partition", "offset", "value").collect()]
        with sqlite3.connect(path, timeout=30) as db:
            db.executemany(f"INSERT INTO {SINK_TABLE} VALUES (?, ?, ?, ?, ?) "
                           "ON CONFLICT (topic, partition, offset) DO UPDATE SET value = excluded.value", rows)
    return write


def dedupe_table(path: str) -> int:
    """Keep one row per (topic, partition, offset) and make that the table's unique key; the rows removed."""
    import sqlite3

    with sqlite3.connect(path, timeout=30) as db:
        removed = db.execute(f"DELETE FROM {SINK_TABLE} WHERE rowid NOT IN (SELECT MIN(rowid) FROM {SINK_TABLE} "
                             "GROUP BY topic, partition, offset)").rowcount
        db.execute(f"CREATE UNIQUE INDEX IF NOT EXISTS {SINK_TABLE}_key ON {SINK_TABLE} (topic, partition, offset)")
    return removed


def table_counts(path: str, since: dict | None = None, until: dict | None = None) -> dict:
    """Per topic: rows, distinct (partition, offset), duplicate copies and offsets missing in the table; with
    `since`/`until` ({topic: {partition: offset}}) only the rows of that offset range, counted against it."""
    import sqlite3

    with sqlite3.connect(path, timeout=30) as db:
        found = db.execute(f"SELECT topic, partition, offset, COUNT(*) FROM {SINK_TABLE} "
                           "GROUP BY topic, partition, offset").fetchall()
    per: dict = {}
    for topic, part, off, n in found:
        lo = (since or {}).get(topic, {}).get(part) if since is not None else None
        hi = (until or {}).get(topic, {}).get(part) if until is not None else None
        if (since is not None and (lo is None or off < lo)) or (until is not None and (hi is None or off >= hi)):
            continue
        per.setdefault(topic, {}).setdefault(part, []).append((off, n))
    out = {}
    for topic in sorted(set(per) | set((since or {}) if until is not None else ())):
        parts = per.get(topic, {})
        rows = sum(n for offs in parts.values() for _, n in offs)
        distinct = sum(len(offs) for offs in parts.values())
        if since is not None and until is not None:
            span = sum(max(0, until[topic].get(p, 0) - o) for p, o in since.get(topic, {}).items())
        else:
            span = sum(max(o for o, _ in offs) - min(o for o, _ in offs) + 1 for offs in parts.values() if offs)
        out[topic] = {"rows": rows, "distinct": distinct, "duplicates": rows - distinct, "missing": span - distinct}
    return out


class _Crash(RuntimeError):
    """The simulated driver crash: after the sink's write of a batch, before Spark writes commits/N."""


class Incident:
    """A running pipeline with one injected fault; see the module's docstring."""

    def __init__(self, spark, bootstrap: str, fault: str, seed: int):
        self.spark, self.bootstrap, self.seed = spark, bootstrap, seed
        self._fault = fault
        self.topic = ""  # the pipeline's input topic
        self.topics: list[str] = []  # every topic the incident made
        self.checkpoint = ""
        self.query = None
        self.producers: list = []
        self.answer: dict | None = None  # the first diagnose(): what counts
        self.last_answer: dict | None = None
        self.started = 0.0
        self.detected_s: float | None = None  # seconds from start until the symptom was first seen
        self._rows: dict[str, int] = {}  # rows the sink got, per topic
        self._ids: dict[str, list[int]] = {}
        self._batches: list[dict] = []  # {"batch", "topic rows", "planned"} per sink call
        self._options: dict = {}
        self._trigger = "1 second"
        self._cost_s = 0.0
        self._transaction = None
        self._trimming = threading.Event()
        self._stopping = threading.Event()
        self._restarting = False
        self._watcher: threading.Thread | None = None
        self._folders: list[str] = []
        self.fixed_at: float | None = None
        self._fix_batch = -1  # retention: the last batch that may have been planned before the fix
        self._subscribe: dict = {}
        self._anchored = ""  # wide-pattern: the pattern the fix subscribes to
        self.table = ""  # replayed-batch: the sink's SQLite file (table `orders`)
        self._write = None  # replayed-batch: the sink's write function (batch_df, batch_id)
        self._crashing = False  # a simulated crash stopped the query; the supervisor (the watcher) restarts it
        self._crashes: list[tuple[int, float]] = []  # (batch id, when) of each simulated crash
        self._query_lock = threading.RLock()
        self._retention_ms: int | None = None  # retention-gap: the topic's retention.ms, as last set
        self.killed_node: int | None = None  # broker-lost: the broker killed (it stays down until the fix)
        self.killed_at: float | None = None  # broker-lost: seconds from start to the kill
        self.detected_after_kill_s: float | None = None  # broker-lost: seconds from the kill until the symptom
        self._kill_error = ""
        self._kill_batch = -1  # broker-lost: the last batch done before the kill

    # -- what the candidate sees ------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"Incident(#{self.seed}, {self.elapsed():.0f} s, query={'active' if self._active() else 'stopped'})"

    def elapsed(self) -> float:
        """Seconds since the incident started."""
        return time.monotonic() - self.started if self.started else 0.0

    def brief(self) -> str:
        """The pager's message: what is reported, the topics and the checkpoint (no cause)."""
        return (f"incident #{self.seed}: {FAULTS[self._fault].story}\n"
                f"  input topic {self.topic}; checkpoint {self.checkpoint}; query name 'incident'\n"
                f"  time box {TIME_BOX_S // 60} min; answer with incident.diagnose(cause, fix) "
                "(incidents.menu() lists the ids)"
                + ("\n  on the cluster: incident.brokers() is the brokers' view (leader, replicas, ISR)"
                   if on_cluster() else ""))

    def output(self) -> dict:
        """What reached the sink, per topic: rows, distinct ids, duplicate copies, and ids missing between the
        lowest and the highest that arrived."""
        if self.table:
            return table_counts(self.table)
        out = {}
        for topic, ids in self._ids.items():
            distinct = set(ids)
            out[topic] = {"rows": self._rows.get(topic, 0), "distinct": len(distinct),
                          "duplicates": len(ids) - len(distinct),
                          "missing": (max(distinct) - min(distinct) + 1 - len(distinct)) if distinct else 0}
        return out

    def brokers(self) -> dict:
        """The brokers' own view of the input topic: per partition its leader, replicas and in-sync replicas."""
        from streamlab.lab.topics import admin

        client = admin(self.bootstrap)
        try:
            described = client.describe_topics([self.topic])
        finally:
            client.close()
        return {part["partition_index"]: {"leader": part["leader_id"], "replicas": sorted(part["replica_nodes"]),
                                          "isr": sorted(part["isr_nodes"])}
                for topic in described for part in sorted(topic["partitions"], key=lambda p: p["partition_index"])}

    def watch(self, seconds: float = 20.0, every: float = 5.0) -> None:
        """Print one line every `every` s for `seconds` s once a first batch is done: the last batch, its rows, the
        lag on the log."""
        from streamlab.observe import checkpoint as ck
        from streamlab.observe.progress import as_dict

        deadline = time.monotonic() + 90  # a busy laptop takes a while to run the first batch
        while ck.last_committed(self.checkpoint) is None and time.monotonic() < deadline:
            self._check_query()
            time.sleep(0.5)
        end = time.monotonic() + seconds
        while True:
            last = as_dict(self.query.lastProgress) if self.query is not None else {}
            print(f"{self.elapsed():5.0f} s  batch {last.get('batchId', '-')}, {last.get('numInputRows', 0)} rows; "
                  f"lag on the log {self._log_lag():,} records")
            if time.monotonic() + every > end:
                return
            time.sleep(every)

    def diagnose(self, cause: str, fix: str) -> dict:
        """Grade `cause` and `fix` against the fault really injected; the first answer is the one that counts."""
        if cause is None or fix is None:
            print("Name a cause and a fix first: cause, fix = \"…\", \"…\" (incidents.menu() lists the ids)")
            return {}
        result = grade(self._fault, cause, fix)
        spent = self.elapsed()
        result.update(elapsed_s=round(spent, 1), cause_given=cause, fix_given=fix)
        first = self.answer is None
        if first:
            self.answer = result
            from . import mock  # the first answer, in the learner's history: grader progress shows it

            mock.remember("incidents", {"fault": self._fault, "score": result["score"], "of": 2,
                                        "elapsed_s": result["elapsed_s"]})
        self.last_answer = result
        over = "" if spent <= TIME_BOX_S else f" (over the {TIME_BOX_S // 60} min time box)"
        truth = FAULTS[self._fault]
        line = (f"{'✓' if result['cause'] else '✗'} cause, {'✓' if result['fix'] else '✗'} fix: "
                f"{result['score']}/2 after {_clock(spent)} of {TIME_BOX_S // 60} min{over}")
        if first:
            line += f". It was {truth.cause}; the fix: {truth.fix}"
        else:
            line += f" (your first answer stays: {self.answer['score']}/2)"
        print(line)
        return result

    def apply_fix(self, timeout: float = RECOVERY_S) -> dict:
        """Apply the fix of your last diagnose() if it is the right one, and wait until the pipeline recovers."""
        if self.last_answer is None:
            print("diagnose(cause, fix) first: apply_fix() applies the fix you named")
            return {"applied": False, "recovered": False, "seconds": 0.0, "evidence": ""}
        fix = self.last_answer["fix_given"]
        if not self.last_answer["fix"]:
            print(f"✗ {fix} does not address this incident: nothing was changed (the pipeline still misbehaves)")
            return {"applied": False, "recovered": False, "seconds": 0.0, "evidence": ""}
        before = self._measure()
        self.fixed_at = time.monotonic()
        getattr(self, f"_fix_{self._fault.replace('-', '_')}")()
        deadline = self.fixed_at + timeout
        evidence = ""
        while time.monotonic() < deadline:
            ok, evidence = self._recovered(before)
            if ok:
                seconds = time.monotonic() - self.fixed_at
                print(f"✓ {fix} applied; recovered {seconds:.0f} s later: {evidence}")
                return {"applied": True, "recovered": True, "seconds": round(seconds, 1), "evidence": evidence}
            self._check_query()
            time.sleep(0.5)
        print(f"✗ {fix} applied, but no recovery seen within {timeout:.0f} s: {evidence}")
        return {"applied": True, "recovered": False, "seconds": round(timeout, 1), "evidence": evidence}

    def symptom(self) -> tuple[bool, str]:
        """Whether the fault's symptom is visible yet in the course's tools, and the evidence (for instructors)."""
        seen, evidence = getattr(self, f"_sees_{self._fault.replace('-', '_')}")()
        if seen and self.detected_s is None:
            self.detected_s = round(self.elapsed(), 1)
            if self.killed_at is not None:
                self.detected_after_kill_s = round(self.detected_s - self.killed_at, 1)
        return seen, evidence

    def wait_for_symptom(self, timeout: float = 90.0) -> str:
        """Block until symptom() sees the fault (raise TimeoutError naming the evidence so far); its evidence."""
        deadline = time.monotonic() + timeout
        evidence = ""
        while time.monotonic() < deadline:
            seen, evidence = self.symptom()
            if seen:
                return evidence
            self._check_query()
            time.sleep(0.5)
        raise TimeoutError(f"the {self._fault} symptom was not seen within {timeout:.0f} s ({evidence})")

    def stop(self) -> str:
        """Stop the producers, the query, the transaction and the watcher; delete the topics and the checkpoint."""
        from streamlab.lab import lifecycle
        from streamlab.lab.topics import delete_within
        from streamlab.observe.progress import stop_between_batches

        self._stopping.set()
        self._trimming.clear()
        for producer in self.producers:
            producer.stop(timeout=2.0)
        if self.query is not None:
            try:
                stop_between_batches(self.query, timeout=5.0)
            except Exception:
                pass
        self._end_transaction(commit=False)
        if self._watcher is not None and self._watcher is not threading.current_thread():
            self._watcher.join(timeout=10)
        try:
            self._restart_killed()  # the cluster is left whole, fixed or not
        except Exception as exc:
            print(f"⚠  broker {self.killed_node} did not start again ({first_line(exc)}): "
                  "`python -m streamlab cluster start` starts it")
        left = delete_within(self.topics, self.bootstrap, timeout=10.0) if self.topics else []
        for folder in self._folders:
            shutil.rmtree(folder, ignore_errors=True)
        lifecycle.untrack([name for name in self.topics if name not in left], self._folders)
        if self in _current:
            _current.remove(self)
        return f"stopped incident #{self.seed}" + (f"; left for cleanup(): {', '.join(left)}" if left else "")

    # -- starting the pipeline ---------------------------------------------------------------------------------
    def _start(self) -> None:
        from streamlab.lab.lifecycle import new_checkpoint, new_topic
        from streamlab.lab.producer import BackgroundProducer

        self.started = time.monotonic()
        run = f"{self.seed:04d}"
        fault = self._fault
        partitions = {"slow-records": 1, "retention-gap": 1, "open-transaction": 1, "broker-lost": 3}.get(fault, 2)
        self.topic = new_topic(f"orders{run}", partitions=partitions)
        self.topics.append(self.topic)
        rate = {"cap-too-low": 300, "slow-records": 100, "retention-gap": 200, "open-transaction": 100,
                "wide-pattern": 50, "replayed-batch": 100, "broker-lost": 100}[fault]
        self._subscribe = {"subscribe": self.topic}
        if fault == "cap-too-low":
            self._options["maxOffsetsPerTrigger"] = "100"
        elif fault == "slow-records":
            self._cost_s = 0.012  # about 80 records/s per task; the producer sends 100, two tasks read 160
            self._trigger = ""
            # extra code — start Spark's Python worker now: its start-up (seconds on a busy laptop) would make the
            # first batch long, and every later batch longer still
            self.spark.sparkContext.parallelize([("", b"")], 1).mapPartitions(_slow(0.0)).collect()
        elif fault == "retention-gap":
            self._options["failOnDataLoss"] = "false"
            self._trigger = "3 seconds"
            self._set_retention("1000")
        elif fault == "open-transaction":
            self._options["kafka.isolation.level"] = "read_committed"
        elif fault == "wide-pattern":
            # The platform team's legacy copy: named so that the unanchored pattern matches it too.
            extra = new_topic(f"legacy-orders{run}", partitions=1)
            self.topics.append(extra)
            self._extra = extra
            from streamlab.lab.access import topic_prefix

            # "orders<run>-o<token>-": a workshop's learner prefix left out, so the legacy copy matches too
            pattern = self.topic[len(topic_prefix()): self.topic.rindex("-") + 1]
            self._subscribe = {"subscribePattern": re.escape(pattern).replace("\\-", "-")}
            self._anchored = f"^{re.escape(self.topic)}$"
            self.producers.append(BackgroundProducer(extra, rate=80, bootstrap=self.bootstrap).start())
        elif fault == "replayed-batch":
            folder = new_checkpoint("incident-sink")
            self._folders.append(folder)
            self.table = f"{folder}/orders.db"
            make_table(self.table)
            self._write = append_write(self.table)
        self.producers.insert(0, BackgroundProducer(self.topic, rate=rate, bootstrap=self.bootstrap).start())
        if fault == "open-transaction":
            time.sleep(1.0)  # some committed records first: the reader reads them, then stops
            self._transaction = _LongTransaction(self.topic, 5, self.bootstrap)
        self.checkpoint = new_checkpoint("incident")
        self._folders.append(self.checkpoint)
        self.query = self._start_query()
        if fault == "retention-gap":
            self._trimming.set()
        self._watcher = threading.Thread(target=self._watch, name=f"streamlab-incident-{self.seed}", daemon=True)
        self._watcher.start()

    def _start_query(self, checkpoint: str | None = None, subscribe: dict | None = None, starting: str = "latest"):
        reader = (self.spark.readStream.format("kafka").option("kafka.bootstrap.servers", self.bootstrap)
                  .options(**(subscribe or self._subscribe)).option("startingOffsets", starting)
                  .options(**self._options))
        writer = (reader.load().writeStream.queryName("incident").foreachBatch(self._sink)
                  .option("checkpointLocation", checkpoint or self.checkpoint))
        if self._trigger:
            writer = writer.trigger(processingTime=self._trigger)
        return writer.start()

    def _sink(self, batch_df, batch_id) -> None:
        """The pipeline's sink: does the per-record work, if any, and remembers the ids that arrived per topic."""
        from streamlab.delivery.sinks import ids_in

        if self.table:  # replayed-batch: the write function, then maybe the crash before commits/N
            self._write(batch_df, batch_id)
            self._batches.append({"batch": batch_id, "rows": {}, "at": time.monotonic()})
            if batch_id % CRASH_EVERY == CRASH_EVERY - 2 and batch_id not in {b for b, _ in self._crashes}:
                self._crashes.append((batch_id, time.monotonic()))
                self._crashing = True
                raise _Crash(f"simulated driver crash after the sink wrote batch {batch_id}, "
                             f"before commits/{batch_id}")
            return
        frame = batch_df.select("topic", "value")
        if self._cost_s:  # one pass: the work and the rows (a second action would read the batch from Kafka again)
            rows = frame.rdd.mapPartitions(_slow(self._cost_s)).collect()
        else:
            rows = [(r["topic"], r["value"]) for r in frame.collect()]
        per_topic: dict[str, int] = {}
        for topic, value in rows:
            per_topic[topic] = per_topic.get(topic, 0) + 1
            self._ids.setdefault(topic, []).extend(ids_in([value]))
        for topic, n in per_topic.items():
            self._rows[topic] = self._rows.get(topic, 0) + n
        self._batches.append({"batch": batch_id, "rows": per_topic, "at": time.monotonic()})

    def _set_retention(self, ms: str) -> None:
        from kafka.admin import ConfigResource, ConfigResourceType

        from streamlab.lab.topics import admin

        self._retention_ms = int(ms)
        client = admin(self.bootstrap)
        try:
            client.alter_configs([ConfigResource(ConfigResourceType.TOPIC, self.topic, configs={"retention.ms": ms})])
        finally:
            client.close()

    def _watch(self) -> None:
        """The incident's background work: retention's deletions (as the broker's would, every half second, with
        the lab's retention check of seconds) and the supervisor that restarts a crashed query; ends when the
        incident stops or its query is gone."""
        consumer = None
        try:
            while not self._stopping.wait(0.5):
                if self.query is None or not (self._active() or self._restarting or self._crashing):
                    break
                if self._crashing:
                    self._supervise()
                if self._fault == "broker-lost" and self.killed_at is None and \
                        sum(1 for b in self._batches if b["rows"]) >= KILL_AFTER_BATCHES:
                    self._kill_leader()
                if self._trimming.is_set():
                    try:
                        consumer = consumer or self._consumer()
                        self._trim_by_age(consumer)
                    except Exception:
                        pass  # a broker that is busy: the next tick trims
        finally:
            if consumer is not None:
                consumer.close()
            self._end_transaction(commit=False)

    def _kill_leader(self) -> None:
        """broker-lost: kill -9 the broker leading partition 0 under the running query (it stays down)."""
        from streamlab.lab import cluster

        self.killed_at = round(self.elapsed(), 1)
        self._kill_batch = max([b["batch"] for b in self._batches] or [-1])
        try:
            node = cluster.leader_of(self.topic, 0)
            cluster.kill_node(node)
            self.killed_node = node
        except Exception as exc:  # the symptom never shows: wait_for_symptom names this
            self._kill_error = first_line(exc)

    def _restart_killed(self) -> None:
        """Start the broker this incident killed again, with its data (the fix, and stop())."""
        from streamlab.lab import cluster

        if self.killed_node is not None and cluster.node_pid(self.killed_node) is None:
            cluster.start_node(self.killed_node)

    def _supervise(self) -> None:
        """The supervisor: once a simulated crash has stopped the query, start it again on the same checkpoint."""
        with self._query_lock:
            if self._crashing and not self._active() and not self._stopping.is_set():
                self._restarting = True
                try:
                    self.query = self._start_query()
                finally:
                    self._crashing = False
                    self._restarting = False

    def _consumer(self):
        from kafka import KafkaConsumer

        return KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False)

    def _trim_by_age(self, consumer) -> None:
        """Retention, as the broker's would apply it, without waiting for a segment to roll: delete the records
        older than the topic's retention.ms (every half second)."""
        from kafka import TopicPartition

        from streamlab.lab.topics import admin

        if self._retention_ms is None or self._retention_ms >= 3_600_000:
            return
        parts = consumer.partitions_for_topic(self.topic) or set()
        tps = [TopicPartition(self.topic, p) for p in parts]
        cutoff = int(time.time() * 1000) - self._retention_ms
        found = consumer.offsets_for_times({tp: cutoff for tp in tps})
        ends = consumer.end_offsets(tps)
        before = {tp: (found[tp].offset if found.get(tp) is not None else ends[tp]) for tp in tps}
        client = admin(self.bootstrap)
        try:
            client.delete_records({tp: o for tp, o in before.items() if o > 0})
        finally:
            client.close()

    def _end_transaction(self, commit: bool) -> None:
        transaction, self._transaction = self._transaction, None
        if transaction is not None:
            try:
                transaction.end(commit=commit)
            except Exception:
                pass

    def _active(self) -> bool:
        try:
            return self.query is not None and self.query.isActive
        except Exception:
            return False

    def _check_query(self) -> None:
        if self.query is not None and not self._restarting and not self._crashing and not self._active():
            error = self.query.exception()
            raise LabError(f"the incident's query stopped{': ' + first_line(error) if error else ''}; "
                           "start a new incident with incidents.start(spark, bootstrap)")

    def _restart_query(self, **kwargs) -> None:
        from streamlab.observe.progress import stop_between_batches

        with self._query_lock:
            self._restarting = True
            try:
                stop_between_batches(self.query)
                self.query = self._start_query(**kwargs)
            finally:
                self._crashing = False
                self._restarting = False

    # -- evidence, as the course's tools show it ---------------------------------------------------------------
    def _events(self) -> list[dict]:
        from streamlab.observe.progress import as_dict

        try:
            return [as_dict(e) for e in self.query.recentProgress]
        except Exception:
            return []

    def _log_lag(self) -> int:
        """Records on the broker's log past the query's committed position (lag on the log, now)."""
        from streamlab.observe.lag import lag_from_checkpoint, total_lag

        try:
            lag = lag_from_checkpoint(self.checkpoint, self.bootstrap)
        except (ValueError, FileNotFoundError):
            return 0
        return total_lag({self.topic: lag.get(self.topic, {})})

    def _measure(self) -> dict:
        """A snapshot for recovery: the lag, the committed position and the sink's counts."""
        from streamlab.observe import checkpoint as ck

        done = ck.committed_offsets(self.checkpoint) if self.checkpoint else None
        return {"lag": self._log_lag(), "batches": len(self._batches),
                "position": sum((done.kafka().get(self.topic) or {}).values()) if done else 0}

    def _data_events(self) -> list[dict]:
        """The progress events of the batches that read data."""
        return [e for e in self._events() if e.get("numInputRows")]

    def _sees_cap_too_low(self) -> tuple[bool, str]:
        from streamlab.observe.lag import total_lag

        # Capped: every batch reads the cap, and the lag Spark itself reports (latestOffset − endOffset) grows.
        lags = [total_lag(e) for e in self._data_events()][-3:]
        grows = len(lags) == 3 and lags[0] < lags[1] < lags[2] and lags[2] - lags[0] > 150
        return grows, f"progress lag of the last batches: {lags}"

    def _sees_slow_records(self) -> tuple[bool, str]:
        # Uncapped: a batch reads all that arrived while the last one ran, so slow batches make the next bigger.
        events = self._data_events()[-3:]
        rows = [e["numInputRows"] for e in events]
        grows = len(rows) == 3 and rows[0] < rows[1] < rows[2] and \
            (events[-1].get("inputRowsPerSecond") or 0) > (events[-1].get("processedRowsPerSecond") or 0)
        return grows, f"rows of the last batches: {rows}"

    def _sees_retention_gap(self) -> tuple[bool, str]:
        from streamlab.observe.lag import source_offsets

        for event in self._events():
            if not event.get("numInputRows"):
                continue
            source = event["sources"][0]
            start = source_offsets(source.get("startOffset")).get(self.topic, {})
            end = source_offsets(source.get("endOffset")).get(self.topic, {})
            planned = sum(o - start.get(p, 0) for p, o in end.items())
            if planned - event["numInputRows"] > 10:
                return True, f"batch {event['batchId']}: {planned} offsets, {event['numInputRows']} rows read"
        return False, "every batch read all of its offsets"

    def _sees_open_transaction(self) -> tuple[bool, str]:
        from streamlab.observe.lag import latest_offsets

        events = self._events()
        if not events:
            return False, "no progress yet"
        last = events[-1]
        stalled = (time.monotonic() - self._batches[-1]["at"]) if self._batches else self.elapsed()
        try:
            log_end = sum(latest_offsets(self.topic, self.bootstrap)[self.topic].values())
        except Exception:
            return False, "broker not answering"
        read = sum(b["rows"].get(self.topic, 0) for b in self._batches)
        seen = stalled > 4 and log_end - read > 300 and not last.get("numInputRows")
        return seen, f"no rows for {stalled:.0f} s; the log holds {log_end}, the query read {read}"

    def _sees_replayed_batch(self) -> tuple[bool, str]:
        counts = table_counts(self.table).get(self.topic, {})
        crashed = [b for b, _ in self._crashes]
        return counts.get("duplicates", 0) > 0, (f"{counts.get('duplicates', 0)} rows twice in the sink's table; "
                                                 f"batches that crashed before their commit: {crashed}")

    def _sees_broker_lost(self) -> tuple[bool, str]:
        # The brokers' own view: the killed broker leads nothing and is missing from the ISR; the progress shows
        # the batch that met the leader election.
        if self.killed_node is None:
            return False, self._kill_error or "all brokers up so far"
        try:
            parts = self.brokers()
        except Exception as exc:
            return False, f"metadata not answering: {first_line(exc)}"
        short = {p: v for p, v in parts.items() if len(v["isr"]) < len(v["replicas"])}
        moved = all(v["leader"] != self.killed_node for v in parts.values())
        since = [e.get("durationMs", {}).get("triggerExecution", 0) for e in self._events()
                 if e.get("batchId", -1) > self._kill_batch]
        batches = (f"slowest batch since the kill {max(since) / 1000:.1f} s" if since
                   else f"no batch has ended in the {self.elapsed() - self.killed_at:.0f} s since the kill")
        return bool(short) and moved, (f"partitions with a short ISR: "
                                       f"{ {p: v['isr'] for p, v in short.items()} } of replicas "
                                       f"{next(iter(parts.values()))['replicas'] if parts else []}; leaders "
                                       f"{ {p: v['leader'] for p, v in parts.items()} }; {batches}")

    def _sees_wide_pattern(self) -> tuple[bool, str]:
        other = {t: n for t, n in self._rows.items() if t != self.topic}
        return bool(other), f"rows per topic: {self._rows}"

    def _recovered(self, before: dict) -> tuple[bool, str]:
        after = [b for b in self._batches if b["at"] > self.fixed_at]
        if self._fault in ("cap-too-low", "slow-records"):
            # the lag on the log (the broker's latest offsets minus the committed position) falls; a slow query
            # also needs its batches shrinking, as each works off part of the backlog
            now, sizes = self._log_lag(), [sum(b["rows"].values()) for b in after]
            shrinking = self._fault == "cap-too-low" or (len(sizes) >= 2 and sizes[-1] < sizes[-2])
            ok = bool(after) and shrinking and now < before["lag"]
            return ok, f"lag on the log {before['lag']:,} → {now:,} records; batches since the fix: {sizes[-3:]}"
        if self._fault == "retention-gap":
            from streamlab.observe.lag import source_offsets

            full = []
            for event in self._events():
                if event.get("numInputRows") and event["batchId"] > self._fix_batch:
                    source = event["sources"][0]
                    start = source_offsets(source.get("startOffset")).get(self.topic, {})
                    end = source_offsets(source.get("endOffset")).get(self.topic, {})
                    full.append(sum(o - start.get(p, 0) for p, o in end.items()) == event["numInputRows"])
            return len(full) >= 2 and all(full[-2:]), f"the last batches read every offset: {full[-3:]}"
        if self._fault == "open-transaction":
            read = sum(b["rows"].get(self.topic, 0) for b in after)
            return read > 0, f"the reader advanced: {read} rows since the fix"
        if self._fault == "replayed-batch":
            # a crash after the fix, its batch run again, and still no row twice in the table
            replayed = [b for b, at in self._crashes if at > self.fixed_at
                        and any(x["batch"] == b and x["at"] > at for x in self._batches)]
            dups = table_counts(self.table).get(self.topic, {}).get("duplicates", 0)
            return bool(replayed) and dups == 0, (f"batches replayed since the fix: {replayed}; "
                                                  f"rows twice in the table: {dups}")
        if self._fault == "broker-lost":
            # every replica back in the ISR, and the query reading on: two batches with rows since the fix
            try:
                parts = self.brokers()
            except Exception as exc:
                return False, f"metadata not answering: {first_line(exc)}"
            full = bool(parts) and all(v["isr"] == v["replicas"] for v in parts.values())
            reading = [sum(b["rows"].values()) for b in after if b["rows"]]
            return full and len(reading) >= 2, (f"ISR {({p: v['isr'] for p, v in parts.items()})}; rows of the "
                                                f"batches since the fix: {reading[-3:]}")
        if self._fault == "wide-pattern":
            # The last two batches with rows: the old query may still finish a batch (both topics) after the fix
            # began, as it is stopped between batches; that batch says nothing about the anchored query.
            clean = [b for b in after if b["rows"]]
            ok = len(clean) >= 2 and all(set(b["rows"]) == {self.topic} for b in clean[-2:])
            return ok, f"batches since the fix read {[sorted(b['rows']) for b in clean][-2:]}"
        return False, ""

    # -- the right fixes ----------------------------------------------------------------------------------------
    def _fix_cap_too_low(self) -> None:
        self._options.pop("maxOffsetsPerTrigger", None)
        self._restart_query()

    def _fix_slow_records(self) -> None:
        self._options["minPartitions"] = "2"  # two read tasks: one per core of local[2]
        self._restart_query()

    def _fix_retention_gap(self) -> None:
        self._trimming.clear()
        self._set_retention(str(7 * 24 * 3600 * 1000))
        events = self._events()
        self._fix_batch = max([e.get("batchId", -1) for e in events] or [-1]) + 1  # the next may be planned already

    def _fix_open_transaction(self) -> None:
        self._end_transaction(commit=False)

    def _fix_replayed_batch(self) -> None:
        from streamlab.observe.progress import stop_between_batches

        with self._query_lock:  # not while the supervisor restarts the query
            self._restarting = True
            try:
                stop_between_batches(self.query)  # no append may run while the table gets its key
                removed = dedupe_table(self.table)
                self._write = upsert_write(self.table)
                self.query = self._start_query()
            finally:
                self._crashing = False
                self._restarting = False
        print(f"  removed {removed} duplicate rows; the table is keyed by (topic, partition, offset) and the sink "
              "upserts")

    def _fix_broker_lost(self) -> None:
        self._restart_killed()

    def _fix_wide_pattern(self) -> None:
        from streamlab.lab.lifecycle import new_checkpoint
        from streamlab.observe import checkpoint as ck

        done = ck.committed_offsets(self.checkpoint)
        reached = (done.kafka().get(self.topic) if done else None) or {}
        starting = ('{"%s":{%s}}' % (self.topic, ",".join(f'"{p}":{o}' for p, o in reached.items()))
                    if reached else "earliest")
        fresh = new_checkpoint("incident")
        self._folders.append(fresh)
        self._restarting = True
        try:
            from streamlab.observe.progress import stop_between_batches

            stop_between_batches(self.query)
            self.checkpoint = fresh
            self._subscribe = {"subscribePattern": self._anchored}
            self.query = self._start_query(starting=starting)
        finally:
            self._restarting = False


class _LongTransaction:
    """Module 7's open transaction (`delivery.pipeline.OpenTransaction`), with a transaction timeout longer than
    the round's time box: kafka-python's default of 60 s would let the broker abort it during the round."""

    def __init__(self, topic: str, records: int, bootstrap: str):
        from kafka import KafkaProducer

        from streamlab.lab.access import prefixed
        from streamlab.lab.owners import my_token

        self.producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True,
                                      transactional_id=prefixed(f"incident-{my_token()}-{topic}"),
                                      transaction_timeout_ms=(TIME_BOX_S + 300) * 1000)
        self.producer.init_transactions()
        self.producer.begin_transaction()
        for i in range(records):
            self.producer.send(topic, value=f"in-transaction-{i}".encode())
        self.producer.flush()

    def end(self, commit: bool = True) -> None:
        """Commit (or abort) the open transaction and close the producer (module 7's OpenTransaction.end)."""
        from streamlab.delivery.pipeline import OpenTransaction

        OpenTransaction.end(self, commit)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"
