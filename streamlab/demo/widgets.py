"""Widget and picture helpers shared by the course's interactive cells: PNG rendering, sliders, and the box a demo
shows live and then freezes.

A demo runs in the background, so its box is shown with a display handle and, once it ended, updated in place: the
live widgets stay for the browser, and a PNG of the last view is added beside them for whatever cannot draw widgets
(nbconvert, a saved notebook, the course site). `show_box` and `freeze` are that pair, used by both demos that run
this way (`LiveDemo`, module 9's `FailoverDemo`). The live demo itself (producer, query, controls and Spark UI's
charts) is `streamlab.demo.live.LiveDemo`.
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


def show_box(box, text: str | None = None):
    """Display `box` (a widget) and return its display handle; `text`: the line shown where widgets are not (None:
    the widget's own)."""
    from IPython.display import display

    bundle = box._repr_mimebundle_()
    if text is not None:
        bundle["text/plain"] = text
    return display(bundle, raw=True, display_id=True)


def freeze(handle, box, picture: bytes) -> None:
    """Update the output `handle` shows: `box` stays live for the browser, `picture` (PNG bytes) beside it is what
    nbconvert, a saved notebook or a page without a widget manager shows."""
    bundle = box._repr_mimebundle_()
    bundle["image/png"] = picture
    bundle.pop("text/plain", None)
    handle.update(bundle, raw=True)
