"""Module 2's visible exercise checks (02-offset-tracking): the committed position, replay JSON, a restart, a batch.

Why here: a learner's check cell is 1-3 lines (the teaching standard), so the checks those cells ran moved here,
unchanged: the same check ids, expected text and hints, so the lab's feedback and the grade are the same. Each
function takes the notebook's names it needs (the learner's function, the lesson's checkpoints and topic) and
returns what a hidden test reads; the hidden tests stay in the notebook's test cells, and import the helpers below
(`parsed`, `ranges_of`) to read the learner's answers the same way.
"""
from __future__ import annotations

import json

from streamlab.course.checks import attempt, expect, expect_equal, notebook
from streamlab.lab import topics
from streamlab.observe import checkpoint as ckpt
from streamlab.observe import internals, replay


def parsed(text):
    """replay_json's answer read as JSON (the answer itself when it is not JSON text)."""
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def ranges_of(path, batch_id):
    """Run the notebook's batch_records where it lives, and read the offsets of the DataFrame it returns."""
    df = attempt(notebook().call, "batch_records", path, batch_id)
    return attempt(notebook().call, "streamlab.observe.replay.offset_range", df) if not isinstance(df, str) else df


def ex1_crashed(committed_position, crashed, orders) -> None:
    """Check that committed_position returns the end of the last committed batch of `crashed`."""
    expect_equal(committed_position(crashed), {orders: {0: 20, 1: 20}}, "ex1_crashed_resumes_after_batch_0",
                 "batch 1 of `crashed` has offsets/1 but no commits/1: a restart resumes where batch 0 ended")


def ex1_int_partitions(committed_position, crashed, orders):
    """Check that committed_position uses int partitions; the positions it found for `orders`."""
    found = committed_position(crashed)
    parts = found.get(orders, {}) if isinstance(found, dict) else {}
    expect(bool(parts) and all(type(p) is int for p in parts), "ex1_int_partitions", "int partition keys",
           repr(found), "the JSON has string keys like \"0\": convert them with int()")
    return parts


def ex2_json_values(replay_json, orders) -> None:
    """Check that replay_json writes offsets and -2 for earliest."""
    expect_equal(parsed(replay_json(orders, {0: 45, 1: "earliest"})), {orders: {"0": 45, "1": -2}},
                 "ex2_offset_and_earliest", "JSON object keys are strings; earliest is -2")


def ex2_replay_rows(replay_json, spark, bootstrap, orders):
    """Check that a new query started with replay_json reads the given offsets; {partition: (first, end, rows)}."""
    start = attempt(replay_json, orders, {0: 45, 1: "latest"})
    replayed = internals.trace(spark, {"kafka.bootstrap.servers": bootstrap, "subscribe": orders,
                                       "startingOffsets": start}) if isinstance(start, str) else None
    tasks = replayed.tasks if replayed is not None and replayed.error is None and replayed.tasks is not None else None
    read = {} if tasks is None else {int(p): (int(g.from_offset.min()), int(g.until_offset.max()), int(g.rows.sum()))
                                     for p, g in tasks.groupby("partition") if int(g.rows.sum())}
    latest0 = topics.describe_topic(orders)[0][1]
    rows = sum(r for _, _, r in read.values())
    expect(rows == latest0 - 45, "ex2_replay_rows", f"{latest0 - 45} rows (offsets 45..{latest0 - 1} of partition 0)",
           replayed.error if replayed is not None and replayed.error else f"{rows} rows",
           "start partition 0 at 45 and partition 1 at latest (-1)")
    return read


def ex3_restart_rows(restart_rows, crashed, restarted, orders) -> None:
    """Check the predicted number of records the restart (its checkpoint `restarted`) reads."""
    # What the restart read, from the checkpoints themselves: the end of its last batch minus where `crashed` resumes.
    resume = ckpt.committed_offsets(crashed).kafka()[orders]
    ends = ckpt.offsets(restarted).kafka()[orders]  # the copy the lesson restarted
    expect_equal(restart_rows, sum(end - resume.get(p, 0) for p, end in ends.items()), "ex3_restart_rows",
                 "the restart re-runs the pending batch, then reads on to latest: latest minus the last committed end")


def ex3_first_batch(first_batch, crashed) -> None:
    """Check the predicted id of the first batch the restart runs."""
    expect_equal(first_batch, ckpt.pending_batch(crashed), "ex3_first_batch",
                 "offsets/1 exists without commits/1: which batch does Spark run first?")


def ex4_crashed_batch(crashed) -> None:
    """Check that batch_records returns exactly the records of the crashed batch 1."""
    expect_equal(ranges_of(crashed, 1), replay.batch_range(crashed, 1), "ex4_crashed_batch_1",
                 "start at the end of batch 0 (offsets/0), end at the end of batch 1 (offsets/1)")


def ex4_files_batch_2(files) -> None:
    """Check that batch_records works for batch 2 of another query (its checkpoint `files`)."""
    got = ranges_of(files, 2)
    expect_equal(got.get("rows") if isinstance(got, dict) else got, replay.batch_range(files, 2)["rows"],
                 "ex4_files_batch_2", "batch 2 of the section 3 query")
