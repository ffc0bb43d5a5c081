"""Module 9's Exercise 7 (read a task's locality from the plan) on reads recorded once from the lab's cluster
(solutions/09-cluster-failures/data/locality-reads.json: streamlab.observe.executors.planned_reads, a plain read and a minPartitions=8
read of a fresh 4-partition topic). The notebook's solution earns the points; a constant, the "read Spark's locality
level" rule (PROCESS_LOCAL on both paths) and the "has a preference" rule each earn 0. Without the cluster the lab's
check says so in one line, and Check my work leaves the exercise out of the total. Made fresh on the cluster and
judged there: tests/cluster/test_module9_locality.py."""
import json
import re
from pathlib import Path

import nbformat
import pytest

from streamlab.course.exercises import m09

ROOT = Path(__file__).resolve().parents[2]
READS = json.loads((ROOT / "solutions/09-cluster-failures/data/locality-reads.json").read_text())["reads"]


def _solution():
    """ran_as_planned as the solutions notebook writes it."""
    nb = nbformat.read(ROOT / "solutions/09-cluster-failures/09-cluster-failures.ipynb", 4)
    [cell] = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex7_answer"]
    names: dict = {}
    exec(re.search(r"### BEGIN SOLUTION\n(.*)### END SOLUTION", cell.source, re.S).group(1), names)
    return names["ran_as_planned"]


def _test_cell() -> str:
    nb = nbformat.read(ROOT / "solutions/09-cluster-failures/09-cluster-failures.ipynb", 4)
    [cell] = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex7_plan"]
    return cell.source


WRONG = {"always True": lambda task: True,
         "always False": lambda task: False,
         "Spark's locality level": lambda task: task["locality"] == "PROCESS_LOCAL",
         "has a preference": lambda task: task["preferred"] is not None,
         "a table of the lab's own run": lambda task: task["records"] == 100 and task["task"] < 4}


def test_the_recorded_reads_show_what_the_exercise_is_about():
    """Spark's locality level is the same on both paths; only the plan tells them apart."""
    assert {t["locality"] for rows in READS.values() for t in rows} == {"PROCESS_LOCAL"}
    assert all(t["preferred"] for t in READS["plain"]) and len(READS["plain"]) == 4
    assert not any(t["preferred"] for t in READS["minPartitions=8"]) and len(READS["minPartitions=8"]) == 8


def test_in_the_lab_the_solution_passes_on_the_notebooks_own_reads(capsys):
    m09.ex7_plan(_solution(), READS, on_cluster=True)
    assert capsys.readouterr().out.splitlines() == ["✓ ex7_plain", "✓ ex7_minPartitions"]


@pytest.mark.parametrize("name", ["always True", "Spark's locality level"])
def test_in_the_lab_reading_the_locality_level_fails_with_a_hint_to_read_the_plan(capsys, name):
    m09.ex7_plan(WRONG[name], READS, on_cluster=True)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "✓ ex7_plain" and out[1].startswith("✗ ex7_minPartitions — found 8 of 8 tasks wrong"), out
    assert "read the plan" in out[1], out


def test_without_the_cluster_the_check_says_where_it_runs_in_one_line(capsys):
    m09.ex7_plan(_solution(), None, on_cluster=False)
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("○ ex7_plan") and "make lab CLUSTER=1" in out[0], out
    assert "out of the total" in out[0], out


def test_an_unfilled_answer_fails_on_the_cluster(capsys):
    def ran_as_planned(task):
        asked = ...
        return ...

    m09.ex7_plan(ran_as_planned, READS, on_cluster=True)
    out = capsys.readouterr().out
    assert out.startswith("✗ ex7_plan") and "fill in the ..." in out, out


def _graded(answer, made: dict, forged=None):
    """The notebook's test cell judged as the grader does, with `made` as the grader's fresh reads, and the row."""
    from grader import grading
    from grader.runner import Run, Test
    from streamlab.course import checks
    from support import judged

    source = _test_cell()
    with checks.cluster_inputs_given(made):
        verdict = judged("ex7_plan", source, 2, {"ran_as_planned": answer, "ex7_reads": forged},
                         {"failover": "streamlab.delivery.failover"})
    cell = nbformat.v4.new_code_cell(source, metadata={"nbgrader": {"grade_id": "ex7_plan", "grade": True,
                                                                    "solution": False, "points": 2}})
    run = Run(nbformat.v4.new_notebook(cells=[cell]), {"ex7_plan": verdict}, None, {}, {})
    grading.settle_on_cluster(run)
    [exercise], _ = grading.collect(run, {"ex7_plan": Test("ex7_plan", source, 2, "ex7")}, {})
    return exercise, verdict, cell


def test_check_my_work_gives_the_solution_its_points_on_the_graders_reads():
    exercise, verdict, _ = _graded(_solution(), {"ex7_reads": READS})
    assert (exercise.points, exercise.max_points, exercise.status) == (2, 2, "passed"), verdict
    assert [c.name for c in verdict.checks] == ["ex7_plain", "ex7_minPartitions", "ex7_moved"], verdict


@pytest.mark.parametrize("name", list(WRONG))
def test_check_my_work_gives_a_constant_or_a_wrong_rule_nothing(name):
    exercise, verdict, _ = _graded(WRONG[name], {"ex7_reads": READS})
    assert (exercise.points, exercise.status) == (0, "failed"), (name, verdict)


def test_the_learners_own_reads_are_never_what_check_my_work_reads():
    """A forged `ex7_reads` that the locality-level rule gets right changes nothing: the grader reads its own."""
    forged = {"plain": READS["plain"], "minPartitions=8": []}
    exercise, verdict, _ = _graded(WRONG["Spark's locality level"], {"ex7_reads": READS}, forged)
    assert exercise.points == 0 and "8 of 8 tasks wrong" in verdict.checks[1].line, verdict


def test_without_the_cluster_check_my_work_leaves_the_exercise_out_of_the_total():
    exercise, verdict, cell = _graded(_solution(), {})
    assert (exercise.points, exercise.max_points, exercise.status) == (0, 0, "cluster"), verdict
    assert "make lab CLUSTER=1" in cell.outputs[0]["text"], cell.outputs


def test_where_a_kernel_holds_the_clusters_cores_the_graders_note_says_how_to_free_them(monkeypatch):
    """In the lab, Check my work runs while the notebook's kernel holds both of the cluster's cores: the grader's
    own Spark application is refused, and its note (grading.cluster_inputs) names the fix in one line."""
    import subprocess

    from grader import grading
    from streamlab.delivery import failover

    refused = subprocess.CompletedProcess([], 0, stdout="REFUSED The cluster's cores are all held by another Spark "
                                          "application, most likely another notebook's kernel: app-1 (streamlab, "
                                          "2 cores). Shut that kernel down.\n", stderr="")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: refused)
    monkeypatch.setattr(failover, "on_cluster", lambda: True)
    monkeypatch.setattr(failover.cluster, "running", lambda: True)
    notes: list[str] = []
    assert grading.cluster_inputs("09-cluster-failures", notes) == {}
    assert len(notes) == 1 and "Shut Down Kernel" in notes[0] and "left out of the total" in notes[0], notes
    assert "\n" not in notes[0] and "check this one again" in notes[0], notes


def test_off_the_cluster_the_try_cell_shows_reads_recorded_on_it(monkeypatch):
    """Where no cluster runs (the hub, lane 1), Exercise 7's try cell shows the reads recorded on the lab's cluster,
    released beside the student notebook, with the learner's answer beside each task (it is graded on fresh ones)."""
    from streamlab.observe.executors import reads_table, recorded_reads

    monkeypatch.chdir(ROOT / "notebooks" / "09-cluster-failures")  # where the learner's kernel runs
    table = reads_table(recorded_reads(), lambda task: task["locality"] == "PROCESS_LOCAL")
    assert set(table["read"]) == {"plain", "minPartitions=8"} and len(table) == 12, table
    assert table["yours"].all(), "the locality-level rule says True everywhere: the table shows it"
