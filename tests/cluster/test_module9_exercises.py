"""Module 9's Exercise 5, graded by what happened: a partition leader killed under the learner's own producer
(streamlab.delivery.failover.leader_kill_under), counted with the course's one rule against what it acknowledged.
The right settings survive; acks=1 loses acknowledged records; a producer that does not retry gives up on them; each
wrong answer gets the check's ✗ with a hint that does not name the setting.

Ports: the cluster lab's ($STREAMLAB_CLUSTER_PORT, ...), through conftest.py's shared `running_cluster`.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(900)

RIGHT = {"acks": "all", "enable_idempotence": True, "retries": 2147483647, "delivery_timeout_ms": 60000}
WRONG = {"acks 1": {"acks": 1, "retries": 0},
         "no retries": {"acks": "all", "retries": 0, "request_timeout_ms": 5000, "delivery_timeout_ms": 6000}}


@pytest.fixture(scope="module")
def runs(running_cluster, as_cluster_lab):
    """The leader kill under the right producer and under each wrong one, on the cluster."""
    from streamlab.delivery import failover

    with as_cluster_lab():
        assert failover.on_cluster()
        done = {"right": failover.leader_kill_under(RIGHT)}
        done.update({name: failover.leader_kill_under(settings) for name, settings in WRONG.items()})
    print(*(f"{name}: {run}" for name, run in done.items()), sep="\n")
    return done


def test_the_right_producer_loses_nothing_it_acknowledged(runs, capsys):
    from streamlab.course.exercises import m09

    right = runs["right"]
    assert right["survived"] and right["acknowledged"] == right["sent"] == right["written"], right
    assert right["lost"] == 0 and right["duplicated"] == 0, right
    m09.ex5_leader_kill(right, on_cluster=True)
    assert capsys.readouterr().out.startswith("✓ ex5_leader_kill"), right


def test_acks_1_loses_acknowledged_records_and_earns_a_cross(runs, capsys):
    from streamlab.course.exercises import m09

    one = runs["acks 1"]
    # Acknowledged while the followers were paused, so only the dead leader had them. Not always every one: a
    # follower's fetch already in flight when SIGSTOP lands can carry a record over (acks_experiment saw 1 of 50).
    assert one["acknowledged"] == one["sent"] and one["lost"] >= one["sent"] // 2 and not one["survived"], one
    m09.ex5_leader_kill(one, on_cluster=True)
    out = capsys.readouterr().out
    assert out.startswith("✗ ex5_leader_kill") and "who must hold it" in out and "acks" not in out, out


def test_a_producer_that_does_not_retry_gives_up_and_earns_a_cross(runs, capsys):
    from streamlab.course.exercises import m09

    none = runs["no retries"]
    assert none["acknowledged"] < none["sent"] and none["lost"] == 0 and not none["survived"], none
    m09.ex5_leader_kill(none, on_cluster=True)
    out = capsys.readouterr().out
    assert out.startswith("✗ ex5_leader_kill") and "gave up" in out and "retries" not in out, out


def test_check_my_work_kills_a_leader_itself_and_grades_the_settings(running_cluster, as_cluster_lab):
    """Check my work where the cluster runs: the test cell hands the learner's settings to the grader's own process,
    which kills a leader under them itself (the sandbox's kernel may not) and gives the points by what happened.
    The learner's own run is never read: a forged one beside the right settings changes nothing."""
    import nbformat

    from grader import grading
    from grader.runner import Run, Test
    from streamlab.lab import topics
    from support import judged

    cell = "from streamlab.course.exercises import m09\nm09.ex5_leader_kill(ex5_run, failover.on_cluster(), ex5_producer)"
    forged = {"sent": 60, "acknowledged": 60, "lost": 0, "duplicated": 0, "written": 60, "survived": True}
    verdict = judged("ex5_leader_kill", cell, 3, {"ex5_run": forged, "ex5_producer": RIGHT},
                     {"failover": "streamlab.delivery.failover"})
    before = set(topics.list_topics(running_cluster))
    with as_cluster_lab():
        run = Run(nbformat.v4.new_notebook(cells=[]), {"ex5_leader_kill": verdict}, None, {}, {})
        grading.settle_on_cluster(run)
    print(verdict)
    [exercise], _ = grading.collect(run, {"ex5_leader_kill": Test("ex5_leader_kill", cell, 3, "ex5")}, {})
    assert (exercise.points, exercise.max_points, exercise.status) == (3, 3, "passed"), (exercise, verdict)
    assert [c.line for c in verdict.checks] == ["✓ ex5_leader_kill"], verdict
    left = {t for t in topics.list_topics(running_cluster) if "leader-kill" in t} - before
    assert not left, f"the grader's run left its topic behind: {left}"
