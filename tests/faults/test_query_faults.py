"""Faults under a running query, as a learner meets them in a cell: a typo in their own bootstrap servers, a topic
missing or deleted, a cap of 0, -1 or "abc", the broker killed, a kernel that dies with its topics. Each gives one
line naming the cause and the fix within seconds, in the call that waits (awaitTermination / processAllAvailable),
following the advice works, and nothing is left (topics, folders, processes).

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
import json, os, signal, subprocess, sys, time
import streamlab
from streamlab.errors import LabError
from streamlab.lab import lifecycle as lab, topics, broker
from streamlab.lab.producer import produce

def report(case, **values):
    print(json.dumps({"case": case, **values}), flush=True)

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
report("missing_topic", line=line, seconds=seconds)

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
report("deleted_topic", line=line, seconds=seconds)

# 5-6. maxOffsetsPerTrigger of 0 and -1: Spark's own behaviour (no records at all), and the lab's line about it.
import io, contextlib
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

# 8. A kernel killed with its topics: the next setup() (sweep_orphans) deletes them.
child = subprocess.run([sys.executable, "-c", "import os\nfrom streamlab.lab import lifecycle as lab\n"
                        "print(lab.new_topic('orphan'), lab.new_topic('orphan'), flush=True)\nos._exit(9)"],
                       capture_output=True, text=True, timeout=120)
orphans = child.stdout.split()
listed = topics.list_topics(bootstrap)
said = lab.sweep_orphans(bootstrap)
report("orphans", made=orphans, listed_before=[t for t in orphans if t in listed], said=said,
       listed_after=[t for t in orphans if t in topics.list_topics(bootstrap)])

# 9. The broker killed under a running query, then cleanup() with the broker down.
q = reader(bootstrap, topic).writeStream.format("noop").trigger(processingTime="1 second").queryName("lost").start()
q.processAllAvailable()
os.killpg(int((broker.data_dir() / "broker.pid").read_text()), signal.SIGKILL)
line, seconds = waited(lambda: q.awaitTermination(120))
started = time.monotonic()
said = lab.cleanup(session)
report("lost_broker", line=line, seconds=seconds, cleanup=said, cleanup_s=time.monotonic() - started,
       watch_lost=lab.BrokerWatch.lost.is_set(), closed=broker.probe(bootstrap) == "closed")

# ... following the advice: start the broker again, re-run the cell: it works, and the old query's stop() is quick.
broker.ensure_broker()
again = time.monotonic()
q.stop()
stop_s = time.monotonic() - again
q2 = reader(bootstrap, topic).writeStream.format("memory").queryName("rerun").start()
q2.processAllAvailable()
rows = session.sql("select count(*) from rerun").first()[0]
said = lab.cleanup(session)
report("rerun_after_restart", rows=rows, stop_s=stop_s, cleanup=said,
       left=[t for t in topics.list_topics(bootstrap) if t.startswith(("faults-", "doomed-"))])

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
    """subscribe names a topic that is not there, or that is deleted while the query runs: one line naming the
    topic and the fix within seconds (it was named only inside a 53-line plan)."""
    case = _case(cases, name)
    assert case["line"] and "does not exist on" in case["line"] and "lab.new_topic" in case["line"], case
    assert case["seconds"] < BOUND_S, f"the line came after {case['seconds']:.1f} s"


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


def test_the_topics_of_a_dead_kernel_are_swept(cases):
    """A kernel that dies (os._exit) with two topics: the next setup()'s sweep deletes them and says so."""
    case = _case(cases, "orphans")
    assert len(case["made"]) == 2 and case["listed_before"] == case["made"], case
    assert case["listed_after"] == [] and "2 topics" in case["said"] and "kernels that are gone" in case["said"]


def test_a_broker_lost_under_a_query(cases):
    """kill -9 of the broker under a query: awaitTermination returns with one line naming the fix within seconds
    (it sat out its 120 s); cleanup() returns within seconds and says what it left."""
    case = _case(cases, "lost_broker")
    assert case["line"] and "stopped answering" in case["line"] and "broker start" in case["line"], case
    assert case["seconds"] < BOUND_S, f"the line came after {case['seconds']:.1f} s"
    assert case["cleanup_s"] < BOUND_S and "left:" in case["cleanup"] and "not answering" in case["cleanup"], case
    assert case["watch_lost"] and case["closed"], "cleanup() started the broker again"


def test_re_running_after_the_broker_is_back(cases):
    """Start the broker, re-run the cell: stop() of the old query is instant (no 'failed to stop within 15000
    ms'), the new query reads, and cleanup() deletes what the earlier one had to leave."""
    case = _case(cases, "rerun_after_restart")
    assert case["stop_s"] < 5 and case["rows"] == 50, case
    assert "nothing left" in case["cleanup"] and case["left"] == [], case


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
