"""The notebook life cycle: the one setup cell, topics made for a lesson, and the cleanup at the end."""
from __future__ import annotations

import os
import re
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from streamlab.lab import teardown, topics as _topics
from streamlab.lab.broker import ensure_broker, probe, probe_all, topic_states
from streamlab.errors import LabError
from streamlab.lab.session import chosen_engine, engine, spark
from streamlab.course.variants import variant

_made_topics: list[str] = []
_left_topics: list[str] = []  # topics cleanup() deleted for the notebook but could not delete on the broker
_made_folders: list[str] = []
_bootstrap: list[str] = []

ENGINE_NOTES = {
    "connector": "Spark's own spark-sql-kafka-0-10 connector",
    "offline": "streamlab's offline fallback (noida-db and a re-creation of the connector on Spark's Python "
               "Data Source API)",
}


def setup(cluster: bool = False):
    """Start or reuse the broker and Spark, print one line about each, and return (spark, bootstrap).

    cluster=True (or $STREAMLAB_CLUSTER=1): three Kafka brokers and a Spark standalone cluster (streamlab.lab.cluster).
    """
    if cluster and os.environ.get("KAFKA_BOOTSTRAP"):
        # The grader's kernel, a workshop's server or a team's lab: their Kafka is another's, and the cluster demos
        # kill the lab's own brokers and executors, so nothing is started (module 9's demos then say they need it).
        if os.environ.get("STREAMLAB_GRADING") == "1":
            print("cluster   not started while grading (the graded checks need no cluster)")
        else:
            print(f"cluster   not started: this lab uses the Kafka at KAFKA_BOOTSTRAP ({os.environ['KAFKA_BOOTSTRAP']}, "
                  "a workshop's or a team's); the cluster demos kill brokers and executors of the lab's own cluster: "
                  "run them on your machine with `make lab CLUSTER=1`")
    elif cluster:
        os.environ["STREAMLAB_CLUSTER"] = "1"
    bootstrap = ensure_broker()
    _bootstrap[:] = [bootstrap]
    session = spark()
    kind = engine(session)
    why = chosen_engine()[1]
    print(f"broker    {bootstrap}")
    print(f"spark     {session.version} ({session.sparkContext.master})")
    print(f"engine    {kind}: {ENGINE_NOTES[kind]}" + (f" ({why})" if kind == "offline" else ""))
    mine = variant()
    print(f"variant   {mine.seed} (the numbers of your exercises; streamlab.new_variant() draws others)")
    swept = sweep_orphans(bootstrap)
    if swept:
        print(f"swept     {swept}")
    _use_broker()
    BrokerWatch.start_for(session, bootstrap)
    return session, bootstrap


class BrokerWatch(threading.Thread):
    """Watches the lab's brokers and every running query's own Kafka sources; says what went wrong in one line
    naming the fix, within seconds, in the cell that is running, and stops a query that would otherwise wait.

    Without it, Spark's connector waits on a broker that is gone or was never there (a typo in a learner's own
    `kafka.bootstrap.servers`): a query hangs with no batch and no error ("Getting offsets from KafkaV2[...]"), or
    fails a minute later with a long Java trace; a topic deleted under a query is named only inside a 53-line plan.

    The lab's broker list (one broker, or a cluster's) counts as lost only when none of its brokers answers; one
    broker down while others answer is an event of its own. Other code follows the watch through two public hooks:
    `BrokerWatch.listeners`, callables taking (event, message) with event one of "lost", "back", "broker down",
    "broker up", "query stopped", "notice"; and `BrokerWatch.lost`, a threading.Event set while no lab broker
    answers. `BrokerWatch.stopped_by_watch(query)` is the line for a query the watch stopped, else None.
    """

    INTERVAL_S = 1.0
    MISSES = 3  # consecutive seconds without an answer before a broker (or a query's servers) counts as lost
    TOPIC_MISSES = 4  # consecutive looks with a subscribed topic missing before its query is stopped
    listeners: list = []
    lost = threading.Event()
    _current: "BrokerWatch | None" = None
    _stopped: dict = {}  # query id -> the line that says why the watch stopped it
    _awaited: dict = {}  # query id -> how many calls wait on it (they raise the line themselves: said once)
    _raised: set = set()  # query ids whose failure a waiting call raised as one line: the watch says it no more

    def __init__(self, session, bootstrap: str):
        super().__init__(name="streamlab-broker-watch", daemon=True)
        self.session, self.bootstrap = session, bootstrap
        self.message: str | None = None  # the last line about the lab's brokers
        self.down: set[str] = set()
        self._lab_misses = 0
        self._misses: dict = {}  # (query id, what) -> consecutive misses
        self._sources: dict = {}  # query id -> its Kafka sources' options
        self._seen: dict = {}  # query id -> the query, while active
        self._said: set = set()
        self._noticed: dict = {}  # query id -> lines already said about it
        self._queue: list[str] = []
        self._in_cell = False
        self._done = threading.Event()

    # -- the public side ---------------------------------------------------------------------------------------

    @classmethod
    def current(cls) -> "BrokerWatch | None":
        """The watch setup() started, if any."""
        return cls._current

    @classmethod
    def start_for(cls, session, bootstrap: str) -> "BrokerWatch":
        """Watch `bootstrap` for `session` (replacing an earlier watch, as a re-run setup cell does)."""
        if cls._current is not None:
            cls._current.stop()
        cls._current = watch = cls(session, bootstrap)
        cls.lost.clear()
        shell = _ipython()
        if shell is not None:
            shell.events.register("pre_run_cell", watch._cell_starts)
            shell.events.register("post_run_cell", watch._cell_ends)
            watch._in_cell = True  # setup() itself runs in a cell
        _guard_queries()
        watch.start()
        return watch

    @classmethod
    def stopped_by_watch(cls, query) -> str | None:
        """The line saying why the watch stopped `query`, or None when it did not."""
        if not cls._stopped:
            return None
        try:
            return cls._stopped.get(str(query.id))
        except Exception:
            return None

    def stop(self) -> None:
        """Stop watching."""
        self._done.set()
        shell = _ipython()
        if shell is not None:
            for event, handler in (("pre_run_cell", self._cell_starts), ("post_run_cell", self._cell_ends)):
                try:
                    shell.events.unregister(event, handler)
                except ValueError:
                    pass

    # -- saying it where the learner looks ---------------------------------------------------------------------

    def _say(self, event: str, message: str, quiet: bool = False) -> None:
        for listener in list(self.listeners):
            try:
                listener(event, message)
            except Exception:
                pass
        if event in ("broker up",) or quiet:
            return
        if _ipython() is None:
            print(f"⚠  {message}", file=sys.stderr, flush=True)
        elif self._in_cell:
            print(f"⚠  {message}", flush=True)  # a thread's output goes to the cell that is running
        else:
            self._queue.append(message)  # said when the next cell starts

    def _cell_starts(self, *_args) -> None:
        self._in_cell = True
        queued, self._queue = self._queue, []
        for message in queued:
            print(f"⚠  {message}")

    def _cell_ends(self, *_args) -> None:
        self._in_cell = False

    # -- the loop ----------------------------------------------------------------------------------------------

    def run(self) -> None:
        while not self._done.wait(self.INTERVAL_S):
            try:
                active = list(self.session.streams.active)
            except Exception:
                return  # the session was stopped
            try:
                self._look(active)
            except Exception:  # never let the watch die on a surprise: it is the only one watching
                pass

    def _look(self, active: list) -> None:
        if active or self.listeners:
            self._look_at_lab(bool(active))
        ids = {}
        for query in active:
            try:
                ids[str(query.id)] = query
            except Exception:
                continue
        for qid, query in list(self._seen.items()):
            if qid not in ids:
                self._ended(qid, query)
        self._seen = ids
        for qid, query in ids.items():
            if qid not in self._stopped:
                self._look_at_query(qid, query)

    def _look_at_lab(self, queries: bool = False) -> None:
        states = probe_all(self.bootstrap, timeout=1.0)
        if not states:
            return
        up = {a for a, s in states.items() if s == "kafka"}
        if up:
            if self.lost.is_set():
                self.lost.clear()
                self.message = None
                self._say("back", f"The Kafka broker at {', '.join(sorted(up))} answers again: re-run the cell "
                                  "that starts your query.")
            self._lab_misses = 0
            for address in set(states) - up - self.down:
                self.down.add(address)
                self._say("broker down", f"Kafka broker {address} stopped answering; {len(up)} of {len(states)} "
                                         "still answer, so queries go on (start it again to restore the cluster).")
            for address in self.down & up:
                self.down.discard(address)
                self._say("broker up", f"Kafka broker {address} answers again.")
            return
        self._lab_misses += 1
        if self._lab_misses == self.MISSES:
            self.down = set(states)
            self.lost.set()
            self.message = (f"The Kafka broker at {self.bootstrap} stopped answering. Start it again "
                            "(`python -m streamlab broker start` in a terminal, or re-run the setup cell), then "
                            "re-run the cell.")
            self._say("lost", self.message, quiet=queries)  # each stopped query's line says it then

    _first_look = threading.Lock()

    def notice_options(self, qid: str, query) -> None:
        """Say once what is wrong with a new query's Kafka options (also for one that fails before the next look)."""
        with self._first_look:
            if qid in self._sources:
                return
            self._sources[qid] = kafka_sources(query)
        for source in self._sources[qid]:
            problem = bad_option(source)
            if problem:
                self._noticed.setdefault(qid, set()).add(problem)
                self._say("notice", problem)

    def _look_at_query(self, qid: str, query) -> None:
        self.notice_options(qid, query)
        for source in self._sources[qid]:
            servers = source.get("kafka.bootstrap.servers", "")
            ours = _same_servers(servers, self.bootstrap)
            if ours:
                if self.lost.is_set():
                    self._stop_query(qid, query, f"The Kafka broker at {self.bootstrap} stopped answering, so "
                                     f"streamlab stopped {_label(query)}. Start it again (`python -m streamlab "
                                     "broker start` in a terminal, or re-run the setup cell), then re-run the cell.")
                    return
                answering = not self._lab_misses
            else:
                states = probe_all(servers, timeout=1.0)
                answering = "kafka" in states.values()
            if not self._count(qid, "servers", not answering):
                if not ours:
                    self._stop_query(qid, query, unreachable(servers, states, self.bootstrap, _label(query)))
                    return
                continue
            missing = self._missing_topics(source, servers) if answering else []
            if not self._count(qid, "topics", bool(missing), self.TOPIC_MISSES):
                self._stop_query(qid, query, missing_topic(missing, servers, _label(query)))
                return

    def _count(self, qid: str, what: str, miss: bool, limit: int | None = None) -> bool:
        """False once `what` has missed `limit` looks in a row."""
        key = (qid, what)
        self._misses[key] = self._misses.get(key, 0) + 1 if miss else 0
        return self._misses[key] < (limit or self.MISSES)

    @staticmethod
    def _missing_topics(source: dict, servers: str) -> list[str]:
        wanted = [t.strip() for t in source.get("subscribe", "").split(",") if t.strip()]
        if "assign" in source:
            try:
                import json

                wanted += list(json.loads(source["assign"]))
            except (ValueError, TypeError):
                pass
        if not wanted:
            return []
        states = topic_states(servers, wanted, timeout=1.0)
        return [t for t in wanted if states is not None and not states.get(t, True)]

    def _stop_query(self, qid: str, query, message: str) -> None:
        type(self)._stopped[qid] = message
        threading.Thread(target=_stop_quietly, args=(query,), daemon=True, name="streamlab-watch-stop").start()
        self._say("query stopped", message, quiet=bool(self._awaited.get(qid)))

    def _ended(self, qid: str, query) -> None:
        """A query that ended by itself: if it failed on a topic that is gone or a bad option, say so in a line
        (unless a call waits on it: awaitTermination / processAllAvailable raise that line themselves)."""
        if qid in self._stopped or qid in self._said or self._awaited.get(qid) or qid in self._raised:
            return
        self._said.add(qid)
        try:
            exc = query.exception()
        except Exception:
            return
        if exc is None:
            return
        line = explain_failure(query, exc)
        if line and line not in self._noticed.get(qid, ()):
            self._say("notice", line)


def _label(query) -> str:
    try:
        name = query.name
    except Exception:
        name = None
    return f"query {name!r}" if name else "a query"


def _same_servers(a: str, b: str) -> bool:
    norm = lambda s: {e.strip().replace("localhost:", "127.0.0.1:") for e in str(s).split(",") if e.strip()}
    return bool(norm(a) & norm(b))


def kafka_sources(query) -> list[dict]:
    """The options of each Kafka source of a running query ({} keys lower-case), read from its analyzed plan."""
    out = []
    try:
        plan = query._jsq.streamingQuery().analyzedPlan()
        leaves = plan.collectLeaves()
        for i in range(leaves.size()):
            leaf = leaves.apply(i)
            if leaf.getClass().getSimpleName() not in ("StreamingRelationV2", "StreamingRelation"):
                continue
            if leaf.getClass().getSimpleName() == "StreamingRelationV2":
                name, options = leaf.sourceName(), leaf.extraOptions().asCaseSensitiveMap()
            else:
                name, options = leaf.sourceName(), leaf.dataSource().options()
            if str(name).lower() not in ("kafka", "streamlab_kafka"):
                continue
            out.append({str(k).lower(): str(v) for k, v in dict(options).items()})
    except Exception:
        pass
    return out


def bad_option(source: dict, error: str = "") -> str | None:
    """One line naming a learner's bad Kafka source option (a cap Spark reads as 'nothing'), else None."""
    for knob in ("maxoffsetspertrigger", "minoffsetspertrigger"):
        raw = source.get(knob)
        if raw is None:
            continue
        pretty = "maxOffsetsPerTrigger" if knob.startswith("max") else "minOffsetsPerTrigger"
        try:
            value = int(raw.strip())
        except ValueError:
            return (f"option {pretty}={raw!r} is not a whole number of records, so Spark cannot start the query: "
                    f'give a positive count, e.g. .option("{pretty}", 1000), then re-run the cell.')
        fix = 'give a positive cap, e.g. .option("maxOffsetsPerTrigger", 1000), or drop the option to read all.'
        if knob.startswith("max") and value == 0:
            return ("option maxOffsetsPerTrigger=0: Spark reads NO records with a cap of 0 (each partition's share "
                    f"rounds to 0, so every batch is empty, with no error): {fix}")
        if knob.startswith("max") and value < 0:
            return (f"option maxOffsetsPerTrigger={value}: a negative cap makes Spark plan each partition's end "
                    "before its start: it reads NO records, or fails with 'Some data may have been lost' although "
                    f"nothing was lost: {fix}")
    if "NumberFormatException" in error or "For input string" in error:
        for key, raw in source.items():
            if key.endswith(("pertrigger", "partitions", "timeoutms", "ms")) and f'"{raw}"' in error:
                return f"option {key}={raw!r} is not a number, so Spark could not run the query: fix it and re-run."
    return None


def unreachable(servers: str, states: dict, lab: str, label: str) -> str:
    """The line for a query whose own kafka.bootstrap.servers do not answer."""
    if not states:
        why = f"kafka.bootstrap.servers={servers!r} is not a host:port list"
    else:
        parts = []
        for address, state in states.items():
            parts.append({"closed": f"nothing answers at {address}",
                          "unknown host": f"the host {address.rpartition(':')[0]!r} is not known",
                          "other": f"what answers at {address} is not Kafka"}.get(state, f"{address}: {state}"))
        why = f"it reads kafka.bootstrap.servers={servers!r}, but {'; '.join(parts)}"
    return (f"streamlab stopped {label}: {why}. The lab's broker is {lab}: write "
            f'.option("kafka.bootstrap.servers", bootstrap), then re-run the cell.')


def missing_topic(missing: list[str], servers: str, label: str, stopped: bool = True) -> str:
    """The line for a query whose subscribed topic does not exist (deleted, or a typo)."""
    names = ", ".join(repr(t) for t in missing)
    head = f"streamlab stopped {label}" if stopped else f"{label[0].upper()}{label[1:]} failed"
    return (f"{head}: topic {names} does not exist on {servers} (deleted, or a typo?). Make it again (re-run the "
            "cell that makes it with streamlab.new_topic(...)) or fix the subscribe option, then re-run the cell.")


def explain_failure(query, exc) -> str | None:
    """One line for a query that failed because a topic it reads is gone or an option of it is bad, else None."""
    text = str(exc)
    for source in kafka_sources(query):
        problem = bad_option(source, text)
        # A value Spark cannot parse is the cause; so is a negative cap behind a "data loss" (offsets went back).
        if problem and ("not a" in problem or ("negative cap" in problem and "data may have been lost" in text)):
            return problem
        servers = source.get("kafka.bootstrap.servers", "")
        if probe(servers, timeout=1.0) == "kafka":
            missing = BrokerWatch._missing_topics(source, servers)
            if missing:
                return missing_topic(missing, servers, _label(query), stopped=False)
    return None


def unwritable_checkpoint(exc: BaseException) -> str | None:
    """The one line for a query that cannot start because its checkpoint folder cannot be made or written."""
    from streamlab.errors import first_line

    line = first_line(exc)
    found = re.search(r"(?:mkdir of|Mkdirs failed to create|Parent path is not a directory:|Permission denied:?|"
                      r"Read-only file system:?|AccessDeniedException:)\s*(?:file:)?(\S+)", line)
    if not found or not line.startswith(("IOException", "ParentNotDirectoryException", "AccessDeniedException",
                                         "FileSystemException", "ReadOnlyFileSystemException")):
        return None
    return (f"Spark cannot make or write the query's checkpoint folder ({found.group(1).rstrip(':')}): give "
            "checkpointLocation a folder you can write, such as streamlab.new_checkpoint().")


def _guard_queries() -> None:
    """awaitTermination / processAllAvailable return at once, with the watch's line, for a query the watch stopped;
    stop() on it returns at once (its thread may still sit in a Kafka call for a minute)."""
    from streamlab import patches

    patches.install("query-guard")


def query_guard(cls, originals: dict) -> dict:
    """The patch "query-guard" (streamlab.patches): StreamingQuery's waits and stop, DataStreamWriter's start."""
    start_original = originals.get("start")
    await_original = originals.get("awaitTermination")
    process_original = originals.get("processAllAvailable")
    stop_original = originals.get("stop")

    @contextmanager
    def awaited(query):
        try:
            qid = str(query.id)
        except Exception:
            qid = None
        waits = BrokerWatch._awaited
        waits[qid] = waits.get(qid, 0) + 1
        try:
            yield
        finally:
            waits[qid] -= 1

    def explained(call, query, *args):
        """`call`, with a query's own failure turned into one line when its cause is a topic that is gone or a bad
        option (Spark names the first only inside a long plan, and not the option at all)."""
        try:
            return call(query, *args)
        except LabError:
            raise
        except Exception as exc:
            line = explain_failure(query, exc)
            if line:
                try:
                    BrokerWatch._raised.add(str(query.id))
                except Exception:  # noqa: BLE001 - the gateway is gone: nothing more will be said anyway
                    pass
                raise LabError(line) from None
            raise

    def awaitTermination(self, timeout=None):
        if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
            return await_original(self, timeout)  # Spark's own message for a bad timeout
        deadline = None if timeout is None else time.monotonic() + float(timeout)
        with awaited(self):
            while True:
                step = 1.0 if deadline is None else max(0.001, min(1.0, deadline - time.monotonic()))
                ended = explained(await_original, self, step)
                why = BrokerWatch.stopped_by_watch(self)
                if why:
                    raise LabError(why)
                if ended:
                    return None if timeout is None else True
                if deadline is not None and time.monotonic() >= deadline:
                    return False

    def processAllAvailable(self):
        with awaited(self):
            why = BrokerWatch.stopped_by_watch(self)
            if why:
                raise LabError(why)
            result = explained(process_original, self)
            why = BrokerWatch.stopped_by_watch(self)
            if why:
                raise LabError(why)
            return result

    def start(self, *args, **kwargs):
        try:
            query = start_original(self, *args, **kwargs)
        except Exception as exc:
            line = unwritable_checkpoint(exc)
            if line:
                raise LabError(line) from None
            raise
        watch = BrokerWatch._current
        if watch is not None:
            try:
                watch.notice_options(str(query.id), query)  # a bad cap is named even if the query fails at once
            except Exception:  # noqa: BLE001 - naming a bad option must never break a start
                pass
        return query

    def stop(self):
        if BrokerWatch.stopped_by_watch(self) and not self.isActive:
            return None  # the watch stopped it already; a second stop would wait on the same stuck thread
        return stop_original(self)

    if cls.__name__ == "DataStreamWriter":
        hooks = {"start": start}
    else:
        hooks = {"awaitTermination": awaitTermination, "processAllAvailable": processAllAvailable, "stop": stop}
    for name, fn in hooks.items():
        fn.__doc__, fn.__wrapped__ = originals[name].__doc__, originals[name]
    return hooks


def _ipython():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def check_broker() -> None:
    """Raise a LabError naming the fix when the lab's broker stopped answering (for loops that wait on it)."""
    if _bootstrap and probe(_bootstrap[0], timeout=1.0) != "kafka":
        raise LabError(f"The Kafka broker at {_bootstrap[0]} is not answering: start it again "
                       "(`python -m streamlab broker start`, or re-run the setup cell).")


def new_topic(prefix: str = "lab", partitions: int = 1, configs: dict | None = None,
              assignment: dict[int, list[int]] | None = None) -> str:
    """A fresh topic for this notebook (with topic `configs` and a replica `assignment`, if any), deleted by cleanup()."""
    if not _bootstrap:
        _bootstrap.append(ensure_broker())
    from streamlab.lab.owners import topic_name

    # The name carries this kernel's owner token, so the next setup() deletes it if this kernel dies uncleanly.
    # In a workshop the learner's prefix comes first: their ACLs cover only names starting with it.
    name = _topics.create_topic(topic_name(_topics.access.topic_prefix() + prefix), partitions, _bootstrap[0],
                                configs=configs, assignment=assignment)
    _made_topics.append(name)
    return name


def new_checkpoint(prefix: str = "checkpoint") -> str:
    """A fresh temporary folder (a query's checkpoint location), deleted by cleanup() and when the kernel exits."""
    import tempfile

    if not _made_folders:
        remove_orphaned_folders()
    # The kernel's pid in the name lets a later kernel delete what this one leaves if it is killed mid-demo
    # (a restart gives a busy kernel only a few seconds before SIGKILL, so its exit handlers may never run).
    try:
        folder = tempfile.mkdtemp(prefix=f"streamlab-{prefix}-{os.getpid()}-")
    except OSError as exc:
        raise LabError(f"Cannot make a checkpoint folder in {tempfile.gettempdir()} ({exc.strerror}): set TMPDIR "
                       "to a folder you can write, then restart the kernel.") from None
    _made_folders.append(folder)
    return folder


def orphaned_folders() -> list[Path]:
    """The checkpoint folders (new_checkpoint: streamlab-<name>-<pid>-…) of kernels that are gone."""
    import re
    import tempfile

    found = []
    for folder in Path(tempfile.gettempdir()).glob("streamlab-*-*-*"):
        match = re.fullmatch(r"streamlab-.+-(\d+)-[a-z0-9_]{8}", folder.name)
        if match and folder.is_dir() and int(match[1]) != os.getpid() and not _pid_runs(int(match[1])):
            found.append(folder)
    return found


def remove_orphaned_folders() -> list[Path]:
    """Delete the folders left by kernels that were killed (their pid no longer runs); return them."""
    import shutil

    gone = orphaned_folders()
    for folder in gone:
        shutil.rmtree(folder, ignore_errors=True)
    return gone


def _pid_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def _remove_folders() -> int:
    import shutil

    from streamlab.lab import reentry

    made = list(_made_folders)
    _made_folders.clear()
    gone = 0
    for folder in made:
        if os.path.isdir(folder):  # what a caller removed already is not counted as deleted here
            shutil.rmtree(folder, ignore_errors=True)
            gone += 1
    reentry.forget((), made)
    return gone + reentry.remove_recreated()


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def sweep_orphans(bootstrap: str | None = None, timeout: float = 5.0) -> str:
    """Delete the topics and checkpoint folders of kernels that are gone (killed, out of memory, a check that
    timed out: no exit handler ran), and the topics an earlier cleanup() of this kernel had to leave on a broker
    that was not answering; say what was deleted ('' when nothing)."""
    from streamlab.lab.owners import orphaned

    gone = remove_orphaned_folders()
    jvm = sum(folder.name.startswith("streamlab-jvm-") for folder in gone)  # session._private_temporary_folder
    folders = len(gone) - jvm
    theirs: list[str] = []
    mine: list[str] = []
    bootstrap = bootstrap or (_bootstrap[0] if _bootstrap else None)
    if bootstrap and probe(bootstrap, timeout=1.0) == "kafka":
        try:
            listed = _topics.list_topics(bootstrap)
            theirs = orphaned(listed)
            mine = [t for t in dict.fromkeys(_left_topics) if t in listed]
            failed = _topics.delete_within(theirs + mine, bootstrap, timeout) if theirs or mine else []
            # A topic that is not listed is gone already; one the broker did not delete in time stays for later.
            _left_topics[:] = [t for t in mine if t in failed]
            theirs = [t for t in theirs if t not in failed]
            mine = [t for t in mine if t not in failed]
        except Exception:
            theirs, mine = [], []  # a broker that went away meanwhile: the next setup() tries again
    said = []
    if mine:
        said.append(f"{_count(len(mine), 'topic')} an earlier cleanup() left while the broker was not answering")
    parts = [_count(len(theirs), "topic") if theirs else "", _count(folders, "checkpoint folder") if folders else "",
             _count(jvm, "Spark temporary folder") if jvm else ""]
    parts = [p for p in parts if p]
    if parts:
        said.append(f"{' and '.join(parts)} left by kernels that are gone")
    return "; ".join(said)


def _use_broker() -> None:
    """Count this kernel as a user of the lab's broker, so a lab's Ctrl-C does not stop it under us."""
    from streamlab.lab.broker import add_user, external_bootstrap

    if not external_bootstrap():
        try:
            add_user()
        except Exception:
            pass


CLEANUP_S = 8.0  # cleanup() and the exit handler finish within this, whatever the broker does


def cleanup(session=None) -> str:
    """Stop every streaming query and background producer, delete this notebook's topics; say what was done and
    what was left (within seconds, whatever the broker's state)."""
    return _finish(session, CLEANUP_S)


def _finish(session, budget: float, at_exit: bool = False) -> str:
    from streamlab.lab import reentry
    from streamlab.lab.producer import stop_all

    deadline = time.monotonic() + budget
    if session is None:
        try:
            from pyspark.sql import SparkSession

            session = SparkSession.getActiveSession()
        except Exception:
            session = None
    try:
        queries = list(session.streams.active) if session is not None else []
    except Exception:
        queries = []
    broker_lost = bool(_bootstrap) and probe(_bootstrap[0], timeout=1.0) != "kafka"
    stoppers = [threading.Thread(target=_stop_quietly, args=(q,), daemon=True) for q in queries]
    for stopper in stoppers:
        stopper.start()
    for stopper in stoppers:
        # With the broker gone, a query's thread may sit in a Kafka call for up to a minute: do not wait for it.
        stopper.join(timeout=max(0.0, min(deadline - time.monotonic() - 4, 1.5 if broker_lost else 5)))
    stuck = sum(s.is_alive() for s in stoppers)
    losses = stop_all(timeout=max(0.5, min(2.0 if broker_lost else 3.0, deadline - time.monotonic() - 2)))
    folders = _remove_folders()
    made = list(dict.fromkeys(_left_topics + _made_topics))
    _made_topics.clear()
    _left_topics.clear()
    reentry.forget(made, ())  # the notebook's next cells that read them say so in one line
    left: list[str] = []
    deleted = 0
    later = "the next kernel's setup()" if at_exit else "the next setup() or cleanup() once it answers again"
    if made and broker_lost:
        # Never start a broker the learner stopped, nor wait on one that is gone: the next setup() or cleanup()
        # deletes them once it answers, and their names carry this kernel's token, so if it dies first, the next
        # kernel's setup() does.
        _left_topics[:] = made
        left.append(f"{_count(len(made), 'topic')} on the broker, which is not answering (deleted by {later})")
    elif made:
        failed = _topics.delete_within(made, _bootstrap[0], max(1.0, deadline - time.monotonic()))
        deleted = len(made) - len(failed)
        if failed:
            _left_topics[:] = failed
            left.append(f"{_count(len(failed), 'topic')} the broker did not delete in time (deleted by "
                        f"{later.replace(' once it answers again', '')})")
    if stuck:
        left.append(f"{stuck} quer{'y' if stuck == 1 else 'ies'} still stopping (marked stopped; the thread ends "
                    "by itself once its Kafka call returns)")
    left += losses
    said = (f"stopped {len(queries)} queries and every background producer, deleted {deleted} topics and "
            f"{folders} checkpoint folders")
    return said + (f"; left: {'; '.join(left)}" if left else "; nothing left")


def _stop_quietly(query) -> None:
    try:
        query.stop()
    except Exception:
        pass  # a stop timeout: the query is already marked stopped and its thread ends by itself


def _at_exit() -> None:
    """At the kernel's exit: what cleanup() does, within seconds; never starts a broker the learner stopped."""
    if not (_made_topics or _left_topics or _made_folders or _bootstrap):
        return
    said = _finish(None, CLEANUP_S, at_exit=True)
    if "left:" in said and "nothing left" not in said:
        print(f"streamlab at exit: {said}", file=sys.stderr)


def _leave_broker() -> None:
    """At the kernel's exit: this kernel no longer counts as a user of the lab's own broker."""
    from streamlab.lab.broker import external_bootstrap, remove_user

    if _bootstrap and not external_bootstrap():
        remove_user()


def _close_sink_producers() -> None:
    """At the kernel's exit: the offline sink's cached producers, if this kernel wrote with the offline engine."""
    sink = sys.modules.get("streamlab.offline.sink")  # not imported: nothing to close (and nothing to import)
    if sink is not None:
        sink.close_producers()


def _remove_jvm_folder() -> None:
    """At the kernel's exit, last: the driver JVM's temporary folder (stopping queries can write into it again)."""
    from streamlab.lab.session import remove_jvm_folder

    remove_jvm_folder()


teardown.register("queries, topics and folders", _at_exit)
teardown.register("offline sink producers", _close_sink_producers)
teardown.register("broker user", _leave_broker)
teardown.register("jvm folder", _remove_jvm_folder)
