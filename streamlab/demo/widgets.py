"""Widget and picture helpers shared by the course's interactive cells: PNG rendering and sliders.

The live demo itself (producer, query, controls and Spark UI's charts) is `streamlab.demo.live.LiveDemo`.
"""
from __future__ import annotations

import io


def png(fig, dpi: int = 80) -> bytes:
    """A matplotlib figure as PNG bytes, drawn once. A figure with a layout engine (the demo's charts: "tight") is
    laid out as it is drawn and saved at its size; one without is cropped to what it draws (bbox_inches="tight",
    which costs another pass over the figure: its legends or titles may stick out of its size)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches=None if fig.get_layout_engine() is not None else "tight")
    return buf.getvalue()


def slider(description: str, value: int, lo: int, hi: int, step: int = 1):
    """An integer slider that reports only when released, so each move is one change."""
    import ipywidgets as W

    return W.IntSlider(value=value, min=lo, max=hi, step=step, description=description,
                       continuous_update=False, style={"description_width": "initial"},
                       layout=W.Layout(width="470px"))
