"""Rate limiting (module 5): sizing a cap, watching a query's batches, and a live scenario for a rate controller.

Structured Streaming has no adaptive rate control: `maxOffsetsPerTrigger` is read when a query starts. A controller
therefore has to read progress events and restart the query (on the same checkpoint) with a new cap; `ControlledDemo`
(a `streamlab.demo.live.LiveDemo`) runs exactly that, live.
"""
from __future__ import annotations

from streamlab.observe import lag as _lag
from streamlab.lab.lifecycle import new_checkpoint
from streamlab.demo import LiveDemo


def data_events(events) -> list[dict]:
    """The progress events (as dicts) of batches that read data."""
    return [e for e in map(_lag.as_dict, events) if e.get("numInputRows")]


def batch_table(events):
    """A DataFrame of data batches: batch, rows, duration_ms (triggerExecution), progress lag after the batch."""
    import pandas as pd

    rows = [{"batch": e["batchId"], "rows": e["numInputRows"],
             "duration_ms": (e.get("durationMs") or {}).get("triggerExecution", 0),
             "lag": _lag.total_lag(e)} for e in data_events(events)]
    return pd.DataFrame(rows, columns=["batch", "rows", "duration_ms", "lag"])


def least_squares_slope(events) -> float | None:
    """The slope of triggerExecution (ms) against numInputRows over the data batches: the cost of one record."""
    points = [(e["numInputRows"], (e.get("durationMs") or {}).get("triggerExecution", 0)) for e in data_events(events)]
    if len(points) < 2:
        return None
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def catch_up_run(spark, topic: str, options: dict | None, trigger: dict | None, *, timeout: float = 90.0,
                 bootstrap: str | None = None) -> dict:
    """Run a stream from the earliest offsets with extra reader `options` and `trigger` (kwargs of .trigger());
    {'rows': [rows per data batch], 'stopped': whether it stopped by itself, 'error': the failure's first line (its
    cause, not Spark's "[STREAM_FAILED] Query … terminated" envelope) or None}."""
    from streamlab.errors import first_line
    from streamlab.lab.broker import ensure_broker

    bootstrap = bootstrap or ensure_broker()
    sizes: list = []
    try:
        writer = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                  .option("subscribe", topic).option("startingOffsets", "earliest")
                  .options(**{k: str(v) for k, v in (options or {}).items()}).load()
                  .writeStream.foreachBatch(lambda df, _: sizes.append(df.count()))
                  .option("checkpointLocation", new_checkpoint("catch-up")))
        query = writer.trigger(**trigger).start() if trigger else writer.start()
    except Exception as exc:  # a bad option or trigger: reported by the checks
        return {"rows": [], "stopped": False, "error": first_line(exc)}
    try:
        stopped = query.awaitTermination(timeout)
    except Exception:  # the query failed: awaitTermination raises what query.exception() keeps
        stopped = False
    if not stopped:
        query.stop()
    error = query.exception()
    return {"rows": [n for n in sizes if n], "stopped": bool(stopped),
            "error": None if error is None else first_line(error)}


class ControlledDemo(LiveDemo):
    """A LiveDemo whose cap is picked by `controller(progress, cap)` after every batch that read data.

    The controller gets the batch's progress event (a dict) and the cap the query runs with, and returns the next
    cap. A different cap restarts the query on the same checkpoint (Spark reads the cap only at start), drawn as a
    restart marker; `caps` records (seconds since start, cap) for every change, `decisions` (event, cap, answer) for
    every question. A controller that raises is not asked again, and its error is kept in `controller_error`.
    """

    def __init__(self, spark, topic: str, *, controller=None, **options):
        super().__init__(spark, topic, **options)
        self.controller = controller
        self.caps: list = []
        self.controller_error: str | None = None
        self._asked = 0
        self.decisions: list = []  # (event, cap, proposed) for every data batch the controller was asked about

    def _apply_script(self, now: float) -> None:
        super()._apply_script(now)
        if not callable(self.controller) or self.controller_error or self._pending_restart:
            return
        fresh, self._asked = self.events[self._asked:], len(self.events)
        for event in fresh:
            if not event.get("numInputRows"):
                continue
            cap = self.settings["cap"]
            try:
                proposed = int(self.controller(dict(event), cap))
                if proposed < 1:
                    raise ValueError(f"a cap must be at least 1, got {proposed}")
                self.decisions.append((event, cap, proposed))
            except Exception as exc:  # the learner's controller: keep the demo running, report it
                self.controller_error = f"{type(exc).__name__}: {exc}"
                self.warn(f"the controller raised {self.controller_error}; the cap stays at {cap}")
                return
            if proposed != cap:
                self.caps.append((round(now, 2), proposed))
                self._auto = True  # the controller's move, not a person's
                try:
                    self.set("cap", proposed)
                finally:
                    self._auto = False
                return
