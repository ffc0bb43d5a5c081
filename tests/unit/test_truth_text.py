"""Issue 15's review of modules 4–8, the claims that are text: each test pins the corrected sentence (in the solution
notebook a learner reads, the quiz explanation hidden in a grading cell, or the interview pool) and the wrong one's
absence. Each cites the line of Spark 4.2.0's released source (the -sources.jar of each artifact on Maven Central;
spark-streaming and spark-streaming-kafka-0-10 publish none for 4.2.0, so their lines come from the LineNumberTable of
the released class files, `javap -l`) or PySpark 4.2.0 that decides it; the claims a cell can show live are proven
again in tests/integration/test_truth_live.py."""
from __future__ import annotations

import inspect
import json
from pathlib import Path

from streamlab.course import interview
from streamlab.offline.planner import rate_limit

SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions"


def cells(module: str) -> dict:
    """{cell id: source} of a solution notebook, e.g. cells("04"); a quiz question's markdown with its options
    lettered in the notebook's order (the cell after it shows them in each learner's, streamlab.course.quiz)."""
    from types import SimpleNamespace

    from grader.lint import written_options

    path = next(SOLUTIONS.glob(f"{module}-*/{module}-*.ipynb"))
    found, previous = {}, None
    for c in json.loads(path.read_text())["cells"]:
        found[c["id"]] = "".join(c["source"])
        listed = written_options(SimpleNamespace(cells=[SimpleNamespace(cell_type="code", source=found[c["id"]])]))
        if listed and previous is not None:
            found[previous] += "".join(f"\n- {k}) {t}" for k, t in next(iter(listed.values())).items())
        previous = c["id"] if c["cell_type"] == "markdown" else None
    return found


def text(module: str) -> str:
    return "\n".join(cells(module).values())


def asked(qid: str) -> str:
    """An interview question's options and explanation, as one text."""
    entry = next(q for q in interview.FIXED if q[0] == qid)
    return " ".join(entry[3]) + " " + entry[5]


def test_memory_myth_a_batch_holds_its_backlog_only_where_something_buffers_it():
    # Tasks stream records: KafkaBatchPartitionReader.next() fetches one record at a time from its range
    # (spark-sql-kafka-0-10_2.13/.../KafkaBatchPartitionReader.scala:92-105); collectToPython gathers every row of
    # the plan on the driver first (spark-sql_2.13/.../classic/Dataset.scala:2138-2146, plan.executeCollect()).
    c04, c05 = cells("04"), cells("05")
    assert "holds the whole backlog at once" not in c04["c31e25d6"]
    assert "where something buffers the batch" in c04["c31e25d6"]
    assert "all of it in memory at once" not in c04["2417c1f9"]
    assert "memory.batch_memory" in c04["m4-memory-code"]  # the live proof (tests/integration/test_truth_live.py)
    assert "a batch holds the whole burst in memory" not in c05["f674b103"]
    assert "if the sink\n  buffers them" in c05["bed8e755"]
    c08 = cells("08")
    assert "only if something buffers it" in c08["b8041a27"] and "tasks stream their records" in c08["792c0925"]
    assert "map-only batch needs little memory" in asked("bp-burst")
    assert "holds it in memory only if something buffers it" in asked("bp-burst")
    c03 = cells("03")["a29035b4"]
    assert "It bounds every batch, and so its memory:" not in c03
    assert "and so its memory only where\nsomething buffers the batch (a shuffle, `collect` or `toPandas` in" in c03


def test_structured_streaming_reports_its_rates_but_never_feeds_them_back():
    # How much a batch reads comes from the source's read limit, built from its options only
    # (KafkaMicroBatchStream.scala:114-123, getDefaultReadLimit from maxOffsetsPerTrigger/minOffsetsPerTrigger).
    intro = cells("04")["c31e25d6"]
    assert "*reports* its rates in every progress event" in intro
    assert "never feeds them back into how much it reads" in intro


def test_a_batch_goes_over_the_cap_once_two_shares_below_one_are_rounded_up():
    # KafkaMicroBatchStream.scala:420-422: prorate = limit * (size / total); below 1 -> ceil, else floor.
    # The real shares add up to the cap, so one share rounded up is paid back by the floors; two or more can not be.
    ends = rate_limit(10, {("t", 0): 0, ("t", 1): 0, ("t", 2): 0}, {("t", 0): 1, ("t", 1): 1, ("t", 2): 1000})
    assert sum(ends.values()) == 11  # a few small backlogs beside a large one, not many tiny partitions
    for large in (10, 99, 1000, 12345):
        one_small = rate_limit(10, {("t", 0): 0, ("t", 1): 0}, {("t", 0): 1, ("t", 1): large})
        assert sum(one_small.values()) <= 10
    assert "only many tiny partitions" not in cells("04")["68b693ac"]
    assert "a few small backlogs beside large ones" in cells("04")["68b693ac"]
    assert "1, 1 and 1,000 with a cap of 10 read 11" in cells("08")["7a5f98d6"]


def test_one_task_per_kafka_partition_is_the_read_stage_only():
    # Stages after a shuffle run spark.sql.shuffle.partitions tasks; AQE for stateless streams is on by default since
    # 4.1 (spark-catalyst_2.13/.../internal/SQLConf.scala:1057-1064, spark.sql.adaptive.streaming.stateless.enabled).
    c04 = cells("04")
    assert "read stage" in c04["e66add27"] and "spark.sql.shuffle.partitions" in c04["d4dedf4f"]
    assert "AQE" in c04["d4dedf4f"]
    assert "One Kafka partition is one task per batch" not in c04["d4dedf4f"]
    assert "spark.sql.shuffle.partitions" in asked("bp-executors")
    c03 = cells("03")["a29035b4"]
    assert "one Kafka partition is one task per batch" not in c03
    assert "one Kafka partition is one task in a batch's read stage" in c03
    sheet = cells("08")["378c6d47"]  # the schema table's partition row
    assert "one task per micro-batch (unless split)" not in sheet and "read stage" in sheet


def test_a_bigger_cap_amortises_the_per_batch_overhead_in_04_and_05_alike():
    # A batch pays fixed work once, whatever its size; the cap decides how many records share it. In
    # spark-sql_2.13/.../execution/streaming/runtime/MicroBatchExecution.scala (4.2.0), each batch of a Kafka source
    # (a SupportsAdmissionControl) times latestOffset (926-930), walCommit (987-1007: offsets/N written by
    # markMicroBatchStart, 1276-1284), queryPlanning (1192, a new IncrementalExecution) and commitOffsets (1479-1517:
    # commits/N, 1515) once; only addBatch (1236) grows with the rows.
    assert "Raising the cap would not help there" not in cells("04")["bbcd8ca4"]
    assert "spreads Spark's fixed\noverhead per batch over more records" in cells("04")["bbcd8ca4"]
    assert "spreads Spark's fixed overhead per batch over more records" in cells("05")["62d65843"]


def test_a_cap_change_restart_re_runs_a_cancelled_batch():
    # stop() cancels the running batch: MicroBatchExecution.stop() (spark-sql_2.13/.../runtime/
    # MicroBatchExecution.scala:446-459) cancels the query's job group and interrupts its thread
    # (StreamExecution.scala:500-504, interruptAndAwaitExecutionThreadTermination). offsets/N was written before the
    # batch ran (markMicroBatchStart, MicroBatchExecution.scala:1279) and commits/N is written only after it
    # (commitLog.add, 1515), so a cancelled batch leaves offsets/N without commits/N. On restart that batch is run
    # again with its planned offsets (MicroBatchExecution.scala:802-812).
    text05 = cells("05")["52ce66e1"]
    assert "no record is lost or read twice" not in text05
    assert "the restart re-runs it" in text05 and "waits for the running batch" in text05


def test_once_was_deprecated_for_three_reasons():
    # spark-sql-api_2.13/org/apache/spark/sql/streaming/Trigger.java:97-102: "better guarantee of processing,
    # fine-grained scale of batches, and better gradual processing of watermark advancement including no-data batch".
    for module, cid in (("04", "97a13701"), ("05", "b56663ad"), ("05", "32104526"), ("08", "9f28e513")):
        said = cells(module)[cid]
        assert "processing guarantee" in said and "watermark" in said, (module, cid)
    assert "That is why `once` was\ndeprecated in its favour." not in cells("04")["97a13701"]
    # 08's Q26: the right option itself gives the three reasons, not the cap alone
    q26 = cells("08")["46f19524"]
    assert "ignores maxOffsetsPerTrigger, so a large backlog becomes one huge batch" not in q26
    assert "capped batches" in q26 and "processing guarantee" in q26 and "watermarks" in q26


def test_an_executor_caches_one_producer_per_configuration_shared_by_its_tasks():
    # InternalKafkaProducerPool.scala:76-90: cache.getOrElseUpdate(paramsSeq, ...) keyed by the producer
    # configuration; every task acquiring the same parameters gets the same CachedKafkaProducer.
    text07 = text("07")
    assert "each on its own (cached) producer" not in text07
    assert "one per producer configuration, shared by its concurrent tasks" in text07


def test_a_failed_file_sink_job_deletes_its_finished_tasks_files_best_effort():
    # FileFormatWriter.scala:207-210 calls committer.abortJob on failure; ManifestFileCommitProtocol.scala:85-105
    # deletes every pendingCommitFiles entry (the files of tasks that committed), "best effort".
    text07 = text("07")
    assert "a task that finished before another task of its batch\n  failed keeps its file" not in text07
    assert "deletes, best effort, the files of the tasks that had finished" in text07
    assert "escaped the abort's best-effort cleanup" in text07


def test_sink_records_carry_the_producers_time_unless_the_topic_uses_log_append_time():
    # KafkaWriteTask.scala:104 builds ProducerRecord(topic, partition, key, value): no timestamp, so the producer
    # stamps its own; a LogAppendTime topic has the broker overwrite it.
    assert "unless the topic sets\n`message.timestamp.type=LogAppendTime`" in text("07")


def test_pyspark_issues_no_python_warning_for_once():
    # pyspark/sql/streaming/readwriter.py:1442-1452 (PySpark 4.2.0): trigger(once=True) only calls Trigger.Once().
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    assert "warn" not in inspect.getsource(DataStreamWriter.trigger)
    once_cell = cells("08")["2eae3ac1"]
    assert 'simplefilter("ignore")' not in once_cell and "no Python warning for once" in once_cell


def test_the_dstreams_proof_sets_the_spark_conf_a_dstreams_job_reads():
    # No spark.streaming.backpressure/kafka/receiver key is read anywhere in sql, sql-kafka-0-10, sql-api, catalyst
    # or core (grep over their 4.2.0 sources jars: no hit). DStreams read them from the SparkContext's SparkConf,
    # which spark.conf.set never reaches (spark-streaming-kafka-0-10_2.13 4.2.0, lines from its class files):
    # KafkaUtils.scala:115 builds DefaultPerPartitionConfig(ssc.sparkContext.getReadOnlyConf), whose maxRate is
    # conf.get(MAX_RATE_PER_PARTITION) (PerPartitionConfig.scala:40-42; the key at package.scala:57-61);
    # DirectKafkaInputDStream.scala:60-61 reads spark.streaming.backpressure.initialRate from the same conf, and
    # 122-123 asks RateController.isBackPressureEnabled(ssc.conf) (spark-streaming_2.13: RateController.scala:90,
    # conf.get(BACKPRESSURE_ENABLED)); receivers cap at RateLimiter.scala:38-41, conf.get(RECEIVER_MAX_RATE)
    # (StreamingConf.scala:27-42 defines the three spark.streaming.backpressure/receiver keys).
    assert "claims.with_spark_conf(spark, claims.DSTREAM_SETTINGS)" in cells("08")["93abddac"]
    assert "on the running SparkContext's own `SparkConf`" in cells("08")["49ba5f3f"]


def test_a_key_column_alone_does_not_keep_per_key_order():
    # KafkaWriter.scala:72-73: each RDD partition, as it comes, becomes one KafkaWriteTask (no repartition by key);
    # the tasks share the executor's cached producer (InternalKafkaProducerPool.scala:76-90).
    c08 = cells("08")
    assert "**per-key order** — as long as the partition count does not change" not in c08["65b7b335"]
    assert "not per-key order by itself" in c08["65b7b335"]
    assert "sortWithinPartitions" in c08["4305947e"] and "replayed batch writes its records again" in c08["038b56ec"]
    assert "does not route rows to tasks by key" in c08["038b56ec"]
    assert "replayed batch writes its records again" in asked("sink-order")


def test_only_the_source_checks_bootstrap_servers_at_load():
    # KafkaSourceProvider.scala:334-338 (validateGeneralOptions, reached from the source's validateStreamOptions /
    # validateBatchOptions only); createSink (160-169) and the batch createRelation (171-189) do not check it.
    why = asked("setup-bootstrap")
    assert "refuses to start" not in why
    assert "The source checks it at `load()`" in why and "the sink does not check it" in why


def test_max_records_per_partition_drops_every_preferred_location():
    # KafkaOffsetRangeCalculator.scala:53-61: preferred locations only when minPartitions is satisfied AND
    # maxRecordsPerPartition is empty.
    assert "whenever `maxRecordsPerPartition` is set, split or not, no range of the batch gets a preferred executor" \
        in cells("05")["ff64b9d8"]
    # Module 1 said an unsplit range prefers an executor; with maxRecordsPerPartition set, getRanges takes the else
    # branch (KafkaOffsetRangeCalculator.scala:62-110) and every range, even one left whole, is rebuilt by
    # getDividedPartition with preferredLoc None (line 126).
    c01 = cells("01")
    assert "an unsplit range *prefers* one" not in c01["ce22c1a8"]
    assert "whenever\n`maxRecordsPerPartition` is set, split or not, no range gets one either" in c01["ce22c1a8"]
    # The recap's version of it now lives in the collapsed "Going deeper" section beside the rule (teaching pass).
    assert "neither has any batch once `maxRecordsPerPartition` is set, split or not" in c01["ce22c1a8"]
    assert "an unsplit range *prefers* one" not in text("01")


def test_realtime_mode_is_what_4_2_allows_and_continuous_processing_is_the_legacy_note():
    # Module 5's section and recap, the interview pool, and 08's trigger table, self-test and Q36 (08 is searched as a
    # whole: its cells move). Spark 4.2.0 sources:
    # - duration: a checkpoint interval of at least spark.sql.streaming.realTimeMode.minBatchDuration, 5000 ms
    #   (catalyst SQLConf.scala:3537-3541), checked at start (classic/StreamingQueryManager.scala:194-205); each task
    #   reads until the batch's end time (execution/datasources/v2/RealTimeStreamScanExec.scala:64-79) and offsets are
    #   logged only when it ends (runtime/MicroBatchExecution.scala:1278-1293, 1415-1455);
    # - update only: catalyst UnsupportedOperationChecker.scala:643-646, called from ResolveWriteToStream.scala:55-57;
    # - Kafka the one built-in source: MicroBatchExecution.scala:341-349 (SupportsRealTimeMode or
    #   INPUT_STREAM_NOT_SUPPORTED), KafkaMicroBatchStream.scala:64;
    # - sinks and operators on an allowlist: RealTimeModeAllowlist.scala:28-33 (console, foreach, Kafka; the memory
    #   sink is MemorySink, classic/DataStreamWriter.scala:237, not the allowed ContinuousMemorySink; foreachBatch is
    #   refused at classic/DataStreamWriter.scala:311-316) and 35-60 (no aggregate or deduplicate exec), checked at
    #   MicroBatchExecution.scala:1220-1225;
    # - AQE switched off with a warning, not refused: MicroBatchExecution.scala:588-590;
    # - rate options refused: KafkaMicroBatchStream.scala:230-255;
    # - continuous processing: Trigger.Continuous, @since 2.3.0 (sql-api Trigger.java:132-178).
    c05 = cells("05")
    section, after, recap = c05["69d40c71"], c05["646ec07f"], c05["bed8e755"]
    # Truth review three #14: 5 s is the default of a public setting, not a fixed minimum.
    assert "The duration is **how often the query checkpoints**, not a latency target; its minimum is 5 s by default" \
        in section and "`spark.sql.streaming.realTimeMode.minBatchDuration`" in section
    assert "5 s is the shortest allowed" not in section
    # Truth review three #8: Real-time Mode refuses Python operators too (RealTimeModeAllowlist.scala:35-60 lists
    # no BatchEvalPythonExec, ArrowEvalPythonExec, MapInPandasExec or PythonMapInArrowExec).
    assert "Python and pandas UDFs and `mapInPandas` are refused" in after
    assert "**Stateless queries in 4.2**: projections, filters, unions, broadcast joins" not in after
    for said in ("Output mode `update` only", "Kafka is Spark's one built-in source for it",
                 "`foreachBatch` and the memory sink are refused", "An aggregation or\n  `dropDuplicates` is refused",
                 "Adaptive Query Execution is switched off for the query (a warning, not an error)",
                 "`maxOffsetsPerTrigger`, `minOffsetsPerTrigger`, `maxTriggerDelay`, `minPartitions` and\n"
                 "  `endingTimestamp` are refused", "**A task slot for every partition at once**",
                 "**At-least-once** into Kafka", "is the legacy route to\nthis latency; Spark's guide now points to "
                 "Real-time Mode instead"):
        assert said in after, said
    assert "AQE is refused" not in after and "exactly-once" not in after
    assert "the duration is a checkpoint interval" in recap
    interview_ids = {q[0] for q in interview.FIXED}
    assert {"rate-realtime-duration", "rate-realtime-refused", "rate-realtime-slots", "rate-realtime-sink"} \
        <= interview_ids
    keys = {q[0]: q[4] for q in interview.FIXED}
    assert keys["rate-realtime-duration"] == "b" and "how often the query checkpoints" in asked("rate-realtime-duration")
    assert keys["rate-realtime-refused"] == "a" and "Stateless Kafka queries in update mode only" \
        in asked("rate-realtime-refused")
    assert keys["rate-realtime-slots"] == "c" and "a task slot for every partition at once" in asked("rate-realtime-slots")
    assert keys["rate-realtime-sink"] == "c" and "no, at-least-once as with micro-batches" in asked("rate-realtime-sink")
    assert keys["rate-continuous"] == "c" and "legacy" in asked("rate-continuous")
    assert "Spark's guide points to Real-time Mode" in asked("rate-continuous")
    text08 = text("08")
    assert "how often it **checkpoints**, not a latency target" in text08 and "**no: rate options are refused**" in text08
    assert "legacy: map-like queries only, at-least-once; Spark's guide points to Real-time Mode instead" in text08
    assert "continuous: millisecond latency for map-like queries" not in text08  # the old Q27 option a
    assert "`continuous` without rate limits." not in text08  # the old recap: continuous as the low-latency route


def test_changing_a_subscription_says_generally_not_allowed_and_names_sources():
    # Named sources: pyspark/sql/streaming/readwriter.py:249-275 (DataStreamReader.name, 4.2.0, experimental);
    # SQLConf.scala:3226-3233 (spark.sql.streaming.queryEvolution.enableSourceEvolution: sources "added, removed,
    # or reordered without losing state", default false).
    said = cells("06")["m6-059"]
    assert '"generally not allowed"' in said and "name(" in said and "enableSourceEvolution" in said
    # a name is refused with the setting off (test_truth_live: SOURCE_NAMING_NOT_SUPPORTED), so the text says so
    assert "SOURCE_NAMING_NOT_SUPPORTED" in said and "`sources/orders`" in said


def test_group_id_hash_is_of_the_sources_checkpoint_folder():
    # KafkaSourceProvider.scala:766-768: s"${groupIdPrefix}-${UUID.randomUUID}-${metadataPath.hashCode}", with
    # metadataPath = $checkpointRoot/sources/<id> (spark-sql_2.13/.../utils/StreamingUtils.scala:51-68).
    assert "hash of the checkpoint path" not in cells("08")["7a5f98d6"]
    assert "`<checkpoint>/sources/<i>`" in cells("08")["7a5f98d6"]


def test_the_interview_pool_asks_about_what_is_new_since_3x():
    # KafkaSourceProvider.scala:569-582 (startingTimestamp, ...ByTimestampStrategy); KafkaSourceProvider.scala:550-557
    # (the scan's offsetOutOfRange/dataLoss metrics); StreamingQueryCheckpointMetadata.scala:62-76 (4.2's missing
    # metadata check); AsyncProgressTrackingMicroBatchExecution.scala:253-295 (sinks and triggers it accepts).
    ids = {q[0] for q in interview.FIXED}
    assert {"offsets-by-time", "offsets-data-loss-metrics", "offsets-missing-metadata", "source-kip848",
            "sink-dedup-watermark", "sink-async-progress", "sink-open-transaction"} <= ids
    assert "STREAMING_CHECKPOINT_MISSING_METADATA_FILE" in asked("offsets-missing-metadata")
    assert "noop, console and memory" in asked("sink-async-progress")


def test_the_new_live_cells_are_in_their_modules():
    # Each cell proves its point live when the notebook runs (tests/notebooks/test_modules.py).
    c02, c07, c08 = cells("02"), cells("07"), cells("08")
    assert "startingOffsetsByTimestampStrategy" in c02["m2-bytime-code"]
    assert 'failOnDataLoss="false"' in c02["m2-dataloss-code"] and "unlink()" in c02["m2-metadata-code"]
    assert "dropDuplicatesWithinWatermark" in c07["m7-dedup-code"]
    assert "OpenTransaction" in c07["m7-open-tx-code"] and "asyncProgressTrackingEnabled" in c07["m7-async-code"]
    assert "assign()" in c08["m8-kip848-code"]


def quiz(module: str, n: int) -> tuple[str, str, str]:
    """(question markdown, the key, the hidden explanation) of quiz question n of a solution notebook."""
    import re

    c = cells(module)
    found = re.search(r'quiz\.reveal\(q\d+, "(\w)", (".*?"), name=', c[f"m{int(module)}-q{n}-check"])
    return c[f"m{int(module)}-q{n}-question"], found.group(1), json.loads(found.group(2))


def option(question: str, letter: str) -> str:
    """The text of one option of a question ("a) …" or "- a) …", with its continuation lines), on one line."""
    import re

    options = re.split(r"^(?:- )?([a-d])\) ", question, flags=re.M)
    return " ".join(dict(zip(options[1::2], options[2::2]))[letter].split())


def test_the_quizzes_ask_about_what_is_new_since_3x():
    # 02 Q9: startingTimestamp comes before startingOffsetsByTimestamp and startingOffsets, and the strategy defaults
    # to ERROR (KafkaSourceProvider.scala:670-698, line 680); each partition starts at OffsetSpec.forTimestamp's
    # offset, and with no match ERROR throws "No offset matched ..." while LATEST starts at latest
    # (KafkaOffsetReaderAdmin.scala:186, 225-247).
    question, key, why = quiz("02", 9)
    assert key == "c" and "at 120" in option(question, "c") and "fails" in option(question, "c")
    assert "startingOffsetsByTimestampStrategy=latest" in option(question, "c") and "precedence" in why
    # 02 Q10: the scan's custom metrics (KafkaSourceProvider.scala:541-557, KafkaBatchPartitionReader.scala:173-182);
    # a task that meets missing offsets logs, counts one dataLoss and adds the skipped offsets to offsetOutOfRange
    # (consumer/KafkaDataConsumer.scala:434-455, 770-781); a progress event's Kafka metrics are only the offsets
    # behind latest (KafkaMicroBatchStream.scala:512-527).
    question, key, why = quiz("02", 10)
    assert key == "c" and "SQL" in option(question, "c") and "not in `lastProgress`" in option(question, "c")
    assert "offsets behind latest" in why
    # 07 Q9: dropDuplicatesWithinWatermark keeps each key until the watermark passes its event time plus the delay
    # (statefulOperators.scala:1509, 1524); plain dropDuplicates evicts only when the event time is in its key
    # (statefulOperators.scala:577-586, 603-613, 1438-1440).
    question, key, why = quiz("07", 9)
    assert key == "c" and "dropDuplicatesWithinWatermark" in option(question, "c") and "forever" in why
    # 07 Q10: the driver lists latest offsets with the reader's isolation level (KafkaOffsetReaderAdmin.scala:74-84,
    # 300-306): with read_committed that is the last stable offset.
    question, key, why = quiz("07", 10)
    assert key == "b" and "stays at 30" in option(question, "b") and "last stable offset" in why
    # 07 Q11: Kafka, noop, console and memory sinks; processing-time triggers only (the default trigger is
    # ProcessingTime(0), classic/DataStreamWriter.scala:442); no state (AsyncProgressTrackingMicroBatchExecution.scala:
    # 253-295, 298-306); offsets written only once the interval (default 1000 ms, line 324) has passed
    # (checkpointing/AsyncOffsetSeqLog.scala:102-113), commits only for those batches (line 202).
    question, key, why = quiz("07", 11)
    assert key == "d" and "Kafka, noop, console or memory" in option(question, "d") and "no state" in option(question, "d")
    assert "availableNow" in why and "foreachBatch" in why
    # 08 Q37: the default path's driver uses the AdminClient (KafkaOffsetReader.scala:164-171; the deprecated consumer
    # path is opt-in), and each task's consumer assign()s its partition (consumer/KafkaDataConsumer.scala:130-139)
    # under a generated group id it never commits to (KafkaSourceProvider.scala:735-746).
    question, key, why = quiz("08", 37)
    assert key == "c" and "assign()" in option(question, "c") and "nobody joins a group" in option(question, "c")
    # 08 Q38: StreamingQueryCheckpointMetadata.scala:60-80 (4.2 refuses offsets/commits without metadata, under
    # spark.sql.streaming.checkpoint.verifyMetadataExists.enabled, true by default); StreamingErrors.scala:56-61.
    question, key, why = quiz("08", 38)
    assert key == "a" and "STREAMING_CHECKPOINT_MISSING_METADATA_FILE" in option(question, "a")
    assert "verifyMetadataExists" in why


def test_module_9_says_every_range_loses_its_preferred_executor_on_the_split_path():
    # KafkaOffsetRangeCalculator.scala (4.2.0) 55-62: only the plain branch calls getLocation; every range of the
    # other branch comes out of getDividedPartition (parts = 1 for a range left whole), whose line 126 builds
    # KafkaOffsetRange(tp, startOffset, endOffset, None).
    text09 = text("09")
    assert "give split ranges none" not in text09 and "110-125" not in text09
    assert "every range of the batch, split or left whole" in text09
    assert "leave every range of\n  the batch without one, split or not" in text09
