"""observe.latency without a broker: percentiles, the ratio bench reports, the table and a chart that reads at 1,280 px."""
from __future__ import annotations

import struct

from streamlab.observe.latency import Comparison, Run


def _runs():
    micro = Run('micro-batch processingTime="0 seconds"', {"processingTime": "0 seconds"},
                points=[(i / 100, 300 + i) for i in range(100)], late=2)
    real_time = Run('Real-time Mode realTime="5 seconds"', {"realTime": "5 seconds"},
                    points=[(i / 100, 10 + i % 10) for i in range(100)])
    return micro, real_time


def test_percentiles_are_nearest_rank_and_the_median_is_the_middle():
    micro, real_time = _runs()
    assert micro.percentile(99) == 398 and micro.percentile(100) == 399 and micro.percentile(1) == 300
    assert micro.median() == 349.5 and real_time.median() == 14.5
    assert Run("empty", {}).median() is None and Run("empty", {}).percentile(50) is None


def test_the_ratio_is_micro_batch_median_over_real_time_median():
    micro, real_time = _runs()
    assert Comparison([micro, real_time]).ratio() == 349.5 / 14.5
    assert Comparison([Run("a", {}), real_time]).ratio() is None


def test_the_table_counts_records_and_those_not_out_at_stop():
    table = Comparison(list(_runs())).table()
    assert list(table.index) == ["records", "median (ms)", "p90 (ms)", "p99 (ms)", "max (ms)", "not out at stop"]
    assert table.iloc[:, 0]["records"] == 100 and table.iloc[:, 0]["not out at stop"] == 2


def test_the_chart_is_a_png_as_wide_as_a_laptop_screen_allows():
    png = Comparison(list(_runs())).chart().data
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert 1000 <= width <= 1280 and height < width / 2
