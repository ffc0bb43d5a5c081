"""`python -m grader distribute OUT`: the course as learners of a graded cohort get it, without the hidden tests."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .course import ROOT, GraderError

# Folders that hold solutions or hidden tests (tests/ has the grader's fixture with its own hidden tests).
LEFT_OUT = ("solutions/", "tests/")
NOTE = """# This copy of the course has no solutions

Your instructor grades this cohort with hidden tests, so `solutions/` and the course's own test suite are not
here. Everything a learner uses is: `make lab` opens the notebooks, and the ✓/✗ lines under each exercise are
the visible checks. "Check my work" and `python -m grader check` need the hidden tests, so they say so instead
of grading; hand in your notebooks as your instructor asks.
"""


def distribute(out: Path, root: Path = ROOT) -> list[str]:
    """Copy the tracked files of the course to `out`, leaving out solutions and tests; return what was left out."""
    out = Path(out).resolve()
    if out.exists() and any(out.iterdir()):
        raise GraderError(f"{out} is not empty: give a new folder")
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        raise GraderError("run this from a git clone of the course (it copies the tracked files)") from None
    left_out = []
    for name in filter(None, listed.decode().split("\0")):
        if name.startswith(LEFT_OUT):
            left_out.append(name)
            continue
        src = root / name
        if src.is_file():
            dest = out / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)
    (out / "NO-SOLUTIONS.md").write_text(NOTE, encoding="utf-8")
    return [prefix for prefix in LEFT_OUT if any(n.startswith(prefix) for n in left_out)]
