"""The notebook life cycle: the one setup cell, topics made for a lesson, and the cleanup at the end."""
from __future__ import annotations

import atexit

from . import topics as _topics
from .broker import ensure_broker
from .session import chosen_engine, engine, spark

_made_topics: list[str] = []
_bootstrap: list[str] = []

ENGINE_NOTES = {
    "connector": "Spark's own spark-sql-kafka-0-10 connector",
    "offline": "streamlab's offline fallback (noida-db and a re-creation of the connector on Spark's Python "
               "Data Source API)",
}


def setup():
    """Start or reuse the broker and Spark, print one line about each, and return (spark, bootstrap)."""
    bootstrap = ensure_broker()
    _bootstrap[:] = [bootstrap]
    session = spark()
    kind = engine(session)
    why = chosen_engine()[1]
    print(f"broker    {bootstrap}")
    print(f"spark     {session.version} (local[2])")
    print(f"engine    {kind}: {ENGINE_NOTES[kind]}" + (f" ({why})" if kind == "offline" else ""))
    return session, bootstrap


def new_topic(prefix: str = "lab", partitions: int = 1) -> str:
    """A fresh topic for this notebook, deleted by cleanup()."""
    name = _topics.create_topic(_topics.unique_name(prefix), partitions)
    _made_topics.append(name)
    return name


def cleanup(session=None) -> str:
    """Stop every streaming query and background producer, delete this notebook's topics; say what was done."""
    from pyspark.sql import SparkSession

    from .producer import stop_all

    session = session or SparkSession.getActiveSession()
    queries = list(session.streams.active) if session is not None else []
    for query in queries:
        query.stop()
    stop_all()
    gone = list(_made_topics)
    if gone:
        _topics.delete_topic(*gone)
    _made_topics.clear()
    return f"stopped {len(queries)} queries and every background producer, deleted {len(gone)} topics"


@atexit.register
def _at_exit() -> None:
    # Only on a broker that still answers: an exit handler must never start a broker the learner stopped.
    from .broker import probe

    try:
        if _made_topics and _bootstrap and probe(_bootstrap[0], timeout=1.0) == "kafka":
            _topics.delete_topic(*_made_topics, bootstrap=_bootstrap[0])
    except Exception:
        pass  # the broker may go away while the kernel shuts down
