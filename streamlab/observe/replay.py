"""Replaying from a checkpoint: print its files, map batches to offset ranges, browse them, quiet failures on purpose.

Reading checkpoints themselves is `streamlab.observe.checkpoint`; consumer groups (reset, delete) are `streamlab.observe.groups`,
re-exported here because module 2's cells call `replay.reset_group(...)`. The lesson's own code (the query, the
JSON offsets, the restart) stays in the notebook; what is here only shows files, draws figures, or does the
chores a reader would do with Kafka's CLI tools.
"""
from __future__ import annotations

import base64
import html
import json
from contextlib import contextmanager
from pathlib import Path

from streamlab.errors import first_line
from streamlab.observe import checkpoint as ck
# consumer groups live in streamlab.observe.groups; module 2's cells and streamlab.delivery.sinks call them as replay.<name>
from streamlab.observe.groups import delete_group, group_offsets, reset_group  # noqa: F401
from streamlab.demo.widgets import png

# -- reading checkpoint files -------------------------------------------------------------------------------


def cat(path, width: int = 110) -> None:
    """Print a checkpoint file as it is on disk, each line cut to `width` characters (the conf line is long)."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    shown = text.replace("\x00", "\\x00")  # the connector's sources/0/0 starts with a NUL byte (SPARK-19517)
    for line in shown.splitlines():
        print(line if len(line) <= width else line[: width - 1] + "…")


def files(path) -> list[str]:
    """The checkpoint's files relative to its folder, Hadoop's `.crc` and temporary files left out."""
    root = Path(path)
    return sorted(str(f.relative_to(root)) for f in root.rglob("*")
                  if f.is_file() and not any(part.startswith(".") for part in f.relative_to(root).parts))


def batch_ranges(path, topic: str | None = None) -> list[dict]:
    """One row per planned batch and partition: start, end (next offset to read), records, committed or not.

    A batch starts where the previous one ended; batch 0 starts at `sources/0/0` when the engine wrote it
    (Spark's connector does, the offline engine does not: then the start of batch 0 is unknown, shown as None).
    """
    done = set(ck.commits(path))
    previous = ck.kafka_offsets(ck.initial_offsets(path)) if ck.initial_offsets(path) is not None else {}
    rows = []
    for batch_id in ck.batches(path):
        ends = ck.offsets(path, batch_id).kafka()
        for name in sorted(ends):
            if topic is not None and name != topic:
                continue
            for partition, end in sorted(ends[name].items()):
                start = previous.get(name, {}).get(partition)
                rows.append({"batch": batch_id, "topic": name, "partition": partition, "start": start, "end": end,
                             "records": None if start is None else end - start, "committed": batch_id in done})
        previous = ends
    return rows


def offset_range(batch_df) -> dict:
    """A batch DataFrame's row count and [first, last + 1) offsets per partition, read from its offset column."""
    seen: dict = {}
    for row in batch_df.select("partition", "offset").collect():  # small batches: collecting is cheapest
        seen.setdefault(row.partition, []).append(row.offset)
    return {"rows": sum(map(len, seen.values())),
            **{f"partition {p}": f"[{min(o)}, {max(o) + 1})" for p, o in sorted(seen.items())}}


def batch_range(path, batch_id: int) -> dict:
    """What offset_range() gives for batch `batch_id` of a checkpointed query, read from its checkpoint alone."""
    rows = [r for r in batch_ranges(path) if r["batch"] == batch_id and r["records"]]
    return {"rows": sum(r["records"] for r in rows),
            **{f"partition {r['partition']}": f"[{r['start']}, {r['end']})" for r in rows}}


# The stream thread logs a failed query at ERROR with both stack traces before the error reaches Python.
_QUERY_LOGGERS = ("org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution",
                  "org.apache.spark.sql.execution.streaming.MicroBatchExecution")


@contextmanager
def quiet_query_errors(spark):
    """Inside the block, a query that fails on purpose is not also logged by Spark (its error is still raised)."""
    jvm = spark.sparkContext._jvm
    log4j = jvm.org.apache.logging.log4j
    before = {name: log4j.LogManager.getLogger(name).getLevel() for name in _QUERY_LOGGERS}
    for name in _QUERY_LOGGERS:
        log4j.core.config.Configurator.setLevel(name, log4j.Level.OFF)
    try:
        yield
    finally:
        for name, level in before.items():
            log4j.core.config.Configurator.setLevel(name, level)


# -- widgets ----------------------------------------------------------------------------------------------------


def _show(widget, static_html: str) -> None:
    """Display `widget` live in a browser, with `static_html` as the fallback saved notebooks and nbconvert show."""
    from IPython.display import display

    bundle = widget._repr_mimebundle_()
    bundle["text/html"] = static_html
    display(bundle, raw=True)


def _table(rows: list[dict], columns: list[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    # None is a value the checkpoint does not record (batch 0's start without sources/0/0)
    body = "".join("<tr>" + "".join(f"<td>{html.escape('not recorded' if r.get(c) is None else str(r.get(c)))}</td>"
                                    for c in columns) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class CheckpointBrowser:
    """A slider picking a batch id; shows that batch's `offsets/N` and `commits/N` as read from disk now, and a
    chart of every batch's offset range per partition (the chosen batch outlined, an uncommitted one hatched)."""

    def __init__(self, path, batch: int | None = None):
        import ipywidgets as W

        self.path = Path(path)
        planned = ck.batches(self.path)
        if not planned:
            raise ValueError(f"{self.path} has no offsets/N yet: run the query first")
        pending = ck.pending_batch(self.path)
        start = batch if batch is not None else (pending if pending is not None else planned[-1])
        self.slider = W.IntSlider(value=start, min=planned[0], max=planned[-1], description="batch id",
                                  continuous_update=False, layout=W.Layout(width="420px"))
        self.files = W.HTML()
        self.image = W.Image(format="png", layout=W.Layout(max_width="100%"))
        self.slider.observe(lambda change: self.refresh(), names="value")
        self.box = W.VBox([self.slider, self.files, self.image])
        self.refresh()

    def describe_batch(self, batch_id: int) -> str:
        """HTML: the source lines of offsets/<batch_id> and whether commits/<batch_id> exists, read from disk."""
        planned = ck.batches(self.path)
        if batch_id not in planned:
            return f"<p>no <code>offsets/{batch_id}</code>: batch {batch_id} was never planned</p>"
        sources = ck.offsets(self.path, batch_id).sources
        lines = "<br>".join(html.escape(json.dumps(s, separators=(",", ":"))) for s in sources)
        committed = batch_id in ck.commits(self.path)
        commit = (f"<code>commits/{batch_id}</code> ✓ written: batch {batch_id} finished" if committed else
                  f"<code>commits/{batch_id}</code> ✗ missing: a restart re-runs batch {batch_id} with these offsets")
        rows = [r for r in batch_ranges(self.path) if r["batch"] == batch_id]
        table = _table(rows, ["topic", "partition", "start", "end", "records"])
        return (f"<p><code>offsets/{batch_id}</code> (written before the batch ran), source line(s): "
                f"<code>{lines}</code><br>{commit}</p>{table}")

    def figure(self, selected: int):
        """Every batch's [start, end) per partition as bars; `selected` outlined, an uncommitted batch hatched."""
        from matplotlib.figure import Figure

        rows = batch_ranges(self.path)
        parts = sorted({(r["topic"], r["partition"]) for r in rows})
        fig = Figure(figsize=(8, 0.6 + 0.55 * max(len(parts), 1)))
        ax = fig.add_subplot()
        colors = ["#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860"]
        unknown = False
        for r in rows:
            y = parts.index((r["topic"], r["partition"]))
            color = colors[r["batch"] % len(colors)]
            if r["start"] is None:  # no sources/0/0: only the end of batch 0 is known, drawn as a marker
                unknown = True
                ax.plot([r["end"]] * 2, [y - 0.3, y + 0.3], color=color, linewidth=3 if r["batch"] == selected else 2)
                ax.text(r["end"], y + 0.36, f"batch {r['batch']} ends", ha="right", va="bottom", fontsize=7)
                continue
            ax.barh(y, max(r["end"] - r["start"], 0.4), left=r["start"], height=0.6, color=color,
                    edgecolor="black" if r["batch"] == selected else "white",
                    linewidth=2.5 if r["batch"] == selected else 0.5,
                    hatch=None if r["committed"] else "//", alpha=1.0 if r["batch"] == selected else 0.55)
            ax.text(r["start"] + max(r["end"] - r["start"], 0.4) / 2, y, str(r["batch"]), ha="center", va="center",
                    fontsize=8, color="black")
        ax.set_yticks(range(len(parts)), [f"partition {p}" for _, p in parts])
        ax.set_ylim(-0.6, len(parts) - 0.2)
        note = "; batch 0's start is not in this checkpoint (no sources/0/0)" if unknown else ""
        ax.set_xlabel(f"offset — each bar: one batch's range, labelled with its id; hatched: no commits/N{note}",
                      fontsize=8)
        ax.set_title(f"batches in {self.path.name}, batch {selected} outlined", fontsize=10)
        ax.set_xlim(left=0)
        return fig

    def refresh(self) -> None:
        """Re-read the files for the slider's batch and redraw (called on every slider move)."""
        batch_id = self.slider.value
        self.files.value = self.describe_batch(batch_id)
        self.image.value = png(self.figure(batch_id))

    def static_html(self) -> str:
        """What the widget shows now, as plain HTML (for saved notebooks)."""
        picture = base64.b64encode(self.image.value).decode()
        return (f"<p><b>batch id = {self.slider.value}</b> (move the slider in a live notebook)</p>"
                f"{self.files.value}<img src='data:image/png;base64,{picture}'/>")

    def show(self) -> None:
        """Display the browser (live in a browser, a static copy in a saved notebook)."""
        _show(self.box, self.static_html())


class ChoiceTable:
    """Toggle buttons; each choice runs `trial(choice)` (a real query) and adds its result dict as a table row."""

    def __init__(self, description: str, choices, trial, columns: list[str] | None = None):
        import ipywidgets as W

        self.trial = trial
        self.columns = columns
        self.rows: list[dict] = []
        self.buttons = W.ToggleButtons(options=list(choices), value=None, description=description,
                                       style={"description_width": "130px", "button_width": "auto"})
        self.status = W.HTML()
        self.table = W.HTML()
        self.buttons.observe(self._picked, names="value")
        self.box = W.VBox([self.buttons, self.status, self.table])

    def _picked(self, change) -> None:
        if change["new"] is None:
            return
        from streamlab.lab.reentry import stale

        gone = stale(getattr(self.trial, "__name__", "the trial"), self.trial)
        if gone:  # after cleanup(): say which cells make it again, not a FileNotFoundError
            self.status.value = f"<b>cannot run:</b> {html.escape(gone)}"
            return
        self.status.value = f"<i>running with {html.escape(str(change['new']))} …</i>"
        try:
            self.run(change["new"])
            self.status.value = ""
        except Exception as exc:  # shown in the widget: a callback's exception would otherwise be lost
            self.status.value = f"<b>failed:</b> {html.escape(first_line(exc))}"

    def run(self, choice) -> dict:
        """Run one trial now (from the notebook's thread or a button) and add its row."""
        row = self.trial(choice)
        self.rows.append(row)
        self.table.value = _table(self.rows, self.columns or list(row))
        return row

    def show(self) -> None:
        """Display the buttons and the table (a static copy of the table in a saved notebook)."""
        _show(self.box, self.table.value)
