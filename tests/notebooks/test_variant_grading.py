"""Per-learner variants, graded for real on 00-setup: another seed's solution scores full marks, and an answer
worked out for one variant fails on another, with a note saying the numbers are not the learner's."""
from __future__ import annotations

import math
import re

import nbformat
import pytest

from grader.course import SOURCE
from grader.grading import grade_notebook
from streamlab.variants import Variant

pytestmark = [pytest.mark.broker, pytest.mark.spark]
AID = "00-setup"
PER_BATCH = [400, 450, 500, 600, 700, 750, 800]


def numbers(seed: int) -> tuple[int, int]:
    """(records, batches) of Exercise 1 for a seed, drawn as the notebook draws them."""
    v = Variant(AID, seed)
    batches = v.randint("ex1.batches", 3, 6)
    return batches * v.choice("ex1.per_batch", PER_BATCH), batches


def seeds_that_disagree() -> tuple[int, int]:
    """Two seeds where the cap that is right for the first is wrong for the second."""
    first = 1001
    records, batches = numbers(first)
    cap = records // batches
    for other in range(2000, 3000):
        r, b = numbers(other)
        if math.ceil(r / cap) != b:
            return first, other
    raise AssertionError("no disagreeing seed found")


def test_another_seed_solution_full_marks_and_copied_numbers_fail(tmp_path, bootstrap):
    mine, theirs = seeds_that_disagree()
    solution = tmp_path / "solution" / f"{AID}.ipynb"
    solution.parent.mkdir()
    solution.write_bytes((SOURCE / AID / f"{AID}.ipynb").read_bytes())
    full = grade_notebook(solution, seed=theirs, timeout=240)
    assert (full.score, full.max_score) == (3, 3), [(e.grade_id, e.hint) for e in full.exercises]

    records, batches = numbers(mine)
    nb = nbformat.read(SOURCE / AID / f"{AID}.ipynb", as_version=4)
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex1_cap")
    answer.source = f"cap = {records // batches}  # worked out on variant {mine}"
    setup = next(c for c in nb.cells if c.cell_type == "code")
    setup.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"broker    x\nvariant   {mine} (...)\n")]
    copied = tmp_path / "copied" / f"{AID}.ipynb"
    copied.parent.mkdir()
    nbformat.write(nb, copied)
    result = grade_notebook(copied, seed=theirs, timeout=240)
    ex1 = next(e for e in result.exercises if e.grade_id == "ex1_four_batches")
    assert ex1.points == 0, ex1
    assert any(re.search(rf"variant {mine}, but yours is {theirs}.*not yours", n) for n in result.notes), result.notes
