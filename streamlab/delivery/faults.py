"""Fault injection: crash a streaming query at a chosen point of a batch's life cycle, restart it, count the damage.

A batch's life cycle: Spark writes `offsets/N` (the plan), the sink writes the output, Spark writes `commits/N`.
A crash anywhere before `commits/N` makes the restart re-run batch N with the same offsets. The points:

- "before write": the batch is planned, nothing of it is written yet;
- "mid write": part of the batch is written (a task fails on a chosen record, picked at random in the batch's
  range: Spark's `raise_error` in the query plan, so the records before it are already out);
- "after write": the whole batch is written, `commits/N` is not. For `foreachBatch` sinks our function raises
  right after the sink code returned. Spark's built-in sinks run no code of ours between their write and the
  commit, so there the batch is let finish and `commits/N` is removed: a restart reads only the checkpoint, and it
  then holds exactly what a process killed between the write and the commit leaves behind.

Each run of a `CrashTest` uses `trigger(availableNow=True)`: it processes what is in the topic and stops, so every
crash and every restart is one run, and nothing depends on timing. `CrashDemo` shows the same live, on the course's
`LiveDemo`: one running query writes each batch to every sink, crashes where the sliders say, and is restarted on
its checkpoint after each crash.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from streamlab.delivery.counting import count_delivery
from streamlab.observe import checkpoint as ck
from streamlab.demo.live import Knob, LiveDemo, Panel

POINTS = ("before write", "mid write", "after write")
MARK = "streamlab injected crash"


class InjectedCrash(RuntimeError):
    """The crash a fault injection raises on purpose (a real failure of the batch, not a bug)."""


def tally(delivered, sent) -> dict:
    """The course's one count of a destination (`counting.count_delivery`): {'written', 'duplicated', 'lost'}."""
    return count_delivery(delivered, sent)


def plan(crashes: int, rounds: int, seed: int = 0, points=POINTS) -> dict[int, list[str]]:
    """{round: [crash points]}: `crashes` crashes spread over `rounds` rounds at random points (seeded)."""
    rng = random.Random(seed)
    out: dict[int, list[str]] = {r: [] for r in range(rounds)}
    points = list(points)
    # every point at least once when there are enough crashes, the rest at random
    chosen = points[:crashes] + [rng.choice(points) for _ in range(crashes - len(points))]
    for point in chosen:
        out[rng.randrange(rounds)].append(point)
    # In life-cycle order within a round: after an "after write" the replayed batch may be skipped by the sink
    # (that is its exactly-once mechanism), and a crash planned inside it could not happen.
    order = {p: i for i, p in enumerate(POINTS)}
    return {r: sorted(ps, key=lambda p: order.get(p, 0)) for r, ps in out.items()}


def pending_range(checkpoint: str, topic: str, latest: dict) -> dict[int, tuple[int, int]]:
    """{partition: (start, end)} of the next batch the query runs: a planned, uncommitted batch's own range
    (a restart re-runs exactly that), else from the last committed end to the topic's `latest` offsets."""
    done = ck.committed_offsets(checkpoint) if Path(checkpoint, "offsets").is_dir() else None
    start = done.kafka().get(topic, {}) if done is not None else {}
    pending = ck.pending_batch(checkpoint) if Path(checkpoint, "offsets").is_dir() else None
    end = ck.offsets(checkpoint, pending).kafka().get(topic, latest) if pending is not None else latest
    return {p: (start.get(p, 0), e) for p, e in sorted(end.items()) if e > start.get(p, 0)}


def crash_targets(point: str, ranges: dict, rng: random.Random, last: bool = False) -> list[tuple[int, int]]:
    """The (partition, offset) records a task fails on: every partition's first record ("before write"), or one
    record at random after the first of a partition that has more than one ("mid write"; with `last`, of the
    last such partition, which a driver reading the batch partition by partition reaches last)."""
    if point == "before write":
        return [(p, start) for p, (start, _) in ranges.items()]
    if point == "mid write" and ranges:
        wide = [p for p, (s, e) in ranges.items() if e - s > 1] or list(ranges)
        partition = wide[-1] if last else rng.choice(wide)
        start, end = ranges[partition]
        return [(partition, rng.randrange(start + 1, end) if end - start > 1 else start)]
    return []


def with_crash(df, targets, reason: str = "mid-batch, at a chosen record"):
    """`df` whose task fails (Spark's raise_error) when it reaches one of the (partition, offset) `targets`."""
    from pyspark.sql import functions as F

    if not targets:
        return df
    hit = None
    for partition, offset in targets:
        cond = (F.col("partition") == partition) & (F.col("offset") == offset)
        hit = cond if hit is None else hit | cond
    return df.where(F.when(hit, F.raise_error(F.lit(f"{MARK}: {reason}"))).otherwise(True))


def crashing(write_batch, point: str | None):
    """A foreachBatch function: `write_batch`, with one InjectedCrash raised before or after it ran."""
    fired = []

    def batch(batch_df, batch_id):
        if point == "before write" and not fired:
            fired.append(batch_id)
            raise InjectedCrash(f"{MARK}: before the write of batch {batch_id}")
        write_batch(batch_df, batch_id)
        if point == "after write" and not fired:
            fired.append(batch_id)
            raise InjectedCrash(f"{MARK}: after the write of batch {batch_id}, before its commit")

    return batch


def drop_last_commit(checkpoint: str) -> int | None:
    """Remove `commits/N` of the last committed batch (and its .crc): the checkpoint of a crash between the
    write and the commit. Returns N (None when nothing was committed)."""
    last = ck.last_committed(checkpoint)
    if last is None:
        return None
    for name in (str(last), f".{last}.crc"):
        Path(checkpoint, "commits", name).unlink(missing_ok=True)
    return last


@dataclass
class Crash:
    """One injected crash: when, where, which batch it hit, and whether it happened."""

    round: int
    point: str
    batch: int | None
    happened: bool
    detail: str = ""


@dataclass
class SinkRun:
    """One sink under repeated crashes: its checkpoint, the crashes so far and the runs it took."""

    sink: object
    checkpoint: str
    crashes: list = field(default_factory=list)
    runs: int = 0


def _query_error(query, timeout: float) -> str | None:
    from pyspark.errors import StreamingQueryException

    try:
        if not query.awaitTermination(timeout):
            query.stop()
            raise TimeoutError(f"a run did not finish within {timeout:.0f} s")
    except StreamingQueryException as exc:
        return str(exc)
    return None


def run_once(spark, sink, run: SinkRun, source_topic: str, point: str | None, rng: random.Random,
             round_no: int = 0, bootstrap: str | None = None, timeout: float = 120.0) -> Crash | None:
    """One run of `sink` (availableNow) from its checkpoint, with a crash at `point` (None: a clean run).

    Returns the Crash (None for a clean run); an error that is not the injected crash is raised.
    """
    from streamlab.observe.lag import latest_offsets
    from streamlab.delivery.sinks import source_frame

    ranges = pending_range(run.checkpoint, source_topic, latest_offsets(source_topic, bootstrap)[source_topic])
    batch = ck.pending_batch(run.checkpoint) if Path(run.checkpoint, "offsets").is_dir() else None
    if batch is None:
        last = ck.last_committed(run.checkpoint) if Path(run.checkpoint, "commits").is_dir() else None
        batch = 0 if last is None else last + 1
    df = source_frame(spark, source_topic, bootstrap)
    targets = crash_targets(point, ranges, rng, last=not sink.builtin) if point in ("before write", "mid write") and (
        sink.builtin or point == "mid write") else []
    df = with_crash(df, targets)
    if sink.builtin:
        query = sink.start(df, run.checkpoint)
    else:
        query = (df.writeStream.foreachBatch(crashing(sink.write_batch, None if targets else point))
                 .option("checkpointLocation", run.checkpoint).trigger(availableNow=True).start())
    run.runs += 1
    error = _query_error(query, timeout)
    if error is not None and MARK not in error:
        raise RuntimeError(f"{sink.label}: the query failed for a reason other than the injected crash: "
                           f"{error.strip()[-1500:]}")
    if point is None:
        if error is not None:
            raise RuntimeError(f"{sink.label}: a clean run crashed")
        return None
    detail = ", ".join(f"partition {p} offset {o}" for p, o in targets)
    if point == "after write" and sink.builtin and error is None:
        dropped = drop_last_commit(run.checkpoint)
        crash = Crash(round_no, point, dropped, dropped is not None, "commits/N removed after the batch")
    else:
        crash = Crash(round_no, point, batch, error is not None, detail)
    run.crashes.append(crash)
    return crash


def quiet(spark):
    """A context in which queries failing on purpose are not logged by Spark (their errors are still raised)."""
    from streamlab.observe.replay import quiet_query_errors

    return quiet_query_errors(spark)


class CrashTest:
    """Several sinks fed from one source topic, round by round, each crashed at the planned points.

    Each round sends `chunk` new records (ids counting up from 0) to the source topic, then, for every sink,
    runs the planned crashes one after the other (each run crashes once, the next starts from the checkpoint) and
    a clean run that finishes the round. `tallies()` counts, from each destination, what arrived.
    """

    def __init__(self, spark, sinks: dict, source_topic: str, chunk: int = 40, partitions: int = 2,
                 bootstrap: str | None = None):
        from streamlab.lab.broker import ensure_broker
        from streamlab.lab.lifecycle import new_checkpoint

        self.spark, self.source_topic, self.chunk = spark, source_topic, chunk
        self.partitions = partitions
        self.bootstrap = bootstrap or ensure_broker()
        self.runs = {name: SinkRun(sink, new_checkpoint("crash")) for name, sink in sinks.items()}
        self.sent = 0
        self.rounds = 0

    def send_chunk(self) -> None:
        """Send the next `chunk` ids to the source topic, spread over its partitions."""
        from streamlab.lab.producer import produce

        produce(self.source_topic, self.chunk, start=self.sent, key_fn=str, value_fn=str,
                partitions=range(self.partitions), bootstrap=self.bootstrap)
        self.sent += self.chunk

    def step(self, name: str, point: str | None = None, seed: int = 0) -> Crash | None:
        """One run of sink `name` from its checkpoint, crashing at `point` (None: a clean run)."""
        run = self.runs[name]
        with quiet(self.spark):
            return run_once(self.spark, run.sink, run, self.source_topic, point, random.Random(seed), self.rounds,
                            self.bootstrap)

    def round(self, points: dict | None = None, seed: int | None = None) -> None:
        """One round: a new chunk, then for each sink (in parallel) its crashes {name: [points]} and a clean run."""
        import threading

        self.send_chunk()
        errors: list = []

        def sink_round(name: str, run: SinkRun, rng: random.Random) -> None:
            try:
                for point in (points or {}).get(name, []):
                    run_once(self.spark, run.sink, run, self.source_topic, point, rng, self.rounds, self.bootstrap)
                run_once(self.spark, run.sink, run, self.source_topic, None, rng, self.rounds, self.bootstrap)
            except BaseException as exc:
                errors.append(exc)

        from streamlab.lab.session import engine

        base = self.rounds if seed is None else seed
        jobs = [(name, run, random.Random(f"{base}:{name}")) for name, run in self.runs.items()]
        with quiet(self.spark):
            if engine(self.spark) == "offline":
                for job in jobs:  # its Python data source is found only from the session's own thread
                    sink_round(*job)
            else:
                threads = [threading.Thread(target=sink_round, args=job, daemon=True) for job in jobs]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
        self.rounds += 1
        if errors:
            raise errors[0]

    def run(self, crashes: int, rounds: int, seed: int = 0, points=POINTS, on_round=None) -> dict:
        """`rounds` rounds with `crashes` crashes per sink at random points (seeded); returns tallies()."""
        plans = {name: plan(crashes, rounds, seed + i, points) for i, name in enumerate(self.runs)}
        for r in range(rounds):
            self.round({name: plans[name][r] for name in self.runs}, seed * 1000 + r)
            if on_round is not None:
                on_round(self)
        return self.tallies()

    def close(self) -> None:
        """Close what the sinks hold open (the transactional producers); their destinations stay readable."""
        for run in self.runs.values():
            if hasattr(run.sink, "close"):
                run.sink.close()

    def tallies(self) -> dict:
        """{sink name: {'crashes', 'runs', 'written', 'duplicated', 'lost'}}, counted from each destination."""
        sent = range(self.sent)
        return {name: {"crashes": sum(c.happened for c in run.crashes), "runs": run.runs,
                       **tally(run.sink.delivered(), sent)} for name, run in self.runs.items()}

    def crash_log(self):
        """Every injected crash as a table: sink, round, point, batch, where."""
        import pandas as pd

        return pd.DataFrame([{"sink": name, "round": c.round, "point": c.point, "batch": c.batch,
                              "happened": c.happened, "where": c.detail}
                             for name, run in self.runs.items() for c in run.crashes])


def crash_one(spark, sink, source_topic: str, chunk: int, crashes: int, rounds: int = 3, seed: int = 0,
              points=POINTS) -> dict:
    """Crash-test one sink on a fresh run: its tally, plus 'error' (None, or why the sink itself failed)."""
    test = CrashTest(spark, {"sink": sink}, source_topic, chunk=chunk)
    try:
        test.run(crashes, rounds, seed=seed, points=points)
        error = None
    except Exception as exc:
        from streamlab.errors import first_line

        error = first_line(exc)
    try:
        counts = test.tallies()["sink"]
    except Exception as exc:
        counts = {"crashes": 0, "runs": 0, "written": 0, "duplicated": 0, "lost": 0}
        error = error or f"could not count: {exc}"
    test.close()
    return {**counts, "sent": test.sent, "error": error,
            "points": sorted({c.point for c in test.runs["sink"].crashes if c.happened})}


def causes(error: BaseException | str) -> list[str]:
    """The distinct 'Caused by' and 'Suppressed' exception lines of a JVM error, innermost last, without stack frames
    (a failed Spark job says what went wrong there, not in its first line)."""
    import re

    found = []
    for line in str(error).splitlines():
        # "Caused by: X", "Suppressed: X", and a failed task's "... executor driver): X"
        match = re.search(r"(?:^\s*Caused by: |^\s*Suppressed: |\): )((?:[a-z]\w*\.)+[A-Z]\w*(?:Exception|Error): .*)$",
                          line)
        if match:
            text = re.sub(r"^(?:[a-z]\w*\.)+(?=[A-Z])", "", match.group(1))  # the class name without its package
            if text not in found:
                found.append(text)
    if not found and isinstance(error, BaseException):
        from streamlab.errors import first_line

        found.append(first_line(error))  # not a JVM trace (the offline engine raises Python errors)
    return found


def elapsed(start: float) -> str:
    """Seconds since `start` (time.monotonic()), for a one-line report."""
    return f"{time.monotonic() - start:.1f} s"


# -- the live demo: the crash point and rate on sliders, a running tally of each sink side by side --------------

CHOICES = ("random", *POINTS)
SINK_COLORS = ("#8c8c8c", "#4c72b0", "#8172b3", "#55a868")
TALLY_EVERY_S = 2.0  # counting at four destinations costs about a second: not after every batch


class CrashingSinks:
    """A per-batch hook (a LiveDemo's `on_batch`): each micro-batch is written to every sink in turn, and every
    `every`-th batch (0: none) crashes once at `point` ("random": a random point each time), so Spark replays it.

    "before write" raises before any sink wrote; "mid write" makes a task of one sink's write (chosen at random,
    the sinks before it have written) fail on a record chosen at random; "after write" raises after every sink
    wrote, before Spark's commit. `tallies` holds, every few seconds, what each destination holds of the ids of the
    batches written through so far; `crashes` one entry per crash.
    """

    def __init__(self, sinks: dict, point: str = "random", every: int = 2, seed: int = 0, clock=time.monotonic):
        self.sinks, self.point, self.every, self.clock = dict(sinks), point, int(every), clock
        self.rng = random.Random(seed)
        self.ids: set = set()  # the ids of the batches every sink wrote
        self.crashes: list[dict] = []
        self.tallies: list[dict] = []
        self._crashed: set = set()
        self._counted = 0.0

    def set_point(self, point: str) -> None:
        """Crash at `point` from the next crash on ("random", or one of POINTS)."""
        self.point = point

    def set_every(self, every: int) -> None:
        """Crash every `every`-th batch from now on (0: no more crashes)."""
        self.every = int(every)

    def __call__(self, batch_df, batch_id: int) -> None:
        from pyspark.sql import functions as F

        df = batch_df.selectExpr("topic", "partition", "offset", "cast(cast(value AS string) AS long) AS id")
        point = None
        # An empty batch (the query's first, before the producer's records arrive) has nothing to crash: the next
        # batch due with records crashes instead (an empty one failed with IndexError, which stopped the demo).
        if self.every and batch_id % self.every == 0 and batch_id not in self._crashed and not df.isEmpty():
            self._crashed.add(batch_id)
            point = self.point if self.point in POINTS else self.rng.choice(POINTS)
        victim = self.rng.randrange(len(self.sinks)) if point == "mid write" else None
        if point == "before write":
            self._crash(batch_id, point, "")
            raise InjectedCrash(f"{MARK}: before write, batch {batch_id}")
        for i, (name, sink) in enumerate(self.sinks.items()):
            if i == victim:
                ranges = {r["partition"]: (r["start"], r["end"]) for r in df.groupBy("partition").agg(
                    F.min("offset").alias("start"), (F.max("offset") + 1).alias("end")).collect()}
                targets = crash_targets("mid write", ranges, self.rng)
                self._crash(batch_id, point, name, targets)
                sink.write_batch(with_crash(df, targets, f"mid write, batch {batch_id}, {name}"), batch_id)
                raise InjectedCrash(f"{MARK}: mid write, batch {batch_id}, {name}")  # the record was not reached
            sink.write_batch(df, batch_id)
        if point == "after write":
            self._crash(batch_id, point, "")
            raise InjectedCrash(f"{MARK}: after write, batch {batch_id}")
        self.ids.update(r["id"] for r in df.select("id").collect())
        if self.clock() - self._counted >= TALLY_EVERY_S:
            self.count()

    def _crash(self, batch_id: int, point: str, sink: str, targets=()) -> None:
        self.crashes.append({"t": round(self.clock(), 2), "batch": batch_id, "point": point, "sink": sink or "all",
                             "where": ", ".join(f"partition {p} offset {o}" for p, o in targets)})

    def count(self, sent=None) -> dict:
        """{sink: {'written', 'duplicated', 'lost'}} of `sent` (default: the ids written through so far), counted at
        each destination; also kept in `tallies`."""
        self._counted = self.clock()
        counts = {name: tally(sink.delivered(), self.ids if sent is None else sent)
                  for name, sink in self.sinks.items()}
        self.tallies.append({"t": round(self._counted, 2), "counts": counts})
        return counts

    def status(self, demo=None) -> str:
        """The last tally in a few words (for the demo's readout)."""
        crashes = f"{len(self.crashes)} crashes"
        if not self.tallies:
            return crashes
        last = self.tallies[-1]["counts"]
        return crashes + " · " + " · ".join(f"{name}: {c['written']} once, {c['duplicated']} dup, {c['lost']} lost"
                                            for name, c in last.items())

    def panel(self, kind: str):
        """A LiveDemo panel: each sink's `kind` ("duplicated" or "lost") over time, one line per sink."""
        def draw(ax, demo, shift):
            for i, name in enumerate(self.sinks):
                xs = [e["t"] + shift for e in self.tallies]
                ys = [e["counts"][name][kind] for e in self.tallies]
                ax.step(xs, ys, where="post", color=SINK_COLORS[i % len(SINK_COLORS)], marker="o", markersize=3,
                        linewidth=2.2 - 0.4 * i, label=name)
            top = max([e["counts"][name][kind] for e in self.tallies for name in self.sinks], default=0)
            ax.set_ylim(0, max(top, 1) * 1.15)  # whole records: a flat zero line reads as 0, not 0.00

        heads = {"duplicated": "extra copies at each destination (duplicated)",
                 "lost": "records lost at each destination"}
        return Panel(heads[kind], kind, draw)


class CrashDemo(LiveDemo):
    """The crash lab on the course's live demo: a producer feeds ids to `topic`, one query writes every micro-batch
    to the `sinks` side by side (a `CrashingSinks` hook), sliders choose the crash point and how often a batch
    crashes, each crash restarts the query on the same checkpoint (a red marker), and panels show each sink's
    duplicates and losses as they happen. At the end the producer stops and the query reads what is left; wait()
    then counts once more, against the source topic read with kafka-python (`tallies()`).
    """

    def __init__(self, spark, sinks: dict, topic: str, rate: int = 40, every: int = 2, point: str = "random",
                 duration: float = 15.0, seed: int = 0, title: str = "four sinks, one query, injected crashes"):
        self.sinks = dict(sinks)
        self.hook = CrashingSinks(self.sinks, point, every, seed)
        knobs = [Knob("crash_point", "crash point", point, options=CHOICES, apply=self.hook.set_point),
                 Knob("crash_every", "crash every N batches (0 = never)", every, 0, 5, apply=self.hook.set_every)]
        super().__init__(spark, topic, rate=rate, trigger_seconds=1.0, duration=duration, starting_offsets="earliest",
                         controls=("rate",), value_fn=str, key_fn=str, label="ids", knobs=knobs, on_batch=self.hook,
                         charts=("rows",), restart_on=(MARK,), drain=True, status=self.hook.status, title=title,
                         panels={"duplicated": self.hook.panel("duplicated"), "lost": self.hook.panel("lost")})
        self.hook.clock = self.now

    def _drain(self, timeout: float = 60.0) -> None:
        self.hook.every = 0  # no more crashes once the demo is over: the query reads what is left, then stops
        super()._drain(timeout)

    def wait(self):
        """As LiveDemo.wait() (one row per batch), after a last count at every destination against the source."""
        batches = super().wait()
        self.hook.count(self.sent())
        self._freeze()  # the static chart with the last count
        return batches

    def sent(self) -> list[int]:
        """The ids in the source topic, read with kafka-python (not with Spark)."""
        from streamlab.delivery.sinks import read_topic

        return [int(value) for _, _, value in read_topic(self.topic)]

    def tallies(self):
        """Crashes, and written / duplicated / lost per sink at the last count: a DataFrame, one row per sink."""
        import pandas as pd

        counts = self.hook.tallies[-1]["counts"] if self.hook.tallies else self.hook.count(self.sent())
        return pd.DataFrame({name: {"crashes": len(self.hook.crashes), **c} for name, c in counts.items()}).T

    def crash_log(self):
        """Every injected crash: seconds since the start, batch, point, the sink being written (mid write), where."""
        import pandas as pd

        return pd.DataFrame(self.hook.crashes, columns=["t", "batch", "point", "sink", "where"])
