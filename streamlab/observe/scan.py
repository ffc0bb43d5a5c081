"""What a micro-batch's Kafka scan counted: the connector's own task metrics, which progress events do not carry.

The Kafka scan declares two custom metrics (`KafkaSourceProvider`: `offsetOutOfRange`, "estimated number of
fetched offsets out of range", and `dataLoss`, "number of data loss error"); its tasks count them when offsets
planned for a batch are gone by the time they fetch them (with `failOnDataLoss=false` they skip to what is left).
They land in the SQL metrics of the batch's scan node, next to `numOutputRows`, not in `lastProgress`. A
`noop` sink keeps the batch one plan, so the query's last execution holds them.
"""
from __future__ import annotations

from streamlab.errors import first_line

METRICS = ("numOutputRows", "offsetOutOfRange", "dataLoss")


def scan_metrics(query) -> dict:
    """{metric: value} of the Kafka scan in a query's last batch (numOutputRows, offsetOutOfRange, dataLoss)."""
    execution = query._jsq.streamingQuery().lastExecution()
    if execution is None:
        return {}
    leaves, found = execution.executedPlan().collectLeaves(), {}
    for i in range(leaves.size()):
        metrics = leaves.apply(i).metrics()
        for name in METRICS:
            option = metrics.get(name)
            if option.isDefined():
                found[name] = found.get(name, 0) + int(option.get().value())
    return found


def run_available(spark, topic: str, checkpoint: str, bootstrap: str | None = None, timeout: float = 120.0,
                  **options) -> dict:
    """Run `topic` (from earliest on a new checkpoint) to its end with availableNow into `noop`; plain results.

    {"rows": rows read, "error": the first line of the query's error or None, "scan": scan_metrics of its last
    batch}. Extra keyword arguments are reader options (e.g. failOnDataLoss="false").
    """
    from streamlab.lab.broker import ensure_broker

    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap or ensure_broker())
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    try:
        query = (reader.options(**{k: str(v) for k, v in options.items()}).load().writeStream.format("noop")
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    except Exception as exc:  # refused when it starts (a bad option, an inconsistent checkpoint)
        return {"rows": 0, "error": first_line(exc), "scan": {}}
    error = None
    try:
        if not query.awaitTermination(timeout):
            query.stop()
            error = f"did not finish within {timeout:.0f} s"
    except Exception as exc:  # the query failed: awaitTermination raises its error
        error = first_line(exc)
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    return {"rows": rows, "error": error, "scan": scan_metrics(query) if error is None else {}}
