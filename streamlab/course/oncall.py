"""The on-call night: the capstone after module 7, three incidents in a row, each fixed by the learner's own code.

Why: the incident round (incidents.py) asks a candidate to *name* a cause and a fix; the lab then applies it. On
call nobody applies it for you. Here the same live pipelines misbehave in three acts, in the order a real night
brings them: lag climbing (a cap below the input rate), rows twice downstream after crashes (an at-least-once
sink), and records gone after retention (failOnDataLoss=false hiding the gap). In each act the learner looks with
the tools of modules 2, 3, 4 and 7, then applies a fix she writes herself: the reader options she restarts with,
her own idempotent write function, the retention and failOnDataLoss she chooses. Each act is then graded by the
system's state afterwards, never by a stored answer:

- act 1: the lag on the log (past 8 s of input when the pager fires) falls below the pager's bound (4 s of
  input) within a minute and stays there;
- act 2: after further crashes and replays, every record since the fix is in the sink's table exactly once;
- act 3: after an 8-second pause of the query (a deploy), no record since the fix is missing from the sink, or
  the query failed loudly instead of skipping them.

A no-op, a constant or a wrong fix leaves the symptom in place and earns 0 for its act. The pipelines are the
incident round's (`incidents.Incident`, started with a named fault), so everything an act starts goes through the
lab's registries, and `Act.stop()` (or starting the next act) stops and deletes it. Scores are kept in the
learner's history under STREAMLAB_HOME (`interview.json`, key "oncall", beside the mock interviews).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from streamlab.errors import LabError, first_line

from . import incidents

LAG_SECONDS = 4  # act 1: the pager's bound on the lag on the log, in seconds of input
ALERT_SECONDS = 8  # act 1: the pager fires when the lag on the log passes this many seconds of input
DOWN_WITHIN_S = 60.0  # act 1: the lag must be under the bound this soon after the restart
HOLD_S = 10.0  # act 1: ... and stay under it this long
REPLAY_WITHIN_S = 45.0  # act 2: wait this long for a crash and its replay after the fix
PAUSE_S = 8.0  # act 3: the query is stopped this long after the fix (a deploy), retention keeps deleting
AFTER_PAUSE_S = 12.0  # act 3: then it runs this long before the sink is checked
POINTS = 2  # each act is worth 2 points


@dataclass(frozen=True)
class Story:
    """One act: its fault (incidents.FAULTS), the pager's message and what the fix must achieve."""

    fault: str
    title: str
    pager: str
    goal: str


ACTS = {
    1: Story("cap-too-low", "Lag climbing",
             "21:40. The orders dashboard is minutes behind, and getting worse.",
             f"lag on the log under {LAG_SECONDS} s of input within {DOWN_WITHIN_S:.0f} s of your restart, "
             f"and still under it {HOLD_S:.0f} s later"),
    2: Story("replayed-batch", "Charged twice",
             "23:15. The job keeps crashing; its supervisor restarts it. Billing says some customers paid twice.",
             "every record since your fix in the table exactly once, through further crashes"),
    3: Story("retention-gap", "Orders gone",
             "03:05. Finance says some orders never reached the ledger. The job shows no error.",
             f"after a pause of {PAUSE_S:.0f} s of the query, no record since your fix missing from the sink, "
             "or the query stops loudly instead of skipping them"),
}

_scores: dict[int, dict] = {}  # this kernel's night: the last graded fix of each act
_current: list = []  # the act running in this kernel


def current() -> "Act | None":
    """The act running in this kernel, if one is."""
    return _current[-1] if _current else None


def start(act: int, spark, bootstrap: str, seed: int | None = None, timeout: float = 120.0) -> "Act":
    """Start act 1, 2 or 3 (stopping the act that runs); once its symptom shows, print the pager's message."""
    if act not in ACTS:
        raise LabError(f"act={act!r}: the night has acts 1, 2 and 3")
    for old in list(_current):
        old.stop()
    incident = incidents.start(spark, bootstrap, seed=seed if seed is not None else 100 + act,
                               fault=ACTS[act].fault)
    running = Act(act, incident)
    _current.append(running)
    try:
        incident.wait_for_symptom(timeout)  # the pager goes off when something shows, not before
        if act == 1:  # ... and for lag, when it crosses the alert's threshold: a fix has a backlog to drain
            _wait_for_lag(incident, ALERT_SECONDS * act_rate(incident), timeout)
    except BaseException:
        running.stop()
        raise
    print(running.brief())
    return running


def score() -> dict:
    """Print each act's points and the total, keep them in the learner's history, and return them."""
    acts = {n: _scores.get(n, {}).get("points", 0) for n in ACTS}
    total = sum(acts.values())
    for n, story in ACTS.items():
        got = _scores.get(n)
        said = got["evidence"] if got else "no fix graded yet"
        print(f"act {n} ({story.title}): {acts[n]}/{POINTS}  {said}")
    print(f"the night: {total}/{POINTS * len(ACTS)}")
    result = Grade(acts=acts, total=total, of=POINTS * len(ACTS))
    from . import mock

    mock.remember("oncall", dict(result))
    return result


def _placeholder(value) -> bool:
    return value is None or value is Ellipsis


@dataclass
class Act:
    """One act of the night: a live pipeline with its fault, the tools to look at it, and `fix(...)`."""

    number: int
    incident: "incidents.Incident"
    attempts: list = field(default_factory=list)
    fixes: list = field(default_factory=list)  # (began, graded) monotonic of each graded fix: a recorded run's marks

    def __repr__(self) -> str:
        return f"Act({self.number}, {ACTS[self.number].title!r}, {self.incident.elapsed():.0f} s)"

    # -- looking ------------------------------------------------------------------------------------------------
    def brief(self) -> str:
        """The pager's message, the topic, the checkpoint and what your fix must achieve."""
        story, inc = ACTS[self.number], self.incident
        lines = [f"Act {self.number}: {story.title}", f"  {story.pager}",
                 f"  input topic {inc.topic}; checkpoint {inc.checkpoint}"]
        if inc.table:
            lines.append(f"  sink table: SQLite file {inc.table}, table {incidents.SINK_TABLE}")
        lines.append(f"  graded: {story.goal}")
        return "\n".join(lines)

    @property
    def query(self):
        """The act's running streaming query (a new object after each restart)."""
        return self.incident.query

    @property
    def checkpoint(self) -> str:
        """The query's checkpoint folder."""
        return self.incident.checkpoint

    @property
    def topic(self) -> str:
        """The input topic."""
        return self.incident.topic

    @property
    def table(self) -> str:
        """Act 2: the SQLite file that holds the sink's table `orders`."""
        return self.incident.table

    def watch(self, seconds: float = 15.0, every: float = 5.0) -> None:
        """Print the last batch, its rows and the lag on the log every `every` s for `seconds` s."""
        self.incident.watch(seconds=seconds, every=every)

    def settings(self) -> dict:
        """The pipeline's settings: the query's reader options and trigger, and the topic's retention.ms as the
        broker reports it."""
        inc = self.incident
        return {"reader options": dict(inc._options), "trigger": inc._trigger or "as fast as possible",
                "topic retention.ms": _retention(inc.topic, inc.bootstrap)}

    def output(self) -> dict:
        """What reached the sink, per topic: rows, distinct records, duplicate copies, missing ones."""
        return self.incident.output()

    def wait_for_symptom(self, timeout: float = 90.0) -> str:
        """Block until the act's symptom shows in the course's tools; the evidence."""
        return self.incident.wait_for_symptom(timeout)

    def stop(self) -> str:
        """Stop the act's producer, query and watcher; delete its topic, checkpoint and table."""
        if self in _current:
            _current.remove(self)
        return self.incident.stop()

    # -- fixing -------------------------------------------------------------------------------------------------
    def fix(self, *args, within: float | None = None, **kwargs) -> dict:
        """Apply your fix (act 1: options=; act 2: write=; act 3: options=, retention_ms=), then grade the
        system's state afterwards: points out of 2 and the evidence."""
        method = getattr(self, f"_fix_{self.number}")
        began = time.monotonic()
        try:
            points, evidence = method(*args, **({"within": within} if within else {}), **kwargs)
        except _NotYet as exc:
            print(f"Act {self.number}: {exc}")
            return Grade(act=self.number, points=0, of=POINTS, evidence=str(exc), seconds=0.0)
        seconds = round(time.monotonic() - began, 1)
        result = Grade(act=self.number, points=points, of=POINTS, evidence=evidence, seconds=seconds)
        self.attempts.append(result)
        self.fixes.append((began, time.monotonic()))
        _scores[self.number] = result
        mark = "✓" if points == POINTS else ("~" if points else "✗")
        print(f"{mark} act {self.number}: {points}/{POINTS} after {seconds:.0f} s. {evidence}")
        return result

    def _restart(self, **kwargs) -> None:
        """Restart the act's query on its checkpoint (with the incident's supervisor and retention running)."""
        inc = self.incident
        inc._restart_query(**kwargs)
        _ensure_watcher(inc)

    def _fix_1(self, options=None, within: float = DOWN_WITHIN_S) -> tuple[int, str]:
        inc = self.incident
        if _placeholder(options) or not isinstance(options, dict):
            raise _NotYet("give the reader options you restart with, e.g. options={\"maxOffsetsPerTrigger\": ...}")
        _allowed(options, {"maxOffsetsPerTrigger", "minPartitions"})
        if any(value is Ellipsis for value in options.values()):
            raise _NotYet("replace the ... in your options with a number (or None to remove that option)")
        for key, value in options.items():
            if value is None:
                inc._options.pop(key, None)  # None removes the option
            else:
                inc._options[key] = str(value)
        bound = LAG_SECONDS * act_rate(inc)
        before = inc._log_lag()
        self._restart()
        fixed = time.monotonic()
        down_at, first, lags = None, 0, []
        while time.monotonic() - fixed < within + HOLD_S:
            failed = _failure(inc)
            if failed:
                return 0, f"the restarted query failed: {failed}"
            lag = inc._log_lag()
            lags.append(lag)
            if down_at is None and lag <= bound and inc._batches and inc._batches[-1]["at"] > fixed:
                down_at, first = time.monotonic(), len(lags) - 1
            if down_at is None and time.monotonic() - fixed > within:
                break
            if down_at is not None and time.monotonic() - down_at >= HOLD_S:
                break
            time.sleep(0.5)
        if down_at is None:
            return 0, (f"lag on the log {before:,} → {lags[-1] if lags else before:,} records after {within:.0f} s; "
                       f"the pager's bound is {bound:,} ({LAG_SECONDS} s of input)")
        after = sorted(lags[first:])  # the readings from the first one under the bound on
        # one slow batch on a busy laptop may lift one reading; a cap below the rate lifts them all, for good
        held = after[len(after) // 2] <= bound and min(lags[-4:]) <= bound
        return 1 + int(held), (f"lag on the log {before:,} → under {bound:,} after {down_at - fixed:.0f} s; "
                               f"the {HOLD_S:.0f} s after: median {after[len(after) // 2]:,}, at most {after[-1]:,} "
                               "records" + ("" if held else " (over the bound again: the cap is too tight)"))

    def _fix_2(self, write=None, within: float = REPLAY_WITHIN_S) -> tuple[int, str]:
        from streamlab.observe import checkpoint as ck
        from streamlab.observe.subscriptions import batch_rows

        inc = self.incident
        if _placeholder(write) or not callable(write):
            raise _NotYet("give your write function: fix(write=my_write), a function (batch_df, batch_id)")
        with inc._query_lock:
            from streamlab.observe.progress import stop_between_batches

            inc._restarting = True
            try:
                stop_between_batches(inc.query)
                since = committed_offsets(inc)
                inc._write = write
                fixed = time.monotonic()
                inc.query = inc._start_query()
            finally:
                inc._crashing = False
                inc._restarting = False
        _ensure_watcher(inc)
        replayed = None
        while time.monotonic() - fixed < within:
            failed = _failure(inc)
            if failed:
                return 0, f"the query failed in your write function: {failed}"
            done = ck.last_committed(inc.checkpoint)
            for batch, at in inc._crashes:
                if at > fixed and any(b["batch"] == batch and b["at"] > at for b in inc._batches) \
                        and done is not None and done >= batch:
                    replayed = batch
            if replayed is not None:
                break
            time.sleep(0.5)
        if replayed is None:
            return 0, f"no crash and replay was seen within {within:.0f} s, so nothing can be graded yet: fix again"
        until = committed_offsets(inc)
        counts = incidents.table_counts(inc.table, since={inc.topic: since}, until={inc.topic: until})
        got = counts.get(inc.topic, {"rows": 0, "distinct": 0, "duplicates": 0, "missing": 0})
        span = sum(until.get(p, 0) - o for p, o in since.items())
        # the replayed batch's own records are in that range (it was planned after the fix): they are the test
        again = sum(n for parts in batch_rows(inc.checkpoint, replayed).values() for n in parts.values())
        exact = got["duplicates"] == 0 and got["missing"] == 0 and again > 0
        return (POINTS if exact else 0), (
            f"batch {replayed} ({again} records) crashed after your write and ran again; records since your fix: "
            f"{span}, in the "
            f"table {got['rows']} rows ({got['distinct']} distinct, {got['duplicates']} twice, {got['missing']} "
            "missing)")

    def _fix_3(self, options=None, retention_ms=None, within: float = AFTER_PAUSE_S) -> tuple[int, str]:
        from streamlab.lab.lifecycle import new_checkpoint
        from streamlab.lab.topics import describe_topic
        from streamlab.observe.progress import stop_between_batches

        inc = self.incident
        if (_placeholder(options) or not isinstance(options, dict)) and _placeholder(retention_ms):
            raise _NotYet("give the options you restart with and/or the topic's retention: "
                          "fix(options={\"failOnDataLoss\": ...}, retention_ms=...)")
        options = {} if _placeholder(options) or not isinstance(options, dict) else options
        _allowed(options, {"failOnDataLoss"})
        if retention_ms is Ellipsis or any(_placeholder(value) for value in options.values()):
            raise _NotYet("replace each ... (or None) with your setting, or leave that argument out")
        with inc._query_lock:
            inc._restarting = True
            try:
                stop_between_batches(inc.query)
                if not _placeholder(retention_ms):
                    inc._set_retention(str(int(retention_ms)))
                for key, value in options.items():
                    inc._options[key] = str(value).lower()
                committed = committed_offsets(inc)
                held = describe_topic(inc.topic, inc.bootstrap)
                lost = {p: (o, held[p][0]) for p, o in committed.items() if p in held and held[p][0] > o}
                start = {p: max(o, held.get(p, (0, 0))[0]) for p, o in committed.items()}
                fresh = new_checkpoint("incident")
                inc._folders.append(fresh)
                inc.checkpoint = fresh
                n0 = len(inc._ids.get(inc.topic, []))
                starting = '{"%s":{%s}}' % (inc.topic, ",".join(f'"{p}":{o}' for p, o in start.items()))
                inc.query = inc._start_query(starting=starting)
            finally:
                inc._restarting = False
        _ensure_watcher(inc)
        gone = "; ".join(f"partition {p}: offsets {a}-{b - 1}" for p, (a, b) in lost.items()) or "none"
        print(f"  deleted before your fix (for finance's list): {gone}. The query resumes after them.")
        failed = _wait_batches(inc, 2, 30.0)
        if not failed:
            with inc._query_lock:  # the deploy: the query is down for PAUSE_S while retention goes on
                inc._restarting = True
                try:
                    stop_between_batches(inc.query)
                    time.sleep(PAUSE_S)
                    inc.query = inc._start_query()
                finally:
                    inc._restarting = False
            _ensure_watcher(inc)
            end = time.monotonic() + within
            while time.monotonic() < end and not failed:
                failed = _failure(inc)
                time.sleep(0.5)
        ids = inc._ids.get(inc.topic, [])[n0:]
        missing = (max(ids) - min(ids) + 1 - len(set(ids))) if ids else 0
        loud = bool(failed) and _data_loss(inc)
        strict = inc._options.get("failOnDataLoss", "true") == "true"
        if failed and not loud:
            return 0, f"the query failed, not from data loss: {failed}"
        if missing:
            return 0, (f"{missing} records since your fix never reached the sink, and the query said nothing "
                       f"(rows read: {len(ids)})")
        if loud:
            return 1, ("the query stopped loudly on the gap (nothing skipped in silence), but records were deleted "
                       f"before it read them: retention is shorter than a pause of {PAUSE_S:.0f} s")
        if not ids:
            return 0, "no record reached the sink since your fix"
        return 1 + int(strict), (f"{len(ids)} records since your fix, none missing after a pause of {PAUSE_S:.0f} s"
                                 + ("; failOnDataLoss=true would stop the query on a gap" if strict
                                    else "; but failOnDataLoss=false would still skip a gap in silence"))


class Grade(dict):
    """A graded fix or night (a dict), shown in a notebook as one short line: the full text is printed above."""

    def __repr__(self) -> str:
        if "act" in self:
            return f"act {self['act']}: {self['points']}/{self['of']}"
        return f"the night: {self['total']}/{self['of']}"

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(repr(self))


class _NotYet(LabError):
    """A fix cell still holds its placeholder."""


def _allowed(options: dict, keys: set) -> None:
    extra = set(options) - keys
    if extra:
        raise LabError(f"this act restarts with {', '.join(sorted(keys))} only, not {', '.join(sorted(extra))}")


def act_rate(inc) -> int:
    """The records per second the act's producer sends (100 when it has none)."""
    return int(inc.producers[0].rate) if inc.producers else 100


def committed_offsets(inc) -> dict:
    """{partition: offset} the act's query has committed for its topic ({} before its first batch)."""
    from streamlab.observe import checkpoint as ck

    done = ck.committed_offsets(inc.checkpoint)
    return dict((done.kafka().get(inc.topic) if done else None) or {})


def _failure(inc) -> str:
    """'' while the act's query runs (or is being restarted); else the first line of why it stopped."""
    if inc._active() or inc._restarting or inc._crashing:
        return ""
    try:
        error = inc.query.exception()
    except Exception as exc:  # a query whose JVM side is gone
        error = exc
    return first_line(error) if error else "stopped"


def _retention(topic: str, bootstrap: str) -> int | None:
    """The topic's retention.ms, from the broker's DescribeConfigs (None if it does not say)."""
    from kafka.admin import ConfigResource, ConfigResourceType

    from streamlab.lab.topics import admin

    client = admin(bootstrap)
    try:  # kafka-python 3: {resource type: {name: {key: {"value": ...}}}}
        answer = client.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
    finally:
        client.close()
    for names in answer.values() if isinstance(answer, dict) else []:
        entry = (names.get(topic) or {}).get("retention.ms")
        if entry is not None:
            return int(entry["value"] if isinstance(entry, dict) else entry)
    return None


def _data_loss(inc) -> bool:
    """Whether the act's query stopped on Spark's data-loss error (KAFKA_DATA_LOSS.*, failOnDataLoss=true)."""
    try:
        text = str(inc.query.exception())
    except Exception:
        return False
    return any(mark in text for mark in ("KAFKA_DATA_LOSS", "failOnDataLoss", "Could not read records in offset"))


def _wait_for_lag(inc, records: int, timeout: float) -> None:
    """Wait until the lag on the log passes `records` (TimeoutError naming the last reading)."""
    deadline = time.monotonic() + timeout
    while (lag := inc._log_lag()) <= records:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the lag on the log stayed at {lag:,} records, under the alert's {records:,}")
        inc._check_query()
        time.sleep(0.5)


def _wait_batches(inc, n: int, timeout: float) -> str:
    """Wait for `n` batches of the current query (or its failure, returned as a line)."""
    start = len(inc._batches)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        failed = _failure(inc)
        if failed:
            return failed
        if len(inc._batches) - start >= n:
            return ""
        time.sleep(0.5)
    return ""


def _ensure_watcher(inc) -> None:
    """Start the incident's watcher again if it ended (it ends when the query stopped, e.g. a failed fix)."""
    import threading

    if inc._watcher is None or not inc._watcher.is_alive():
        inc._watcher = threading.Thread(target=inc._watch, name=f"streamlab-incident-{inc.seed}", daemon=True)
        inc._watcher.start()
