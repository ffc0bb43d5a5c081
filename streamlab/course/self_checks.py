"""The course's Check yourself questions: ungraded, after a section, answered the moment the learner clicks.

A notebook's cell names its question (`quiz.self_check("02-1")`) and holds neither its options nor its key: the
cell stays short, visible and reachable like any other (a folded cell holding the key was skipped by JupyterLab's
arrow keys and unfolded by a click), and the answer is not in view above the buttons. Each question is keyed
`<module>-<n>`, n counting its module's questions in order. Options are written here in one order, the key in
that order's letter; each learner sees them in her own order (quiz.self_order, by the question's key). The site shows the question with
its answer folded (grader/site.py), and the course lint scores the blind strategies on them (grader/lint.py).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class SelfCheck:
    """One question: its text, its options (a, b, c, … in this order), the key's letter, and why."""

    question: str
    options: list[str]
    key: str
    why: str


def asked_in(source: str) -> list[str]:
    """The keys of the questions a notebook cell asks (`quiz.self_check("02-1")`), in order."""
    if "self_check(" not in source:
        return []
    return [ast.literal_eval(node.args[0]) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("self_check") and node.args]


QUESTIONS: dict[str, SelfCheck] = {
    "00-1": SelfCheck(
        "The same topic (backlogs of 900, 1,080 and 1,020 in its 3 partitions) is read again from the beginning, now "
        "with `maxOffsetsPerTrigger = 1500`. How many micro-batches does the `availableNow` read take?",
        ["1: the cap allows 1,500 for each partition",
         "2: one budget of 1,500, shared by the partitions",
         "3: one partition per batch, up to 1,500 each",
         "1: `availableNow` reads all that is there at once"],
        "b",
        "The cap is one budget per trigger for the whole source, split by backlog (450 + 540 + 510): 3,000 records "
        "take 2 batches. `availableNow` keeps the cap; only the deprecated `once` ignores it (module 4)."),
    "00-2": SelfCheck(
        "Moving the cap slider restarts the demo's query on the same checkpoint. Where does the restarted query "
        "resume reading?",
        ["from the offsets its consumer group committed",
         "from where `startingOffsets` points, as at first start",
         "from the earliest offset still in each partition",
         "from the position recorded in its checkpoint"],
        "d",
        "A restart on the same checkpoint resumes where the query was. `startingOffsets` counts only on a first "
        "start, and Spark commits nothing to a consumer group (module 2 opens the checkpoint)."),
    "01-1": SelfCheck(
        "A stream reads a 4-partition topic whose partitions all hold large, equal backlogs, with `minPartitions = "
        "8`. What does that change?",
        ["each batch's 4 ranges are cut in two: 8 tasks",
         "the topic gets 8 Kafka partitions at the broker",
         "nothing: one task per Kafka partition is a hard rule",
         "the read stays 4 tasks; only later stages get 8"],
        "a",
        "`minPartitions` counts input partitions (offset ranges, so tasks), never Kafka partitions: each equal range "
        "gets round(8 / 4) = 2 pieces, 8 tasks over the same 4 Kafka partitions."),
    "01-2": SelfCheck(
        "A Spark 4 query with default settings is reading a topic. You list the consumer groups the broker knows "
        "(`kafka-consumer-groups --list`). Which group of the query is there?",
        ["`spark-kafka-source-…`, with its offsets committed",
         "`spark-kafka-source-…`, with members but no offsets",
         "none: its consumers never join a group or commit",
         "`…-driver-0`, which commits after every batch"],
        "c",
        "The executors' consumers `assign()` their ranges and seek; they never join the group or commit. The driver "
        "lists offsets with an AdminClient, which has no group (before 3.4 a `…-driver-<n>` group showed, with "
        "nothing committed)."),
    "02-1": SelfCheck(
        "A new query reads the 2-partition `orders` topic with `startingOffsets` set to `{\"orders\": {\"0\": 40}}`. "
        "What happens?",
        ["partition 0 starts at 40, partition 1 at latest",
         "partition 0 starts at 40, partition 1 at earliest",
         "only partition 0 is read, as with `assign`",
         "Spark refuses the start: partition 1 is not named"],
        "d",
        "A JSON start must name every partition of the topics it reads (\"you must specify all TopicPartitions\"). "
        "Write -2 (earliest) or -1 (latest) for the partitions you do not care about."),
    "02-2": SelfCheck(
        "To reprocess, someone deletes a stopped query's checkpoint and starts it again with the default "
        "`startingOffsets`. It was down for an hour. What does the new run read?",
        ["the whole topic again, from the earliest offsets",
         "from where the old checkpoint had stopped",
         "only new records; the hour's are skipped",
         "from the offsets its consumer group last committed"],
        "c",
        "Without a checkpoint the start is a first run, and a stream's default is `latest`: what was produced during "
        "the hour is silently skipped. Section 6 shows the controlled replay."),
    "02-3": SelfCheck(
        "Inside batch 5, a `foreachBatch` function looks at the checkpoint folder. Which files of batch 5 does it "
        "find?",
        ["`offsets/5` only: `commits/5` comes after the batch",
         "`offsets/5` and `commits/5`, both written at planning",
         "neither: both are written once the batch ends",
         "those of batch 4 only: batch 5's come at its end"],
        "a",
        "`offsets/N` (the batch's planned end offsets) is written before batch N runs and `commits/N` after it "
        "finishes. A crash between the two is what section 4 replays."),
    "03-1": SelfCheck(
        "A query has no cap, spends 2 ms per record in `foreachBatch`, and its producers write 800 records/s. What "
        "do its lag at the broker (latest offset minus its position) and its batches do over the next minutes?",
        ["lag and batch sizes grow, batch after batch",
         "lag rises a little, then Spark lowers its intake",
         "lag stays near 0: each batch reads up to latest",
         "lag climbs, then levels off as batches get bigger"],
        "a",
        "800 × 2 ms is 1.6 s of work for each second of data, so each batch takes longer than the data it read and "
        "the next one is bigger. Spark has no automatic backpressure, and bigger batches make no record cheaper."),
    "03-2": SelfCheck(
        "A capped query's last progress report shows `endOffset` 700 and `latestOffset` 900 for its only partition. "
        "150 more records arrived after that batch was planned. How far behind is the query now?",
        ["200, as the report says: it is always current",
         "150: the report's 200 were read by that batch",
         "350: the report's 200 was the lag at planning",
         "0: each batch reads up to its `latestOffset`"],
        "c",
        "`latestOffset` is what Kafka had when the batch was planned, and the query's position is `endOffset` (700). "
        "The broker's latest is now 1,050: 350 behind."),
    "03-3": SelfCheck(
        "A capped query's progress lag (`latestOffset − endOffset`) grows batch after batch, yet its "
        "`inputRowsPerSecond` stays below its `processedRowsPerSecond`. What is the query doing?",
        ["keeping up: it processes faster than it takes in",
         "falling behind: the growing lag is the signal",
         "recovering: its throughput exceeds its intake",
         "unknown until its consumer group reports a lag"],
        "b",
        "With a cap, every batch takes in at most the cap, so the two rates compare the query with itself, not with "
        "the producers. A lag that grows from batch to batch means the producers outpace it."),
    "04-1": SelfCheck(
        "A query that usually keeps up meets a burst of 50,000 records. Compared with no cap, what does "
        "`maxOffsetsPerTrigger = 5000` do to the burst?",
        ["it drains the burst sooner, in smaller batches",
         "it discards the burst's records beyond the cap",
         "it makes the broker slow the producers down",
         "it bounds each batch; the rest waits in Kafka"],
        "d",
        "A cap turns a burst into lag that builds and drains in batches of a known size. It adds no throughput: what "
        "a batch leaves waits in Kafka, nothing is dropped and no producer slows down."),
    "04-2": SelfCheck(
        "A map-only query (casts and a filter, no shuffle, no state) reads a 5 GB burst in one uncapped batch. How "
        "much executor memory does that batch need?",
        ["about 5 GB, plus room for the rows built from it",
         "about what a small batch needs: records stream",
         "each task's whole offset range, buffered before use",
         "none: Spark spills the whole batch to disk first"],
        "b",
        "A Kafka task hands each record on as it fetches it, so a map-only batch's memory does not grow with its "
        "size. Only something that buffers the batch (a shuffle, state, `collect()`, `toPandas()`) holds it."),
    "04-3": SelfCheck(
        "During the overload (1,500 records/s arriving, 1 ms of work per record) you raise the cap from 2,000 to "
        "5,000. What happens to the lag?",
        ["it grows nearly as fast: work sets the pace",
         "it stops growing: each trigger now reads 5,000",
         "it drains: bigger batches process records faster",
         "it drops at the restart, then grows half as fast"],
        "a",
        "At 1 ms a record the query handles about 1,000 records/s whatever the batch size; a bigger cap only spreads "
        "the small fixed cost of a batch. Only more throughput (more tasks with cores, cheaper work) stops the "
        "growth."),
    "05-1": SelfCheck(
        "Rerun the sizing demo with the cap at 8,000: the same burst of 2,000, 1 ms per record, a 2 s trigger. What "
        "do its batches do while the burst drains?",
        ["Spark lowers the cap after the first slow batch, so the rest fit in 2 s",
         "the burst is spread over the next triggers, about 800 records each",
         "one or two batches take the burst, run past 2 s, and delay the next",
         "the query fails: a batch may not run longer than its trigger interval"],
        "c",
        "8,000 is far above the 1,600 records that fit in 2 s, so it bounds nothing: the burst comes in one or two "
        "long batches, and the triggers after them run late. Spark never changes a cap by itself, and an overrun is "
        "no error."),
    "05-2": SelfCheck(
        "A query's lag averages 1,200 records while a steady 300 records/s arrive. About how long does a record wait "
        "in Kafka?",
        ["about 0.25 s: the rate divided by the lag",
         "about 4 s: the lag divided by the rate",
         "about 1.2 s: one millisecond per record waiting",
         "one trigger interval, whatever the lag is"],
        "b",
        "Little's law: the average wait is the average lag divided by the rate, 1,200 / 300 = 4 s. The lag decides "
        "the wait, not the trigger interval."),
    "05-3": SelfCheck(
        "A query with maxOffsetsPerTrigger=1,200 reads the skewed topic above (3,000 and 600 records) in 2 tasks. "
        "You add minPartitions=6. What changes in its next batch?",
        ["still about 1,200 records, now read by more tasks on more cores",
         "6 tasks of up to 1,200 records each, so up to 7,200 in the batch",
         "nothing: minPartitions applies to batch reads, not to streams",
         "still 1,200 records, but now 600 from each Kafka partition"],
        "a",
        "minPartitions splits the planned ranges (1,000 and 200, split by backlog) into more tasks. How many records "
        "a batch reads is still the cap; the split only lets more cores work on the same batch."),
    "06-1": SelfCheck(
        "On Spark 3.3 (the consumer path), a pattern query with a 2 s trigger still has not read a topic created a "
        "minute ago. What makes it find new topics within seconds?",
        ["`startingOffsets=earliest`, so a new topic is read from offset 0",
         "a shorter trigger, since topics are re-listed at every trigger",
         "`kafka.metadata.max.age.ms` lowered to a few seconds",
         "`failOnDataLoss=false`, so the query accepts the new topic"],
        "c",
        "On the consumer path Kafka's consumer finds new topics at its metadata refresh, metadata.max.age.ms (5 "
        "minutes by default); here 3,000 ms made a new topic readable 2.6 s after it was created. Re-listing at "
        "every trigger is the default path since 3.4."),
    "06-2": SelfCheck(
        "One query has two Kafka sources, one on `orders` and one on `payments`, each with maxOffsetsPerTrigger=500; "
        "both hold large backlogs. At most how many rows does one batch read?",
        ["1,000: each source has a budget of 500 of its own",
         "500: the two sources share one budget, split by backlog",
         "500 per Kafka partition of each of the two topics",
         "500 in all: the cap is split evenly, 250 per source"],
        "a",
        "The cap is a budget per source per trigger. Topics read by one source share it; two sources each get their "
        "own, so up to 500 + 500."),
    "06-3": SelfCheck(
        "A query on topics A and B (with a checkpoint, default options) is restarted subscribing to A alone. What "
        "does it do?",
        ["reads A on from its checkpointed offsets and forgets B",
         "reads A from latest, as a brand-new query would",
         "reads A and B: the checkpoint's topics win over the new option",
         "fails: B's partitions vanished, which looks like data loss"],
        "d",
        "Run 6 above: the checkpoint still names B's partitions, and a partition that disappeared is data loss to "
        "Spark, so failOnDataLoss=true stops the query. Removing a topic takes a new checkpoint."),
    "07-1": SelfCheck(
        "You add `kafka.enable.idempotence=true` and `kafka.acks=all` to the plain Kafka sink and repeat the "
        "after-write crash of batch 1. What does the output topic hold after the restart?",
        ["batch 1 once: the broker drops what the idempotent producer resent",
         "batch 1 twice: the replay is a new send by a new task",
         "no batch 1 at all: the broker refuses the replay as duplicates",
         "batch 1 once: `acks=all` holds the records back until `commits/1`"],
        "b",
        "Idempotence removes duplicates of one producer's retries within its session, and acks only says when the "
        "leader answers. The replayed batch is a new send by a new task, so every record of batch 1 is written again."),
    "07-2": SelfCheck(
        "A `foreachBatch` function appends each batch to a table with a plain INSERT (no key). The process dies "
        "after the INSERT of batch 5, before `commits/5`. After the restart the table holds:",
        ["batch 5 once: `foreachBatch` runs each batch id only once",
         "batch 5 once: the replay gets a new batch id and new offsets",
         "no batch 5: the INSERT of a failed batch is rolled back",
         "batch 5 twice: batch id 5 runs again with the same offsets"],
        "d",
        "foreachBatch is not exactly-once by itself: Spark re-runs batch 5 with the same batch id and the same "
        "offsets, and a plain INSERT adds its rows again. An upsert on (topic, partition, offset) or a skip by batch "
        "id makes that replay harmless."),
    "07-3": SelfCheck(
        "In the crash lab, after which crash point does Spark's plain Kafka sink never hold a duplicate of the batch?",
        ["mid write: `abort()` takes back what the failed task had sent",
         "after write: the restart finds the records and skips the batch",
         "before write: nothing of the batch was sent when it crashed",
         "all three: the idempotent producer drops every replayed record"],
        "c",
        "Only a crash before the write leaves nothing to repeat. Mid write, the records sent before the failure stay "
        "(the writer takes nothing back), and after the write the whole batch is sent again."),
    "08-1": SelfCheck(
        "A job reading a 3-partition topic drops duplicates by the `offset` column alone. What happens to its output?",
        ["right: an offset numbers a record across the whole of the topic",
         "right, as long as no record's `key` column is null",
         "nothing is dropped: offsets restart at every micro-batch",
         "distinct records from other partitions at one offset are lost"],
        "d",
        "Offsets count per partition: offset 17 exists in each of the 3 partitions. A record's unique coordinates "
        "are (topic, partition, offset)."),
    "08-2": SelfCheck(
        "A source reads a single-partition topic of a transactional producer with "
        "`kafka.isolation.level=read_committed`, maxOffsetsPerTrigger=1,000 and a large backlog. A batch has "
        "numInputRows 960. Why not 1,000?",
        ["its share was rounded down, as the split always does",
         "Spark lowered the cap because the last batch ran long",
         "the cap counts offsets: markers and aborted records use some",
         "the consumer's `max.poll.records` setting cut the batch short"],
        "c",
        "With one partition the share is the whole cap, so no rounding. The cap counts offsets, not rows: "
        "transaction markers and aborted records take offsets but give no rows under read_committed."),
    "08-3": SelfCheck(
        "A query uses `trigger(processingTime='10 seconds')`, data keeps arriving, and one batch takes 14 s. When "
        "does the next batch start?",
        ["at once, as soon as the long batch ends",
         "at the 20 s mark, the next interval boundary",
         "10 s after the long batch ends",
         "never: the query fails for overrunning its trigger"],
        "a",
        "A processing-time trigger starts a batch at once when the previous one overran its interval; it does not "
        "wait for the next boundary, and an overrun is no error."),
    "09-1": SelfCheck(
        "On a cluster with 3 executors, a plain query (no `minPartitions`) reads a 4-partition topic. Which executor "
        "is preferred for partition 2, batch after batch?",
        ["whichever executor read partition 2 in the batch before",
         "the executor on the host of partition 2's leader broker",
         "the next executor in turn, so partitions rotate each batch",
         "the same one each batch: a hash of the partition picks it"],
        "d",
        "The preferred executor is executors[floorMod(hashCode, n)] of a sorted list: a stable hash, not the last "
        "reader and not the broker's host. So its cached consumer stays warm; the scheduler may still run the task "
        "elsewhere."),
    "09-2": SelfCheck(
        "A query writes with `writeStream.format('kafka')`. An executor dies mid-write; the query never fails or "
        "restarts. Can the output topic get duplicates?",
        ["no: without a batch replay nothing is written twice",
         "yes: the retried task re-sends what the lost attempt sent",
         "no: `abort()` takes back what the lost attempt had sent",
         "no: the idempotent producer drops the retried task's copies"],
        "b",
        "An executor loss retries its tasks inside the same batch. The Kafka writer's abort() does nothing, and the "
        "retry uses another producer, so what the lost attempt sent is sent again."),
    "09-3": SelfCheck(
        "Two queries on a cluster: a stateless Kafka-to-Kafka copy, and one with `dropDuplicatesWithinWatermark`. "
        "Who writes files into each one's checkpoint?",
        ["the driver for the copy; for the dedup also executors, under `state/`",
         "the driver for both: executors write only the sink's output",
         "executors for both: each task writes its range to `offsets/`",
         "Kafka for both: the brokers keep each query's committed offsets in a group"],
        "a",
        "The driver writes offsets/, commits/, metadata and sources/; executors add state-store files under state/ "
        "only for stateful queries. Spark commits no offsets to Kafka."),
    "10-1": SelfCheck(
        "You delete a `writeStream.format(\"delta\")` query's checkpoint and start it again from `earliest`. What "
        "does the table get?",
        ["nothing new: the log's txn skips every batch it has seen",
         "an error: the query id no longer matches the table's",
         "every record again: a new checkpoint is a new query id",
         "only the records after the old query's last batch"],
        "c",
        "The sink's txn is keyed by the query id, which lives in the checkpoint. A new checkpoint has a new id, "
        "batch ids start at 0, and nothing in the log matches: the whole topic is written again. Exactly-once holds "
        "only across restarts on the same checkpoint."),
    "10-2": SelfCheck(
        "A `foreachBatch` MERGE keyed by `account` deduplicates each batch by keeping, per account, the row with the "
        "highest `offset`. Why the offset?",
        ["it is the only column Delta allows in a MERGE condition",
         "one account's records share a partition, where offsets follow write order",
         "Spark sorts each batch by offset before `foreachBatch`",
         "the highest offset is the record Kafka keeps after compaction"],
        "b",
        "Keyed by account, all of one account's updates go to one partition, and offsets in a partition follow the "
        "order they were written. Spark does not sort a batch for you, and compaction has nothing to do with it."),
    "10-3": SelfCheck(
        "A stream into Delta runs a 2-second trigger with 4 shuffle partitions per write. Traffic doubles. What "
        "happens to the number of files per hour?",
        ["it doubles: twice the records means twice the files",
         "it halves: Delta packs larger batches more tightly",
         "it drops to one file per hour after auto-compaction alone",
         "about the same: files follow batches and partitions, not records"],
        "d",
        "Each batch writes about one file per partition it writes, whatever its size, so files per hour follow the "
        "trigger and the partitioning. Doubled traffic makes each file bigger."),
}
