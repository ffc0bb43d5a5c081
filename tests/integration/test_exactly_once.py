"""Crash tests of the four sinks of module 7 (streamlab.delivery.faults, streamlab.delivery.sinks): each sink is crashed at least 10
times at random points of the batch life cycle (before the write, mid-write, after the write and before the
commit) and restarted from its checkpoint; what arrived is then counted from the destination itself (the topic
read with kafka-python, the SQLite table, the files the _spark_metadata log lists).

Expected: Spark's plain Kafka sink duplicates (at-least-once); the SQLite upsert, the transactional producer
(read_committed) and the file sink have neither duplicates nor losses. Run with `-s` to see the counts.
"""
from __future__ import annotations

import time

import pytest
from support import show

pytestmark = [pytest.mark.broker, pytest.mark.spark]

CRASHES, ROUNDS, CHUNK = 10, 3, 40


@pytest.fixture(scope="module")
def crashed(spark, bootstrap, tmp_path_factory, pytestconfig):
    """The four sinks after ROUNDS rounds of CHUNK records and CRASHES injected crashes each."""
    from streamlab.delivery import faults, sinks
    from streamlab.lab import topics

    folder = tmp_path_factory.mktemp("exactly-once")
    made = [topics.create_topic(topics.unique_name(p), 2, bootstrap) for p in ("eo-src", "eo-plain", "eo-tx")]
    source, plain, transactional = made
    chosen = {"plain Kafka": sinks.KafkaSink(plain, bootstrap),
              "SQLite upsert": sinks.SqliteSink(str(folder / "sink.db")),
              "Kafka transactions": sinks.TransactionalKafkaSink(transactional, f"test-{transactional}", bootstrap),
              "file sink": sinks.FileSink(str(folder / "files"))}
    test = faults.CrashTest(spark, chosen, source, chunk=CHUNK, bootstrap=bootstrap)
    started = time.monotonic()
    counts = test.run(crashes=CRASHES, rounds=ROUNDS, seed=7)
    # Printed past pytest's capture, so every run (CI's -q one too) shows the counts it judged.
    lines = [f"crash tests: {ROUNDS * CHUNK} records, {CRASHES} crashes planned per sink, {faults.elapsed(started)}:"]
    lines += [f"  {name:20s} {row}" for name, row in counts.items()]
    lines += [f"  {line}" for line in test.crash_log().groupby(["sink", "point"]).happened.sum().to_string().splitlines()]
    show(pytestconfig, lines)
    yield test, counts, chosen
    chosen["Kafka transactions"].close()
    for checkpoint in (run.checkpoint for run in test.runs.values()):
        import shutil

        shutil.rmtree(checkpoint, ignore_errors=True)
    topics.delete_topic(*made, bootstrap=bootstrap)
    import streamlab

    streamlab.cleanup(spark)  # the folders and topics the sinks made with new_checkpoint / new_topic


@pytest.mark.parametrize("name", ["plain Kafka", "SQLite upsert", "Kafka transactions", "file sink"])
def test_every_sink_was_crashed_at_least_ten_times(crashed, name):
    test, counts, _ = crashed
    assert counts[name]["crashes"] >= CRASHES, f"{name}: only {counts[name]['crashes']} crashes happened"
    points = {c.point for c in test.runs[name].crashes if c.happened}
    assert len(points) >= 2, f"{name}: crashed only at {points}"


def test_the_plain_kafka_sink_duplicates_and_loses_nothing(crashed):
    _, counts, _ = crashed
    row = counts["plain Kafka"]
    assert row["duplicated"] > 0 and row["lost"] == 0, row


@pytest.mark.parametrize("name", ["SQLite upsert", "Kafka transactions", "file sink"])
def test_exactly_once_sinks_have_no_duplicates_and_no_losses(crashed, name):
    _, counts, _ = crashed
    row = counts[name]
    assert (row["written"], row["duplicated"], row["lost"]) == (ROUNDS * CHUNK, 0, 0), f"{name}: {row}"


def test_what_the_exactly_once_sinks_hide_is_really_there(crashed):
    """The replays happened: absorbed rows in SQLite, aborted records in the topic's log, unlisted files."""
    from streamlab.delivery.faults import tally

    _, _, chosen = crashed
    sent = range(ROUNDS * CHUNK)
    assert chosen["SQLite upsert"].rewrites() > 0
    uncommitted = tally(chosen["Kafka transactions"].in_log(), sent)
    listed = tally(chosen["file sink"].listed(), sent)
    print(f"\nread_uncommitted sees {uncommitted}; a plain listing of the files sees {listed}")
    assert uncommitted["lost"] == 0 and listed["lost"] == 0
