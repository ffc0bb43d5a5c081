"""Every interview pool question links to the section of the student notebook that proves its answer.

A wrong answer in the drill or the mock interview sends the candidate to a cell to rerun; a link that names only a
module (or a heading the notebook no longer has, after a heading was reworded) leaves them searching a 60-cell
notebook. The headings are read from the notebooks students open (notebooks/, built by `grader release`), the way
JupyterLab makes its anchors: the heading's text with spaces turned into '-'. The mock round's clickable link names
the heading's cell instead (`#cell-id=`), which JupyterLab scrolls to in a notebook it has just opened.
"""
from __future__ import annotations

import random
import re
from functools import lru_cache

import nbformat
import pytest

from grader.course import RELEASE
from streamlab.course import interview, mock

FRAGILE = re.compile(r"[()\"#`]")  # breaks a markdown link, or the browser percent-encodes it in the anchor


@lru_cache(maxsize=None)
def headings(notebook: str) -> list[str]:
    """The text of every markdown heading of a student notebook, as JupyterLab renders it (code marks dropped)."""
    nb = nbformat.read(RELEASE / notebook / f"{notebook}.ipynb", as_version=4)
    return [line.lstrip("#").strip().replace("`", "") for cell in nb.cells if cell.cell_type == "markdown"
            for line in cell.source.splitlines() if re.match(r"#{1,6} ", line)]


@pytest.mark.parametrize("qid", interview.pool_ids())
def test_the_question_links_to_a_section_of_the_student_notebook(qid):
    topic = interview.make(qid, random.Random(0)).topic
    notebook, section = mock.where(qid, topic)
    assert (RELEASE / notebook / f"{notebook}.ipynb").is_file(), f"{qid}: no student notebook {notebook}"
    assert section, f"{qid}: links only the module {notebook}; give it a section in interview.SECTIONS"
    assert not FRAGILE.search(section), f"{qid}: {section!r} makes a fragile anchor; link a plain heading"
    found = headings(notebook)
    assert section in found, f"{qid}: no heading {section!r} in notebooks/{notebook}"
    assert found.count(section) == 1, f"{qid}: {section!r} is not unique in {notebook}, so the anchor is ambiguous"
    assert mock.link((notebook, section)).endswith(f"{notebook}.ipynb#" + section.replace(" ", "-"))
    # the widget's clickable link names the heading's cell, which JupyterLab finds in a notebook just opened
    cell = mock.heading_cell((notebook, section))
    assert cell and mock.proof_link((notebook, section)).endswith(f"({notebook}/{notebook}.ipynb#cell-id={cell})")


def test_every_question_of_the_pool_has_its_section_and_nothing_else_does():
    assert set(interview.WHERE) == set(interview.pool_ids())


def test_a_link_naming_a_module_only_or_a_missing_heading_is_caught():
    """The checks above fail on the two mistakes they exist for (a module-only link, a reworded heading)."""
    notebook = "02-offset-tracking"
    assert "" not in headings(notebook)
    assert "4. A crash between offsets and commits" not in headings(notebook)
    assert "4. A crash between offsets/N and commits/N" in headings(notebook)
