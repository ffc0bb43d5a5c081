"""The offline engine: Spark's Kafka source and sink, written on PySpark's Python Data Source API.

Spark reserves the name "kafka" for its own connector (its lookup fails with "Failed to find data source:
kafka" before user-defined sources are consulted), so the data source is registered as `streamlab_kafka`.
`register` only adds that name (a session can then run both stacks: `format("kafka")` is the connector,
`format("streamlab_kafka")` the offline engine); `install` also routes `format("kafka")` to it, for a session
that has no connector.
"""
from __future__ import annotations

# The name and the routing of format("kafka") live in routing.py (the source and the sink ask them too); the
# patch "offline-kafka-format" and callers find them here.
from streamlab.offline.routing import OFFLINE_NAME, kafka_format_hooks, serves  # noqa: F401

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
