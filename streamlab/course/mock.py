"""The mock interview: timed rounds by topic, mixed items, a score per topic, and weak topics asked again later.

Why: a drill of multiple-choice questions (module 8) rehearses recognition, but an interview asks for recall, for
numbers worked out on the spot and for explanations said out loud, against a clock. A round here mixes three kinds
of item: multiple choice from the pool (`interview.py`), numbers to compute (the pool's numbered questions, with
this learner's numbers, answered by typing the number) and "explain in your own words" (the 20 most-asked
questions, `EXPLAIN`), self-marked against the model answer's key points. Every question and every topic has a
spaced-repetition card (the maintained `fsrs` library, not a schedule of our own): a topic answered badly is due
again within minutes, a topic answered well only days later, so the next round asks the weak topics first. The
history is one JSON file in STREAMLAB_HOME (`interview.json`, written atomically), shown per topic by
`python -m grader progress`. Front ends: `python -m grader interview` (or `python -m streamlab.course.mock`) in a
terminal, and `MockRound` in a notebook (solutions/INTERVIEW.ipynb).
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from . import interview

KINDS = ("choice", "number", "explain")
SECONDS = {"choice": 60, "number": 120, "explain": 180}  # the time each kind of item is worth in a round
HISTORY_FILE = "interview.json"
PASS_SHARE = 2 / 3  # an explain item counts as right when this share of its key points was covered

# The 20 questions interviewers ask most about Spark + Kafka streaming: (id, topic, question, model answer (30–60 s
# said out loud: 75 to 150 words), key points the answer must make, (notebook, section that proves it live)).
EXPLAIN = [
    ("x-how-read", "source", "How does Spark Structured Streaming read a Kafka topic?",
     "The driver plans and the executors read. At each trigger the driver lists the topic's partitions and their "
     "latest offsets with Kafka's AdminClient, applies any cap, and writes the plan, one offset range per "
     "partition, to offsets/N in the checkpoint. Each range with new records becomes one task. The task, on an "
     "executor, reuses a cached KafkaConsumer, assigns itself the partition and fetches exactly that range. There "
     "is no receiver and no consumer-group rebalance: Spark makes up a group id but never joins a group or commits "
     "to it. So the read stage has one task per Kafka partition with new data, unless minPartitions splits large "
     "ranges.",
     ["the driver plans one offset range per partition from the latest offsets",
      "one task per partition with new records",
      "executors fetch their own range (assign, cached consumer)",
      "no group membership and no commits to Kafka"],
     ("01-source-internals", "How a micro-batch is planned and read")),
    ("x-where-offsets", "offsets", "Where does Spark keep a query's Kafka offsets, and why does "
     "kafka-consumer-groups show nothing?",
     "In the query's checkpoint, not in Kafka. Before a batch runs, the driver writes its end offsets to "
     "offsets/N; after the sink finished, it writes commits/N. On restart those two files decide where to go on. "
     "The executors assign partitions directly, under a generated group id, and never commit. So "
     "kafka-consumer-groups, which computes lag as the log end minus the group's committed offset, has nothing to "
     "show, and resetting that group changes nothing. For lag, read the query's own progress: latestOffset minus "
     "endOffset per partition, or the broker's latest offsets against the checkpoint's last committed end.",
     ["offsets/N and commits/N in the checkpoint",
      "Spark commits nothing to Kafka",
      "group tools show nothing, and resetting the group does nothing",
      "lag comes from progress events or the checkpoint"],
     ("03-consumer-lag", "Why kafka-consumer-groups shows nothing for Spark")),
    ("x-crash-restart", "offsets", "A query crashes in the middle of a batch. What happens when it restarts?",
     "Spark writes offsets/N before batch N runs and commits/N after its sink finished. A crash between the two "
     "leaves a planned batch without a commit. On restart Spark re-runs that batch with exactly the same offset "
     "ranges, taken from the offset log, whatever the options say now. So every record of batch N is processed "
     "again, and a sink that only appends, like Spark's own Kafka sink, writes those records twice. That is why "
     "Spark is at-least-once into Kafka. An idempotent or transactional sink makes the replay harmless. A crash "
     "before offsets/N loses nothing: the batch is simply planned afresh.",
     ["write-ahead: offsets/N before the batch, commits/N after",
      "the uncommitted batch replays with the same offsets",
      "an appending sink writes duplicates",
      "an idempotent or transactional sink absorbs the replay"],
     ("02-offset-tracking", "4. A crash between offsets/N and commits/N")),
    ("x-starting-offsets", "offsets", "When does startingOffsets apply?",
     "Only on a query's first start, when its checkpoint holds no offsets yet. Streams default to latest, batch "
     "reads to earliest. Once a checkpoint exists, a restart resumes from it, and a changed startingOffsets is "
     "ignored. To read from the beginning again you need a new checkpoint folder, with startingOffsets set to "
     "earliest or to explicit JSON offsets. Deleting a checkpoint by accident is dangerous: with latest, everything "
     "that arrived meanwhile is skipped. And a topic added to an existing checkpoint is read from its earliest "
     "offset, not from the option.",
     ["only on the first start, with an empty checkpoint",
      "streams default to latest",
      "a restart follows the checkpoint and ignores the option",
      "reading again needs a new checkpoint"],
     ("02-offset-tracking", "2. startingOffsets applies to the first run only")),
    ("x-replay", "offsets", "How do you reprocess a topic from a point in time?",
     "With a new checkpoint and an explicit start. Give startingOffsets as JSON per partition, for example orders "
     "partition 0 from 1200, or startingTimestamp for a point in time, which starts each partition at its first "
     "record at or after that time. Run it as a query of its own with trigger availableNow, so it reads what is "
     "there in capped batches and stops. Resetting a consumer group does nothing, and restarting the old query "
     "keeps its checkpoint's position. Make the sink tolerate the replay: upsert by topic, partition and offset, or "
     "write to a separate table and swap it in.",
     ["a new checkpoint", "explicit JSON offsets or startingTimestamp",
      "a bounded run, such as availableNow", "the sink must tolerate the replay; a group reset does nothing"],
     ("02-offset-tracking", "6. Replaying from a known offset")),
    ("x-lag", "lag", "How do you measure and alert on a streaming query's consumer lag?",
     "From the query's own progress, since Spark commits nothing to Kafka. Each progress event lists, per Kafka "
     "source, startOffset, endOffset and latestOffset per partition. Lag is latestOffset minus endOffset, summed "
     "over partitions, and the connector also reports min, max and average offsets behind latest in the source's "
     "metrics. One catch: latestOffset is read when the batch is planned, so an uncapped query always shows zero. "
     "There, compare the broker's latest offsets now with the checkpoint's last end. In production a "
     "StreamingQueryListener feeds those numbers to an alert on lag that grows batch after batch.",
     ["latestOffset minus endOffset from the progress", "an uncapped query shows 0: compare with the broker now",
      "a StreamingQueryListener feeds the alert", "not kafka-consumer-groups"],
     ("03-consumer-lag", "lastProgress, field by field")),
    ("x-backpressure", "backpressure", "Does Structured Streaming handle backpressure?",
     "Not automatically. DStreams had a PID rate estimator behind spark.streaming.backpressure.enabled, and none "
     "of those settings affects Structured Streaming. Here the engineer sets the bounds: maxOffsetsPerTrigger caps "
     "how many offsets a batch reads from a source, and the trigger interval sets the rhythm. A burst then turns "
     "into lag that builds and drains, instead of one huge batch. That contains bursts but makes nothing faster. If "
     "input stays above the processing rate, lag keeps growing, capped or not, and the cure is throughput: more "
     "partitions or minPartitions with cores to match, more executors, or cheaper work per record.",
     ["no automatic backpressure; the DStreams settings do nothing", "a cap and a trigger bound each batch",
      "a cap contains bursts, not steady overload", "steady lag needs more throughput"],
     ("04-backpressure", "What backpressure is")),
    ("x-cap-split", "backpressure", "How does maxOffsetsPerTrigger split across partitions?",
     "It is one budget per source per trigger, not per partition. The connector splits it in proportion to each "
     "partition's backlog: the share is the cap times the backlog over the total backlog, rounded down, and a share "
     "below one is rounded up to one, so small partitions never starve. Each partition then reads the smaller of "
     "its backlog and its share. With backlogs of 800 and 200 and a cap of 1,000 the batch reads 800 plus 200; "
     "with a cap of 500, 400 plus 100. Because of the rounding a batch may read a little less than the cap. Two "
     "sources in one query each get their own cap.",
     ["one budget per source", "split in proportion to the backlog",
      "rounded down, a share below one rounded up", "two sources, two budgets"],
     ("06-multi-topic", "One cap for all the topics of a source")),
    ("x-size-cap", "rate", "How do you size maxOffsetsPerTrigger and the trigger interval?",
     "From three measured numbers: the cost per record, the normal input rate and the trigger interval. The cap "
     "must be large enough to keep up and drain bursts, so at least about twice the normal batch, the rate times "
     "the interval. It must be small enough for a batch to finish within the interval, so at most about 80 percent "
     "of the interval divided by the cost per record. Take the smaller of the two. If the second is below the "
     "normal batch, no cap fixes it: add throughput. The interval itself is a trade: short for latency, long for "
     "cost per record. Then watch batch durations and lag in the progress events.",
     ["measure the cost per record and the rate", "at least twice the normal batch",
      "a batch must fit in about 80 % of the interval", "when it cannot fit, add throughput"],
     ("05-rate-limiting", "Sizing a cap")),
    ("x-once-available-now", "rate", "trigger(once=True) or trigger(availableNow=True): what is the difference?",
     "Both process what is there and stop, for catch-up or nightly jobs. Once runs a single batch and ignores "
     "maxOffsetsPerTrigger, so a large backlog becomes one huge batch; it is deprecated since Spark 3.4. "
     "AvailableNow, since 3.3, fixes the backlog's end when it starts, reads it in batches that honour the rate "
     "limits, and stops when that backlog is done; records arriving meanwhile wait for the next run. The query "
     "keeps its checkpoint between runs, so each run starts where the last one ended. Use availableNow with a cap "
     "sized for the cluster.",
     ["once runs one uncapped batch and is deprecated",
      "availableNow runs capped batches up to the backlog at its start, then stops",
      "the checkpoint carries the position between runs"],
     ("05-rate-limiting", "Catch-up jobs: availableNow, and why once was deprecated")),
    ("x-growing-lag", "lag", "Your query's lag grows all day. What do you do?",
     "First tell a burst from steady overload. In the progress events, compare inputRowsPerSecond with "
     "processedRowsPerSecond, and batch durations with the trigger interval. If processing stays below input and "
     "lag grows batch after batch, you need throughput. Check that the read stage has enough tasks, one per Kafka "
     "partition with data; add partitions, or minPartitions with cores to match; remove skew; make the work per "
     "record or the sink cheaper. Raising the cap does not help, and lowering it only bounds batches. If it is a "
     "burst, a cap keeps batches bounded while the lag drains. Alert on sustained growth, not on one spike.",
     ["compare input and processed rates, and batch duration with the trigger", "steady growth needs throughput",
      "more tasks: partitions or minPartitions with cores; skew; a cheaper sink", "a cap only bounds batches"],
     ("03-consumer-lag", "When lag keeps growing")),
    ("x-tasks", "source", "How many tasks read Kafka, and do more executors help?",
     "One task per Kafka partition that has new records in the batch, whatever the number of cores. The driver "
     "makes one offset range per partition and each range is one task, so a 4-partition topic gives at most four "
     "read tasks, and cores beyond four sit idle in that stage. More executors help only when there are tasks for "
     "them: add partitions to the topic, or set minPartitions or maxRecordsPerPartition to split large ranges. "
     "Splitting costs the preferred executor and its warm cached consumer. Stages after a shuffle run "
     "spark.sql.shuffle.partitions tasks, so they scale differently.",
     ["one task per partition with new data", "cores beyond that sit idle in the read stage",
      "more partitions or minPartitions to split ranges", "splitting loses the preferred executor"],
     ("01-source-internals", "One partition, one task — when it has new records")),
    ("x-kafka-eo", "sinks", "Is Kafka to Spark to Kafka exactly-once?",
     "No. Spark's checkpoint makes the read side replayable: after a crash the uncommitted batch runs again with "
     "the same offsets. But the Kafka sink only produces records. It has no transactions and remembers nothing, so "
     "a replayed batch is written again and downstream sees duplicates. A write task retried after an executor loss "
     "can re-send records too. Producer idempotence only drops retries within one producer session. So it is "
     "at-least-once. To make it effectively exactly-once, deduplicate downstream by a key made from the source "
     "coordinates, or write with your own transactional producer in foreachBatch, keyed by the batch id.",
     ["at-least-once", "a replayed batch is written again",
      "producer idempotence covers one session only", "dedup by key, or a transactional foreachBatch"],
     ("07-sinks-exactly-once", "At-least-once, proven")),
    ("x-eo-three-ways", "sinks", "How do you get exactly-once output from a Spark stream?",
     "Spark replays batches, so exactly-once is a property of the sink: writing batch N twice must leave the same "
     "result as writing it once. There are three ways. One: an idempotent write keyed by each record's topic, "
     "partition and offset, so an upsert overwrites instead of adding. Two: a transactional write in foreachBatch "
     "that records the batch id in the same transaction and skips a batch id already committed; readers use "
     "read_committed. Three: a sink with its own log, like Spark's file sink with _spark_metadata, or Delta, which "
     "records the query id and batch id. Readers must honour that mechanism.",
     ["exactly-once is the sink's property", "an upsert keyed by topic, partition and offset",
      "a transaction that records the batch id", "a sink with its own log: file sink, Delta"],
     ("07-sinks-exactly-once", "Exactly-once, three ways")),
    ("x-transactional-id", "sinks", "Does setting kafka.transactional.id make Spark's Kafka sink exactly-once?",
     "No. The Kafka sink passes kafka options to its producer, but Spark never calls the producer's transaction "
     "API: no initTransactions, no begin, no commit. With a transactional id set, the producer refuses to send "
     "before transactions are initialised, so the write fails instead of becoming exactly-once. For transactional "
     "output you drive a producer yourself in foreachBatch: a stable transactional id, one transaction per batch, "
     "the batch id committed in it so a replay is skipped, and consumers reading read_committed. A restarted "
     "producer with the same id fences the old one and aborts its open transaction.",
     ["Spark never calls the transaction API", "the write fails",
      "your own producer in foreachBatch, the batch id in the transaction", "readers use read_committed"],
     ("07-sinks-exactly-once", "The kafka.transactional.id claim, run live")),
    ("x-fail-on-data-loss", "source", "What does failOnDataLoss do, and when would you set it to false?",
     "It decides what happens when offsets the query needs are gone: deleted by retention while it was stopped, a "
     "topic recreated, or a latest offset going backwards after an unclean leader election. With the default, "
     "true, the query fails with an error that names the option. With false it logs a warning and goes on from "
     "what is still there, and the skipped records are lost; the scan's SQL metrics count them. Keep true wherever "
     "loss matters, and fix the cause: longer retention or faster recovery. Set false knowingly, for a stream "
     "where fresh data matters more than complete data.",
     ["it concerns offsets that are gone: retention, a recreated topic, offsets going backwards",
      "true fails the query", "false warns and skips, and those records are lost",
      "keep true and fix retention"],
     ("02-offset-tracking", "9. Offsets that vanished: failOnDataLoss=false and the scan's own counts")),
    ("x-pattern", "multitopic", "What goes wrong when one query reads many topics?",
     "subscribePattern takes a Java regex, and on the default path it is matched with find, not as a full match, "
     "so events-.* also matches old-events-1. Anchor it with a caret and a dollar sign. Matching topics created "
     "later are picked up on a later trigger and read from earliest. One source over many topics shares one "
     "maxOffsetsPerTrigger, split by backlog. Every row carries its topic, so route and parse by topic with the "
     "right schema, and send what fails to parse to a quarantine topic with its topic, partition and offset. And "
     "changing the subscription of an existing checkpoint is a migration: a removed topic looks like data loss.",
     ["an unanchored match: anchor the pattern", "new matching topics are read from earliest",
      "one cap shared by all the topics", "route by the topic column; quarantine bad records"],
     ("06-multi-topic", "subscribePattern, and the unanchored trap")),
    ("x-executor-loss", "cluster", "An executor dies in the middle of a micro-batch. What happens?",
     "An executor's death does not replay the batch. The scheduler retries the lost tasks inside the same batch, "
     "up to spark.task.maxFailures attempts, and the Worker starts a new executor; the batch just takes longer. "
     "Only a restart, after the driver died or the query failed, replays a batch from offsets/N. Retries still "
     "matter for sinks: Spark's own Kafka sink writes from the executors, and a retried write task re-sends what "
     "the lost attempt had already sent, so it can duplicate on an executor loss alone. A broker's death is a "
     "leader election instead: the query stalls for seconds, up to a minute, then goes on.",
     ["the lost tasks are retried in the same batch", "a batch replays only on a restart",
      "the Kafka sink can duplicate on a retried write", "a broker loss is a leader election and a stall"],
     ("09-cluster-failures", "The demo: kill things under a running query")),
    ("x-acks", "cluster", "Which producer and topic settings keep acknowledged records when a broker dies?",
     "acks decides when the leader answers the producer. With acks=1 it answers once it has the record, so if it "
     "dies before a follower fetched it, an acknowledged record is lost. With acks=all it waits for every replica "
     "in the ISR, and min.insync.replicas=2 makes it refuse writes when fewer than two are in sync. So three "
     "replicas, a minimum of two, acks=all and an idempotent producer lose nothing acknowledged when one broker "
     "dies. Keep unclean leader election off: an out-of-sync leader can lose acknowledged records, which Spark "
     "notices only as an offset going backwards.",
     ["acks=1 loses what only the leader had", "acks=all waits for the in-sync replicas",
      "min.insync.replicas=2 with three replicas", "an idempotent producer, and unclean election off"],
     ("09-cluster-failures", "What acks promises when the leader dies")),
    ("x-checkpoint-where", "cluster", "Where must a streaming query's checkpoint live, and why?",
     "On storage every node reaches and that outlives the machines: HDFS, NFS, or an object store whose connector "
     "gives fast, atomic renames. The driver writes offsets, commits, metadata and sources there, and executors "
     "write state-store files for stateful queries. A driver restarted on another node must find them; on a local "
     "/tmp it finds nothing and starts as a new query, from startingOffsets. Give every query its own checkpoint, "
     "never a shared one, and treat it as the source of truth: deleting it loses the position, and sharing it "
     "mixes two queries' progress.",
     ["shared, durable storage", "the driver writes the logs, executors the state files",
      "a local path: a driver restarted elsewhere starts afresh", "one checkpoint per query"],
     ("09-cluster-failures", "Where the checkpoint must live")),
]


@dataclass
class Item:
    """One item of a round: what is asked, how it is answered, and where the course proves the answer."""

    id: str
    topic: str
    kind: str  # "choice", "number" or "explain"
    text: str
    key: str = ""  # a letter (choice), a number as text (number), "" (explain)
    options: list = field(default_factory=list)
    why: str = ""  # the explanation, or for explain items the model answer
    points: list = field(default_factory=list)  # explain items: the key points to tick
    where: tuple = ()  # (notebook, section heading); the section may be ""

    @property
    def seconds(self) -> int:
        """The time this item is worth in a round."""
        return SECONDS[self.kind]


def where(question_id: str, topic: str) -> tuple:
    """(notebook, section) that proves a question's answer: its own section (every pool question has one)."""
    for row in EXPLAIN:
        if row[0] == question_id:
            return row[5]
    return interview.WHERE.get(question_id) or (interview.TOPICS[topic][2], "")


def link(place: tuple, base: str = "") -> str:
    """A markdown-ready link target for (notebook, section), relative to `base` (JupyterLab's heading anchors)."""
    notebook, section = place
    anchor = "#" + section.replace(" ", "-") if section else ""
    return f"{base}{notebook}/{notebook}.ipynb{anchor}"


def explain_item(row) -> Item:
    """An EXPLAIN row as an item of a round."""
    qid, topic, text, model, points, place = row
    return Item(qid, topic, "explain", text, why=model, points=list(points), where=place)


def item(question_id: str, rng: random.Random) -> Item:
    """One item by id: an explain item, or a pool question (a numbered one becomes a number to type)."""
    for row in EXPLAIN:
        if row[0] == question_id:
            return explain_item(row)
    q = interview.make(question_id, rng)
    place = where(question_id, q.topic)
    if q.kind:
        answer = q.options[interview.LETTERS.index(q.key)]
        return Item(q.id, q.topic, "number", q.text, answer, [], q.why, where=place)
    return Item(q.id, q.topic, "choice", q.text, q.key, list(q.options), q.why, where=place)


def catalogue() -> dict:
    """{item id: (topic, kind)} for everything a round can ask."""
    out = {}
    for qid in interview.pool_ids():
        if qid.startswith("n-"):
            out[qid] = (interview.NUMBERED[qid[2:]][0], "number")
        else:
            out[qid] = (next(q[1] for q in interview.FIXED if q[0] == qid), "choice")
    for row in EXPLAIN:
        out[row[0]] = (row[1], "explain")
    return out


def _number(text) -> float | None:
    try:
        return float(str(text).replace(",", "").replace("_", "").strip())
    except ValueError:
        return None


def is_right(it: Item, given) -> bool:
    """Whether `given` answers `it`: a letter, a number (within 0.5 %), or the key points ticked (indices)."""
    if it.kind == "choice":
        return isinstance(given, str) and given.strip().lower() == it.key
    if it.kind == "number":
        want, got = _number(it.key), _number(given)
        return got is not None and want is not None and math.isclose(got, want, rel_tol=0.005, abs_tol=1e-9)
    ticked = {int(i) for i in (given or []) if 0 <= int(i) < len(it.points)}
    return len(ticked) >= math.ceil(PASS_SHARE * len(it.points))


# -- history and the spaced-repetition cards ----------------------------------------------------------------------
def history_file() -> Path:
    """Where this learner's interview history is kept (STREAMLAB_HOME/interview.json)."""
    from streamlab.lab.jars import state_dir

    return state_dir() / HISTORY_FILE


def load() -> dict:
    """The history: {"rounds": [...], "cards": {id: card}, "topics": {topic: card}, "design": [...]}."""
    try:
        data = json.loads(history_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    for key, empty in (("rounds", []), ("cards", {}), ("topics", {}), ("design", [])):
        if not isinstance(data.get(key), type(empty)):
            data[key] = empty
    return data


def save(data: dict) -> Path:
    """Write the history atomically (a temporary file, then a rename): a crash never leaves half a file."""
    from .variants import save_json

    path = history_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_json(path, data)
    return path


def _card(raw):
    from fsrs import Card

    return Card.from_dict(raw) if isinstance(raw, dict) else Card()


def _due(raw, now: datetime) -> bool:
    return isinstance(raw, dict) and _card(raw).due <= now


def _review(raw, rating: str, now: datetime) -> dict:
    from fsrs import Rating, Scheduler

    card, _log = Scheduler(enable_fuzzing=False).review_card(_card(raw), getattr(Rating, rating), now)
    return card.to_dict()


def topic_rating(right: int, asked: int) -> str:
    """The fsrs rating a topic earns in a round: all right Easy, two thirds Good, half Hard, less Again."""
    share = right / asked if asked else 0.0
    return "Easy" if share >= 1 else "Good" if share >= 2 / 3 else "Hard" if share >= 0.5 else "Again"


def weak_topics(data: dict | None = None, now: datetime | None = None) -> list[str]:
    """Topics reviewed before whose card is due now, weakest (lowest last score) first."""
    data = load() if data is None else data
    now = now or datetime.now(timezone.utc)
    last: dict = {}
    for rnd in data["rounds"]:
        for topic, (right, asked) in rnd.get("scores", {}).items():
            last[topic] = right / asked if asked else 0.0
    due = [t for t, raw in data["topics"].items() if _due(raw, now)]
    return sorted(due, key=lambda t: (last.get(t, 0.0), t))


def plan(topics=None, minutes: float = 20, data: dict | None = None, now: datetime | None = None,
         seed=None) -> list[Item]:
    """The items of a round of about `minutes`, on `topics` (default all): weak topics and due questions first,
    then questions not asked yet, kinds mixed (two choices, a number, an explain, …), topics spread."""
    data = load() if data is None else data
    now = now or datetime.now(timezone.utc)
    known = set(interview.TOPICS)
    topics = list(topics or known)
    unknown = sorted(set(topics) - known)
    if unknown:
        raise ValueError(f"no topic {', '.join(unknown)}: choose from {', '.join(sorted(known))}")
    if not minutes or minutes <= 0:
        raise ValueError("minutes must be more than 0, e.g. 20")
    rng = random.Random(seed)
    weak = set(weak_topics(data, now)) & set(topics)
    candidates = {kind: [] for kind in KINDS}
    for qid, (topic, kind) in catalogue().items():
        if topic in topics:
            raw = data["cards"].get(qid)
            rank = 0 if _due(raw, now) else 1 if raw is None else 2  # due again, never asked, asked and not due
            candidates[kind].append((rank, rng.random(), qid, topic))
    chosen, per_topic, budget = [], dict.fromkeys(topics, 0), minutes * 60
    pattern = ["choice", "choice", "number", "choice", "explain"]
    step = 0
    while budget >= min(SECONDS.values()) and any(candidates.values()):
        kind = pattern[step % len(pattern)]
        step += 1
        if not candidates[kind] or SECONDS[kind] > budget:
            kind = next((k for k in KINDS if candidates[k] and SECONDS[k] <= budget), None)
            if kind is None:
                break
        best = min(candidates[kind], key=lambda c: (c[0] > 1, per_topic[c[3]] - (3 if c[3] in weak else 0),
                                                    c[0], c[1]))
        candidates[kind].remove(best)
        per_topic[best[3]] += 1
        chosen.append(best[2])
        budget -= SECONDS[kind]
    numbers = random.Random(f"{learner_seed()}-{len(data['rounds'])}-{seed}")  # this learner's numbers
    return [item(qid, numbers) for qid in chosen]


def learner_seed() -> int:
    """This learner's seed for the interview's numbers (STREAMLAB_SEED, else the one stored for 'interview')."""
    from .variants import seed_for

    try:
        return seed_for("interview")
    except (OSError, ValueError):
        return 0


class Round:
    """A timed round: `answer()` each item in turn, then `finish()` scores it by topic, reviews the cards and
    keeps it in the history. Answers given after the time is up are recorded but count as wrong."""

    def __init__(self, topics=None, minutes: float = 20, seed=None, now: datetime | None = None):
        self.data = load()
        self.started = now or datetime.now(timezone.utc)
        self.minutes = minutes
        self.items = plan(topics, minutes, self.data, self.started, seed)
        self.topics = sorted({it.topic for it in self.items})
        self.results: dict = {}  # item id -> {"right", "late", "given"}
        self.finished = False

    @property
    def deadline(self) -> datetime:
        """When the round's time is up."""
        return self.started + timedelta(minutes=self.minutes)

    def left(self, now: datetime | None = None) -> float:
        """Seconds left in the round (0 when the time is up)."""
        return max(0.0, (self.deadline - (now or datetime.now(timezone.utc))).total_seconds())

    @property
    def current(self) -> Item | None:
        """The next item not answered yet (None when all are)."""
        return next((it for it in self.items if it.id not in self.results), None)

    def answer(self, given, now: datetime | None = None) -> bool:
        """Answer the current item; returns whether it counts as right (never after the time is up)."""
        it = self.current
        if it is None or self.finished:
            raise RuntimeError("the round is over: call finish() or start a new round")
        late = self.left(now) <= 0
        right = is_right(it, given) and not late
        self.results[it.id] = {"right": right, "late": late,
                               "given": sorted(given) if it.kind == "explain" else str(given)}
        return right

    def scores(self) -> dict:
        """{topic: [right, asked]} over the items answered (and, once finished, those left unanswered)."""
        out: dict = {}
        for it in self.items:
            if it.id in self.results or self.finished:
                row = out.setdefault(it.topic, [0, 0])
                row[0] += int(self.results.get(it.id, {}).get("right", False))
                row[1] += 1
        return out

    def finish(self, now: datetime | None = None) -> dict:
        """Score the round by topic, review every card (Again for a miss), and save it in the history."""
        if self.finished:
            return self.scores()
        now = now or datetime.now(timezone.utc)
        self.finished = True
        for it in self.items:
            right = self.results.get(it.id, {}).get("right", False)
            self.data["cards"][it.id] = _review(self.data["cards"].get(it.id), "Good" if right else "Again", now)
        scores = self.scores()
        for topic, (right, asked) in scores.items():
            self.data["topics"][topic] = _review(self.data["topics"].get(topic), topic_rating(right, asked), now)
        self.data["rounds"].append({
            "started": self.started.isoformat(timespec="seconds"), "minutes": self.minutes,
            "seconds": round(min((now - self.started).total_seconds(), self.minutes * 60), 1),
            "scores": scores, "items": [{"id": it.id, "topic": it.topic, "kind": it.kind,
                                         **self.results.get(it.id, {"right": False, "late": True})}
                                        for it in self.items]})
        save(self.data)
        return scores

    def report(self) -> str:
        """The score per topic, what to reread (the sections of the missed items), and when each topic is due."""
        scores = self.scores()
        right = sum(r for r, _a in scores.values())
        asked = sum(a for _r, a in scores.values())
        lines = [f"score {right}/{asked}"]
        for topic, (r, a) in sorted(scores.items(), key=lambda kv: interview.TOPICS[kv[0]][0]):
            module, title, _nb = interview.TOPICS[topic]
            lines.append(f"{'✓' if r == a else '✗'} module {module} ({title}): {r}/{a}")
        missed = [it for it in self.items if not self.results.get(it.id, {}).get("right")]
        if missed:
            lines.append("reread:")
            seen = set()
            for it in missed:
                place = it.where
                if place not in seen:
                    seen.add(place)
                    lines.append(f"  {place[0]}" + (f", section {place[1]!r}" if place[1] else ""))
        if self.finished:
            lines.append("next round asks first: " + (", ".join(weak_topics(self.data, self.deadline + timedelta(
                minutes=15))) or "nothing due yet; any topic"))
        return "\n".join(lines)


def record_design(round_id: str, met: list, missing: list, passed: bool) -> None:
    """Keep a checked design answer in the history (what `python -m grader progress` shows)."""
    data = load()
    data["design"].append({"round": round_id, "checked": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                           "met": list(met), "missing": list(missing), "passed": bool(passed)})
    try:
        save(data)
    except OSError:
        pass  # a read-only home: the result is still on screen


def remember(key: str, entry: dict) -> None:
    """Append `entry` (stamped with the time) to the history's list `key` (the incident round's answers, the on-call
    nights); a home that cannot be written keeps nothing, and the score stays on screen."""
    data = load()
    kept = data.get(key) if isinstance(data.get(key), list) else []
    kept.append({"checked": datetime.now(timezone.utc).isoformat(timespec="seconds"), **entry})
    data[key] = kept
    try:
        save(data)
    except OSError:
        pass


def progress_lines(data: dict | None = None, now: datetime | None = None) -> list[str]:
    """The interview history as table rows for `python -m grader progress`: per topic, and the design rounds."""
    data = load() if data is None else data
    now = now or datetime.now(timezone.utc)
    cases = data.get("forensics") if isinstance(data.get("forensics"), list) else []
    nights = data.get("oncall") if isinstance(data.get("oncall"), list) else []  # course/oncall.py
    incidents = data.get("incidents") if isinstance(data.get("incidents"), list) else []  # course/incidents.py
    if not data["rounds"] and not data["design"] and not cases and not nights and not incidents:
        return ["interview: no mock round yet (python -m grader interview, or notebooks/INTERVIEW.ipynb)"]
    totals: dict = {}
    for rnd in data["rounds"]:
        for topic, (right, asked) in rnd.get("scores", {}).items():
            row = totals.setdefault(topic, [0, 0, None])
            row[0] += right
            row[1] += asked
            row[2] = (right, asked)
    lines = [f"interview: {len(data['rounds'])} mock round(s)",
             f"  {'topic':<14}{'all rounds':>11}{'last':>7}  next due"]
    for topic in sorted(totals, key=lambda t: interview.TOPICS.get(t, (99,))[0]):
        right, asked, last = totals[topic]
        raw = data["topics"].get(topic)
        due = _card(raw).due if isinstance(raw, dict) else now
        when = "now" if due <= now else due.strftime("%Y-%m-%d %H:%M")
        lines.append(f"  {topic:<14}{f'{right}/{asked}':>11}{f'{last[0]}/{last[1]}':>7}  {when}")
    if data["design"]:
        latest: dict = {}
        for entry in data["design"]:
            latest[entry["round"]] = entry
        done = sum(1 for e in latest.values() if e["passed"])
        lines.append(f"  design rounds: {done} of {len(latest)} tried passed"
                     + "".join(f"; {r}: {'passed' if e['passed'] else 'missing ' + ', '.join(e['missing'][:2])}"
                               for r, e in latest.items()))
    if cases:  # checkpoint forensics (streamlab/course/forensics.py)
        best = max((c["score"] / c["max_score"] for c in cases if c.get("max_score")), default=0)
        last = cases[-1]
        lines.append(f"  checkpoint forensics: {len(cases)} case(s), last {last['score']}/{last['max_score']}"
                     + (f" (missed {', '.join(last['missed'])})" if last.get("missed") else "")
                     + f", best {best:.0%}")
    if incidents:
        lines.append(f"  incident round: {len(incidents)} incident(s), last {incidents[-1]['score']}/2 "
                     f"({incidents[-1]['fault']}), {sum(i['score'] for i in incidents)}/{2 * len(incidents)} in all")
    if nights:
        lines.append(f"  on-call night: {len(nights)} night(s), last {nights[-1]['total']}/{nights[-1]['of']}, "
                     f"best {max(n['total'] for n in nights)}/{nights[-1]['of']}")
    return lines


# -- the terminal front end -------------------------------------------------------------------------------------
def run_terminal(topics=None, minutes: float = 20, ask=input, out=print, seed=None) -> dict:
    """A round in a terminal: one item at a time, the time left shown, the score by topic at the end."""
    rnd = Round(topics, minutes, seed)
    out(f"A {minutes:g}-minute round of {len(rnd.items)} items on {', '.join(rnd.topics)}. "
        "Answer with a letter, a number, or the key points you covered. Ctrl-D ends the round.")
    weak = weak_topics(rnd.data, rnd.started)
    if weak:
        out("asked first, from your last rounds: " + ", ".join(weak))
    try:
        while rnd.current is not None:
            it = rnd.current
            left = rnd.left()
            if left <= 0:
                out("time is up: the items left count as not answered")
                break
            out(f"\n[{int(left) // 60}:{int(left) % 60:02d} left] ({it.kind}, {it.topic}) {it.text}")
            if it.kind == "choice":
                for letter, option in zip(interview.LETTERS, it.options):
                    out(f"  {letter}) {option}")
                right = rnd.answer(ask("your letter: "))
                out(("✓ right. " if right else f"✗ the answer is {it.key}. ") + it.why)
            elif it.kind == "number":
                right = rnd.answer(ask("your number: "))
                out(("✓ right. " if right else f"✗ the answer is {it.key}. ") + it.why)
            else:
                ask("say it out loud (or type it), then press Enter to see the model answer: ")
                out("model answer: " + it.why)
                for i, point in enumerate(it.points, 1):
                    out(f"  {i}. {point}")
                ticked = ask("which key points did you make? numbers, e.g. 1 3 4: ")
                marks = [int(x) - 1 for x in ticked.replace(",", " ").split() if x.isdigit()]
                right = rnd.answer(marks)
                out("✓ counted as right" if right else f"✗ make at least {math.ceil(PASS_SHARE * len(it.points))} "
                    "of the points next time")
            out(f"  proven live in {link(it.where, 'notebooks/')}")
    except (EOFError, KeyboardInterrupt):
        out("\nround ended early: the items left count as not answered")
    rnd.finish()
    out("\n" + rnd.report())
    return rnd.scores()


def main(argv=None) -> int:
    """`python -m grader interview`: a timed mock round in the terminal; --history prints the progress."""
    parser = argparse.ArgumentParser(prog="python -m grader interview", description=main.__doc__)
    parser.add_argument("--topics", help="comma-separated, from: " + ", ".join(interview.TOPICS))
    parser.add_argument("--minutes", type=float, default=20, help="the round's length (default 20)")
    parser.add_argument("--history", action="store_true", help="print the history per topic and stop")
    args = parser.parse_args(argv)
    if args.history:
        print("\n".join(progress_lines()))
        return 0
    topics = [t.strip() for t in args.topics.split(",") if t.strip()] if args.topics else None
    try:
        run_terminal(topics, args.minutes)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


# -- the notebook front end -------------------------------------------------------------------------------------
inline = interview.inline  # a widget's HTML text, with `code` spans set as code


def heading_cell(place: tuple) -> str:
    """The id of the cell that holds the section's heading in the student notebook ('' when not found)."""
    import re

    from streamlab.lab.machine import ROOT

    notebook, section = place
    try:
        cells = json.loads((ROOT / "notebooks" / notebook / f"{notebook}.ipynb").read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return ""
    for cell in cells:
        text = "".join(cell.get("source", ""))
        if cell.get("cell_type") == "markdown" and section and any(
                re.match(r"#{1,6} ", line) and line.lstrip("#").strip().replace("`", "") == section
                for line in text.splitlines()):
            return cell.get("id", "")
    return ""


def proof_link(place: tuple) -> str:
    """The markdown line under an answer: a link JupyterLab opens at the section that proves it.

    It names the heading's cell (`#cell-id=`): JupyterLab 4 opens a notebook at a clicked link's heading anchor only
    once that heading is rendered, which a notebook just opened has not (measured in Chromium: it stays at the top),
    while a cell id is found in the notebook's model."""
    return f"[open it in the course →]({proof_target(place)})"


def proof_target(place: tuple) -> str:
    """The link target of proof_link: the notebook and its heading's cell id (the heading anchor when not found)."""
    notebook, _section = place
    cell = heading_cell(place)
    return f"{notebook}/{notebook}.ipynb#cell-id={cell}" if cell else link(place)


class MockRound:
    """A round in a notebook widget: pick topics and minutes, start, answer item by item, see the score by topic.

    `start()`, `answer(value)` and `next()` drive it without a browser (the buttons call them)."""

    def __init__(self, topics=None, minutes: float = 20):
        import ipywidgets as W

        self.round: Round | None = None
        self.topic_box = W.SelectMultiple(options=list(interview.TOPICS), value=tuple(topics or interview.TOPICS),
                                          description="topics", rows=5)
        self.minutes = W.IntSlider(value=int(minutes), min=5, max=60, step=5, description="minutes")
        self.start_button = W.Button(description="start a round", icon="play", button_style="primary",
                                     layout=W.Layout(width="auto"))
        self.start_button.on_click(lambda _: self.start())
        self.header, self.body, self.feedback = W.HTML(), W.HTML(), W.HTML()
        # The proof's link as markdown in an Output: rendered by JupyterLab, which opens the notebook at the
        # section (a link in a widget's HTML would leave the lab).
        self.proof = W.Output()
        self.controls = W.VBox()
        self.next_button = W.Button(description="next", icon="arrow-right", disabled=True)
        self.next_button.on_click(lambda _: self.next())
        weak = weak_topics()
        self.header.value = ("<b>Weak topics due again:</b> " + ", ".join(weak)) if weak else \
            "Pick topics and a length, then start."
        self.box = W.VBox([W.HBox([self.topic_box, W.VBox([self.minutes, self.start_button])]), self.header,
                           self.body, self.controls, self.feedback, self.proof, self.next_button])

    def start(self) -> None:
        """Plan a round on the chosen topics and show its first item."""
        self.round = Round(list(self.topic_box.value), self.minutes.value)
        self._render()

    def _render(self) -> None:
        import html

        import ipywidgets as W

        rnd = self.round
        it = rnd.current if rnd else None
        self.feedback.value = ""
        self.proof.outputs = ()
        self.next_button.disabled = True
        if rnd is None:
            return
        if it is None or rnd.left() <= 0:
            rnd.finish()
            self.header.value = "<b>Round over</b>"
            self.body.value = "<pre>" + html.escape(rnd.report()) + "</pre>"
            self.controls.children = ()
            return
        left = int(rnd.left())
        done = len(rnd.results)
        self.header.value = (f"<b>Item {done + 1} of {len(rnd.items)}</b> · {it.kind} · {it.topic} · "
                             f"{left // 60}:{left % 60:02d} left")
        text = f"<p>{inline(it.text)}</p>"
        if it.kind == "choice":
            text += "<ul style='list-style:none'>" + "".join(
                f"<li><b>{l})</b> {inline(o)}</li>" for l, o in zip(interview.LETTERS, it.options)) + "</ul>"
            buttons = []
            for letter in interview.LETTERS:
                b = W.Button(description=letter, layout=W.Layout(width="60px"))
                b.on_click(lambda _, letter=letter: self.answer(letter))
                buttons.append(b)
            self.controls.children = (W.HBox(buttons),)
        elif it.kind == "number":
            entry = W.Text(placeholder="your number")
            go = W.Button(description="answer")
            go.on_click(lambda _: self.answer(entry.value))
            self.controls.children = (W.HBox([entry, go]),)
        else:
            typed = W.Textarea(placeholder="say it out loud, or type it here (it is not graded)",
                               layout=W.Layout(width="100%", height="90px"))
            reveal = W.Button(description="show the model answer", layout=W.Layout(width="auto"))
            reveal.on_click(lambda _: self.reveal())
            self.controls.children = (typed, reveal)
        self.body.value = text

    def reveal(self) -> None:
        """Explain items: show the model answer and a box per key point to tick."""
        import html

        import ipywidgets as W

        it = self.round.current
        self.body.value += f"<p><b>Model answer.</b> {inline(it.why)}</p><p><b>Tick the points you made:</b></p>"
        self._ticks = [W.Checkbox(description=p, indent=False, layout=W.Layout(width="100%")) for p in it.points]
        mark = W.Button(description="mark it", button_style="primary")
        mark.on_click(lambda _: self.answer([i for i, t in enumerate(self._ticks) if t.value]))
        self.controls.children = (*self._ticks, mark)

    def answer(self, given) -> bool:
        """Answer the current item; says whether it counted, why, and where the course proves it."""
        import html

        from IPython.display import Markdown

        rnd = self.round
        it = rnd.current
        if it is None:
            return False
        right = rnd.answer(given)
        late = rnd.results[it.id]["late"]
        verdict = ("⏱ time is up: not counted. " if late else "✓ right. " if right else
                   "✗ " + (f"the answer is {it.key}. " if it.kind != "explain" else "fewer than two thirds of the "
                                                                                    "points. "))
        explanation = "" if it.kind == "explain" else inline(it.why)
        section = f", section <i>{html.escape(it.where[1])}</i>" if it.where[1] else ""
        self.feedback.value = f"{verdict}{explanation}<br>proven live in {html.escape(it.where[0])}{section}:"
        self.proof.outputs = ()
        self.proof.append_display_data(Markdown(proof_link(it.where)))
        self.body.value = self.body.value.replace("<p><b>Tick the points you made:</b></p>", "")
        self.controls.children = ()
        self.next_button.disabled = False
        return right

    def next(self) -> None:
        """The next item (or the round's report)."""
        self._render()

    def show(self):
        """Display the widget (a headless run shows a line of text instead)."""
        from IPython.display import display

        bundle = self.box._repr_mimebundle_()
        bundle["text/plain"] = "A mock interview round: pick topics and minutes, then start."
        display(bundle, raw=True)


if __name__ == "__main__":
    sys.exit(main())
