"""Spark UI's Structured Streaming charts, drawn for one demo or several on one time axis.

Engineers read a stream's health in Spark UI's charts: input rate against process rate, batch duration against the
trigger interval, rows per batch against the cap, and lag. The demo draws the same panels from the progress events
it collected (so what the course shows is what Spark UI would show), marks every restart of the query in red and
every burst or scripted move dotted, and can put several demos on one time axis to compare them (`compare`).
Drawing is kept apart from the live loop so a finished demo, or a test without Spark, can be drawn alike.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Callable

from streamlab.demo.settings import KnobError
from streamlab.demo.widgets import png

PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")
RESTART_COLOR = "#c44e52"
_LABEL_BOX = {"facecolor": "white", "alpha": 0.85, "edgecolor": "none", "pad": 1.0}  # legible over bars
CHARTS = ("rates", "duration", "rows", "lag")  # Spark UI's order: rates, then duration, then rows
CHART_NAMES = (*CHARTS, "tasks")
LAG_LINES = ("partitions", "total")


@dataclass
class ChartPlan:
    """What the demo draws: Spark UI's `charts` (of "rates", "duration", "rows", "lag", "tasks"), the lag as one
    line per partition or the `total` (`lag_lines`), `panels` {name: Panel} of the configuration's own data on the
    same time axis, a `title`, and in the readout `status(demo)`'s few words and, with `show_offsets`, the offset
    ranges the last batch planned (its `offsets/N` file)."""

    charts: tuple = CHARTS
    lag_lines: str = "partitions"
    title: str = ""
    panels: dict = field(default_factory=dict)
    status: Callable | None = None
    show_offsets: bool = False

    def __post_init__(self):
        self.charts, self.panels = tuple(self.charts), dict(self.panels or {})
        unknown = [c for c in self.charts if c not in CHART_NAMES and c not in self.panels]
        if unknown:
            raise KnobError(f"unknown chart {unknown[0]!r}; one of {', '.join((*CHART_NAMES, *self.panels))}")
        if self.lag_lines not in LAG_LINES:
            raise KnobError(f"lag_lines must be one of {', '.join(LAG_LINES)}, got {self.lag_lines!r}")


@dataclass
class Panel:
    """A chart panel of the configuration's own data on the demo's time axis: `draw(ax, demo, shift)` draws it,
    `shift` added to every time in seconds since the demo started."""

    title: str
    ylabel: str
    draw: Callable


def _step(timeline: list, key: str, end: float, scale: float = 1.0):
    """(xs, ys) of a setting held from each change to the next, up to `end` (None values as gaps)."""
    xs, ys = [], []
    for t, s in timeline:
        xs.append(t)
        ys.append(float("nan") if s.get(key) in (None, 0) and key == "cap" else (s.get(key) or 0) * scale)
    if xs:
        xs.append(max(end, xs[-1]))
        ys.append(ys[-1])
    return xs, ys


def _texts(axis, lo: float, hi: float, every: bool = True) -> tuple:
    """The tick labels `axis` shows between `lo` and `hi` (`every` one, or only those at an end), its offset text,
    and whether a tick sits within 3% of either end (its label then sticks out of the panel)."""
    shown = [t for t in axis.get_majorticklocs() if lo <= t <= hi]
    formatter = axis.get_major_formatter()
    texts = formatter.format_ticks(shown)
    edge = 0.03 * (hi - lo)
    ends = (bool(shown) and shown[0] - lo < edge, bool(shown) and hi - shown[-1] < edge)
    if not every and texts:  # the time axis: its labels are as tall whatever they say, only its ends stick out
        texts = [texts[0] if ends[0] else "", texts[-1] if ends[1] else ""]
    return (*texts, formatter.get_offset(), *ends)


def _layout_key(fig) -> tuple:
    """Everything of `fig` that tight layout measures (the texts around its panels, their sizes, the legends, the
    figure's size), as it stands with the subplot parameters in force."""
    title = fig._suptitle
    key = [tuple(fig.get_size_inches()), fig.dpi, title and (title.get_text(), title.get_fontsize())]
    for ax in fig.axes:
        legend = ax.get_legend()
        key.append((tuple(ax.get_position().bounds), ax.get_title(loc="left"), ax.title.get_fontsize(),
                    ax.get_ylabel(), ax.get_xlabel(), ax.yaxis.label.get_fontsize(),
                    _texts(ax.yaxis, *sorted(ax.get_ylim())), _texts(ax.xaxis, *sorted(ax.get_xlim()), every=False),
                    legend and tuple(t.get_text() for t in legend.get_texts())))
    return tuple(key)


_LAYOUTS: dict = {}  # (size, dpi, panels) -> (_layout_key, subplot parameters) of the last figure measured


@cache
def _remembered_layout() -> type:
    """The layout engine of the demo's charts (a class made once: matplotlib is imported at the first drawing)."""
    from matplotlib.layout_engine import TightLayoutEngine

    class RememberedLayout(TightLayoutEngine):
        """Tight layout, measured only when what it measures changed since the last figure of the same shape.

        Measuring is a pass over every text of the figure (a third of a live frame's cost), and the live chart is
        redrawn every second with the same panels, titles, legends and, mostly, tick labels: the subplot parameters
        the last measurement found are tried first, and kept when the figure's texts under them are what they were
        then (`_layout_key`); otherwise the figure is measured as `tight_layout` does and the result remembered."""

        def execute(self, fig):
            shape = (tuple(fig.get_size_inches()), fig.dpi, len(fig.axes))
            known = _LAYOUTS.get(shape)
            if known is not None:
                fig.subplots_adjust(**known[1])
                if _layout_key(fig) == known[0]:
                    return
            super().execute(fig)
            if len(_LAYOUTS) > 32:
                _LAYOUTS.clear()
            pars = fig.subplotpars
            _LAYOUTS[shape] = (_layout_key(fig), {k: getattr(pars, k) for k in
                                                  ("left", "bottom", "right", "top", "wspace", "hspace")})

    return RememberedLayout


def _bars(ax, xs: list, heights: list, width: float, **style):
    """Bars of `width` centred on `xs`, as one PolyCollection: what `ax.bar` draws (no edges, from 0, a legend
    patch of the same colour), at a fraction of its cost, which adds and draws one Rectangle per bar. The caller
    adds it to `ax` (`ax.add_collection`) after the panel's lines, so that the legend lists the bars last, as it
    did for `ax.bar`'s container."""
    from matplotlib.collections import PolyCollection

    half = width / 2
    bars = PolyCollection([((x - half, 0), (x - half, h), (x + half, h), (x + half, 0)) for x, h in zip(xs, heights)],
                          edgecolors="none", linewidths=0, **style)
    bars.sticky_edges.y.append(0)  # as ax.bar: the y axis starts at 0, without a margin under it
    return ax, bars


@dataclass
class Series:
    """One demo's share of a figure, handed to each built-in panel: its batches' times `xs` on the shared axis
    (`shift` added), its `color`, `name` (the label prefix when several demos share the figure: "" when `one`),
    its bars' `width` and `offset` beside the other demos', the axis' `end`, the lag's `lag_lines`, and `bars`, the
    figure's list that bar collections go to (added after every line: see _bars)."""

    demo: object
    shift: float
    color: str
    name: str
    one: bool
    xs: list
    width: float
    offset: float
    end: float
    lag_lines: str
    bars: list


@dataclass
class BuiltIn(Panel):
    """One of Spark UI's charts: `draw(ax, series)` draws one demo's Series of it."""


def _rates(ax, s: Series) -> None:
    rows = s.demo.history
    ax.plot(s.xs, [b["input_rate"] for b in rows], color=s.color if not s.one else PALETTE[0], marker=".",
            linewidth=1.5, label=f"{s.name}input rate")
    ax.plot(s.xs, [b["process_rate"] for b in rows], color=s.color if not s.one else PALETTE[1], marker=".",
            linewidth=1.5, linestyle="--" if not s.one else "-", label=f"{s.name}process rate")


def _duration(ax, s: Series) -> None:
    s.bars.append(_bars(ax, [x + s.offset for x in s.xs], [b["duration_ms"] for b in s.demo.history], s.width,
                        facecolors=s.color, alpha=0.8, label=f"{s.name}batch duration"))
    tx, ty = _step(s.demo.timeline, "trigger_seconds", s.end - s.shift, 1000)
    ax.step([x + s.shift for x in tx], ty, where="post", color=RESTART_COLOR if s.one else s.color,
            linestyle="--", linewidth=1, label=f"{s.name}trigger interval")


def _rows(ax, s: Series) -> None:
    s.bars.append(_bars(ax, [x + s.offset for x in s.xs], [b["rows"] for b in s.demo.history], s.width,
                        facecolors=s.color, alpha=0.8, label=f"{s.name}rows per batch"))
    cx, cy = _step(s.demo.timeline, "cap", s.end - s.shift)
    if any(y == y for y in cy):  # not all NaN: some cap was set
        ax.step([x + s.shift for x in cx], cy, where="post", color=RESTART_COLOR if s.one else s.color,
                linestyle="--", linewidth=1, label=f"{s.name}maxOffsetsPerTrigger")


def _lag(ax, s: Series) -> None:
    samples = s.demo.samples
    ts = [x["t"] + s.shift for x in samples]
    if s.one and s.lag_lines == "partitions":
        keys = sorted({k for x in samples for k in x["partitions"]})
        for j, k in enumerate(keys):
            ax.plot(ts, [x["partitions"].get(k, 0) for x in samples], color=PALETTE[j % len(PALETTE)],
                    linewidth=1.8, label=f"partition {k}")
    else:
        ax.plot(ts, [x["lag"] for x in samples], color=s.color, linewidth=2, label=f"{s.name}total lag")


def _tasks(ax, s: Series) -> None:
    s.bars.append(_bars(ax, [x + s.offset for x in s.xs], [b["tasks"] or 0 for b in s.demo.history], s.width,
                        facecolors=s.color, label=f"{s.name}tasks in the batch"))
    px, py = _step(s.demo.timeline, "partitions", s.end - s.shift)
    ax.step([x + s.shift for x in px], py, where="post", color=PALETTE[1], linewidth=2,
            label=f"{s.name}topic partitions")
    mx, my = _step(s.demo.timeline, "min_partitions", s.end - s.shift)
    ax.step([x + s.shift for x in mx], my, where="post", color=RESTART_COLOR, linestyle="--", linewidth=1,
            label=f"{s.name}minPartitions (0 = unset)")


# Spark UI's charts, each one panel (CHART_NAMES' order); a configuration's own panels are `Panel`s beside them.
BUILT_IN = {
    "rates": BuiltIn("input rate vs process rate", "records/s", _rates),
    "duration": BuiltIn("batch duration vs trigger interval", "batch ms", _duration),
    "rows": BuiltIn("rows per batch vs the cap", "rows per batch", _rows),
    "lag": BuiltIn("lag (broker's latest − query's position)", "lag (offsets)", _lag),
    "tasks": BuiltIn("tasks per batch vs topic partitions and minPartitions", "tasks", _tasks),
}


def _marks(axes, demo, shift: float, label: str, one: bool, font: float) -> None:
    """A demo's restarts (red dashed, named at the top panel) and marks (grey dotted, named at the bottom one)."""
    for t, text in demo.restarts:
        for ax in axes:
            ax.axvline(t + shift, color=RESTART_COLOR, linestyle="--", linewidth=1.2, alpha=0.9)
        words = text if one else f"{label}: {text.removeprefix('restart: ')}"
        axes[0].annotate(words, (t + shift, 1), xycoords=("data", "axes fraction"),
                         fontsize=7 * font, rotation=90, va="top", ha="right", color=RESTART_COLOR,
                         bbox=_LABEL_BOX).set_in_layout(False)
    for t, text in demo.marks:
        for ax in axes:
            ax.axvline(t + shift, color="#777777", linestyle=":", linewidth=1)
        axes[-1].annotate(text, (t + shift, 1), xycoords=("data", "axes fraction"), fontsize=7 * font, rotation=90,
                          va="top", ha="right", color="#555555", bbox=_LABEL_BOX).set_in_layout(False)


def figure(demos: dict, charts=CHARTS, title: str = "", lag_lines: str = "total", width: float = 9.0,
           font: float = 1.0):
    """Demos {label: LiveDemo} on one shared time axis (the wall clock of the earliest): one panel per chart of
    `charts` ("rates", "duration", "rows", "lag", "tasks", or the name of a demo's own `Panel`), restarts as red
    dashed lines, bursts and script steps dotted; `font` scales every text (a wide comparison reads at 1.45)."""
    from matplotlib.figure import Figure

    own = {name: p for d in demos.values() for name, p in d.panels.items()}
    charts = [c for c in charts if c in BUILT_IN or c in own] or list(CHARTS)
    fig = Figure(figsize=(width, 0.5 * font + 1.45 * font * len(charts)))
    axes = fig.subplots(len(charts), 1, sharex=True, squeeze=False)[:, 0]
    panel = dict(zip(charts, axes))
    bars = []  # (ax, PolyCollection), added once every line is: see _bars
    origin = min((d._wall0 for d in demos.values() if d._wall0), default=0.0)
    n = max(len(demos), 1)
    end = max([1.0, *((d._wall0 - origin if d._wall0 else 0.0) + max([d.now() if not d.ended else 0.0,
                                                                     *(b["time"] for b in d.history),
                                                                     *(s["t"] for s in d.samples)])
                      for d in demos.values())])
    for i, (label, demo) in enumerate(demos.items()):
        shift = (demo._wall0 - origin) if demo._wall0 else 0.0
        width_bar = max(0.15, min(0.8 * (demo._settings["trigger_seconds"] or 0.5), 0.6) / n)
        series = Series(demo, shift, PALETTE[i % len(PALETTE)], "" if n == 1 else f"{label}: ", n == 1,
                        [b["time"] + shift for b in demo.history], width_bar, (i - (n - 1) / 2) * width_bar, end,
                        lag_lines, bars)
        for key, ax in panel.items():
            if key in BUILT_IN:
                BUILT_IN[key].draw(ax, series)
        for name, p in demo.panels.items():
            if name in panel:
                p.draw(panel[name], demo, shift)
        _marks(axes, demo, shift, label, n == 1, font)
    for ax, collection in bars:
        ax.add_collection(collection)
    for key, ax in panel.items():
        shown = BUILT_IN.get(key) or own[key]
        ax.set_ylabel(shown.ylabel, fontsize=8 * font)
        ax.set_ylim(bottom=0)
        ax.tick_params(labelsize=7 * font)
        ax.set_title(shown.title, fontsize=8 * font, loc="left", pad=3, color="#333333")
        handles, names = ax.get_legend_handles_labels()
        if handles and ax.get_legend() is None:  # a panel of its own may have made its legend already
            ax.legend(handles, names, fontsize=6.5 * font, loc="upper left", bbox_to_anchor=(1.005, 1.0),
                      borderaxespad=0)
    axes[0].set_xlim(0, end + 0.5)
    axes[-1].set_xlabel("seconds since the demo started", fontsize=8 * font)
    if title:
        fig.suptitle(title, fontsize=9.5 * font)
    # laid out when drawn, at most once per drawing: the panels' titles, the legends outside at the right and the
    # suptitle fit, so `png` need not measure the figure again to crop it (bbox_inches="tight" would: a second pass)
    fig.set_layout_engine(_remembered_layout()())
    return fig


def compare(demos: dict, title: str = "", charts=("rows", "duration", "lag")):
    """Finished demos {label: LiveDemo} on one time axis (rows vs each cap, batch duration, total lag): an Image,
    drawn wide and with large type so that it reads at a laptop's width (1,280 px)."""
    from IPython.display import Image

    return Image(png(figure(demos, charts=charts, title=title, width=12.5, font=1.45), dpi=90))

