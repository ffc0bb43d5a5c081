"""The incident round's cluster fault (streamlab.course.incidents, `broker-lost`), live on the lab's cluster: the
pipeline runs, the broker leading partition 0 is killed under it, the symptom shows in the brokers' view (a short
ISR, the leaders moved) without the query failing, the true cause and fix score 2/2 and a wrong or constant answer
0, the fix starts the broker again and the pipeline is seen to recover (ISR full, batches reading on), and the
round leaves the cluster whole. Detection and recovery times are printed for the issue's note.

The round runs in a child process (this file, run as a script): a SparkContext is one per process, and the suite's
is local. Ports: $STREAMLAB_CLUSTER_PORT (and the 5 above it), $STREAMLAB_SPARK_PORT, $STREAMLAB_SPARK_UI_PORT.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent.parent
FAULT = "broker-lost"

pytestmark = pytest.mark.timeout(900)


def _round(history: Path) -> dict:
    """One incident round on the cluster, as a candidate plays it: wrong answer first, then the right one; the
    answers are kept in `history`, not in the runner's own (STREAMLAB_HOME also holds the cluster's folder)."""
    import time

    import streamlab
    from streamlab.course import incidents, mock
    from streamlab.lab import cluster

    mock.history_file = lambda: history

    spark, bootstrap = streamlab.setup(cluster=True)
    truth = incidents.FAULTS[FAULT]
    drawn = {incidents.random.Random(seed).choice(incidents.drawable(incidents.on_cluster())) for seed in range(500)}
    began = time.monotonic()
    incident = incidents.start(spark, bootstrap, seed=7, fault=FAULT)
    out: dict = {"drawn on the cluster": sorted(drawn), "brief": incident.brief()}
    try:
        out["evidence"] = incident.wait_for_symptom(timeout=240)
        out["killed node"], out["killed at s"] = incident.killed_node, incident.killed_at
        out["detected s"], out["detected after kill s"] = incident.detected_s, incident.detected_after_kill_s
        out["brokers at the symptom"] = {str(p): v for p, v in incident.brokers().items()}
        out["query active at the symptom"] = incident.query.isActive
        out["wrong"] = incident.diagnose("executor-lost", "lower-min-isr")
        out["wrong fix applied"] = incident.apply_fix()["applied"]
        out["right"] = incident.diagnose(truth.cause, truth.fix)
        out["first answer"] = incident.answer
        out["history"] = mock.load()["incidents"]
        out["fix"] = incident.apply_fix(timeout=240)
        out["brokers after the fix"] = {str(p): v for p, v in incident.brokers().items()}
    finally:
        out["stop"] = incident.stop()
    out["seconds in all"] = round(time.monotonic() - began, 1)
    out["active queries after stop"] = len(spark.streams.active)
    out["broker pids after stop"] = [cluster.node_pid(n) for n in (1, 2, 3)]
    print(streamlab.cleanup(spark), file=sys.stderr)
    return out


@pytest.fixture(scope="module")
def played(running_cluster, tmp_path_factory, on_cluster_child) -> dict:
    """The child process's round, its RESULT line parsed."""
    history = tmp_path_factory.mktemp("history") / "interview.json"  # a throwaway history, not the runner's
    result = on_cluster_child([str(HERE), str(history)], "round", timeout=840)
    print(f"\n  {FAULT}: broker {result['killed node']} killed {result['killed at s']} s after the start; symptom "
          f"seen {result['detected after kill s']} s after the kill ({result['evidence']}); recovered "
          f"{result['fix']['seconds']} s after the fix ({result['fix']['evidence']}); "
          f"{result['seconds in all']} s in all")
    return result


def test_the_cluster_round_can_draw_the_broker_fault(played):
    assert FAULT in played["drawn on the cluster"], played["drawn on the cluster"]
    assert "incident.brokers()" in played["brief"], played["brief"]


def test_the_killed_leader_shows_in_the_brokers_view_and_the_query_runs_on(played):
    killed = played["killed node"]
    assert killed in (1, 2, 3), played
    view = played["brokers at the symptom"]
    assert all(v["leader"] != killed for v in view.values()), view
    assert any(killed not in v["isr"] and len(v["isr"]) < len(v["replicas"]) for v in view.values()), view
    assert played["query active at the symptom"], "the query failed when a leader died"
    assert 0 <= played["detected after kill s"] <= 60, played


def test_the_true_cause_and_fix_score_and_a_wrong_or_constant_answer_does_not(played):
    from streamlab.course import incidents

    assert (played["wrong"]["cause"], played["wrong"]["fix"], played["wrong"]["score"]) == (0, 0, 0)
    assert played["wrong fix applied"] is False, "a wrong fix must change nothing"
    assert (played["right"]["cause"], played["right"]["fix"], played["right"]["score"]) == (1, 1, 2)
    assert played["first answer"]["score"] == 0, "the first answer is the one that counts"
    assert [(h["fault"], h["score"]) for h in played["history"]] == [(FAULT, 0)], played["history"]
    # every other fault's true answer, given as a constant, scores nothing on this one
    for other in set(incidents.FAULTS) - {FAULT}:
        truth = incidents.FAULTS[other]
        assert incidents.grade(FAULT, truth.cause, truth.fix)["score"] == 0, other


def test_the_fix_restarts_the_broker_and_the_pipeline_recovers(played):
    fixed = played["fix"]
    assert fixed["applied"] and fixed["recovered"], fixed
    after = played["brokers after the fix"]
    assert all(v["isr"] == v["replicas"] and len(v["replicas"]) == 3 for v in after.values()), after


def test_the_round_leaves_the_cluster_whole_and_nothing_running(played):
    assert played["active queries after stop"] == 0, played["stop"]
    assert all(played["broker pids after stop"]), played["broker pids after stop"]
    assert "left for cleanup" not in played["stop"], played["stop"]


if __name__ == "__main__":
    print("RESULT " + json.dumps(_round(Path(sys.argv[1])), default=str))
