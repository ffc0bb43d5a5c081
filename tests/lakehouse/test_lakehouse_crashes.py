"""Crash tests of module 10's four ways into a Delta table (streamlab.lakehouse.sinks), in two kinds of crash.

1. The crash lab's harness (streamlab.delivery.faults.CrashTest), as module 7's sinks get it: each sink crashed at
   least 10 times at random points of the batch life cycle (before the write, mid-write, after the write and before
   Spark's commit) and restarted from its checkpoint.
2. The driver process killed with SIGKILL between the write and Spark's commit: a child Python process (and its
   Spark JVM, one process group) runs a foreachBatch query writing every batch to all four tables, says so, and is
   killed there; a new process restarts from the checkpoint. Nothing of the dead process runs again: what the
   restart sees is the checkpoint and the tables as the kill left them.

What arrived is counted from each table's current version (Delta's log), never from Spark. Expected: Delta's sink,
MERGE and txnAppId appends have neither duplicates nor losses; plain appends duplicate every replayed batch. The
tables are printed past pytest's capture (as in test_exactly_once.py).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import show

# Each SIGKILL costs a new driver process (Python, a Spark JVM, Delta's classes loaded cold): measured 50 s a process
# at a load average of 10-14 on 2 cores and 2 minutes at 20-27 (11 processes: 20+ minutes), hence far more than
# pytest's default 300 s for the fixture that runs them.
pytestmark = [pytest.mark.broker, pytest.mark.spark, pytest.mark.timeout(2400)]

ROOT = Path(__file__).resolve().parents[2]
CRASHES, ROUNDS, CHUNK = 10, 3, 20
# The suite kills the driver 3 times (with the 10 harness crashes above, 13 crashes a sink); each kill is a cold
# driver process, so ten of them take 10+ minutes on a loaded 2-core machine: STREAMLAB_DELTA_KILLS=10 runs ten.
KILLS, KILL_CHUNK = int(os.environ.get("STREAMLAB_DELTA_KILLS", "3")), 10
SINKS = ("Delta sink", "Delta MERGE", "Delta txn append", "Delta plain append")
EXACTLY_ONCE = ("Delta sink", "Delta MERGE", "Delta txn append")


def _sinks(folder: Path, app_id: str) -> dict:
    from streamlab.lakehouse import sinks

    return {"Delta sink": sinks.DeltaSink(folder / "delta-sink"),
            "Delta MERGE": sinks.DeltaMergeSink(folder / "merge"),
            "Delta txn append": sinks.DeltaTxnAppendSink(folder / "txn", app_id),
            "Delta plain append": sinks.DeltaAppendSink(folder / "append")}


@pytest.fixture(scope="module")
def crashed(delta, bootstrap, tmp_path_factory, pytestconfig):
    """The four Delta sinks after ROUNDS rounds of CHUNK records and CRASHES injected crashes each."""
    from streamlab.delivery import faults
    from streamlab.lab import topics

    folder = tmp_path_factory.mktemp("lakehouse-crashes")
    source = topics.create_topic(topics.unique_name("lh-src"), 2, bootstrap)
    chosen = _sinks(folder, f"test-{source}")
    test = faults.CrashTest(delta, chosen, source, chunk=CHUNK, bootstrap=bootstrap)
    try:
        started = time.monotonic()
        counts = test.run(crashes=CRASHES, rounds=ROUNDS, seed=31)
        lines = [f"Delta crash tests: {ROUNDS * CHUNK} records, {CRASHES} crashes planned per sink, "
                 f"{faults.elapsed(started)}:"]
        lines += [f"  {name:20s} {row}" for name, row in counts.items()]
        lines += [f"  {line}" for line in
                  test.crash_log().groupby(["sink", "point"]).happened.sum().to_string().splitlines()]
        show(pytestconfig, lines)
        yield test, counts, chosen
    finally:
        for run in test.runs.values():
            shutil.rmtree(run.checkpoint, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)
        topics.delete_topic(source, bootstrap=bootstrap)


@pytest.mark.parametrize("name", SINKS)
def test_every_delta_sink_was_crashed_at_least_ten_times(crashed, name):
    test, counts, _ = crashed
    assert counts[name]["crashes"] >= CRASHES, f"{name}: only {counts[name]['crashes']} crashes happened"
    points = {c.point for c in test.runs[name].crashes if c.happened}
    assert len(points) >= 2, f"{name}: crashed only at {points}"


@pytest.mark.parametrize("name", EXACTLY_ONCE)
def test_delta_sink_merge_and_txn_appends_have_no_duplicates_and_no_losses(crashed, name):
    _, counts, _ = crashed
    row = counts[name]
    assert (row["written"], row["duplicated"], row["lost"]) == (ROUNDS * CHUNK, 0, 0), f"{name}: {row}"


def test_plain_appends_duplicate_and_lose_nothing(crashed):
    _, counts, _ = crashed
    row = counts["Delta plain append"]
    assert row["duplicated"] > 0 and row["lost"] == 0, row


def test_the_log_is_what_hides_the_replays(crashed):
    """The replays happened: MERGE rewrote the files of the rows a replay matched, and the replaced files are still
    in the folder (until VACUUM); a plain Parquet listing sees their copies, the table does not. (Delta's sink's
    folder may also hold files of crashed attempts, depending on which task finished before the crash.)"""
    from streamlab.delivery.faults import tally

    _, _, chosen = crashed
    sent = range(ROUNDS * CHUNK)
    merged, sink = tally(chosen["Delta MERGE"].listed(), sent), tally(chosen["Delta sink"].listed(), sent)
    print(f"\na plain Parquet listing sees, of MERGE's folder {merged}, of Delta's sink's folder {sink}")
    assert merged["lost"] == 0 and merged["duplicated"] > 0, merged
    assert sink["lost"] == 0, sink


# -- the driver killed with SIGKILL between the write and Spark's commit ------------------------------------------

CHILD = r"""
import json, sys, time
began = time.monotonic()
config = json.loads(sys.argv[1])
import streamlab
from streamlab.delivery.sinks import source_frame
from streamlab.lakehouse import sinks

spark = streamlab.spark()
print(f"session {time.monotonic() - began:.1f} s", file=sys.stderr, flush=True)
made = [sinks.DeltaSink(config["delta"]), sinks.DeltaMergeSink(config["merge"]),
        sinks.DeltaTxnAppendSink(config["txn"], config["app_id"]), sinks.DeltaAppendSink(config["append"])]


def batch(df, batch_id):
    df.persist()
    for sink in made:
        start = time.monotonic()
        sink.write_batch(df, batch_id)
        print(f"batch {batch_id} {sink.label} {time.monotonic() - start:.1f} s", file=sys.stderr, flush=True)
    df.unpersist()
    print(f"WRITTEN {batch_id}", flush=True)  # every table written, commits/<batch_id> not yet
    if sys.stdin.readline().strip() != "go":  # the parent kills this process here, or lets it go on
        raise SystemExit(3)


query = (source_frame(spark, config["topic"], config["bootstrap"]).writeStream.foreachBatch(batch)
         .option("checkpointLocation", config["checkpoint"]).trigger(availableNow=True).start())
query.awaitTermination()
print("DONE", flush=True)
"""


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the child's process group (the Python driver and its Spark JVM), and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)


def _run_child(config: dict, env: dict, killed: set, kills_left: int, log: Path, timeout: float = 240.0) -> dict:
    """One driver process: let replayed batches go on, kill it after the write of a batch not yet killed (while
    kills_left). Returns {'killed': batch id or None, 'replayed': [batch ids let go], 'committed_at_kill': bool}."""
    import threading

    from streamlab.observe import checkpoint as ck

    with open(log, "w") as errors:
        proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(config)], cwd=ROOT, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True,
                                start_new_session=True)
    watchdog = threading.Timer(timeout, _kill_group, args=(proc,))  # a hung driver: its stdout ends, we fail below
    watchdog.start()
    result = {"killed": None, "replayed": [], "committed_at_kill": None}
    try:
        for line in proc.stdout:
            if not line.startswith("WRITTEN"):
                continue
            batch_id = int(line.split()[1])
            if batch_id not in killed and kills_left > 0:
                result["committed_at_kill"] = Path(config["checkpoint"], "commits", str(batch_id)).exists()
                _kill_group(proc)  # between the write and Spark's commit
                killed.add(batch_id)
                result["killed"] = batch_id
                pending = ck.pending_batch(config["checkpoint"])
                assert pending == batch_id, f"after the kill the pending batch is {pending}, not {batch_id}"
                return result
            result["replayed"].append(batch_id)
            proc.stdin.write("go\n")
            proc.stdin.flush()
        code = proc.wait(60)
        if code != 0:
            raise RuntimeError(f"a driver process failed ({code}): {log.read_text()[-2000:]}")
        return result
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            _kill_group(proc)
        for stream in (proc.stdin, proc.stdout):
            with contextlib.suppress(Exception):
                stream.close()


@pytest.fixture(scope="module")
def killed(delta, bootstrap, tmp_path_factory, pytestconfig):
    """The four tables after KILLS driver processes were killed with SIGKILL, each after the write of a new batch
    (KILL_CHUNK records sent before each), and a last process that replays the last batch and ends."""
    from streamlab.delivery.faults import elapsed, tally
    from streamlab.lab import topics
    from streamlab.lab.producer import produce

    folder = tmp_path_factory.mktemp("lakehouse-kills")
    temporary = folder / "tmp"  # the killed JVMs' temporary folders (no exit handler runs to remove them)
    temporary.mkdir()
    source = topics.create_topic(topics.unique_name("lh-kill"), 2, bootstrap)
    chosen = _sinks(folder, f"test-kill-{source}")
    config = {"topic": source, "bootstrap": bootstrap, "checkpoint": str(folder / "checkpoint"),
              "app_id": chosen["Delta txn append"].app_id, "delta": chosen["Delta sink"].path,
              "merge": chosen["Delta MERGE"].path, "txn": chosen["Delta txn append"].path,
              "append": chosen["Delta plain append"].path}
    env = {**os.environ, "TMPDIR": str(temporary), "KAFKA_BOOTSTRAP": bootstrap, "PYTHONUNBUFFERED": "1"}
    runs, done, sent = [], set(), 0
    try:
        started = time.monotonic()
        for _ in range(KILLS):
            produce(source, KILL_CHUNK, start=sent, key_fn=str, value_fn=str, partitions=range(2), bootstrap=bootstrap)
            sent += KILL_CHUNK
            runs.append(_run_child(config, env, done, KILLS - len(done), folder / f"driver-{len(runs)}.log"))
        # the last restart replays the last killed batch, then ends
        runs.append(_run_child(config, env, done, 0, folder / "driver-last.log"))
        counts = {name: tally(sink.delivered(), range(sent)) for name, sink in chosen.items()}
        lines = [f"Delta, driver killed with SIGKILL between the write and the commit: {sent} records, "
                 f"{len(done)} kills, {len(runs)} driver processes, {elapsed(started)}:"]
        lines += [f"  {name:20s} {row}" for name, row in counts.items()]
        show(pytestconfig, lines)
        yield runs, counts, sent
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        topics.delete_topic(source, bootstrap=bootstrap)


def test_the_driver_was_killed_with_sigkill_before_spark_committed(killed):
    runs, _, _ = killed
    kills = [r for r in runs if r["killed"] is not None]
    assert len(kills) >= KILLS, f"only {len(kills)} kills"
    assert not any(r["committed_at_kill"] for r in kills), "a kill came after Spark's commit"
    # every killed batch was run again by the next process (the replay the sinks had to absorb)
    assert all(r["killed"] in nxt["replayed"] for r, nxt in zip(kills, runs[1:])), runs


@pytest.mark.parametrize("name", EXACTLY_ONCE)
def test_after_sigkill_delta_sink_merge_and_txn_appends_hold_every_record_once(killed, name):
    _, counts, sent = killed
    row = counts[name]
    assert (row["written"], row["duplicated"], row["lost"]) == (sent, 0, 0), f"{name}: {row}"


def test_after_sigkill_plain_appends_duplicate_every_killed_batch(killed):
    _, counts, sent = killed
    row = counts["Delta plain append"]
    assert row["lost"] == 0 and row["duplicated"] >= KILLS, row
