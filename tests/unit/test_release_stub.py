"""A scaffold (`...` to fill in) is what a learner writes into: nbgrader's "# YOUR CODE HERE / pass" stub below it
said "write here" a second time, under the function it belongs in. Cells without a scaffold keep the stub."""
from __future__ import annotations

import nbformat

from grader.course import RELEASE, STUB, without_stub


def test_the_stub_below_a_scaffold_is_dropped():
    scaffold = 'def f(x):\n    """Doc."""\n    return ...   # a hint\n' + STUB
    assert without_stub(scaffold) == 'def f(x):\n    """Doc."""\n    return ...   # a hint'


def test_a_cell_without_a_scaffold_keeps_its_stub():
    plain = "q1 = None\n" + STUB
    assert without_stub(plain) == plain
    commented = "# use ... as you like\n" + STUB  # `...` in a comment is no scaffold
    assert without_stub(commented) == commented


def test_no_released_scaffold_ends_with_the_stub():
    scaffolds = stubbed = 0
    for path in sorted(RELEASE.glob("*/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            code = cell.source if cell.cell_type == "code" else ""
            if cell.metadata.get("nbgrader", {}).get("solution") and any(
                    "..." in line.split("#")[0] for line in code.splitlines()):
                scaffolds += 1
                stubbed += STUB in code
    assert scaffolds >= 9 and stubbed == 0, (scaffolds, stubbed)
