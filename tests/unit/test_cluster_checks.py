"""Checks only the lab's cluster can feed (streamlab.course.checks.cluster_input): while grading, a check tries the
learner's function on data the grader's own process made fresh on the cluster before the run; where it made none
(no cluster runs there), the test cell is left out of the total (0 of 0), neither earned nor lost."""
import nbformat

from grader import grading
from grader.runner import Run, Test
from streamlab.course import checks
from support import judged

CELL = ("from streamlab.course import checks\n"
        "seen = checks.cluster_input('doubled', 'reads')\n"
        "checks.expect(double(seen['x']) == 2 * seen['x'], 'doubled', 'twice x', repr(double(seen['x'])))")


def _graded(made: dict, double):
    with checks.cluster_inputs_given(made):
        verdict = judged("doubled", CELL, 2, {"double": double})
    run = Run(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        CELL, metadata={"nbgrader": {"grade_id": "doubled", "grade": True, "solution": False, "points": 2}})]),
        {"doubled": verdict}, None, {}, {})
    grading.settle_on_cluster(run)
    [exercise], _ = grading.collect(run, {"doubled": Test("doubled", CELL, 2, "doubled")}, {})
    return exercise, run


def test_where_the_cluster_gave_its_data_the_learners_function_is_judged_on_it():
    right, _ = _graded({"reads": {"x": 20}}, lambda x: 2 * x)
    wrong, _ = _graded({"reads": {"x": 20}}, lambda x: 42)
    assert (right.points, right.max_points, right.status) == (2, 2, "passed"), right
    assert (wrong.points, wrong.max_points, wrong.status) == (0, 2, "failed"), wrong


def test_where_no_cluster_gave_data_the_cell_is_left_out_of_the_total():
    exercise, run = _graded({}, lambda x: 2 * x)
    assert (exercise.points, exercise.max_points, exercise.status) == (0, 0, "cluster"), exercise
    assert "make lab CLUSTER=1" in run.nb.cells[0].outputs[0]["text"]


def test_in_the_lab_cluster_input_is_none():
    assert checks.cluster_input("doubled", "reads") is None


def test_a_maker_that_fails_is_the_clusters_fault_and_says_so(monkeypatch):
    from streamlab.delivery import failover

    def broken():
        raise RuntimeError("no executor came up")

    monkeypatch.setattr(failover, "on_cluster", lambda: True)
    monkeypatch.setattr(failover.cluster, "running", lambda: True)
    monkeypatch.setitem(grading.CLUSTER_INPUTS, "xx", {"reads": (__name__, "broken")})
    globals()["broken"] = broken
    notes: list[str] = []
    assert grading.cluster_inputs("xx", notes) == {} and len(notes) == 1 and "no executor came up" in notes[0], notes


def test_check_my_work_hands_the_clusters_cores_to_the_grader(monkeypatch, capsys):
    """The lab's two executors hold every core of the cluster: before grading a module the grader feeds from the
    cluster, Check my work stops this kernel's session there (and says so); never a local one, never elsewhere."""
    from types import SimpleNamespace

    from pyspark.sql import SparkSession

    from grader import notebook
    from streamlab.lab import cluster

    stopped = []

    def session(master):
        return SimpleNamespace(sparkContext=SimpleNamespace(master=master), stop=lambda: stopped.append(master))

    monkeypatch.setenv("STREAMLAB_CLUSTER", "1")
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: session(cluster.master_url())))
    assert not notebook.release_cluster_cores("04-backpressure") and not stopped, "no cluster input: nothing stops"
    assert notebook.release_cluster_cores("09-cluster-failures") and stopped == [cluster.master_url()]
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "run the Setup cell again" in out[0], out
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: session("local[2]")))
    assert not notebook.release_cluster_cores("09-cluster-failures") and len(stopped) == 1, "a local session stays"
    monkeypatch.setenv("STREAMLAB_CLUSTER", "0")
    assert not notebook.release_cluster_cores("09-cluster-failures") and len(stopped) == 1, "off the cluster"
    # a click runs on another of the kernel's threads (JupyterLab's subshells), where no session is "active"
    monkeypatch.setenv("STREAMLAB_CLUSTER", "1")
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.setattr(SparkSession, "_instantiatedSession", session(cluster.master_url()))
    assert notebook.release_cluster_cores("09-cluster-failures") and len(stopped) == 2, "seen from a subshell"


def test_an_unwritten_skeleton_reads_as_unwritten_in_the_graders_table():
    """Judged in the grader, a learner's function still holding its skeleton's `...` is known as unwritten (asked
    of the kernel, where its code is): the check says so instead of running it (Exercise 6's skeleton returned a
    cause and was called wrong), and a skeleton's `return ...` reads as `...`, not as the agent's internals."""
    from grader.judge import RemoteObject

    def diagnose(progress, status, silent_s):
        return ...

    cell = "from streamlab.course.exercises import m09\nm09.ex6_diagnose(diagnose)"
    verdict = judged("ex6_diagnose", cell, 3, {"diagnose": diagnose})
    assert verdict.points == 0 and [c.line for c in verdict.checks] == [
        "✗ ex6_diagnose — found `...` still in diagnose. Hint: fill in the ... of diagnose, then run this cell again"
    ], verdict
    assert repr(RemoteObject(None, ["x"], "builtins.ellipsis")) == "`...` (not written yet)"


def test_gradings_take_the_cluster_one_at_a_time(tmp_path, monkeypatch):
    """A cohort grades two learners at once: their leader kills (or Spark applications) must not overlap."""
    import threading
    import time

    monkeypatch.setenv("STREAMLAB_HOME", str(tmp_path))
    inside, most = [0], [0]

    def work():
        with grading.cluster_turn():
            inside[0] += 1
            most[0] = max(most[0], inside[0])
            time.sleep(0.2)
            inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1
