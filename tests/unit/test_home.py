"""The course's home (notebooks/START-HERE.ipynb): make lab opens it, its links reach every module, its one code
cell runs, and it holds no answer (it is released as it is)."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import nbformat

from grader.course import RELEASE, SOURCE, assignments

HOME = RELEASE / "START-HERE.ipynb"


def test_the_home_links_every_module_and_every_link_resolves():
    nb = nbformat.read(HOME, as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    links = set(re.findall(r"\]\(([^)#\s]+\.ipynb)\)", text))
    assert {f"{aid}/{aid}.ipynb" for aid in assignments(RELEASE)} <= links, "a module is missing from the map"
    assert all((RELEASE / link).is_file() for link in links), [l for l in links if not (RELEASE / l).is_file()]


def test_the_homes_code_runs_and_shows_the_progress_table(tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMLAB_HOME", str(tmp_path))
    nb = nbformat.read(HOME, as_version=4)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for cell in (c for c in nb.cells if c.cell_type == "code"):
            exec(compile(cell.source, str(HOME), "exec"), {})
    assert "00-setup" in out.getvalue() and f"of {len(assignments(RELEASE))} modules complete" in out.getvalue()


def test_make_lab_opens_the_home():
    main = (Path(__file__).resolve().parents[2] / "streamlab" / "__main__.py").read_text()
    assert "--LabApp.default_url=/lab/tree/START-HERE.ipynb" in main
    assert (SOURCE / "START-HERE.ipynb").is_file() and HOME.is_file()
