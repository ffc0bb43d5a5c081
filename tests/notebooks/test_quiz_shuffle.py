"""Quiz options shuffled per learner, graded for real (streamlab.course.quiz): a cohort of three hands in module 8
(the quickest module with a quiz: 32 lettered questions and 6 numbered, no live demo).

- Ada hands in the solution, which answers each lettered question with the letter Ada sees: full marks.
- Carol hands in the solution with Ada's letters copied into every lettered answer ("Q3 is b"): graded through
  Carol's own seed, exactly the questions where Ada's letter shows the right option in Carol's order earn their
  point, about one in four; every other exercise of the solution keeps full marks on Carol's variant.
- The untouched student version earns 0 on every question.
The logic (orders, rounds, the record) is tested in tests/unit/test_quiz_rounds.py."""
from __future__ import annotations

import re
import shutil

import nbformat
import pytest

from grader import lint
from grader.cohort import grade_cohort
from grader.course import SOURCE, released
from grader.runner import grade_id
from streamlab.course import quiz
from streamlab.course.variants import Variant, student_seed

pytestmark = [pytest.mark.broker, pytest.mark.spark]
AID = "08-cheat-sheet"


def keyed_tests(nb) -> dict[int, str]:
    """{question number: grade id of its test cell} of the lettered questions."""
    keys = lint.lettered(nb)
    return {int(n): grade_id(cell) for cell in nb.cells if cell.cell_type == "code" and "quiz.reveal(" in cell.source
            for n in re.findall(r"quiz\.reveal\(\s*q(\d+)\s*,", cell.source) if int(n) in keys}


@pytest.mark.timeout(1800)
def test_a_key_shared_between_learners_is_worth_a_guess_and_the_solution_full_marks(tmp_path, bootstrap):
    solution = nbformat.read(SOURCE / AID / f"{AID}.ipynb", as_version=4)
    keys, tests, written = lint.lettered(solution), keyed_tests(solution), lint.written_options(solution)
    ada, carol = Variant(AID, student_seed("ada", AID), {}), Variant(AID, student_seed("carol", AID), {})
    letters = {n: quiz.seen(f"q{n}", key, "".join(written[n]), drawn=ada) for n, key in keys.items()}
    expected = {tests[n]: float(quiz.canonical(f"q{n}", letters[n], "".join(written[n]), drawn=carol) == keys[n])
                for n in keys}
    assert 0 < sum(expected.values()) < len(expected) / 2, "these two seeds would not show the point"

    subs = tmp_path / "subs"
    for student in ("ada", "carol", "untouched"):
        (subs / student / AID).mkdir(parents=True)
    shutil.copyfile(SOURCE / AID / f"{AID}.ipynb", subs / "ada" / AID / f"{AID}.ipynb")
    shutil.copyfile(released(AID) / f"{AID}.ipynb", subs / "untouched" / AID / f"{AID}.ipynb")
    copied = nbformat.read(SOURCE / AID / f"{AID}.ipynb", as_version=4)
    for cell in copied.cells:
        hit = re.fullmatch(r"q(\d+)_answer", grade_id(cell) or "")
        if hit and int(hit.group(1)) in letters:
            cell.source = f'q{hit.group(1)} = "{letters[int(hit.group(1))]}"  # Ada\'s key'
    nbformat.write(copied, subs / "carol" / AID / f"{AID}.ipynb")

    results = {r.student: r for r in grade_cohort(subs, tmp_path / "out", workers=3, timeout=600, source=SOURCE,
                                                  quiet=True)}
    for student in ("ada", "carol", "untouched"):
        assert results[student].error is None, (student, results[student].error)
    full = results["ada"]
    assert full.max_score > len(keys) and full.score == full.max_score, \
        [(e.grade_id, e.hint) for e in full.exercises if e.status != "passed"]
    shared = {e.grade_id: e for e in results["carol"].exercises}
    assert {gid: shared[gid].points for gid in expected} == expected, "Carol's letters are read through her order"
    others = [e for gid, e in shared.items() if gid not in expected]
    assert others and all(e.status == "passed" for e in others), \
        [(e.grade_id, e.hint) for e in others if e.status != "passed"]
    assert results["carol"].score < results["carol"].max_score
    untouched = {e.grade_id: e.points for e in results["untouched"].exercises}
    assert untouched and not any(untouched.values()), {g: p for g, p in untouched.items() if p}
