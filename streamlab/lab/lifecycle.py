"""The notebook life cycle: the one setup cell, topics made for a lesson, and the cleanup at the end."""
from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from pathlib import Path

from streamlab.lab import topics as _topics
from streamlab.lab.broker import ensure_broker, probe
from streamlab.errors import LabError
from streamlab.lab.session import chosen_engine, engine, spark
from streamlab.course.variants import variant

_made_topics: list[str] = []
_made_folders: list[str] = []
_bootstrap: list[str] = []

ENGINE_NOTES = {
    "connector": "Spark's own spark-sql-kafka-0-10 connector",
    "offline": "streamlab's offline fallback (noida-db and a re-creation of the connector on Spark's Python "
               "Data Source API)",
}


def setup():
    """Start or reuse the broker and Spark, print one line about each, and return (spark, bootstrap)."""
    bootstrap = ensure_broker()
    _bootstrap[:] = [bootstrap]
    session = spark()
    kind = engine(session)
    why = chosen_engine()[1]
    print(f"broker    {bootstrap}")
    print(f"spark     {session.version} (local[2])")
    print(f"engine    {kind}: {ENGINE_NOTES[kind]}" + (f" ({why})" if kind == "offline" else ""))
    mine = variant()
    print(f"variant   {mine.seed} (the numbers of your exercises; streamlab.new_variant() draws others)")
    BrokerWatch.start_for(session, bootstrap)
    return session, bootstrap


class BrokerWatch(threading.Thread):
    """Stops the session's queries within seconds when the broker stops answering, and says so in one line.

    Without it, Spark's connector waits on the lost broker: a query hangs with no batch and no error, or fails
    a minute later with a long Java trace. In a notebook the line is printed at the end of the running cell
    (IPython's post_run_cell event), so it lands where the learner is looking.
    """

    INTERVAL_S = 1.0
    MISSES = 3
    _current: "BrokerWatch | None" = None

    def __init__(self, session, bootstrap: str):
        super().__init__(name="streamlab-broker-watch", daemon=True)
        self.session, self.bootstrap = session, bootstrap
        self.lost: str | None = None
        self._reported = False
        self._done = threading.Event()

    @classmethod
    def start_for(cls, session, bootstrap: str) -> "BrokerWatch":
        """Watch `bootstrap` for `session` (replacing an earlier watch, as a re-run setup cell does)."""
        if cls._current is not None:
            cls._current.stop()
        cls._current = watch = cls(session, bootstrap)
        watch.start()
        shell = _ipython()
        if shell is not None:
            shell.events.register("post_run_cell", watch._report)
        return watch

    def stop(self) -> None:
        """Stop watching."""
        self._done.set()
        shell = _ipython()
        if shell is not None:
            try:
                shell.events.unregister("post_run_cell", self._report)
            except ValueError:
                pass

    def run(self) -> None:
        misses = 0
        while not self._done.wait(self.INTERVAL_S):
            try:
                active = list(self.session.streams.active)
            except Exception:
                return  # the session was stopped
            if not active or probe(self.bootstrap, timeout=1.0) == "kafka":
                misses = 0
                continue
            misses += 1
            if misses < self.MISSES:
                continue
            self.lost = (f"The Kafka broker at {self.bootstrap} stopped answering, so streamlab stopped "
                         f"{len(active)} running quer{'y' if len(active) == 1 else 'ies'}. Start it again "
                         "(`python -m streamlab broker start` in a terminal, or re-run the setup cell), "
                         "then re-run the cell.")
            self._reported = False
            if _ipython() is None:
                print(f"⚠️  {self.lost}", file=sys.stderr, flush=True)
                self._reported = True
            for query in active:
                try:
                    # Returns once the query is marked stopped; its thread may still sit in a Kafka call that
                    # Spark runs uninterruptibly (up to the client's 60 s API timeout), bounded by stopTimeout.
                    query.stop()
                except Exception:
                    pass
            misses = 0

    def _report(self, *_args) -> None:
        if self.lost and not self._reported:
            self._reported = True
            print(f"⚠️  {self.lost}")


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


def new_topic(prefix: str = "lab", partitions: int = 1) -> str:
    """A fresh topic for this notebook, deleted by cleanup()."""
    if not _bootstrap:
        _bootstrap.append(ensure_broker())
    name = _topics.create_topic(_topics.unique_name(prefix), partitions, _bootstrap[0])
    _made_topics.append(name)
    return name


def new_checkpoint(prefix: str = "checkpoint") -> str:
    """A fresh temporary folder (a query's checkpoint location), deleted by cleanup() and when the kernel exits."""
    import tempfile

    if not _made_folders:
        remove_orphaned_folders()
    # The kernel's pid in the name lets a later kernel delete what this one leaves if it is killed mid-demo
    # (a restart gives a busy kernel only a few seconds before SIGKILL, so its exit handlers may never run).
    folder = tempfile.mkdtemp(prefix=f"streamlab-{prefix}-{os.getpid()}-")
    _made_folders.append(folder)
    return folder


def remove_orphaned_folders() -> int:
    """Delete checkpoint folders left by kernels that were killed (their pid no longer runs); return how many."""
    import re
    import shutil
    import tempfile

    gone = 0
    for folder in Path(tempfile.gettempdir()).glob("streamlab-*-*-*"):
        match = re.fullmatch(r"streamlab-.+-(\d+)-[a-z0-9_]{8}", folder.name)
        if not match or not folder.is_dir() or int(match[1]) == os.getpid() or _pid_runs(int(match[1])):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        gone += 1
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

    made = list(_made_folders)
    _made_folders.clear()
    gone = 0
    for folder in made:
        if os.path.isdir(folder):  # what a caller removed already is not counted as deleted here
            shutil.rmtree(folder, ignore_errors=True)
            gone += 1
    return gone


def cleanup(session=None) -> str:
    """Stop every streaming query and background producer, delete this notebook's topics; say what was done."""
    from pyspark.sql import SparkSession

    from streamlab.lab.producer import stop_all

    session = session or SparkSession.getActiveSession()
    queries = list(session.streams.active) if session is not None else []
    broker_lost = bool(_bootstrap) and probe(_bootstrap[0], timeout=1.0) != "kafka"
    stoppers = [threading.Thread(target=_stop_quietly, args=(q,), daemon=True) for q in queries]
    for stopper in stoppers:
        stopper.start()
    for stopper in stoppers:
        # With the broker gone, a query's thread may sit in a Kafka call for up to a minute: do not wait for it.
        stopper.join(timeout=3.0 if broker_lost else None)
    stop_all()
    folders = _remove_folders()
    gone = list(_made_topics)
    _made_topics.clear()
    if gone and broker_lost:
        # Never start a broker the learner stopped, nor wait on one that is gone: the topics have unique names.
        return (f"stopped {len(queries)} queries and every background producer, deleted {folders} checkpoint "
                f"folders; the broker is not answering, so {len(gone)} topics were left on it")
    if gone:
        _topics.delete_topic(*gone, bootstrap=_bootstrap[0] if _bootstrap else None)
    return (f"stopped {len(queries)} queries and every background producer, deleted {len(gone)} topics and "
            f"{folders} checkpoint folders")


def _stop_quietly(query) -> None:
    try:
        query.stop()
    except Exception:
        pass  # a stop timeout: the query is already marked stopped and its thread ends by itself


@atexit.register
def _at_exit() -> None:
    # Only on a broker that still answers: an exit handler must never start a broker the learner stopped.
    from streamlab.lab.broker import probe

    _remove_folders()
    try:
        if _made_topics and _bootstrap and probe(_bootstrap[0], timeout=1.0) == "kafka":
            _topics.delete_topic(*_made_topics, bootstrap=_bootstrap[0])
    except Exception:
        pass  # the broker may go away while the kernel shuts down
