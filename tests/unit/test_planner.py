"""The offline Kafka source's planning rules, against the numbers Spark's connector produces (no broker)."""
from __future__ import annotations

from streamlab.offline.planner import (
    OffsetRange, from_json, new_offsets, rate_limit, should_delay, split_ranges, to_json,
)


def tps(topic, counts):
    return {(topic, p): n for p, n in counts.items()}


def test_offsets_json_has_the_connectors_shape_sorted_by_partition_number():
    offsets = {("orders", 10): 5, ("orders", 2): 7, ("a", 0): 1}
    assert to_json(offsets) == {"a": {"0": 1}, "orders": {"2": 7, "10": 5}}
    assert list(to_json(offsets)["orders"]) == ["2", "10"]
    assert from_json(to_json(offsets)) == offsets


def test_cap_is_split_by_backlog_floor_and_small_shares_round_up_to_one():
    # backlogs 100, 50, 1 (total 151), cap 10: 6.62 -> 6, 3.31 -> 3, 0.066 -> 1
    start = tps("t", {0: 0, 1: 0, 2: 0})
    latest = tps("t", {0: 100, 1: 50, 2: 1})
    assert rate_limit(10, start, latest) == tps("t", {0: 6, 1: 3, 2: 1})


def test_cap_counts_from_each_partitions_start_not_from_zero():
    start = tps("t", {0: 1000, 1: 40})
    latest = tps("t", {0: 1030, 1: 50})  # backlogs 30 and 10
    assert rate_limit(8, start, latest) == tps("t", {0: 1006, 1: 42})


def test_many_small_partitions_push_a_batch_over_the_cap():
    start = {("t", p): 0 for p in range(20)}
    latest = {("t", p): 1 for p in range(20)}
    ends = rate_limit(10, start, latest)
    assert ends == latest and sum(ends.values()) == 20


def test_rounding_down_can_leave_a_batch_under_the_cap():
    start = tps("t", {0: 0, 1: 0, 2: 0})
    latest = tps("t", {0: 10, 1: 10, 2: 10})
    assert sum(rate_limit(10, start, latest).values()) == 9


def test_a_share_never_passes_the_latest_offset():
    assert rate_limit(1000, tps("t", {0: 0, 1: 0}), tps("t", {0: 5, 1: 7})) == tps("t", {0: 5, 1: 7})


def test_nothing_new_means_no_limit_and_latest_is_returned():
    same = tps("t", {0: 4, 1: 9})
    assert rate_limit(1, same, same) == same


def test_partitions_without_backlog_or_going_backwards_keep_their_latest_offset():
    start = tps("t", {0: 0, 1: 50, 2: 8})
    latest = tps("t", {0: 100, 1: 50, 2: 3})  # 1 has nothing new, 2 went backwards (recreated topic)
    assert rate_limit(10, start, latest) == tps("t", {0: 10, 1: 50, 2: 3})


def test_a_new_partition_is_capped_from_its_earliest_offset():
    start = tps("t", {0: 0})
    latest = tps("t", {0: 30, 1: 40})
    assert rate_limit(7, start, latest, start_of_new={("t", 1): 10}) == tps("t", {0: 3, 1: 13})


def test_an_unknown_partition_without_a_start_is_left_at_latest():
    assert rate_limit(5, tps("t", {0: 0}), tps("t", {0: 20, 1: 9})) == tps("t", {0: 5, 1: 9})


def test_first_trigger_always_runs_because_the_last_trigger_time_starts_at_zero():
    skip, last = should_delay(1000, tps("t", {0: 0}), tps("t", {0: 1}), now_ms=5_000_000, last_trigger_ms=0,
                              max_delay_ms=900_000)
    assert (skip, last) == (False, 5_000_000)


def test_trigger_is_skipped_below_the_minimum_until_the_delay_passes():
    start, latest = tps("t", {0: 0, 1: 0}), tps("t", {0: 3, 1: 4})
    assert should_delay(10, start, latest, now_ms=10_000, last_trigger_ms=8_000, max_delay_ms=5_000) == (True, 8_000)
    assert should_delay(10, start, latest, now_ms=13_000, last_trigger_ms=8_000, max_delay_ms=5_000) == (False, 13_000)


def test_trigger_runs_once_the_minimum_is_available():
    start, latest = tps("t", {0: 0, 1: 0}), tps("t", {0: 6, 1: 4})
    assert should_delay(10, start, latest, now_ms=9_000, last_trigger_ms=8_000, max_delay_ms=60_000) == (False, 9_000)


def test_new_offsets_counts_new_partitions_from_zero():
    assert new_offsets(tps("t", {0: 5}), tps("t", {0: 8, 1: 4})) == 7


def test_min_partitions_unset_or_already_met_keeps_one_range_per_partition_and_drops_empty_ones():
    ranges = [OffsetRange("t", 0, 0, 100), OffsetRange("t", 1, 5, 5), OffsetRange("t", 2, 9, 3)]
    assert split_ranges(ranges) == [OffsetRange("t", 0, 0, 100)]
    assert split_ranges(ranges, 1) == [OffsetRange("t", 0, 0, 100)]


def test_min_partitions_splits_one_range_evenly_with_the_remainder_in_the_last_piece():
    pieces = split_ranges([OffsetRange("t", 0, 0, 10)], 3)
    assert pieces == [OffsetRange("t", 0, 0, 3), OffsetRange("t", 0, 3, 6), OffsetRange("t", 0, 6, 10)]


def test_min_partitions_splits_large_ranges_and_leaves_small_ones_whole():
    # KafkaOffsetRangeCalculatorSuite: sizes 1 and 10, minPartitions 3 -> 1 stays, 10 is split in two
    ranges = [OffsetRange("t1", 1, 1, 2), OffsetRange("t2", 1, 1, 11)]
    assert split_ranges(ranges, 3) == [
        OffsetRange("t1", 1, 1, 2), OffsetRange("t2", 1, 1, 6), OffsetRange("t2", 1, 6, 11),
    ]


def test_min_partitions_rounds_halves_up_like_scala():
    # sizes 5 and 3, minPartitions 4: 5/8*4 = 2.5 pieces, which Math.round makes 3 (Python's round() gives 2)
    ranges = [OffsetRange("t", 0, 0, 5), OffsetRange("t", 1, 0, 3)]
    pieces = split_ranges(ranges, 4)
    assert len([r for r in pieces if r.partition == 0]) == 3
    assert sum(r.size for r in pieces) == 8


def test_split_pieces_cover_the_range_exactly():
    pieces = split_ranges([OffsetRange("t", 0, 100, 1100), OffsetRange("t", 1, 0, 7)], 10)
    for part, (first, last) in {0: (100, 1100), 1: (0, 7)}.items():
        mine = [r for r in pieces if r.partition == part]
        assert mine[0].start == first and mine[-1].end == last
        assert all(a.end == b.start for a, b in zip(mine, mine[1:]))
    assert len(pieces) >= 10 - 1
