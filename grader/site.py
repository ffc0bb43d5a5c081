"""`python -m grader site`: the course as a static site, readable without running it (issue 32, item 4).

On GitHub the course is prose and code with no result: the released notebooks hold no output. The site shows each
module as a page, with its figures and, when executed notebooks are given (`--executed`, which `make site` fills by
running every untouched student notebook), the tables, numbers and charts of a real run.

Why not Jupyter Book 2 / MyST, the convention: mystmd downloads its site theme from api.mystmd.org at build time,
which these machines and CI cannot reach, and its npm packages ship no built theme. So each page is nbconvert's HTML
with JupyterLab's own `lab` template (installed with JupyterLab), its JavaScript blocks left out (nothing here
needs a script to be read), and the home page, the module list and the previous/next links are ours.

Only the *student* notebooks (notebooks/, `make release`) go in, never solutions/: an executed notebook is used only
when its cells are those of the student version, cell for cell, so a run of a solution can never reach the site.
Widgets (sliders, quiz and check buttons) need a kernel: they are left out, and a live demo shows the PNG it froze.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .course import PAGE_FIGURES, RELEASE, ROOT, GraderError, assignments, comparable, pages

DEFAULT_OUT = ROOT / ".streamlab" / "site"
HOME = "START-HERE.ipynb"  # the course's home notebook: the site's index.html
MARK = ".grader-site"  # in every site folder: a build replaces only a folder that is absent, empty or holds it
DEMO_SECONDS = 15  # a demo in `make site`'s run ends this long after its script, as in the tests' lab runs
DROPPED_MIMES = ("application/vnd.jupyter.widget-view+json", "application/vnd.jupyter.widget-state+json",
                 "application/javascript")
NO_RUN = "This page shows no outputs: the notebook was not run for this build (make site runs it)."
# A module whose setup starts the lab's cluster (three brokers and a Spark cluster, about 2.5 GB more): `make site`
# does not start one to run it.
NO_RUN_ON_THE_CLUSTER = ("This page shows no outputs: its demos run on the lab's cluster (make lab CLUSTER=1), which "
                         "make site does not start; each demo's 'What you should see' cell says what it shows.")
_HREF = re.compile(r'((?:href|src)=")([^"#:]*?\.ipynb)(#[^"]*)?(")')

_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block extra_css -%}
<style type="text/css">
nav.site { font-family: var(--jp-ui-font-family, sans-serif); font-size: 14px; max-width: 1100px;
           margin: 0 auto; padding: 10px 20px; display: flex; flex-wrap: wrap; gap: 6px 18px;
           border-bottom: 1px solid #ccc; background: #f6f8fa; }
nav.site.bottom { border-top: 1px solid #ccc; border-bottom: none; margin-top: 24px; }
nav.site a { text-decoration: none; }
nav.site .spacer { flex: 1; }
nav.site .note { width: 100%; color: #555; }
main { max-width: 1100px; margin: 0 auto; }
</style>
{%- endblock extra_css -%}
{%- block body_header -%}{{ super() }}{{ resources.site_nav_top }}{%- endblock body_header -%}
{%- block body_footer -%}{{ resources.site_nav_bottom }}{{ super() }}{%- endblock body_footer -%}
"""


@dataclass
class Site:
    """What a build made: the folder, its pages (relative paths, in reading order), which show a run's outputs."""

    out: Path
    pages: list[str] = field(default_factory=list)
    executed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # executed notebooks left out, one line each (why)
    seconds: float = 0.0


def _title(nb, fallback: str) -> str:
    """A notebook's title: its first heading, without the #."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return fallback


def _page_of(name: str) -> str:
    """The site page of a notebook file name: START-HERE.ipynb is index.html, any other X.ipynb is X.html."""
    return "index.html" if name == HOME else name[: -len(".ipynb")] + ".html"


def _relinked(html: str) -> str:
    """Relative links and images to notebooks pointed at their pages (a link to any other file is left as is)."""
    def swap(m: re.Match) -> str:
        path = m.group(2)
        head, _, name = path.rpartition("/")
        return m.group(1) + (head + "/" if head else "") + _page_of(name) + (m.group(3) or "") + m.group(4)

    return _HREF.sub(swap, html)


def self_check_html(name: str) -> str:
    """A Check yourself question as a page shows it without a kernel: the question, its options lettered as the
    course writes them, and the answer (its letter and text) with why, folded under them."""
    from streamlab.course.quiz import LETTERS, as_html
    from streamlab.course.self_checks import QUESTIONS

    asked = QUESTIONS[name]
    items = "".join(f"<li>{letter}) {as_html(option)}</li>" for letter, option in zip(LETTERS, asked.options))
    right = asked.options[LETTERS.index(asked.key)]
    return (f'<div class="self-check" style="margin: 1em 0 1.5em 0"><p><b>Check yourself.</b> '
            f'{as_html(asked.question)}</p><ul style="list-style: none; padding-left: 1em">{items}</ul>'
            f"<details><summary>Answer</summary><p><b>{asked.key}) {as_html(right)}.</b> {as_html(asked.why)}</p>"
            "<p><small>(In the notebook each learner sees these options in an order of her own.)</small></p>"
            "</details></div>")


def _static(nb) -> None:
    """Leave out what needs a kernel or a script: widget views and state, JavaScript, a widget's bare repr; and the
    code of a cell whose source the notebook hides, where a run printed what it shows (a quiz's options). A Check
    yourself cell shows its question, with the answer folded (`self_check_html`), instead of its buttons."""
    from streamlab.course import self_checks

    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        asked = self_checks.asked_in(cell.source)
        if asked:
            cell.metadata.setdefault("transient", {})["remove_source"] = True
            cell.outputs = [{"output_type": "display_data", "metadata": {},
                             "data": {"text/html": "".join(self_check_html(name) for name in asked)}}]
            continue
        if cell.metadata.get("jupyter", {}).get("source_hidden") and cell.get("outputs"):
            cell.metadata.setdefault("transient", {})["remove_source"] = True
        kept = []
        for out in cell.get("outputs", []):
            data = out.get("data")
            if data is not None:
                widget = any(m in data for m in DROPPED_MIMES)
                for mime in DROPPED_MIMES:
                    data.pop(mime, None)
                if widget and set(data) <= {"text/plain"}:  # a widget's repr (VBox(children=…)), not a result
                    data.pop("text/plain", None)
                if not data:
                    continue
            kept.append(out)
        cell.outputs = kept


def _cells(nb) -> list[tuple[str, str]]:
    """(type, source) of every cell: what must match between an executed notebook and its student version."""
    return [(c["cell_type"], c["source"]) for c in nb["cells"]]


def _nav(entries: list[tuple[str, str]], here: int, prefix: str, bottom: bool, note: str = "") -> str:
    """The navigation bar of page `here`: home, previous and next (relative hrefs), and a note, if any."""
    from html import escape

    def link(i: int) -> str:
        return f'<a href="{prefix}{entries[i][0]}">{escape(entries[i][1])}</a>'

    parts = [f'<nav class="site{" bottom" if bottom else ""}" aria-label="course">',
             f'<a href="{prefix}index.html">⌂ Course home</a>']
    if here > 0:
        parts.append(f'<span>← Previous: {link(here - 1)}</span>')
    parts.append('<span class="spacer"></span>')
    if here + 1 < len(entries):
        parts.append(f'<span>Next: {link(here + 1)} →</span>')
    if note:
        parts.append(f'<span class="note">{escape(note)}</span>')
    parts.append("</nav>")
    return "".join(parts)


def build(out: Path = DEFAULT_OUT, release: Path = RELEASE, executed: Path | None = None) -> Site:
    """Write the site of the student notebooks in `release` into `out` (replaced): index.html, one page per module
    with its figures; a module's outputs come from `executed`/<id>.ipynb when that is its student version run."""
    import nbformat
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    started = time.monotonic()
    release, out = Path(release).resolve(), Path(out).resolve()
    ids = assignments(release)
    home = release / HOME
    if not ids or not home.is_file():
        raise GraderError(f"{release} holds no released course ({HOME} and <id>/<id>.ipynb): run `make release`")
    if executed is not None and not Path(executed).is_dir():
        raise GraderError(f"--executed {executed}: no such folder (it holds executed student notebooks <id>.ipynb)")
    if out.exists() and any(out.iterdir()) and not (out / MARK).is_file():
        raise GraderError(f"--out {out}: holds files that are no site of ours (a site replaces its folder): "
                          "pick a new or empty folder")
    site = Site(out)
    # reading order: the home, the modules, then the course's other pages (the interview drill, say)
    sources = [(HOME, home)] + [(f"{aid}/{aid}.ipynb", release / aid / f"{aid}.ipynb") for aid in ids] + [
        (page.name, page) for page in pages(release) if page.name != HOME]
    notebooks = [nbformat.read(path, as_version=4) for _, path in sources]
    entries = [(_page_of(rel), "Start here" if rel == HOME else _title(nb, path.stem))
               for (rel, path), nb in zip(sources, notebooks)]
    exporter = HTMLExporter(template_name="lab", extra_loaders=[DictLoader({"site.html.j2": _TEMPLATE})],
                            template_file="site.html.j2", exclude_anchor_links=False)
    tmp_out = out.with_name(out.name + ".building")
    shutil.rmtree(tmp_out, ignore_errors=True)
    tmp_out.mkdir(parents=True)
    try:
        for i, ((rel, path), nb) in enumerate(zip(sources, notebooks)):
            aid = path.stem
            module = aid in ids
            note = ""
            ran = Path(executed) / f"{aid}.ipynb" if executed is not None and module else None
            if ran is not None and ran.is_file():
                run = nbformat.read(ran, as_version=4)
                if _cells(run) == _cells(comparable(path)):
                    nb = run
                    site.executed.append(aid)
                else:
                    site.skipped.append(f"{ran}: not the student version of {path.relative_to(release.parent)} "
                                        "(its cells differ): its outputs are left out; run `make site` again")
            if module and aid not in site.executed:
                note = NO_RUN_ON_THE_CLUSTER if needs_cluster(nb) else NO_RUN
            _static(nb)
            prefix = "../" * rel.count("/")
            resources = {"metadata": {"name": entries[i][1], "path": str(path.parent)},
                         "site_nav_top": _nav(entries, i, prefix, False, note),
                         "site_nav_bottom": _nav(entries, i, prefix, True)}
            html, _ = exporter.from_notebook_node(nb, resources=resources)
            page = tmp_out / entries[i][0]
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text(_relinked(html), encoding="utf-8")
            site.pages.append(entries[i][0])
            if module:  # the module's own files its page shows (figures/): everything but notebooks
                for extra in sorted(p for p in path.parent.rglob("*") if p.is_file()):
                    relative = extra.relative_to(path.parent)
                    if extra.suffix == ".ipynb" or ".ipynb_checkpoints" in relative.parts:
                        continue
                    (page.parent / relative).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(extra, page.parent / relative)
        shared = release / PAGE_FIGURES  # the top-level pages' figures (the home's course map)
        if shared.is_dir():
            shutil.copytree(shared, tmp_out / PAGE_FIGURES, dirs_exist_ok=True)
        (tmp_out / MARK).write_text("made by `python -m grader site`; the next build replaces this folder\n")
        shutil.rmtree(out, ignore_errors=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp_out, out)
    finally:
        shutil.rmtree(tmp_out, ignore_errors=True)
    site.seconds = time.monotonic() - started
    return site


def needs_cluster(nb) -> bool:
    """Whether a notebook's setup starts the lab's cluster (`setup(cluster=True)`)."""
    return any(c.cell_type == "code" and "setup(cluster=True)" in c.source for c in nb.cells)


def execute(into: Path, release: Path = RELEASE, only: list[str] | None = None, timeout: int = 900,
            cluster: bool = False) -> list[str]:
    """Run each untouched student notebook in `release` as a learner's Run All nobody watches, in a kernel of its
    own with its own temporary folder; write it to `into`/<id>.ipynb. Those needing the lab's cluster (module 9) only
    with `cluster` (their setup starts it; it is stopped after them)."""
    from streamlab.lab.broker import broker_port, external_bootstrap, probe, stop_broker

    release, into = Path(release).resolve(), Path(into).resolve()
    into.mkdir(parents=True, exist_ok=True)
    # the notebooks' setup cells start the lab's broker when none runs: one started for this run is stopped after it
    ours = not external_bootstrap() and probe(f"127.0.0.1:{broker_port()}") != "kafka"
    try:
        return _execute_each(into, release, only or assignments(release), timeout, cluster)
    finally:
        if ours:
            stop_broker()


def _execute_each(into: Path, release: Path, ids: list[str], timeout: int, cluster: bool = False) -> list[str]:
    """execute()'s loop: each notebook in turn (the machine has two cores, and each run holds a Spark JVM)."""
    import nbformat
    from nbclient import NotebookClient

    from streamlab.demo.live import DEMO_SECONDS_ENV

    from .runner import kernel_started

    done = []
    for aid in ids:
        path = release / aid / f"{aid}.ipynb"
        if not path.is_file():
            raise GraderError(f"{path}: no such student notebook: run `make release`")
        on_cluster = needs_cluster(nbformat.read(path, as_version=4))
        if on_cluster and not cluster:
            print(f"skipped   {aid}: its setup starts the lab's cluster (its page says so)", flush=True)
            continue
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f"grader-site-{aid}-") as tmp:
            work = Path(tmp) / aid
            shutil.copytree(path.parent, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
            (Path(tmp) / "kernel-tmp").mkdir()
            env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"} | {
                "TMPDIR": str(Path(tmp) / "kernel-tmp"), DEMO_SECONDS_ENV: str(DEMO_SECONDS)}
            nb = nbformat.read(work / f"{aid}.ipynb", as_version=4)
            client = NotebookClient(nb, timeout=timeout, allow_errors=True, kernel_name="python3",
                                    extra_arguments=["--IPKernelApp.log_level=ERROR"],
                                    resources={"metadata": {"path": str(work)}})
            try:
                with kernel_started(client, env=env):
                    for index, cell in enumerate(nb.cells):
                        client.execute_cell(cell, index)
            finally:
                if on_cluster:  # started by its setup cell, for this run only
                    from streamlab.lab import cluster as lab_cluster

                    lab_cluster.stop()
            nbformat.write(nb, into / f"{aid}.ipynb")
        errors = sum(o.output_type == "error" for c in nb.cells if c.cell_type == "code" for o in c.outputs)
        print(f"ran       {aid} in {time.monotonic() - started:.0f} s"
              + (f" ({errors} cell(s) showed an error)" if errors else ""), flush=True)
        done.append(aid)
    return done


def main(out: Path = DEFAULT_OUT, executed: Path | None = None, run: bool = False, release: Path = RELEASE) -> int:
    """`python -m grader site`: run the notebooks into `executed` first when `run`, then build; print a summary."""
    if run:
        if executed is None:
            raise GraderError("--run needs --executed DIR: the folder the executed notebooks go to")
        execute(executed, release)
    site = build(out, release, executed)
    for line in site.skipped:
        print(f"warning: {line}")
    shown = f"{len(site.executed)} with a run's outputs" if executed is not None else "none with outputs"
    print(f"wrote {len(site.pages)} pages ({shown}) in {site.seconds:.1f} s: open {site.out / 'index.html'}")
    return 0
