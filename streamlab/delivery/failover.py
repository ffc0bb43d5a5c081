"""Failures on the lab's cluster, live: an executor killed mid-batch, a partition leader killed under a running
query and producer, and acknowledged records that `acks=1` loses.

`FailoverDemo` runs one query on a topic with 3 replicas while an idempotent producer (`acks=all`) writes
numbered records. Each batch, `foreachBatch` records which executor read which partition (Spark's task events,
`streamlab.observe.executors.read_map`) and writes the batch to two of module 7's exactly-once sinks (the SQLite
upsert and the Kafka transactions). Its buttons kill an executor in the middle of a batch or the broker leading
partition 0; `wait()` counts, from the destinations themselves, every acknowledged record's copies.

`acks_experiment` shows what `acks` means when the leader dies: the followers are paused (SIGSTOP) so they
fetch nothing, records are produced, the leader is killed and the followers resumed. A follower becomes leader
without the records only the old leader had: those that `acks=1` acknowledged are gone; `acks=all` never
acknowledged them. `leader_kill_under` runs the same kill under a learner's own producer settings (module 9's
Exercise 5) and counts, with the course's one rule, whether every record was acknowledged and none lost or doubled.

`unclean_experiment` goes further: a partition's only in-sync replica dies and an out-of-sync one is elected, so
records that were acknowledged and already read vanish. Two queries show what `failOnDataLoss` does with that: `true`
fails when the offsets go backwards, `false` reads on over offsets it had read with other records.
"""
from __future__ import annotations

import functools
import os
import signal
import threading
import time

from streamlab.delivery.counting import count_delivery
from streamlab.demo.controls import answer_while_busy
from streamlab.demo.loop import play_due, running_demos
from streamlab.demo.state import DemoState, alias
from streamlab.demo.widgets import freeze, png, show_box
from streamlab.lab import cluster
from streamlab.lab.producer import close_now
from streamlab.lab.wait import wait_until
from streamlab.errors import LabError, first_line
from streamlab.observe.progress import stop_between_batches
from streamlab.settings import Settings, settings

FIRST_BATCH_S = 180  # a cold cluster's first batch (executors start, jars travel) is slow under load, not stuck
SCRIPT_GRACE_S = 120  # killed brokers' restarts (START_TIMEOUT_S each) may hold a script past the demo's end; +15 s a step
# After the producer stops: at most this long without a batch before the counts are taken. Longer than the
# connector's own bound on a stuck fetch (kafkaConsumer.pollTimeoutMs, spark.network.timeout: 120 s), after
# which the task fails and runs again: a read held up by a killed leader is Spark's to end, not ours.
DRAIN_S = 150


def on_cluster() -> bool:
    """Whether this kernel's lab runs on the cluster (the demos need it)."""
    return cluster.wanted() and cluster.folder().exists()


def _need_cluster() -> None:
    if not on_cluster():
        raise LabError("This demo needs the lab's cluster: run the setup cell with streamlab.setup(cluster=True).")


def capped(seconds: float, steps: list) -> float:
    """The demo's `seconds` where nobody watches: under the grader, its script (steps at these times) and 12 s more,
    25 s at least; under $STREAMLAB_DEMO_SECONDS (make site, make seen), the script then that long (live.py's
    duration_cap, which refuses a bad value in one line)."""
    from streamlab.demo.live import GRADING_SECONDS, duration_cap

    if settings.grading:
        seconds = min(seconds, max([25.0, *(t + GRADING_SECONDS for t in steps)]))
    if Settings.demo_seconds.is_set():
        seconds = min(seconds, max([0.0, *steps]) + duration_cap())
    return seconds


class FailoverDemo:
    """One query, one producer, buttons that kill an executor or a partition leader; counts of every copy.

    What it has in common with the live demo is kept where the live demo keeps it, a `DemoState` (`demo.state`):
    the clock (`t0`, `wall0`; `live_from`, the first batch's time), the batches (`history`, read as `batches`), the
    lines of what happened (`events`), the query, the lock, the stop (`done`), how it ended (`ended`, `error`), and
    the script (`pending_script`, `applied`), played by the live demo's player (`loop.play_due`). Its box is shown
    and frozen by the live demo's helpers (`widgets.show_box`, `widgets.freeze`).

    Its own, because they differ: its kills, sinks and table; its producer thread, which keeps the id of every
    record the broker acknowledged (the counts of copies need them; a BackgroundProducer counts, it keeps no ids);
    and the thread its script plays in, because a kill step may wait for a broker to come back, where a live demo's
    knob moves are played by its loop at each look. Its `events` are text lines, the live demo's Spark's progress
    events (a kill line is what a live demo calls a mark)."""

    batches = alias("history")  # one dict per batch: which executor read which partition, how long it took
    events = alias("events")  # "  5.1 s  kill -9 broker 2, leader of partition 0": what happened, when
    query = alias("query")

    def __init__(self, spark, bootstrap: str, partitions: int = 4, rate: int = 100, seconds: float = 60,
                 options: dict | None = None, script: list | None = None, restart_after: float = 12.0,
                 sinks: bool = True, show: bool = True):
        self.spark, self.bootstrap, self.partitions, self.rate = spark, bootstrap, partitions, rate
        self.seconds, self.options, self.script = seconds, dict(options or {}), list(script or [])
        self.restart_after, self.with_sinks, self.show = restart_after, sinks, show
        self.seconds = capped(self.seconds, [t for t, _ in self.script])
        self.state = DemoState()
        self.state.pending_script = sorted(self.script)  # played by _play, in time order
        self.acked: set[int] = set()
        self.sent = 0
        self.failed_sends = 0
        self.killed_nodes: list[int] = []
        self.kills: dict[int, str] = {}  # batch id -> what was killed under it (the live table keeps those rows)
        self._leader_kill = ""  # a leader killed: the next batch to end is the one that met the election
        self._armed_work = 0.0
        self._player: threading.Thread | None = None
        self._box = None
        self._handle = None  # the displayed box's handle: wait() freezes the last view into it (a PNG beside it)
        self._html = None
        self._buttons: tuple = ()
        self.result: dict | None = None

    # --- running ------------------------------------------------------------------------------------------------
    def start(self) -> "FailoverDemo":
        """Make the topic and sinks, start the producer and the query, and show the live table with its buttons."""
        import streamlab
        from streamlab.delivery.sinks import SqliteSink, TransactionalKafkaSink

        _need_cluster()
        self.topic = streamlab.new_topic("failover", partitions=self.partitions)
        work = streamlab.new_checkpoint("failover")
        self.checkpoint = os.path.join(work, "checkpoint")
        if self.with_sinks:
            self.sqlite = SqliteSink(os.path.join(work, "events.db"))
            self.out_topic = streamlab.new_topic("failover-out", partitions=1)
            self.tx = TransactionalKafkaSink(self.out_topic, f"{self.topic}-tx", self.bootstrap)
        self.state.t0, self.state.wall0 = time.monotonic(), time.time()
        self._producer = threading.Thread(target=self._produce, name="streamlab-failover-producer", daemon=True)
        self._producer.start()
        reader = (self.spark.readStream.format("kafka").option("kafka.bootstrap.servers", self.bootstrap)
                  .option("subscribe", self.topic).option("startingOffsets", "earliest"))
        for key, value in self.options.items():
            reader = reader.option(key, value)
        frame = reader.load().selectExpr("topic", "partition", "offset", "cast(cast(value AS string) AS long) AS id")
        self.query = (frame.writeStream.foreachBatch(self._batch).option("checkpointLocation", self.checkpoint)
                      .trigger(processingTime="2 seconds").start())
        running_demos.add(self)  # the kernel's exit stops it (teardown's "live demos")
        if self.show:
            self._widget()
        if self.script:
            self._player = threading.Thread(target=self._play, name="streamlab-failover-script", daemon=True)
            self._player.start()
        return self

    def _produce(self) -> None:
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", enable_idempotence=True,
                                 linger_ms=5, request_timeout_ms=10_000)
        lock = threading.Lock()

        def done(i):
            def ok(_meta):
                with lock:
                    self.acked.add(i)
            return ok

        def failed(_exc):
            self.failed_sends += 1

        try:
            i = 0
            while not self.state.done.is_set():
                tick = time.monotonic()
                for _ in range(max(1, self.rate // 10)):
                    producer.send(self.topic, str(i).encode(), partition=i % self.partitions
                                  ).add_callback(done(i)).add_errback(failed)
                    i += 1
                self.sent = i
                time.sleep(max(0.0, 0.1 - (time.monotonic() - tick)))
            producer.flush(timeout=60)
        finally:
            close_now(producer, timeout=10)

    def _batch(self, batch_df, batch_id: int) -> None:
        from streamlab.observe.executors import preferred_executor, read_map

        began = time.monotonic()
        work, self._armed_work = self._armed_work, 0.0
        if work:
            threading.Thread(target=self._kill_executor_soon, args=(batch_id,), daemon=True).start()
        # Cached: the read-map job reads Kafka once (it is the batch's read), the sinks' jobs read the cache.
        batch_df.persist()
        try:
            tasks = read_map(self.spark, batch_df, work_s=work)
            rows = batch_df.select("topic", "partition", "offset", "id")
            if self.with_sinks:
                self.sqlite.write_batch(rows, batch_id)
                self.tx.write_batch(rows, batch_id)
        finally:
            batch_df.unpersist()
        preferred = {}
        for p in range(self.partitions):
            try:
                preferred[p] = preferred_executor(self.spark, self.topic, p)
            except Exception:
                preferred[p] = None
        if self.state.live_from is None:
            self.state.live_from = self.now()
        if self._leader_kill:
            self.kills[batch_id], self._leader_kill = self._leader_kill, ""
        self.batches.append({"batch": batch_id, "seconds": round(time.monotonic() - began, 2), "tasks": tasks,
                             "preferred": preferred, "at": round(self.now(), 1)})
        self._render()

    def now(self) -> float:
        """Seconds since the demo started (0 before start)."""
        return self.state.now()

    def _since_first_batch(self) -> float:
        """Seconds since the first batch finished (0 before it): a cold cluster's first batch can take long."""
        return self.now() - self.state.live_from if self.state.live_from is not None else 0.0

    def _play(self) -> None:
        """The script's thread: each kill at its time after the first batch, by the live demo's player; a kill waits
        until a broker killed before is back (two down would leave the controllers without a majority) and the
        executor kill armed before has met its batch. Ends when the script does or the demo is stopped."""
        def ready() -> bool:
            return not (self.killed_nodes or self._armed_work)

        while self.state.pending_script:
            play_due(self.state, self._since_first_batch(), self.now(), self._kill, ready)
            if self.state.pending_script and self.state.done.wait(0.2):
                return

    def _kill(self, step, _now: float) -> None:
        """Play one script step (at, "executor" | "leader"); a kill that cannot be done is a line of events."""
        action = step[1]
        try:
            (self.kill_executor if action == "executor" else self.kill_leader)()
        except Exception as exc:
            self._event(f"{action}: {first_line(exc)}")

    # --- the failures -------------------------------------------------------------------------------------------
    def kill_executor(self, *_args) -> None:
        """Kill an executor in the middle of the next batch: its read tasks get 3 s of work, and the executor running
        one of them is killed as soon as the scheduler reports it running."""
        self._armed_work = 3.0
        self._event("armed: the next batch's read tasks take 3 s; the executor running one is killed")

    def _kill_executor_soon(self, batch_id: int) -> None:
        sc = self.spark.sparkContext
        store = self.spark._jsparkSession.sparkContext().statusStore()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for stage in sc.statusTracker().getActiveStageIds():
                try:
                    tasks = store.taskList(stage, 0, 1000)
                    running = [tasks.apply(i).executorId() for i in range(tasks.size())
                               if tasks.apply(i).status() == "RUNNING"]
                except Exception:
                    running = []
                if running:
                    try:
                        pid = cluster.kill_executor(executor_id=running[0])
                        self.kills[batch_id] = f"executor {running[0]} killed"
                        self._event(f"batch {batch_id}: kill -9 executor {running[0]} (pid {pid}) while it runs "
                                    "a read task")
                    except LabError as exc:
                        self._event(first_line(exc))
                    return
            time.sleep(0.1)
        self._event(f"batch {batch_id}: no task was seen running within 60 s; nothing killed")

    def kill_leader(self, *_args, partition: int = 0) -> None:
        """kill -9 the broker leading `partition`; start it again `restart_after` seconds later."""
        if self.killed_nodes:
            self._event(f"broker {self.killed_nodes[0]} is still down: wait until it is back (with two brokers down "
                        "the controllers would have no majority, and no partition a new leader)")
            return
        node = cluster.leader_of(self.topic, partition)
        cluster.kill_node(node)
        self.killed_nodes.append(node)
        self._leader_kill = f"broker {node} (leader of p{partition}) killed"
        killed = time.monotonic()
        self._event(f"kill -9 broker {node}, leader of partition {partition}")

        def watch():
            new = None
            while time.monotonic() - killed < 30 and not self.state.done.is_set():
                try:
                    new = cluster.leader_of(self.topic, partition)
                except Exception:
                    new = None
                if new not in (None, -1, node):
                    self._event(f"partition {partition}: broker {new} elected leader "
                                f"{time.monotonic() - killed:.1f} s after the kill")
                    break
                time.sleep(0.3)
            wait = self.restart_after - (time.monotonic() - killed)
            if wait > 0:
                self.state.done.wait(wait)
            self.restart_nodes()

        threading.Thread(target=watch, name="streamlab-failover-leader", daemon=True).start()

    def restart_nodes(self) -> None:
        """Start every broker this demo killed again (with its data)."""
        with self.state.lock:
            for node in list(self.killed_nodes):
                try:
                    cluster.start_node(node)
                    self.killed_nodes.remove(node)
                    self._event(f"broker {node} started again; it rejoins the ISR")
                except LabError as exc:
                    self._event(first_line(exc))

    def _event(self, line: str) -> None:
        self.events.append(f"{self.now():5.1f} s  {line}")
        self._render()

    # --- the end ------------------------------------------------------------------------------------------------
    def wait(self) -> dict:
        """Run until `seconds` after the first batch, stop producing, let the query read everything acknowledged, stop it,
        restart what was killed, and count each acknowledged record's copies in each sink. Bounded: a first batch
        that never comes, or a script that cannot play on, ends the demo with `error` saying so."""
        error, grace = None, SCRIPT_GRACE_S + 15 * len(self.script)
        while self.query.isActive:
            if self.state.live_from is None and self.now() > FIRST_BATCH_S:
                error = (f"no batch finished within {FIRST_BATCH_S} s of the start: is the cluster short of "
                         "executors? (cluster.status() shows them)")
                break
            played = not (self._player and self._player.is_alive())
            if self.state.live_from is not None and self._since_first_batch() >= self.seconds and played:
                break
            if self.state.live_from is not None and self._since_first_batch() >= self.seconds + grace:
                error = (f"the script could not play to its end within {grace:.0f} s of the demo's end (a "
                         "broker that did not come back?): " + (self.events[-1] if self.events else "no event"))
                break
            time.sleep(0.5)
        self.state.done.set()
        for button in self._buttons:
            button.disabled = True
        self._producer.join(timeout=90)
        self.restart_nodes()
        # Drain: wait while batches keep coming (a loaded machine is slow, not stuck), at most DRAIN_S without one.
        seen, last_batch = len(self.batches), time.monotonic()
        while self.with_sinks and self.query.isActive and time.monotonic() - last_batch < DRAIN_S:
            if self.acked <= set(self.sqlite.delivered()):
                break
            if len(self.batches) != seen:
                seen, last_batch = len(self.batches), time.monotonic()
            time.sleep(1)
        else:
            if self.with_sinks and self.query.isActive and error is None:
                error = (f"the query had not read every acknowledged record {DRAIN_S} s after its last batch, so "
                         "'lost' below counts records not read yet: run the demo again")
        # Not in the middle of a batch: one that wrote the SQLite sink and not yet the transactions would be cut short,
        # and its records counted lost by the transactional sink; and a stop() that interrupts a batch stuck on a
        # lost executor or leader raises after spark.sql.streaming.stopTimeout ("failed to stop within 15000 ms").
        try:
            stop_between_batches(self.query, timeout=DRAIN_S)
        except Exception as exc:  # the demo still reports what it counted
            error = error or first_line(exc)
        if self.query.exception() is not None:
            error = first_line(self.query.exception())
        self.state.error, self.state.ended = error, True
        self.result = {"acked": len(self.acked), "batches": len(self.batches), "error": error,
                       "retried tasks": sum(1 for b in self.batches for t in b["tasks"] if t["attempt"] > 0)}
        if self.with_sinks:
            for name, ids in (("sqlite", self.sqlite.delivered()), ("transactions", self.tx.delivered())):
                self.result[name] = count(self.acked, ids)
        running_demos.discard(self)
        self._render()
        self._freeze()
        return self.result

    def stop(self) -> None:
        """End the demo now (the kernel's exit does, when wait() has not): stop producing and the query, and start
        again the brokers it killed (the next experiment needs all three). Safe to call twice."""
        self.state.done.set()
        for button in self._buttons:
            button.disabled = True
        query = self.query
        if query is not None and query.isActive:
            try:
                query.stop()
            except Exception:  # noqa: BLE001 - a session already gone has no query to stop
                pass
        self.restart_nodes()
        running_demos.discard(self)

    # --- the view -----------------------------------------------------------------------------------------------
    def _widget(self) -> None:
        import ipywidgets as widgets

        kill_exec = widgets.Button(description="kill an executor mid-batch", button_style="danger",
                                   layout=widgets.Layout(width="230px"))
        kill_leader = widgets.Button(description="kill partition 0's leader", button_style="warning",
                                     layout=widgets.Layout(width="230px"))
        kill_exec.on_click(lambda _b: self._safely(self.kill_executor))
        kill_leader.on_click(lambda _b: self._safely(self.kill_leader))
        self._buttons = (kill_exec, kill_leader)
        # Under Run All the kernel is busy in wait(): a subshell hears the buttons (or they would act after it).
        answer_while_busy(self._buttons)
        self._html = widgets.HTML(value=self.html())
        self._box = widgets.VBox([widgets.HBox([kill_exec, kill_leader]), self._html])
        self._handle = show_box(self._box)

    def _freeze(self) -> None:
        """Keep the last view as a PNG beside the live box: what a saved notebook, the site or `make seen` shows."""
        if self._handle is None or self._box is None:
            return
        freeze(self._handle, self._box, png(self.figure()))

    def _safely(self, action) -> None:
        if self.state.done.is_set():
            self._event("the demo has ended: its buttons act while it runs (run its cell again for another)")
            return
        try:
            action()
        except Exception as exc:
            self._event(first_line(exc))

    def _render(self) -> None:
        if self._html is not None:
            self._html.value = self.html()

    def html(self) -> str:
        """The live view: the last batches (which executor read each partition, attempts, duration) and events."""
        head = "".join(f"<th>p{p}</th>" for p in range(self.partitions))
        rows = []
        for b in shown_batches(self.batches, self.kills):
            if b is None:
                rows.append(f"<tr><td colspan={self.partitions + 3} style='color:#999'>⋯</td></tr>")
                continue
            cells = []
            for mine, warm in partition_reads(b, self.partitions):
                if not mine:
                    cells.append("<td style='color:#999'>—</td>")
                    continue
                text = " → ".join(f"exec {t['executor']}" + (f" (attempt {t['attempt']}, {t['status'].lower()})"
                                                            if t["attempt"] or t["status"] != "SUCCESS" else "")
                                  for t in mine)
                cells.append(f"<td style='background:{WARM if warm else COLD}'>{text}<br><small>{mine[-1]['records']} "
                             f"rec, {mine[-1]['locality'].lower()}</small></td>")
            kill = self.kills.get(b["batch"])
            mark = f"<br><b style='color:#c44e52'>⚡ {kill}</b>" if kill else ""
            rows.append(f"<tr><td>{b['batch']}{mark}</td><td>{b['at']} s</td><td><b>{b['seconds']} s</b></td>"
                        + "".join(cells) + "</tr>")
        table = (f"<table style='border-collapse:collapse' border=1 cellpadding=4><tr><th>batch</th><th>at</th>"
                 f"<th>took</th>{head}</tr>{''.join(rows)}</table>")
        summary = f"<p>produced {self.sent:,}, acknowledged {len(self.acked):,}"
        if self.result and self.with_sinks:
            for name in ("sqlite", "transactions"):
                r = self.result[name]
                summary += f" · <b>{name}</b>: {r['once']:,} once, {r['duplicates']} duplicates, {r['lost']} lost"
        summary += "</p>"
        legend = ("<small>green: read by the partition's preferred executor (its cached consumer is reused); "
                  "orange: read elsewhere</small>")
        events = "<br>".join(self.events[-6:])
        return f"{summary}{table}{legend}<p style='font-family:monospace'>{events}</p>"

    def figure(self):
        """The live table drawn with matplotlib: the same rows, colours and counts as html(), for a frozen frame."""
        import matplotlib.pyplot as plt

        head = ["batch", "at", "took", *(f"p{p}" for p in range(self.partitions))]
        text, colours = [], []
        for b in shown_batches(self.batches, self.kills):
            if b is None:
                text.append(["⋯"] + [""] * (len(head) - 1))
                colours.append(["white"] * len(head))
                continue
            row, tint = [f"{b['batch']}" + (f"\n⚡ {self.kills[b['batch']]}" if b["batch"] in self.kills else ""),
                         f"{b['at']} s", f"{b['seconds']} s"], ["#fde2e2" if b["batch"] in self.kills else "white",
                                                                 "white", "white"]
            for mine, warm in partition_reads(b, self.partitions):
                if not mine:
                    row.append("—")
                    tint.append("white")
                    continue
                row.append(" → ".join(f"exec {t['executor']}" + (" ✗" if t["status"] != "SUCCESS" else "")
                                      for t in mine) + f"\n{mine[-1]['records']} rec"
                           + (f", try {mine[-1]['attempt'] + 1}" if mine[-1]["attempt"] else ""))
                tint.append(WARM if warm else COLD)
            text.append(row)
            colours.append(tint)
        height = 0.36 * (len(text) + 1) + 0.8
        fig, ax = plt.subplots(figsize=(9.5, height))
        fig.subplots_adjust(left=0.01, right=0.99, top=1 - 0.45 / height, bottom=0.35 / height)
        ax.axis("off")
        if text:
            table = ax.table(cellText=text, cellColours=colours, colLabels=head, cellLoc="center", bbox=[0, 0, 1, 1],
                             colWidths=[0.24, 0.07, 0.07] + [0.62 / self.partitions] * self.partitions)
            table.auto_set_font_size(False)
            table.set_fontsize(8)
        summary = f"produced {self.sent:,}, acknowledged {len(self.acked):,}"
        if self.result and self.with_sinks:
            summary += "".join(f"   {name}: {self.result[name]['once']:,} once, {self.result[name]['duplicates']} "
                               f"duplicates, {self.result[name]['lost']} lost" for name in ("sqlite", "transactions"))
        ax.set_title(summary, fontsize=9, loc="left")
        ax.text(0, -0.02, "green: read by the partition's preferred executor · orange: read elsewhere · ✗: the task "
                "failed · ⚡: killed under this batch", fontsize=7.5, color="#555", transform=ax.transAxes, va="top")
        plt.close(fig)
        return fig


WARM, COLD = "#e8f5e9", "#fff3e0"  # a partition read by its preferred executor, or elsewhere


def partition_reads(batch: dict, partitions: int) -> list[tuple[list, bool]]:
    """Per partition of a batch: its read tasks (every attempt, in order; [] when it read none) and whether the
    partition's preferred executor read it (every successful attempt on it), for the live table and its frame."""
    reads = []
    for p in range(partitions):
        mine = [t for t in batch["tasks"] if t["partition"] == p]
        home = batch["preferred"].get(p)
        reads.append((mine, home is not None and all(t["executor"] == home for t in mine if t["status"] == "SUCCESS")))
    return reads


def shown_batches(batches: list[dict], kills: dict, last: int = 8) -> list:
    """The live table's rows: the last `last` batches, and before them every batch something was killed under or
    that retried a task (so the kill's batch never scrolls away); None marks batches left out between them."""
    keep = {i for i, b in enumerate(batches) if b["batch"] in kills
            or any(t.get("attempt") or t.get("status", "SUCCESS") != "SUCCESS" for t in b["tasks"])}
    keep |= set(range(max(len(batches) - last, 0), len(batches)))
    rows: list = []
    for i in sorted(keep):
        if rows and i - 1 not in keep:
            rows.append(None)
        elif not rows and i > 0:
            rows.append(None)
        rows.append(batches[i])
    return rows


def count(acked: set[int], delivered: list[int]) -> dict:
    """The course's one count (`counting.count_delivery`, owed = the acknowledged ids), under the demo table's
    names: {'once': acknowledged ids held, 'duplicates': their extra copies, 'lost': those never held}."""
    counted = count_delivery(delivered, acked)
    return {"once": counted["written"], "duplicates": counted["duplicated"], "lost": counted["lost"]}


FETCH_SETTLE_S = 2.0  # four times a follower's longest fetch wait (500 ms by default), for a loaded machine


def acks_experiment(acks: str, records: int = 50, bootstrap: str | None = None) -> dict:
    """Produce `records` with `acks` while the leader's followers are paused, kill the leader, resume them;
    return how many were acknowledged and how many of those the new leader does not have."""
    import streamlab
    from kafka import KafkaProducer

    _need_cluster()
    bootstrap = bootstrap or cluster.bootstrap()
    topic = streamlab.new_topic(f"acks{acks}", partitions=1)
    leader = cluster.leader_of(topic)
    followers = [n for n in range(1, cluster.NODES + 1) if n != leader]
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1 if acks == "1" else "all", retries=0,
                             enable_idempotence=False, request_timeout_ms=2500, linger_ms=0)
    try:
        for i in range(records):  # a first run while everyone is up: acknowledged by every acks setting
            producer.send(topic, f"before-{i}".encode(), partition=0)
        producer.flush(timeout=30)
        paused = [cluster.node_pid(n) for n in followers]
        for pid in paused:
            os.killpg(pid, signal.SIGSTOP)
        # A follower's fetch can already wait at the leader (a long poll of up to replica.fetch.wait.max.ms, 500 ms):
        # answered with the first records produced, its response sits in the paused follower's socket and is applied
        # when it resumes, carrying records over (a loaded run kept all 50). Let those fetches end empty first.
        time.sleep(FETCH_SETTLE_S)
        try:
            futures = [producer.send(topic, str(i).encode(), partition=0) for i in range(records)]
            acked = 0
            for future in futures:
                try:
                    future.get(timeout=6)
                    acked += 1
                except Exception:
                    pass
            cluster.kill_node(leader)
        finally:
            for pid in paused:
                os.killpg(pid, signal.SIGCONT)
    finally:
        close_now(producer, timeout=2)
    began, new = time.monotonic(), None
    while time.monotonic() - began < 40:
        try:
            new = cluster.leader_of(topic)
        except Exception:
            new = None
        if new in followers:
            break
        time.sleep(0.3)
    election = round(time.monotonic() - began, 1)
    from streamlab.lab.topics import records as read_records

    alive = cluster.live_bootstrap()  # a client handed the killed broker may ask it for metadata and fail on it
    try:
        kept = {r.value for r in read_records(topic, alive, False, 20)}
    finally:
        cluster.start_node(leader)  # also when the read fails: the next experiment needs all three
    present = sum(1 for i in range(records) if str(i).encode() in kept)
    return {"acks": acks, "produced while followers paused": records, "acknowledged": acked,
            "on the new leader": present, "acknowledged but lost": max(0, acked - present),
            "old leader": leader, "new leader": new, "election s": election}


# `_until(condition, timeout)`: whether it held in time. A metadata read sent to a broker just killed raises: that
# counts as not yet, asked again 0.3 s later.
_until = functools.partial(wait_until, every=0.3, retry_on=(Exception,))


# The driver's offset fetch that meets the dead leader waits out the admin client's default.api.timeout.ms (60 s
# by default: measured here, a minute's stall after the election) before Spark asks again; 10 s keeps the lesson short.
UNCLEAN_TIMEOUTS = {"kafka.default.api.timeout.ms": "10000", "kafka.request.timeout.ms": "5000"}


# The producer settings a learner may choose for the leader kill (kafka-python's names, as the lab's producers use).
PRODUCER_SETTINGS = ("acks", "enable_idempotence", "retries", "delivery_timeout_ms", "request_timeout_ms",
                     "retry_backoff_ms", "max_in_flight_requests_per_connection")
SETTLE_CAP_S = 90.0  # the longest the leader kill waits for the producer to settle its records


def producer_settings(settings) -> dict:
    """A learner's producer settings, checked: a dict of PRODUCER_SETTINGS (LabError in one line otherwise)."""
    if not isinstance(settings, dict) or not settings:
        raise LabError("Give the producer settings as a dict, e.g. {'acks': ..., 'retries': ...}.")
    unknown = sorted(set(settings) - set(PRODUCER_SETTINGS))
    if unknown:
        raise LabError(f"Unknown producer setting {unknown[0]!r}: use kafka-python's names, "
                       f"{', '.join(PRODUCER_SETTINGS)}.")
    return dict(settings)


def leader_kill_under(settings, records: int = 60, bootstrap: str | None = None, topic: str | None = None) -> dict:
    """Kill a partition's leader under a producer with `settings` and count what survived (module 9's Exercise 5).

    Both followers are paused (as in acks_experiment) while the producer sends `records`, so whatever only the leader
    held dies with it; then the leader is killed, the followers resume and elect a new one, and the producer gets
    until its own delivery timeout (at most SETTLE_CAP_S) to settle each record. What the partition holds is counted
    with the course's one rule against the ids the producer had acknowledged. `survived`: every record acknowledged,
    none lost, none twice. `topic`: one the caller made and deletes (the grader's process), else a new_topic()."""
    import streamlab
    from kafka import KafkaProducer
    from streamlab.lab.topics import records as read_records

    settings = producer_settings(settings)
    _need_cluster()
    bootstrap = bootstrap or cluster.bootstrap()
    topic = topic or streamlab.new_topic("leader-kill", partitions=1)  # the caller's: one partition, 3 replicas
    wait_until(lambda: len(cluster.isr_of(topic)) == cluster.NODES, 30, retry_on=(Exception,))  # a node just back
    leader = cluster.leader_of(topic)
    followers = [n for n in range(1, cluster.NODES + 1) if n != leader]
    try:
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, **settings)
    except Exception as exc:
        raise LabError(f"These producer settings are refused: {first_line(exc)}") from None
    acked: set[int] = set()
    failed: dict[int, str] = {}
    killed = False
    try:
        try:
            producer.send(topic, b"warm-up", partition=0).get(timeout=30)  # metadata and a connection, all up
            paused = [cluster.node_pid(n) for n in followers]
            for pid in paused:
                os.killpg(pid, signal.SIGSTOP)
            time.sleep(FETCH_SETTLE_S)  # fetches already waiting at the leader end empty (acks_experiment)
            try:
                for i in range(records):
                    future = producer.send(topic, str(i).encode(), partition=0)
                    future.add_callback(lambda _meta, i=i: acked.add(i))
                    future.add_errback(lambda exc, i=i: failed.setdefault(i, type(exc).__name__))
                time.sleep(3)  # what acks=1 acknowledges, the leader alone holds
                cluster.kill_node(leader)
                killed = True
            finally:
                for pid in paused:
                    os.killpg(pid, signal.SIGCONT)
            try:
                limit = min(SETTLE_CAP_S, float(settings.get("delivery_timeout_ms", 120_000)) / 1000 + 10)
            except (TypeError, ValueError):
                limit = SETTLE_CAP_S
            began = time.monotonic()
            while time.monotonic() - began < limit and len(acked) + len(failed) < records:
                time.sleep(0.3)
            settled = round(time.monotonic() - began, 1)
        finally:
            close_now(producer, timeout=2)
        # read from the new leader: a client asking before the election may be sent to the dead one
        wait_until(lambda: cluster.leader_of(topic) in followers, 40, retry_on=(Exception,))
        kept = [int(r.value) for r in read_records(topic, cluster.live_bootstrap(), False, 20) if r.value.isdigit()]
    finally:
        if killed:
            cluster.start_node(leader)  # also when something failed: what comes next needs all three
    counted = count_delivery(kept, acked)
    return {"sent": records, "acknowledged": len(acked), "failed": len(failed),
            "errors": sorted(set(failed.values())), **counted, "settled s": settled,
            "survived": len(acked) == records and counted["lost"] == 0 and counted["duplicated"] == 0}


def unclean_experiment(spark, records: int = 20, bootstrap: str | None = None) -> dict:
    """Two queries read one partition (failOnDataLoss true and false) whose only in-sync replica dies, and an
    out-of-sync replica is elected (unclean); return what each query did and what it had read that is gone."""
    import streamlab
    from kafka import KafkaProducer

    _need_cluster()
    bootstrap = bootstrap or cluster.bootstrap()
    old, new = 1, 2  # the partition's two replicas, leader first; node 3 holds none and keeps the quorum
    topic = streamlab.new_topic("unclean", assignment={0: [old, new]},
                                configs={"min.insync.replicas": "1", "unclean.leader.election.enable": "true"})
    seen: dict[str, list] = {"true": [], "false": []}

    def reader(fail: str):
        def batch(frame, _batch_id):
            seen[fail].extend((r.offset, r.value.decode()) for r in frame.select("offset", "value").collect())
        return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", topic).option("startingOffsets", "earliest").option("failOnDataLoss", fail)
                .options(**UNCLEAN_TIMEOUTS)
                .load().writeStream.foreachBatch(batch).queryName(f"failOnDataLoss={fail}")
                .option("checkpointLocation", streamlab.new_checkpoint("unclean"))
                .trigger(processingTime="500 milliseconds").start())

    def produce(label: str, servers: str) -> int:
        producer = KafkaProducer(bootstrap_servers=servers, acks="all", enable_idempotence=True, linger_ms=0,
                                 request_timeout_ms=5000)
        try:
            futures = [producer.send(topic, f"{label}-{i}".encode(), partition=0) for i in range(records)]
            acked = 0
            for future in futures:
                try:
                    future.get(timeout=15)
                    acked += 1
                except Exception:  # noqa: BLE001 - not acknowledged: counted as such
                    pass
            return acked
        finally:
            close_now(producer, timeout=2)

    def read_all(n: int) -> bool:
        return all(len(rows) >= n for rows in seen.values())

    queries = {fail: reader(fail) for fail in ("true", "false")}
    elected = failed = None
    try:
        acked = produce("before", bootstrap)  # both replicas in sync
        _until(lambda: read_all(records), 120)
        cluster.kill_node(new)  # the follower dies: fenced within seconds, the ISR shrinks to the leader alone
        _until(lambda: cluster.isr_of(topic) == [old], 30)
        acked += produce("after", bootstrap)  # acks=all with min.insync.replicas=1: the leader alone acknowledges
        _until(lambda: read_all(2 * records), 60)
        read_before = min(len(rows) for rows in seen.values())
        cluster.kill_node(old)  # the only in-sync replica dies; the out-of-sync one comes back
        began = time.monotonic()
        cluster.start_node(new)
        if _until(lambda: cluster.leader_of(topic) == new, 60):
            elected = round(time.monotonic() - began, 1)
        if _until(lambda: not queries["true"].isActive, 90):
            failed = round(time.monotonic() - began, 1)
        time.sleep(2)  # the other query plans a batch on the new leader before anything more is written
        alive = cluster.live_bootstrap()
        acked += produce("later", alive)
        _until(lambda: sum(v.startswith("later") for _o, v in seen["false"]) >= records, 30)
        from streamlab.lab.topics import records as read_records

        kept = {r.value.decode() for r in read_records(topic, alive, False, 20)}
    finally:
        for query in queries.values():
            try:
                query.stop()
            except Exception:  # noqa: BLE001 - the failed one is already stopped
                pass
        if cluster.node_pid(old) is None:
            cluster.start_node(old)  # the next experiment needs all three
        if cluster.node_pid(new) is None:
            cluster.start_node(new)
    error = queries["true"].exception()
    offsets: dict[int, set] = {}
    for offset, value in seen["false"]:
        offsets.setdefault(offset, set()).add(value)
    later = sum(value.startswith("later") for _offset, value in seen["false"])
    result = {
        "acknowledged (acks=all)": acked,
        "read by each query before the election": read_before,
        "election": f"node {old}, the only in-sync replica, killed; node {new}, out of sync, "
                    + (f"elected after {elected} s" if elected is not None else "not elected within 60 s"),
        "acknowledged, read, then gone": sum(1 for i in range(records) if f"after-{i}" not in kept),
        "failOnDataLoss=true": (f"failed {failed} s after the kill: {first_line(error)}" if error
                                else "still running"),
        "failOnDataLoss=false": f"read on: {later} records written after the election, at "
                                f"{sum(1 for values in offsets.values() if len(values) > 1)} offsets where it had "
                                "read other records before",
    }
    return result
