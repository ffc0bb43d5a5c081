"""Interview practice: a pool of questions on the whole course, fresh draws with varied numbers, a score by topic.

The pool is plain data: `FIXED` holds questions written out (id, topic, question, four options, key, why), and
`NUMBERED` holds small functions that make a question from a random generator, so each draw asks with other
numbers and computes its own key. `draw()` picks a set without duplicates, `summary()` scores it by topic and
names the module to reread, and `Interview` asks one question at a time in a widget.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

LETTERS = "abcd"

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
FIXED = [
    ("setup-connector", "setup", "What must be on Spark's classpath for `format(\"kafka\")` to work?",
     ["nothing: PySpark ships it", "kafka-python", "the spark-sql-kafka-0-10 connector matching Spark's version",
      "a Kafka Connect worker"], "c",
     "The Kafka source and sink are a separate artifact, spark-sql-kafka-0-10 for your Spark and Scala version; "
     "without it Spark cannot find the data source `kafka`."),
    ("setup-bootstrap", "setup", "Which option does every Kafka source and sink need?",
     ["kafka.bootstrap.servers", "kafka.group.id", "startingOffsets", "subscribe"], "a",
     "It is how they find the cluster. The source checks it at `load()` (\"Option 'kafka.bootstrap.servers' must be "
     "specified\"); the sink does not check it: without it the write fails later, when a task creates its Kafka "
     "producer. A sink needs no subscribe, and group ids are generated."),
    ("setup-bytes", "setup", "What type are the `key` and `value` columns of a Kafka stream?",
     ["string", "whatever kafka.value.deserializer says", "a struct parsed from JSON", "binary"], "d",
     "Always binary: the connector rejects Kafka deserializer options. Cast (`CAST(value AS STRING)`) or parse "
     "(`from_json`) in the DataFrame."),
    ("setup-latest", "setup", "A new stream on a topic full of old records sees only empty batches. Why?",
     ["the default startingOffsets for a stream is latest: only records written after its start are read",
      "maxOffsetsPerTrigger defaults to 0", "the broker hides old records from Spark",
      "streams read only committed group offsets"], "a",
     "Streams start at `latest` unless told otherwise (batch reads default to earliest). Use "
     "startingOffsets=earliest on the first run to read the history."),
    ("setup-local2", "setup", "What does `local[2]` mean for a streaming query?",
     ["two executors on two machines", "two worker threads: at most two tasks run at once",
      "two queries at most", "two Kafka partitions per task"], "b",
     "Local mode with two threads: a batch of six Kafka tasks runs them two at a time."),
    ("source-fetch", "source", "Who fetches the records of a micro-batch from Kafka?",
     ["the driver, which ships them to executors", "a long-running receiver", "each task, directly from the broker, "
      "for its planned offset range", "the checkpoint"], "c",
     "The driver only plans: it lists partitions and latest offsets and makes one offset range per partition. Each "
     "range becomes a task, and executors fetch that range from the broker themselves."),
    ("source-group", "source", "Which consumer group does a Spark Kafka query use?",
     ["one you must set with kafka.group.id", "one generated per query: spark-kafka-source-<uuid>-<hash>",
      "the application name", "the group `spark`"], "b",
     "Each query makes up its own group id (prefix from groupIdPrefix; the hash is of the source's checkpoint "
     "folder, <checkpoint>/sources/<i>); executors add `-executor`. They assign() "
     "partitions and never commit, so the group holds nothing on the broker."),
    ("source-new-partitions", "source", "Partitions are added to a subscribed topic while the query runs. Then:",
     ["they are ignored until a restart", "the query fails", "they are read from latest",
      "a later trigger finds them and reads them from earliest"], "d",
     "Topics and partitions are re-listed on every trigger; a new partition starts from earliest (if its earliest "
     "offset is not 0, Spark reports possible data loss)."),
    ("source-auto-reset", "source", "What does `kafka.auto.offset.reset=earliest` do on a Spark Kafka source?",
     ["it is refused with an IllegalArgumentException pointing to startingOffsets", "reads from earliest",
      "nothing: silently ignored", "only affects restarts"], "a",
     "Spark manages positions itself; the connector rejects the option and tells you to use startingOffsets."),
    ("source-headers", "source", "How do you read Kafka record headers?",
     ["they are always in the schema", "they cannot be read", "set includeHeaders=true: a headers "
      "array<struct<key,value>> column is added", "set kafka.headers=true"], "c",
     "Headers (Spark 3.0+) are off by default; includeHeaders=true adds the column."),
    ("source-min-partitions", "source", "What does `minPartitions` do?",
     ["creates partitions in Kafka", "a hint: Spark splits large offset ranges so a batch has at least about that "
      "many tasks", "sets the minimum executors", "skips batches smaller than it"], "b",
     "It is read parallelism: more tasks than Kafka partitions. It does not touch Kafka and is not a rate limit; "
     "maxRecordsPerPartition (4.0) splits ranges by size instead."),
    ("source-group-id", "source", "You set `kafka.group.id=billing` on a Spark source. What happens?",
     ["the query commits its offsets to group billing", "it is rejected", "it is allowed with a warning and "
      "groupIdPrefix is ignored; Spark still keeps offsets only in its checkpoint", "it replaces startingOffsets"],
     "c",
     "Allowed since 3.0 (useful for ACLs that name groups), with a warning; queries sharing a group id may interfere. "
     "Nothing is committed either way."),
    ("source-fail-on-data-loss", "source", "What does `failOnDataLoss` (default true) do?",
     ["fails the query when offsets it needs are gone (retention, topic recreated, offsets went backwards)",
      "retries lost records from the producer", "makes the sink exactly-once", "drops malformed records"], "a",
     "With true the query stops with an error explaining the option; with false Spark logs a warning and continues "
     "from what is still there (the vanished records are lost)."),
    ("source-retention", "source", "A query was stopped for longer than the topic's retention. On restart:",
     ["it reads from latest", "with failOnDataLoss=true (default) it fails: the checkpoint's offsets no longer "
      "exist", "it resets to the group's offsets", "it silently skips ahead"], "b",
     "The checkpoint points at deleted offsets. The default refuses to continue; failOnDataLoss=false continues "
     "from the earliest available offset and the gap is lost."),
    ("offsets-where", "offsets", "Where does Spark keep a query's consumed offsets between batches?",
     ["in Kafka's __consumer_offsets", "in the checkpoint folder: offsets/N and commits/N",
      "in executor memory", "in ZooKeeper"], "b",
     "The checkpoint is the single source of truth; Spark commits nothing to Kafka."),
    ("offsets-restart", "offsets", "A query with a checkpoint is restarted with startingOffsets changed to earliest. "
     "Where does it start?", ["at the beginning of the topic", "at latest", "it fails",
                               "where its checkpoint says: startingOffsets applies only to a fresh checkpoint"], "d",
     "startingOffsets is used only when the checkpoint has no offsets yet; on restart the checkpoint wins."),
    ("offsets-order", "offsets", "When are `offsets/N` and `commits/N` written?",
     ["offsets/N before batch N runs (its planned end offsets), commits/N after it finished", "both after",
      "commits/N first", "offsets/N only on shutdown"], "a",
     "Write-ahead: the plan first, the commit after the sink finished. A restart uses the pair to decide what to "
     "re-run."),
    ("offsets-crash", "offsets", "A crash leaves offsets/7 without commits/7. On restart Spark:",
     ["skips batch 7", "re-plans batch 7 with the current cap", "re-runs batch 7 with exactly the same offsets",
      "starts from latest"], "c",
     "The planned range is replayed as is; that replay is why the Kafka sink can write duplicates."),
    ("offsets-delete", "offsets", "You delete a query's checkpoint and start it again. What happens?",
     ["it resumes where it stopped", "it is a brand-new query: startingOffsets decides again (latest skips what came "
      "in, earliest re-reads everything)", "it resumes from the consumer group", "it refuses to start"], "b",
     "All memory of progress was in the checkpoint; without it the start position is resolved anew."),
    ("offsets-share", "offsets", "Two different queries are given the same checkpoint folder. What is true?",
     ["it is fine: each keeps its own offsets inside", "a checkpoint is one query's state: the second would resume "
      "from the first's offsets or conflict with it; give every query its own", "Spark merges them",
      "Kafka prevents it"], "b",
     "offsets/, commits/ and metadata (the query id) describe one query. Sharing the folder mixes two queries' "
     "progress."),
    ("offsets-replay", "offsets", "How do you replay a Spark query's data from the beginning?",
     ["kafka-consumer-groups --reset-offsets --to-earliest", "restart with startingOffsets=earliest",
      "new checkpoint folder plus startingOffsets=earliest (or explicit JSON offsets)", "delete the topic"], "c",
     "Group offsets are ignored and a restart keeps the checkpoint's position: only a fresh checkpoint resolves "
     "startingOffsets again."),
    ("offsets-ending", "offsets", "What does `endingOffsets` do in a streaming query?",
     ["stops the stream there", "the load fails: ending offsets are for batch reads; use trigger(availableNow=True) "
      "for a bounded run", "ignored", "sets the cap"], "b",
     "The connector refuses it in streams ('ending offset not valid in streaming queries')."),
    ("offsets-metadata", "offsets", "What does the checkpoint's `metadata` file hold?",
     ["the query id, the same across restarts", "the Spark config", "the topic's schema", "the last offsets"], "a",
     "Each run also gets a new runId, but the id in metadata stays."),
    ("offsets-sources", "offsets", "What is in `sources/0/0`?",
     ["the latest offsets", "the source's initial offsets, written once at the first start; a crash in batch 0 "
      "replays from there", "the sink's state", "the commit log"], "b",
     "It pins batch 0's start so a crash in batch 0 never resolves startingOffsets again."),
    ("lag-cli", "lag", "Why does `kafka-consumer-groups --describe` show nothing useful for a Spark query?",
     ["Spark commits to ZooKeeper", "the CLI needs the app name", "Spark never commits offsets to Kafka: positions "
      "live in the checkpoint", "Spark groups are hidden by the broker"], "c",
     "Executors assign() partitions under a generated group and never commit; the driver lists offsets with the "
     "AdminClient. There is nothing in Kafka to describe."),
    ("lag-measure", "lag", "How do you measure a Spark query's lag?",
     ["numInputRows", "latestOffset − endOffset per partition from lastProgress's sources (or the broker's latest "
      "offsets minus the checkpoint's last committed end)", "batchDuration", "the group's committed offsets"], "b",
     "Both come from Spark's own records of its position; the connector also reports min/max/avg "
     "OffsetsBehindLatest in each Kafka source's metrics."),
    ("lag-diagnose", "lag", "inputRowsPerSecond stays above processedRowsPerSecond and the lag grows batch after "
     "batch. What is it and what helps?",
     ["normal; wait", "raise maxOffsetsPerTrigger", "the query cannot keep up: it needs throughput (more partitions "
      "or minPartitions with cores to match, cheaper processing)", "shorten the trigger"], "c",
     "A cap only bounds batches and contains bursts; steady growth means processing capacity is below the input "
     "rate."),
    ("lag-listener", "lag", "What is the production way to watch a query's lag and alert on it?",
     ["a StreamingQueryListener (onQueryProgress) feeding metrics and alerts", "polling the consumer-group CLI",
      "reading executor logs", "the Kafka broker's log"], "a",
     "Every batch's progress event reaches the listener with the offsets it needs."),
    ("lag-metrics", "lag", "Where does the Kafka source report its own lag summary?",
     ["in the sink's metrics", "nowhere", "in the checkpoint", "in each Kafka source's `metrics` of the progress: "
      "min/max/avgOffsetsBehindLatest (strings)"], "d",
     "Since 3.2, next to startOffset, endOffset and latestOffset."),
    ("lag-zero", "lag", "A query without maxOffsetsPerTrigger reports latestOffset − endOffset = 0 after every "
     "batch. What does that say?",
     ["that it keeps up with its producers", "nothing is being produced", "little: an uncapped batch reads up to "
      "the latestOffset it was planned with, so this lag is 0 even while the query falls behind",
      "Spark committed to Kafka"], "c",
     "latestOffset is fetched when the batch is planned; without a cap the batch reads all of it. Measure against "
     "the broker's latest offsets now, or watch the batches grow; with a cap this lag becomes meaningful."),
    ("bp-automatic", "backpressure", "Does Structured Streaming handle backpressure automatically?",
     ["yes, with spark.streaming.backpressure.enabled", "yes, always", "no: the engineer bounds batches "
      "(maxOffsetsPerTrigger, trigger interval) and adds throughput", "Kafka slows the producers"], "c",
     "The PID loop belongs to DStreams and has no effect on Structured Streaming."),
    ("bp-max-rate", "backpressure", "`spark.streaming.kafka.maxRatePerPartition=1000` on a Structured Streaming "
     "query does what?", ["caps each partition at 1,000 records/s", "nothing: it is a DStreams setting",
                          "fails the query", "caps each batch at 1,000"], "b",
     "Structured Streaming's lever is maxOffsetsPerTrigger, one budget per source per trigger."),
    ("bp-pid", "backpressure", "What did DStreams' backpressure adapt?",
     ["the producers' rate", "Kafka quotas", "the number of partitions", "Spark's own ingestion rate, with a PID "
      "estimator and a 100 records/s minRate floor"], "d",
     "It never slowed producers; it only changed how fast Spark read."),
    ("bp-symptoms", "backpressure", "Which set of signs shows a query under backpressure?",
     ["lag growing, batch durations beyond the trigger interval, late triggers, memory pressure where a batch "
      "is buffered",
      "idle executors and zero lag", "a shrinking checkpoint", "more consumer groups"], "a",
     "All follow from input arriving faster than batches finish."),
    ("bp-executors", "backpressure", "Do more executors always fix a lagging Kafka query?",
     ["yes", "no: a batch's read stage has one task per partition with data (unless minPartitions splits them), "
      "and the bottleneck may be the sink or a skewed partition", "only with the once trigger", "only on Kafka 4"],
     "b",
     "Cores beyond the read stage's tasks sit idle while it reads; stages after a shuffle run "
     "spark.sql.shuffle.partitions tasks (AQE, on for stateless streams since 4.1, may coalesce them). Find the "
     "bottleneck first."),
    ("bp-burst", "backpressure", "A burst of a million records hits an uncapped query. What happens?",
     ["Spark drops records", "batches stay small", "the next batch takes the whole burst: one huge, slow batch, "
      "which holds it in memory only if something buffers it", "the query pauses"], "c",
     "Without a cap a batch reads everything up to latest. Its tasks stream their records, so a map-only batch "
     "needs little memory; a shuffle, state or a collect/toPandas in foreachBatch holds the burst. A cap turns "
     "the burst into lag that builds and drains."),
    ("bp-once", "backpressure", "`trigger(once=True)` with maxOffsetsPerTrigger=1000 on a backlog of 50,000:",
     ["one batch of 50,000: once ignores the cap", "50 batches of 1,000", "one batch of 1,000",
      "it fails"], "a",
     "once (deprecated since 3.4) runs one uncapped batch; availableNow runs capped batches until the backlog at "
     "its start is done, with a stronger processing guarantee and better watermark handling (the three reasons "
     "of once's deprecation note)."),
    ("rate-three", "rate", "Which three source options limit how much a trigger reads?",
     ["maxRatePerPartition, minRate, initialRate", "maxOffsetsPerTrigger, minOffsetsPerTrigger, maxTriggerDelay",
      "minPartitions, maxRecordsPerPartition, failOnDataLoss", "fetchOffset.numRetries, pollTimeoutMs, "
      "maxOffsetsPerTrigger"], "b",
     "A ceiling per trigger, a floor that skips small triggers, and the longest a floor may delay a batch (default "
     "15m)."),
    ("rate-vs-bp", "rate", "Backpressure against rate limiting: which is right?",
     ["they are the same thing", "backpressure is the situation (input faster than processing); rate limiting "
      "(a cap) is the lever that keeps batches bounded while it lasts", "rate limiting speeds a query up",
      "backpressure is a Kafka setting"], "b",
     "A cap bounds batch size (and memory, where the batch is buffered); only more throughput removes steady "
     "backpressure."),
    ("rate-min-max", "rate", "minOffsetsPerTrigger=5000 with maxOffsetsPerTrigger=1000:",
     ["refused: the minimum is higher than the maximum", "reads 5,000", "reads 1,000", "alternates"], "a",
     "The connector checks it when the stream is loaded."),
    ("rate-delay-default", "rate", "What is maxTriggerDelay's default?",
     ["0", "1 minute", "15 minutes", "no limit"], "c",
     "15m: with minOffsetsPerTrigger, a trigger waits at most that long since the last batch."),
    ("rate-available-now", "rate", "What does trigger(availableNow=True) do?",
     ["runs forever", "processes what is there when it starts, in capped batches, then stops",
      "one uncapped batch", "reads only new records"], "b",
     "Since 3.3; the catch-up job's trigger, replacing once."),
    ("rate-default-trigger", "rate", "What does the default trigger do?",
     ["every 10 s", "starts the next micro-batch as soon as the previous one ends", "once", "continuous"], "b",
     "No interval: the next batch is planned as soon as the last one ends. When nothing new is there no batch "
     "runs; Spark checks again after a short polling delay."),
    ("rate-continuous", "rate", "What is true of the continuous trigger?",
     ["it is the default", "it supports maxOffsetsPerTrigger", "low latency with long-running tasks, but it does "
      "not support the rate limits (and supports only map-like operations)", "it is exactly-once"], "c",
     "Experimental since 2.3 and legacy: millisecond latency, at-least-once, no cap. Spark's guide points to "
     "Real-time Mode (4.1, `trigger(realTime=...)`) instead."),
    ("rate-realtime-duration", "rate", "What does the duration in `trigger(realTime=\"5 minutes\")` set?",
     ["how late a record may come out", "how often the query checkpoints its offsets: records come out within "
      "milliseconds all the same", "the largest batch, in records", "how long the query runs"], "b",
     "Real-time Mode runs one long-running task per partition for the whole batch and writes each record as it is "
     "read; the duration (5 s at least) is when the batch ends and its offsets are written. Module 5 measured "
     "milliseconds against a few hundred for back-to-back micro-batches."),
    ("rate-realtime-refused", "rate", "Which query can Spark 4.2 run in Real-time Mode?",
     ["Kafka to Kafka with a filter and a projection, output mode update", "a groupBy().count() in update mode",
      "a Kafka source into foreachBatch", "a Kafka source with maxOffsetsPerTrigger"], "a",
     "Stateless Kafka queries in update mode only: an aggregation's operators are not on its allowlist in 4.2, "
     "foreachBatch's sink is not either, and the source refuses its rate options (there is no batch to cap)."),
    ("rate-realtime-slots", "rate", "A Real-time Mode query reads a 3-partition topic on `local[2]`. What happens?",
     ["Spark refuses to start it", "it runs three tasks on two cores by turns, a little slower",
      "the third partition's task starts only when the batch ends, and reads nothing: no error, and its records "
      "never come out", "it merges two partitions into one task"], "c",
     "Each task reads until the batch's end time, so it needs a task slot for every partition at once; a task that "
     "starts at that end time reads nothing."),
    ("rate-realtime-sink", "rate", "Is a Kafka-to-Kafka query in Real-time Mode exactly-once into Kafka?",
     ["yes: offsets are written at the end of each batch", "yes, with kafka.transactional.id",
      "no, at-least-once as with micro-batches: a batch's offsets are written when it ends, so what it wrote "
      "before a failure is written again after the restart", "no: it may drop records"], "c",
     "Processing is exactly-once, delivery depends on the sink: Spark's Kafka sink has no transactions in either "
     "mode. Deduplicate downstream on a key where it matters."),
    ("rate-processing-time", "rate", "When do you choose processingTime('10 seconds')?",
     ["to bound latency and batch rhythm: one batch every 10 s (or later if a batch overruns)",
      "to stop after 10 s", "to read 10 s of data", "to commit every 10 s to Kafka"], "a",
     "With a cap, batches are bounded in count and in time."),
    ("rate-fewer-rows", "rate", "A big backlog, cap 1,000, yet a batch holds 998 rows. Why?",
     ["a bug", "Spark drops records", "shares are rounded down per partition (and the cap counts offsets, which "
      "transaction markers also use)", "the trigger cut it short"], "c",
     "prorate = cap × size/total is floored per partition."),
    ("rate-cap-change", "rate", "When does a new maxOffsetsPerTrigger take effect?",
     ["at once", "for batches planned after the restart; a planned but uncommitted batch replays with its old "
      "range", "after the next checkpoint cleanup", "never"], "b",
     "Options are read at start; the offset log's plan wins for a batch already planned."),
    ("rate-max-records", "rate", "What does maxRecordsPerPartition (4.0) do?",
     ["caps each Kafka partition per trigger", "splits offset ranges so no task reads more than that many records",
      "deletes records", "sets the sink batch size"], "b",
     "Parallelism, like minPartitions; the rate cap is still maxOffsetsPerTrigger."),
    ("multi-pattern", "multitopic", "Which option subscribes to every topic matching a regex?",
     ["subscribe", "assign", "subscribePattern", "topic"], "c",
     "subscribe takes a comma list, assign a JSON of partitions, subscribePattern a Java regex."),
    ("multi-anchor", "multitopic", "subscribePattern `events-.*` on the default path also matches:",
     ["`old-events-1`: the match is unanchored; write `^events-.*$`", "nothing else", "only `events-`",
      "topics of other clusters"], "a",
     "The AdminClient path uses find, not a full match."),
    ("multi-later", "multitopic", "A topic matching the pattern is created while the query runs:",
     ["ignored until restart", "picked up on a later trigger", "the query fails", "it needs assign"], "b",
     "The default (AdminClient) path re-lists topics on every trigger; the deprecated consumer path waits for "
     "the consumer's metadata refresh (metadata.max.age.ms, 5 minutes by default)."),
    ("multi-two-options", "multitopic", "subscribe and assign are both set:",
     ["assign wins", "subscribe wins", "IllegalArgumentException: only one of subscribe, subscribePattern, assign",
      "both are read"], "c",
     "Exactly one of the three is required."),
    ("multi-route", "multitopic", "How do you route rows by the topic they came from?",
     ["the `topic` column of the source", "the key", "one query per row", "headers only"], "a",
     "Every row carries topic, partition and offset."),
    ("multi-schemas", "multitopic", "Two topics carry different JSON schemas in one query. How do you parse them?",
     ["one from_json with a merged schema always works", "filter by topic and parse each with its own schema "
      "(e.g. in foreachBatch)", "it is impossible in one query", "set kafka.value.deserializer"], "b",
     "Split by the topic column, then from_json with the right schema per topic."),
    ("multi-quarantine", "multitopic", "from_json (default PERMISSIVE mode) turns a malformed message into "
     "nulls. Best practice?",
     ["drop nulls silently", "send those rows (with topic, partition, offset) to a quarantine topic or table",
      "fail the query", "retry the message"], "b",
     "Nothing is lost and the bad record can be found again by its coordinates."),
    ("multi-assign", "multitopic", "Which is a valid `assign` value?",
     ["orders:0,1", "{\"orders\":[0,1]}", "orders", "[\"orders-0\"]"], "b",
     "A JSON object of topic to partition list."),
    ("sink-value", "sinks", "Which column must a DataFrame have to be written to Kafka?",
     ["key", "topic", "value", "partition"], "c",
     "value (string or binary) is required; key, headers, partition and topic are optional."),
    ("sink-topic", "sinks", "The sink has a `topic` option and the DataFrame a `topic` column. Which wins?",
     ["the column", "the option", "it fails", "both: rows are duplicated"], "b",
     "The option overrides the column; leave it out to fan out by the column."),
    ("sink-eo", "sinks", "Is Kafka → Spark → Kafka exactly-once?",
     ["yes", "yes with checkpointing", "no: the Kafka sink is at-least-once (a re-run batch writes again); make it "
      "effectively exactly-once with idempotent consumers or dedup by a key made of the source coordinates",
      "only with the once trigger"], "c",
     "Spark's checkpoint makes the read side replayable, not the write side transactional."),
    ("sink-txn", "sinks", "Does setting `kafka.transactional.id` make Spark's Kafka sink exactly-once?",
     ["yes", "no: Spark never calls the producer's transaction API", "only with read_committed",
      "only in batch mode"], "b",
     "The producer even refuses to send before transactions are initialised."),
    ("sink-order", "sinks", "How do you keep per-key order through a Kafka sink?",
     ["a key column (one key, one partition, no partitions added later), each key's rows in one task in order "
      "(repartition by key, sortWithinPartitions), and consumers that skip a replayed batch's repeats",
      "set partition to 0", "use the once trigger", "sort the DataFrame"], "a",
     "Order exists only within a partition, and adding partitions remaps keys. A key column alone is not enough: "
     "the sink does not route rows to tasks by key, an executor's tasks share one cached producer, and a replayed "
     "batch writes its records again."),
    ("sink-file", "sinks", "Which built-in Spark sink is exactly-once by itself?",
     ["the Kafka sink", "the console sink", "the file sink: its _spark_metadata log records committed batches",
      "foreach"], "c",
     "Readers of the file sink's output only see files its log committed."),
    ("sink-foreach-batch", "sinks", "The pattern for exactly-once into a database from a stream:",
     ["foreachBatch writing idempotently (upsert keyed by topic/partition/offset) or transactionally with the "
      "batch_id recorded", "a larger cap", "kafka.transactional.id", "trigger once"], "a",
     "A replayed batch then changes nothing."),
    ("sink-serializer", "sinks", "kafka.value.serializer on the sink:",
     ["sets the format", "rejected: values must already be string or binary", "ignored", "required"], "b",
     "Serialise in the DataFrame, e.g. to_json(struct(*))."),
    ("sink-mode", "sinks", "Which save modes does a batch Kafka write accept?",
     ["Append and ErrorIfExists (the default)", "Overwrite only", "all four", "Ignore only"], "a",
     "Overwrite and Ignore are rejected."),
    ("sink-fanout", "sinks", "How do you write each row to a topic chosen by the data?",
     ["one query per topic", "a topic column per row, and no topic option", "the partition column",
      "headers"], "b",
     "The topic option would override every row."),
    ("sink-read-committed", "sinks", "Readers of a topic written by transactional producers should set:",
     ["kafka.isolation.level=read_committed", "failOnDataLoss=false", "includeHeaders", "minPartitions"], "a",
     "Aborted records are then skipped (they still use offsets, so a capped batch may hold fewer rows)."),
    ("offsets-by-time", "offsets", "How do you start a new query at the records written since 14:00?",
     ["kafka-consumer-groups --reset-offsets --to-datetime", "startingTimestamp (or startingOffsetsByTimestamp per "
      "partition) on a new checkpoint", "endingTimestamp", "startingOffsets=\"14:00\""], "b",
     "Each partition starts at the first record at or after that time (offsetsForTimes); with no such record the "
     "default startingOffsetsByTimestampStrategy=error fails and `latest` starts at latest. Like startingOffsets "
     "it counts only on a query's first start."),
    ("offsets-data-loss-metrics", "offsets", "With failOnDataLoss=false a batch skips offsets that retention "
     "deleted. Where do you see it?",
     ["nowhere: it is silent", "numInputRows in lastProgress counts them", "the Kafka scan's task metrics dataLoss "
      "and offsetOutOfRange (the SQL metrics of the batch), and a warning in the log",
      "in the consumer group's lag"], "c",
     "The scan counts how often it met lost data and how many offsets it skipped; progress events only show the rows "
     "that were left."),
    ("offsets-missing-metadata", "offsets", "Spark 4.2 restarts a query whose checkpoint has offsets/ and commits/ "
     "but no metadata file. What happens?",
     ["a new query id is generated", "it fails with STREAMING_CHECKPOINT_MISSING_METADATA_FILE",
      "it starts from startingOffsets", "it deletes the checkpoint"], "b",
     "A new id would make sinks that recognise replays by query id take them for new data; 4.2 refuses instead "
     "(spark.sql.streaming.checkpoint.verifyMetadataExists.enabled, default true)."),
    ("source-kip848", "source", "What does Kafka's new consumer group protocol (KIP-848) change for Spark's "
     "Kafka source on the default path?",
     ["every query must set group.protocol=consumer", "partition assignment moves to the broker, so tasks get "
      "other partitions", "nothing: the driver lists offsets with the AdminClient and executors assign() partitions; "
      "nobody joins a group", "Spark commits offsets to the group"], "c",
     "KIP-848 changes how members join a group and receive partitions; a Spark query never joins one."),
    ("sink-dedup-watermark", "sinks", "A topic written by Spark's Kafka sink holds replayed duplicates (same id, new "
     "offsets). A streaming reader can drop them with:",
     ["dropDuplicatesWithinWatermark on the id, with a watermark on event time", "kafka.isolation.level="
      "read_committed", "failOnDataLoss=false", "dropDuplicates on (topic, partition, offset)"], "a",
     "The copies have new offsets but the same id; dropDuplicatesWithinWatermark (3.5) remembers each id until the "
     "watermark passes it, so its state stays bounded."),
    ("sink-async-progress", "sinks", "What does asyncProgressTrackingEnabled=true do for a Kafka-to-Kafka query?",
     ["makes the sink exactly-once", "writes offsets/ and commits/ in the background at most every "
      "asyncProgressTrackingCheckpointIntervalMs, so batches are shorter but a restart re-runs more of them",
      "commits offsets to Kafka", "works with foreachBatch and availableNow"], "b",
     "It accepts only the Kafka, noop, console and memory sinks, processing-time triggers and stateless queries; "
     "more replays after a restart suit an at-least-once sink."),
    ("sink-open-transaction", "sinks", "A read_committed query stops receiving rows while the topic's log end keeps "
     "growing. A likely cause:",
     ["maxOffsetsPerTrigger is too low", "a producer left a transaction open: readers stop at the last stable "
      "offset until it commits or aborts", "the checkpoint is full", "the group was reset"], "b",
     "Records behind an open transaction wait with it, committed or not; the query's latestOffset stays at the last "
     "stable offset."),
]


def _choices(rng: random.Random, right, wrongs) -> tuple[list, str]:
    """Four options (the right one and three distinct wrong ones) in random order; returns (options, key)."""
    seen, options = {str(right)}, [str(right)]
    for wrong in wrongs:
        if str(wrong) not in seen:
            seen.add(str(wrong))
            options.append(str(wrong))
        if len(options) == 4:
            break
    step = 1
    while len(options) < 4:  # distractors that happened to coincide: fill with nearby numbers
        for candidate in (f"{_num(right) + step:,}", f"{max(0, _num(right) - step):,}"):
            if candidate not in seen and len(options) < 4:
                seen.add(candidate)
                options.append(candidate)
        step += 1
    rng.shuffle(options)
    return options, LETTERS[options.index(str(right))]


def _num(text) -> int:
    return int(str(text).replace(",", ""))


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
    options, key = _choices(rng, f"{right:,}", [f"{cap:,}", f"{min(backlog, cap):,}", f"{cap // 2:,}", f"{backlog:,}"])
    why = (f"One budget per source: {cap:,} × ({backlog:,} / {parts * backlog:,}) = {right:,} each, not the whole cap "
           "per partition.")
    return text, options, key, why, {"parts": parts, "cap": cap, "backlog": backlog}


def _uneven_split(rng):
    big, small = rng.randint(6, 30) * 1000, rng.randint(1, 5) * 1000
    cap = rng.choice([2_000, 3_000, 4_000, 5_000])
    right = prorate(cap, {0: big, 1: small})[0]
    text = (f"Partition 0 has {big:,} records waiting, partition 1 has {small:,}; maxOffsetsPerTrigger={cap:,}. "
            "How many records does partition 0 contribute to the next batch?")
    options, key = _choices(rng, f"{right:,}", [f"{cap // 2:,}", f"{cap:,}", f"{min(big, cap - small):,}",
                                                f"{big:,}"])
    why = (f"The split follows the backlog: {cap:,} × {big:,}/{big + small:,} rounded down = {right:,} "
           "(not half of the cap).")
    return text, options, key, why, {"big": big, "small": small, "cap": cap}


def _small_partitions(rng):
    parts = rng.choice([12, 16, 20, 24, 30])
    cap = rng.choice([5, 8, 10])
    text = (f"{parts} partitions each have exactly 1 record waiting and maxOffsetsPerTrigger={cap}. How many records "
            "does the next batch read?")
    options, key = _choices(rng, str(parts), [str(cap), str(parts - cap), "1"])
    why = (f"Each share is {cap}/{parts} < 1, which is rounded up to 1 so no partition starves: {parts} records, "
           "over the cap.")
    return text, options, key, why, {"parts": parts, "cap": cap}


def _tasks(rng):
    parts = rng.choice([3, 6, 8, 12, 24])
    cores = rng.choice([2, 4, 16])
    text = (f"A topic has {parts} partitions, all with new records, no minPartitions, and the cluster has {cores} "
            "cores. How many tasks read Kafka in the next micro-batch?")
    options, key = _choices(rng, str(parts), [str(cores), "1", str(parts * cores), str(max(parts, cores) * 2)])
    why = f"One offset range per Kafka partition with data, one task each: {parts}; cores only decide how many run at once."
    return text, options, key, why, {"parts": parts, "cores": cores}


def _resume(rng):
    end = rng.randint(10, 900) * 10
    text = (f"The last offsets/N file of a checkpoint ends with {{\"orders\":{{\"0\":{end}}}}} and commits/N exists. "
            "At which offset of partition 0 does the restarted query start reading?")
    options, key = _choices(rng, str(end), [str(end + 1), str(end - 1), "0"])
    why = f"Offsets in the log are the next offset to read: the restart plans batch N+1 from {end}."
    return text, options, key, why, {"end": end}


def _total_lag(rng):
    latest = [rng.randint(50, 400) * 10 for _ in range(3)]
    behind = [rng.randint(0, x // 10) for x in latest]
    end = [x - b for x, b in zip(latest, behind)]
    right = sum(behind)
    text = (f"A progress event's Kafka source shows latestOffset {{0: {latest[0]}, 1: {latest[1]}, 2: {latest[2]}}} "
            f"and endOffset {{0: {end[0]}, 1: {end[1]}, 2: {end[2]}}}. What is the total lag?")
    options, key = _choices(rng, str(right), [str(sum(end)), str(sum(latest)), str(max(behind))])
    why = f"Lag is latestOffset − endOffset per partition: {' + '.join(map(str, behind))} = {right}."
    return text, options, key, why, {"latest": latest, "end": end}


def _lag_growth(rng):
    rate = rng.choice([1_000, 2_000, 5_000])
    processed = rate - rng.choice([100, 200, 400])
    seconds = rng.choice([30, 60, 120])
    right = (rate - processed) * seconds
    text = (f"Records arrive at {rate:,}/s and the query processes {processed:,}/s. By how much does the lag grow "
            f"in {seconds} s?")
    options, key = _choices(rng, f"{right:,}", [f"{rate * seconds:,}", f"{processed * seconds:,}", "0"])
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
    options, key = _choices(rng, f"{right:,}", [f"{normal:,}", f"{fits:,}", f"{2 * fits:,}", f"{rate:,}"])
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
    options, key = _choices(rng, fmt(right), [fmt(max(wait, delay)), fmt(wait + delay), "0", fmt(delay * 2)])
    why = (f"A trigger waits until {minimum:,} offsets are there ({wait:g} s at {rate}/s) or {delay} s passed since "
           f"the last batch, whichever comes first: {right:g} s.")
    return text, options, key, why, {"minimum": minimum, "rate": rate, "delay": delay}


def _two_topics(rng):
    a, b = rng.choice([2, 3, 4, 6]), rng.choice([1, 2, 5, 8])
    text = (f"One query subscribes to two topics with {a} and {b} partitions, all with new records. How many tasks "
            "read Kafka in the next micro-batch?")
    options, key = _choices(rng, str(a + b), [str(max(a, b)), "2", str(a * b)])
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
        options = "".join(f"<li><b>{l})</b> {html.escape(o)}</li>" for l, o in zip(LETTERS, q.options))
        self.body.value = f"<p>{html.escape(q.text)}</p><ul style='list-style:none'>{options}</ul>"
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
        self.feedback.value = (("✓ right. " if right else f"✗ the answer is {q.key}. ") + html.escape(q.why))
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
