"""The broker watch: a thread that notices, within seconds, a Kafka broker that stopped answering or a query that
reads one that never answers, a topic that is gone or a bad option, and says it in one line in the running cell.

Without it, Spark's connector waits on a broker that is gone or was never there: a query hangs with no batch and no
error, or fails a minute later with a long Java trace. The lines it says are built in streamlab.lab.diagnose; the
query guard (streamlab.lab.guard, installed by `BrokerWatch.start_for`) makes a call waiting on a query the watch
stopped return with that line.
"""
from __future__ import annotations

import sys
import threading

from streamlab.lab.broker import probe_all
from streamlab.lab.diagnose import (bad_option, explain_failure, kafka_sources, label, missing_topic,
                                    missing_topics, query_errors, same_servers, unreachable)


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
        shell = ipython()
        if shell is not None:
            shell.events.register("pre_run_cell", watch._cell_starts)
            shell.events.register("post_run_cell", watch._cell_ends)
            watch._in_cell = True  # setup() itself runs in a cell
        guard_queries()
        watch.start()
        return watch

    @classmethod
    def stopped_by_watch(cls, query) -> str | None:
        """The line saying why the watch stopped `query`, or None when it did not."""
        if not cls._stopped:
            return None
        try:
            return cls._stopped.get(str(query.id))
        except query_errors():
            return None

    def stop(self) -> None:
        """Stop watching."""
        self._done.set()
        shell = ipython()
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
            except Exception:  # noqa: BLE001 - another module's listener must not silence the watch's own line
                pass
        if event in ("broker up",) or quiet:
            return
        if ipython() is None:
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
            except query_errors():
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
            except query_errors():
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
            ours = same_servers(servers, self.bootstrap)
            if ours:
                if self.lost.is_set():
                    self._stop_query(qid, query, f"The Kafka broker at {self.bootstrap} stopped answering, so "
                                     f"streamlab stopped {label(query)}. Start it again (`python -m streamlab "
                                     "broker start` in a terminal, or re-run the setup cell), then re-run the cell.")
                    return
                answering = not self._lab_misses
            else:
                states = probe_all(servers, timeout=1.0)
                answering = "kafka" in states.values()
            if not self._count(qid, "servers", not answering):
                if not ours:
                    self._stop_query(qid, query, unreachable(servers, states, self.bootstrap, label(query)))
                    return
                continue
            missing = missing_topics(source, servers) if answering else []
            if not self._count(qid, "topics", bool(missing), self.TOPIC_MISSES):
                self._stop_query(qid, query, missing_topic(missing, servers, label(query)))
                return

    def _count(self, qid: str, what: str, miss: bool, limit: int | None = None) -> bool:
        """False once `what` has missed `limit` looks in a row."""
        key = (qid, what)
        self._misses[key] = self._misses.get(key, 0) + 1 if miss else 0
        return self._misses[key] < (limit or self.MISSES)

    def _stop_query(self, qid: str, query, message: str) -> None:
        type(self)._stopped[qid] = message
        threading.Thread(target=stop_quietly, args=(query,), daemon=True, name="streamlab-watch-stop").start()
        self._say("query stopped", message, quiet=bool(self._awaited.get(qid)))

    def _ended(self, qid: str, query) -> None:
        """A query that ended by itself: if it failed on a topic that is gone or a bad option, say so in a line
        (unless a call waits on it: awaitTermination / processAllAvailable raise that line themselves)."""
        if qid in self._stopped or qid in self._said or self._awaited.get(qid) or qid in self._raised:
            return
        self._said.add(qid)
        try:
            exc = query.exception()
        except query_errors():
            return
        if exc is None:
            return
        line = explain_failure(query, exc)
        if line and line not in self._noticed.get(qid, ()):
            self._say("notice", line)


def stop_quietly(query) -> None:
    """Stop `query` without raising: the watch and cleanup() stop queries whose broker may be gone."""
    try:
        query.stop()
    except Exception:  # noqa: BLE001 - a stop timeout or a gateway gone: the query is marked stopped either way
        pass  # and its thread ends by itself once its Kafka call returns


def ipython():
    """The running IPython shell, or None (a plain Python process, or no IPython installed)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def guard_queries() -> None:
    """awaitTermination / processAllAvailable return at once, with the watch's line, for a query the watch stopped;
    stop() on it returns at once (its thread may still sit in a Kafka call for a minute)."""
    from streamlab import patches

    patches.install("query-guard")
