"""The lakehouse library (streamlab.lakehouse) as module 10's cells use it: the one line when Delta is not set up,
MERGE's deduplication (the latest offset wins; without it, Delta's "multiple source rows matched"), the txnAppId
trap (the same app id on a new checkpoint silently skips), and reading a table back (ids, history, file count)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from streamlab.errors import LabError


def test_require_delta_says_in_one_line_to_run_make_setup(monkeypatch):
    from streamlab.lab import jars
    from streamlab.lakehouse import delta_ready, require_delta

    monkeypatch.setattr(jars, "delta_bundle", lambda: SimpleNamespace(ready=lambda: False))
    assert delta_ready() is False
    with pytest.raises(LabError) as raised:
        require_delta()
    message = str(raised.value)
    assert "make setup" in message and "\n" not in message, message


def test_a_session_started_without_delta_is_not_ready(monkeypatch):
    """Delta's jars set up after the kernel's session started: the session has no Delta until a restart."""
    from pyspark.sql import SparkSession

    from streamlab.lab import jars
    from streamlab.lakehouse import delta_ready

    monkeypatch.setattr(jars, "delta_bundle", lambda: SimpleNamespace(ready=lambda: True))
    without = SimpleNamespace(conf=SimpleNamespace(get=lambda key, default=None: ""))
    monkeypatch.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: without))
    assert delta_ready() is False


def _rows(spark, *rows):
    return spark.createDataFrame(list(rows), "topic string, partition int, offset long, id long, value string")


@pytest.mark.broker
@pytest.mark.spark
def test_merge_keeps_the_latest_offset_per_key_and_fails_without_dedupe(delta, tmp_path):
    from streamlab.lakehouse import ids, latest_per_key, merge_batch

    path = str(tmp_path / "merged")
    merge_batch(_rows(delta, ("t", 0, 1, 1, "first")), path)
    repeated = _rows(delta, ("t", 0, 9, 1, "new"), ("t", 0, 5, 1, "old"), ("t", 1, 3, 2, "two"))
    assert sorted((r["id"], r["value"]) for r in latest_per_key(repeated).collect()) == [(1, "new"), (2, "two")]
    with pytest.raises(Exception, match="(?i)multiple source rows matched"):
        merge_batch(repeated, path, dedupe=False)
    merge_batch(repeated, path)
    merge_batch(repeated, path)  # a replay of the same batch matches itself
    assert ids(delta, path) == [1, 2]
    assert {r["id"]: r["value"] for r in delta.read.format("delta").load(path).collect()} == {1: "new", 2: "two"}


@pytest.mark.broker
@pytest.mark.spark
def test_the_same_txn_app_id_on_a_new_checkpoint_silently_skips(delta, tmp_path):
    from streamlab.lakehouse import DeltaTxnAppendSink, file_count, history, ids

    path = tmp_path / "txn"
    first = DeltaTxnAppendSink(path, "app")
    for batch_id in range(3):
        first.write_batch(_rows(delta, ("t", 0, batch_id, batch_id, "x")), batch_id)
    first.write_batch(_rows(delta, ("t", 0, 2, 2, "x")), 2)  # a replayed batch: skipped
    assert ids(delta, str(path)) == [0, 1, 2]
    again = DeltaTxnAppendSink(path, "app")  # a new checkpoint: batch ids start at 0 again
    again.write_batch(_rows(delta, ("t", 0, 10, 10, "x")), 0)
    assert ids(delta, str(path)) == [0, 1, 2], "the same app id on a new checkpoint should have skipped batch 0"
    DeltaTxnAppendSink(path, "app-2").write_batch(_rows(delta, ("t", 0, 10, 10, "x")), 0)
    assert ids(delta, str(path)) == [0, 1, 2, 10]
    log = history(delta, str(path))
    assert list(log.columns) == ["version", "operation", "operationParameters", "rows written"]
    assert list(log["version"]) == [0, 1, 2, 3] and list(log["rows written"]) == [1, 1, 1, 1]
    assert ids(delta, str(path), version=1) == [0, 1]  # time travel: what the first two batches committed
    assert file_count(str(path)) == 4


@pytest.mark.broker
@pytest.mark.spark
def test_reading_a_path_with_no_table_says_so_in_one_line(delta, tmp_path):
    from streamlab.lakehouse import DeltaAppendSink, ids

    with pytest.raises(LabError, match="not a Delta table") as raised:
        ids(delta, str(tmp_path / "nothing"))
    assert "\n" not in str(raised.value)
    assert DeltaAppendSink(tmp_path / "nothing").delivered() == []


def _commit(log, version: int, *actions) -> None:
    import json

    (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def test_the_small_files_demo_counts_the_files_the_table_lists_from_its_log(tmp_path):
    """Module 10's auto-compaction demo counts what the current version lists (adds not removed since), not the
    folder's files (kept for time travel), and counts auto-compaction commits, from the log alone."""
    from streamlab.lakehouse import demo as lh

    log = tmp_path / "_delta_log"
    log.mkdir()
    _commit(log, 0, {"commitInfo": {"operation": "CREATE TABLE"}}, {"metaData": {"id": "t"}})
    for v, names in ((1, "ab"), (2, "cd"), (3, "ef"), (4, "gh")):
        _commit(log, v, {"commitInfo": {"operation": "WRITE"}}, *({"add": {"path": f"{n}.parquet"}} for n in names))
    _commit(log, 5, {"commitInfo": {"operation": "OPTIMIZE", "operationParameters": {"auto": "true"}}},
            {"add": {"path": "big.parquet"}}, *({"remove": {"path": f"{n}.parquet"}} for n in "abcdefgh"))
    _commit(log, 6, {"commitInfo": {"operation": "WRITE"}}, {"add": {"path": "i.parquet"}})
    _commit(log, 7, {"commitInfo": {"operation": "OPTIMIZE", "operationParameters": {"auto": "false"}}})
    for name in "abcdefghi":
        (tmp_path / f"{name}.parquet").write_bytes(b"")
    (tmp_path / "big.parquet").write_bytes(b"")
    assert lh.listed_files(tmp_path) == 2 and lh.data_files(tmp_path) == 10
    assert lh.compactions(tmp_path) == 1, "only the auto=true OPTIMIZE is an auto-compaction"
    assert lh.listed_files(tmp_path / "no-table") == 0
