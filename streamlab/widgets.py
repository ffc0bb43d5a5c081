"""Widget and picture helpers shared by the course's interactive cells: PNG rendering, sliders, a simple live chart.

The live demo itself (producer, query, controls and Spark UI's charts) is `streamlab.demo.LiveDemo`.
"""
from __future__ import annotations

import io


def png(fig, dpi: int = 80) -> bytes:
    """A matplotlib figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


_png = png  # the name older modules import


def slider(description: str, value: int, lo: int, hi: int, step: int = 1):
    """An integer slider that reports only when released, so each move is one change."""
    import ipywidgets as W

    return W.IntSlider(value=value, min=lo, max=hi, step=step, description=description,
                       continuous_update=False, style={"description_width": "210px"},
                       layout=W.Layout(width="470px"))


class LiveChart:
    """Batch sizes as bars and lag as a line, redrawn into an ipywidgets.Image."""

    def __init__(self, title: str = "", width: float = 8.0, height: float = 3.2):
        import ipywidgets as W

        self.title, self.size = title, (width, height)
        self.image = W.Image(format="png", layout=W.Layout(max_width="100%"))
        self.batches: list[tuple[float, int]] = []
        self.lag: list[tuple[float, int]] = []
        self.cap: int | None = None

    def figure(self):
        """Draw the current data into a new matplotlib figure."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=self.size)
        ax = fig.add_subplot()
        if self.batches:
            xs, ys = zip(*self.batches)
            ax.bar(xs, ys, width=0.35, color="#4c72b0", label="rows in batch")
        if self.cap:
            ax.axhline(self.cap, color="#c44e52", linestyle="--", linewidth=1, label="maxOffsetsPerTrigger")
        ax.set_xlabel("seconds since start")
        ax.set_ylabel("rows per batch")
        ax2 = ax.twinx()
        if self.lag:
            lx, ly = zip(*self.lag)
            ax2.plot(lx, ly, color="#dd8452", linewidth=2, label="lag (offsets behind latest)")
        ax2.set_ylabel("lag")
        ax.set_ylim(bottom=0)
        ax2.set_ylim(bottom=0)
        return finish_two_axes(fig, ax, ax2, self.title)

    def redraw(self) -> None:
        """Render into the widget (safe from a background thread)."""
        self.image.value = png(self.figure())

    def static(self):
        """A static PNG of the chart for the notebook's saved output."""
        from IPython.display import Image

        return Image(png(self.figure()))


def finish_two_axes(fig, ax, ax2, title: str):
    """One legend for a chart with a second y axis, and its title; returns the figure."""
    handles = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    labels = ax.get_legend_handles_labels()[1] + ax2.get_legend_handles_labels()[1]
    if handles:
        ax.legend(handles, labels, loc="upper left", fontsize=8)
    ax.set_title(title, fontsize=10)
    return fig
