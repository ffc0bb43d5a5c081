"""Read a Structured Streaming checkpoint folder: what each batch planned, what it committed, where a restart resumes.

The layout, as Spark writes it (checked against real checkpoints of Spark 4.2):
- `metadata`: `{"id": "<query id>"}`, the id that stays the same across restarts;
- `offsets/N`: written *before* batch N runs. Line 1 is the log version (`v1`), line 2 the batch metadata JSON
  (`batchWatermarkMs`, `batchTimestampMs`, `conf`), then one line per source in the query's source order: that
  source's *end* offset for the batch as JSON (Kafka: `{"orders":{"0":4400,"1":3400}}`, each number the next
  offset to read), or `-` for a source that had no offset yet;
- `commits/N`: written *after* batch N finished (`v1`, then `{"nextBatchWatermarkMs":0}`);
- `sources/<i>/0`: source i's initial offsets, written by the sources that keep them (Spark's Kafka source writes
  `v1` and the JSON, after a NUL byte kept for old Spark versions; the built-in `rate` source writes its start time).
  It is written once, when the query first starts: a restart, even after a crash in batch 0, starts batch 0
  there and never resolves `startingOffsets` again. (The offline fallback's Python source writes none: Spark
  does not offer Python sources that file.)
- files starting with `.` (`.0.crc`, temporary files) are Hadoop's, not part of the log.

On restart Spark reads the latest `offsets/N`: if `commits/N` exists the next batch starts at its end; if not,
batch N is re-run with exactly the same offsets (that is why the Kafka sink is at-least-once). That is default
micro-batch execution; real-time mode and asynchronous progress tracking write these logs differently.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

VOID_OFFSET = "-"  # what Spark writes for a source without an offset yet


@dataclass
class BatchOffsets:
    """One `offsets/N` file: the log version, the batch metadata and each source's end offset (None when void)."""

    batch_id: int
    version: int
    metadata: dict
    sources: list = field(default_factory=list)

    def kafka(self) -> dict:
        """The Kafka-shaped source offsets merged: {topic: {partition: next offset}}; other sources left out."""
        return kafka_offsets(self.sources)


def kafka_offsets(sources) -> dict:
    """{topic: {partition: offset}} from source offsets shaped like Kafka's ({"t": {"0": 12}}); others are skipped."""
    merged: dict = {}
    for source in sources if isinstance(sources, list) else [sources]:
        if isinstance(source, str):
            try:
                source = json.loads(source)
            except ValueError:
                continue
        if not isinstance(source, dict):
            continue
        for topic, parts in source.items():
            if isinstance(parts, dict) and parts and all(_is_int(p) and _is_int(o) for p, o in parts.items()):
                merged.setdefault(topic, {}).update({int(p): int(o) for p, o in parts.items()})
    return merged


def _is_int(value) -> bool:
    try:
        int(value)
        return not isinstance(value, bool) and not isinstance(value, float)
    except (TypeError, ValueError):
        return False


def _root(path) -> Path:
    root = Path(path).expanduser()
    if not root.is_dir():
        raise FileNotFoundError(f"No checkpoint folder at {root}")
    return root


def _log_ids(folder: Path) -> list[int]:
    if not folder.is_dir():
        return []
    return sorted(int(f.name) for f in folder.iterdir() if f.is_file() and f.name.isdigit())


def _lines(file: Path) -> list[str]:
    # The Kafka source's initial-offsets file starts with a NUL byte (SPARK-19517); no log line can hold one.
    return file.read_text(encoding="utf-8").lstrip("\x00").splitlines()


def _version(line: str, file: Path) -> int:
    if not line.startswith("v") or not line[1:].isdigit():
        raise ValueError(f"{file} does not start with a log version like 'v1' (found {line[:20]!r})")
    return int(line[1:])


def _parse(line: str):
    line = line.strip()
    if line == VOID_OFFSET:
        return None
    try:
        return json.loads(line)
    except ValueError:
        return line  # an offset format we do not know: keep its text


def batches(path) -> list[int]:
    """The ids of the batches planned so far (those with an `offsets/N` file), ascending."""
    return _log_ids(_root(path) / "offsets")


def offsets(path, batch_id: int | None = None) -> BatchOffsets | None:
    """Parse `offsets/<batch_id>` (the latest when None); None when the query has planned no batch yet."""
    root = _root(path)
    if batch_id is None:
        ids = _log_ids(root / "offsets")
        if not ids:
            return None
        batch_id = ids[-1]
    file = root / "offsets" / str(batch_id)
    if not file.is_file():
        raise FileNotFoundError(f"Batch {batch_id} was never planned: there is no {file}")
    lines = _lines(file)
    if len(lines) < 2:
        raise ValueError(f"{file} is incomplete: expected a version line and a metadata line")
    return BatchOffsets(batch_id, _version(lines[0], file), json.loads(lines[1]), [_parse(s) for s in lines[2:]])


def commits(path) -> dict[int, dict]:
    """{batch id: commit metadata} for every finished batch (`commits/N`)."""
    root = _root(path)
    out = {}
    for batch_id in _log_ids(root / "commits"):
        file = root / "commits" / str(batch_id)
        lines = _lines(file)
        _version(lines[0], file)
        out[batch_id] = json.loads(lines[1]) if len(lines) > 1 and lines[1].strip() else {}
    return out


def last_committed(path) -> int | None:
    """The id of the last finished batch, or None when none has finished."""
    ids = _log_ids(_root(path) / "commits")
    return ids[-1] if ids else None


def committed_offsets(path) -> BatchOffsets | None:
    """The offsets of the last batch that has a commit: their end is where a restart resumes (None: nothing done)."""
    batch_id = last_committed(path)
    return None if batch_id is None else offsets(path, batch_id)


def pending_batch(path) -> int | None:
    """The batch planned but not committed (a restart re-runs it with the same offsets), or None."""
    planned = batches(path)
    done = last_committed(path)
    if planned and (done is None or planned[-1] > done):
        return planned[-1]
    return None


def initial_offsets(path, source: int = 0):
    """Source `source`'s initial offsets from `sources/<source>/0` (None when that source wrote none)."""
    file = _root(path) / "sources" / str(source) / "0"
    if not file.is_file():
        return None
    lines = _lines(file)
    if lines and lines[0].startswith("v") and lines[0][1:].isdigit():
        lines = lines[1:]
    return _parse("\n".join(lines)) if lines else None


def query_id(path) -> str | None:
    """The query id from the `metadata` file (the same across restarts), or None if there is none yet."""
    file = _root(path) / "metadata"
    if not file.is_file():
        return None
    return json.loads(file.read_text(encoding="utf-8")).get("id")


def _short(value, limit: int = 100) -> str:
    text = VOID_OFFSET if value is None else json.dumps(value, separators=(",", ":")) if not isinstance(
        value, str) else value
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(path) -> str:
    """A few lines saying what the checkpoint holds and where a restart would resume."""
    root = _root(path)
    planned = batches(root)
    done = sorted(commits(root))
    lines = [f"checkpoint {root}  (query id {query_id(root) or 'not written yet'})"]
    if not planned:
        lines.append("no batch planned yet: a start uses startingOffsets")
        return "\n".join(lines)
    lines.append(f"batches planned: {_span(planned)}; committed: {_span(done) if done else 'none'}")
    for i in sorted(int(d.name) for d in (root / "sources").iterdir() if d.name.isdigit()) \
            if (root / "sources").is_dir() else []:
        lines.append(f"source {i} initial offsets (sources/{i}/0): {_short(initial_offsets(root, i))}")
    committed = committed_offsets(root)
    if committed is not None:
        for i, source in enumerate(committed.sources):
            lines.append(f"batch {committed.batch_id} (last committed) ends, source {i}: {_short(source)}")
    pending = pending_batch(root)
    if pending is not None:
        lines.append(f"batch {pending} is planned but not committed: a restart re-runs it with the same offsets")
        for i, source in enumerate(offsets(root, pending).sources):
            lines.append(f"batch {pending} (pending) ends, source {i}: {_short(source)}")
    elif committed is not None:
        lines.append(f"a restart plans batch {committed.batch_id + 1} from the end of batch {committed.batch_id}")
    return "\n".join(lines)


def _span(ids: list[int]) -> str:
    if ids == list(range(ids[0], ids[-1] + 1)):
        return f"{ids[0]}..{ids[-1]}" if len(ids) > 1 else str(ids[0])
    return ", ".join(map(str, ids))
