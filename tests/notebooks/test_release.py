"""notebooks/ is the nbgrader release of solutions/: up to date, and nothing secret in it."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest

from grader.course import RELEASE, SOURCE, assignments, release, release_differences
from grader.leaks import find_leaks, secrets

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "solutions"


def test_notebooks_are_up_to_date_with_solutions():
    assert assignments(SOURCE), "solutions/ holds no assignment (<id>/<id>.ipynb) yet"
    problems = release_differences(RELEASE, SOURCE)
    assert not problems, "notebooks/ is stale, run `make release`:\n" + "\n".join(problems)


def test_nothing_secret_under_notebooks():
    assert RELEASE.is_dir(), "notebooks/ is missing: run `make release`"
    leaks = find_leaks(RELEASE, SOURCE)
    assert not leaks, "solutions or hidden tests leaked into notebooks/:\n" + "\n".join(leaks)


def test_release_is_deterministic_and_staleness_is_detected(tmp_path):
    source = tmp_path / "solutions"
    shutil.copytree(FIXTURES, source)
    out = tmp_path / "notebooks"
    release(out, source, quiet=True)
    first = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    release(out, source, quiet=True)
    assert first == {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}, "two releases differ"
    assert release_differences(out, source) == []

    path = source / "fx-basics" / "fx-basics.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].source += "\nA new sentence."
    nbformat.write(nb, path)
    assert release_differences(out, source) == [
        "notebooks/fx-basics/fx-basics.ipynb differs from a fresh release of solutions/fx-basics"]
    (source / "fx-basics" / "data.csv").write_text("a,b\n")
    assert "notebooks/fx-basics/data.csv is missing" in release_differences(out, source)


def test_release_strips_solutions_and_hidden_tests(tmp_path):
    out = tmp_path / "notebooks"
    release(out, FIXTURES, quiet=True)
    nb = json.loads((out / "fx-basics" / "fx-basics.ipynb").read_text(encoding="utf-8"))
    answers = {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"]) for c in nb["cells"]
               if c["metadata"].get("nbgrader", {}).get("solution")}
    assert answers["q1_answer"] == "q1 = None\n# YOUR CODE HERE\npass", "stub: `# YOUR CODE HERE` then `pass`"
    assert answers["ex1_answer"].endswith("    # YOUR CODE HERE\n    pass"), answers["ex1_answer"]
    assert not any("raise" in a for a in answers.values()), "stubs must not raise: untouched notebooks run to the end"
    assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code")
    assert find_leaks(out, FIXTURES) == []


@pytest.mark.parametrize("leak, kind", [
    ('q1 = "b"', "a quiz key"),
    ("    return sum(end - consumed.get(p, 0) for p, end in latest.items())", "secret text"),
    ("### BEGIN HIDDEN TESTS", "the marker"),
    ("print('offsets live in the checkpoint; Spark commits nothing to Kafka')", "secret text"),
])
def test_leak_scan_catches_each_kind(tmp_path, leak, kind):
    out = tmp_path / "notebooks"
    release(out, FIXTURES, quiet=True)
    path = out / "fx-basics" / "fx-basics.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[-1] = nbformat.v4.new_code_cell(leak)
    nbformat.write(nb, path)
    (out / "fx-basics" / "notes.txt").write_text("nothing to see\n")
    found = find_leaks(out, FIXTURES)
    assert found and all(f.startswith("fx-basics/fx-basics.ipynb: contains") for f in found), found
    assert any(kind in f for f in found), found
    assert ("fx-basics", 'q1 = "b"') in secrets(FIXTURES)


def test_student_distribution_has_no_solutions_and_says_so(tmp_path):
    """`grader distribute` copies the course without solutions/ or tests; its check explains, not crashes."""
    import subprocess
    import sys

    from grader.leaks import find_leaks

    out = tmp_path / "course"
    done = subprocess.run([sys.executable, "-m", "grader", "distribute", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not (out / "solutions").exists() and not (out / "tests").exists() and (out / "notebooks").is_dir()
    assert (out / "Makefile").is_file() and (out / "streamlab" / "__init__.py").is_file()
    # The library's own code (the offline engine) implements what some exercises ask for; that is public. What
    # must not travel is the solutions and the hidden tests: no such folder, no such text in the notebooks.
    assert not find_leaks(out / "notebooks"), find_leaks(out / "notebooks")[:3]
    assert not [p for p in out.rglob("*.ipynb") if "notebooks" not in p.parts], "a notebook outside notebooks/"
    checked = subprocess.run([sys.executable, "-m", "grader", "check",
                              str(out / "notebooks" / "00-setup" / "00-setup.ipynb")],
                             cwd=out, capture_output=True, text=True, timeout=120)
    assert checked.returncode == 2 and "no hidden tests" in checked.stderr, checked.stderr
