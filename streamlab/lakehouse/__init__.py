"""The lakehouse destination (module 10): Kafka → Spark → Delta Lake, and which ways of writing it are exactly-once.

Delta is the course's one lakehouse table format because it is the one with a release for Spark 4.2 (Delta Lake
4.4.0; Apache Iceberg has none yet). `tables` reads a table back (its ids, history and file count) and says in one
line when Delta is not set up; `sinks` has the four ways of writing a stream into it that the crash lab compares.
"""
from streamlab.lakehouse.sinks import (DeltaAppendSink, DeltaMergeSink, DeltaSink, DeltaTxnAppendSink,
                                       latest_per_key, merge_batch)
from streamlab.lakehouse.tables import delta_ready, file_count, history, ids, require_delta

__all__ = ["DeltaAppendSink", "DeltaMergeSink", "DeltaSink", "DeltaTxnAppendSink", "delta_ready", "file_count",
           "history", "ids", "latest_per_key", "merge_batch", "require_delta"]
