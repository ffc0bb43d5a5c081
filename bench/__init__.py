"""`make bench` (`python -m bench`): ratios measured side by side in one run (never a timed test: these machines are
shared). An application of its own beside the course, not part of the runtime every notebook imports (streamlab/).

What it compares, each pair on the same work in the same run:
- broker start to ready: Apache Kafka cold (a fresh data folder, formatted first) against warm (its data kept);
- a Spark session's start (to its first query, then stopped): with the class-data sharing archive that setup makes
  against without it (STREAMLAB_CDS=off), CPU and wall time;
- memory: the lab's peak (broker + Spark + this Python process) against a bare local SparkSession;
- reading a topic: Spark's connector against a raw kafka-python consumer, and the offline engine against the
  connector (each on its own broker, the same records);
- writing: the connector's sink against a raw kafka-python producer;
- one micro-batch: the connector against Spark's built-in `rate` source, at the same batch size;
- the driver's CPU per micro-batch with the lab's checkpoint file manager (Hadoop's FileSystem API) against Spark's
  default (its FileContext API, which forks `readlink` and `chmod` for every checkpoint file here);
- end-to-end latency per record on one stream: back-to-back micro-batches against Real-time Mode
  (`trigger(realTime="5 seconds")`), Kafka to Kafka, one after the other in the same session;
- a notebook: checking it with hidden tests against running it;
- the lab's cluster: start to ready, its peak memory against the single lab's, a read on two executors against
  local mode, and the time from a broker kill to the query's next batch;
- the compose lab on podman (tests/docker/measure.py): image size, cold against warm build, up to healthy, and
  module 4's Run All in the container against natively;
- Delta Lake (module 10): its streaming sink against the file sink on the same stream, a MERGE batch against an
  append batch, and the files a minute of a stream leaves at two trigger intervals, before and after OPTIMIZE.
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the course's folder: where `python -c` children find `bench`
RECORDS = 200_000
MEMORY_RUNS = 3
BATCH = 2_000
NOIDA_PORT = 9193  # the offline engine's broker for the comparison, apart from the tests' 9192


def _raw_consumer_seconds(topic: str, bootstrap: str, expected: int, check_crcs: bool = True) -> float:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, check_crcs=check_crcs,
                             max_partition_fetch_bytes=8 << 20, fetch_max_bytes=64 << 20)
    parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
    consumer.assign(parts)
    consumer.seek_to_beginning()
    start, seen = time.perf_counter(), 0
    while seen < expected:
        for records in consumer.poll(timeout_ms=1000, max_records=50_000).values():
            seen += len(records)
    elapsed = time.perf_counter() - start
    consumer.close()
    return elapsed


def _read_seconds(spark, fmt: str, topic: str, bootstrap: str) -> float:
    """Seconds for a batch read of the whole topic that touches every value (after one warm-up read)."""
    def read():
        return (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", topic).load().selectExpr("sum(length(value))").first())

    read()
    start = time.perf_counter()
    assert read() is not None
    return time.perf_counter() - start


def _write_seconds(spark, bootstrap: str) -> tuple[float, float]:
    from streamlab.lab import topics
    from streamlab.lab.producer import produce

    df = spark.sql(f"SELECT cast(id AS string) AS key, repeat('x', 100) AS value FROM range({RECORDS})").cache()
    df.count()
    sink_topic, raw_topic = (topics.create_topic(topics.unique_name(p), 2, bootstrap) for p in ("bench-sink", "bench-raw"))
    try:
        start = time.perf_counter()
        df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", sink_topic).save()
        sink_s = time.perf_counter() - start
        start = time.perf_counter()
        produce(raw_topic, RECORDS, value_fn=lambda i: "x" * 100, progress=False, bootstrap=bootstrap)
        raw_s = time.perf_counter() - start
    finally:
        df.unpersist()
        topics.delete_topic(sink_topic, raw_topic, bootstrap=bootstrap)
    return sink_s, raw_s


def _batch_ms(query) -> list[float]:
    return [p["durationMs"]["triggerExecution"] for p in query.recentProgress if p["numInputRows"]]


def _per_batch_ms(spark, topic: str, bootstrap: str) -> tuple[float, float]:
    kafka = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", BATCH).load())
    q = kafka.writeStream.format("noop").trigger(availableNow=True).start()
    q.awaitTermination()
    kafka_ms = statistics.median(_batch_ms(q)[1:21] or _batch_ms(q))
    rate = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", BATCH).load()
    q = rate.writeStream.format("noop").trigger(processingTime="0 seconds").start()
    while len(_batch_ms(q)) < 21:
        time.sleep(0.2)
    q.stop()
    return kafka_ms, statistics.median(_batch_ms(q)[1:21])


def _driver_cpu(spark) -> float:
    """CPU seconds the session's driver JVM and the processes it waited for have used so far (Linux /proc)."""
    pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _checkpoint_cpu(spark, bootstrap: str, batches: int = 40, rows: int = 50) -> dict[str, float]:
    """Driver CPU per micro-batch of `rows` rows with Spark's default checkpoint file manager and with the lab's,
    alternated twice, the lower of each: batches this small cost little more than their checkpoint writes."""
    from streamlab.lab import topics
    from streamlab.lab.producer import produce
    from streamlab.lab.session import CHECKPOINT_FILE_MANAGER

    topic = topics.create_topic(topics.unique_name("bench-checkpoint"), 1, bootstrap)
    produce(topic, batches * rows, bootstrap=bootstrap, progress=False)
    key, per_batch = "spark.sql.streaming.checkpointFileManagerClass", {"default": [], "lab": []}
    try:
        for which in ("default", "lab", "default", "lab"):
            if which == "lab":
                spark.conf.set(key, CHECKPOINT_FILE_MANAGER)
            else:
                spark.conf.unset(key)
            folder = tempfile.mkdtemp(prefix="streamlab-bench-")
            try:
                before = _driver_cpu(spark)
                q = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                     .option("subscribe", topic).option("startingOffsets", "earliest")
                     .option("maxOffsetsPerTrigger", rows).load()
                     .writeStream.format("noop").option("checkpointLocation", folder).trigger(availableNow=True)
                     .start())
                q.awaitTermination()
                per_batch[which].append((_driver_cpu(spark) - before) / max(1, len(q.recentProgress)))
            finally:
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        spark.conf.set(key, CHECKPOINT_FILE_MANAGER)
        topics.delete_topic(topic, bootstrap=bootstrap)
    return {which: min(values) for which, values in per_batch.items()}


def _broker_start_seconds() -> tuple[float, float]:
    """(cold, warm) seconds from `ensure_broker` to a broker answering, on a port of its own."""
    from streamlab.lab.broker import data_dir, ensure_broker, free_port, stop_broker

    port = free_port()
    folder = data_dir(port, "kafka")
    try:
        start = time.perf_counter()
        ensure_broker("kafka", port)
        cold = time.perf_counter() - start
        stop_broker("kafka", port)
        start = time.perf_counter()
        ensure_broker("kafka", port)
        warm = time.perf_counter() - start
    finally:
        stop_broker("kafka", port)
        shutil.rmtree(folder, ignore_errors=True)
    return cold, warm


class _PeakMemory(threading.Thread):
    """Samples the summed resident memory of some processes (and their children) until stopped."""

    def __init__(self, pids: list[int]):
        super().__init__(daemon=True)
        self.pids, self.peak, self._done = pids, 0, threading.Event()

    def run(self) -> None:
        import psutil

        while not self._done.wait(0.2):
            total = 0
            for pid in self.pids:
                try:
                    proc = psutil.Process(pid)
                    total += sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)])
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)

    def stop(self) -> int:
        self._done.set()
        self.join()
        return self.peak


# The same small work in both: a Spark job, then 10,000 rows through a streaming query (from Kafka in the lab).
# The bare session gets the lab's JVM options (serial collector, C1 only) and the same default 1 GiB driver heap, so
# that the ratio measures what the lab adds (the broker, the connector, Python) rather than two collectors' habits.
BARE_SPARK = """
from pyspark.sql import SparkSession
s = (SparkSession.builder.master("local[2]")
     .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC").getOrCreate())
s.range(1_000_000).selectExpr("sum(id)").first()
q = s.readStream.format("rate-micro-batch").option("rowsPerBatch", 2000).load().writeStream.format("noop").start()
while sum(p["numInputRows"] for p in q.recentProgress) < 10_000:
    q.awaitTermination(0.2)
q.stop()
s.stop()
"""
LAB = """
import streamlab
from streamlab.lab import lifecycle as lab
from streamlab.lab.producer import produce
s, bootstrap = streamlab.setup()
s.range(1_000_000).selectExpr("sum(id)").first()
topic = lab.new_topic("bench-mem", 2)
produce(topic, 10_000, progress=False)
q = (s.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
     .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", 2000).load()
     .writeStream.format("noop").trigger(availableNow=True).start())
q.awaitTermination()
lab.cleanup(s)
s.stop()
"""


def _peak_of(script: str, also: list[int] = ()) -> int:
    """Peak resident memory of a Python script, its children (the Spark JVM) and the given processes."""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=ROOT)
    meter = _PeakMemory([proc.pid, *also])
    meter.start()
    proc.wait(timeout=300)
    return meter.stop()


# A lab session from nothing to its first query, then stopped, the JVM waited for (so its CPU is counted).
SESSION_START = """
from pyspark import SparkContext
from streamlab.lab.session import spark
s = spark()
s.range(1).count()
s.stop()
SparkContext._gateway.proc.stdin.close()
SparkContext._gateway.proc.wait(timeout=300)
"""
SESSION_RUNS = 3


def _session_start(with_archive: bool) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one SESSION_START, Python and its JVMs, with or without the CDS archive."""
    import resource

    env = {k: v for k, v in os.environ.items() if k != "STREAMLAB_CDS"}
    if not with_archive:
        env["STREAMLAB_CDS"] = "off"
    before, began = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run([sys.executable, "-c", SESSION_START], env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=600)
    wall, after = time.perf_counter() - began, resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def _class_data_sharing() -> None:
    """A session's start with the class-data sharing archive against without it, alternated, medians."""
    from streamlab.lab.cds_dump import driver_archive

    try:
        archive = driver_archive()
    except Exception as exc:
        archive, why = None, str(exc)
    else:
        why = "make setup makes it"
    if archive is None:
        print(f"session start with class-data sharing: not measured (no archive: {why})")
        return
    runs = {True: [], False: []}
    for _ in range(SESSION_RUNS):
        for with_archive in (False, True):
            runs[with_archive].append(_session_start(with_archive))
    (cpu_on, wall_on), (cpu_off, wall_off) = ([statistics.median(x) for x in zip(*runs[w])] for w in (True, False))
    print(f"a lab session's start to its first query, median of {SESSION_RUNS} alternated: with the class-data "
          f"sharing archive {cpu_on:.1f} s CPU, {wall_on:.1f} s wall; "
          f"without {cpu_off:.1f} s CPU, {wall_off:.1f} s wall")
    print(f"  session start with / without the archive, CPU: {cpu_on / cpu_off:.2f}")
    print(f"  session start with / without the archive, wall: {wall_on / wall_off:.2f}")


def _mib(sizes: list[int]) -> str:
    """'812, 790, 845': byte counts in MiB."""
    return ", ".join(f"{size / 2**20:,.0f}" for size in sizes)


def _cap_change_seconds(spark) -> tuple[float | None, float]:
    """(seconds from a cap change on a running demo to the first batch that honours it, the trigger interval)."""
    from streamlab.demo import LiveDemo
    from streamlab.lab.lifecycle import new_topic

    demo = LiveDemo(spark, new_topic("bench-cap", partitions=3), rate=3_000, max_offsets=2_000, trigger_seconds=1,
                    duration=40, controls=())
    with contextlib.redirect_stdout(io.StringIO()):  # its widget box, shown as text outside a notebook
        demo.start()
    try:
        deadline = time.monotonic() + 60
        while len([b for b in demo.history if b["rows"]]) < 4 and time.monotonic() < deadline:
            time.sleep(0.2)
        demo.set("cap", 300)
        while demo.cap_honoured_after() is None and time.monotonic() < deadline + 30:
            time.sleep(0.2)
        return demo.cap_honoured_after(), demo.settings["trigger_seconds"]
    finally:
        demo.stop()


def _notebook_seconds(path: str) -> float:
    """Seconds to run a notebook top to bottom as Restart & Run All does (its file is not changed)."""
    import tempfile

    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="streamlab-bench-") as tmp:
        started = time.monotonic()
        NotebookClient(nb, timeout=900, allow_errors=True, kernel_name="python3",
                       extra_arguments=["--IPKernelApp.log_level=ERROR"],
                       resources={"metadata": {"path": tmp}}).execute()
        return time.monotonic() - started


def _latency(spark) -> float | None:
    """Print the median and p99 latency of both triggers and their ratio; return the ratio."""
    from streamlab.observe import latency

    result = latency.compare(spark, seconds=10)
    for run in result.runs:
        print(f"end-to-end latency, {run.label}: median {run.median():,.0f} ms, p99 {run.percentile(99):,.0f} ms "
              f"({len(run.points)} records)")
    ratio = result.ratio()
    print(f"  micro-batch / Real-time Mode median latency: {ratio:.1f}" if ratio else "  no latency measured")
    return ratio


DELTA_RECORDS, DELTA_BATCHES = 50_000, 10
DELTA_RATE, DELTA_INTERVALS = 200, (1, 10)  # a minute of a 200 rec/s stream, at two trigger intervals


def _stream_seconds(spark, topic: str, bootstrap: str, per_batch: int, fmt: str, path: str) -> float:
    """Seconds for an availableNow query to write the whole topic to `path` with format `fmt`, `per_batch` records
    a micro-batch (maxOffsetsPerTrigger), from a fresh checkpoint."""
    df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", per_batch).load()
          .selectExpr("topic", "partition", "offset", "cast(cast(value AS string) AS long) AS id"))
    start = time.perf_counter()
    (df.writeStream.format(fmt).option("checkpointLocation", f"{path}-checkpoint").trigger(availableNow=True)
     .start(path).awaitTermination())
    return time.perf_counter() - start


def _delta(spark, bootstrap: str) -> None:
    """Delta Lake (module 10): its streaming sink against the file sink (Parquet) on the same stream, a MERGE batch
    against an append batch, and the files a minute of a stream leaves at two trigger intervals, before and after
    OPTIMIZE."""
    import tempfile

    from delta.tables import DeltaTable

    from streamlab.lab import topics
    from streamlab.lab.jars import DELTA_VERSION
    from streamlab.lab.producer import produce
    from streamlab.lakehouse import delta_ready, file_count, merge_batch

    if not delta_ready():
        print("Delta Lake: not set up (run make setup): the lakehouse figures cannot be measured")
        return
    folder = tempfile.mkdtemp(prefix="streamlab-bench-delta-")
    made = [topics.create_topic(topics.unique_name(p), 2, bootstrap) for p in ("bench-delta", "bench-files")]
    try:
        rows, minute = made
        produce(rows, DELTA_RECORDS, key_fn=str, value_fn=str, bootstrap=bootstrap, progress=False)
        per_batch = DELTA_RECORDS // DELTA_BATCHES
        for fmt in ("delta", "parquet"):  # a warm-up of each: class loading is not what is compared
            _stream_seconds(spark, rows, bootstrap, DELTA_RECORDS, fmt, f"{folder}/warm-{fmt}")
        delta_s = _stream_seconds(spark, rows, bootstrap, per_batch, "delta", f"{folder}/delta")
        files_s = _stream_seconds(spark, rows, bootstrap, per_batch, "parquet", f"{folder}/parquet")
        print(f"Delta Lake {DELTA_VERSION}, {DELTA_RECORDS:,} records from Kafka in {DELTA_BATCHES} micro-batches: "
              f"Delta sink {DELTA_RECORDS / delta_s:,.0f} rec/s, file sink (Parquet) {DELTA_RECORDS / files_s:,.0f} "
              "rec/s")
        print(f"  Delta sink / file sink write rate: {files_s / delta_s:.2f}")

        def frame(first: int):
            return spark.range(first, first + BATCH).selectExpr("'t' AS topic", "cast(id % 2 AS int) AS partition",
                                                                "id AS offset", "id")

        merge_path, append_path = f"{folder}/merge", f"{folder}/append"
        for path in (merge_path, append_path):
            frame(0).write.format("delta").save(path)
            merge_batch(frame(BATCH), path)  # a warm-up MERGE on each
        merges, appends = [], []
        for i in range(3):  # half of each MERGE batch updates rows already there, half inserts new ones
            start = time.perf_counter()
            merge_batch(frame((i + 1) * BATCH + BATCH // 2), merge_path)
            merges.append(time.perf_counter() - start)
            start = time.perf_counter()
            frame((i + 2) * BATCH).write.format("delta").mode("append").save(append_path)
            appends.append(time.perf_counter() - start)
        merge_ms, append_ms = statistics.median(merges) * 1000, statistics.median(appends) * 1000
        print(f"a batch of {BATCH:,} rows into a Delta table (median of 3): MERGE (deduplicated, half updates) "
              f"{merge_ms:,.0f} ms, plain append {append_ms:,.0f} ms")
        print(f"  MERGE batch / append batch time: {merge_ms / append_ms:.2f}")

        produce(minute, 60 * DELTA_RATE, key_fn=str, value_fn=str, bootstrap=bootstrap, progress=False)
        counts = {}
        for interval in DELTA_INTERVALS:  # the batches a live stream at DELTA_RATE rec/s makes at this trigger
            path = f"{folder}/minute-{interval}"
            _stream_seconds(spark, minute, bootstrap, DELTA_RATE * interval, "delta", path)
            before = file_count(path)
            DeltaTable.forPath(spark, path).optimize().executeCompaction()
            counts[interval] = (before, file_count(path))
        short, long = DELTA_INTERVALS
        print(f"a minute of a {DELTA_RATE} rec/s stream (2 partitions) into Delta: "
              + ", ".join(f"trigger {i} s {b} files ({60 // i} batches), {a} after OPTIMIZE"
                          for i, (b, a) in counts.items()))
        print(f"  files per minute, trigger {short} s / {long} s: {counts[short][0] / counts[long][0]:.1f}; "
              f"after OPTIMIZE: {counts[short][1] / counts[long][1]:.1f}")
    finally:
        topics.delete_topic(*made, bootstrap=bootstrap)
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    """Measure and print the benchmark ratios; stop the lab's broker at the end if the bench started it."""
    from streamlab.lab.broker import already_running, broker_port, stop_broker

    ran_before = already_running()
    try:
        return _measure()
    finally:
        if not ran_before:
            stop_broker("kafka", broker_port())


def _measure() -> int:
    """Every row of the benchmark, in order."""
    import streamlab
    from streamlab.lab.machine import interrupt_on_termination

    interrupt_on_termination()  # a `kill` mid-row stops what the row started (a check's sandboxed kernel, its JVM)
    from streamlab import offline
    from streamlab.lab import topics
    from streamlab.lab.broker import broker_port, data_dir, ensure_broker, stop_broker
    from streamlab.lab.producer import produce

    cold, warm = _broker_start_seconds()
    from streamlab.lab.jars import KAFKA_VERSION

    print(f"Apache Kafka {KAFKA_VERSION} start to ready: cold {cold:.1f} s (format + start), "
          f"warm {warm:.1f} s")
    print(f"  cold / warm start: {cold / warm:.2f}")
    _class_data_sharing()

    spark, bootstrap = streamlab.setup()
    if streamlab.engine(spark) != "connector":
        print("the connector is not set up (run make setup): the connector figures cannot be measured")
        return 1
    topic = topics.create_topic(topics.unique_name("bench"), 2, bootstrap)
    noida = ensure_broker("noida", NOIDA_PORT)
    noida_topic = topics.create_topic(topics.unique_name("bench"), 2, noida)
    try:
        produce(topic, RECORDS, bootstrap=bootstrap, progress=False)
        produce(noida_topic, RECORDS, bootstrap=noida, progress=False)
        raw = _raw_consumer_seconds(topic, bootstrap, RECORDS)
        conn = _read_seconds(spark, "kafka", topic, bootstrap)
        offline.register(spark)
        off = _read_seconds(spark, offline.OFFLINE_NAME, noida_topic, noida)
        print(f"read {RECORDS:,} records: kafka-python consumer {RECORDS / raw:,.0f} rec/s, Spark's connector "
              f"{RECORDS / conn:,.0f} rec/s, offline engine (on noida-db) {RECORDS / off:,.0f} rec/s")
        print(f"  connector / raw consumer read rate: {raw / conn:.2f}")
        print(f"  offline engine / connector read rate: {conn / off:.2f}")
        sink_s, producer_s = _write_seconds(spark, bootstrap)
        print(f"write {RECORDS:,} records: kafka-python producer {RECORDS / producer_s:,.0f} rec/s, "
              f"connector's sink {RECORDS / sink_s:,.0f} rec/s")
        print(f"  sink / raw producer write rate: {producer_s / sink_s:.2f}")
        kafka_ms, rate_ms = _per_batch_ms(spark, topic, bootstrap)
        print(f"median batch of {BATCH:,} rows: connector {kafka_ms:.0f} ms, built-in rate source {rate_ms:.0f} ms")
        print(f"  kafka batch / rate batch time: {kafka_ms / rate_ms:.2f}")
        checkpoint = _checkpoint_cpu(spark, bootstrap)
        print(f"driver CPU per micro-batch of 50 rows (checkpoint CPU): Spark's default "
              f"checkpoint file manager {1000 * checkpoint['default']:.0f} ms, the lab's (FileSystem API) "
              f"{1000 * checkpoint['lab']:.0f} ms")
        print(f"  checkpoint CPU, lab / default file manager: {checkpoint['lab'] / checkpoint['default']:.2f}")
    finally:
        topics.delete_topic(topic, bootstrap=bootstrap)
        topics.delete_topic(noida_topic, bootstrap=noida)
        stop_broker("noida", NOIDA_PORT)
    honoured, trigger = _cap_change_seconds(spark)
    if honoured is None:
        print("cap change: no batch honoured the new cap within 30 s")
    else:
        print(f"cap change 2,000 -> 300 on a running demo (trigger {trigger:g} s): the first batch within the new cap "
              f"was planned {honoured:.1f} s later")
        print(f"  cap change to honoured, in trigger intervals: {honoured / trigger:.2f} (goal: at most 1.5)")
    _latency(spark)
    _delta(spark, bootstrap)
    streamlab.cleanup(spark)
    spark.stop()
    broker_pid = data_dir(broker_port(), "kafka") / "broker.pid"
    # Three runs each, alternated, and the medians: one run's peak depends on when the collectors happened to run.
    labs, bares = [], []
    for _ in range(MEMORY_RUNS):
        labs.append(_peak_of(LAB, [int(broker_pid.read_text())] if broker_pid.is_file() else []))
        bares.append(_peak_of(BARE_SPARK))
    lab_peak, bare = statistics.median(labs), statistics.median(bares)
    print(f"peak memory, same small job, median of {MEMORY_RUNS}: the lab (broker + Spark + Python) "
          f"{lab_peak / 2**20:,.0f} MiB, a bare local SparkSession {bare / 2**20:,.0f} MiB "
          f"(runs: lab {_mib(labs)}; bare {_mib(bares)})")
    print(f"  lab / bare Spark memory: {lab_peak / bare:.2f}")
    native: dict[str, float] = {}
    try:
        from grader import timing
    except ImportError:
        print("grading: grader.timing is not available")
    else:
        # What a learner waits for: "Check my work" against Restart & Run All of the same notebook, every module
        # (module 9's setup starts the cluster: it is left out here).
        from grader.course import assignments

        for module in (m for m in assignments() if m != "09-cluster-failures"):
            path = f"notebooks/{module}/{module}.ipynb"
            if not os.path.exists(path):
                continue
            run_s, check_s = timing(path)
            native[path] = run_s
            print(f"{module}: Restart & Run All {run_s:.0f} s, Check my work {check_s:.0f} s")
            print(f"  {module} check / run time: {check_s / run_s:.2f}")
    _cluster(lab_peak, RECORDS / conn)
    _containers(native)
    from bench.workshop import workshop_section

    workshop_section()  # a hub for a room: start, first login to first batch, memory per learner, grading rate
    return 0


# On the cluster (a child process: its SparkContext is a spark:// one): a batch read on two executors, then the
# time from kill -9 of partition 0's leader to the end of the first batch, planned after the kill, that read
# partition 0 past where it was.
CLUSTER_WORK = """
import datetime, json, os, threading, time
import streamlab
from kafka import KafkaProducer
from bench import RECORDS, _read_seconds
from streamlab.lab import cluster, topics
from streamlab.lab.producer import produce
s, bootstrap = streamlab.setup(cluster=True)
topic = streamlab.new_topic("bench-cluster", 2)
produce(topic, RECORDS, bootstrap=bootstrap, progress=False)
read = _read_seconds(s, "kafka", topic, bootstrap)
live = streamlab.new_topic("bench-kill", 2)
stop = threading.Event()
def feed():
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5)
    i = 0
    while not stop.is_set():
        producer.send(live, str(i).encode(), partition=i % 2); i += 1; time.sleep(0.005)
    producer.close(timeout=10)
threading.Thread(target=feed, daemon=True).start()
timeouts = @TIMEOUTS@  # Spark's defaults ({}), or module 9's (streamlab.delivery.failover.UNCLEAN_TIMEOUTS)
q = (s.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", live)
     .options(**timeouts).load().writeStream.format("noop").trigger(processingTime="1 second").start())
def p0(event):
    end = event["sources"][0]["endOffset"]
    end = json.loads(end) if isinstance(end, str) else end
    return int(end[live]["0"])
while len([e for e in q.recentProgress if e["numInputRows"]]) < 2:
    time.sleep(0.2)
def planned_at(event):  # the wall time a batch's trigger started (when its offsets were planned)
    return datetime.datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).timestamp()
seen, node = p0(q.lastProgress), cluster.leader_of(live, 0)
killed = time.time(); cluster.kill_node(node)
after = None
while time.time() - killed < 120 and after is None:
    for event in q.recentProgress:
        # a batch planned after the kill (one planned before may still end after it, with offsets read before)
        planned = planned_at(event)
        if planned > killed and p0(event) > seen and event["numInputRows"]:
            after = planned + event["durationMs"]["triggerExecution"] / 1000 - killed  # to the batch's end
            break
    time.sleep(0.1)
cluster.start_node(node)
stop.set(); q.stop(); streamlab.cleanup(s)
with open(os.environ["STREAMLAB_BENCH_OUT"], "w") as out:
    json.dump({"read_s": read, "kill_to_batch_s": after}, out)
"""


def _cluster(lab_peak: int, local_rate: float) -> None:
    """The lab's cluster against the single lab: start to ready, peak memory, read rate, broker kill to next batch."""
    import json
    import tempfile

    from streamlab.lab import cluster

    if cluster.folder().exists():
        print(f"cluster: skipped (a cluster already runs in {cluster.folder()}: stop it for a cold start)")
        return
    began = time.perf_counter()
    cluster.start()
    start_s = time.perf_counter() - began
    print(f"cluster (3 brokers, a Spark Master and 2 Workers) start to ready: {start_s:.1f} s")
    daemons = cluster.all_pids()
    saved = dict(os.environ)
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        os.environ.update(STREAMLAB_CLUSTER="1", STREAMLAB_BENCH_OUT=out.name)
        kills = {}
        try:
            peak = _peak_of(LAB, daemons)
            # The broker kill twice: with Spark's defaults the driver's offset request to the dead leader waits out
            # default.api.timeout.ms (60 s) in some runs; module 9 teaches shorter timeouts (UNCLEAN_TIMEOUTS).
            from streamlab.delivery.failover import UNCLEAN_TIMEOUTS

            for label, timeouts in (("defaults", {}), ("module-9", UNCLEAN_TIMEOUTS)):
                _peak_of(CLUSTER_WORK.replace("@TIMEOUTS@", repr(timeouts)))
                try:
                    kills[label] = json.loads(open(out.name).read() or "{}")
                except ValueError:
                    kills[label] = {}
        finally:
            os.environ.clear()
            os.environ.update(saved)
            print(cluster.stop())
        found = kills.get("defaults", {})
    print(f"peak memory, same small job: cluster lab (3 brokers, Master, 2 Workers and executors, driver) "
          f"{peak / 2**20:,.0f} MiB, single lab {lab_peak / 2**20:,.0f} MiB")
    print(f"  cluster lab / single lab memory: {peak / lab_peak:.2f}")
    if found.get("read_s"):
        rate = RECORDS / found["read_s"]
        print(f"read {RECORDS:,} records: two executors {rate:,.0f} rec/s, local[2] {local_rate:,.0f} rec/s")
        print(f"  two executors / local mode read rate: {rate / local_rate:.2f}")
    else:
        print("cluster read: not measured (the cluster run failed)")
    for label, what in (("defaults", "Spark's default timeouts"), ("module-9", "module 9's timeouts "
                                                                            "(default.api.timeout.ms 10 s)")):
        after = kills.get(label, {}).get("kill_to_batch_s")
        if after is not None:
            print(f"  broker kill -9 (partition 0's leader) to the end of the first batch planned after it that read "
                  f"it, {what}: {after:.1f} s")
        else:
            print(f"  broker kill to next batch, {what}: no batch read partition 0 within 120 s")


def _containers(native: dict[str, float]) -> None:
    """The compose lab on podman (tests/docker/measure.py): image size, cold/warm build, up, a module's Run All.

    Only where the engine can be had (Debian, root); STREAMLAB_BENCH_CONTAINERS=0 skips it (a cold build takes
    minutes)."""
    from streamlab.settings import settings

    if not settings.bench_containers:
        print("containers: skipped (STREAMLAB_BENCH_CONTAINERS=0)")
        return
    container_measure().run(native)


def container_measure():
    """tests/docker/measure.py, imported as make bench imports it (the tests' folders are no packages)."""
    from pathlib import Path

    sys.path.insert(0, str(ROOT / "tests" / "docker"))
    import measure

    return measure
