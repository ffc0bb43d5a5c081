"""The query guard: the patch "query-guard" (streamlab.patches) on PySpark's StreamingQuery and DataStreamWriter.

A query the broker watch (streamlab.lab.watch) stopped would leave awaitTermination() or processAllAvailable()
waiting, or raise a long Java trace, and its stop() would wait on a thread stuck in a Kafka call for a minute. The
guard makes those calls return at once with the watch's one line; a query that fails on a topic that is gone or a
bad option raises one line naming the fix (streamlab.lab.diagnose), and so does a start whose checkpoint folder
cannot be written.
"""
from __future__ import annotations

import time
from contextlib import contextmanager

from streamlab.errors import LabError
from streamlab.lab.diagnose import explain_failure, query_errors, unwritable_checkpoint
from streamlab.lab.watch import BrokerWatch


def query_guard(cls, originals: dict) -> dict:
    """The patch "query-guard" (streamlab.patches): StreamingQuery's waits and stop, DataStreamWriter's start."""
    start_original = originals.get("start")
    await_original = originals.get("awaitTermination")
    process_original = originals.get("processAllAvailable")
    stop_original = originals.get("stop")

    @contextmanager
    def awaited(query):
        try:
            qid = str(query.id)
        except query_errors():
            qid = None
        waits = BrokerWatch._awaited
        waits[qid] = waits.get(qid, 0) + 1
        try:
            yield
        finally:
            waits[qid] -= 1

    def explained(call, query, *args):
        """`call`, with a query's own failure turned into one line when its cause is a topic that is gone or a bad
        option (Spark names the first only inside a long plan, and not the option at all)."""
        try:
            return call(query, *args)
        except LabError:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever Spark raised: one line when its cause is known, else as is
            line = explain_failure(query, exc)
            if line:
                try:
                    BrokerWatch._raised.add(str(query.id))
                except query_errors():  # the gateway is gone: nothing more will be said anyway
                    pass
                raise LabError(line) from None
            raise

    def awaitTermination(self, timeout=None):
        if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
            return await_original(self, timeout)  # Spark's own message for a bad timeout
        deadline = None if timeout is None else time.monotonic() + float(timeout)
        with awaited(self):
            while True:
                step = 1.0 if deadline is None else max(0.001, min(1.0, deadline - time.monotonic()))
                ended = explained(await_original, self, step)
                why = BrokerWatch.stopped_by_watch(self)
                if why:
                    raise LabError(why)
                if ended:
                    return None if timeout is None else True
                if deadline is not None and time.monotonic() >= deadline:
                    return False

    def processAllAvailable(self):
        with awaited(self):
            why = BrokerWatch.stopped_by_watch(self)
            if why:
                raise LabError(why)
            result = explained(process_original, self)
            why = BrokerWatch.stopped_by_watch(self)
            if why:
                raise LabError(why)
            return result

    def start(self, *args, **kwargs):
        try:
            query = start_original(self, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - whatever Spark raised: one line for a checkpoint, else as is
            line = unwritable_checkpoint(exc)
            if line:
                raise LabError(line) from None
            raise
        watch = BrokerWatch._current
        if watch is not None:
            try:
                watch.notice_options(str(query.id), query)  # a bad cap is named even if the query fails at once
            except Exception:  # noqa: BLE001 - naming a bad option must never break a start
                pass
        return query

    def stop(self):
        if BrokerWatch.stopped_by_watch(self) and not self.isActive:
            return None  # the watch stopped it already; a second stop would wait on the same stuck thread
        return stop_original(self)

    if cls.__name__ == "DataStreamWriter":
        hooks = {"start": start}
    else:
        hooks = {"awaitTermination": awaitTermination, "processAllAvailable": processAllAvailable, "stop": stop}
    for name, fn in hooks.items():
        fn.__doc__, fn.__wrapped__ = originals[name].__doc__, originals[name]
    return hooks
