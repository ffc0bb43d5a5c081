"""Why a learner's query failed or would wait for ever, said in one line that names the fix.

Spark names a topic deleted under a query only inside a 53-line plan, does not name a cap that reads nothing at
all (maxOffsetsPerTrigger=0 plans empty batches with no error), and waits a minute on a kafka.bootstrap.servers
with a typo. These functions read a query's own Kafka options from its analyzed plan and turn an error text into
the line the learner needs; the broker watch (streamlab.lab.watch) and the query guard (streamlab.lab.guard) say
them. Apart from `kafka_sources` and `explain_failure`, which ask the JVM and the broker, they are pure functions of
their arguments.
"""
from __future__ import annotations

import json
import re

from streamlab.lab.broker import probe, topic_states


def query_errors() -> tuple[type[BaseException], ...]:
    """What asking a query about itself can raise: py4j's errors (the JVM or its session is gone), PySpark's own
    (Spark refused), AttributeError (a stand-in without that part). Called only in an `except`, once PySpark runs."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    return (Py4JError, PySparkException, AttributeError)


def label(query) -> str:
    """How a line names `query`: "query 'name'" when it has a name, else "a query"."""
    try:
        name = query.name
    except query_errors():
        name = None
    return f"query {name!r}" if name else "a query"


def same_servers(a: str, b: str) -> bool:
    """Whether two bootstrap lists share a broker (localhost and 127.0.0.1 are the same)."""
    norm = lambda s: {e.strip().replace("localhost:", "127.0.0.1:") for e in str(s).split(",") if e.strip()}
    return bool(norm(a) & norm(b))


def kafka_sources(query) -> list[dict]:
    """The options of each Kafka source of a running query ({} keys lower-case), read from its analyzed plan."""
    out = []
    try:
        plan = query._jsq.streamingQuery().analyzedPlan()
        leaves = plan.collectLeaves()
        for i in range(leaves.size()):
            leaf = leaves.apply(i)
            if leaf.getClass().getSimpleName() not in ("StreamingRelationV2", "StreamingRelation"):
                continue
            if leaf.getClass().getSimpleName() == "StreamingRelationV2":
                name, options = leaf.sourceName(), leaf.extraOptions().asCaseSensitiveMap()
            else:
                name, options = leaf.sourceName(), leaf.dataSource().options()
            if str(name).lower() not in ("kafka", "streamlab_kafka"):
                continue
            out.append({str(k).lower(): str(v) for k, v in dict(options).items()})
    except Exception:  # noqa: BLE001 - Spark's internal plan differs by version and source kind (a Scala map that
        pass  # dict() cannot read, a method that is not there): any surprise means "no Kafka source known", never
        # an error in place of the learner's own (explain_failure runs while a query's failure is being raised)
    return out


def missing_topics(source: dict, servers: str) -> list[str]:
    """The topics a Kafka source subscribes to or is assigned that the broker at `servers` does not have."""
    wanted = [t.strip() for t in source.get("subscribe", "").split(",") if t.strip()]
    if "assign" in source:
        try:
            wanted += list(json.loads(source["assign"]))
        except (ValueError, TypeError):
            pass
    if not wanted:
        return []
    states = topic_states(servers, wanted, timeout=1.0)
    return [t for t in wanted if states is not None and not states.get(t, True)]


def bad_option(source: dict, error: str = "") -> str | None:
    """One line naming a learner's bad Kafka source option (a cap Spark reads as 'nothing'), else None."""
    for knob in ("maxoffsetspertrigger", "minoffsetspertrigger"):
        raw = source.get(knob)
        if raw is None:
            continue
        pretty = "maxOffsetsPerTrigger" if knob.startswith("max") else "minOffsetsPerTrigger"
        try:
            value = int(raw.strip())
        except ValueError:
            return (f"option {pretty}={raw!r} is not a whole number of records, so Spark cannot start the query: "
                    f'give a positive count, e.g. .option("{pretty}", 1000), then re-run the cell.')
        fix = 'give a positive cap, e.g. .option("maxOffsetsPerTrigger", 1000), or drop the option to read all.'
        if knob.startswith("max") and value == 0:
            return ("option maxOffsetsPerTrigger=0: Spark reads NO records with a cap of 0 (each partition's share "
                    f"rounds to 0, so every batch is empty, with no error): {fix}")
        if knob.startswith("max") and value < 0:
            return (f"option maxOffsetsPerTrigger={value}: a negative cap makes Spark plan each partition's end "
                    "before its start: it reads NO records, or fails with 'Some data may have been lost' although "
                    f"nothing was lost: {fix}")
    if "NumberFormatException" in error or "For input string" in error:
        for key, raw in source.items():
            if key.endswith(("pertrigger", "partitions", "timeoutms", "ms")) and f'"{raw}"' in error:
                return f"option {key}={raw!r} is not a number, so Spark could not run the query: fix it and re-run."
    return None


def unreachable(servers: str, states: dict, lab: str, label: str) -> str:
    """The line for a query whose own kafka.bootstrap.servers do not answer."""
    if not states:
        why = f"kafka.bootstrap.servers={servers!r} is not a host:port list"
    else:
        parts = []
        for address, state in states.items():
            parts.append({"closed": f"nothing answers at {address}",
                          "unknown host": f"the host {address.rpartition(':')[0]!r} is not known",
                          "other": f"what answers at {address} is not Kafka"}.get(state, f"{address}: {state}"))
        why = f"it reads kafka.bootstrap.servers={servers!r}, but {'; '.join(parts)}"
    return (f"streamlab stopped {label}: {why}. The lab's broker is {lab}: write "
            f'.option("kafka.bootstrap.servers", bootstrap), then re-run the cell.')


def missing_topic(missing: list[str], servers: str, label: str, stopped: bool = True) -> str:
    """The line for a query whose subscribed topic does not exist (deleted, or a typo)."""
    names = ", ".join(repr(t) for t in missing)
    head = f"streamlab stopped {label}" if stopped else f"{label[0].upper()}{label[1:]} failed"
    return (f"{head}: topic {names} does not exist on {servers} (deleted, or a typo?). Make it again (re-run the "
            "cell that makes it with streamlab.new_topic(...)) or fix the subscribe option, then re-run the cell.")


def explain_failure(query, exc) -> str | None:
    """One line for a query that failed because a topic it reads is gone or an option of it is bad, else None."""
    text = str(exc)
    for source in kafka_sources(query):
        problem = bad_option(source, text)
        # A value Spark cannot parse is the cause; so is a negative cap behind a "data loss" (offsets went back).
        if problem and ("not a" in problem or ("negative cap" in problem and "data may have been lost" in text)):
            return problem
        servers = source.get("kafka.bootstrap.servers", "")
        if probe(servers, timeout=1.0) == "kafka":
            missing = missing_topics(source, servers)
            if missing:
                return missing_topic(missing, servers, label(query), stopped=False)
    return None


def unwritable_checkpoint(exc: BaseException) -> str | None:
    """The one line for a query that cannot start because its checkpoint folder cannot be made or written."""
    from streamlab.errors import first_line

    line = first_line(exc)
    found = re.search(r"(?:mkdir of|Mkdirs failed to create|Parent path is not a directory:|Permission denied:?|"
                      r"Read-only file system:?|AccessDeniedException:)\s*(?:file:)?(\S+)", line)
    if not found or not line.startswith(("IOException", "ParentNotDirectoryException", "AccessDeniedException",
                                         "FileSystemException", "ReadOnlyFileSystemException")):
        return None
    return (f"Spark cannot make or write the query's checkpoint folder ({found.group(1).rstrip(':')}): give "
            "checkpointLocation a folder you can write, such as streamlab.new_checkpoint().")
