"""More interview questions: module 9 (the cluster) and the modules' sections the first pool left out.

Why a file of its own: `interview.py` holds the drill's machinery and the first 88 questions, and other tracks add
theirs beside it. Each question here names the section of the module that proves its answer live (`WHERE`), so a
wrong answer sends the candidate to the cell to rerun, not just to a module. Questions are written as the right
answer and three wrong ones (the myths each module corrects); `arranged()` places the keys so they spread over
a–d and no blind strategy (the longest option, the most code, one letter) gains from these (`python -m grader
lint` measures the pool). `interview.py` adds them to FIXED and NUMBERED with one line each.
"""
from __future__ import annotations

import math
import re

from .choices import choices

# (id, topic, question, right answer, [three wrong answers], why, (notebook, section heading))
WRITTEN = [
    # -- module 9: the cluster ----------------------------------------------------------------------------------
    ("cluster-preferred-rule", "cluster", "How does the connector choose a Kafka partition's preferred executor?",
     "a hash of the topic-partition, modulo the sorted executor count",
     ["the executor on the host where the partition's leader broker runs",
      "whichever executor has the fewest tasks when the batch is planned",
      "the executor that read the partition first, kept for the query's life"],
     "executors(floorMod(topicPartition.hashCode, numExecutors)) over the executors sorted by host, then id, in "
     "descending order: the same partition lands on the same executor batch after batch, so its cached consumer "
     "stays warm. Spark never looks at where the brokers run.",
     ("09-cluster-failures", "Who reads which partition")),
    ("cluster-new-executor", "cluster", "A Worker replaces a lost executor. What happens to the partitions' "
     "preferred executors?",
     "the new executor has a new id, so the hash picks anew and some move",
     ["nothing: the new executor inherits the lost one's id and partitions",
      "all of them wait out spark.locality.wait, then go to any executor",
      "none change: the hash is computed once, when the query starts, and kept"],
     "The sorted executor list changes with the new id, so floorMod over it maps some partitions elsewhere; the demo "
     "shows partitions moving after the kill.",
     ("09-cluster-failures", "The demo: kill things under a running query")),
    ("cluster-max-failures", "cluster", "By default, how many times may one task fail before Spark gives up and the "
     "query fails?",
     "4 attempts in all, by default", ["1: a streaming task is never retried",
                                                    "2: one retry, then the batch is replayed",
                                                    "as many as there are live executors"],
     "Lost tasks run again inside the same batch, up to spark.task.maxFailures attempts (4 by default); only then "
     "does the job, and the query, fail.",
     ("09-cluster-failures", "The demo: kill things under a running query")),
    ("cluster-replay-when", "cluster", "When does Spark replay a micro-batch from `offsets/N`?",
     "when the query restarts, after its driver died or it failed",
     ["as soon as an executor dies in the middle of the batch, on any node",
      "whenever one of the batch's tasks fails once (attempt 1)",
      "whenever a partition's leader broker changes mid-batch"],
     "Executor loss and task failures are retried inside the batch. A batch is re-run from offsets/N only by a "
     "restart: after the driver died, after the query failed, or after a stop() that cut a batch short.",
     ("09-cluster-failures", "The demo: kill things under a running query")),
    ("cluster-kafka-sink-retry", "cluster", "Which sink can get duplicates from an executor loss alone, with no "
     "batch replay?",
     "Spark's own Kafka sink, writing from the executors",
     ["foreachBatch upserting by topic, partition and offset",
      "the file sink, which lists each batch's files in its log",
      "foreachBatch writing one transaction keyed by batch id"],
     "A retried write task re-sends what the lost attempt had already sent, and the Kafka sink's abort() takes "
     "nothing back. The upsert and the transactional write absorb the retry; the file sink lists only committed "
     "files.",
     ("09-cluster-failures", "The demo: kill things under a running query")),
    ("cluster-abort", "cluster", "Why does a retried Kafka write task duplicate records?",
     "the lost attempt's records stay in the topic: its abort does nothing",
     ["the retry reads a different offset range from Kafka than the first one",
      "the sink opens a transaction per task, and the retry commits it twice",
      "the driver re-plans the batch with a new cap before the retry"],
     "KafkaDataWriter.abort() does nothing, so records a dead attempt sent stay; the new attempt sends its whole "
     "range again. The retry reads the same range, and the sink uses no transactions.",
     ("09-cluster-failures", "The demo: kill things under a running query")),
    ("cluster-local-mode", "cluster", "In `local[4]` mode, how many offset ranges get a preferred executor?",
     "none: the executor list leaves the driver out",
     ["all of them: the driver is the one executor, so all prefer it", "four, one for each task slot",
      "one per Kafka partition, as on a cluster"],
     "getPeers drops the driver's block manager, and in local mode it is the only one: the list is empty, so no range "
     "gets a location. local[4] is one executor with four task slots.",
     ("09-cluster-failures", "Who reads which partition")),
    ("cluster-min-partitions-below", "cluster", "`minPartitions=2` on a batch with 4 non-empty ranges. Do the ranges "
     "keep their preferred executors?",
     "yes: it splits only when it asks for more tasks than ranges",
     ["no: setting minPartitions at all drops every location",
      "only the two largest ranges keep theirs; the rest lose it",
      "no: the four ranges are merged into two tasks without a location"],
     "getRanges takes its split branch only when minPartitions exceeds the number of ranges (or "
     "maxRecordsPerPartition is set). Below that, the plain path keeps every preference, and ranges are never merged.",
     ("09-cluster-failures", "When the preferred executor is lost on purpose")),
    ("cluster-max-records-location", "cluster", "`maxRecordsPerPartition` is set, but no range of the batch is larger "
     "than it. Do the ranges keep their preferred executors?",
     "no: with the option set, every range is rebuilt without one",
     ["yes: a range that is not split keeps its preferred executor as before",
      "yes, for the ranges under the limit; the others lose it",
      "no, but only for partitions a dead executor used to read"],
     "Whenever maxRecordsPerPartition is set, getRanges takes its other branch and builds every range, split or "
     "left whole, with preferredLoc None.",
     ("09-cluster-failures", "When the preferred executor is lost on purpose")),
    ("cluster-locality-level", "cluster", "The Spark UI shows PROCESS_LOCAL for every read task of a "
     "minPartitions=8 query. What does that say about preferred executors?",
     "nothing: a task with no preference is reported as PROCESS_LOCAL too",
     ["every task ran on the executor its plan preferred, as PROCESS_LOCAL says",
      "every task found its cached consumer warm",
      "the records were read from the driver's memory"],
     "TaskSetManager hands out a task without a preference at PROCESS_LOCAL, so the locality column cannot tell the "
     "plain read from the split one. Only the plan (the RDD's preferred locations) does.",
     ("09-cluster-failures", "When the preferred executor is lost on purpose")),
    ("cluster-acks-one", "cluster", "With `acks=1` the leader acknowledges 50 records and dies before a follower "
     "fetched them. How many of the 50 survive?",
     "none, or one that a fetch in flight had carried over",
     ["all 50: the producer resends what it had sent",
      "all 50: the old leader hands them over to the new one on its return",
      "25: one follower had fetched half of them"],
     "acks=1 waits for the leader alone, and an acknowledged record is never resent. A follower without them is "
     "elected, and the old leader truncates its log to the new leader's when it returns.",
     ("09-cluster-failures", "What acks promises when the leader dies")),
    ("cluster-acks-all-timeout", "cluster", "Both followers are paused, so they stop fetching; `acks=all`, "
     "`min.insync.replicas=2`. What does the producer get for its 50 records?",
     "no acknowledgement: its requests time out, so it knows to retry",
     ["50 acknowledgements from the leader alone",
      "an error at once: the topic has become read-only",
      "25 acknowledgements, one for each record a follower fetched before the kill"],
     "The paused followers are still in the ISR (the controllers could not shrink it), so the leader waits for them "
     "and the requests time out. Nothing was acknowledged, so nothing acknowledged is lost.",
     ("09-cluster-failures", "What acks promises when the leader dies")),
    ("cluster-idempotence", "cluster", "Why should an `acks=all` producer also set `enable.idempotence=true` "
     "across a leader failover?",
     "a retried record the new leader already has would be written twice",
     ["without it, acks=all quietly falls back to acks=1",
      "a new leader refuses producers that are not idempotent",
      "it makes Spark's Kafka sink exactly-once across restarts of the query"],
     "A timed-out record may still have reached the new leader; the retry would append it again. Idempotence drops "
     "such a retry within the producer's session. It does nothing for a Spark batch replay.",
     ("09-cluster-failures", "What acks promises when the leader dies")),
    ("cluster-min-isr-two-down", "cluster", "A topic has 3 replicas and `min.insync.replicas=2`. Two of its brokers "
     "are down. What happens to `acks=all` writes?",
     "they are refused with a not-enough-replicas error",
     ["the last replica accepts them alone",
      "they are accepted and acknowledged once a broker returns",
      "they are accepted if unclean election is switched on"],
     "acks=all needs at least min.insync.replicas in the ISR; one is left, so the leader refuses the write and the "
     "producer retries. Unclean election concerns who may lead, not acceptance.",
     ("09-cluster-failures", "What acks promises when the leader dies")),
    ("cluster-min-isr-acks-one", "cluster", "Does `min.insync.replicas` decide whether an `acks=1` write is "
     "accepted?",
     "no: it decides acceptance only for acks=all",
     ["yes: every write needs that many replicas in sync",
      "yes, for acks=1 and acks=all, though not for acks=0",
      "only when the ISR has shrunk to the leader alone"],
     "Kafka rejects a write for too few in-sync replicas only when requiredAcks is -1 (all). Since Kafka 3.7 the "
     "high watermark also stops below the minimum, so such acks=1 records stay invisible until the ISR recovers.",
     ("09-cluster-failures", "What acks promises when the leader dies")),
    ("cluster-high-watermark-stops", "cluster", "Kafka 4.2: the ISR is below `min.insync.replicas` and an `acks=1` "
     "producer keeps writing. What do consumers, Spark included, see?",
     "nothing new until the ISR recovers: the high watermark stops",
     ["the new records at once, as with a healthy ISR",
      "the new records, flagged in a header as unreplicated copies of the log",
      "an error on every fetch until the ISR recovers"],
     "Since Kafka 3.7 (KAFKA-15583) the high watermark does not advance while the ISR is below the minimum, and "
     "consumers read only below it; Spark's latest offset stays put too.",
     ("09-cluster-failures", "What acks promises when the leader dies")),
    ("cluster-high-watermark", "cluster", "What is a partition's high watermark?",
     "the offset below which every in-sync replica holds the records",
     ["the newest offset the leader has written to its log",
      "the highest offset committed to __consumer_offsets by a group",
      "the offset up to which the log is kept before retention deletes segments"],
     "Consumers, Spark included, read only below it; records above it exist on the leader but not yet on the ISR.",
     ("09-cluster-failures", "What acks promises when the leader dies")),
    ("cluster-unclean-allows", "cluster", "What does `unclean.leader.election.enable=true` allow?",
     "a replica out of the ISR to lead when no in-sync one is alive",
     ["a leader change while the controller quorum is down",
      "the leader to acknowledge with acks=all before followers fetch",
      "two leaders for one partition during a network split, merged later"],
     "It is a topic config, false by default. The out-of-sync replica's log may end before records that were "
     "acknowledged and read.",
     ("09-cluster-failures", "An unclean election, live")),
    ("cluster-unclean-loses", "cluster", "After an unclean election, which records can be gone?",
     "records acknowledged under acks=all and already read",
     ["only records that no consumer had read yet, above the high watermark",
      "none of them, as long as failOnDataLoss is true",
      "only records produced with acks=0"],
     "In the lab: min.insync.replicas=1, the follower out of the ISR, 20 records acknowledged by the leader alone "
     "and read by both queries; then the out-of-sync follower led, and offsets 20–39 were gone and reused.",
     ("09-cluster-failures", "An unclean election, live")),
    ("cluster-backwards", "cluster", "How does Spark notice the data an unclean election lost?",
     "the latest offset is below where the query had read",
     ["the broker sends each consumer a data-loss event after the election",
      "the records' checksums stop matching the log",
      "the consumer group's lag turns negative"],
     "When it plans a batch it sees untilOffset < fromOffset and reports data loss. It sees nothing else: had the "
     "log grown back past the old end first, nothing would be reported.",
     ("09-cluster-failures", "An unclean election, live")),
    ("cluster-fodl-false-backwards", "cluster", "A query read a partition up to offset 40; after an unclean election "
     "its latest offset is 20. With `failOnDataLoss=false`, the next batch reads from:",
     "20: the backwards range is dropped as empty",
     ["40, once the log has grown past it again, so nothing is reread", "0, the partition's earliest offset",
      "nowhere: the partition leaves the query"],
     "reportDataLoss only logs a warning with false; the range is dropped and the next batch starts at the new end, "
     "reading later records at offsets where it had read others before.",
     ("09-cluster-failures", "An unclean election, live")),
    ("cluster-grown-past", "cluster", "After an unclean election the new leader's log grows past the query's old "
     "position before the query plans again. What does Spark report?",
     "nothing: it reads on from its old offset, skipping those in between",
     ["data loss, as for any unclean election",
      "a duplicate-offset warning naming every offset that the new leader reused",
      "an error that the partition's leader epoch changed"],
     "The check sees only an offset going backwards. Past the old end it looks like ordinary progress, and the "
     "records written at the reused offsets below it are silently never read.",
     ("09-cluster-failures", "An unclean election, live")),
    ("cluster-api-timeout", "cluster", "The driver's offset request meets a dead leader. What bounds how long it "
     "waits before Spark asks again?",
     "kafka.default.api.timeout.ms, 60 s unless set",
     ["spark.network.timeout, 120 s unless set", "kafka.request.timeout.ms (its 30 s default), then a retry",
      "maxTriggerDelay, 15 minutes unless set"],
     "Measured from the kill to the first query's failure: 65 s with the default, 13.5 s with 10 s.",
     ("09-cluster-failures", "An unclean election, live")),
    ("cluster-checkpoint-writers", "cluster", "On a cluster, who writes a stateful query's checkpoint files?",
     "the driver writes the logs and metadata, executors the state files",
     ["the driver alone, every file of the checkpoint",
      "the executors alone, each one writing the offsets of the range it read",
      "the brokers, under the query's consumer group"],
     "The driver writes offsets/, commits/, metadata and sources/; executors write state-store files under "
     "<checkpoint>/state/. A stateless query's checkpoint is the driver's alone.",
     ("09-cluster-failures", "Where the checkpoint must live")),
    ("cluster-checkpoint-tmp", "cluster", "checkpointLocation is `/tmp/ckpt` on a three-node cluster, and the "
     "driver restarts on another node. The query:",
     "finds no checkpoint and starts from startingOffsets again",
     ["resumes: Spark copies the checkpoint to the new driver",
      "refuses to start: a cluster needs checkpointLocation=hdfs://…",
      "resumes from the offsets its consumer group committed to Kafka"],
     "The new node's /tmp holds nothing, so it is a new query. Spark accepts a local path and Kafka holds no "
     "offsets for it: keep checkpoints on storage every node reaches.",
     ("09-cluster-failures", "Where the checkpoint must live")),
    ("cluster-checkpoint-storage", "cluster", "Which storage suits a streaming checkpoint on a cluster?",
     "HDFS, NFS, or an object store with fast, atomic renames",
     ["any object store at all: Spark's output committers make it safe",
      "the driver's local disk, backed up every night",
      "a compacted Kafka topic, one key per batch"],
     "Spark's cloud-integration guide: an object store only where its connector gives the checkpoint a fast, atomic "
     "rename. Output committers concern batch output, not checkpoints.",
     ("09-cluster-failures", "Where the checkpoint must live")),
    ("cluster-kraft-quorum", "cluster", "Three KRaft controllers form the metadata quorum. How many may die with "
     "the cluster's metadata still updated?",
     "one: the two left are a majority",
     ["two: a single controller can decide alone", "none: every controller must agree",
      "all three: the brokers cache the metadata"],
     "A quorum decides by majority; two of three remain after one loss, so leaders and ISRs still change.",
     ("09-cluster-failures", "The cluster")),
    ("cluster-old-leader-returns", "cluster", "After a clean election, the old leader of an `acks=1` partition "
     "returns. The records it alone had:",
     "are truncated from its log to match the new leader",
     ["are copied to the new leader when it rejoins",
      "stay readable at their old offsets, but on that broker only",
      "are moved to a new partition of the topic"],
     "A returning replica truncates to the new leader's log and follows it; what only it had is gone.",
     ("09-cluster-failures", "What acks promises when the leader dies")),
    # -- modules 0–7: sections the first pool left out ----------------------------------------------------------
    ("setup-connector-version", "setup", "Which connector artifact goes with PySpark 4.2.0?",
     "spark-sql-kafka-0-10_2.13 at version 4.2.0",
     ["spark-sql-kafka-0-10_2.13 at version 3.5.0, the LTS line", "spark-streaming-kafka-0-10_2.13 at 4.2.0",
      "kafka-clients at the broker's own version"],
     "The connector is built for one Spark and Scala version: the same version as PySpark, for Scala 2.13. The "
     "streaming-kafka artifact is DStreams', and kafka-clients holds no Spark data source.",
     ("00-setup", "Spark is up")),
    ("setup-cap-whole-batch", "setup", "`maxOffsetsPerTrigger=1000` on a 4-partition topic bounds what?",
     "each micro-batch, over all the partitions together",
     ["each partition separately, in every micro-batch it takes part in", "the records read per second",
      "each task's fetch from the broker"],
     "One budget per source per trigger, split over the partitions by backlog (module 4).",
     ("00-setup", "A first streaming read, with a cap")),
    ("source-fixed-columns", "source", "Besides key and value, what does every row of the Kafka source carry?",
     "topic, partition, offset, timestamp and timestampType",
     ["the consumer group id and its committed offset",
      "the producer's client id and its acks setting",
      "nothing more, unless includeHeaders is set on the source"],
     "The schema is fixed; includeHeaders adds a headers column on top of these.",
     ("01-source-internals", "The fixed schema")),
    ("source-typo-bootstrap", "source", "`kafka.bootstrap.servers` names a port nobody listens on. With default "
     "options, what happens?",
     "start() returns; the query fails about three minutes later",
     ["load() fails at once: the source checks the address",
      "start() blocks until a broker answers the address",
      "the query runs on with empty batches, and never fails or warns"],
     "The connector checks the option is set, not that it answers. Measured: the stream failed 184 s after start() "
     "with Kafka's TimeoutException (listNodes); lastProgress stays None meanwhile.",
     ("01-source-internals", "A mistyped broker address is not an option error")),
    ("source-three-minutes", "source", "Why does that mistyped address take about three minutes to fail?",
     "3 tries × a 60 s API timeout, plus 1 s between tries",
     ["a 3-minute session timeout of Spark's consumer group",
      "a 120 s network timeout, then one 60 s retry",
      "the 15-minute maxTriggerDelay, cut short by a heartbeat"],
     "The AdminClient waits default.api.timeout.ms (60 s); the offset reader tries fetchOffset.numRetries (3) times, "
     "sleeping fetchOffset.retryIntervalMs (1 s): 3 × 61 s = 183 s.",
     ("01-source-internals", "Going deeper: why three minutes")),
    ("source-auto-commit", "source", "What does the source do with `kafka.enable.auto.commit=true`?",
     "rejects it when the DataFrame is created",
     ["commits each batch's offsets to the group", "ignores it without a word",
      "commits only when query.stop() ends the query cleanly"],
     "Spark never commits to Kafka, so the option is refused at load(), before any query starts, like "
     "auto.offset.reset, the deserializers and interceptor.classes.",
     ("01-source-internals", "Options Spark rejects")),
    ("source-interceptors", "source", "Why does the source reject `kafka.interceptor.classes`?",
     "an interceptor could change the records Spark reads",
     ["interceptors need a consumer group to attach to, and Spark has none",
      "it is a producer setting with no consumer meaning",
      "executors cannot load classes the user supplies"],
     "A consumer interceptor may rewrite records; Spark's replays rely on reading exactly what the log holds.",
     ("01-source-internals", "Options Spark rejects")),
    ("source-header-type", "source", "With `includeHeaders=true`, what type is the `headers` column?",
     "an array of structs of a string key and a binary value",
     ["a map of string to string, with the values decoded as UTF-8", "one JSON string holding every header",
      "a struct of a binary key and a string value"],
     "Header values are bytes like the record's: filter a header by name, then cast its value.",
     ("01-source-internals", "Headers")),
    ("offsets-next-offset", "offsets", "`offsets/7` holds `{\"orders\":{\"0\":4400}}`. What is 4400?",
     "the first offset batch 8 reads from partition 0",
     ["the last offset batch 7 read from partition 0", "the number of records batch 7 read",
      "the offset Spark committed to the consumer group"],
     "Each number is the next offset to read: batch 7 read up to 4399, and the next batch starts at 4400.",
     ("02-offset-tracking", "3. The checkpoint's files, read while the query runs")),
    ("offsets-retained", "offsets", "How many batches does a checkpoint's offset log keep by default?",
     "the last 100, by default",
     ["every batch, for the query's whole life", "the last one, overwritten each time",
      "the last 10 (the retained trigger count)"],
     "spark.sql.streaming.minBatchesToRetain, 100 by default; older offsets/ and commits/ files are deleted.",
     ("08-cheat-sheet", "3 · The checkpoint")),
    ("multi-new-topic-restart", "multitopic", "A query first started with `startingOffsets=latest` restarts on its "
     "checkpoint with topic B added. From where does it read B?",
     "from B's earliest offset",
     ["from B's latest offset, as startingOffsets says", "from the offsets the checkpoint holds for A",
      "from nowhere: adding a topic needs a new checkpoint"],
     "startingOffsets counts only on a query's first start; a topic new to the checkpoint is read from earliest "
     "(and if retention trimmed it, that is reported as data loss).",
     ("06-multi-topic", "Changing the subscription of a restarted query")),
    ("multi-removed-topic", "multitopic", "A topic is removed from a restarted query's subscription. What does the "
     "connector do?",
     "reports data loss, as for partitions that vanished",
     ["drops its offsets quietly and reads on", "keeps reading it from the offsets the checkpoint holds for it",
      "starts the query under a new query id"],
     "Changing a subscription is a migration, not a restart: remove a topic with a new checkpoint (or use 4.2's "
     "named sources).",
     ("06-multi-topic", "Changing the subscription of a restarted query")),
    ("multi-named-sources", "multitopic", "What do Spark 4.2's named sources (`name(\"orders\")` on the reader) "
     "change?",
     "sources are found by name, so others can come and go",
     ["every topic gets a checkpoint folder of its own", "the name becomes the group id, so offsets go to Kafka",
      "nothing yet: the name is only a label in the UI"],
     "Offsets live under sources/<name> instead of sources/<position>; whole sources can be added, removed or "
     "reordered. Experimental: it needs spark.sql.streaming.queryEvolution.enableSourceEvolution, and then every "
     "source must be named.",
     ("06-multi-topic", "Changing the subscription of a restarted query")),
    ("multi-two-sources-cap", "multitopic", "One query unions two Kafka sources, each with "
     "`maxOffsetsPerTrigger=1000`. At most how many records can one batch read?",
     "2,000: each source has a budget of its own",
     ["1,000: one budget for the whole query, over both sources", "1,000 for each topic-partition read",
      "500 from each: the budget is shared"],
     "The cap is per source. One source over several topics shares one budget; two sources each get theirs.",
     ("06-multi-topic", "One cap for all the topics of a source")),
    ("lag-cli-formula", "lag", "How does `kafka-consumer-groups --describe` compute a group's lag?",
     "the log-end offset minus the group's committed offset",
     ["the high watermark minus the earliest offset still in the log", "records produced minus records acknowledged",
      "lastProgress.endOffset minus its startOffset"],
     "It needs a committed offset, and Spark commits none: the tool has nothing to show for a Spark query.",
     ("03-consumer-lag", "Why kafka-consumer-groups shows nothing for Spark")),
    ("lag-alert-needs-cap", "lag", "Why does an alert on `latestOffset − endOffset` from progress events need a cap "
     "on the query?",
     "without a cap that lag stays 0 even as the query falls behind",
     ["Spark reports no latestOffset for an uncapped query",
      "a listener cannot read progress events without one",
      "uncapped queries commit their offsets to Kafka instead of the checkpoint"],
     "An uncapped batch reads everything up to the latestOffset it planned against, so the difference is 0; with a "
     "cap the batch stops short and the rest shows as lag.",
     ("03-consumer-lag", "A polling monitor")),
    ("lag-more-partitions-order", "lag", "You add partitions to a topic to cure steady lag. What changes for its "
     "producers' keys?",
     "keys move to other partitions: per-key order breaks",
     ["nothing: a key keeps the partition it was first written to", "the checkpoint refuses the new partitions",
      "the cap becomes a budget per partition"],
     "The default partitioner hashes the key over the partition count; a new count remaps keys. The query itself "
     "picks the new partitions up and reads them from earliest.",
     ("03-consumer-lag", "When lag keeps growing")),
    ("bp-map-only-heap", "backpressure", "An uncapped map-only query into `noop` reads a burst of 20,000 records in "
     "one batch. Its live heap:",
     "rises a little, not with the size of the burst",
     ["rises with the burst: the batch is held in memory", "overflows unless a cap is set",
      "doubles: every record is copied to the driver"],
     "A Kafka task hands each record on as it fetches; only a shuffle, state, or collect()/toPandas() in "
     "foreachBatch holds the batch. The module measured both.",
     ("04-backpressure", "Does a huge batch hold the burst in memory?")),
    ("bp-holds-batch", "backpressure", "Which `foreachBatch` body holds the whole micro-batch in the driver's "
     "memory?",
     "rows = batch_df.toPandas(), then a loop over rows",
     ["batch_df.write.mode(\"append\").parquet(path)", "batch_df.selectExpr(\"CAST(value AS STRING)\").count()",
      "batch_df.write.format(\"noop\").mode(\"append\").save()"],
     "toPandas() (like collect()) brings every row to the driver. The writes and the count run in tasks that "
     "stream their records.",
     ("04-backpressure", "Does a huge batch hold the burst in memory?")),
    ("bp-faster-lever", "backpressure", "Of the three levers, which one makes a query faster?",
     "more throughput: partitions, cores or cheaper work",
     ["a lower maxOffsetsPerTrigger", "a shorter trigger interval",
      "spark.streaming.backpressure.enabled=true on the session"],
     "The cap and the interval bound batches; only throughput raises what the query can process per second. The "
     "backpressure setting belongs to DStreams.",
     ("04-backpressure", "Three levers, all set by you")),
    ("bp-dstreams-floor", "backpressure", "Below what rate did DStreams' PID backpressure never go, by default?",
     "100 records/s, its minRate", ["0: it could stop ingestion", "1 record per partition per batch",
                                    "the initialRate it started from"],
     "spark.streaming.backpressure.pid.minRate (100). None of these settings affects Structured Streaming.",
     ("04-backpressure", "DStreams' automatic backpressure, simulated")),
    ("rate-cap-zero", "rate", "`maxOffsetsPerTrigger=0` on a busy topic. What happens?",
     "every batch is empty, with no error, and lag grows",
     ["the option is refused when the stream loads", "it counts as no cap at all: batches read everything there is",
      "each partition gives one record per batch"],
     "Spark only checks that a floor is not above the cap. Every share of 0 is 0, so nothing is read; the lab's "
     "broker watch names such a cap in one line.",
     ("05-rate-limiting", "Going deeper: a cap of 0 or less")),
    ("rate-short-long", "rate", "Same input rate, two queries: 300 records every 0.5 s, or 4,000 every 4 s. Which "
     "is true?",
     "the short one waits less per record but costs more per record",
     ["both cost the same per record, as the rate is the same",
      "the long one waits less: big batches finish sooner for each record",
      "the short one costs less per record: small batches are cheap"],
     "The short interval pays Spark's per-batch overhead eight times as often; the long one amortises it and every "
     "record waits up to 4 s. Alerts choose short, warehouse loads long.",
     ("05-rate-limiting", "Throughput against latency")),
    ("rate-split-reads-same", "rate", "`minPartitions=6` on a batch of 3,000 + 600 records in two partitions. What "
     "changes?",
     "the number of tasks; the records read stay the same",
     ["the batch reads six times the cap", "Kafka gets six partitions for the topic, created by the connector",
      "the cap now applies to each task"],
     "Two tasks become six (the big range is split). How many records a batch reads is still the cap's business.",
     ("05-rate-limiting", "Read parallelism: minPartitions and maxRecordsPerPartition")),
    ("sink-upsert-key", "sinks", "An idempotent `foreachBatch` upsert is keyed by what, so a replayed batch "
     "overwrites rows instead of adding them?",
     "each record's topic, partition and offset",
     ["the batch_id the function receives", "the record's Kafka timestamp",
      "a UUID made for each row of the batch when it is written"],
     "A replayed batch has the same offsets, so the same keys. A batch id alone cannot tell rows apart, timestamps "
     "collide, and a fresh UUID makes every replay new.",
     ("07-sinks-exactly-once", "Exactly-once, three ways")),
    ("sink-fencing", "sinks", "A transactional producer restarts with the same transactional id after a crash. What "
     "becomes of the transaction it left open?",
     "it is aborted: the new producer fences the old one",
     ["it is committed, since its records were already sent",
      "the new producer continues it and commits it later",
      "it stays open, and the new producer waits for it"],
     "Fencing: the new producer with the same id aborts the old one's open transaction and locks it out; "
     "read_committed readers never see its records.",
     ("07-sinks-exactly-once", "Exactly-once, three ways")),
    ("sink-orphan-files", "sinks", "The file sink's folder holds files that no `_spark_metadata` entry lists. Who "
     "reads them?",
     "a tool that lists the folder itself, such as a plain glob",
     ["spark.read.json on the folder, which sees each once",
      "nobody at all: Spark deletes them before the next batch starts",
      "the next batch, which adds them to its log entry"],
     "Spark reads through _spark_metadata and sees each record once. Files of failed attempts may stay (deletion is "
     "best effort), and a plain listing sees them.",
     ("07-sinks-exactly-once", "What the exactly-once sinks absorbed")),
    ("sink-read-uncommitted", "sinks", "A consumer with the default isolation level reads a topic written in "
     "transactions. It sees:",
     "the records of aborted transactions too",
     ["only the records of committed transactions", "nothing until every transaction has ended",
      "committed records twice, once per marker"],
     "The default is read_uncommitted. Every consumer of a transactional topic must read read_committed: "
     "exactly-once is end to end or not at all.",
     ("07-sinks-exactly-once", "What the exactly-once sinks absorbed")),
    ("sink-ledger", "sinks", "In the course's transactional sink, how is a replayed batch recognised and skipped?",
     "its batch id was committed in its transaction, in a ledger group",
     ["Kafka drops records whose key it has seen before",
      "Spark finds commits/N and skips the batch itself",
      "the idempotent producer spots the repeated sequence numbers of the batch"],
     "In the same transaction as the records, the batch id is committed as the offset of a group used only as a "
     "ledger. A replay finds it there. A replayed batch has no commits/N, and idempotence spans one session only.",
     ("07-sinks-exactly-once", "Exactly-once, three ways")),
]


def _code(text: str) -> int:
    """How much code an option shows, as grader/lint.py's 'most code' strategy counts it."""
    return sum(len(m) for m in re.findall(r"`[^`]*`", text)) + len(re.findall(r"[()=_.\[\]]", text))


def arranged(written=WRITTEN, letters="abcd", ties="cbda") -> list[tuple]:
    """FIXED rows (id, topic, question, options, key, why). A key never sits where the longest option or the
    most-code option (the first on ties, as the lint plays them) is; within that, the most constrained questions
    are placed first, each on its least-used letter, so the keys spread over a–d."""
    feasible = []
    for index, (_qid, _t, _q, right, wrongs, _w, _where) in enumerate(written):
        fits = {}
        for letter in letters:
            options = list(wrongs)
            options.insert(letters.index(letter), right)
            longest = max(range(4), key=lambda i: len(options[i]))
            code = max(range(4), key=lambda i: _code(options[i]))
            if letters.index(letter) not in (longest, code):
                fits[letter] = options
        feasible.append((len(fits) or 5, index, fits))
    used = dict.fromkeys(letters, 0)
    chosen = {}
    for _n, index, fits in sorted(feasible):
        _qid, _t, _q, right, wrongs, _w, _where = written[index]
        if not fits:  # the right answer is the longest or the most code wherever it goes: keep it balanced at least
            fits = {l: list(wrongs[:letters.index(l)]) + [right] + list(wrongs[letters.index(l):]) for l in letters}
        letter = min(fits, key=lambda l: (used[l], ties.index(l)))
        used[letter] += 1
        chosen[index] = (letter, fits[letter])
    return [(qid, topic, text, chosen[i][1], chosen[i][0], why)
            for i, (qid, topic, text, _r, _w, why, _where) in enumerate(written)]


FIXED = arranged()

# question id -> (notebook, section heading) for every question here; the others link to their topic's module
WHERE = {row[0]: row[6] for row in WRITTEN}


# -- numbered questions: each draw asks with other numbers ------------------------------------------------------
def _little_wait(rng):
    rate = rng.choice([200, 300, 400, 500, 800])
    lag = rate * rng.choice([1, 2, 3, 4, 6])
    right = lag // rate
    text = (f"A query's lag averages {lag:,} records while {rate} records/s arrive and leave. By Little's law, how "
            "many seconds does a record wait in Kafka on average?")
    options, key = choices(rng, str(right), [str(right * 2), str(rate // 100), str(lag // 100)])
    why = f"Average wait = average lag / rate = {lag:,} / {rate} = {right} s."
    return text, options, key, why, {"lag": lag, "rate": rate}


def _catch_up(rng):
    incoming = rng.choice([500, 800, 1_000, 2_000])
    processed = incoming + rng.choice([100, 200, 250, 500])
    seconds = rng.choice([60, 120, 300])
    lag = (processed - incoming) * seconds
    text = (f"A query is {lag:,} records behind. Records arrive at {incoming:,}/s and it processes {processed:,}/s. "
            "In how many seconds does it catch up?")
    options, key = choices(rng, str(seconds), [str(lag // processed), str(lag // incoming),
                                                str(lag // (processed + incoming))])
    gain = processed - incoming
    why = f"It gains {processed:,} − {incoming:,} = {gain} records/s: {lag:,} / {gain} = {seconds} s."
    return text, options, key, why, {"lag": lag, "incoming": incoming, "processed": processed}


def _available_now_batches(rng):
    cap = rng.choice([500, 1_000, 2_000, 5_000])
    backlog = cap * rng.randint(2, 9) + rng.choice([0, cap // 2, 1])
    right = math.ceil(backlog / cap)
    text = (f"One partition holds a backlog of {backlog:,} records. A query starts with trigger(availableNow=True) "
            f"and maxOffsetsPerTrigger={cap:,}. How many batches does it run before it stops?")
    options, key = choices(rng, str(right), [str(backlog // cap), "1", str(right + 1)])
    why = f"availableNow honours the cap: ceil({backlog:,} / {cap:,}) = {right} batches, then it stops."
    return text, options, key, why, {"backlog": backlog, "cap": cap}


def _preferred_index(rng):
    executors = rng.choice([2, 3, 4, 5])
    code = rng.randint(-2**31, -1) if rng.random() < 0.7 else rng.randint(0, 2**31 - 1)
    right = code % executors  # Python's % is Java's floorMod for a positive divisor
    text = (f"A partition's TopicPartition.hashCode() is {code} and the query has {executors} executors. At which "
            "position of the connector's sorted executor list is its preferred executor (counting from 0)?")
    truncated = abs(code) % executors  # Java's % keeps the sign: a common slip
    options, key = choices(rng, str(right), [str(truncated), str((right + 1) % executors),
                                              str(executors), str(executors - 1)])
    java = int(math.fmod(code, executors))
    why = f"floorMod({code}, {executors}) = {right}: never negative, where Java's % gives {java}."
    return text, options, key, why, {"code": code, "executors": executors}


def _brokers_to_lose(rng):
    replicas = rng.choice([3, 4, 5])
    minimum = rng.randint(1, replicas - 1)
    right = replicas - minimum
    text = (f"A topic has {replicas} replicas on {replicas} brokers and min.insync.replicas={minimum}. How many of "
            "those brokers can be down with acks=all writes still accepted?")
    options, key = choices(rng, str(right), [str(minimum), str(replicas - 1), "0", str(right + 1)])
    why = (f"acks=all needs {minimum} replicas in the ISR: {replicas} − {minimum} = {right} may be down "
           "(each down broker leaves the ISR).")
    return text, options, key, why, {"replicas": replicas, "minimum": minimum}


def _replay_copies(rng):
    records = rng.choice([120, 250, 400, 600, 1_000])
    text = (f"Batch N of a Kafka-to-Kafka query (Spark's own Kafka sink) reads {records} records. The driver dies "
            "after the write, before commits/N. How many records does batch N leave in the output topic, counting "
            "the restart's replay?")
    options, key = choices(rng, f"{2 * records:,}", [f"{records:,}", "0", f"{3 * records:,}"])
    why = (f"The write happened once, and the restart re-runs batch N with the same offsets and writes {records} "
           f"again: {2 * records:,}. The sink is at-least-once.")
    return text, options, key, why, {"records": records}


# generator name -> (topic, function(rng) -> (text, options, key, why, numbers))
NUMBERED = {
    "little_wait": ("lag", _little_wait),
    "catch_up": ("lag", _catch_up),
    "available_now_batches": ("rate", _available_now_batches),
    "preferred_index": ("cluster", _preferred_index),
    "brokers_to_lose": ("cluster", _brokers_to_lose),
    "replay_copies": ("sinks", _replay_copies),
}

WHERE.update({
    "n-little_wait": ("05-rate-limiting", "Throughput against latency"),
    "n-catch_up": ("03-consumer-lag", "When lag keeps growing"),
    "n-available_now_batches": ("04-backpressure", "once ignores the cap, availableNow honours it"),
    "n-preferred_index": ("09-cluster-failures", "Who reads which partition"),
    "n-brokers_to_lose": ("09-cluster-failures", "What acks promises when the leader dies"),
    "n-replay_copies": ("07-sinks-exactly-once", "At-least-once, proven"),
})
