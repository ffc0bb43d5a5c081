"""Watching a query from outside: progress tables, waiting for batches, stopping between batches, check helpers.

The live demo (with its lag-per-partition chart) is `streamlab.demo.live.LiveDemo`; consumer groups (what
`kafka-consumer-groups` shows) are `streamlab.observe.groups`, also reachable here as `monitor.groups_on(...)` etc.
because module 3 and the cheat sheet call them that way.
"""
from __future__ import annotations

import time

from streamlab.observe import lag as _lag
from streamlab.observe.groups import all_groups, committing_consumer, describe_group, forget_groups, groups_on  # noqa: F401


# -- progress events ---------------------------------------------------------------------------------------------

def as_dict(progress) -> dict:
    """A progress report (PySpark's StreamingQueryProgress, a dict or JSON text) as a plain dict."""
    return _lag.as_dict(progress)


def progress_table(events):
    """One row per progress event: batch, rows, the two rates, duration, progress lag (latestOffset − endOffset,
    summed over the partitions) and the connector's maxOffsetsBehindLatest (the most-behind partition; None on
    the offline fallback, which reports no metrics)."""
    import pandas as pd

    rows = []
    for event in events:
        p = as_dict(event)
        if not p:
            continue
        rows.append({"batch": p.get("batchId"), "rows": p.get("numInputRows"),
                     "inputRowsPerSecond": round(p.get("inputRowsPerSecond") or 0.0, 1),
                     "processedRowsPerSecond": round(p.get("processedRowsPerSecond") or 0.0, 1),
                     "triggerExecution_ms": (p.get("durationMs") or {}).get("triggerExecution"),
                     "progress_lag": _lag.total_lag(p),
                     "maxOffsetsBehindLatest": _whole(_lag.behind_latest(p).get("max"))})
    return pd.DataFrame(rows)


def _whole(value):
    return None if value is None else int(value)


# -- helpers for queries ------------------------------------------------------------------------------

def stop_between_batches(query, timeout: float = 10.0) -> None:
    """Stop `query` while no trigger is running if that happens within `timeout` s (a batch interrupted mid-write
    makes Spark log an expected, but alarming, task-abort trace), else stop it anyway."""
    deadline = time.monotonic() + timeout
    while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
        time.sleep(0.02)
    query.stop()


def data_batches(query) -> list[dict]:
    """The progress events of `query` that read data (idle triggers report numInputRows = 0), as dicts."""
    return [p for p in map(as_dict, query.recentProgress) if p.get("numInputRows")]


def wait_for_batches(query, n: int, timeout: float = 90.0) -> list[dict]:
    """Wait until `query` has finished `n` batches that read data; returns their progress events."""
    deadline, looked = time.monotonic() + timeout, None
    while True:
        last = as_dict(query.lastProgress)  # one JVM call; recentProgress is one per event kept
        if (last.get("batchId"), last.get("timestamp")) != looked:  # an idle trigger reports the next batch's id
            looked, batches = (last.get("batchId"), last.get("timestamp")), data_batches(query)
            if len(batches) >= n:
                return batches
        if query.exception() is not None:
            raise RuntimeError(f"the query failed: {query.exception()}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the query finished fewer than {n} batches within {timeout:.0f} s")
        time.sleep(0.2)
