"""Which executor read which Kafka partition, batch by batch, from Spark's own task events.

Spark's listener bus records every task (its index, attempt, executor and locality) in the application's status
store (AppStatusListener, a SparkListener). Inside `foreachBatch`, `read_map` tags the batch's job with a job
group, counts each task's rows by Kafka partition (`spark_partition_id()` is the task's index), then reads the
scan stage's tasks from the status store: so each Kafka partition is matched to the executor that read it.

The connector asks for a *preferred* executor per partition so that the consumer an executor cached for it is
reused next batch (KafkaOffsetRangeCalculator.getLocation, KafkaOffsetRangeCalculator.scala:136-145:
`executors(floorMod(topicPartition.hashCode, n))` over the executors sorted by host then id, in descending order,
KafkaSource.scala:420-432). `preferred_executor` computes the same choice with the JVM's own hashCode.

Spark's reported locality level cannot show whether a task had that preference: a task with none is reported
PROCESS_LOCAL too. So `read_tasks` puts each task's preferred location, read from its plan, beside the executor that
ran it and the level Spark reported (module 9's Exercise 7, where the grader makes `planned_reads` in a process of
its own on the cluster).
"""
from __future__ import annotations

import time
import uuid

from streamlab.lab.wait import wait_until


def executors(spark) -> list[str]:
    """The ids of the session's live executors (the driver left out), from the status store."""
    listed = spark._jsparkSession.sparkContext().statusStore().executorList(True)
    return sorted(listed.apply(i).id() for i in range(listed.size()) if listed.apply(i).id() != "driver")


def sorted_locations(spark) -> list[str]:
    """The executors as the connector orders them: 'executor_<host>_<id>', host then id, descending."""
    listed = spark._jsparkSession.sparkContext().statusStore().executorList(True)
    pairs = [(listed.apply(i).hostPort().rsplit(":", 1)[0], listed.apply(i).id()) for i in range(listed.size())]
    return [f"executor_{h}_{e}" for h, e in sorted((p for p in pairs if p[1] != "driver"), reverse=True)]


def topic_partition_hash(spark, topic: str, partition: int) -> int:
    """Kafka's TopicPartition(topic, partition).hashCode(), computed by the JVM (the connector uses this)."""
    return int(spark.sparkContext._jvm.org.apache.kafka.common.TopicPartition(topic, partition).hashCode())


def preferred_executor(spark, topic: str, partition: int) -> str | None:
    """The executor id the connector prefers for this partition (None when there is no executor)."""
    locations = sorted_locations(spark)
    if not locations:
        return None
    return locations[topic_partition_hash(spark, topic, partition) % len(locations)].rsplit("_", 1)[1]


def _counter(work_s: float):
    def count(index, rows):
        import time

        if work_s:
            time.sleep(work_s)  # a demo's slow task, so that a kill lands while it runs
        seen: dict = {}
        for row in rows:
            seen[row[0]] = seen.get(row[0], 0) + 1
        return [(index, partition, n) for partition, n in seen.items()]
    return count


def read_map(spark, batch_df, work_s: float = 0.0) -> list[dict]:
    """For one micro-batch (call it inside foreachBatch): one row per read task, with its Kafka partition,
    records, executor, attempt, locality and duration (ms), sorted by partition. `work_s`: each task sleeps that long."""
    sc = spark.sparkContext
    group = f"streamlab-read-map-{uuid.uuid4().hex[:8]}"
    sc.setJobGroup(group, "which executor read which partition")
    mapped = batch_df.select("partition").rdd.mapPartitionsWithIndex(_counter(work_s))
    expected = mapped.getNumPartitions()
    try:
        # One stage, one task per offset range: the task's index is its range's position in the batch.
        counted = mapped.collect()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    by_task = {task: (partition, n) for task, partition, n in counted}
    # The status store is filled by the listener bus, after the job has returned: wait (briefly) until it holds a
    # successful attempt of every task, or a batch's last task goes missing from the map.
    rows: list[dict] = []

    def every_task_succeeded() -> bool:
        rows[:] = _scan_tasks(spark, group, by_task)
        return len({r["task"] for r in rows if r["status"] == "SUCCESS"}) >= expected

    wait_until(every_task_succeeded, 10, every=0.05)
    return sorted(rows, key=lambda r: (r["partition"] if r["partition"] is not None else -1, r["attempt"]))


def _scan_tasks(spark, group: str, by_task: dict) -> list[dict]:
    """Every attempt of every task of the job group's first stage, as the status store holds them now."""
    tracker = spark.sparkContext.statusTracker()
    stage_ids = sorted(sid for job in tracker.getJobIdsForGroup(group)
                       for sid in (tracker.getJobInfo(job).stageIds if tracker.getJobInfo(job) else []))
    if not stage_ids:
        return []
    store = spark._jsparkSession.sparkContext().statusStore()
    rows = []
    for attempt_id in range(4):
        try:
            tasks = store.taskList(stage_ids[0], attempt_id, 10_000)
        except Exception:
            break
        for i in range(tasks.size()):
            task = tasks.apply(i)
            partition, records = by_task.get(task.index(), (None, 0))
            duration = task.duration()
            rows.append({"partition": partition, "task": task.index(), "records": records if task.status() ==
                         "SUCCESS" else 0, "executor": task.executorId(), "attempt": task.attempt(),
                         "locality": task.taskLocality(), "status": task.status(),
                         "ms": int(duration.get()) if duration.isDefined() else None})
    return rows


def preferred_locations(spark, batch_df) -> list[str | None]:
    """Per read task of a micro-batch (inside foreachBatch), the executor its plan prefers ('executor_<host>_<id>'),
    None where it has none: what the scheduler is asked, from the RDD's preferred locations."""
    rdd = batch_df._jdf.queryExecution().toRdd()
    scheduler = spark.sparkContext._jsc.sc().dagScheduler()
    found = [scheduler.getPreferredLocs(rdd, i) for i in range(rdd.getNumPartitions())]
    return [locs.head().toString() if locs.nonEmpty() else None for locs in found]


def localities(spark, bootstrap: str, topic: str, options: dict | None = None) -> dict:
    """Read `topic` from its start in one capped-free availableNow run with `options`: how many read tasks, how many
    had a preferred executor, and the locality the scheduler reported for them. A task with no preference is
    reported PROCESS_LOCAL too (TaskSetManager.dequeueTask gives a `noPrefs` task that level), so only the plan's
    preferences tell the two paths apart."""
    seen: dict = {"read tasks": 0, "with a preferred executor": 0, "reported locality": {}}
    for task in _read_from_start(spark, bootstrap, topic, options):
        seen["read tasks"] += 1
        seen["with a preferred executor"] += 1 if task["preferred"] else 0
        reported = seen["reported locality"]
        reported[task["locality"]] = reported.get(task["locality"], 0) + 1
    return seen


def read_tasks(spark, batch_df) -> list[dict]:
    """Per read task of one micro-batch (inside foreachBatch), its successful attempt: the Kafka partition and
    records it read, the executor its plan prefers ('executor_<host>_<id>', None where it has none), the executor
    that ran it and the locality level Spark reported, in task order."""
    preferred = preferred_locations(spark, batch_df)
    done = [t for t in read_map(spark, batch_df) if t["status"] == "SUCCESS"]
    return [{"task": t["task"], "partition": t["partition"], "records": t["records"], "preferred": preferred[t["task"]],
             "executor": t["executor"], "locality": t["locality"]} for t in sorted(done, key=lambda t: t["task"])]


def _read_from_start(spark, bootstrap: str, topic: str, options: dict | None = None) -> list[dict]:
    """read_tasks of every micro-batch of one availableNow run over `topic` from its start, with `options`."""
    import tempfile

    tasks: list[dict] = []

    def batch(batch_df, _batch_id):
        tasks.extend(read_tasks(spark, batch_df))

    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    with tempfile.TemporaryDirectory(prefix="streamlab-localities-") as checkpoint:
        query = (reader.load().writeStream.foreachBatch(batch).option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        query.awaitTermination(120)
        query.stop()
    return tasks


# The two reads of module 9's Exercise 7: the plain path (a preferred executor per range) and the split path.
PLANNED_READS = {"plain": {}, "minPartitions=8": {"minPartitions": "8"}}


def planned_reads(spark, bootstrap: str, partitions: int = 4, records: int = 400) -> dict:
    """Module 9's Exercise 7 data, made fresh: a new topic of `partitions` Kafka partitions and `records` records,
    read plain and with minPartitions=8, {read: read_tasks rows}; the topic is deleted after."""
    from streamlab.lab import producer, topics

    with topics.temporary_topic("locality", partitions, bootstrap) as topic:
        producer.produce(topic, records, partitions=range(partitions), bootstrap=bootstrap, progress=False)
        return {read: _read_from_start(spark, bootstrap, topic, options) for read, options in PLANNED_READS.items()}


def recorded_reads(path: str = "data/locality-reads.json") -> dict:
    """Exercise 7's reads as once recorded on the lab's cluster (planned_reads), {read: rows}: something to try an
    answer on where no cluster runs (it is graded on the cluster, on fresh ones)."""
    import json
    from pathlib import Path

    return json.loads(Path(path).read_text(encoding="utf-8"))["reads"]


def reads_table(reads: dict, answer=None):
    """planned_reads' rows as one table, a row per read task; with `answer` (a function of one row), its verdict
    in a last column, `yours`."""
    import pandas as pd

    rows = [{"read": read, **task} for read, tasks in reads.items() for task in tasks]
    table = pd.DataFrame(rows, columns=["read", "task", "partition", "records", "preferred", "executor", "locality"])
    if answer is not None:
        from streamlab.course.checks import attempt  # an answer that raises shows its error in the table

        table["yours"] = [attempt(answer, {k: v for k, v in row.items() if k != "read"}) for row in rows]
    return table


def print_planned_reads() -> None:
    """In a process of its own on the cluster (the grader's child, m09.ex7_reads_on_cluster): planned_reads on a
    Spark application of its own, printed as one `RESULT {json}` line."""
    import json
    import sys

    import streamlab
    from streamlab.errors import LabError

    try:
        session, servers = streamlab.setup(cluster=True)
    except LabError as exc:  # e.g. every core held by a notebook's kernel: said by the grader in its note
        print(f"REFUSED {exc}", flush=True)
        return
    try:
        made = planned_reads(session, servers)
    finally:
        print(streamlab.cleanup(session), file=sys.stderr)
    print("RESULT " + json.dumps(made), flush=True)
