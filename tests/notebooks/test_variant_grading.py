"""Per-learner variants, graded for real as a cohort of two learners: Ada's solution scores full marks on her
variant, and Bob's answer, copied from Ada's numbers, fails on his with a note saying they are not his.

The assignment is the fixture fx-variant (tests/fixtures/make_fixture.py): 00-setup's Exercise 1 with its variant
draws, and no Spark, so the plumbing (each learner's seed, the note on copied numbers) is graded in seconds; 00-setup's
own checks are graded in test_modules."""
from __future__ import annotations

import math
import re
from pathlib import Path

import nbformat
import pytest

from grader.cohort import grade_cohort
from streamlab.course.variants import Variant, student_seed

pytestmark = [pytest.mark.broker]
SOURCE = Path(__file__).resolve().parents[1] / "fixtures" / "variant-solutions"
AID = "fx-variant"
PER_BATCH = [400, 450, 500, 600, 700, 750, 800]


def numbers(seed: int) -> tuple[int, int]:
    """(records, batches) of Exercise 1 for a seed, drawn as the notebook draws them."""
    v = Variant(AID, seed)
    batches = v.randint("ex1.batches", 3, 6)
    return batches * v.choice("ex1.per_batch", PER_BATCH), batches


def learners_who_disagree() -> tuple[str, str]:
    """Two student ids where the cap that is right for the first one's variant is wrong for the second one's."""
    records, batches = numbers(student_seed("ada", AID))
    cap = records // batches
    for i in range(1000):
        r, b = numbers(student_seed(f"bob{i}", AID))
        if math.ceil(r / cap) != b:
            return "ada", f"bob{i}"
    raise AssertionError("no disagreeing student id found")


def test_another_seed_solution_full_marks_and_copied_numbers_fail(tmp_path, bootstrap):
    ada, bob = learners_who_disagree()
    ada_seed, bob_seed = student_seed(ada, AID), student_seed(bob, AID)
    solution = tmp_path / "subs" / ada / AID / f"{AID}.ipynb"
    solution.parent.mkdir(parents=True)
    solution.write_bytes((SOURCE / AID / f"{AID}.ipynb").read_bytes())

    records, batches = numbers(ada_seed)
    nb = nbformat.read(SOURCE / AID / f"{AID}.ipynb", as_version=4)
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex1_cap")
    answer.source = f"cap = {records // batches}  # worked out on variant {ada_seed}"
    setup = next(c for c in nb.cells if c.cell_type == "code")
    setup.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"broker    x\nvariant   {ada_seed} (...)\n")]
    copied = tmp_path / "subs" / bob / AID / f"{AID}.ipynb"
    copied.parent.mkdir(parents=True)
    nbformat.write(nb, copied)

    results = {r.student: r for r in grade_cohort(tmp_path / "subs", tmp_path / "out", workers=2, timeout=240,
                                                   source=SOURCE, quiet=True)}
    full = results[ada]
    assert (full.score, full.max_score) == (2, 2), [(e.grade_id, e.hint) for e in full.exercises]
    result = results[bob]
    ex1 = next(e for e in result.exercises if e.grade_id == "ex1_four_batches")
    assert ex1.points == 0, ex1
    assert any(re.search(rf"variant {ada_seed}, but yours is {bob_seed}.*not yours", n) for n in result.notes), \
        result.notes
