"""The revision aids (grader/revision.py): module 8's tables as a printable sheet, code-only copies; no answer in
either, since both are made from the student notebooks."""
from __future__ import annotations

import re
import shutil

import nbformat
import pytest

from grader import revision
from grader.course import RELEASE, SOURCE, assignments

SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)


def _solution_lines() -> set[str]:
    """The solution regions' lines of 12 characters or more (shorter ones, e.g. `return x`, say nothing) that no
    student version holds anywhere (a line such as `"startingOffsets": "earliest",` is in demos too)."""
    lines, shown = set(), set()
    for aid in assignments():
        nb = nbformat.read(SOURCE / aid / f"{aid}.ipynb", as_version=4)
        for cell in nb.cells:
            for region in SOLUTION.findall(cell.source):
                lines |= {line.strip() for line in region.splitlines() if len(line.strip()) >= 12}
        student = nbformat.read(RELEASE / aid / f"{aid}.ipynb", as_version=4)
        shown |= {line.strip() for cell in student.cells for line in cell.source.splitlines()}
    return lines - shown


def test_the_cheat_sheet_holds_every_table_of_module_8_and_prints(tmp_path):
    revision.main(tmp_path)
    page = (tmp_path / "cheat-sheet.html").read_text()
    notebook = RELEASE / revision.CHEAT_SHEET / f"{revision.CHEAT_SHEET}.ipynb"
    found = revision.tables(notebook)
    assert len(found) >= 8, "module 8 lost its tables"
    for source in found:  # each table's first column header is on the sheet
        header = next(line for line in source.splitlines() if line.startswith("|"))
        first = header.strip("|").split("|")[0].strip().strip("`")
        assert first and first in page, first
    assert "maxOffsetsPerTrigger" in page and "commits/N" in page
    if shutil.which("chromium"):
        pdf = (tmp_path / "cheat-sheet.pdf").read_bytes()
        assert pdf.startswith(b"%PDF") and 1 <= len(re.findall(rb"/Type\s*/Page[^s]", pdf)) <= 2


def test_code_only_copies_keep_headings_and_code_and_no_answer(tmp_path):
    revision.main(tmp_path)
    answers = _solution_lines()
    for aid in assignments():
        copy = nbformat.read(tmp_path / "code-only" / f"{aid}.ipynb", as_version=4)
        student = nbformat.read(RELEASE / aid / f"{aid}.ipynb", as_version=4)
        assert [c.source for c in copy.cells if c.cell_type == "code"] == \
            [c.source for c in student.cells if c.cell_type == "code"], aid
        assert all(c.source.lstrip().startswith("#") for c in copy.cells if c.cell_type == "markdown"), aid
        assert not any(c.get("outputs") for c in copy.cells if c.cell_type == "code"), aid
        leaked = sorted(answers & {line.strip() for c in copy.cells for line in c.source.splitlines()})
        assert not leaked, f"{aid}: solution lines in the code-only copy: {leaked[:3]}"


def test_without_a_release_it_names_make_release(tmp_path):
    with pytest.raises(FileNotFoundError, match="make release"):
        revision.cheat_sheet_html(tmp_path)
