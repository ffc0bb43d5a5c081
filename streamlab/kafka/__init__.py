"""The offline engine: Spark's Kafka source and sink, written on PySpark's Python Data Source API.

Spark reserves the name "kafka" for its own connector (its lookup fails with "Failed to find data source:
kafka" before user-defined sources are consulted), so the data source is registered as `streamlab_kafka`
and `install` routes `format("kafka")` to it on this session's readers and writers.
"""
from __future__ import annotations

OFFLINE_NAME = "streamlab_kafka"

_patched = False


def install(session) -> None:
    """Register the offline Kafka data source on `session` and route format("kafka") to it."""
    from .source import KafkaDataSource

    if not getattr(session, "_streamlab_kafka_registered", False):
        session.dataSource.register(KafkaDataSource)
        session._streamlab_kafka_registered = True
    _route_kafka_format()
    # Spark refuses the default save mode (ErrorIfExists) for any Python data source; the sink restores Kafka's rules.
    from .sink import route_save_modes

    route_save_modes()


def _route_kafka_format() -> None:
    global _patched
    if _patched:
        return
    from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter
    from pyspark.sql.streaming.readwriter import DataStreamReader, DataStreamWriter

    for cls in (DataFrameReader, DataFrameWriter, DataStreamReader, DataStreamWriter):
        original = cls.format

        def routed(self, source, _original=original):
            if isinstance(source, str) and source.strip().lower() == "kafka":
                source = OFFLINE_NAME
            return _original(self, source)

        routed.__doc__ = original.__doc__
        cls.format = routed
    _patched = True
