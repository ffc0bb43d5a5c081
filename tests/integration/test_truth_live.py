"""Issue 15's corrections that a live run can prove, on Spark's connector against the lab's Kafka broker: the memory
myth, who checks `kafka.bootstrap.servers`, `once` without a Python warning, and where the DStreams proof puts its
settings. Each test cites the line of Spark 4.2.0's source (the artifacts' -sources.jar on Maven Central; for
spark-streaming and spark-streaming-kafka-0-10, which publish none for 4.2.0, the released class files' line numbers)
or PySpark 4.2.0 that decides it."""
from __future__ import annotations

import warnings

import pytest
from support import wait_for


def test_an_uncapped_map_only_batch_does_not_hold_the_burst_a_collecting_one_does(spark, topic):
    # A Kafka task streams its range record by record (KafkaBatchPartitionReader.scala:92-105); collect() gathers
    # every row on the driver first (Dataset.scala:2138-2146: plan.executeCollect(), then served to Python).
    from streamlab.observe import memory

    burst, size = topic(partitions=2, prefix="truth-memory"), 20_000
    memory.fill_burst(spark, burst, size, value_bytes=1_000)
    data_mib = size * 1_000 / memory.MIB
    streamed = memory.batch_memory(spark, burst, memory.map_only)
    collected = memory.batch_memory(spark, burst, memory.collects)
    assert streamed["batches"] == collected["batches"] == [size], "both read the burst in one uncapped batch"
    # The same batch: what the collecting sink held beyond the streaming one is the batch itself (rows and strings
    # take more room on the heap than the bytes in Kafka), while a map-only batch holds a fixed amount (consumers,
    # plans), a fraction of what collect() holds.
    assert collected["heap_mib"] - streamed["heap_mib"] > 0.8 * data_mib, (streamed, collected, data_mib)
    assert streamed["heap_mib"] < collected["heap_mib"] / 3, (streamed, collected)


def test_the_source_checks_bootstrap_servers_at_load_the_sink_does_not(spark, topic):
    # KafkaSourceProvider.scala:334-338 (validateGeneralOptions, source side only); createRelation for a batch
    # write (171-189) goes straight to KafkaWriter.write: the producer's own configuration check fails in the task.
    from streamlab.errors import first_line

    with pytest.raises(Exception, match="Option 'kafka.bootstrap.servers' must be specified"):
        spark.readStream.format("kafka").option("subscribe", "anything").load()
    with pytest.raises(Exception) as failed:
        spark.range(1).selectExpr("'x' AS value").write.format("kafka").option("topic", topic()).save()
    error = str(failed.value)
    assert "must be specified" not in first_line(failed.value) and "bootstrap.servers" in error


def test_pyspark_warns_nothing_for_trigger_once(spark, topic):
    # pyspark/sql/streaming/readwriter.py:1442-1452: trigger(once=True) calls Trigger.Once() and nothing else;
    # Trigger.java:97-102 only annotates it @Deprecated.
    from streamlab.course import claims

    source = topic(partitions=1, prefix="truth-once")
    claims.fill(source, {0: 5})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        run = claims.available_now(spark, source, {"startingOffsets": "earliest"}, trigger={"once": True})
    assert [b["rows"] for b in run["batches"]] == [5] and run["error"] is None
    assert not [w for w in seen if "once" in str(w.message).lower()], [str(w.message) for w in seen]


def test_the_dstreams_proof_puts_its_settings_on_the_spark_conf_and_restores_it(spark):
    # DStreams read spark.streaming.* from the SparkContext's SparkConf; spark.conf.set never reaches it
    # (spark-streaming-kafka-0-10_2.13 4.2.0: KafkaUtils.scala:115 builds
    # DefaultPerPartitionConfig(ssc.sparkContext.getReadOnlyConf), PerPartitionConfig.scala:40-42 reads
    # MAX_RATE_PER_PARTITION from it; DirectKafkaInputDStream.scala:60-61 and 122-123 read initialRate and, through
    # spark-streaming's RateController.scala:90, backpressure.enabled from the same conf). Nothing in sql,
    # sql-kafka-0-10, sql-api, catalyst or core reads these keys (grep over their 4.2.0 sources jars: no hit).
    from streamlab.course import claims

    key = "spark.streaming.kafka.maxRatePerPartition"
    spark.conf.set(key, "7")
    try:
        assert spark.sparkContext.getConf().get(key) is None, "spark.conf.set should not reach the SparkConf"
    finally:
        spark.conf.unset(key)
    with claims.with_spark_conf(spark, claims.DSTREAM_SETTINGS):
        assert spark.sparkContext.getConf().get(key) == "10"
        assert spark.conf.get(key) == "10"
    assert spark.sparkContext.getConf().get(key) is None and spark.conf.get(key, None) is None


def test_stop_cancels_a_running_batch_and_the_restart_writes_its_records_again(spark, topic, bootstrap, tmp_path):
    # 05's cap-change restart. MicroBatchExecution.scala:446-459: stop() sets TERMINATED, cancels the query's job
    # group and interrupts its thread; offsets/N is written before the batch runs (offsetLog.add, 1279/1449),
    # commits/N only after it (commitLog.add, 1515). On restart the last batch has no commit (802-812): batch N runs
    # again over the same offsets, and a sink that is not idempotent writes its records twice.
    import time

    from streamlab.course import claims

    source = topic(partitions=1, prefix="truth-stop")
    claims.fill(source, {0: 10})
    checkpoint, written, slow = tmp_path / "checkpoint", [], [True]

    def sink(batch_df, batch_id):
        written.extend((batch_id, row.offset) for row in batch_df.select("offset").collect())  # a plain append
        if slow[0]:  # then a long Spark job: the one stop() cancels
            batch_df.rdd.foreachPartition(lambda rows: time.sleep(120))

    def start():
        return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", source).option("startingOffsets", "earliest").load()
                .writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint)).start())

    query = start()
    wait_for(lambda: len(written) == 10, 90, "batch 0's append")
    began = time.monotonic()
    query.stop()
    assert time.monotonic() - began < 30, "stop() waited for the batch instead of cancelling it"
    assert (checkpoint / "offsets" / "0").exists() and not (checkpoint / "commits" / "0").exists()
    slow[0] = False
    query = start()
    try:
        wait_for(lambda: (checkpoint / "commits" / "0").exists(), 90, "the restart's commit of batch 0")
    finally:
        query.stop()
    assert [w for w in written if w[0] == 0] == [(0, offset) for offset in range(10)] * 2, written


def test_sink_records_carry_the_producers_time_unless_the_topic_uses_log_append_time(spark, bootstrap):
    # KafkaWriteTask.scala:104 and 112: the record is built without a timestamp, so the producer stamps CreateTime
    # when it sends (a `timestamp` column is not read); a topic with LogAppendTime gets the broker's time instead.
    import datetime

    from streamlab.lab import topics

    create = topics.create_topic(topics.unique_name("truth-create-time"), 1, bootstrap)
    log = topics.create_topic(topics.unique_name("truth-log-time"), 1, bootstrap,
                              configs={"message.timestamp.type": "LogAppendTime"})
    try:
        row = spark.createDataFrame([("x", datetime.datetime(2001, 1, 1))], "value string, timestamp timestamp")
        now = datetime.datetime.now()
        seen = {}
        for name in (create, log):
            row.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", name).save()
            seen[name] = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                          .option("subscribe", name).load().select("timestamp", "timestampType").collect())
        assert [r.timestampType for r in seen[create]] == [0] and [r.timestampType for r in seen[log]] == [1]
        for name in (create, log):  # the time of the write, never the column's 2001
            assert abs((seen[name][0].timestamp - now).total_seconds()) < 300, seen[name]
    finally:
        topics.delete_topic(create, log, bootstrap=bootstrap)


def test_one_task_per_kafka_partition_is_the_read_stage_only(spark, topic, bootstrap, tmp_path):
    # KafkaMicroBatchStream.scala:209-228: one input partition per offset range (read stage: one task per Kafka
    # partition); a streaming aggregation shuffles into spark.sql.shuffle.partitions state partitions (stateful
    # queries run without AQE), whatever the topic's partition count. StreamExecution.scala:285: a batch's jobs run
    # in the job group named by the query's runId.
    from streamlab.course import claims

    source = topic(partitions=4, prefix="truth-stages")
    claims.fill(source, {p: 5 for p in range(4)})
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "3")
    try:
        query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                 .option("subscribe", source).option("startingOffsets", "earliest").load()
                 .groupBy("partition").count().writeStream.outputMode("complete").format("noop")
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
        query.awaitTermination(120)
        query.stop()
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    tracker = spark.sparkContext.statusTracker()
    tasks = sorted(tracker.getStageInfo(stage).numTasks for job in tracker.getJobIdsForGroup(str(query.runId))
                   for stage in tracker.getJobInfo(job).stageIds)
    assert tasks == [3, 4], f"tasks per stage of the batch: {tasks}"


def test_a_named_source_keeps_its_offsets_under_sources_slash_its_name(spark, topic, bootstrap, tmp_path):
    # StreamingUtils.scala:62-70 (getMetadataPath): a user-provided name gives <checkpoint>/sources/<name>, an
    # unnamed source sources/<i>; pyspark readwriter.py:249-275, DataStreamReader.name (4.2.0, experimental). A name
    # is refused unless spark.sql.streaming.queryEvolution.enableSourceEvolution is on (catalyst SQLConf.scala:
    # 3226-3234, internal, default false): STREAMING_QUERY_EVOLUTION_ERROR.SOURCE_NAMING_NOT_SUPPORTED.
    from streamlab.course import claims

    source = topic(partitions=1, prefix="truth-named")
    claims.fill(source, {0: 3})

    def reader(name):
        read = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", source).option("startingOffsets", "earliest"))
        return read.name(name) if name else read

    with pytest.raises(Exception, match="SOURCE_NAMING_NOT_SUPPORTED"):
        reader("orders").load()
    key, folders = "spark.sql.streaming.queryEvolution.enableSourceEvolution", {}
    spark.conf.set(key, "true")
    try:
        for name in ("orders", "payments"):
            checkpoint = tmp_path / f"checkpoint-{name}"
            query = (reader(name).load().writeStream.format("noop").option("checkpointLocation", str(checkpoint))
                     .trigger(availableNow=True).start())
            query.awaitTermination(120)
            query.stop()
            folders[name] = sorted(p.name for p in (checkpoint / "sources").iterdir())
    finally:
        spark.conf.unset(key)
    checkpoint = tmp_path / "checkpoint-unnamed"
    query = reader(None).load().writeStream.format("noop").option("checkpointLocation", str(checkpoint)) \
        .trigger(availableNow=True).start()
    query.awaitTermination(120)
    query.stop()
    folders[None] = sorted(p.name for p in (checkpoint / "sources").iterdir())
    assert folders == {"orders": ["orders"], "payments": ["payments"], None: ["0"]}, folders


def test_rates_are_reported_and_never_fed_back_into_what_a_batch_reads(spark, topic, bootstrap):
    # KafkaMicroBatchStream.scala latestOffset: without a cap (maxOffsetsPerTrigger/minOffsetsPerTrigger) the end
    # offset is the latest offset, whatever the last batch's processedRowsPerSecond (ProgressReporter reports it and
    # nothing reads it back).
    import time

    from streamlab.course import claims

    source = topic(partitions=1, prefix="truth-rates")
    claims.fill(source, {0: 200})

    def sink(batch_df, batch_id):
        batch_df.count()
        if batch_id == 0:  # a slow first batch, during which 300 more records arrive
            claims.fill(source, {0: 300})
            time.sleep(3)

    query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", source).option("startingOffsets", "earliest").load()
             .writeStream.foreachBatch(sink).start())
    try:
        wait_for(lambda: sum(p["numInputRows"] for p in query.recentProgress) >= 500, 90, "reading all 500 records")
    finally:
        query.stop()
    read = [p for p in query.recentProgress if p["numInputRows"]]
    assert [p["numInputRows"] for p in read] == [200, 300], [p["numInputRows"] for p in read]
    assert read[0]["processedRowsPerSecond"] < 100, "the first batch was meant to be slow"


def test_a_failed_file_sink_batch_deletes_the_files_its_finished_tasks_wrote(spark, topic, bootstrap, tmp_path):
    # 07's file sink and Q7. FileFormatWriter.scala:206-210: any failure of the write job calls committer.abortJob;
    # ManifestFileCommitProtocol.scala:85-105 deletes every file a finished task reported (onTaskCommit, 108-111),
    # best effort, and abortTask (151-157) the failed task's own. So files with no _spark_metadata entry come only
    # from tasks still running at the failure or from a killed process, not from tasks that finished.
    import threading
    import time

    from pyspark.sql import functions as F

    from streamlab.course import claims

    source = topic(partitions=2, prefix="truth-filesink")
    claims.fill(source, {0: 20, 1: 20})

    @F.udf("long")
    def slow_fail(partition, offset):  # partition 1's task fails 4 s in; partition 0's finishes at once
        if partition == 1:
            time.sleep(4)
            raise ValueError("boom on partition 1")
        return offset

    out, seen, done = tmp_path / "out", set(), threading.Event()

    def watch():  # every data file that ever appears in the sink's folder
        while not done.is_set():
            if out.is_dir():
                seen.update(p.name for p in out.iterdir() if p.name.startswith("part-"))
            time.sleep(0.05)

    threading.Thread(target=watch, daemon=True).start()
    query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", source)
             .option("startingOffsets", "earliest").load()
             .select(slow_fail("partition", "offset").alias("offset"))
             .writeStream.format("json").option("path", str(out)).option("checkpointLocation", str(tmp_path / "ck"))
             .start())
    try:
        with pytest.raises(Exception, match="boom on partition 1"):
            query.awaitTermination(120)
    finally:
        done.set()
        query.stop()
    assert seen, "partition 0's task should have committed its file before partition 1's failed"
    left = sorted(p.name for p in out.iterdir() if p.name.startswith("part-"))
    assert left == [], f"the aborted batch left {left} (seen while it ran: {sorted(seen)})"
    assert not list((out / "_spark_metadata").glob("[0-9]*")), "a failed batch must log no files"


def test_concurrent_sink_tasks_share_one_producer_per_configuration(spark, topic, bootstrap):
    # 07's producer. KafkaWriteTask.scala:50 (batch) and KafkaDataWriter.scala:53 (streaming) take their producer
    # from InternalKafkaProducerPool.acquire (InternalKafkaProducerPool.scala:76-91): one cached producer per
    # executor JVM and producer configuration (the cache key is the parameters), shared by every task that asks,
    # concurrent or not. The broker tells producers apart by their id (idempotence is on by default): four tasks
    # writing four partitions show one producer id; another configuration gets a producer, and an id, of its own.
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient

    from pyspark.sql import functions as F

    sink = topic(partitions=4, prefix="truth-producers")

    def write(**options):
        rows = (spark.range(400).repartition(4).select(
            F.lit(sink).alias("topic"), (F.col("id") % 4).cast("int").alias("partition"),
            F.col("id").cast("string").alias("value")))
        writer = rows.write.format("kafka").option("kafka.bootstrap.servers", bootstrap)
        for key, value in options.items():
            writer = writer.option(f"kafka.{key}", value)
        writer.save()
        assert rows.rdd.getNumPartitions() == 4

    def producer_ids() -> dict[int, set[int]]:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            state = admin.describe_producers([TopicPartition(sink, p) for p in range(4)])
        finally:
            admin.close()
        return {tp.partition: {p.producer_id for p in s.active_producers} for tp, s in state.items()}

    write()
    first = producer_ids()
    assert len(set().union(*first.values())) == 1 and all(first.values()), f"4 tasks, producers by partition: {first}"
    write(**{"linger.ms": "7"})
    second = producer_ids()
    ids = set().union(*second.values())
    assert len(ids) == 2 and all(len(s) == 2 for s in second.values()), f"another configuration: {second}"


def test_the_labs_checkpoint_file_manager_writes_the_files_spark_s_default_writes(spark, topic, bootstrap, tmp_path):
    # The lab sets spark.sql.streaming.checkpointFileManagerClass to FileSystemBasedCheckpointFileManager
    # (streamlab/lab/session.py): Spark's default, FileContextBasedCheckpointFileManager, forks `readlink` and `chmod`
    # for every checkpoint file without Hadoop's native library (CheckpointFileManager.scala:203-236 picks it). Both
    # write each log file as a temporary file renamed into place (RenameBasedFSDataOutputStream): what a learner
    # reads in a lab checkpoint must be what Spark's default leaves.
    from streamlab.course import claims
    from streamlab.lab.session import CHECKPOINT_FILE_MANAGER

    key = "spark.sql.streaming.checkpointFileManagerClass"
    assert spark.conf.get(key) == CHECKPOINT_FILE_MANAGER
    source = topic(partitions=2, prefix="truth-checkpoint-files")
    claims.fill(source, {0: 12, 1: 8})
    left = {}
    try:
        for which in ("default", "lab"):
            if which == "default":
                spark.conf.unset(key)
            else:
                spark.conf.set(key, CHECKPOINT_FILE_MANAGER)
            checkpoint = tmp_path / which
            query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                     .option("subscribe", source).option("startingOffsets", "earliest")
                     .option("maxOffsetsPerTrigger", 5).load()
                     .writeStream.format("noop").option("checkpointLocation", str(checkpoint))
                     .trigger(availableNow=True).start())
            query.awaitTermination(120)
            query.stop()
            files = sorted(str(p.relative_to(checkpoint)) for p in checkpoint.rglob("*") if p.is_file())
            # offsets/N: its version, its batch metadata (times differ between runs), then each source's offsets
            offsets = {f: (checkpoint / f).read_text().splitlines()[2:] for f in files if f.startswith("offsets/")
                       and not f.endswith(".crc")}
            left[which] = (files, offsets)
    finally:
        spark.conf.set(key, CHECKPOINT_FILE_MANAGER)
    assert left["lab"] == left["default"], left
    files = left["lab"][0]
    assert {"metadata", "offsets/0", "offsets/.0.crc", "commits/0", "commits/.0.crc", "sources/0/0"} <= set(files)
    assert not [f for f in files if f.endswith(".tmp")], files
