"""Module 9's Exercise 5 without the cluster (the single-broker lab, the hub, the grader): its check says in one line
that it runs on the cluster and how, and earns nothing; settings the producer does not take are refused in one
line before anything is killed. Its run on the cluster: tests/cluster/test_module9_exercises.py."""
import pytest

from streamlab.course import scaffold
from streamlab.course.exercises import m09
from streamlab.delivery import failover
from streamlab.errors import LabError


def test_without_the_cluster_the_check_says_where_it_runs_in_one_line(capsys):
    m09.ex5_leader_kill(None, on_cluster=False)
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("○ ex5_leader_kill") and "make lab CLUSTER=1" in out[0], out
    assert "no points" in out[0]


def test_on_the_cluster_an_unfilled_answer_is_not_run_and_fails(capsys):
    assert not scaffold.filled({"acks": ..., "retries": 3})
    m09.ex5_leader_kill(None, on_cluster=True)
    assert capsys.readouterr().out.startswith("✗ ex5_leader_kill"), "no run is never a pass"


@pytest.mark.parametrize("settings", [None, {}, "acks=all", {"acks": "all", "linger": 5}])
def test_settings_the_producer_does_not_take_are_refused_in_one_line(settings):
    with pytest.raises(LabError) as refused:
        failover.producer_settings(settings)
    assert "\n" not in str(refused.value)
