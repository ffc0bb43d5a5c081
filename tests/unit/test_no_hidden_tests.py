"""Check my work where the course has no hidden tests: a cohort's copy (no solutions/) and a learner's server on a
workshop hub, whose walls show solutions/ as an empty folder. Both say in one line that the instructor grades and
that the ✓/✗ lines are the learner's checks; the hub's used to answer "unknown assignment '00-setup' … expected one
of: none yet", as if the learner had named the wrong notebook."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from grader.grading import GraderError, read_submission

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "00-setup" / "00-setup.ipynb"


@pytest.mark.parametrize("made, says", [(False, "is not here: a graded cohort's copy"),
                                        (True, "is empty here: on a workshop's hub the hidden tests stay with your "
                                               "instructor")])
def test_without_hidden_tests_the_learner_is_told_who_grades(tmp_path, made, says):
    source = tmp_path / "solutions"
    if made:
        source.mkdir()
    with pytest.raises(GraderError) as raised:
        read_submission(NOTEBOOK, source=source)
    message = str(raised.value)
    assert says in message and "your instructor grades it" in message and "unknown assignment" not in message


def test_the_check_command_says_it_in_one_line(tmp_path):
    (tmp_path / "solutions").mkdir()
    done = subprocess.run([sys.executable, "-m", "grader", "--source", str(tmp_path / "solutions"), "check",
                           str(NOTEBOOK)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0, done.stderr
    assert "on a workshop's hub the hidden tests stay with your instructor" in done.stderr
