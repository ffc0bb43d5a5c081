"""A module longer than one sitting is taken in two (issue 29): its "Sitting 2 starts here" cell promises that a
learner back on another day, in a new kernel, runs the Setup cells and carries on from there.

Running Setup + sitting 2 of every module in fresh kernels took 612 s on the lab machine (8 to 165 s a module, each
a Spark JVM, demos included), too slow for the suite; these tests hold the promise statically instead: every name a
sitting-2 cell reads is bound by the Setup cells or by a cell of sitting 2 above it (or by itself). They read the
solutions, hidden tests included, so a check that needs a sitting-1 name fails here too. What a name cannot show (a
checkpoint folder sitting 1 filled, as module 2's Exercise 4 reads) only such a run finds: the commit that added the
sittings ran each module's Setup + sitting 2 that way, with no error and no failed check."""
from __future__ import annotations

import re

import nbformat
import pytest

from grader import lint
from grader.course import RELEASE, SOURCE, assignments

MODULES = assignments(SOURCE)


def _notebook(aid: str, root=SOURCE):
    return nbformat.read(root / aid / f"{aid}.ipynb", as_version=4)


def _heading(cell) -> re.Match | None:
    return re.match(r"(#+)\s", cell.source.lstrip()) if cell.cell_type == "markdown" else None


@pytest.mark.parametrize("aid", MODULES)
def test_sitting_2_needs_only_the_setup_cells(aid):
    nb = _notebook(aid)
    needs = lint.sitting_needs(nb)
    assert not needs, "\n".join(f"{aid}: cell {i} (sitting 2) reads {', '.join(names)}, which only sitting 1 "
                                "binds: make it again at sitting 2's start" for i, names in needs.items())


@pytest.mark.parametrize("aid", MODULES)
def test_sitting_2_starts_at_a_section_and_says_how_to_come_back(aid):
    """The cell is a heading cell of its own, outside any exercise or collapsed Going deeper section, followed by
    a section (its own re-entry cell aside), and it names the Setup cells to run."""
    nb = _notebook(aid)
    starts = lint.sitting_starts(nb)
    if lint.minutes(lint.main_path(nb)).total <= 75:
        return
    assert len(starts) == 1, f"{aid}: longer than 75 min of main path, it needs exactly one sitting-2 cell"
    cell = nb.cells[starts[0]]
    assert cell.cell_type == "markdown" and _heading(cell) and "Setup" in cell.source, cell.source
    following = next(c for c in nb.cells[starts[0] + 1:] if c.cell_type == "markdown")
    assert _heading(following), f"{aid}: sitting 2 must start where a section starts"
    above = [c for c in nb.cells[:starts[0]] if _heading(c)][-1]  # the section sitting 1 ends with
    if re.search(r"exercise|going deeper|going further", above.source.splitlines()[0], re.I):
        assert len(_heading(following).group(1)) <= len(_heading(above).group(1)), \
            f"{aid}: sitting 2 starts inside “{above.source.splitlines()[0]}”"
    assert cell in lint.main_path(nb).cells, f"{aid}: the sitting-2 cell is hidden in a collapsed section"


@pytest.mark.parametrize("aid", MODULES)
def test_the_student_version_keeps_the_sitting(aid):
    """The sitting-2 cell and its metadata reach notebooks/ (the lint and the learner's tools find it there)."""
    if not lint.sitting_starts(_notebook(aid)):
        return
    assert lint.sitting_starts(_notebook(aid, RELEASE)), f"{aid}: notebooks/ lost the sitting-2 cell: make release"
