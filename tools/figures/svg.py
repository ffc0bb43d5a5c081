"""Small SVG helpers the figure scripts share: text of a readable size, boxes, arrows, a frame with alt text.

Sizes are in px at the width JupyterLab shows a notebook's image (about 900 px): text is never under 12 px, and
colours are told apart by lightness too (they survive a grey-scale print)."""
from __future__ import annotations

from html import escape

INK, MUTED = "#1f2328", "#57606a"
FILL = {"blue": "#cfe2ff", "dark": "#3d6fb6", "green": "#d3f0d8", "red": "#f6d2d2", "grey": "#eaeef2",
        "amber": "#fde7b5"}


def frame(width: int, height: int, title: str, desc: str, body: list[str]) -> str:
    """A whole SVG document: `title` and `desc` are its alt text."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" role="img">\n'
            f"<title>{escape(title)}</title>\n<desc>{escape(desc)}</desc>\n"
            f'<rect width="{width}" height="{height}" fill="white"/>\n'
            + "\n".join(body) + "\n</svg>\n")


def text(x: float, y: float, words: str, size: int = 14, anchor: str = "start", weight: str = "normal",
         color: str = INK) -> str:
    """A line of text (at least 12 px)."""
    size = max(size, 12)
    return (f'<text x="{x:g}" y="{y:g}" font-size="{size}" text-anchor="{anchor}" font-weight="{weight}" '
            f'fill="{color}">{escape(words)}</text>')


def heading(title: str, subtitle: str, y: float = 28, size: int = 13) -> list[str]:
    """A figure's bold title and, under it, its muted one-line subtitle."""
    return [text(20, y, title, 18, weight="bold"), text(20, y + 22, subtitle, size, color=MUTED)]


def box(x: float, y: float, w: float, h: float, fill: str = "grey", label: str = "", size: int = 14,
        stroke: str = INK, dashed: bool = False) -> str:
    """A rectangle with an optional centred label."""
    dash = ' stroke-dasharray="5 4"' if dashed else ""
    out = (f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" rx="4" fill="{FILL.get(fill, fill)}" '
           f'stroke="{stroke}"{dash}/>')
    if label:
        out += "\n" + text(x + w / 2, y + h / 2 + size * 0.35, label, size, "middle")
    return out


def arrow(x1: float, y1: float, x2: float, y2: float, color: str = INK, dashed: bool = False) -> str:
    """A straight arrow from (x1, y1) to (x2, y2)."""
    dash = ' stroke-dasharray="5 4"' if dashed else ""
    return (f'<defs><marker id="a{color[1:]}" markerWidth="10" markerHeight="8" refX="9" refY="4" orient="auto">'
            f'<path d="M0,0 L10,4 L0,8 z" fill="{color}"/></marker></defs>'
            f'<line x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" stroke="{color}" stroke-width="2"{dash} '
            f'marker-end="url(#a{color[1:]})"/>')
