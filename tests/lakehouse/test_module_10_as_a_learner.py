"""Module 10 (Delta Lake) as a learner runs it: the untouched student version, Run All then going back to every
section (tests/labrun.py, as tests/notebooks/test_modules.py runs every other module), with what labrun's problems()
checks there: no error, no red stderr box, the connector named, no answer cell printing an ellipsis, every live claim
of a self-test holding, every section runnable again, nothing left behind. Its gradings (solution, untouched, wrong
answers) are in test_modules; this run is here, beside lane 2, for the suite's time budget."""
from __future__ import annotations

import pytest

pytestmark = [pytest.mark.broker, pytest.mark.spark, pytest.mark.timeout(1800)]

AID = "10-lakehouse"


def test_module_10_as_a_learner_runs_to_the_end_and_every_section_again(bootstrap, tmp_path):
    from grader.course import ROOT, SOURCE, release
    from labrun import problems, run_as_a_learner

    release(tmp_path / "release", SOURCE, quiet=True)
    lab = run_as_a_learner(tmp_path / "release" / AID / f"{AID}.ipynb", tmp_path / "kernel-tmp",
                           ROOT / "test-results" / "executed" / f"{AID}.ipynb")  # its outputs for the site
    print(f"{AID}: Run All {lab.get('seconds')} s, going back {lab.get('reentry seconds')} s")
    found = {kind: lines for kind, lines in problems(lab).items() if lines}
    assert not found, f"{AID} as a learner: {found}"
