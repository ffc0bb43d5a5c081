"""Faults under a running query, as a learner meets them in a cell: a typo in their own bootstrap servers, a topic
missing or deleted, a cap of 0, -1 or "abc", the broker killed, a kernel that dies with its topics, the notebook's
last cell (cleanup()) with a background producer running while the broker is killed or restarted. Each gives one
line naming the cause and the fix within seconds, in the call that waits (awaitTermination / processAllAvailable /
cleanup), following the advice works, and nothing is left (topics, folders, threads, processes).

One Spark session serves every case (a script run once, each case a JSON line), so the suite stays lean.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from faultkit import ROOT, processes_of
from streamlab.lab import broker

pytestmark = [pytest.mark.broker, pytest.mark.spark, pytest.mark.timeout(900)]
BOUND_S = 20  # "within 10 s" as the issue asks, measured generously for a loaded 2-core CI machine

SCRIPT = r'''
import contextlib, io, json, os, signal, subprocess, sys, tempfile, threading, time
from pathlib import Path
import streamlab
from streamlab.errors import LabError
from streamlab.lab import lifecycle as lab, owners, topics, broker
from streamlab.lab.producer import BackgroundProducer, produce

T0 = time.monotonic()

def report(case, **values):
    """One JSON line per case, with the seconds the case took (since the previous report)."""
    global T0
    now = time.monotonic()
    print(json.dumps({"case": case, "case_s": now - T0, **values}), flush=True)
    T0 = now

def kill_broker():
    """kill -9 the broker (its whole process group), and wait until its port is closed."""
    os.killpg(int((broker.data_dir() / "broker.pid").read_text()), signal.SIGKILL)
    deadline = time.monotonic() + 10
    while broker.probe(bootstrap, timeout=0.5) != "closed" and time.monotonic() < deadline:
        time.sleep(0.1)

def timed_cleanup():
    """(cleanup()'s line, the exception's type name or None, seconds): the notebook's last cell."""
    started = time.monotonic()
    try:
        return lab.cleanup(session), None, time.monotonic() - started
    except Exception as exc:
        return str(exc), type(exc).__name__, time.monotonic() - started

def timed_setup():
    """What setup() printed (a re-run of the setup cell: the session is reused)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        streamlab.setup()
    return out.getvalue()

def producer_threads():
    """The threads of background producers and their kafka-python clients still alive."""
    return sorted(t.name for t in threading.enumerate()
                  if t.name.startswith("BackgroundProducer(") or "producer" in t.name.lower())

def my_folders():
    """Checkpoint folders of this process left in the temporary folder (not its Spark JVM's, which lives as long)."""
    return sorted(p.name for p in Path(tempfile.gettempdir()).glob(f"streamlab-*-{os.getpid()}-*")
                  if not p.name.startswith("streamlab-jvm-"))

def my_topics():
    """Topics on the broker made by this process (lab.new_topic names carry its owner token)."""
    return [t for t in topics.list_topics(bootstrap) if owners.owner_of(t) == owners.my_token()]

def feeding(prefix):
    """A topic, a background producer sending 200 records/s to it (delivered some), and a checkpoint folder."""
    name = lab.new_topic(prefix, 1)
    producer = BackgroundProducer(name, rate=200, bootstrap=bootstrap).start()
    folder = lab.new_checkpoint()
    deadline = time.monotonic() + 30
    while producer.delivered < 100 and time.monotonic() < deadline:
        time.sleep(0.1)
    return name, producer, folder

def counts(producer):
    return {"running": producer.running, "sent": producer.sent, "delivered": producer.delivered,
            "failed": producer.failed, "pending": producer.pending}

def waited(call):
    """(the LabError's line or None, seconds) of a call that waits on a query."""
    started = time.monotonic()
    try:
        call()
        return None, time.monotonic() - started
    except LabError as exc:
        return str(exc), time.monotonic() - started
    except Exception as exc:
        return "OTHER " + type(exc).__name__ + ": " + str(exc)[:300], time.monotonic() - started

def reader(servers, topic, **options):
    r = session.readStream.format("kafka").option("kafka.bootstrap.servers", servers).option("subscribe", topic)
    for k, v in options.items():
        r = r.option(k, v)
    return r.option("startingOffsets", "earliest").load()

session, bootstrap = streamlab.setup()
topic = lab.new_topic("faults", 1)
produce(topic, 50, bootstrap=bootstrap)

# 1-2. A learner's own bootstrap servers that nothing answers: a closed port, an unknown host.
for case, servers in (("typo_port", "127.0.0.1:1"), ("unknown_host", "no-such-host.invalid:9092")):
    q = reader(servers, topic).writeStream.format("noop").queryName(case).start()
    line, seconds = waited(lambda: q.awaitTermination(120))
    again = time.monotonic()
    q.stop()  # what a re-run cell does first: returns at once
    report(case, line=line, seconds=seconds, stop_s=time.monotonic() - again)

# ... and following the advice works: the same cell with the lab's bootstrap reads the 50 records.
q = reader(bootstrap, topic).writeStream.format("memory").queryName("fixed").start()
q.processAllAvailable()
report("advice_works", rows=session.sql("select count(*) from fixed").first()[0])
q.stop()

# 3. A topic that does not exist (a typo in subscribe).
q = reader(bootstrap, "no-such-topic-" + topic).writeStream.format("noop").start()
line, seconds = waited(lambda: q.awaitTermination(120))
report("missing_topic", line=line, seconds=seconds, topic="no-such-topic-" + topic)

# 4. A topic deleted under a running query.
doomed = lab.new_topic("doomed", 1)
produce(doomed, 20, bootstrap=bootstrap)
q = reader(bootstrap, doomed).writeStream.format("noop").trigger(processingTime="1 second").start()
q.processAllAvailable()
from kafka import KafkaAdminClient
admin = KafkaAdminClient(bootstrap_servers=bootstrap)
admin.delete_topics([doomed])
admin.close()
line, seconds = waited(lambda: q.awaitTermination(120))
report("deleted_topic", line=line, seconds=seconds, topic=doomed)

# ... and following the line: make the topic again (re-run the cell that makes it), re-run the query's cell.
again = time.monotonic()
q.stop()
stop_s = time.monotonic() - again
gone = doomed
doomed = lab.new_topic("doomed", 1)
produce(doomed, 20, bootstrap=bootstrap)
q = reader(bootstrap, doomed).writeStream.format("memory").queryName("doomed_again").start()
error, _ = waited(q.processAllAvailable)
rows = session.sql("select count(*) from doomed_again").first()[0]
q.stop()
report("deleted_topic_made_again", stop_s=stop_s, error=error, rows=rows, new=doomed, gone=gone)

# 5-6. maxOffsetsPerTrigger of 0 and -1: Spark's own behaviour (no records at all), and the lab's line about it.
for cap in ("0", "-1"):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        q = reader(bootstrap, topic, maxOffsetsPerTrigger=cap).writeStream.format("noop").trigger(processingTime="500 milliseconds").start()
        started = time.monotonic()
        while "maxOffsetsPerTrigger" not in err.getvalue() and time.monotonic() - started < 30:
            time.sleep(0.2)
        said_after = time.monotonic() - started
        time.sleep(3)
        rows = sum(p["numInputRows"] for p in q.recentProgress)
        failed = q.exception()
        q.stop()
    report("cap_" + cap, said=err.getvalue().strip(), seconds=said_after, rows=rows, batches=len(q.recentProgress),
           failed=None if failed is None else str(failed)[:300])

# 7. maxOffsetsPerTrigger "abc": Spark's NumberFormatException names no option; the lab's line does.
q = reader(bootstrap, topic, maxOffsetsPerTrigger="abc").writeStream.format("noop").start()
line, seconds = waited(lambda: q.awaitTermination(120))
report("cap_abc", line=line, seconds=seconds)

# 7b. A checkpoint folder that cannot be made (root may write anywhere, so a path under a file and one in /proc).
for case, folder in (("checkpoint_under_a_file", "/etc/hostname/ck"), ("checkpoint_unwritable", "/proc/streamlab-ck")):
    before = len(session.streams.active)
    line, seconds = waited(lambda: reader(bootstrap, topic).writeStream.format("noop")
                           .option("checkpointLocation", folder).start())
    report(case, line=line, seconds=seconds, started=len(session.streams.active) - before)

# 8. Two other kernels, each with two topics and a checkpoint folder; one is killed with kill -9 (no exit handler
#    runs), the other still runs. The next setup() deletes what the killed one left, and nothing of the live one.
KERNEL = ("import sys\nfrom streamlab.lab import lifecycle as lab\n"
          "print(lab.new_topic('orphan'), lab.new_topic('orphan'), lab.new_checkpoint(), flush=True)\n"
          "sys.stdin.readline()\n")
dead, live = [subprocess.Popen([sys.executable, "-c", KERNEL], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True) for _ in range(2)]
made = {"dead": dead.stdout.readline().split(), "live": live.stdout.readline().split()}
dead.kill()  # SIGKILL, what `kill -9` sends
dead.wait()  # its parent (Jupyter's server) reaps it
listed = topics.list_topics(bootstrap)
before = {k: [x for x in v if x in listed or os.path.isdir(x)] for k, v in made.items()}
said = timed_setup()
listed = topics.list_topics(bootstrap)
after = {k: [x for x in v if x in listed or os.path.isdir(x)] for k, v in made.items()}
live.stdin.close()  # the live kernel ends as a kernel does: its own exit handler deletes what it made
live.wait(timeout=60)
report("orphans", made=made, before=before, after=after, setup=said)

# 9. The broker killed under a running query, then cleanup() with the broker down.
lost_ck = lab.new_checkpoint()
q = (reader(bootstrap, topic).writeStream.format("noop").option("checkpointLocation", lost_ck)
     .trigger(processingTime="1 second").queryName("lost").start())
q.processAllAvailable()
kill_broker()
line, seconds = waited(lambda: q.awaitTermination(120))
said, raised, cleanup_s = timed_cleanup()
report("lost_broker", line=line, seconds=seconds, cleanup=said, raised=raised, cleanup_s=cleanup_s,
       folders=my_folders(), watch_lost=lab.BrokerWatch.lost.is_set(), closed=broker.probe(bootstrap) == "closed")

# ... following the advice: start the broker again, re-run the cell: it works, and the old query's stop() is quick.
broker.ensure_broker()
again = time.monotonic()
q.stop()
stop_s = time.monotonic() - again
rerun_ck = lab.new_checkpoint()
q2 = (reader(bootstrap, topic).writeStream.format("memory").option("checkpointLocation", rerun_ck).queryName("rerun")
      .start())
q2.processAllAvailable()
rows = session.sql("select count(*) from rerun").first()[0]
said, raised, cleanup_s = timed_cleanup()
report("rerun_after_restart", rows=rows, stop_s=stop_s, cleanup=said, raised=raised, cleanup_s=cleanup_s,
       left=my_topics(), folders=my_folders())

# 9b. Issue 17's worst case 3, the broker restarted: a background producer sends to its topic (a checkpoint folder
#     made too), the broker is killed with kill -9 and started again, then the notebook's last cell runs cleanup().
feed, producer, folder = feeding("feed")
kill_broker()
broker.ensure_broker()  # seconds in which the producer keeps sending: its records wait for the broker
said, raised, cleanup_s = timed_cleanup()
threads = producer_threads()
report("producer_restarted", cleanup=said, raised=raised, cleanup_s=cleanup_s, threads=threads,
       folders=my_folders(), left=my_topics(), **counts(producer))

# 9c. The same with the broker killed and not started again: cleanup() leaves the topic and says so; after the
#     broker is back, the next setup() deletes it.
feed, producer, folder = feeding("feed")
kill_broker()
time.sleep(2)
said, raised, cleanup_s = timed_cleanup()
threads = producer_threads()
report("producer_broker_killed", cleanup=said, raised=raised, cleanup_s=cleanup_s, threads=threads,
       folders=my_folders(), topic=feed, closed=broker.probe(bootstrap) == "closed", **counts(producer))
broker.ensure_broker()
said = timed_setup()
report("setup_after_broker_back", setup=said, left=my_topics(), topic=feed)

# 10. The exit handler with the broker gone and a query running: the parent times it.
topic2 = lab.new_topic("exit", 1)
q3 = reader(bootstrap, topic2).writeStream.format("noop").start()
lab.new_checkpoint()
os.killpg(int((broker.data_dir() / "broker.pid").read_text()), signal.SIGKILL)
report("exiting")
'''


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """Run the script once on a broker of its own: {case: what it reported}, plus the run's stderr and exit time."""
    import time

    from faultkit import free_port, wipe

    port = free_port()
    broker.data_dir(port, "kafka").mkdir(parents=True, exist_ok=True)
    tmp = tmp_path_factory.mktemp("query-faults")
    script = tmp / "faults.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "KAFKA_BOOTSTRAP": "", "STREAMLAB_BROKER_PORT": str(port), "TMPDIR": str(tmp)}
    proc = subprocess.Popen([sys.executable, str(script)], env=env, cwd=ROOT, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    found, exit_s = {}, None
    try:
        for raw in proc.stdout:
            if raw.startswith("{"):
                entry = json.loads(raw)
                found[entry["case"]] = entry
                if entry["case"] == "exiting":
                    started = time.monotonic()
                    break
        _, err = proc.communicate(timeout=600)
        if "exiting" in found:
            exit_s = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    found["_stderr"], found["_exit_s"], found["_returncode"] = err, exit_s, proc.returncode
    found["_tmp"] = tmp
    yield found
    wipe(port)
    assert not processes_of(broker.data_dir(port, "kafka"))


def _case(cases, name):
    if name not in cases:
        pytest.fail(f"the script did not reach case {name!r}: {cases['_stderr'][-3000:]}")
    return cases[name]


@pytest.mark.parametrize("name, says", [("typo_port", "nothing answers at 127.0.0.1:1"),
                                         ("unknown_host", "the host 'no-such-host.invalid' is not known")])
def test_a_query_whose_own_bootstrap_servers_do_not_answer(cases, name, says):
    """A typo in the learner's own kafka.bootstrap.servers: awaitTermination returns with one line naming the option
    and the lab's broker, within seconds (it hung silently for 115 s+); stopping the query again is instant."""
    case = _case(cases, name)
    assert case["line"] and says in case["line"] and 'option("kafka.bootstrap.servers", bootstrap)' in case["line"], case
    assert "\n" not in case["line"]
    assert case["seconds"] < BOUND_S, f"the line came after {case['seconds']:.1f} s"
    assert case["stop_s"] < 5, f"stop() after the watch stopped it took {case['stop_s']:.1f} s"


def test_following_the_advice_works(cases):
    """The same query with the lab's bootstrap reads the 50 records."""
    assert _case(cases, "advice_works")["rows"] == 50


@pytest.mark.parametrize("name", ["missing_topic", "deleted_topic"])
def test_a_topic_missing_or_deleted_under_a_query(cases, name):
    """subscribe names a topic that is not there, or that is deleted while the query runs: the learner relies on
    one line, within seconds, naming that topic and the fix (it was named only inside a 53-line plan)."""
    case = _case(cases, name)
    line = case["line"]
    assert line and f"topic {case['topic']!r} does not exist on" in line, case
    assert "streamlab.new_topic(" in line and "re-run the cell" in line and "\n" not in line, case
    assert case["seconds"] < BOUND_S, f"the line came after {case['seconds']:.1f} s"


def test_making_a_deleted_topic_again_as_the_line_says_works(cases):
    """After that line, the learner does what it says: stops the old query (at once), makes the topic again with
    streamlab.new_topic and re-runs the query's cell; they rely on it reading the new topic's records."""
    case = _case(cases, "deleted_topic_made_again")
    assert case["stop_s"] < 5, f"stop() of the query the watch stopped took {case['stop_s']:.1f} s"
    assert case["error"] is None and case["rows"] == 20, case


def test_a_cap_of_zero_reads_nothing_and_is_named(cases):
    """Spark's own behaviour, taught in module 5: maxOffsetsPerTrigger=0 reads no record and raises nothing (each
    partition's share rounds to 0: KafkaMicroBatchStream.rateLimit); the lab says so, once, within seconds."""
    case = _case(cases, "cap_0")
    assert case["failed"] is None and case["rows"] == 0, case
    assert case["said"].count("maxOffsetsPerTrigger=0: Spark reads NO records") == 1, case
    assert case["seconds"] < BOUND_S


def test_a_negative_cap_reads_nothing_or_fails_as_data_loss_and_is_named(cases):
    """maxOffsetsPerTrigger=-1 on one partition with data: the share is -1, the planned end falls before the start,
    and Spark fails the query with its data-loss error though nothing was lost (rateLimit's ceil(-1.0) = -1,
    then reportDataLoss): the lab names the cap, once, within seconds."""
    case = _case(cases, "cap_-1")
    assert case["rows"] == 0 and (case["failed"] is None or "data may have been lost" in case["failed"]), case
    assert case["said"].count("maxOffsetsPerTrigger=-1: a negative cap") == 1, case
    assert case["seconds"] < BOUND_S


def test_a_cap_that_is_not_a_number_is_named(cases):
    """maxOffsetsPerTrigger "abc": Spark's NumberFormatException does not name the option; the line does."""
    case = _case(cases, "cap_abc")
    assert case["line"] and "maxOffsetsPerTrigger='abc' is not a whole number" in case["line"], case
    assert case["seconds"] < BOUND_S


@pytest.mark.parametrize("name, folder", [("checkpoint_under_a_file", "/etc/hostname"),
                                          ("checkpoint_unwritable", "/proc/streamlab-ck")])
def test_a_checkpoint_folder_that_cannot_be_written_is_named(cases, name, folder):
    """A learner's checkpointLocation that cannot be made: one line naming the folder and the fix, no query."""
    case = _case(cases, name)
    assert case["line"] and f"checkpoint folder ({folder})" in case["line"], case
    assert "streamlab.new_checkpoint()" in case["line"] and case["seconds"] < BOUND_S and case["started"] == 0, case


def test_setup_sweeps_a_killed_kernel_s_topics_and_folder_and_leaves_a_live_one_s(cases):
    """A kernel killed with kill -9 (a restart of a busy kernel, out of memory) runs no exit handler: the learner
    relies on the next setup() deleting its two topics and its checkpoint folder and saying so, and on it leaving
    alone the topics and folder of another kernel that still runs."""
    case = _case(cases, "orphans")
    made, before, after = case["made"], case["before"], case["after"]
    assert len(made["dead"]) == 3 and before == made, case  # two topics and a folder each, there before setup()
    assert after["dead"] == [], f"setup() left what the killed kernel made: {after['dead']}"
    assert after["live"] == made["live"], f"setup() deleted what a live kernel uses: {case}"
    swept = [line for line in case["setup"].splitlines() if line.startswith("swept")]
    assert swept and "2 topics and 1 checkpoint folder left by kernels that are gone" in swept[0], case["setup"]


def test_a_broker_lost_under_a_query(cases):
    """kill -9 of the broker under a query: awaitTermination returns with one line naming the fix within seconds
    (it sat out its 120 s); cleanup() returns within seconds and says what it left."""
    case = _case(cases, "lost_broker")
    assert case["line"] and "stopped answering" in case["line"] and "broker start" in case["line"], case
    assert case["seconds"] < BOUND_S, f"the line came after {case['seconds']:.1f} s"
    assert case["raised"] is None and case["cleanup_s"] < BOUND_S, case
    assert "left:" in case["cleanup"] and "not answering" in case["cleanup"], case
    assert case["folders"] == [], f"cleanup() left the query's checkpoint folder: {case['folders']}"
    assert case["watch_lost"] and case["closed"], "cleanup() started the broker again"


def test_re_running_after_the_broker_is_back(cases):
    """Start the broker, re-run the cell: stop() of the old query is instant (no 'failed to stop within 15000
    ms'), the new query reads, and cleanup() after the restart returns within seconds, deleting every topic this
    kernel made (also those the earlier cleanup() had to leave) and every checkpoint folder."""
    case = _case(cases, "rerun_after_restart")
    assert case["stop_s"] < 5 and case["rows"] == 50, case
    assert case["raised"] is None and case["cleanup_s"] < BOUND_S, case
    assert "nothing left" in case["cleanup"] and "\n" not in case["cleanup"], case
    assert case["left"] == [], f"topics of this kernel left on the broker: {case['left']}"
    assert case["folders"] == [], f"checkpoint folders left: {case['folders']}"


def _leaves_no_producer(case):
    assert not case["running"] and case["threads"] == [], f"producer threads left: {case['threads']}"
    assert case["sent"] == case["delivered"] + case["failed"] and case["pending"] == 0, case
    assert case["folders"] == [], f"cleanup() left checkpoint folders: {case['folders']}"
    if case["failed"]:
        assert f"{case['failed']:,} of {case['sent']:,} records were NOT delivered" in case["cleanup"], case


def test_cleanup_with_a_producer_after_a_broker_restart(cases):
    """Issue 17's worst case 3 with the broker restarted: a background producer sends to its topic, the broker is
    killed with kill -9 and started again, then the last cell runs cleanup(). The learner relies on it returning
    within seconds with one line (it raised after 40-55 s), the topic deleted, no checkpoint folder and no producer
    thread left, and every record counted as delivered or, said in that line, not delivered."""
    case = _case(cases, "producer_restarted")
    assert case["raised"] is None and case["cleanup_s"] < BOUND_S, case
    assert "\n" not in case["cleanup"] and "deleted 1 topics and 1 checkpoint folders" in case["cleanup"], case
    assert case["left"] == [], f"topics left on the broker: {case['left']}"
    _leaves_no_producer(case)


def test_cleanup_with_a_producer_and_the_broker_killed(cases):
    """Issue 17's worst case 3: a background producer sends to its topic, the broker is killed with kill -9, then
    the last cell runs cleanup(). The learner relies on it returning within seconds (it raised after 40-55 s) with
    one line saying what it left: the topic, on a broker that is not answering, and the records not delivered; on
    no checkpoint folder and no producer thread being left; and on it not starting the broker again."""
    case = _case(cases, "producer_broker_killed")
    said = case["cleanup"]
    assert case["raised"] is None and case["cleanup_s"] < BOUND_S, case
    assert "\n" not in said and "left: 1 topic on the broker, which is not answering" in said, case
    assert "deleted by the next setup() or cleanup()" in said, case
    assert case["failed"] > 0 and "NOT delivered" in said, case  # it was sending when the broker died
    assert case["closed"], "cleanup() started the broker again"
    _leaves_no_producer(case)


def test_the_next_setup_deletes_the_topic_that_cleanup_left(cases):
    """Then the learner starts the broker again and re-runs the setup cell: they rely on setup() deleting the topic
    that cleanup() had to leave, and saying so."""
    case = _case(cases, "setup_after_broker_back")
    assert case["left"] == [], f"topics of this kernel still on the broker: {case['left']}"
    assert "swept     1 topic an earlier cleanup() left while the broker was not answering" in case["setup"], case


def test_the_exit_handler_with_the_broker_gone(cases):
    """The kernel exits with a query running, a topic and a folder, the broker killed: it ends within seconds,
    deletes its folders and says what it left."""
    assert cases["_exit_s"] is not None and cases["_exit_s"] < BOUND_S + 10, cases["_stderr"][-2000:]
    assert "streamlab at exit:" in cases["_stderr"] and "left:" in cases["_stderr"]
    assert not list(cases["_tmp"].glob("streamlab-*")), "checkpoint folders outlived the kernel"
    assert "Traceback" not in cases["_stderr"], cases["_stderr"][-3000:]


def test_each_line_is_said_once(cases):
    """A line raised by awaitTermination is not printed a second time by the watch."""
    err = cases["_stderr"]
    assert "A query failed: topic" not in err and "streamlab stopped query 'typo_port'" not in err, err[-3000:]
