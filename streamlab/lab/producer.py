"""Test data for the lab's topics: a one-shot backfill (`produce`) and a paced `BackgroundProducer`.

Records are JSON events by default (`default_key` / `default_value`); pass `key_fn` / `value_fn` taking the
record's sequence number to send anything else (bytes, str, dict/list as JSON, None).
"""
from __future__ import annotations

import json
import threading
import time
import weakref
from collections import deque
from typing import Callable, Iterable

from streamlab.lab import teardown
from streamlab.lab.broker import ensure_broker

ACTIONS = ("view", "click", "add_to_cart", "purchase", "refund")
USERS = 50
PROGRESS_FROM = 10_000  # produce() shows a progress bar from this many records
# Big batches cut the client's per-record CPU (about 15% at 3,000 records/s against linger 5 ms) for at most
# 20 ms of delay; give up on a send after 10 s rather than blocking a minute while a demo recreates a topic.
DEFAULT_OPTIONS = {"linger_ms": 20, "batch_size": 262_144, "max_block_ms": 10_000}


def default_key(i: int) -> str:
    """The key of event `i`: its user, so one user's events share a partition."""
    return f"user-{i % USERS}"


def default_value(i: int) -> str:
    """Event `i` of the default stream: a small JSON order event stamped with the time it is made."""
    # Formatted by hand: json.dumps would cost a third of the time budget of a record at 20,000/s.
    return (f'{{"id":{i},"user":"user-{i % USERS}","action":"{ACTIONS[(i * 7) % len(ACTIONS)]}",'
            f'"amount":{((i * 37) % 10_000) / 100:.2f},"ts":{int(time.time() * 1000)}}}')


def encode(data) -> bytes | None:
    """Bytes for Kafka: bytes as they are, str as UTF-8, None as null, anything else as JSON."""
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode()
    return json.dumps(data, separators=(",", ":")).encode()


def _producer(bootstrap: str | None, options: dict, own_exit: bool = False):
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap or ensure_broker(), **{**DEFAULT_OPTIONS, **options})
    if own_exit:
        # kafka-python's exit handler calls close(), which raises (a traceback at exit) when the broker is away:
        # streamlab's own handler stops this producer instead, within seconds, saying what was not delivered.
        producer._unregister_cleanup()
    return producer


def close_now(producer, timeout: float = 1.0) -> None:
    """Close a kafka-python producer within about 2 x `timeout` s, even with the broker away (its close() then
    raises at its flush and leaves the sender thread running: that thread is force-closed here, and joined)."""
    try:
        producer.close(timeout=timeout)
        return
    except Exception:
        pass
    try:
        producer._unregister_cleanup()
        sender = producer._sender
        if sender is not None:
            sender.force_close()
            # It ends once its current poll returns (a few ms): wait for that, so no thread outlives the call.
            sender.join(timeout)
        producer._closed = True
    except Exception:
        pass


class _Records:
    """Builds record i for a topic from the key/value functions and the partition list."""

    RECHECK_EVERY = 1000  # records between two looks at the topic's partition count

    def __init__(self, topic: str, key_fn, value_fn, partitions):
        self.topic = topic
        self.key_fn = key_fn or default_key
        self.value_fn = value_fn or default_value
        self.partitions = list(partitions) if partitions is not None else None
        if self.partitions is not None and not self.partitions:
            raise ValueError("partitions must be None (let Kafka choose) or a non-empty list of partition numbers")
        self._by_key: dict = {}  # key bytes -> partition, for the partition count in self._count
        self._count = 0
        self._until_check = 0

    def _keyed(self, producer, key: bytes) -> int:
        # Kafka's default partitioner (murmur2 of the key, modulo all partitions), remembered per key: computing it
        # in Python on every send would cost a fifth of the time budget at high rates.
        from kafka.partitioner.default import murmur2

        self._until_check -= 1
        if self._until_check <= 0:
            count = len(producer.partitions_for(self.topic))
            if count != self._count:
                self._by_key.clear()
                self._count = count
            self._until_check = self.RECHECK_EVERY
        partition = self._by_key.get(key)
        if partition is None:
            partition = (murmur2(key) & 0x7FFFFFFF) % self._count
            if len(self._by_key) < 100_000:
                self._by_key[key] = partition
        return partition

    def send(self, producer, i: int):
        key = encode(self.key_fn(i))
        if self.partitions:
            partition = self.partitions[i % len(self.partitions)]
        elif key is not None:
            partition = self._keyed(producer, key)
        else:
            partition = None  # Kafka's sticky partitioner
        return producer.send(self.topic, key=key, value=encode(self.value_fn(i)), partition=partition)


def produce(topic: str, n: int, *, key_fn: Callable | None = None, value_fn: Callable | None = None,
            partitions: Iterable[int] | None = None, start: int = 0, bootstrap: str | None = None,
            progress: bool | None = None, **producer_options) -> int:
    """Send `n` records to `topic` as fast as possible, flush, and return how many were sent."""
    if n < 0:
        raise ValueError("n must be >= 0")
    records = _Records(topic, key_fn, value_fn, partitions)
    producer = _producer(bootstrap, producer_options)
    show = progress if progress is not None else n >= PROGRESS_FROM
    bar = None
    if show:
        from tqdm.auto import tqdm

        bar = tqdm(total=n, desc=f"→ {topic}", unit="rec", unit_scale=True)
    try:
        inflight: list = []
        for i in range(start, start + n):
            inflight.append(records.send(producer, i))
            if (i - start + 1) % 1000 == 0:
                if bar is not None:
                    bar.update(1000)
                if len(inflight) >= 20_000:  # keep memory flat for millions of records
                    inflight = _pending(inflight, topic)
        producer.flush()
        _pending(inflight, topic)
        if bar is not None:
            bar.update(n - bar.n)
        return n
    finally:
        if bar is not None:
            bar.close()
        producer.close(timeout=10)


def _pending(futures: list, topic: str) -> list:
    # Never report records that did not arrive as sent.
    for future in futures:
        if future.is_done and future.failed():
            raise RuntimeError(f"A record was not delivered to {topic}: {future.exception!r}") from future.exception
    return [f for f in futures if not f.is_done]


_running: "weakref.WeakSet[BackgroundProducer]" = weakref.WeakSet()

# A background producer outlives broker outages of any length: its batches never expire (kafka-python's 120 s
# delivery timeout would drop them, and an idempotent producer whose batch expired does not recover), it retries
# for ever and reconnects within 2 s of the broker's return, and a send never blocks the thread more than 2 s.
BACKGROUND_OPTIONS = {"delivery_timeout_ms": 2**31 - 1, "reconnect_backoff_max_ms": 2000, "max_block_ms": 2000}
MAX_PENDING = 500_000  # records waiting for the broker before the thread pauses sending (memory stays bounded)
STOP_WAIT_S = 5.0  # stop() waits this long for what is pending, then gives it up and says so


def stop_all(timeout: float = STOP_WAIT_S) -> list[str]:
    """Stop every BackgroundProducer still running, within about `timeout` s in all; one line per loss."""
    producers = list(_running)
    lines: list[str] = []
    threads = [threading.Thread(target=lambda p=p: lines.append(p._stop_line(timeout)), daemon=True)
               for p in producers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout + 5)
    return [line for line in lines if line]


def _stop_all_at_exit() -> None:
    """At the kernel's exit: every producer stopped within seconds whatever the broker does; losses said."""
    import sys

    for line in stop_all(3.0):
        print(f"streamlab at exit: {line}", file=sys.stderr)


teardown.register("background producers", _stop_all_at_exit)


class BackgroundProducer:
    """Sends records to a topic from a background thread at a steady, adjustable rate (records/second).

    `sent` counts the records handed to the producer, `delivered` those the broker acknowledged, `pending` those
    still waiting (a broker outage: they are sent when it is back, however long it takes), `failed` those given
    up (by stop() while the broker was away, or refused by the broker); `last_error` says why. Nothing is counted
    twice and nothing disappears: sent == delivered + pending + failed.

    >>> with BackgroundProducer("orders", rate=500) as p:   # doctest: +SKIP
    ...     p.set_rate(5000); p.burst(20_000); p.set_rate(0)  # faster, a spike, pause
    """

    def __init__(self, topic: str, rate: float = 100.0, *, partitions: Iterable[int] | None = None,
                 key_fn: Callable | None = None, value_fn: Callable | None = None, bootstrap: str | None = None,
                 **producer_options):
        self.topic = topic
        self._records = _Records(topic, key_fn, value_fn, partitions)
        self._bootstrap = bootstrap
        self._options = {**BACKGROUND_OPTIONS, **producer_options}
        self._rate = self._check_rate(rate)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._producer = None
        self._next = 0  # sequence number of the next record
        self._burst = 0  # records asked for by burst() and not sent yet
        self._inflight: deque = deque()
        self.sent = 0
        self.delivered = 0
        self.failed = 0
        self.errors = 0  # sends that raised (the broker away, the buffer full): nothing was counted as sent
        self.last_error: BaseException | None = None

    @staticmethod
    def _check_rate(rate) -> float:
        try:
            rate = float(rate)
        except (TypeError, ValueError):
            raise ValueError(f"rate={rate!r} is not a number: give records/second, e.g. rate=500 (0 pauses)") from None
        if not rate >= 0 or rate == float("inf"):
            raise ValueError(f"rate={rate!r}: give records/second >= 0, e.g. rate=500 (0 pauses)")
        return rate

    @property
    def rate(self) -> float:
        """The current target rate in records/second (0 = paused)."""
        return self._rate

    @property
    def running(self) -> bool:
        """Whether the sending thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def pending(self) -> int:
        """Records handed to the producer that the broker has not acknowledged yet (nor were given up)."""
        return self.sent - self.delivered - self.failed

    def readout(self) -> str:
        """One line: sent, delivered, pending and failed, and why the last send failed."""
        line = f"{self.topic}: sent {self.sent:,}, delivered {self.delivered:,}"
        if self.pending:
            line += f", {self.pending:,} pending"
        if self.failed:
            line += f", {self.failed:,} NOT delivered"
        if self.last_error is not None and (self.pending or self.failed or self.errors):
            from streamlab.errors import first_line

            line += f" (last error: {first_line(self.last_error, 160)})"
        return line

    def start(self) -> "BackgroundProducer":
        """Start sending (a no-op when already running); returns self."""
        if self.running:
            return self
        self._stopping.clear()
        self._producer = _producer(self._bootstrap, self._options, own_exit=True)
        self._thread = threading.Thread(target=self._run, name=f"BackgroundProducer({self.topic})", daemon=True)
        _running.add(self)
        self._thread.start()
        return self

    def set_rate(self, rate: float) -> None:
        """Change the rate while running; 0 pauses, and the new rate counts from now (no catch-up burst)."""
        self._rate = self._check_rate(rate)
        self._wake.set()

    def burst(self, n: int) -> None:
        """Send `n` extra records as fast as possible, on top of the steady rate (returns at once)."""
        if not isinstance(n, int) or n < 0:
            raise ValueError(f"burst(n={n!r}): n must be a whole number of records >= 0")
        if not self.running:
            raise RuntimeError("start() the producer before asking for a burst")
        with self._lock:
            self._burst += n
        self._wake.set()

    def stop(self, timeout: float = STOP_WAIT_S) -> int:
        """Stop the thread, wait up to `timeout` s for what is pending, close; returns the records sent (safe to
        call twice). What the broker did not acknowledge by then is counted in `failed` and printed."""
        line = self._stop_line(timeout)
        if line:
            print(f"⚠  {line}")
        return self.sent

    def _stop_line(self, timeout: float) -> str:
        """stop()'s work; the line to print when records were not delivered, else ''."""
        deadline = time.monotonic() + timeout
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(max(0.5, deadline - time.monotonic()))  # a send blocks at most max_block_ms
            self._thread = None
        with self._lock:
            self._burst = 0  # a burst not sent by now is dropped, not carried into a later start()
        producer, self._producer = self._producer, None
        _running.discard(self)
        if producer is None:
            return ""
        try:
            try:
                producer.flush(timeout=max(0.1, deadline - time.monotonic()))
            except Exception as exc:  # KafkaTimeoutError: the broker is away
                self.last_error = exc
            self._settle(final=True)
        finally:
            close_now(producer)
        if self.failed:
            return (f"BackgroundProducer({self.topic!r}): {self.failed:,} of {self.sent:,} records were NOT "
                    f"delivered ({self.readout()})")
        return ""

    def __enter__(self) -> "BackgroundProducer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        counts = f"sent={self.sent}, delivered={self.delivered}, pending={self.pending}, failed={self.failed}"
        return f"BackgroundProducer({self.topic!r}, rate={self._rate:g}/s, {counts}, {state})"

    # -- the sending thread --------------------------------------------------------------------------------

    def _settle(self, final: bool = False) -> None:
        # Futures complete roughly in order, so looking at the oldest ones is enough (cheaper than a callback each).
        inflight = self._inflight
        while inflight and (final or inflight[0].is_done):
            future = inflight.popleft()
            if future.is_done and future.succeeded():
                self.delivered += 1
            else:  # refused by the broker, or still waiting when stop() gave up on it
                self.failed += 1
                if future.is_done:
                    self.last_error = future.exception

    def _send(self, count: int) -> None:
        producer, records, inflight = self._producer, self._records, self._inflight
        for _ in range(count):
            inflight.append(records.send(producer, self._next))
            self._next += 1
            self.sent += 1
        self._settle()

    def _safely(self, count: int) -> bool:
        # A failed send (topic deleted, broker away) must not kill the thread: count it, pause, go on. The record
        # was not accepted, so it is not counted as sent, and its number is tried again next.
        self._settle()
        if self.pending >= MAX_PENDING:  # the broker is away: wait for it rather than fill the memory
            self._stopping.wait(0.2)
            return False
        try:
            self._send(count)
            return True
        except Exception as exc:
            self.errors += 1
            self.last_error = exc
            self._stopping.wait(0.5)
            return False

    def _run(self) -> None:
        rate = self._rate
        origin, base = time.monotonic(), self.sent  # pacing: by time t, base + rate * (t - origin) records
        while not self._stopping.is_set():
            with self._lock:
                burst = min(self._burst, 2000)  # in slices, so stop() and set_rate() stay responsive
                self._burst -= burst
            if burst:
                before = self.sent
                if not self._safely(burst):  # what was not accepted is still owed
                    with self._lock:
                        self._burst += burst - (self.sent - before)
                origin, base = time.monotonic(), self.sent  # the burst does not count against the rate
                continue
            if self._rate != rate:
                rate = self._rate
                origin, base = time.monotonic(), self.sent
            if rate <= 0:
                self._wake.wait(0.5)
                self._wake.clear()
                origin, base = time.monotonic(), self.sent
                continue
            elapsed = time.monotonic() - origin
            due = int(elapsed * rate) - (self.sent - base)
            if due > rate:  # more than a second behind (the machine stalled): resume, do not flood
                origin, base, due = time.monotonic(), self.sent, 1
            if due > 0:
                if not self._safely(min(due, max(1, int(rate / 50)))):
                    origin, base = time.monotonic(), self.sent  # after a failure, resume without a flood
                continue
            wait = (self.sent - base + 1) / rate - elapsed
            if self._wake.wait(min(max(wait, 0.0), 0.1)):
                self._wake.clear()
