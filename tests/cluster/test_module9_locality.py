"""Module 9's Exercise 7 on the cluster, as Check my work grades it there: the grader's own maker
(grading.CLUSTER_INPUTS: m09.ex7_reads_on_cluster) reads a fresh topic plain and with minPartitions=8 in a Spark
application of its own, and the notebook's test cell is judged on those reads. The solution earns its points;
Spark's locality level (PROCESS_LOCAL on both paths) earns 0; the maker's topic is gone after it.

Ports: the cluster lab's ($STREAMLAB_CLUSTER_PORT, ...), through conftest.py's shared `running_cluster`.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(600)

ROOT = Path(__file__).resolve().parents[2]


def _cells() -> dict:
    import nbformat

    nb = nbformat.read(ROOT / "solutions/09-cluster-failures/09-cluster-failures.ipynb", 4)
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells if "nbgrader" in c.metadata}


@pytest.fixture(scope="module")
def made(running_cluster, as_cluster_lab):
    """The reads the grader makes before a run, by CLUSTER_INPUTS, on this cluster."""
    from grader import grading
    from streamlab.lab import topics

    before = set(topics.list_topics(running_cluster))
    with as_cluster_lab():
        notes: list[str] = []
        inputs = grading.cluster_inputs("09-cluster-failures", notes)
        left = {t for t in topics.list_topics(running_cluster) if "locality" in t} - before
    assert not notes and "ex7_reads" in inputs, notes
    assert not left, f"the grader's reads left their topic behind: {left}"
    print(inputs)
    return inputs


def _solution():
    names: dict = {}
    exec(re.search(r"### BEGIN SOLUTION\n(.*)### END SOLUTION", _cells()["ex7_answer"], re.S).group(1), names)
    return names["ran_as_planned"]


def _judged(made: dict, answer):
    from streamlab.course import checks
    from support import judged

    with checks.cluster_inputs_given(made):
        return judged("ex7_plan", _cells()["ex7_plan"], 2, {"ran_as_planned": answer, "ex7_reads": None},
                      {"failover": "streamlab.delivery.failover"})


def test_the_graders_reads_tell_the_two_paths_apart_only_by_the_plan(made):
    reads = made["ex7_reads"]
    assert len(reads["plain"]) == 4 and all(t["preferred"] for t in reads["plain"]), reads
    assert len(reads["minPartitions=8"]) == 8 and not any(t["preferred"] for t in reads["minPartitions=8"]), reads
    assert {t["locality"] for t in reads["minPartitions=8"]} == {"PROCESS_LOCAL"}, reads


def test_check_my_work_gives_the_solution_its_points(made):
    verdict = _judged(made, _solution())
    assert verdict.points == 2 and [c.name for c in verdict.checks] == ["ex7_plain", "ex7_minPartitions",
                                                                        "ex7_moved"], verdict


def test_check_my_work_gives_the_locality_level_rule_nothing(made):
    verdict = _judged(made, lambda task: task["locality"] == "PROCESS_LOCAL")
    assert verdict.points == 0 and not verdict.checks[1].passed, verdict
    assert "read the plan" in verdict.checks[1].line, verdict
