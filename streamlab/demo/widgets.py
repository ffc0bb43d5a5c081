"""Widget and picture helpers shared by the course's interactive cells: PNG rendering and sliders.

The live demo itself (producer, query, controls and Spark UI's charts) is `streamlab.demo.live.LiveDemo`.
"""
from __future__ import annotations

import io


def png(fig, dpi: int = 80) -> bytes:
    """A matplotlib figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


def slider(description: str, value: int, lo: int, hi: int, step: int = 1):
    """An integer slider that reports only when released, so each move is one change."""
    import ipywidgets as W

    return W.IntSlider(value=value, min=lo, max=hi, step=step, description=description,
                       continuous_update=False, style={"description_width": "initial"},
                       layout=W.Layout(width="470px"))
