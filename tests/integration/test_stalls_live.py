"""Module 9's Exercise 6 on live runs: what `streamlab.observe.stalls.runs` hands a learner's diagnose tells a run's
cause only by what the query did. Found in the browser: each run's topic was named after its cause ("stall-capped-…"),
and the events carry the topic's name, so a diagnose reading `sources[0].description` named all four without one
number; the capped and idle runs also wrote to another sink than the others. Here no cause's name is anywhere in a
run, the four runs' sinks and source descriptions have one shape, and the solution's rule names each run."""
from __future__ import annotations

import json
import re

import pytest
from support import solution_answer

from streamlab.observe import stalls

pytestmark = [pytest.mark.broker, pytest.mark.timeout(300)]

WORDS = re.compile(r"capped|slow|stuck|idle", re.I)


@pytest.fixture(scope="module")
def made(spark):
    return stalls.runs(spark)


def test_no_run_names_its_cause(made):
    assert set(made) == set(stalls.CAUSES)
    for cause, run in made.items():
        text = json.dumps(run)
        assert not WORDS.search(text), f"the {cause} run says {WORDS.search(text).group(0)!r}"


def test_the_runs_differ_only_in_what_the_query_did(made):
    shapes = {cause: ([re.sub(r"stall-[\w-]+", "T", json.dumps(p["sources"][0]["description"])) for p in run["progress"]],
                      [p["sink"]["description"] for p in run["progress"]])
              for cause, run in made.items()}
    assert len({json.dumps(shape) for shape in shapes.values()}) == 1, shapes


def test_the_solution_names_each_live_run(made):
    diagnose = solution_answer("09-cluster-failures", "ex6_answer", "diagnose")
    assert {cause: diagnose(r["progress"], r["status"], r["silent_s"]) for cause, r in made.items()} == \
        {cause: cause for cause in made}
