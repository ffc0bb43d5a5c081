"""Interview practice: a pool of questions on the whole course, fresh draws with varied numbers, a score by topic.

The pool is plain data: `FIXED` holds questions written out (id, topic, question, four options, key, why), and
`NUMBERED` holds small functions that make a question from a random generator, so each draw asks with other
numbers and computes its own key. `draw()` picks a set without duplicates, `summary()` scores it by topic and
names the module to reread, and `Interview` asks one question at a time in a widget.
"""
from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field

from .choices import LETTERS, choices

# topic -> (module number, title, notebook to reread)
TOPICS = {
    "setup": (0, "setup", "00-setup"),
    "source": (1, "Kafka source internals", "01-source-internals"),
    "offsets": (2, "offsets and the checkpoint", "02-offset-tracking"),
    "lag": (3, "consumer lag", "03-consumer-lag"),
    "backpressure": (4, "backpressure", "04-backpressure"),
    "rate": (5, "rate limiting and triggers", "05-rate-limiting"),
    "multitopic": (6, "multi-topic reads", "06-multi-topic"),
    "sinks": (7, "sinks and exactly-once", "07-sinks-exactly-once"),
    "cluster": (9, "a cluster that fails", "09-cluster-failures"),
    "lakehouse": (10, "the lakehouse: Kafka into Delta", "10-lakehouse"),
}


@dataclass
class Question:
    """One question as asked: its text, four options, the key letter, the explanation and any numbers it used."""

    id: str
    topic: str
    text: str
    options: list
    key: str
    why: str
    kind: str = ""  # the generator's name for a numbered question, "" for a written-out one
    numbers: dict = field(default_factory=dict)


# (id, topic, question, [a, b, c, d], key, why)
# The options of a question have comparable length and form, the wrong ones are the myths the course corrects, and
# the reason stays in `why` (`python -m grader lint` prints how often blind strategies are right on the pool).
FIXED = [
    ("setup-connector", "setup", "What must be on Spark's classpath for `format(\"kafka\")` to work?",
     ["nothing extra: the Kafka source is bundled in PySpark's own jars",
      "kafka-clients alone, the jar Kafka's Java consumers are built on",
      "the spark-sql-kafka-0-10 package that matches Spark's version",
      "kafka-python, installed in the driver's virtual environment"], "c",
     "The Kafka source and sink are a separate artifact, spark-sql-kafka-0-10 for your Spark and Scala version (it "
     "brings kafka-clients along); without it Spark cannot find the data source `kafka`. kafka-clients alone holds no "
     "Spark data source, and Spark never uses kafka-python."),
    ("setup-bootstrap", "setup", "Which option does every Kafka source and sink need?",
     ["kafka.group.id", "startingOffsets", "subscribe (or subscribePattern)", "kafka.bootstrap.servers"], "d",
     "It is how they find the cluster. The source checks it at `load()` (\"Option 'kafka.bootstrap.servers' must be "
     "specified\"); the sink does not check it: without it the write fails later, when a task creates its Kafka "
     "producer. A sink needs no subscribe, startingOffsets has a default, and group ids are generated."),
    ("setup-bytes", "setup", "What type are the `key` and `value` columns of a Kafka stream?",
     ["binary", "string, decoded as UTF-8 by the connector", "whatever kafka.value.deserializer says",
      "a struct, when the records hold JSON"], "a",
     "Always binary: the connector rejects Kafka deserializer options. Cast (`CAST(value AS STRING)`) or parse "
     "(`from_json`) in the DataFrame."),
    ("setup-latest", "setup", "A new stream on a topic full of old records sees only empty batches. Why?",
     ["its new group has no committed offsets yet", "the default startingOffsets of a stream is latest",
      "maxOffsetsPerTrigger defaults to 0", "auto.offset.reset is latest for Spark's group"], "b",
     "Streams start at `latest` unless told otherwise (batch reads default to earliest): only records written after "
     "the first start are read. Use startingOffsets=earliest on the first run to read the history. Spark ignores "
     "group offsets, refuses auto.offset.reset, and sets no cap by default."),
    ("setup-local2", "setup", "What does `local[2]` mean for a streaming query?",
     ["two executors, each its own JVM on this machine", "at most two streaming queries at once in this session",
      "two Kafka partitions read by each task", "two task threads: at most two tasks run at once"], "d",
     "Local mode with two threads in one JVM (the driver's): a batch of six Kafka tasks runs them two at a time."),
    ("source-fetch", "source", "Who fetches the records of a micro-batch from Kafka?",
     ["the driver, which then ships them to the executors",
      "a long-running receiver task, as in DStreams' receiver API",
      "a consumer group whose coordinator spreads partitions over executors",
      "each task, from the broker, for its planned offset range"], "d",
     "The driver only plans: it lists partitions and latest offsets and makes one offset range per partition. Each "
     "range becomes a task, and executors fetch that range from the broker themselves. There is no receiver, and no "
     "group assigns partitions."),
    ("source-group", "source", "Which consumer group does a Spark Kafka query use?",
     ["the one you set with kafka.group.id before load()", "one generated per query: spark-kafka-source-<uuid>-<hash>",
      "one named after the application, for all its queries", "one per topic, shared by every query reading it"], "b",
     "Each query makes up its own group id (prefix from groupIdPrefix; the hash is of the source's checkpoint folder, "
     "<checkpoint>/sources/<i>); executors add `-executor`. They assign() partitions and never commit, so the group "
     "holds nothing on the broker."),
    ("source-new-partitions", "source", "Partitions are added to a subscribed topic while the query runs. Then:",
     ["a later trigger finds them and reads them from earliest", "they are ignored until the query is restarted",
      "the query fails: its checkpoint (offsets/N) lists only the old ones",
      "a later trigger finds them and reads them from latest"], "a",
     "Topics and partitions are re-listed on every trigger; a new partition starts from earliest, so nothing written "
     "to it is skipped (if its earliest offset is not 0, Spark reports possible data loss)."),
    ("source-auto-reset", "source", "What does `kafka.auto.offset.reset=earliest` do on a Spark Kafka source?",
     ["the first run starts from earliest, as a plain consumer would",
      "it is refused with an error that points to startingOffsets", "nothing, silently: Spark manages positions itself",
      "it applies on a restart whose checkpoint offsets were deleted"], "b",
     "Spark manages positions itself; the connector rejects the option with an IllegalArgumentException and tells you "
     "to use startingOffsets."),
    ("source-headers", "source", "How do you read Kafka record headers?",
     ["set includeHeaders=true on the source", "they cannot be read: Structured Streaming drops them",
      "they are in the default schema, as a map column named headers",
      "set kafka.includeHeaders=true, like other consumer settings"], "a",
     "Headers (Spark 3.0+) are off by default; includeHeaders=true adds a `headers` column, an "
     "array<struct<key,value>>. It is a source option, so it takes no `kafka.` prefix."),
    ("source-min-partitions", "source", "What does `minPartitions` do?",
     ["creates that many partitions in the Kafka topic, if it has fewer",
      "sets the minimum number of executors the query keeps alive",
      "skips a trigger until that many partitions have new data",
      "splits offset ranges so a batch has about that many tasks"], "d",
     "It is a hint for read parallelism: large offset ranges are split so a batch has at least about that many tasks. "
     "It does not touch Kafka and is not a rate limit; maxRecordsPerPartition (4.0) splits ranges by size instead."),
    ("source-group-id", "source", "You set `kafka.group.id=billing` on a Spark source. What happens?",
     ["the query commits its progress to group billing after each batch",
      "it is used, with a warning; progress stays in the checkpoint",
      "the source refuses it: Spark generates every group id itself",
      "it replaces startingOffsets: the query resumes from billing's offsets"], "b",
     "Allowed since 3.0 (useful for ACLs that name groups), with a warning, and groupIdPrefix is then ignored; "
     "queries sharing a group id may interfere. Nothing is committed either way: offsets live only in the checkpoint."),
    ("source-fail-on-data-loss", "source", "What does `failOnDataLoss` (default true) do?",
     ["stops the query when offsets it still needs no longer exist",
      "makes the Kafka sink wait for acks=all so no write is lost",
      "fails the query when from_json meets a malformed record",
      "fails the query when a batch reads fewer rows than planned"], "a",
     "Offsets a query needs can vanish through retention, a recreated topic or offsets that went backwards. With true "
     "the query stops with an error explaining the option; with false Spark logs a warning and continues from what is "
     "still there (the vanished records are lost). It has nothing to do with parsing or with the sink."),
    ("source-retention", "source", "A query with default options was stopped for longer than the topic's retention. "
     "On restart:",
     ["it resumes from the committed offsets of its consumer group",
      "it resumes from latest, since the checkpoint's offsets are gone",
      "it skips silently to the earliest offset still in the topic",
      "it fails: the offsets its checkpoint points at no longer exist"], "d",
     "The checkpoint points at deleted offsets. The default failOnDataLoss=true refuses to continue; "
     "failOnDataLoss=false continues from the earliest available offset, with a warning, and the gap is lost."),
    ("offsets-where", "offsets", "Where does Spark keep a query's consumed offsets between batches?",
     ["in Kafka's __consumer_offsets, under its group", "in the checkpoint folder: offsets/N and commits/N",
      "in driver memory, rebuilt from Kafka on restart", "in the executors' cached consumers"], "b",
     "The checkpoint is the single source of truth; Spark commits nothing to Kafka."),
    ("offsets-restart", "offsets", "A query with a checkpoint is restarted with startingOffsets changed to earliest. "
     "Where does it start?",
     ["at the beginning of the topic: the new option wins", "at latest: changed options make the checkpoint stale",
      "it refuses to start until the checkpoint is deleted", "where its checkpoint says it stopped"], "d",
     "startingOffsets is used only when the checkpoint has no offsets yet; on restart the checkpoint wins."),
    ("offsets-order", "offsets", "When are `offsets/N` and `commits/N` written?",
     ["both after batch N, once the sink has finished", "commits/N first, then offsets/N when the batch ends",
      "offsets/N before batch N runs, commits/N after it",
      "offsets/N only on a clean shutdown, commits/N each batch"], "c",
     "Write-ahead: the plan (batch N's end offsets) first, the commit after the sink finished. A restart uses the "
     "pair to decide what to re-run."),
    ("offsets-crash", "offsets", "A crash leaves offsets/7 without commits/7. On restart Spark:",
     ["re-runs batch 7 with exactly the same offsets", "re-plans batch 7 with the cap it has now",
      "skips batch 7, since its offsets were logged", "starts over from the startingOffsets option"], "a",
     "The planned range is replayed as is; that replay is why the Kafka sink can write duplicates."),
    ("offsets-delete", "offsets", "You delete a query's checkpoint and start it again. What happens?",
     ["it resumes from the offsets its consumer group committed",
      "it resumes where it stopped: Kafka remembers the query id",
      "it refuses to start without the metadata file it had",
      "it starts as a new query, wherever startingOffsets says"], "d",
     "All memory of progress was in the checkpoint; without it the start position is resolved anew (latest skips what "
     "came in meanwhile, earliest re-reads everything)."),
    ("offsets-share", "offsets", "Two different queries are given the same checkpoint folder. What is true?",
     ["it is fine: each keeps its own offsets inside, by query name",
      "Spark merges their progress into one offset log safely", "it is fine as long as they read different topics",
      "it is a mistake: a checkpoint holds one query's progress"], "d",
     "offsets/, commits/ and metadata (the query id) describe one query: the second would resume from the first's "
     "offsets or conflict with it. Give every query its own folder."),
    ("offsets-replay", "offsets", "How do you replay a Spark query's data from the beginning?",
     ["reset its group with kafka-consumer-groups --to-earliest", "restart it with startingOffsets=earliest",
      "a new checkpoint folder and startingOffsets=earliest", "set failOnDataLoss=false and restart it"], "c",
     "Group offsets are ignored and a restart keeps the checkpoint's position: only a fresh checkpoint resolves "
     "startingOffsets (earliest or explicit JSON offsets) again."),
    ("offsets-ending", "offsets", "What does `endingOffsets` do in a streaming query?",
     ["the stream stops once every partition reaches it", "it is refused: it is for batch reads only",
      "it is ignored; the stream runs on past it", "it caps how far each batch may read"], "b",
     "The connector refuses it in streams ('ending offset not valid in streaming queries'); use "
     "trigger(availableNow=True) for a bounded run."),
    ("offsets-metadata", "offsets", "What does the checkpoint's `metadata` file hold?",
     ["the Spark config the query started with", "the schema of the topic's values",
      "the query id, the same across restarts", "the end offsets of the last batch"], "c",
     "Each run also gets a new runId, but the id in metadata stays. The offsets are in offsets/N."),
    ("offsets-sources", "offsets", "What is in `sources/0/0`?",
     ["the latest offsets the source saw, updated per batch", "the source's initial offsets, written at first start",
      "the state of the sink, for replays", "the commit of batch 0, once it finished"], "b",
     "It pins batch 0's start so a crash in batch 0 never resolves startingOffsets again."),
    ("lag-cli", "lag", "Why does `kafka-consumer-groups --describe` show nothing useful for a Spark query?",
     ["Spark commits only when a query stops cleanly", "Spark never commits the query's offsets to Kafka",
      "the CLI shows only groups that are rebalancing", "Spark commits under a group named after the app"], "b",
     "Positions live in the checkpoint: executors assign() partitions under a generated group and never commit; the "
     "driver lists offsets with the AdminClient. There is nothing in Kafka to describe."),
    ("lag-measure", "lag", "How do you measure a Spark query's lag?",
     ["numInputRows of the last batch, which is what is behind",
      "latestOffset − endOffset of each partition, from lastProgress",
      "the batchDuration, compared with the trigger interval",
      "the offsets its consumer group committed, via the CLI"], "b",
     "Spark's own records of its position: lastProgress's sources (or the broker's latest offsets minus the "
     "checkpoint's last committed end); the connector also reports min/max/avg OffsetsBehindLatest in each Kafka "
     "source's metrics."),
    ("lag-diagnose", "lag", "inputRowsPerSecond stays above processedRowsPerSecond and the lag grows batch after "
     "batch. What is it and what helps?",
     ["normal for Kafka: wait, the lag drains by itself later",
      "too small a cap: raise maxOffsetsPerTrigger until it keeps up",
      "too little throughput: more partitions and cores, or cheaper work",
      "too long a trigger: shorten the interval so batches run more often"], "c",
     "A cap only bounds batches and contains bursts; steady growth means processing capacity is below the input rate "
     "(more partitions, or minPartitions with cores to match, or cheaper processing)."),
    ("lag-listener", "lag", "What is the production way to watch a query's lag and alert on it?",
     ["a StreamingQueryListener feeding alerts", "polling kafka-consumer-groups on the query's group",
      "grepping the executors' logs for fetch warnings", "the broker's consumer-lag metrics for the group"], "a",
     "Every batch's progress event reaches onQueryProgress with the offsets it needs. Group-based tools see nothing: "
     "Spark commits no offsets."),
    ("lag-metrics", "lag", "Where does the Kafka source report its own lag summary?",
     ["in the sink's metrics of each progress event", "nowhere: only the broker knows the lag",
      "in the checkpoint's offsets/N files, per batch", "in each source's metrics in the progress"], "d",
     "Since 3.2, min/max/avgOffsetsBehindLatest (as strings), next to startOffset, endOffset and latestOffset."),
    ("lag-zero", "lag", "A query without maxOffsetsPerTrigger reports latestOffset − endOffset = 0 after every batch. "
     "What does that say?",
     ["that it keeps up with its producers: each batch ends at the newest offset in Kafka",
      "that nothing is being produced to the topic, so every batch it plans is empty",
      "little: an uncapped batch reads all it planned, so it is 0 even as it falls behind",
      "that Spark committed its end offsets to its group, which resets the group's lag"], "c",
     "latestOffset is fetched when the batch is planned; without a cap the batch reads all of it. Measure against the "
     "broker's latest offsets now, or watch the batches grow; with a cap this lag becomes meaningful."),
    ("bp-automatic", "backpressure", "Does Structured Streaming handle backpressure automatically?",
     ["no: you bound batches and add throughput yourself", "yes: each batch's size adapts to the last one's speed",
      "yes, once spark.streaming.backpressure.enabled is true",
      "yes: Kafka slows the producers when consumers lag"], "a",
     "The engineer bounds batches (maxOffsetsPerTrigger, trigger interval) and adds throughput. The PID loop belongs "
     "to DStreams and has no effect on Structured Streaming, and Kafka never slows producers for a consumer."),
    ("bp-max-rate", "backpressure", "`spark.streaming.kafka.maxRatePerPartition=1000` on a Structured Streaming query "
     "does what?",
     ["caps each partition at 1,000 records per second", "caps each micro-batch at 1,000 records in all",
      "nothing: it is a DStreams setting", "caps each partition at 1,000 records per trigger"], "c",
     "Structured Streaming's lever is maxOffsetsPerTrigger, one budget per source per trigger."),
    ("bp-pid", "backpressure", "What did DStreams' backpressure adapt?",
     ["the producers' rate, by throttling them with Kafka quotas",
      "the batch interval, stretched when batches ran late", "the number of Kafka partitions read in parallel",
      "how fast Spark itself ingested, with a PID estimator"], "d",
     "A PID estimator with a 100 records/s minRate floor; it never slowed producers, it only changed how fast Spark "
     "read."),
    ("bp-symptoms", "backpressure", "Which set of signs shows a query under backpressure?",
     ["lag growing, batches outlasting the trigger interval",
      "processedRowsPerSecond above inputRowsPerSecond each batch",
      "batches ending well before the trigger, some of them empty",
      "many short batches of few rows each, lag near zero"], "a",
     "All follow from input arriving faster than batches finish: lag grows, batches overrun the interval and triggers "
     "fire late, and memory comes under pressure where a batch is buffered."),
    ("bp-executors", "backpressure", "Do more executors always fix a lagging Kafka query?",
     ["yes: each new executor joins the group and takes partitions",
      "yes: Spark spreads each partition's records over all cores",
      "no: the read stage runs one task per partition with data",
      "yes, as long as maxOffsetsPerTrigger is raised to match"], "c",
     "Unless minPartitions splits them, cores beyond the read stage's tasks sit idle while it reads; stages after a "
     "shuffle run spark.sql.shuffle.partitions tasks (AQE, on for stateless streams since 4.1, may coalesce them), "
     "and the bottleneck may be the sink or a skewed partition. Find the bottleneck first."),
    ("bp-burst", "backpressure", "A burst of a million records hits an uncapped query. What happens?",
     ["Spark drops what does not fit in memory", "the batch holds it in memory and fails with OOM",
      "the next batch takes it all: one huge, slow batch", "batches stay small: Spark spreads it out"], "c",
     "Without a cap a batch reads everything up to latest. Its tasks stream their records, so a map-only batch needs "
     "little memory: it holds it in memory only if something buffers it (a shuffle, state or a collect/toPandas in "
     "foreachBatch). A cap turns the burst into lag that builds and drains."),
    ("bp-once", "backpressure", "`trigger(once=True)` with maxOffsetsPerTrigger=1000 on a backlog of 50,000:",
     ["50 batches of 1,000, then it stops", "one batch of 1,000, then it stops", "it fails: once refuses a cap",
      "one batch of 50,000"], "d",
     "once ignores the cap: it runs one uncapped batch. once is deprecated since 3.4; availableNow runs capped "
     "batches until the backlog at its start is done, with a stronger processing guarantee and better watermark "
     "handling (the three reasons of once's deprecation note)."),
    ("rate-three", "rate", "Which three source options limit how much a trigger reads?",
     ["maxRatePerPartition, minRate, initialRate", "minPartitions, maxRecordsPerPartition, failOnDataLoss",
      "maxOffsetsPerTrigger, fetchOffset.numRetries, kafkaConsumer.pollTimeoutMs",
      "maxOffsetsPerTrigger, minOffsetsPerTrigger, maxTriggerDelay"], "d",
     "A ceiling per trigger, a floor that skips small triggers, and the longest a floor may delay a batch (default "
     "15m). The first set is DStreams' settings; the second is about parallelism and data loss; the third puts the "
     "cap beside a retry count and a poll timeout."),
    ("rate-vs-bp", "rate", "Backpressure against rate limiting: which is right?",
     ["two names for one mechanism that Structured Streaming runs itself",
      "backpressure is a situation; a rate limit bounds batches during it",
      "backpressure is Spark's automatic reaction; a rate limit is the manual one",
      "a small enough rate limit removes backpressure and ends the lag"], "b",
     "Backpressure is input faster than processing. A cap keeps batches bounded while it lasts (and memory, where the "
     "batch is buffered); only more throughput removes steady backpressure."),
    ("rate-min-max", "rate", "minOffsetsPerTrigger=5000 with maxOffsetsPerTrigger=1000:",
     ["each batch reads 5,000: the minimum wins", "each batch reads 1,000: the maximum wins",
      "batches alternate between the two limits", "refused: the minimum exceeds the maximum"], "d",
     "The connector checks it when the stream is loaded."),
    ("rate-delay-default", "rate", "What is maxTriggerDelay's default?",
     ["none: a trigger waits for the minimum", "1 minute", "15 minutes", "5 minutes"], "c",
     "15m: with minOffsetsPerTrigger, a trigger waits at most that long since the last batch."),
    ("rate-available-now", "rate", "What does trigger(availableNow=True) do?",
     ["reads what is there at its start, in capped batches, then stops",
      "reads everything there in one uncapped batch, then stops",
      "catches up on the backlog, then keeps running for new records",
      "reads only records that arrive after it starts, then stops"], "a",
     "Since 3.3; the catch-up job's trigger, replacing once: it honours the rate limits and stops when the backlog "
     "present at its start is done."),
    ("rate-default-trigger", "rate", "What does the default trigger do?",
     ["runs one micro-batch per second, its default interval", "plans the next batch as soon as the last one ended",
      "runs continuously, one long-running task per partition",
      "runs a micro-batch each time a new record arrives"], "b",
     "No interval: the next batch is planned as soon as the last one ends. When nothing new is there no batch runs, "
     "unless a stateful operator needs a no-data batch to advance its watermark; Spark checks again after a short "
     "polling delay."),
    ("rate-continuous", "rate", "What is true of the continuous trigger?",
     ["it is the low-latency trigger Spark 4.2 recommends for Kafka",
      "it honours maxOffsetsPerTrigger per epoch, like micro-batches",
      "legacy: long-running tasks, map-like queries only, no rate limits",
      "it gives exactly-once output into Kafka, unlike micro-batches"], "c",
     "Experimental since 2.3 and legacy: millisecond latency, at-least-once, no cap. Spark's guide points to "
     "Real-time Mode (4.1, `trigger(realTime=...)`) instead."),
    ("rate-realtime-duration", "rate", "What does the duration in `trigger(realTime=\"5 minutes\")` set?",
     ["a latency target: how late a record may come out", "how often the query checkpoints its offsets",
      "how long the query runs before it stops", "how often each task polls Kafka"], "b",
     "Real-time Mode runs one long-running task per partition for the whole batch and writes each record as it is "
     "read, so records come out within milliseconds all the same. The duration is when the batch ends and its offsets "
     "are written; its minimum is 5 s by default (spark.sql.streaming.realTimeMode.minBatchDuration), checked at "
     "start(). Module 5 measured milliseconds against a few hundred for back-to-back micro-batches."),
    ("rate-realtime-refused", "rate", "Which query can Spark 4.2 run in Real-time Mode?",
     ["Kafka to Kafka with a filter and a projection, output mode update",
      "a groupBy().count() over a Kafka source, in update mode", "a Kafka source into foreachBatch, in update mode",
      "Kafka to Kafka with a Python UDF in its projection, output mode update"], "a",
     "Stateless Kafka queries in update mode only, built from built-in expressions: in 4.2 the operator allowlist has "
     "no aggregation and no Python operator, so Python and pandas UDFs and mapInPandas are refused at the first "
     "batch; foreachBatch's sink is refused too, and so are the source's rate options (there is no batch to cap)."),
    ("rate-realtime-slots", "rate", "A Real-time Mode query reads a 3-partition topic on `local[2]`. What happens?",
     ["Spark refuses to start it: it needs a core for every partition",
      "three tasks share the two cores by turns, each a little slower",
      "the third partition's task reads nothing, and no error says so",
      "two partitions are merged into one task to fit the two cores"], "c",
     "Each task reads until the batch's end time, so it needs a task slot for every partition at once; the third task "
     "starts only when a slot frees, at that end time, and reads nothing: its records never come out."),
    ("rate-realtime-sink", "rate", "Is a Kafka-to-Kafka query in Real-time Mode exactly-once into Kafka?",
     ["yes: offsets are written as each batch ends", "yes, with kafka.transactional.id on the sink",
      "no, at-least-once as with micro-batches", "no: a failed batch may drop records"], "c",
     "A batch's offsets are written when it ends, so what it wrote before a failure is written again after the "
     "restart. Processing is exactly-once, delivery depends on the sink: Spark's Kafka sink has no transactions in "
     "either mode. Deduplicate downstream on a key where it matters."),
    ("rate-processing-time", "rate", "What does trigger(processingTime='10 seconds') give you?",
     ["each batch holds the records of the last 10 s, by timestamp", "a run of 10 s, after which the query stops",
      "one batch every 10 s, or later if a batch overruns", "offsets committed to the consumer group every 10 s"], "c",
     "A rhythm: a batch starts every 10 s, and after one that overruns the next starts as soon as it ends. With a "
     "cap, batches are bounded in count and in time, which bounds latency."),
    ("rate-fewer-rows", "rate", "A big backlog, cap 1,000, yet a batch holds 998 rows. Why?",
     ["shares are floored per partition; markers use offsets",
      "two records failed from_json and were dropped from the batch",
      "the trigger interval ran out before all 1,000 were read",
      "Spark keeps a safety margin below the cap for retried fetches"], "a",
     "prorate = cap × size/total is floored per partition, and the cap counts offsets, which transaction markers also "
     "use. from_json in PERMISSIVE mode turns bad records into nulls, it does not drop them."),
    ("rate-cap-change", "rate", "When does a new maxOffsetsPerTrigger take effect?",
     ["at once: options are reread at every trigger", "only with a new checkpoint, like startingOffsets",
      "from the restart on, a replayed batch included", "for batches planned after a restart"], "d",
     "Options are read at start; a batch already planned but not committed replays with its old range, because the "
     "offset log's plan wins."),
    ("rate-max-records", "rate", "What does maxRecordsPerPartition (4.0) do?",
     ["caps each Kafka partition per trigger at that many records",
      "splits offset ranges so no task reads more than that many",
      "caps a whole batch at that many records, like a rate limit",
      "caps how many records each task writes to the sink"], "b",
     "Parallelism, like minPartitions; the rate cap is still maxOffsetsPerTrigger."),
    ("multi-pattern", "multitopic", "Which option subscribes to every topic matching a regex?",
     ["subscribe, given a regex instead of a list", "subscribePattern", "assign, with the regex in place of a topic",
      "topic, the option the sink uses too"], "b",
     "subscribe takes a comma list, assign a JSON of partitions, subscribePattern a Java regex."),
    ("multi-anchor", "multitopic", "subscribePattern `events-.*` on the default path also matches:",
     ["old-events-1 too: the match is not anchored", "Events-1 too: topic patterns ignore case",
      "nothing else: events-.* must match the whole name", "the topic events too, since .* may be empty"], "a",
     "The AdminClient path uses find, not a full match, so write `^events-.*$`. Matching is case-sensitive, and "
     "`events` lacks the dash the pattern needs."),
    ("multi-later", "multitopic", "A topic matching the pattern is created while the query runs:",
     ["it is ignored until the query restarts", "the query fails: its topic set changed",
      "it is read only if assign lists it too", "it is picked up on a later trigger"], "d",
     "The default (AdminClient) path re-lists topics on every trigger; the deprecated consumer path waits for the "
     "consumer's metadata refresh (metadata.max.age.ms, 5 minutes by default)."),
    ("multi-two-options", "multitopic", "subscribe and assign are both set:",
     ["assign wins, as the more specific option", "subscribe wins, and assign is ignored",
      "the load fails: only one of them may be set", "both are read, as a union of their partitions"], "c",
     "An IllegalArgumentException: exactly one of subscribe, subscribePattern and assign is required."),
    ("multi-route", "multitopic", "How do you route rows by the topic they came from?",
     ["one query per topic: a row does not say its topic", "the topic column that every row of the source carries",
      "a header: Kafka adds each record's topic to it", "the record key, which Kafka prefixes with the topic"], "b",
     "Every row carries topic, partition and offset."),
    ("multi-schemas", "multitopic", "Two topics carry different JSON schemas in one query. How do you parse them?",
     ["filter by topic and parse each with its schema", "one from_json with a merged schema of both always works",
      "one query per topic: a query has a single schema", "set kafka.value.deserializer to a JSON parser"], "a",
     "Split by the topic column, then from_json with the right schema per topic (e.g. in foreachBatch)."),
    ("multi-quarantine", "multitopic", "from_json (default PERMISSIVE mode) turns a malformed message into nulls. "
     "Best practice?",
     ["send those rows, with topic, partition and offset, to a quarantine",
      "switch from_json to FAILFAST so the query stops on it", "filter out the null rows before the sink and move on",
      "set failOnDataLoss=true so bad records stop the query"], "a",
     "Kept with its topic, partition and offset, nothing is lost and the bad record can be found again. "
     "failOnDataLoss concerns vanished offsets, not parsing."),
    ("multi-assign", "multitopic", "Which is a valid `assign` value?",
     ["[\"orders-0\", \"orders-1\"]", "orders:0,1", "{\"orders\":[0,1]}", "{\"orders\":\"0,1\"}"], "c",
     "A JSON object of topic to a list of partition numbers."),
    ("sink-value", "sinks", "Which column must a DataFrame have to be written to Kafka?",
     ["key", "topic", "value", "partition"], "c",
     "value (string or binary) is required; key, headers, partition and topic are optional."),
    ("sink-topic", "sinks", "The sink has a `topic` option and the DataFrame a `topic` column. Which wins?",
     ["the column: the option is only a default", "the option, for every row", "neither: the write fails as ambiguous",
      "both: each row goes to both topics"], "b",
     "The option overrides the column; leave it out to fan out by the column."),
    ("sink-eo", "sinks", "Is Kafka → Spark → Kafka exactly-once?",
     ["no: the Kafka sink is at-least-once, whatever the checkpoint", "yes, once kafka.transactional.id is set",
      "yes: the checkpoint makes every stage exactly-once", "yes: the idempotent producer drops replays"], "a",
     "Spark's checkpoint makes the read side replayable, not the write side transactional: a re-run batch writes "
     "again, and producer idempotence only drops a retry within one producer session. Make it effectively "
     "exactly-once with idempotent consumers or dedup by a key made of the source coordinates."),
    ("sink-txn", "sinks", "Does setting `kafka.transactional.id` make Spark's Kafka sink exactly-once?",
     ["no: Spark never calls the producer's transaction API",
      "yes, as long as readers set isolation.level=read_committed", "yes: each batch becomes one Kafka transaction",
      "only for batch writes, not for streaming ones"], "a",
     "The producer even refuses to send before transactions are initialised."),
    ("sink-order", "sinks", "How do you keep per-key order through a Kafka sink?",
     ["a key column, each key's rows in order in one task, dedup on replay",
      "a key column alone: Kafka keeps every key in one partition, in order",
      "trigger(once=True), so each batch is written by a single task",
      "sort the DataFrame by key and time before writeStream"], "a",
     "Order exists only within a partition, and adding partitions remaps keys. A key column alone is not enough: the "
     "sink does not route rows to tasks by key (repartition by key, sortWithinPartitions), an executor's tasks share "
     "one cached producer, and a replayed batch writes its records again, so consumers skip its repeats."),
    ("sink-file", "sinks", "Which built-in Spark sink is exactly-once by itself?",
     ["the Kafka sink, thanks to its idempotent producer", "the console sink, since it writes from the driver",
      "foreach, since Spark calls process() once per row",
      "the file sink, through the _spark_metadata log it keeps"], "d",
     "Readers that follow its `_spark_metadata` log (Spark reading the folder) see only committed files; a plain "
     "listing of the folder may also see orphans of failed attempts."),
    ("sink-foreach-batch", "sinks", "The pattern for exactly-once into a database from a stream:",
     ["foreachBatch with a plain INSERT: a batch never runs twice", "foreach with one INSERT per row and autocommit on",
      "trigger(once=True), so each batch runs exactly once",
      "foreachBatch, upserting by the source's coordinates"], "d",
     "Write idempotently (upsert keyed by topic/partition/offset) or transactionally with the batch_id recorded: a "
     "replayed batch then changes nothing."),
    ("sink-serializer", "sinks", "kafka.value.serializer on the sink:",
     ["it sets how the sink encodes each value", "it is passed on to the producer unchanged",
      "it is required whenever value is not a string", "it is refused: serialise in the DataFrame"], "d",
     "Values must already be string or binary; serialise in the DataFrame, e.g. to_json(struct(*))."),
    ("sink-mode", "sinks", "Which save modes does a batch Kafka write accept?",
     ["Append and ErrorIfExists", "Append and Overwrite, which replaces the topic",
      "all four; Overwrite truncates the topic first", "Append only; ErrorIfExists is refused too"], "a",
     "Append and ErrorIfExists (the default); Overwrite and Ignore are rejected."),
    ("sink-fanout", "sinks", "How do you write each row to a topic chosen by the data?",
     ["one query per topic, each with its own filter", "a topic column per row, and no topic option",
      "the topic option with a comma list of topics", "a header named topic on each row"], "b",
     "The topic option would override every row."),
    ("sink-read-committed", "sinks", "Readers of a topic written by transactional producers should set:",
     ["failOnDataLoss=false, to skip aborted records", "kafka.transactional.id=<the producer's transactional.id>",
      "kafka.isolation.level=read_committed", "includeHeaders=true, to see the markers"], "c",
     "Aborted records are then skipped (they still use offsets, so a capped batch may hold fewer rows). A "
     "transactional id is a producer setting."),
    ("offsets-by-time", "offsets", "It is 16:00. How do you start a new query at the records written since 14:00?",
     ["reset its group with kafka-consumer-groups --to-datetime",
      "startingTimestamp on its old checkpoint, then a restart", "startingOffsets=latest and a filter on timestamp",
      "startingTimestamp at 14:00's epoch millis, on a new checkpoint"], "d",
     "Each partition starts at the first record at or after that time (offsetsForTimes; startingOffsetsByTimestamp "
     "does it per partition); with no such record the default startingOffsetsByTimestampStrategy=error fails and "
     "`latest` starts at latest. Like startingOffsets it counts only on a query's first start."),
    ("offsets-data-loss-metrics", "offsets", "With failOnDataLoss=false a batch skips offsets that retention deleted. "
     "Where do you see it?",
     ["nowhere: with false, skipping is silent", "numInputRows in lastProgress, which counts the skipped offsets",
      "the scan's SQL metrics dataLoss and offsetOutOfRange", "the consumer group's lag, which jumps by the gap"], "c",
     "The Kafka scan's task metrics count how often it met lost data and how many offsets it skipped (the SQL metrics "
     "of the batch), and the log has a warning; progress events only show the rows that were left."),
    ("offsets-missing-metadata", "offsets", "Spark 4.2 restarts a query whose checkpoint has offsets/ and commits/ "
     "but no metadata file. What happens?",
     ["it writes a new metadata file with a new query id", "it fails, refusing a checkpoint that has no metadata",
      "it starts again from startingOffsets, as a new query",
      "it rebuilds the id from the offset log and goes on"], "b",
     "It fails with STREAMING_CHECKPOINT_MISSING_METADATA_FILE. A new id would make sinks that recognise replays by "
     "query id take them for new data; 4.2 refuses instead "
     "(spark.sql.streaming.checkpoint.verifyMetadataExists.enabled, default true)."),
    ("source-kip848", "source", "What does Kafka's new consumer group protocol (KIP-848) change for Spark's Kafka "
     "source on the default path?",
     ["nothing: a Spark query never joins a consumer group", "the broker now assigns partitions, so tasks get others",
      "every query must now set group.protocol=consumer", "Spark now commits its offsets to the group each batch"], "a",
     "KIP-848 changes how members join a group and receive partitions. The driver lists offsets with the AdminClient "
     "and executors assign() partitions: nobody joins a group."),
    ("sink-dedup-watermark", "sinks", "A topic written by Spark's Kafka sink holds replayed duplicates (same id, new "
     "offsets). A streaming reader with a watermark on event time can drop them with:",
     ["dropDuplicatesWithinWatermark on the id", "kafka.isolation.level=read_committed",
      "dropDuplicates on topic, partition and offset", "dropDuplicates(\"id\") inside foreachBatch"], "a",
     "The copies have new offsets but the same id; dropDuplicatesWithinWatermark (3.5) remembers each id until the "
     "watermark passes it, so its state stays bounded. Within one foreachBatch a copy in a later batch is missed, and "
     "the sink writes no transactions for read_committed to hide."),
    ("sink-async-progress", "sinks", "What does asyncProgressTrackingEnabled=true do for a Kafka-to-Kafka query?",
     ["commits each batch's offsets to the consumer group in the background",
      "logs progress in the background: shorter batches, longer replays",
      "makes the sink exactly-once by committing offsets with each write",
      "lets foreachBatch and availableNow queries skip the offset log"], "b",
     "It writes offsets/ and commits/ at most every asyncProgressTrackingCheckpointIntervalMs, so batches are shorter "
     "but a restart re-runs more of them. It accepts only the Kafka, noop, console and memory sinks, processing-time "
     "triggers and stateless queries; more replays after a restart suit an at-least-once sink."),
    ("sink-open-transaction", "sinks", "A read_committed query stops receiving rows while the topic's log end keeps "
     "growing. A likely cause:",
     ["maxOffsetsPerTrigger is set too low", "a producer left a transaction open on that topic",
      "its consumer group was reset by an admin", "its group lost the partitions in a rebalance"], "b",
     "Readers stop at the last stable offset until the transaction commits or aborts: records behind an open "
     "transaction wait with it, committed or not, and the query's latestOffset stays at the last stable offset."),
    ("lake-append-replay", "lakehouse", "A foreachBatch function appends each batch to a Delta table. The driver dies "
     "after the append of batch 9, before commits/9. After the restart the table holds:",
     ["batch 9 once: Delta rejects a second append of the same files", "batch 9 once: the replay gets new offsets",
      "batch 9 twice: nothing remembered that it was written", "no batch 9: an uncommitted batch is rolled back"], "c",
     "The append committed a Delta version; Spark's commits/9 did not follow, so batch 9 runs again with the same "
     "offsets and a plain append adds its rows again. MERGE on a key, txnAppId/txnVersion, or Delta's own sink "
     "make the replay harmless."),
    ("lake-sink-txn", "lakehouse", "Why does writeStream.format(\"delta\") not duplicate a batch replayed after a "
     "crash?",
     ["Spark deletes the batch's files when the query fails", "Kafka's offsets are committed with each Delta version",
      "Delta's log is rewritten atomically with the checkpoint", "each commit records the query id and batch id"],
     "d",
     "Delta's sink writes a SetTransaction (appId = the query id, version = the batch id) in the same commit as the "
     "rows, and skips a batch id already there. Spark commits nothing to Kafka, and the checkpoint is separate."),
    ("lake-dedupe", "lakehouse", "A foreachBatch MERGE keyed by order id fails with \"multiple source rows "
     "matched\". The batch should first keep, per order id, the row with:",
     ["the earliest Kafka timestamp among that order's rows", "the highest Kafka offset, keyed by order id",
      "the first row Spark returns for that key", "the largest value of any numeric column"], "b",
     "With records keyed by order id, one order's updates share a partition, where offsets follow write order: the "
     "highest offset is the latest update. Row order in a DataFrame is not guaranteed, and timestamps can tie."),
    ("lake-new-checkpoint", "lakehouse", "A job appends with txnAppId=\"billing\" and txnVersion=batch_id. After "
     "its checkpoint is lost it restarts on a new one. What does Delta do with its first batches?",
     ["fails them: the version went backwards", "writes them: a new checkpoint resets the app id",
      "writes them twice, then once from then on", "skips them silently, as already written"], "d",
     "Delta skips a write whose version is not above the last recorded for the app id, without an error: batch ids "
     "from 0 again are all below the old last one. Derive the app id from the checkpoint."),
    ("lake-small-files", "lakehouse", "A Delta table fed by a 1-second trigger has 200,000 small files. Which cures "
     "it without slowing the stream's writes?",
     ["OPTIMIZE on a schedule, or auto-compaction", "a larger spark.sql.shuffle.partitions",
      "VACUUM with a retention of 0 hours, run daily", "more partitions on the input topic"], "a",
     "OPTIMIZE rewrites small files into larger ones as a new version (auto-compaction does a small one after "
     "writes). VACUUM deletes only files no retained version needs, and more partitions make more files."),
]


def prorate(cap: int, backlogs: dict) -> dict:
    """Spark's split of one cap over partitions by backlog: floor(cap × size/total), a share below 1 rounded up."""
    sizes = {p: n for p, n in backlogs.items() if n > 0}
    total = sum(sizes.values())
    if total < 1:
        return dict(backlogs)
    out = {}
    for p, n in backlogs.items():
        if n <= 0:
            out[p] = 0
            continue
        share = cap * (n / total)
        out[p] = min(n, math.ceil(share) if share < 1 else math.floor(share))
    return out


def _equal_split(rng):
    parts = rng.choice([4, 5, 8, 10, 12])
    cap = rng.choice([10_000, 50_000, 100_000, 120_000])
    backlog = rng.choice([50_000, 80_000, 200_000])  # parts × backlog ≥ cap: every share is cap × 1/parts
    right = prorate(cap, {p: backlog for p in range(parts)})[0]
    text = (f"{parts} partitions each have {backlog:,} records waiting; maxOffsetsPerTrigger={cap:,}. How many "
            "records does each partition contribute to the next batch?")
    # The backlog shared out instead of the cap (smaller than the key when backlog < cap), half the cap, the cap per
    # partition, the whole backlog: the shortest option (the smallest number) is not always the key.
    options, key = choices(rng, f"{right:,}", [f"{backlog // parts:,}", f"{cap // 2:,}", f"{cap:,}", f"{backlog:,}"])
    why = (f"One budget per source: {cap:,} × ({backlog:,} / {parts * backlog:,}) = {right:,} each, not the whole cap "
           "per partition.")
    return text, options, key, why, {"parts": parts, "cap": cap, "backlog": backlog}


def _uneven_split(rng):
    big, small = rng.randint(6, 30) * 1000, rng.randint(1, 5) * 1000
    cap = rng.choice([2_000, 3_000, 4_000, 5_000])
    right = prorate(cap, {0: big, 1: small})[0]
    text = (f"Partition 0 has {big:,} records waiting, partition 1 has {small:,}; maxOffsetsPerTrigger={cap:,}. "
            "How many records does partition 0 contribute to the next batch?")
    options, key = choices(rng, f"{right:,}", [f"{cap // 2:,}", f"{cap:,}", f"{min(big, cap - small):,}",
                                                f"{big:,}"])
    why = (f"The split follows the backlog: {cap:,} × {big:,}/{big + small:,} rounded down = {right:,} "
           "(not half of the cap).")
    return text, options, key, why, {"big": big, "small": small, "cap": cap}


def _small_partitions(rng):
    parts = rng.choice([12, 16, 20, 24, 30])
    cap = rng.choice([5, 8, 10])
    text = (f"{parts} partitions each have exactly 1 record waiting and maxOffsetsPerTrigger={cap}. How many records "
            "does the next batch read?")
    # The cap respected, shares rounded down to nothing, and the cap taken per partition: the longest option (the
    # largest number) is seldom the key.
    options, key = choices(rng, str(parts), [str(cap), "0", str(cap * parts)])
    why = (f"Each share is {cap}/{parts} < 1, which is rounded up to 1 so no partition starves: {parts} records, "
           "over the cap.")
    return text, options, key, why, {"parts": parts, "cap": cap}


def _tasks(rng):
    parts = rng.choice([3, 6, 8, 12, 24])
    cores = rng.choice([2, 4, 16])
    text = (f"A topic has {parts} partitions, all with new records, no minPartitions, and the cluster has {cores} "
            "cores. How many tasks read Kafka in the next micro-batch?")
    options, key = choices(rng, str(parts), [str(cores), "1", str(parts * cores), str(max(parts, cores) * 2)])
    why = f"One offset range per Kafka partition with data, one task each: {parts}; cores only decide how many run at once."
    return text, options, key, why, {"parts": parts, "cores": cores}


def _resume(rng):
    end = rng.randint(10, 900) * 10
    text = (f"The last offsets/N file of a checkpoint ends with {{\"orders\":{{\"0\":{end}}}}} and commits/N exists. "
            "At which offset of partition 0 does the restarted query start reading?")
    options, key = choices(rng, str(end), [str(end + 1), str(end - 1), "0"])
    why = f"Offsets in the log are the next offset to read: the restart plans batch N+1 from {end}."
    return text, options, key, why, {"end": end}


def _total_lag(rng):
    latest = [rng.randint(50, 400) * 10 for _ in range(3)]
    behind = [rng.randint(0, x // 10) for x in latest]
    end = [x - b for x, b in zip(latest, behind)]
    right = sum(behind)
    text = (f"A progress event's Kafka source shows latestOffset {{0: {latest[0]}, 1: {latest[1]}, 2: {latest[2]}}} "
            f"and endOffset {{0: {end[0]}, 1: {end[1]}, 2: {end[2]}}}. What is the total lag?")
    options, key = choices(rng, str(right), [str(sum(end)), str(sum(latest)), str(max(behind))])
    why = f"Lag is latestOffset − endOffset per partition: {' + '.join(map(str, behind))} = {right}."
    return text, options, key, why, {"latest": latest, "end": end}


def _lag_growth(rng):
    rate = rng.choice([1_000, 2_000, 5_000])
    processed = rate - rng.choice([100, 200, 400])
    seconds = rng.choice([30, 60, 120])
    right = (rate - processed) * seconds
    text = (f"Records arrive at {rate:,}/s and the query processes {processed:,}/s. By how much does the lag grow "
            f"in {seconds} s?")
    options, key = choices(rng, f"{right:,}", [f"{rate * seconds:,}", f"{processed * seconds:,}", "0"])
    why = f"({rate:,} − {processed:,}) × {seconds} = {right:,}: steady growth means it needs more throughput."
    return text, options, key, why, {"rate": rate, "processed": processed, "seconds": seconds}


def _size_cap(rng):
    cost = rng.choice([0.5, 1.0, 2.0])
    trigger = rng.choice([1, 2, 5])
    rate = rng.choice([100, 200, 300, 500, 800])
    fits = math.floor(trigger * 1000 * 0.8 / cost)
    normal = rate * trigger
    if normal > fits:
        rate = max(50, fits // (2 * trigger))
        normal = rate * trigger
    right = min(2 * normal, fits)
    text = (f"Records cost {cost} ms each, the trigger is every {trigger} s and the normal rate is {rate} records/s. "
            "By the rule twice the normal batch, at most 80% of the interval, what cap?")
    options, key = choices(rng, f"{right:,}", [f"{normal:,}", f"{fits:,}", f"{2 * fits:,}", f"{rate:,}"])
    why = f"min(2 × {rate} × {trigger}, floor(0.8 × {trigger * 1000} / {cost})) = min({2 * normal}, {fits}) = {right}."
    return text, options, key, why, {"cost": cost, "trigger": trigger, "rate": rate}


def _min_offsets(rng):
    minimum = rng.choice([1_000, 2_000, 5_000])
    rate = rng.choice([50, 100, 250])
    delay = rng.choice([5, 10, 30])
    wait = minimum / rate
    right = min(wait, delay)
    text = (f"minOffsetsPerTrigger={minimum:,}, maxTriggerDelay={delay}s, and {rate} records/s arrive. About how many "
            "seconds apart do the batches run (after the first)?")
    fmt = lambda x: f"{x:g}"  # noqa: E731
    options, key = choices(rng, fmt(right), [fmt(max(wait, delay)), fmt(wait + delay), "0", fmt(delay * 2)])
    why = (f"A trigger waits until {minimum:,} offsets are there ({wait:g} s at {rate}/s) or {delay} s passed since "
           f"the last batch, whichever comes first: {right:g} s.")
    return text, options, key, why, {"minimum": minimum, "rate": rate, "delay": delay}


def _two_topics(rng):
    a, b = rng.choice([2, 3, 4, 6]), rng.choice([1, 2, 5, 8])
    text = (f"One query subscribes to two topics with {a} and {b} partitions, all with new records. How many tasks "
            "read Kafka in the next micro-batch?")
    options, key = choices(rng, str(a + b), [str(max(a, b)), "2", str(a * b)])
    why = f"One task per topic-partition with data, whatever the topic: {a} + {b} = {a + b}."
    return text, options, key, why, {"a": a, "b": b}


# generator name -> (topic, function(rng) -> (text, options, key, why, numbers))
NUMBERED = {
    "equal_split": ("backpressure", _equal_split),
    "uneven_split": ("rate", _uneven_split),
    "small_partitions": ("backpressure", _small_partitions),
    "tasks": ("source", _tasks),
    "resume": ("offsets", _resume),
    "total_lag": ("lag", _total_lag),
    "lag_growth": ("lag", _lag_growth),
    "size_cap": ("rate", _size_cap),
    "min_offsets": ("rate", _min_offsets),
    "two_topics": ("multitopic", _two_topics),
}

# question id -> (notebook, section heading) that proves its answer live, for every question above; pool_more's
# questions carry theirs, and `WHERE` below holds both. A heading with quotes, parentheses or '#' makes no safe
# anchor, so such a section is linked through its nearest plain heading (tests/unit/test_pool_links.py checks
# every link against the student notebooks' headings).
_M0, _M1, _M2, _M3 = "00-setup", "01-source-internals", "02-offset-tracking", "03-consumer-lag"
_M4, _M5, _M6, _M7, _M10 = ("04-backpressure", "05-rate-limiting", "06-multi-topic", "07-sinks-exactly-once",
                            "10-lakehouse")
_FILES = "3. The checkpoint's files, read while the query runs"
_CRASH = "4. A crash between offsets/N and commits/N"
_LOST = "9. Offsets that vanished: failOnDataLoss=false and the scan's own counts"
_FIELDS = "lastProgress, field by field"
_ONE_CAP = "One cap for all the topics of a source"
_REALTIME = "Going deeper: below the micro-batch floor, Real-time Mode"
_FLOOR = "Waiting for a batch worth running: minOffsetsPerTrigger and maxTriggerDelay"
_COLUMNS = "Writing to Kafka: the sink's columns"
_OPEN_TXN = "A transaction left open stalls read_committed readers"
_ONE_TASK = "One partition, one task — when it has new records"
_DSTREAMS = "DStreams' automatic backpressure, simulated"
SECTIONS = {
    "setup-connector": (_M0, "Setup"),
    "setup-bootstrap": (_M1, "A mistyped broker address is not an option error"),
    "setup-bytes": (_M1, "The fixed schema"),
    "setup-latest": (_M2, "1. Where a brand-new query starts: startingOffsets"),
    "setup-local2": (_M1, _ONE_TASK),
    "source-fetch": (_M1, "How a micro-batch is planned and read"),
    "source-group": (_M1, "Going deeper: the generated group id"),
    "source-new-partitions": (_M1, "Watch it live: partitions and minPartitions → tasks"),
    "source-auto-reset": (_M1, "Options Spark rejects"),
    "source-headers": (_M1, "Headers"),
    "source-min-partitions": (_M1, "minPartitions splits large ranges"),
    "source-group-id": (_M1, "Where the position lives"),
    "source-fail-on-data-loss": (_M2, _LOST),
    "source-retention": (_M2, _LOST),
    "source-kip848": (_M1, "Consumer groups: Spark commits nothing"),
    "offsets-where": (_M2, _FILES),
    "offsets-restart": (_M2, "2. startingOffsets applies to the first run only"),
    "offsets-order": (_M2, _CRASH),
    "offsets-crash": (_M2, _CRASH),
    "offsets-delete": (_M2, "2. startingOffsets applies to the first run only"),
    "offsets-share": (_M2, _FILES),
    "offsets-replay": (_M2, "6. Replaying from a known offset"),
    "offsets-ending": (_M2, "7. Batch reads: count or cut an exact range with endingOffsets"),
    "offsets-metadata": (_M2, _FILES),
    "offsets-sources": (_M2, _FILES),
    "offsets-by-time": (_M2, "8. Replay by time: startingTimestamp, startingOffsetsByTimestamp"),
    "offsets-data-loss-metrics": (_M2, _LOST),
    "offsets-missing-metadata": (_M2, "Going deeper: replay by time, lost offsets, a missing metadata file"),
    "lag-cli": (_M3, "Why kafka-consumer-groups shows nothing for Spark"),
    "lag-measure": (_M3, _FIELDS),
    "lag-diagnose": (_M3, "When lag keeps growing"),
    "lag-listener": (_M3, "A polling monitor"),
    "lag-metrics": (_M3, _FIELDS),
    "lag-zero": (_M3, _FIELDS),
    "bp-automatic": (_M4, "What backpressure is"),
    "bp-max-rate": (_M4, _DSTREAMS),
    "bp-pid": (_M4, _DSTREAMS),
    "bp-symptoms": (_M4, "One burst, two queries"),
    "bp-executors": (_M1, _ONE_TASK),
    "bp-burst": (_M4, "One burst, two queries"),
    "bp-once": (_M4, "once ignores the cap, availableNow honours it"),
    "rate-three": (_M5, _FLOOR),
    "rate-vs-bp": (_M4, "Three levers, all set by you"),
    "rate-min-max": (_M5, _FLOOR),
    "rate-delay-default": (_M5, _FLOOR),
    "rate-available-now": (_M5, "Catch-up jobs: availableNow, and why once was deprecated"),
    "rate-default-trigger": (_M5, _FLOOR),
    "rate-continuous": (_M5, _REALTIME),
    "rate-realtime-duration": (_M5, _REALTIME),
    "rate-realtime-refused": (_M5, _REALTIME),
    "rate-realtime-slots": (_M5, _REALTIME),
    "rate-realtime-sink": (_M5, _REALTIME),
    "rate-processing-time": (_M4, "The control panel"),
    "rate-fewer-rows": (_M6, _ONE_CAP),
    "rate-cap-change": (_M5, "Too low, too high, just right — live"),
    "rate-max-records": (_M5, "Read parallelism: minPartitions and maxRecordsPerPartition"),
    "multi-pattern": (_M6, "subscribePattern, and the unanchored trap"),
    "multi-anchor": (_M6, "subscribePattern, and the unanchored trap"),
    "multi-later": (_M6, "A topic created while the query runs"),
    "multi-two-options": (_M1, "Choosing what to read: subscribe, subscribePattern, assign"),
    "multi-route": (_M6, "Routing by topic: a schema per topic"),
    "multi-schemas": (_M6, "Routing by topic: a schema per topic"),
    "multi-quarantine": (_M6, "A quarantine topic, live"),
    "multi-assign": (_M6, "assign: explicit partitions"),
    "sink-value": (_M7, _COLUMNS),
    "sink-topic": (_M7, "The topic option against a topic column"),
    "sink-eo": (_M7, "At-least-once, proven"),
    "sink-txn": (_M7, "The kafka.transactional.id claim, run live"),
    "sink-order": (_M7, "At-least-once, proven"),
    "sink-file": (_M7, "Exactly-once, three ways"),
    "sink-foreach-batch": (_M7, "Exactly-once, three ways"),
    "sink-serializer": (_M7, _COLUMNS),
    "sink-mode": (_M7, _COLUMNS),
    "sink-fanout": (_M7, "JSON values and fan-out"),
    "sink-read-committed": (_M7, _OPEN_TXN),
    "sink-dedup-watermark": (_M7, "Downstream of an at-least-once sink: dropDuplicatesWithinWatermark"),
    "sink-async-progress": (_M7, "Async progress tracking for a Kafka sink"),
    "sink-open-transaction": (_M7, _OPEN_TXN),
    "lake-append-replay": (_M10, "The crash lab: plain append against MERGE, live"),
    "lake-sink-txn": (_M10, "Delta's own sink is exactly-once: a crash proves it"),
    "lake-dedupe": (_M10, "foreachBatch + MERGE: one row per business key"),
    "lake-new-checkpoint": (_M10, "txnAppId: idempotent appends, and their trap"),
    "lake-small-files": (_M10, "Small files: the trigger interval decides"),
    "n-equal_split": (_M6, _ONE_CAP),
    "n-uneven_split": (_M6, _ONE_CAP),
    "n-small_partitions": (_M6, _ONE_CAP),
    "n-tasks": (_M1, _ONE_TASK),
    "n-resume": (_M2, _FILES),
    "n-total_lag": (_M3, _FIELDS),
    "n-lag_growth": (_M3, "When lag keeps growing"),
    "n-size_cap": (_M5, "Sizing a cap"),
    "n-min_offsets": (_M5, _FLOOR),
    "n-two_topics": (_M6, "One source, many topics"),
}

from . import pool_more  # noqa: E402  (module 9's questions and more, with the section that proves each)

FIXED += pool_more.FIXED
NUMBERED.update(pool_more.NUMBERED)
WHERE = {**SECTIONS, **pool_more.WHERE}  # every pool question -> (notebook, section heading)


def pool_size() -> int:
    """How many different questions the pool holds (written-out and numbered)."""
    return len(FIXED) + len(NUMBERED)


def pool_ids() -> list[str]:
    """Every question id in the pool."""
    return [q[0] for q in FIXED] + [f"n-{name}" for name in NUMBERED]


def make(question_id: str, rng: random.Random | None = None) -> Question:
    """One question of the pool by id; numbered ones get their numbers from `rng`."""
    rng = rng or random.Random()
    if question_id.startswith("n-"):
        name = question_id[2:]
        topic, fn = NUMBERED[name]
        text, options, key, why, numbers = fn(rng)
        return Question(question_id, topic, text, options, key, why, name, numbers)
    for qid, topic, text, options, key, why in FIXED:
        if qid == question_id:
            return Question(qid, topic, text, list(options), key, why)
    raise KeyError(f"no question {question_id!r} in the pool")


def draw(n: int = 10, seed=None) -> list[Question]:
    """A fresh set of `n` different questions (numbers drawn anew), spread over the topics as evenly as possible."""
    ids = pool_ids()
    if not 1 <= n <= len(ids):
        raise ValueError(f"n must be between 1 and {len(ids)} (the pool's size)")
    rng = random.Random(seed)
    by_topic: dict = {}
    for qid in ids:
        by_topic.setdefault(make(qid, random.Random(0)).topic, []).append(qid)
    for group in by_topic.values():
        rng.shuffle(group)
    chosen: list = []
    topics = list(by_topic)
    rng.shuffle(topics)
    while len(chosen) < n:  # round robin over topics, so a short draw still spans the course
        for topic in topics:
            if by_topic[topic] and len(chosen) < n:
                chosen.append(by_topic[topic].pop())
    rng.shuffle(chosen)
    return [make(qid, rng) for qid in chosen]


def summary(questions: list, answers: dict) -> dict:
    """{topic: {"right", "asked", "module", "reread"}} for the topics asked; `answers` maps question id to letter."""
    out: dict = {}
    for q in questions:
        module, title, notebook = TOPICS[q.topic]
        row = out.setdefault(q.topic, {"right": 0, "asked": 0, "module": module, "title": title,
                                       "reread": notebook})
        row["asked"] += 1
        given = answers.get(q.id)
        row["right"] += int(isinstance(given, str) and given.strip().lower() == q.key)
    return dict(sorted(out.items(), key=lambda kv: kv[1]["module"]))


def to_reread(scores: dict) -> list[str]:
    """The notebooks to reread: those of topics with a wrong answer, weakest first."""
    weak = [(row["right"] / row["asked"], row["module"], row["reread"]) for row in scores.values()
            if row["right"] < row["asked"]]
    return [notebook for _, _, notebook in sorted(weak)]


def inline(text: str) -> str:
    """Text for a widget's HTML: escaped, with `code` spans set as code (a widget does not render markdown)."""
    import html

    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def report(scores: dict) -> str:
    """The score by topic and what to reread, as text."""
    right = sum(r["right"] for r in scores.values())
    asked = sum(r["asked"] for r in scores.values())
    lines = [f"score {right}/{asked}"]
    for topic, row in scores.items():
        mark = "✓" if row["right"] == row["asked"] else "✗"
        lines.append(f"{mark} module {row['module']} ({row['title']}): {row['right']}/{row['asked']}")
    again = to_reread(scores)
    lines.append("reread: " + (", ".join(again) if again else "nothing, well done"))
    return "\n".join(lines)


class Interview:
    """Asks a drawn set one question at a time in a widget, explains each answer, ends with the score by topic.

    `answer(letter)` and `next()` drive it without a browser (the buttons call them), so it runs headless too.
    """

    def __init__(self, n: int = 10, seed=None):
        import ipywidgets as W

        self.questions = draw(n, seed)
        self.answers: dict = {}
        self.index = 0
        self.header = W.HTML()
        self.body = W.HTML()
        self.buttons = W.HBox()
        self.feedback = W.HTML()
        self.next_button = W.Button(description="next question", icon="arrow-right", disabled=True)
        self.next_button.on_click(lambda _: self.next())
        self.again = W.Button(description="new draw", icon="refresh")
        self.again.on_click(lambda _: self.restart())
        self.size = W.IntSlider(value=n, min=1, max=len(pool_ids()), description="questions",
                                continuous_update=False)
        self.box = W.VBox([self.header, self.body, self.buttons, self.feedback,
                           W.HBox([self.next_button, self.again, self.size])])
        self._render()

    @property
    def current(self) -> Question | None:
        """The question being asked (None once all are answered and the score is shown)."""
        return self.questions[self.index] if self.index < len(self.questions) else None

    def _render(self) -> None:
        import html

        import ipywidgets as W

        q = self.current
        if q is None:
            scores = summary(self.questions, self.answers)
            self.header.value = "<b>Done</b>"
            self.body.value = "<pre>" + html.escape(report(scores)) + "</pre>"
            self.buttons.children, self.feedback.value = (), ""
            self.next_button.disabled = True
            return
        module = TOPICS[q.topic][0]
        self.header.value = f"<b>Question {self.index + 1} of {len(self.questions)}</b> · module {module}"
        # Options as text and short letter buttons: a long option would be cut off inside a button.
        options = "".join(f"<li><b>{l})</b> {inline(o)}</li>" for l, o in zip(LETTERS, q.options))
        self.body.value = f"<p>{inline(q.text)}</p><ul style='list-style:none'>{options}</ul>"
        buttons = []
        for letter, option in zip(LETTERS, q.options):
            b = W.Button(description=letter, tooltip=option, layout=W.Layout(width="60px"))
            b.on_click(lambda _, letter=letter: self.answer(letter))
            buttons.append(b)
        self.buttons.children = tuple(buttons)
        self.feedback.value = ""
        self.next_button.disabled = True

    def answer(self, letter: str) -> bool:
        """Answer the current question; shows whether it was right and why. Returns True when right."""
        import html

        q = self.current
        if q is None or q.id in self.answers:
            return False
        self.answers[q.id] = letter
        right = letter.strip().lower() == q.key
        for b in self.buttons.children:
            b.disabled = True
            if b.description == q.key:
                b.button_style = "success"
            elif b.description == letter and not right:
                b.button_style = "danger"
        notebook, section = WHERE.get(q.id, (TOPICS[q.topic][2], ""))
        where = f"<br>proven live in {html.escape(notebook)}" + (f", section <i>{html.escape(section)}</i>"
                                                                  if section else "")
        self.feedback.value = (("✓ right. " if right else f"✗ the answer is {q.key}. ") + inline(q.why) + where)
        self.next_button.disabled = False
        return right

    def next(self) -> None:
        """Go to the next question (or the score at the end)."""
        if self.current is not None and self.current.id in self.answers:
            self.index += 1
            self._render()

    def restart(self) -> None:
        """Draw a fresh set (as many questions as the slider says) and start again."""
        self.questions, self.answers, self.index = draw(self.size.value), {}, 0
        self._render()

    def scores(self) -> dict:
        """summary() of the answers given so far."""
        return summary(self.questions[: self.index], self.answers)

    def show(self):
        """Display the widget (headless runs show the first question as text too)."""
        from IPython.display import display

        # The first question as the box's text/plain: shown where no widget renders (a saved or headless run),
        # never under the live box, which moves on to other questions.
        bundle = self.box._repr_mimebundle_()
        q = self.current
        if q is not None:
            bundle["text/plain"] = f"Q1. {q.text}\n" + "\n".join(f"  {l}) {o}" for l, o in zip(LETTERS, q.options))
        display(bundle, raw=True)
        return None
