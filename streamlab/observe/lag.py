"""Consumer lag for Spark queries: latest offset in Kafka minus the offset the query has reached, per partition.

Why `kafka-consumer-groups --describe` shows nothing useful for a Spark query: Spark does not consume as a
member of a consumer group. Each query makes up its own group id (`spark-kafka-source-<uuid>-...`), the driver
lists offsets with the AdminClient, executors fetch assigned ranges, and nothing is ever committed to Kafka (the
connector forces `enable.auto.commit=false` and its `commit` is a no-op). The consumed position lives in the
query's checkpoint (`offsets/N`, `commits/N`) and in its progress reports. So lag is read from there:
- `lag_from_progress(query.lastProgress)`: each Kafka source reports `latestOffset` (what Kafka had when the
  batch was planned) and `endOffset` (where the batch stops); their difference is the lag Spark itself sees, per
  partition (the connector's `metrics` give only its min, max and average: `behind_latest(progress)`);
- `lag_from_checkpoint(dir)`: the broker's latest offsets now minus the end of the last committed batch, which
  also works for a stopped query;
- `LagMonitor(query)`: polls a running query and warns when lag keeps growing.
"""
from __future__ import annotations

import json
import threading
import time
import weakref
from collections import deque

from streamlab.lab import teardown
from streamlab.lab.broker import ensure_broker

GROWING, RECOVERING, STABLE = "falling behind", "recovering", "stable"


def as_dict(progress) -> dict:
    """A progress report as a dict, whether given as a dict, a JSON string or PySpark's StreamingQueryProgress."""
    if progress is None:
        return {}
    if isinstance(progress, dict):
        return progress
    if isinstance(progress, (str, bytes)):
        return json.loads(progress)
    text = getattr(progress, "json", None)  # PySpark 4's StreamingQueryProgress
    if isinstance(text, str):
        return json.loads(text)
    return dict(progress)




def source_offsets(value) -> dict:
    """{topic: {partition: offset}} from a source offset given as a dict or as its JSON text ({} if not Kafka's)."""
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    if not isinstance(value, dict):
        return {}
    out = {}
    for topic, parts in value.items():
        if not isinstance(parts, dict):
            return {}  # not a Kafka offset (e.g. the rate source's {"offset": 40, "timestamp": 4000})
        try:
            out[topic] = {int(p): int(o) for p, o in parts.items()}
        except (TypeError, ValueError):
            return {}
    return out


def latest_offsets(topics, bootstrap: str | None = None) -> dict:
    """{topic: {partition: latest offset}} from the broker, for a topic name or a list of them."""
    from kafka import KafkaConsumer, TopicPartition

    names = [topics] if isinstance(topics, str) else list(topics)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap or ensure_broker(), enable_auto_commit=False)
    try:
        tps = [TopicPartition(t, p) for t in names for p in sorted(consumer.partitions_for_topic(t) or [])]
        ends = consumer.end_offsets(tps) if tps else {}
        out = {t: {} for t in names}
        for tp, offset in ends.items():
            out[tp.topic][tp.partition] = offset
        return out
    finally:
        consumer.close()


def lag_from_progress(progress) -> dict:
    """{topic: {partition: lag}} from one progress report: each Kafka source's latestOffset minus its endOffset."""
    lag: dict = {}
    for source in as_dict(progress).get("sources") or []:
        latest, end = source_offsets(source.get("latestOffset")), source_offsets(source.get("endOffset"))
        for topic, parts in latest.items():
            reached = end.get(topic, {})
            for partition, offset in parts.items():
                # A partition missing from endOffset has not been read at all yet: all of it is behind.
                behind = max(0, offset - reached.get(partition, 0))
                lag.setdefault(topic, {})[partition] = max(behind, lag.get(topic, {}).get(partition, 0))
    return lag


def behind_latest(progress) -> dict:
    """The connector's own lag metrics of the first Kafka source, as numbers: {"min": …, "max": …, "avg": …}.

    Spark's connector reports `minOffsetsBehindLatest`, `maxOffsetsBehindLatest` and `avgOffsetsBehindLatest` in
    each source's `metrics` (as strings): latestOffset − endOffset over the partitions. {} when the source reports
    none (a progress event of another source, or the offline fallback, whose Python source cannot).
    """
    for source in as_dict(progress).get("sources") or []:
        metrics = source.get("metrics") or {}
        try:
            return {k: float(metrics[f"{k}OffsetsBehindLatest"]) for k in ("min", "max", "avg")}
        except (KeyError, TypeError, ValueError):
            continue
    return {}


def lag_from_checkpoint(checkpoint_dir, bootstrap: str | None = None) -> dict:
    """{topic: {partition: lag}}: the broker's latest offsets now minus where a restart of the query would resume."""
    from streamlab.observe import checkpoint

    committed = checkpoint.committed_offsets(checkpoint_dir)
    if committed is not None:
        reached = committed.kafka()
    else:  # nothing finished yet: a restart (re-)runs batch 0, which starts at the initial offsets
        reached = checkpoint.kafka_offsets(checkpoint.initial_offsets(checkpoint_dir))
    if not reached:
        raise ValueError(f"{checkpoint_dir} holds no Kafka offsets yet (no committed batch, no sources/0/0)")
    latest = latest_offsets(list(reached), bootstrap)
    return {topic: {p: max(0, end - reached[topic].get(p, 0)) for p, end in parts.items()}
            for topic, parts in latest.items()}


def total_lag(lag_or_progress) -> int:
    """The lag summed over every partition, from a lag dict or a progress report."""
    data = as_dict(lag_or_progress) if not isinstance(lag_or_progress, dict) else lag_or_progress
    if "sources" in data or "batchId" in data:
        data = lag_from_progress(data)
    return sum(sum(parts.values()) for parts in data.values())


def _has_kafka_lag(progress: dict) -> bool:
    return any(source_offsets(s.get("latestOffset")) for s in progress.get("sources") or [])


def classify(progress_events) -> str:
    """"stable", "recovering" or "falling behind" from recent progress reports, oldest first (query.recentProgress).

    Falling behind: the lag grew over the window (more steps up than down), or it is not shrinking while input
    arrives faster than it is processed (inputRowsPerSecond > processedRowsPerSecond, the sign of batches growing
    batch after batch). Recovering: a lag is left but it shrank over the window. Stable: otherwise, including a
    lag that is flat or has drained. Small moves (under 10 records or 5% of the largest lag) count as flat.
    """
    events = [as_dict(e) for e in progress_events if e is not None]
    lags = [total_lag(e) for e in events if _has_kafka_lag(e)]
    busy = [e for e in events if (e.get("numInputRows") or 0) > 0]
    rate_deficit = bool(busy) and sum(e.get("inputRowsPerSecond") or 0.0 for e in busy) > \
        sum(e.get("processedRowsPerSecond") or 0.0 for e in busy)
    if len(lags) < 2:
        if lags and lags[-1] == 0:
            return STABLE
        return GROWING if rate_deficit else STABLE
    tolerance = max(10, 0.05 * max(lags))
    change = lags[-1] - lags[0]
    ups = sum(1 for a, b in zip(lags, lags[1:]) if b - a > tolerance / len(lags))
    downs = sum(1 for a, b in zip(lags, lags[1:]) if a - b > tolerance / len(lags))
    if change > tolerance and ups >= downs:
        return GROWING
    if change < -tolerance and downs >= ups:
        return STABLE if lags[-1] <= tolerance else RECOVERING
    if rate_deficit and lags[-1] > tolerance:
        return GROWING
    return STABLE


_monitors: "weakref.WeakSet[LagMonitor]" = weakref.WeakSet()


def stop_monitors() -> None:
    """Stop every LagMonitor still polling (also called when the kernel exits)."""
    for monitor in list(_monitors):
        monitor.stop()


teardown.register("lag monitors", stop_monitors)


class LagMonitor:
    """Polls a running query's lastProgress from a thread, records lag over time and warns when it keeps growing.

    `history` holds one dict per poll: time (s since start), batchId, lag (total), per-partition lag, input and
    processed rows per second. A warning goes to `on_warning` when the lag grew on `grow_polls` consecutive polls
    that saw a new batch (polls between two batches neither extend nor break the streak), once per streak.
    """

    def __init__(self, query, interval: float = 1.0, on_warning=print, grow_polls: int = 3):
        if interval <= 0:
            raise ValueError("interval must be > 0 seconds")
        if grow_polls < 1:
            raise ValueError("grow_polls must be >= 1")
        self.query = query
        self.interval = interval
        self.on_warning = on_warning
        self.grow_polls = grow_polls
        self.history: list[dict] = []
        self.warnings: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = 0.0
        self._last_batch = None
        self._last_lag = None
        self._streak = 0
        self._batches: deque = deque(maxlen=100)  # the progress reports of the last batches seen

    def start(self) -> "LagMonitor":
        """Start polling (a no-op when already running); returns self."""
        if self._thread is not None and self._thread.is_alive():
            return self
        self._stop.clear()
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="LagMonitor", daemon=True)
        _monitors.add(self)
        self._thread.start()
        return self

    def stop(self) -> list[dict]:
        """Stop polling and wait for the thread; returns the history (safe to call twice)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        _monitors.discard(self)
        return self.history

    def __enter__(self) -> "LagMonitor":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def status(self) -> str:
        """classify() over the last ten batches seen."""
        return classify(list(self._batches)[-10:])

    def poll(self) -> dict | None:
        """Take one sample now (the thread calls this every `interval` seconds)."""
        progress = as_dict(self.query.lastProgress)
        if not progress:
            return None
        per_partition = lag_from_progress(progress)
        point = {"time": round(time.monotonic() - self._started, 3), "batchId": progress.get("batchId"),
                 "lag": total_lag(per_partition), "partitions": per_partition,
                 "inputRowsPerSecond": progress.get("inputRowsPerSecond"),
                 "processedRowsPerSecond": progress.get("processedRowsPerSecond")}
        self.history.append(point)
        if point["batchId"] != self._last_batch:
            self._batches.append(progress)
            self._track(point["lag"])
            self._last_batch = point["batchId"]
        return point

    def _track(self, lag: int) -> None:
        if self._last_lag is not None:
            self._streak = self._streak + 1 if lag > self._last_lag else 0
            if self._streak == self.grow_polls:
                message = (f"⚠ lag grew {self.grow_polls} batches in a row, now {lag:,} records: the query is "
                           "falling behind (if it keeps growing it needs more throughput: partitions or "
                           "minPartitions with cores to match, cheaper processing)")
                self.warnings.append(message)
                self.on_warning(message)
        self._last_lag = lag

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except Exception as exc:  # a query that stopped or failed: record why and end quietly
                self.warnings.append(f"monitor stopped: {exc}")
                return
            if not getattr(self.query, "isActive", True):
                return
            self._stop.wait(self.interval)
