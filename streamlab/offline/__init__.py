"""The offline engine: Spark's Kafka source and sink, written on PySpark's Python Data Source API.

Spark reserves the name "kafka" for its own connector (its lookup fails with "Failed to find data source:
kafka" before user-defined sources are consulted), so the data source is registered as `streamlab_kafka`.
`register` only adds that name (a session can then run both stacks: `format("kafka")` is the connector,
`format("streamlab_kafka")` the offline engine); `install` also routes `format("kafka")` to it, for a session
that has no connector.
"""
from __future__ import annotations

OFFLINE_NAME = "streamlab_kafka"
FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(session) -> None:
    """Register the offline Kafka data source on `session` as format("streamlab_kafka"), leaving "kafka" alone."""
    from streamlab.offline.source import KafkaDataSource, route_reads
    from streamlab.offline.sink import route_save_modes

    if not getattr(session, "_streamlab_kafka_registered", False):
        session.dataSource.register(KafkaDataSource)
        session._streamlab_kafka_registered = True
    # A batch read binds earliest/latest anew at every action, as the connector's does (source.replan_each_action).
    session.conf.set(FILTER_PUSHDOWN_CONF, "true")
    # Spark refuses the default save mode (ErrorIfExists) for any Python data source; the sink restores Kafka's rules.
    route_save_modes()
    route_reads()


def install(session) -> None:
    """Register the offline Kafka data source on `session` and route format("kafka") to it."""
    from streamlab import patches

    register(session)
    patches.install("offline-kafka-format")


def serves(name) -> bool:
    """Whether format(`name`) is the offline engine: its own name, or "kafka" once `install` routed it."""
    name = name.strip().lower() if isinstance(name, str) else ""
    if name == OFFLINE_NAME:
        return True
    from streamlab import patches

    return name == "kafka" and patches.installed("offline-kafka-format")


def kafka_format_hooks(cls, originals: dict) -> dict:
    """The patch "offline-kafka-format" (streamlab.patches): `cls.format("kafka")` names the offline engine."""
    original = originals["format"]

    def routed(self, source, _original=original):
        if isinstance(source, str) and source.strip().lower() == "kafka":
            source = OFFLINE_NAME
        return _original(self, source)

    routed.__doc__ = original.__doc__
    return {"format": routed}
