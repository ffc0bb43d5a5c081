"""Module 9's Exercise 5 without the cluster (the single-broker lab, the hub, the grader): its check says in one line
that it runs on the cluster and how; settings the producer does not take are refused in one line before anything
is killed. While grading, the check hands the learner's settings (never her own run) to the grader's own process,
which kills a leader itself where the cluster runs and otherwise leaves the exercise out of the total
(grader.grading.settle_on_cluster). Its run on the cluster: tests/cluster/test_module9_exercises.py."""
import pytest

from streamlab.course import scaffold
from streamlab.course.exercises import m09
from streamlab.delivery import failover
from streamlab.errors import LabError


def test_without_the_cluster_the_check_says_where_it_runs_in_one_line(capsys):
    m09.ex5_leader_kill(None, on_cluster=False)
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("○ ex5_leader_kill") and "make lab CLUSTER=1" in out[0], out
    assert "out of the total" in out[0], out


def test_on_the_cluster_an_unfilled_answer_is_not_run_and_fails(capsys):
    assert not scaffold.filled({"acks": ..., "retries": 3})
    m09.ex5_leader_kill(None, on_cluster=True)
    assert capsys.readouterr().out.startswith("✗ ex5_leader_kill"), "no run is never a pass"


def test_settings_filled_in_but_refused_are_not_called_unwritten(capsys):
    """Seen in Chromium: kafka-python refused acks=1 with idempotence, the run cell said so, and the check then
    told her to fill in the ... she had filled in."""
    m09.ex5_leader_kill(None, True, {"acks": 1, "enable_idempotence": True, "retries": 5})
    out = capsys.readouterr().out
    assert out.startswith("✗ ex5_leader_kill") and "refused these settings" in out and "fill in" not in out, out


@pytest.mark.parametrize("settings", [None, {}, "acks=all", {"acks": "all", "linger": 5}])
def test_settings_the_producer_does_not_take_are_refused_in_one_line(settings):
    with pytest.raises(LabError) as refused:
        failover.producer_settings(settings)
    assert "\n" not in str(refused.value)


SOLUTION = {"acks": "all", "enable_idempotence": True, "retries": 2147483647, "delivery_timeout_ms": 60000}
FORGED = {"sent": 60, "acknowledged": 60, "lost": 0, "duplicated": 0, "written": 60, "survived": True}
CELL = "from streamlab.course.exercises import m09\nm09.ex5_leader_kill(ex5_run, failover.on_cluster(), ex5_producer)"


def _judged(ex5_run, ex5_producer):
    """The test cell judged as the grader does, with these values in the learner's kernel."""
    from support import judged

    return judged("ex5_leader_kill", CELL, 3, {"ex5_run": ex5_run, "ex5_producer": ex5_producer},
                  {"failover": "streamlab.delivery.failover"})


def test_while_grading_the_check_hands_over_the_settings_and_never_the_learners_run():
    verdict = _judged(FORGED, SOLUTION)
    assert verdict.cluster == {"check": "ex5_leader_kill", "task": "ex5_survives", "args": [SOLUTION]}, verdict
    assert verdict.points == 0 and not verdict.checks, "a run the notebook reports earns nothing by itself"
    assert _judged(FORGED, {"acks": ..., "retries": 3}).cluster["args"] == [None], "an unfilled answer is no settings"


def test_without_the_cluster_the_exercise_is_left_out_of_the_total(monkeypatch):
    import nbformat

    from grader import grading
    from grader.runner import Run, Test

    monkeypatch.setattr(failover, "on_cluster", lambda: False)
    verdict = _judged(FORGED, SOLUTION)
    cell = nbformat.v4.new_code_cell(CELL, metadata={"nbgrader": {"grade_id": "ex5_leader_kill", "grade": True,
                                                                  "solution": False, "points": 3}})
    run = Run(nbformat.v4.new_notebook(cells=[cell]), {"ex5_leader_kill": verdict}, None, {}, {})
    grading.settle_on_cluster(run)
    [exercise], _ = grading.collect(run, {"ex5_leader_kill": Test("ex5_leader_kill", CELL, 3, "ex5")}, {})
    assert (exercise.points, exercise.max_points, exercise.status) == (0, 0, "cluster"), exercise
    assert "make lab CLUSTER=1" in exercise.hint and "make lab CLUSTER=1" in cell.outputs[0]["text"], exercise
    result = grading.Result("learner", "09-cluster-failures", "x", [exercise], 0.0, 0.0)
    assert "○ not here" in grading.table(result)


@pytest.mark.parametrize("run, points", [({**FORGED, "lost": 12, "survived": False}, 0), (FORGED, 3)])
def test_on_the_cluster_the_graders_own_run_decides_the_points(monkeypatch, run, points):
    import nbformat

    from grader import grading
    from grader.runner import Run

    made = []
    monkeypatch.setattr(failover, "on_cluster", lambda: True)
    monkeypatch.setattr(failover.cluster, "running", lambda: True)
    monkeypatch.setattr(m09, "ex5_survives", lambda settings: (made.append(settings), m09._judge_run(run)))
    verdict = _judged(None, SOLUTION)
    run_ = Run(nbformat.v4.new_notebook(cells=[]), {"ex5_leader_kill": verdict}, None, {}, {})
    grading.settle_on_cluster(run_)
    assert made == [SOLUTION] and verdict.points == points and verdict.cluster["ran"], verdict
