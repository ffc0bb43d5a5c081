"""Design rounds: whiteboard scenarios with a rubric, a model answer and the pitfalls, and a checker for typed answers.

Why: the questions interviewers weigh most are open ones ("design exactly-once payments", "replay last Tuesday"),
and a candidate rehearsing alone cannot tell which part of the answer is missing. Each round here is plain data: a
scenario, rubric points, each with the ideas that satisfy it (alternatives of phrases that must all appear, as
regular expressions), a model answer and the pitfalls. `check(round_id, answer)` says which points the answer
makes and which it misses. Keyword matching cannot judge reasoning, so it guards against the cheap ways past it:
the scenario pasted back is removed before matching (any run of five words it shares with the scenario), an
answer must be written in sentences (at least three of five words or more) and short enough to say in five
minutes (at most 400 words), and a pass needs three quarters of the points. tests/unit/test_design.py proves that
an empty answer, a constant one, a buzzword list and the scenario itself fail every round, and that each model
answer passes its own round only.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

MIN_SENTENCES, MIN_SENTENCE_WORDS, MAX_WORDS = 3, 5, 400
PASS_SHARE = 0.75
SHINGLE = 5  # words: a run this long shared with the scenario is the scenario pasted back


@dataclass
class Point:
    """One rubric point: what it asks for, and the ideas that satisfy it (any alternative; all its patterns)."""

    id: str
    says: str
    any_of: list  # [[regex, ...], ...]


@dataclass
class Design:
    """A design round: the scenario, its rubric, a model answer, the pitfalls, and where the course proves it."""

    id: str
    title: str
    scenario: str
    points: list
    model: str
    pitfalls: list
    where: list = field(default_factory=list)  # [(notebook, section), ...]


def _p(pid, says, *alternatives):
    return Point(pid, says, [[a] if isinstance(a, str) else list(a) for a in alternatives])


ROUNDS = [
    Design(
        "payments-eo", "Exactly-once payments: Kafka → Spark → Kafka",
        "Card payments arrive on the Kafka topic payments (12 partitions). A Spark Structured Streaming job must "
        "enrich each payment with the merchant's risk score and publish the result to the topic payments-scored. "
        "A payment scored twice would charge a merchant's fee twice. Design the pipeline so that every payment is "
        "published once, across driver crashes, executor losses and restarts.",
        [_p("replay", "says the plain Kafka sink is at-least-once: a restart replays the uncommitted batch",
            r"at[- ]least[- ]once", r"\breplay", r"re-?runs? (the )?(same )?batch", r"(written|writes?|sent) twice"),
         _p("idempotent", "makes the write idempotent, keyed by the payment id or the source coordinates",
            (r"idempoten|dedup|de-duplicat|upsert", r"payment[ _]?id|\bkey\b|partition.{0,20}offset"),
            (r"payment[ _]?id", r"unique|once|skip|ignore")),
         _p("transaction", "writes each batch in one transaction from foreachBatch, keyed by the batch id",
            (r"transaction", r"batch[ _]?id|foreach ?batch"), (r"foreach ?batch", r"batch[ _]?id")),
         _p("readers", "has downstream readers use read_committed (or deduplicate)",
            r"read[_ ]committed", (r"consumer|reader|downstream", r"dedup|de-duplicat|idempoten")),
         _p("checkpoint", "keeps the checkpoint on durable storage every node reaches",
            (r"checkpoint", r"hdfs|shared|durable|s3|object stor|nfs|reliable")),
         _p("producer", "makes the output producer durable: acks=all, or enable.idempotence",
            r"acks\s*=?\s*(all|-1)", r"enable\.idempotence|idempotent producer")],
        "Spark's Kafka sink is at-least-once: a restart re-runs the batch whose commits/N is missing, with the same "
        "offsets, and writes it again; a retried task can re-send too. So I make the output idempotent or "
        "transactional. Option one: in foreachBatch, one producer with a stable transactional id writes the batch in "
        "one transaction and commits the batch id with it; a replayed batch id already committed is skipped. "
        "Consumers of payments-scored read with isolation.level=read_committed. Option two: key every output by the "
        "payment id, and the consumer that charges fees upserts by it, so a duplicate changes nothing. The producer "
        "uses acks=all and enable.idempotence=true against a topic with min.insync.replicas=2. The checkpoint lives "
        "on HDFS or another durable store every node reaches, one per query. Setting kafka.transactional.id on "
        "Spark's sink does not help: Spark never calls the transaction API.",
        ["believing kafka.transactional.id on writeStream.format('kafka') makes it exactly-once",
         "forgetting that readers must use read_committed, or they see aborted records",
         "deduplicating within one batch only: a replay arrives in a later batch",
         "a checkpoint on local disk: a driver restarted elsewhere starts afresh"],
        [("07-sinks-exactly-once", "Exactly-once, three ways"),
         ("07-sinks-exactly-once", "The kafka.transactional.id claim, run live")]),
    Design(
        "size-cap", "Sizing a cap and a trigger from a cost and a rate",
        "An ingest job reads the topic clicks (8 partitions). Measured on its cluster: a micro-batch costs 0.2 ms "
        "per record, the normal rate is 2,000 records per second, and twice a day a campaign sends five times that "
        "for two minutes. The product team wants records in the table within 10 seconds. Choose the trigger "
        "interval and maxOffsetsPerTrigger, and say what happens during a campaign.",
        [_p("fits", "keeps a batch within about 80 % of the interval (cost × cap)",
            r"80 ?%|0\.8\b", (r"finish|fit|complete|done", r"interval|trigger|before the next")),
         _p("headroom", "sizes the cap at about twice the normal batch, to drain backlogs",
            r"twice|2 ?[x×]|double|headroom|2 \* "),
         _p("numbers", "works out the numbers: a 5 s trigger and a cap of 20,000",
            (r"\b20[ ,.]?000\b|\b20 ?k\b", r"\b5 ?(s\b|sec)|five seconds")),
         _p("burst", "says the burst becomes lag that builds, then drains",
            (r"burst|campaign|spike", r"lag|backlog|behind|drain|catch")),
         _p("latency", "checks the latency target against the interval and the burst",
            (r"latency|10 ?s|10 seconds|target", r"interval|trigger|burst|campaign|miss|exceed|violat")),
         _p("throughput", "says only more throughput (partitions, cores, cheaper work) shortens the burst",
            (r"throughput|partitions|cores|executors|parallel", r"more|add|scale|increase|only"))],
        "The interval is a trade between latency and cost per record; with a 10 s target I take a 5 s trigger, so a "
        "record waits at most about one interval plus a batch. The normal batch is 2,000 × 5 = 10,000 records. The "
        "cap should be twice that, 20,000, to drain backlogs, and a batch must finish within 80 % of the interval: "
        "0.8 × 5,000 ms / 0.2 ms = 20,000. Both give 20,000, so maxOffsetsPerTrigger=20,000. During a campaign "
        "10,000 records/s arrive but the query takes at most 4,000/s, so lag builds by 6,000/s, 720,000 records in "
        "two minutes, and drains at 2,000/s, about six minutes. The latency target is missed during that time. A cap "
        "only contains the burst; to meet the target through it I need more throughput: more partitions and cores, "
        "or cheaper work per record. I would watch batch durations and lag in the progress events.",
        ["a cap so large that a burst makes one batch longer than the interval",
         "thinking a cap makes the query faster: it only bounds batches",
         "the cap per partition: it is one budget per source, split by backlog",
         "forgetting the latency target during the burst"],
        [("05-rate-limiting", "Sizing a cap"), ("05-rate-limiting", "Throughput against latency")]),
    Design(
        "lag-chart", "Reading a lag chart",
        "Your dashboard shows the last hour of a query that reads the topic orders (8 partitions), with "
        "maxOffsetsPerTrigger=50,000 and a 5-second trigger. Seven partitions hold steady at about 200 records "
        "behind. Partition 7 climbs steadily from 0 to 180,000. The input rate is flat, and batch durations grew "
        "from 1.5 s to 4.8 s. Explain what is happening and what you would do.",
        [_p("skew", "names skew: one hot partition (a hot key) gets most of the records",
            r"\bskew", r"hot (key|partition)", (r"one|single|partition 7", r"most|more|hot|heav|larger|bigger")),
         _p("one-task", "says one Kafka partition is read by one task, so its work cannot spread",
            r"one task|single task|a task per|one core", (r"task", r"per partition|each partition")),
         _p("split", "splits the range: minPartitions or maxRecordsPerPartition",
            r"minpartitions|maxrecordsperpartition", (r"split", r"range|task")),
         _p("fix-key", "fixes the key distribution at the producer (a better key, salting)",
            r"salt", (r"producer|partitioner", r"key"), (r"key", r"distribut|spread|better|change|choose")),
         _p("cap-not-cure", "says raising the cap does not cure it",
            (r"cap|maxoffsetspertrigger", r"(not|n't|no)\b.{0,40}(help|fix|cure|faster)")),
         _p("near-interval", "notices batches approaching the trigger interval: the query is near its limit",
            (r"4\.8|batch duration|batches? (take|last|grew)", r"interval|trigger|5 ?s|limit|approach"))],
        "The lag is in partition 7 alone while the input rate is flat, so this is skew: a hot key sends most new "
        "records to one partition. Spark reads each Kafka partition with one task, so that partition's work runs on "
        "one core however many executors there are, and the batches' duration, now 4.8 s against a 5 s trigger, is "
        "set by that task. Raising the cap would not help: the cap's split already gives partition 7 most of it, and "
        "it only bounds batches. I would split its range with minPartitions (or maxRecordsPerPartition) so several "
        "tasks read it, accepting colder consumer caches, and fix the cause at the producer: a better key or a salted "
        "one, if per-key order allows. Then I'd alert on lag per partition, not only the total.",
        ["adding executors: the read stage still has one task for partition 7",
         "raising maxOffsetsPerTrigger, which makes batches longer, not faster",
         "reading total lag only: a flat total can hide one partition",
         "salting keys where consumers need per-key order"],
        [("03-consumer-lag", "When lag keeps growing"),
         ("05-rate-limiting", "Read parallelism: minPartitions and maxRecordsPerPartition")]),
    Design(
        "replay-tuesday", "Replaying last Tuesday",
        "It is Thursday. A bug in the enrichment wrote wrong amounts into the table orders_clean for every order of "
        "last Tuesday (UTC). The fix is deployed and the live query keeps running. The topic's retention is 7 days. "
        "Reprocess Tuesday's records with the fixed code.",
        [_p("new-checkpoint", "runs the replay as its own query with a new checkpoint",
            (r"new|separate|own|fresh|another|second", r"checkpoint")),
         _p("by-time", "starts (and ends) by time: startingTimestamp / offsets by timestamp",
            r"startingtimestamp|startingoffsetsbytimestamp|endingoffsetsbytimestamp|offsetsfortimes|endingtimestamp",
            (r"timestamp", r"start|offset|midnight|00:00")),
         _p("bounded", "bounds the run: a batch read or trigger availableNow, so it stops",
            r"available ?now", r"endingoffsets|endingtimestamp", r"spark\.read\b|batch (read|job|query)"),
         _p("idempotent", "overwrites idempotently: MERGE/upsert by key, or replaces Tuesday's rows",
            r"merge|upsert|idempoten|replace ?where", (r"overwrite|replace|delete", r"tuesday|partition|day|rows")),
         _p("retention", "does it before retention deletes Tuesday (within 7 days)",
            r"retention", r"7 days|seven days|before .{0,30}(expire|delet|gone)"),
         _p("group-myth", "leaves the live query alone: resetting a consumer group or startingOffsets does nothing",
            (r"live|running|existing|current", r"query|job"), (r"consumer group|group offsets",
                                                               r"nothing|ignored|not|n't|useless"))],
        "I leave the live query alone and run the replay as a separate job with its own new checkpoint: resetting a "
        "consumer group does nothing for Spark, and restarting the live query keeps its checkpoint's position. The "
        "job is a batch read, spark.read with startingOffsetsByTimestamp at Tuesday 00:00 UTC and "
        "endingOffsetsByTimestamp at Wednesday 00:00, so it reads exactly Tuesday and stops; a stream with "
        "startingTimestamp and trigger availableNow plus a filter works too. It applies the fixed enrichment and "
        "MERGEs into orders_clean by order id, so rerunning it is harmless and the rows the live query writes are "
        "not duplicated. It must run now: with 7 days of retention Tuesday's records are gone next Tuesday. I'd "
        "count Tuesday's records against the topic's offsets to prove nothing was missed.",
        ["restarting the live query with startingOffsets changed: the checkpoint wins",
         "kafka-consumer-groups --reset-offsets: Spark ignores group offsets",
         "an append of the replayed rows: Tuesday ends up twice",
         "a stream without an end: it keeps reading past Tuesday"],
        [("02-offset-tracking", "6. Replaying from a known offset"),
         ("02-offset-tracking", "8. Replay by time: startingTimestamp, startingOffsetsByTimestamp")]),
    Design(
        "broker-executor-lost", "A broker and an executor lost mid-stream",
        "At 03:00 one of three Kafka brokers and one Spark executor die at the same moment under a running "
        "Kafka-to-Kafka query. The topics have 3 replicas and min.insync.replicas=2, and the upstream producer uses "
        "acks=all. The query writes with Spark's own Kafka sink. Walk through what happens, what you check first, "
        "and what can be lost or duplicated.",
        [_p("task-retry", "says the executor's tasks are retried inside the same batch",
            (r"task", r"retr(y|ied|ies)|re-?run|resubmit|rescheduled")),
         _p("no-replay", "says no batch is replayed unless the query restarts",
            (r"replay|offsets/n|restart", r"(no|not|n't|only)\b")),
         _p("sink-duplicates", "says the Kafka sink can duplicate what the lost write task had sent",
            r"duplicat", r"(written|sent|write) twice", r"re-?sen[dt]"),
         _p("election", "describes the leader election of the dead broker's partitions",
            (r"leader", r"elect|new leader|fail ?over|moves?|another")),
         _p("no-loss", "says acks=all with min ISR 2 of 3 loses nothing acknowledged",
            (r"acks\s*=?\s*all|min\.?insync|min isr|in-sync|isr", r"nothing|no (data|record)|not lost|lose")),
         _p("stall", "expects a stall while Spark's offset requests time out",
            r"stall|pause|timeout|time out|default\.api", (r"wait", r"second|minute|leader")),
         _p("check", "checks things in order: progress/exceptions, cluster status, ISR, duplicates downstream",
            (r"check|look|first", r"progress|exception|status|isr|under-?replicated|lag|logs?"))],
        "The executor loss does not replay the batch: the scheduler retries its tasks inside the same batch, up to "
        "spark.task.maxFailures, and a new executor starts. But Spark's Kafka sink writes from the executors, so a "
        "retried write task re-sends what the lost attempt had sent: duplicates, without any restart. The broker "
        "loss moves leadership of its partitions to another in-sync replica; the query stalls while the driver's "
        "offset requests time out, default.api.timeout.ms, up to a minute, then goes on. With acks=all, "
        "min.insync.replicas=2 and three replicas, nothing acknowledged is lost, and writes keep being accepted with "
        "two replicas in sync. First I check the query's progress and exception, then the cluster's status and the "
        "under-replicated partitions, then count duplicates downstream by key. A batch is replayed only if the query "
        "had failed and restarted.",
        ["calling an executor loss harmless: the Kafka sink can duplicate on a retried task",
         "expecting a batch replay from an executor loss",
         "unclean leader election switched on to shorten the outage: it can lose acknowledged records",
         "failOnDataLoss=false set to 'get past' the stall"],
        [("09-cluster-failures", "The demo: kill things under a running query"),
         ("09-cluster-failures", "What acks promises when the leader dies")]),
    Design(
        "kafka-delta", "Kafka → Delta without duplicates",
        "Order events (created, paid, shipped) arrive on the Kafka topic orders, keyed by order id. Analysts want a "
        "Delta table with one row per order holding its latest state, correct after any crash of the streaming job. "
        "Design the write.",
        [_p("merge", "MERGEs (upserts) into the table by order id",
            (r"merge|upsert", r"order[ _]?id|\bkey\b")),
         _p("foreach-batch", "does it in foreachBatch", r"foreach ?batch"),
         _p("dedupe-batch", "keeps one row per order id within a batch first (the latest by offset)",
            r"multiple source rows", (r"dedup|de-duplicat|one row|latest|last", r"per (order|key)|batch|offset"),
            r"row_number|max_by|window"),
         _p("replay", "says why a replayed batch is harmless: the MERGE is idempotent, or txnAppId/txnVersion",
            r"txnappid|txnversion", (r"replay|re-?run|restart|crash", r"idempoten|same result|harmless|skip")),
         _p("order", "keeps the latest state only: compares offsets (or event times) so an older event never wins",
            (r"offset|event time|timestamp|version|sequence", r"older|newer|latest|greater|higher|out of order|wins")),
         _p("checkpoint", "keeps its own checkpoint on durable storage",
            (r"checkpoint", r"durable|shared|hdfs|s3|object|own|separate|storage"))],
        "Spark replays an uncommitted batch after a crash, so the write must be idempotent. In foreachBatch I first "
        "reduce the batch to one row per order id, the one with the highest offset: a MERGE whose source has two "
        "rows for one key fails with multiple source rows matched, and with the order id as the key one order's "
        "events share a partition where offsets follow write order. Then I MERGE into the table on the order id, "
        "updating only when the incoming offset is higher than the stored one, so an older event never overwrites "
        "a newer state and a replayed batch changes nothing. Alternatively txnAppId and txnVersion set to the batch "
        "id make Delta skip a replayed write, but only with a stable app id tied to the checkpoint. The checkpoint "
        "lives on durable storage, one per query, and OPTIMIZE runs on a schedule against small files.",
        ["a plain append in foreachBatch: a replay writes the batch twice",
         "a MERGE without deduplicating the batch: it fails on two rows for one key",
         "txnAppId reused with a new checkpoint: Delta silently skips the new batches",
         "letting an older event overwrite a newer state"],
        [("10-lakehouse", "foreachBatch + MERGE: one row per business key"),
         ("10-lakehouse", "txnAppId: idempotent appends, and their trap"),
         ("07-sinks-exactly-once", "Exactly-once, three ways")]),
]

BY_ID = {r.id: r for r in ROUNDS}


@dataclass
class Checked:
    """What `check` found: the points met and missing, whether it passes, and any note on the answer's form."""

    round_id: str
    met: list
    missing: list
    passed: bool
    notes: list = field(default_factory=list)

    def report(self) -> str:
        """The result as text: ✓ and ✗ per rubric point, notes, and the verdict."""
        design = BY_ID[self.round_id]
        lines = [f"{'✓' if p.id in self.met else '✗'} {p.says}" for p in design.points]
        lines += [f"! {n}" for n in self.notes]
        need = math.ceil(PASS_SHARE * len(design.points))
        verdict = "passed" if self.passed else f"a pass needs {need}"
        lines.append(f"{len(self.met)} of {len(design.points)} points; {verdict}")
        return "\n".join(lines)


def _words(text: str) -> list[str]:
    return re.findall(r"[\w.=/%×*+-]+(?:'\w+)?", text.lower())


def without_scenario(answer: str, scenario: str) -> str:
    """The answer with every run of SHINGLE words it shares with the scenario taken out."""
    words = _words(answer)
    shared = {tuple(_words(scenario)[i:i + SHINGLE]) for i in range(len(_words(scenario)) - SHINGLE + 1)}
    drop = set()
    for i in range(len(words) - SHINGLE + 1):
        if tuple(words[i:i + SHINGLE]) in shared:
            drop.update(range(i, i + SHINGLE))
    return " ".join(w for i, w in enumerate(words) if i not in drop)


def met(point: Point, text: str) -> bool:
    """Whether `text` (lower case) makes the point: some alternative has all its patterns present."""
    return any(all(re.search(p, text) for p in alternative) for alternative in point.any_of)


def check(round_id: str, answer: str) -> Checked:
    """Check a typed answer against a round's rubric: the points met and missing, and whether it passes."""
    if round_id not in BY_ID:
        raise KeyError(f"no design round {round_id!r}: choose from {', '.join(BY_ID)}")
    design = BY_ID[round_id]
    answer = answer if isinstance(answer, str) else ""
    notes = []
    total = len(_words(answer))
    own = without_scenario(answer, design.scenario)
    if total and len(own.split()) < total / 2:
        notes.append("most of the answer repeats the scenario: answer in your own words")
    sentences = [s for s in re.split(r"(?<=[.!?;:])\s+|\n+", answer) if len(_words(s)) >= MIN_SENTENCE_WORDS]
    if len(sentences) < MIN_SENTENCES:
        notes.append(f"write it in sentences, as you would say it (at least {MIN_SENTENCES})")
    if total > MAX_WORDS:
        notes.append(f"{total} words: an interviewer stops listening; keep it under {MAX_WORDS}")
    text = own
    found = [p.id for p in design.points if met(p, text)]
    missing = [p.id for p in design.points if p.id not in found]
    passed = not notes and len(found) >= math.ceil(PASS_SHARE * len(design.points))
    return Checked(round_id, found, missing, passed, notes)


class DesignRound:
    """A design round in a notebook: the scenario, a box to type the answer in, and a button that checks it
    against the rubric (and keeps the result in the interview history); the model answer on request."""

    def __init__(self, round_id: str):
        import html

        import ipywidgets as W

        if round_id not in BY_ID:
            raise KeyError(f"no design round {round_id!r}: choose from {', '.join(BY_ID)}")
        self.design = BY_ID[round_id]
        self.answer = W.Textarea(placeholder="Your answer, in sentences, as you would say it (about 2–5 minutes).",
                                 layout=W.Layout(width="100%", height="180px"))
        self.result = W.HTML()
        check_button = W.Button(description="check my answer", icon="check", button_style="primary",
                                layout=W.Layout(width="auto"))
        check_button.on_click(lambda _: self.check())
        model_button = W.Button(description="show the model answer", layout=W.Layout(width="auto"))
        model_button.on_click(lambda _: self.show_model())
        self.box = W.VBox([W.HTML(f"<b>{html.escape(self.design.title)}</b><p>{html.escape(self.design.scenario)}</p>"),
                           self.answer, W.HBox([check_button, model_button]), self.result])

    def check(self, text: str | None = None) -> Checked:
        """Check the typed answer (or `text`), show which rubric points are met and missing, and record it."""
        import html

        from .mock import record_design

        if text is not None:
            self.answer.value = text
        found = check(self.design.id, self.answer.value)
        record_design(self.design.id, found.met, found.missing, found.passed)
        self.result.value = "<pre>" + html.escape(found.report()) + "</pre>"
        return found

    def show_model(self) -> None:
        """Show the model answer and the pitfalls."""
        import html

        pitfalls = "".join(f"<li>{html.escape(p)}</li>" for p in self.design.pitfalls)
        self.result.value += (f"<p><b>Model answer.</b> {html.escape(self.design.model)}</p>"
                              f"<p><b>Pitfalls</b></p><ul>{pitfalls}</ul>")

    def show(self):
        """Display the widget (a headless run shows the scenario as text)."""
        from IPython.display import display

        bundle = self.box._repr_mimebundle_()
        bundle["text/plain"] = f"{self.design.title}\n{self.design.scenario}"
        display(bundle, raw=True)
