"""Revision aids for the night before an interview: module 8's tables as one printable sheet, and code-only copies.

Both are made from the *student* notebooks (`notebooks/`), so neither can hold a solution: the cheat sheet is
module 8's tables (the schema, the options, the checkpoint, triggers, progress, the sink, settings that do nothing)
rendered as HTML with a print style, and as a PDF where Chromium is installed (it prints the same HTML); the
code-only copies keep each notebook's headings and code cells, outputs cleared, for "say what this cell will print"
practice. `python -m grader revision [--out DIR]`.
"""
from __future__ import annotations

import html
import shutil
from pathlib import Path

from .course import RELEASE, ROOT

DEFAULT_OUT = ROOT / ".streamlab" / "revision"
CHEAT_SHEET = "08-cheat-sheet"
STYLE = """
@page { size: A4 landscape; margin: 9mm; }
body { font: 8px/1.2 Helvetica, Arial, sans-serif; color: #1f2328; columns: 2; column-gap: 14px; margin: 0; }
h1 { column-span: all; font-size: 14px; margin: 0 0 4px; }
h2, h3 { font-size: 10px; margin: 6px 0 2px; break-after: avoid; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; margin-bottom: 4px; }
th, td { border: 1px solid #d0d7de; padding: 1px 3px; text-align: left; vertical-align: top;
         overflow-wrap: anywhere; }
.anchor-link { display: none; }
th { background: #eaeef2; }
code { font: 7.5px monospace; background: #f6f8fa; }
p { margin: 2px 0; }
"""


def _markdown(text: str) -> str:
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return markdown2html_mistune(text)


def tables(notebook: Path) -> list[str]:
    """The markdown cells of `notebook` that hold a table, in order (their headings and notes with them)."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    return [cell.source for cell in nb.cells if cell.cell_type == "markdown" and "|---" in cell.source.replace(" ", "")]


def cheat_sheet_html(release: Path = RELEASE) -> str:
    """Module 8's tables as one HTML page with a print style (two columns, A4 landscape: two sheets of paper)."""
    notebook = release / CHEAT_SHEET / f"{CHEAT_SHEET}.ipynb"
    if not notebook.is_file():
        raise FileNotFoundError(f"{notebook} is missing: run `make release` first")
    body = "\n".join(f"<section>{_markdown(source)}</section>" for source in tables(notebook))
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Spark Structured Streaming × "
            f"Kafka: the cheat sheet</title><style>{STYLE}</style></head>\n<body><h1>Spark Structured Streaming × "
            f"Kafka — the cheat sheet ({html.escape(CHEAT_SHEET)})</h1>\n{body}\n</body></html>\n")


def print_pdf(page: Path, pdf: Path) -> bool:
    """Print `page` to `pdf` with Debian's Chromium (Playwright); False where Chromium is not installed."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        return False
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True,
                                     args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            tab = browser.new_page()
            tab.goto(page.resolve().as_uri())
            tab.pdf(path=str(pdf), prefer_css_page_size=True, print_background=True)
        finally:
            browser.close()
    return True


def code_only(notebook: Path, out: Path) -> Path:
    """A copy of `notebook` with only its headings and code cells, outputs cleared: say what each cell prints."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    kept = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            kept.append(cell)
        elif cell.cell_type == "markdown":
            headings = [line for line in cell.source.splitlines() if line.startswith("#")]
            if headings:
                kept.append(nbformat.v4.new_markdown_cell("\n".join(headings)))
    nb.cells = kept
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"code-only-{index:03d}"
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)
    return out


def main(out: Path = DEFAULT_OUT, release: Path = RELEASE) -> int:
    """Write the cheat sheet (HTML, and PDF where Chromium is) and the code-only copies into `out`."""
    from .course import assignments

    out.mkdir(parents=True, exist_ok=True)
    sheet = out / "cheat-sheet.html"
    sheet.write_text(cheat_sheet_html(release), encoding="utf-8")
    print(f"wrote {sheet}")
    if print_pdf(sheet, out / "cheat-sheet.pdf"):
        print(f"wrote {out / 'cheat-sheet.pdf'}")
    else:
        print("no Chromium here (apt-get install chromium): print cheat-sheet.html from a browser for the PDF")
    for aid in assignments():
        notebook = release / aid / f"{aid}.ipynb"
        if notebook.is_file():
            code_only(notebook, out / "code-only" / f"{aid}.ipynb")
    print(f"wrote {out / 'code-only'}/<module>.ipynb: headings and code only — say what each cell prints, then run it")
    return 0
