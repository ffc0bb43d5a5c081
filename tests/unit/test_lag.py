"""Lag from progress reports, its total, and the stable / recovering / falling-behind classification."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamlab.observe.lag import LagMonitor, classify, lag_from_progress, total_lag

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "spark-checkpoints"


def kafka_progress(batch, end, latest, rows=100, input_rate=100.0, processed_rate=200.0, as_text=False):
    """A progress report shaped like Spark's, with one Kafka source."""
    encode = json.dumps if as_text else (lambda x: x)
    return {"id": "q", "batchId": batch, "numInputRows": rows, "inputRowsPerSecond": input_rate,
            "processedRowsPerSecond": processed_rate,
            "sources": [{"description": "KafkaV2[Subscribe[orders]]", "startOffset": encode(end),
                         "endOffset": encode(end), "latestOffset": encode(latest), "numInputRows": rows,
                         "metrics": {"maxOffsetsBehindLatest": "0"}}]}


def test_lag_is_latest_minus_end_per_partition():
    progress = kafka_progress(4, {"orders": {"0": 4400, "1": 3400}}, {"orders": {"0": 5000, "1": 3400}})
    assert lag_from_progress(progress) == {"orders": {0: 600, 1: 0}}
    assert total_lag(progress) == 600


def test_offsets_given_as_json_strings_and_progress_as_text():
    progress = kafka_progress(1, {"a": {"0": 10}, "b": {"2": 5}}, {"a": {"0": 12}, "b": {"2": 9}}, as_text=True)
    assert lag_from_progress(progress) == {"a": {0: 2}, "b": {2: 4}}
    assert lag_from_progress(json.dumps(progress)) == {"a": {0: 2}, "b": {2: 4}}


def test_a_partition_not_read_yet_counts_fully():
    progress = kafka_progress(2, {"orders": {"0": 7}}, {"orders": {"0": 7, "1": 30}})
    assert lag_from_progress(progress) == {"orders": {0: 0, 1: 30}}


def test_two_sources_and_a_non_kafka_source():
    progress = kafka_progress(3, {"a": {"0": 1}}, {"a": {"0": 4}})
    progress["sources"].append({"description": "rate", "startOffset": 6, "endOffset": 7, "latestOffset": 7})
    progress["sources"].append({"description": "KafkaV2[b]", "endOffset": '{"b":{"0":2}}',
                                "latestOffset": '{"b":{"0":9}}'})
    assert lag_from_progress(progress) == {"a": {0: 3}, "b": {0: 7}}
    assert total_lag(lag_from_progress(progress)) == 10


def test_real_progress_of_a_rate_query_has_no_kafka_lag():
    progress = json.loads((FIXTURES / "progress.json").read_text())
    assert lag_from_progress(progress) == {}
    assert total_lag(progress) == 0


def test_no_progress_yet():
    assert lag_from_progress(None) == {}
    assert total_lag({}) == 0


def series(lags, input_rate=100.0, processed_rate=200.0):
    return [kafka_progress(i, {"t": {"0": 1000}}, {"t": {"0": 1000 + lag}}, input_rate=input_rate,
                           processed_rate=processed_rate) for i, lag in enumerate(lags)]


@pytest.mark.parametrize("lags, rates, expected", [
    ([0, 0, 0, 0], (100.0, 200.0), "stable"),
    ([500, 505, 498, 502], (100.0, 200.0), "stable"),  # noise around a constant lag
    ([100, 400, 900, 1600], (900.0, 500.0), "falling behind"),
    ([100, 400, 900, 1600], (100.0, 200.0), "falling behind"),  # the lag alone says so
    ([5000, 3500, 2000, 800], (100.0, 900.0), "recovering"),
    ([5000, 3000, 1000, 0], (100.0, 900.0), "stable"),  # drained: caught up
    ([3000, 3000, 3000], (900.0, 500.0), "falling behind"),  # lag held up while input outpaces processing
    ([3000, 3000, 3000], (100.0, 500.0), "stable"),
])
def test_classify(lags, rates, expected):
    assert classify(series(lags, *rates)) == expected


def test_classify_without_lag_data_uses_the_rates():
    rate_only = json.loads((FIXTURES / "progress.json").read_text())
    assert classify([rate_only]) == "stable"
    slow = dict(rate_only, inputRowsPerSecond=500.0, processedRowsPerSecond=100.0)
    assert classify([slow, slow]) == "falling behind"
    assert classify([]) == "stable"


class FakeQuery:
    """Just what LagMonitor reads from a StreamingQuery."""

    def __init__(self, reports):
        self.reports = list(reports)
        self.isActive = True

    @property
    def lastProgress(self):
        return self.reports[0] if self.reports else None

    def advance(self):
        self.reports.pop(0)


def test_monitor_warns_once_after_n_growing_batches():
    warned = []
    query = FakeQuery(series([10, 50, 50, 200, 400, 900, 950, 100]))
    monitor = LagMonitor(query, interval=60, on_warning=warned.append, grow_polls=3)
    for _ in range(8):
        monitor.poll()
        monitor.poll()  # a poll between two batches neither extends nor breaks a streak
        query.advance()
    assert [p["lag"] for p in monitor.history][::2] == [10, 50, 50, 200, 400, 900, 950, 100]
    assert len(warned) == 1 and "900 records" in warned[0]
    assert monitor.status == "falling behind"
    assert monitor.history[0]["partitions"] == {"t": {0: 10}}


def test_monitor_thread_polls_and_stops_cleanly():
    import threading
    import time

    query = FakeQuery(series([1, 2, 3]))
    with LagMonitor(query, interval=0.01, on_warning=lambda m: None) as monitor:
        deadline = time.monotonic() + 5
        while len(monitor.history) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert len(monitor.history) >= 3
    assert not any(t.name == "LagMonitor" for t in threading.enumerate())
    assert monitor.stop() is monitor.history  # a second stop is harmless


def test_real_progress_of_a_capped_kafka_query():
    progress = json.loads((FIXTURES / "progress-kafka.json").read_text())
    assert lag_from_progress(progress) == {"fixture-orders": {0: 50, 1: 50}}
    assert total_lag(progress) == 100
    assert classify([progress]) == "stable"  # one report, processed faster than it arrived
