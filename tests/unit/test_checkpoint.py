"""Reading checkpoints: a real one written by Spark 4.3 (tests/fixtures/spark-checkpoints, see make_checkpoints.py)
and Kafka-shaped logs written byte for byte as Spark's connector writes them."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from streamlab.observe import checkpoint

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "spark-checkpoints"
RATE = FIXTURES / "rate"
RATE_QUERY_ID = "b8597eeb-432c-41fe-aeab-a48ee39512b5"


def test_batches_commits_and_the_pending_batch_of_a_real_checkpoint():
    assert checkpoint.batches(RATE) == [0, 1, 2, 3]
    assert checkpoint.commits(RATE) == {0: {"nextBatchWatermarkMs": 0}, 1: {"nextBatchWatermarkMs": 0},
                                        2: {"nextBatchWatermarkMs": 0}}
    assert checkpoint.last_committed(RATE) == 2
    assert checkpoint.pending_batch(RATE) == 3
    assert checkpoint.query_id(RATE) == RATE_QUERY_ID


def test_offsets_lines_version_metadata_then_one_per_source():
    first = checkpoint.offsets(RATE, 0)
    assert (first.batch_id, first.version) == (0, 1)
    assert first.metadata["batchWatermarkMs"] == 0
    assert first.metadata["conf"]["spark.sql.shuffle.partitions"] == "1"
    # Source 0 is rate-micro-batch (a JSON object), source 1 the rate source (a bare number).
    assert first.sources == [{"offset": 10, "timestamp": 1000}, 0]
    latest = checkpoint.offsets(RATE)
    assert latest.batch_id == 3 and latest.sources == [{"offset": 40, "timestamp": 4000}, 7]
    assert latest.kafka() == {}


def test_committed_offsets_are_those_of_the_last_committed_batch():
    committed = checkpoint.committed_offsets(RATE)
    assert committed.batch_id == 2
    assert committed.sources == [{"offset": 30, "timestamp": 3000}, 6]


def test_initial_offsets_from_sources_folder():
    assert checkpoint.initial_offsets(RATE, 1) == 1795308967355  # the rate source keeps its start time
    assert checkpoint.initial_offsets(RATE, 0) is None  # rate-micro-batch writes none


def test_describe_a_real_checkpoint():
    text = checkpoint.describe(RATE)
    assert text.splitlines()[0] == f"checkpoint {RATE}  (query id {RATE_QUERY_ID})"
    assert "batches planned: 0..3; committed: 0..2" in text
    assert "batch 2 (last committed) ends, source 0: {\"offset\":30,\"timestamp\":3000}" in text
    assert "batch 3 is planned but not committed: a restart re-runs it with the same offsets" in text
    assert "source 1 initial offsets (sources/1/0): 1795308967355" in text


def kafka_checkpoint(root: Path, committed: int, planned: int) -> Path:
    """A checkpoint laid out as Spark's Kafka connector writes it (OffsetSeqLog, CommitLog, initial offsets)."""
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    (root / "sources" / "0").mkdir(parents=True)
    (root / "metadata").write_text('{"id":"6c5e0f4e-0000-4000-8000-000000000001"}')
    # KafkaSourceInitialOffsetWriter: a NUL byte (SPARK-19517), "v1\n", the JSON, no newline.
    (root / "sources" / "0" / "0").write_bytes(b'\x00v1\n{"orders":{"0":0,"1":0}}')
    for batch in range(planned + 1):
        meta = '{"batchWatermarkMs":0,"batchTimestampMs":%d,"conf":{}}' % (1700000000000 + batch)
        source = '{"orders":{"0":%d,"1":%d}}' % (100 * (batch + 1), 50 * (batch + 1))
        (root / "offsets" / str(batch)).write_text(f"v1\n{meta}\n{source}")
        (root / "offsets" / f".{batch}.crc").write_bytes(b"crc")  # Hadoop's checksum files are not batches
    for batch in range(committed + 1):
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return root


def test_kafka_offsets_resume_point_and_pending_batch(tmp_path):
    root = kafka_checkpoint(tmp_path / "cp", committed=1, planned=2)
    assert checkpoint.batches(root) == [0, 1, 2]
    assert checkpoint.committed_offsets(root).kafka() == {"orders": {0: 200, 1: 100}}
    assert checkpoint.pending_batch(root) == 2
    assert checkpoint.offsets(root, 2).kafka() == {"orders": {0: 300, 1: 150}}
    assert checkpoint.initial_offsets(root) == {"orders": {"0": 0, "1": 0}}
    assert checkpoint.query_id(root) == "6c5e0f4e-0000-4000-8000-000000000001"
    assert "batch 2 is planned but not committed" in checkpoint.describe(root)


def test_all_committed_and_the_void_offset(tmp_path):
    root = kafka_checkpoint(tmp_path / "cp", committed=2, planned=2)
    assert checkpoint.pending_batch(root) is None
    assert "a restart plans batch 3 from the end of batch 2" in checkpoint.describe(root)
    (root / "offsets" / "3").write_text('v1\n{"batchWatermarkMs":0}\n-\n{"orders":{"0":400,"1":200}}')
    assert checkpoint.offsets(root).sources == [None, {"orders": {"0": 400, "1": 200}}]
    assert checkpoint.pending_batch(root) == 3


def test_empty_and_missing_checkpoints(tmp_path):
    (tmp_path / "new").mkdir()
    assert checkpoint.batches(tmp_path / "new") == []
    assert checkpoint.offsets(tmp_path / "new") is None
    assert checkpoint.committed_offsets(tmp_path / "new") is None
    assert checkpoint.pending_batch(tmp_path / "new") is None
    assert checkpoint.query_id(tmp_path / "new") is None
    assert "no batch planned yet" in checkpoint.describe(tmp_path / "new")
    with pytest.raises(FileNotFoundError):
        checkpoint.batches(tmp_path / "absent")
    with pytest.raises(FileNotFoundError):
        checkpoint.offsets(RATE, 99)


def test_a_restarted_copy_reads_the_same(tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(RATE, copy)
    (copy / "commits" / "3").write_text('v1\n{"nextBatchWatermarkMs":0}')  # the re-run batch 3 finished
    assert checkpoint.pending_batch(copy) is None
    assert checkpoint.committed_offsets(copy).sources == [{"offset": 40, "timestamp": 4000}, 7]


KAFKA = FIXTURES / "kafka"


def test_a_real_kafka_checkpoint_of_the_offline_engine():
    assert checkpoint.batches(KAFKA) == [0, 1]
    assert checkpoint.offsets(KAFKA, 0).kafka() == {"fixture-orders": {0: 50, 1: 50}}
    assert checkpoint.committed_offsets(KAFKA).kafka() == {"fixture-orders": {0: 100, 1: 100}}
    assert checkpoint.pending_batch(KAFKA) is None
    # Spark offers Python data sources no sources/<i>/0: the offline engine keeps no initial offsets there.
    assert checkpoint.initial_offsets(KAFKA) is None
    assert "a restart plans batch 2 from the end of batch 1" in checkpoint.describe(KAFKA)
