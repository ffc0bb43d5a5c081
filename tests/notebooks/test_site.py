"""The static site (`python -m grader site`, docs/site.md): every module a page, every link and image there, a run's
outputs shown when given, and not one solution, hidden test or quiz key anywhere in it.

Built from the released student notebooks (notebooks/). When the suite's own lab runs saved their executed student
notebooks (tests/notebooks/test_modules.py writes test-results/executed/<id>.ipynb), the site is built with their
outputs, as `make site` builds it; without them it is built from the unexecuted notebooks and must pass all the same.
No broker and no Spark: building takes seconds.
"""
from __future__ import annotations

import base64
import functools
import re
import shutil
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

from grader.course import RELEASE, ROOT, SOURCE, assignments, pages
from grader.leaks import MARKERS, secrets
from grader.site import HOME, NO_RUN, build

EXECUTED = ROOT / "test-results" / "executed"
IDS = assignments(RELEASE)
# A line shorter than this, or of punctuation alone (`)`, `q1 = 'c'`, `return x`), says nothing about an answer and
# occurs in any page by chance; a quiz's key letter alone is such a line, so a key is searched as its reveal line.
SHORTEST = 12
# A secret line shorter than this counts as a whole line of a page; a longer one anywhere in its text. A solution's
# `from pyspark.sql import Window` is inside a helper's public `from pyspark.sql import Window, functions as F`,
# which module 10 prints; a solution's statement, a reveal line or an explanation is longer, or a line of its own.
ANYWHERE = 40


class _Page(HTMLParser):
    """A page's visible text (entities decoded) and every href/src, id and <script>."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.scripts = 0

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value is not None:
                self.links.append(value)
            elif name == "id" and value:
                self.ids.add(value)
            elif name in ("alt", "title") and value:
                self.text.append(value)
        self.scripts += tag == "script"

    def handle_data(self, data):
        self.text.append(data)


def parse(path: Path) -> _Page:
    """A built page, parsed (once per version of the file: a page is read by several tests, a link's target often)."""
    return _parsed(path, path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _parsed(path: Path, _mtime: int) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def searchable(path: Path) -> str:
    """What a reader of the file sees: a page's text (code unhighlighted), any other text file as it is."""
    if path.suffix == ".html":
        return "".join(parse(path).text)
    return path.read_bytes().decode("utf-8", errors="ignore")


def _flat(text: str) -> str:
    """`text` with every run of white space one blank: a page wraps and indents lines its own way."""
    return " ".join(text.split())


def never_shown() -> list[tuple[str, str]]:
    """(assignment, text) no built file may hold: every line of a solution or hidden-test region in solutions/
    (hidden tests hold every `quiz.reveal(` key line) and each quoted explanation in them (grader.leaks.secrets),
    minus what learners have anyway: the student version's own text (a line of a region that is also a line outside
    it, say) and the streamlab package's source in their lab (module 7 prints `inspect.getsource` of its sinks), and
    lines too short to mean anything (SHORTEST)."""
    public = "\n".join([_flat(cell.source) for aid in IDS
                         for cell in nbformat.read(RELEASE / aid / f"{aid}.ipynb", as_version=4).cells]
                        + [_flat(path.read_text(encoding="utf-8")) for path in (ROOT / "streamlab").rglob("*.py")])
    return [(aid, line) for aid, line in secrets(SOURCE)
            if len(line) >= SHORTEST and re.search(r"[A-Za-z0-9]", line) and _flat(line) not in public]


@pytest.fixture(scope="module")
def site(request, tmp_path_factory):
    """The site as `make site` builds it, with the suite's lab runs' outputs when they were saved. Its build time
    is printed in pytest's summary (tests/conftest.py); under ~60 s is the aim, not asserted (a loaded machine)."""
    executed = EXECUTED if any(EXECUTED.glob("*.ipynb")) else None
    started = time.monotonic()
    built = build(tmp_path_factory.mktemp("site") / "site", RELEASE, executed)
    lines = [f"the static site: {len(built.pages)} pages built in {time.monotonic() - started:.1f} s, with a run's "
             f"outputs: {', '.join(built.executed) or 'none'} (from {executed or 'no executed notebooks'})"]
    lines += [f"  left out: {line}" for line in built.skipped]
    request.config.streamlab_summary = getattr(request.config, "streamlab_summary", []) + lines
    return built


def test_the_course_has_modules():
    assert IDS and (RELEASE / HOME).is_file(), "notebooks/ holds no released course: run make release"


def test_every_module_has_a_page_linked_from_the_home(site):
    home = parse(site.out / "index.html")
    for aid in IDS:
        page = site.out / aid / f"{aid}.html"
        assert page.is_file(), f"{aid} has no page"
        assert f"{aid}/{aid}.html" in home.links, f"the home's module map does not link {aid}"
        title = nbformat.read(RELEASE / aid / f"{aid}.ipynb", as_version=4).cells[0].source.splitlines()[0][2:]
        assert title in "".join(parse(page).text), f"{aid}'s page lacks its title {title!r}"


def test_every_figure_is_drawn_on_its_page(site):
    """Each file of a module's figures/ is copied and shown as an image on its page (not left as a link, as an
    image's alt text with an unmatched `[` leaves it: Markdown ends the alt text at the last `[`)."""
    missing = []
    for aid in IDS:
        shown = {link for link in parse(site.out / aid / f"{aid}.html").links if link.startswith("figures/")}
        images = _images(site.out / aid / f"{aid}.html")
        for figure in sorted((RELEASE / aid / "figures").glob("*")) if (RELEASE / aid / "figures").is_dir() else []:
            rel = f"figures/{figure.name}"
            if not (site.out / aid / rel).is_file():
                missing.append(f"{aid}: {rel} (not copied)")
            elif rel not in images:
                missing.append(f"{aid}: {rel}" + (" (a link, not an image)" if rel in shown else " (not shown)"))
    assert not missing, "figures not drawn on their pages:\n" + "\n".join(missing)


def _images(page: Path) -> set[str]:
    """The src of every <img> on a page."""
    return set(re.findall(r'<img[^>]*\ssrc="([^"]+)"', page.read_text(encoding="utf-8")))


def test_each_page_links_the_previous_and_next_in_order(site):
    order = ["index.html"] + [f"{aid}/{aid}.html" for aid in IDS] + [
        f"{page.stem}.html" for page in pages(RELEASE) if page.name != HOME]
    for i, rel in enumerate(order):
        page = site.out / rel
        targets = {(page.parent / urlsplit(link).path).resolve() for link in parse(page).links
                   if link and not urlsplit(link).scheme and not link.startswith("#")}
        for j in (i - 1, i + 1):
            if 0 <= j < len(order):
                assert (site.out / order[j]).resolve() in targets, f"{rel} does not link {order[j]}"


def test_every_relative_link_and_image_resolves(site):
    """Every href and src that is not a web address or a data: URI names a file of the site (a notebook link became
    its page), and every #fragment an id on that page."""
    broken, checked = [], 0
    pages = sorted(site.out.rglob("*.html"))
    for page in pages:
        for link in parse(page).links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("//"):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            checked += 1
            if not target.is_file() or site.out.resolve() not in target.parents:
                broken.append(f"{page.relative_to(site.out)}: {link}")
            elif parts.fragment and target.suffix == ".html" and not {parts.fragment, unquote(parts.fragment)} & (
                    parse(target).ids):  # a browser tries the fragment as written, then decoded
                broken.append(f"{page.relative_to(site.out)}: {link} (no such id)")
    assert checked > 2 * len(pages), f"only {checked} relative links in {len(pages)} pages: is the parse right?"
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)
    assert not [p for p in pages for link in parse(p).links if ".ipynb" in link and not urlsplit(link).scheme], (
        "a page still links a notebook, which the site does not hold")


def test_no_page_needs_javascript(site):
    scripts = [f"{p.relative_to(site.out)}: {parse(p).scripts}" for p in sorted(site.out.rglob("*.html"))
               if parse(p).scripts]
    assert not scripts, f"pages with <script> (the site must read without JavaScript): {scripts}"


def test_no_solution_hidden_test_or_quiz_key_in_any_built_file(site):
    """Each solution line, hidden-test line (quiz.reveal with its key and explanation) and quoted explanation of
    solutions/, as a line of the text any built file shows (anywhere in it when ANYWHERE long); no nbgrader marker."""
    secret = never_shown()
    assert len(secret) > 100 and any("reveal(" in line for _, line in secret), (
        f"only {len(secret)} secret lines collected from {SOURCE}: is the collection right?")
    found = []
    files = sorted(p for p in site.out.rglob("*") if p.is_file())
    for path in files:
        text = searchable(path)
        flat, lines = _flat(text), {_flat(line) for line in text.splitlines()}
        found += [f"{path.relative_to(site.out)}: marker {m}" for m in MARKERS if m in text]
        found += [f"{path.relative_to(site.out)}: {aid}: {line[:100]}" for aid, line in secret
                  if _flat(line) in lines or (len(line) >= ANYWHERE and _flat(line) in flat)]
    print(f"\n{len(secret)} secret lines searched in {len(files)} files")
    assert not found, "the site shows what only the solutions hold:\n" + "\n".join(found)


def test_a_leak_would_be_found(site, tmp_path):
    """The search above finds a solution line and a quiz's reveal line once they are in a page, highlighted."""
    secret = never_shown()
    reveal = next(line for _, line in secret if line.startswith("quiz.reveal("))
    solution = next(line for aid, line in secret if "=" in line and "reveal" not in line)
    leaky = tmp_path / "leaky"
    shutil.copytree(site.out, leaky)
    page = leaky / IDS[0] / f"{IDS[0]}.html"
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    code = highlight(f"{solution}\n{reveal}\n", PythonLexer(), HtmlFormatter())
    page.write_text(page.read_text(encoding="utf-8").replace("</main>", code + "</main>"), encoding="utf-8")
    text = searchable(page)
    assert solution in text and reveal in text


def test_a_run_s_outputs_are_shown_and_what_needs_a_kernel_is_not(tmp_path):
    """An executed student notebook's printed text and chart image reach its page; a widget's view and state and
    any JavaScript do not (the demo's frozen PNG does); a notebook whose cells differ from the student version (a
    solution's run, say) is not used at all."""
    aid, other = IDS[:2]
    release = tmp_path / "notebooks"  # the home and two modules: enough, and built in seconds
    release.mkdir()
    shutil.copyfile(RELEASE / HOME, release / HOME)
    for module in (aid, other):
        shutil.copytree(RELEASE / module, release / module, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    nb = nbformat.read(RELEASE / aid / f"{aid}.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    chart = _chart_png()
    code[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="rows per batch: 4321 (printed)\n")]
    code[1].outputs = [nbformat.v4.new_output("display_data", data={
        "application/vnd.jupyter.widget-view+json": {"model_id": "abc123", "version_major": 2, "version_minor": 0},
        "image/png": base64.b64encode(chart).decode()})]
    code[2].outputs = [nbformat.v4.new_output("display_data", data={
        "application/javascript": "alert('x')", "text/plain": "<IPython.core.display.Javascript object>"}),
        nbformat.v4.new_output("display_data", data={
            "application/vnd.jupyter.widget-view+json": {"model_id": "def456", "version_major": 2,
                                                         "version_minor": 0},
            "text/plain": "VBox(children=(Button(description='Check my work'),))"})]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {"abc123": {"secret": 1}}}}
    options = [c for c in code if c.metadata.get("jupyter", {}).get("source_hidden") and "quiz.options(" in c.source]
    assert options, f"{aid} has no quiz options cell to show"
    for cell in options:  # a run prints every question's options
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="a) shown in the run's own order\n")]
    ran = tmp_path / "executed"
    ran.mkdir()
    nbformat.write(nb, ran / f"{aid}.ipynb")
    changed = nbformat.read(RELEASE / other / f"{other}.ipynb", as_version=4)
    answer = next(c for c in changed.cells if c.cell_type == "code" and "YOUR CODE HERE" in c.source)
    answer.source = answer.source.replace("# YOUR CODE HERE", "answer = 42  # a learner's or a solution's answer")
    answer.outputs = [nbformat.v4.new_output("stream", name="stdout", text="from a changed notebook\n")]
    nbformat.write(changed, ran / f"{other}.ipynb")

    built = build(tmp_path / "site", release, ran)
    page = built.out / aid / f"{aid}.html"
    html = page.read_text(encoding="utf-8")
    assert built.executed == [aid] and NO_RUN not in html
    assert "rows per batch: 4321 (printed)" in searchable(page)
    assert f'src="data:image/png;base64,{base64.b64encode(chart).decode()}"' in html, "the chart is not shown"
    assert "<script" not in html and "abc123" not in html and "def456" not in html and "VBox(" not in html
    assert "alert(" not in html and "widget-state" not in html
    assert "shown in the run's own order" in searchable(page) and "quiz.options(" not in searchable(page), \
        "a quiz's options cell shows its code (hidden in the notebook) instead of only the options it printed"
    assert len(built.skipped) == 1 and other in built.skipped[0], built.skipped
    skipped_page = built.out / other / f"{other}.html"
    assert "from a changed notebook" not in searchable(skipped_page) and "answer = 42" not in searchable(skipped_page)
    assert NO_RUN in skipped_page.read_text(encoding="utf-8")


def test_the_suite_s_lab_runs_show_their_outputs(site):
    """Where the suite's lab runs saved executed notebooks, their pages show outputs (and say nothing of a missing
    run); the build never quietly drops one."""
    if not site.executed:
        print("\nno executed notebooks in test-results/executed/ (tests/notebooks/test_modules.py saves them): "
              "the site was built without outputs")
    for aid in site.executed:
        html = (site.out / aid / f"{aid}.html").read_text(encoding="utf-8")
        assert "jp-OutputArea-output" in html and NO_RUN not in html, f"{aid}: executed, but no output shown"
    # An executed notebook of an earlier run whose student version has changed since is left out (printed by the
    # fixture): the next lab run writes it afresh.


def test_bad_arguments_are_one_line_naming_the_fix(tmp_path, capsys):
    from grader.__main__ import main

    assert main(["site", "--out", str(tmp_path / "s"), "--executed", str(tmp_path / "nowhere")]) == 2
    assert main(["site", "--out", str(RELEASE)]) == 2
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("a reader's own file")
    assert main(["site", "--out", str(mine)]) == 2
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 3 and "no such folder" in said[0], said
    assert all("no site of ours" in line and "pick a new or empty folder" in line for line in said[1:]), said
    assert not (tmp_path / "s").exists() and (RELEASE / HOME).is_file() and (mine / "notes.txt").is_file()


def _chart_png() -> bytes:
    """A small chart as a PNG, drawn as the course's demos draw theirs."""
    from matplotlib.figure import Figure

    from streamlab.demo.widgets import png

    fig = Figure(figsize=(3, 2))
    fig.subplots().plot([0, 1, 2], [3, 1, 2])
    return png(fig)
