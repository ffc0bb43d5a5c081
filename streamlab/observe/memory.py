"""What a batch holds in memory: the JVM heap's peak while a query runs, so a lesson can measure the memory myth.

"An uncapped batch holds the whole backlog in memory" is only true when something buffers the batch: tasks stream
their records through the operators (a Kafka task reads a partition's range fetch by fetch), so a map-only batch
needs a few fetches' worth of heap whatever its size. A `collect()` (or `toPandas()`) in `foreachBatch`, a shuffle
or state does hold it. In the lab's `local[2]` session the executors run inside the driver's JVM, so the JVM's
heap sees both. A peak of "heap used" would mostly measure garbage (how much the young generation fills before it
is collected), so we sample the *live* heap instead: the heap used right after a full collection, several times
a second while the batch runs, against its level before.
"""
from __future__ import annotations

import time

from streamlab.lab.lifecycle import new_checkpoint

MIB = 1024 * 1024


def heap_growth(spark, run, every: float = 0.25) -> tuple:
    """Call `run()`; return (its result, the most the JVM's live heap rose above its level before, in MiB).

    The live heap is the heap used right after a full collection: a sampler thread collects and reads it every
    `every` seconds while `run()` works, so garbage does not count, only what the JVM still holds.
    """
    import threading

    jvm = spark.sparkContext._jvm
    bean = jvm.java.lang.management.ManagementFactory.getMemoryMXBean()

    def live() -> int:
        bean.gc()
        return bean.getHeapMemoryUsage().getUsed()

    base, samples, done = live(), [], threading.Event()

    def sample():
        while not done.is_set():
            samples.append(live())
            done.wait(every)

    sampler = threading.Thread(target=sample, name="streamlab-heap-sampler", daemon=True)
    sampler.start()
    try:
        result = run()
    finally:
        done.set()
        sampler.join()
    return result, round(max(0, max(samples, default=base) - base) / MIB, 1)


def fill_burst(spark, topic: str, records: int, value_bytes: int = 1000, bootstrap: str | None = None) -> None:
    """Write `records` records of `value_bytes` random letters and digits (they hardly compress) with a batch write."""
    from streamlab.lab.broker import ensure_broker

    (spark.range(records).selectExpr(f"randstr({int(value_bytes)}) AS value")
     .write.format("kafka").option("kafka.bootstrap.servers", bootstrap or ensure_broker())
     .option("topic", topic).save())


def batch_memory(spark, topic: str, sink, bootstrap: str | None = None, timeout: float = 120.0) -> dict:
    """Read all of `topic` uncapped (`availableNow`: one batch) into `sink(df, batch_id)`; rows and heap growth.

    {"batches": rows of each batch that read data, "heap_mib": the live heap's peak above its level before the run, "seconds"}.
    """
    from streamlab.lab.broker import ensure_broker

    def run():
        query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap or ensure_broker())
                 .option("subscribe", topic).option("startingOffsets", "earliest").load()
                 .writeStream.foreachBatch(sink).option("checkpointLocation", new_checkpoint("memory"))
                 .trigger(availableNow=True).start())
        if not query.awaitTermination(timeout):
            query.stop()
            raise TimeoutError(f"the batch over {topic} did not finish within {timeout:.0f} s")
        if query.exception() is not None:
            raise query.exception()
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

    t0 = time.monotonic()
    batches, grown = heap_growth(spark, run)
    return {"batches": batches, "heap_mib": grown, "seconds": round(time.monotonic() - t0, 1)}


def map_only(df, batch_id) -> None:
    """A map-only sink: every record cast to a string and written nowhere (`noop`), streamed task by task."""
    df.selectExpr("CAST(value AS STRING) AS text").write.format("noop").mode("overwrite").save()


def collects(df, batch_id) -> None:
    """A sink that buffers: `collect()` brings the whole batch to the driver at once."""
    df.selectExpr("CAST(value AS STRING) AS text").collect()
