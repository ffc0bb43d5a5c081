"""Where an offline Kafka stream keeps its initial offsets: `<checkpoint>/sources/<i>/0`, as the connector does.

A Python stream reader is never told its checkpoint folder. So the load() hook (source.read_hooks) gives each
streaming read a hidden id option, the start() hook (sink.stream_write_hooks, which knows the checkpoint) writes
"<id> -> <checkpoint>/sources/<i>" to a small registry file, and the reader, in Spark's Python source process, reads
it back and keeps its initial offsets there. Why a module of its own: the source reads the registry and the sink's
start() hook writes it; both import this, and the source (which hands Spark the sink's writers) stays the only one
of the two importing the other.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from pathlib import Path

# A hidden reader option naming one streaming read, so the query's start can tell it its checkpoint folder.
SOURCE_ID_OPTION = "streamlab.sourceid"


def _registry() -> Path:
    return Path(tempfile.gettempdir()) / "streamlab-kafka-sources"


def _local_path(location: str) -> str | None:
    """An absolute local path for a checkpoint location, or None when it is not on the local file system."""
    if location.startswith("file:"):
        location = "/" + location[len("file:"):].lstrip("/")
    elif "://" in location:
        return None
    return os.path.abspath(location)


def _streaming_sources(jplan) -> list:
    """The query's streaming relations in Spark's source order (the i of sources/<i>), each once."""
    seen: list = []
    leaves = jplan.collectLeaves()
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        if leaf.nodeName() in ("StreamingRelation", "StreamingRelationV2") and not any(leaf.equals(s) for s in seen):
            seen.append(leaf)
    return seen


def announce_checkpoint(df, options: dict, query_name: str | None) -> list:
    """Tell each offline Kafka source of `df` where its sources/<i> folder is (the start() hook calls this first).

    Returns the registry entries written, for `await_claims` once the query has started.
    """
    location = options.get("checkpointlocation")
    if location is None:
        conf = df.sparkSession.conf.get("spark.sql.streaming.checkpointLocation", None)
        if not conf or not query_name:
            return []  # a temporary checkpoint: nothing to resume, so nothing to remember
        location = conf.rstrip("/") + "/" + query_name
    root = _local_path(location)
    if root is None:
        return []
    try:
        sources = _streaming_sources(df._jdf.queryExecution().analyzed())
    except Exception:  # noqa: BLE001 - not a classic PySpark plan (e.g. Spark Connect): no initial-offsets file
        return []
    entries = []
    for index, leaf in enumerate(sources):
        try:
            source_id = leaf.extraOptions().get(SOURCE_ID_OPTION)
        except Exception:  # noqa: BLE001 - a V1 relation has no extraOptions
            source_id = None
        if source_id:
            _registry().mkdir(parents=True, exist_ok=True)
            entry = _registry() / f"{source_id}.json"
            entry.write_text(json.dumps({"path": f"{root}/sources/{index}"}))
            entries.append(entry)
    return entries


def await_claims(entries: list, query, timeout: float = 60.0) -> None:
    """Wait until the started query's sources have read their entries, so a second query started from the same
    DataFrame (same source ids) cannot hand them its own checkpoint; then drop what no source claimed."""
    deadline = time.monotonic() + timeout
    while any(e.exists() for e in entries) and query.isActive and time.monotonic() < deadline:
        time.sleep(0.05)
    for entry in entries:
        entry.unlink(missing_ok=True)


def claim_metadata_path(source_id: str | None) -> str | None:
    """The sources/<i> folder the start() hook registered for this source, taking the entry (read once)."""
    if not source_id:
        return None
    entry = _registry() / f"{source_id}.json"
    try:
        path = json.loads(entry.read_text())["path"]
    except (OSError, ValueError, KeyError):
        return None
    entry.unlink(missing_ok=True)
    return path


def read_initial_offsets(path: str) -> dict | None:
    """The offsets in `<path>/0` (the connector's KafkaSourceInitialOffsetWriter format), or None."""
    try:
        data = (Path(path) / "0").read_bytes()
    except OSError:
        return None
    text = data[1:].decode("utf-8") if data[:1] == b"\x00" else data.decode("utf-8")  # the NUL of SPARK-19517
    if text.startswith("v"):
        text = text.split("\n", 1)[1]
    return json.loads(text)


def write_initial_offsets(path: str, offsets: dict) -> None:
    """Write `<path>/0` as the connector does: a NUL byte, `v1`, then the offsets JSON; atomically."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    temp = folder / f".0.{uuid.uuid4().hex}.tmp"
    temp.write_bytes(b"\x00v1\n" + compact_json(offsets).encode("utf-8"))
    os.replace(temp, folder / "0")


def compact_json(value) -> str:
    """JSON without spaces, as the connector writes offsets."""
    return json.dumps(value, separators=(",", ":"))
