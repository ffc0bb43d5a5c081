"""The notebook life cycle: the one setup cell, what this kernel makes for a lesson, and the cleanup at the end.

This module keeps the kernel's own registries (the topics and checkpoint folders it made, the broker it uses) and
the functions that read or change them: setup(), new_topic(), new_checkpoint(), check_broker(), sweep_orphans(),
cleanup(), and the exit steps it registers in the kernel's teardown (streamlab.lab.teardown). Other modules reach
the registries only through chosen_bootstrap(), track_topic() and untrack(); tests patch them by this address
(`lifecycle._made_topics`, `lifecycle._bootstrap`). The other
concerns it held live beside it and are re-exported here, so `from streamlab.lab.lifecycle import ...` keeps working:
- the broker watch, a thread that says in one line what went wrong: streamlab.lab.watch;
- the lines that explain a failed query (a topic gone, a bad option, a broker that never answers): .diagnose;
- the query guard, the patch that makes a wait on a stopped query return with that line: .guard;
- what kernels that are gone left behind (their folders and topics): .orphans.
"""
from __future__ import annotations

import os
import sys
import threading
import time

from streamlab.lab import teardown, topics as _topics
from streamlab.lab.broker import ensure_broker, probe
from streamlab.errors import LabError
from streamlab.lab.session import chosen_engine, engine, spark
from streamlab.course.variants import variant
from streamlab.settings import settings
# The concerns that lived here, re-exported: notebooks, tests and streamlab.patches import them from this module.
from streamlab.lab.diagnose import (bad_option, explain_failure, kafka_sources, missing_topic,  # noqa: F401
                                    unreachable, unwritable_checkpoint)
from streamlab.lab.guard import query_guard  # noqa: F401 - its address in streamlab.patches
from streamlab.lab.orphans import count, orphaned_folders, remove_orphaned_folders, sweep  # noqa: F401
from streamlab.lab.watch import BrokerWatch, guard_queries as _guard_queries, stop_quietly  # noqa: F401

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
    if cluster and settings.kafka_bootstrap:
        # The grader's kernel, a workshop's server or a team's lab: their Kafka is another's, and the cluster demos
        # kill the lab's own brokers and executors, so nothing is started (module 9's demos then say they need it).
        if settings.grading:
            print("cluster   not started while grading (the graded checks need no cluster)")
        else:
            print(f"cluster   not started: the lab uses {settings.kafka_bootstrap} (KAFKA_BOOTSTRAP); "
                  "the cluster demos need `make lab CLUSTER=1`")
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


def chosen_bootstrap() -> str | None:
    """The broker this kernel's lab uses, once setup() or new_topic() chose it; None before."""
    return _bootstrap[0] if _bootstrap else None


def track_topic(name: str) -> None:
    """Count topic `name`, made without new_topic(), as this notebook's: cleanup() deletes it."""
    _made_topics.append(name)


def untrack(topics=(), folders=()) -> None:
    """Forget topics and checkpoint folders their maker deleted itself: cleanup() no longer deletes them."""
    for name in topics:
        if name in _made_topics:
            _made_topics.remove(name)
    for folder in folders:
        if folder in _made_folders:
            _made_folders.remove(folder)


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


def sweep_orphans(bootstrap: str | None = None, timeout: float = 5.0) -> str:
    """Delete the topics and checkpoint folders of kernels that are gone (killed, out of memory, a check that
    timed out: no exit handler ran), and the topics an earlier cleanup() of this kernel had to leave on a broker
    that was not answering; say what was deleted ('' when nothing)."""
    return sweep(bootstrap or chosen_bootstrap(), _left_topics, timeout)


def _use_broker() -> None:
    """Count this kernel as a user of the lab's broker, so a lab's Ctrl-C does not stop it under us."""
    from streamlab.lab.broker import add_user, external_bootstrap

    if not external_bootstrap():
        try:
            add_user()  # quietly nothing where the broker's folder is read-only
        except LabError:
            pass  # a $STREAMLAB_BROKER_PORT that is not a port: ensure_broker() said so already


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
        except Exception:  # noqa: BLE001 - teardown: a JVM that is gone (at exit) means no query to stop
            session = None
    try:
        queries = list(session.streams.active) if session is not None else []
    except Exception:  # noqa: BLE001 - teardown: a session stopped or a gateway gone has no query to stop
        queries = []
    broker_lost = bool(_bootstrap) and probe(_bootstrap[0], timeout=1.0) != "kafka"
    stoppers = [threading.Thread(target=stop_quietly, args=(q,), daemon=True) for q in queries]
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
        left.append(f"{count(len(made), 'topic')} on the broker, which is not answering (deleted by {later})")
    elif made:
        failed = _topics.delete_within(made, _bootstrap[0], max(1.0, deadline - time.monotonic()))
        deleted = len(made) - len(failed)
        if failed:
            _left_topics[:] = failed
            left.append(f"{count(len(failed), 'topic')} the broker did not delete in time (deleted by "
                        f"{later.replace(' once it answers again', '')})")
    if stuck:
        left.append(f"{stuck} quer{'y' if stuck == 1 else 'ies'} still stopping (marked stopped; the thread ends "
                    "by itself once its Kafka call returns)")
    left += losses
    said = (f"stopped {len(queries)} queries and every background producer, deleted {deleted} topics and "
            f"{folders} checkpoint folders")
    return said + (f"; left: {'; '.join(left)}" if left else "; nothing left")


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
