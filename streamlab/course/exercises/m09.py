"""Module 9's visible exercise checks (09-cluster-failures): counting copies (module 7's one rule of written,
duplicated and lost, owed = the acknowledged ids), an executor's preferred index, when a range keeps its location,
and which acks a broker accepts.

Why here: a learner's check cell is 1-3 lines (the teaching standard), so the checks those cells ran moved here,
unchanged: the same check ids, expected text and hints, so the lab's feedback and the grade are the same. The hidden
tests stay in the notebook's test cells.
"""
from __future__ import annotations

import random
import weakref

from streamlab.course.checks import attempt, expect
from streamlab.course.scaffold import filled
from streamlab.observe.executors import PLANNED_READS


def _answer(fn):
    """The learner's function, or None while its skeleton still has `...` to fill in."""
    return fn if filled(fn) else None


def ex3_copies(copies) -> None:
    """Check copies on a small made-up delivery: module 7's rule, owed = the acknowledged ids."""
    got = attempt(_answer(copies), {1, 2, 3}, [1, 2, 2, 9])
    expect(got == {"written": 2, "duplicated": 1, "lost": 1}, "ex3_small", "written 2, duplicated 1, lost 1",
           repr(got), "module 7's count_delivery: what the sink owes is what the producer had acknowledged")


def ex1_floor_mod(preferred_index) -> None:
    """Check preferred_index on a negative hash code."""
    got = attempt(_answer(preferred_index), -1664806378, 2)
    expect(got == 0, "ex1_negative_hash", "0", repr(got), "floorMod is never negative, where Java's % keeps the hash code's sign")


def ex2_rule(keeps_location) -> None:
    """Check keeps_location on the plain path (no option set)."""
    got = attempt(_answer(keeps_location), 4)
    expect(got is True, "ex2_plain", "True", repr(got), "no option set: every range keeps its executor")


def ex4_rule(accepted) -> None:
    """Check accepted for acks=all below min.insync.replicas."""
    got = attempt(_answer(accepted), "all", 1, 2)
    expect(got is False, "ex4_all_below_min", "False", repr(got), "acks=all needs min.insync.replicas in the ISR")


CLUSTER_HOW = "make lab CLUSTER=1, then run Setup"


def _plain_settings(settings):
    """The learner's producer settings as plain data the grader's own process may use, else None (unfilled)."""
    plain = (str, int, float, bool)
    if isinstance(settings, dict) and filled(settings) and all(
            isinstance(k, str) and isinstance(v, plain) for k, v in settings.items()):
        return dict(settings)
    return None


def ex5_leader_kill(ex5_run, on_cluster: bool, settings=None) -> None:
    """Check Exercise 5 by what happened to the learner's records under the leader kill: in the lab, her own run
    (`ex5_run`); while grading, the grader's own run under her `settings` on the cluster (never `ex5_run`)."""
    from streamlab.course.checks import FORM, on_the_cluster

    on_the_cluster("ex5_leader_kill", "ex5_survives", _plain_settings(settings))  # only while grading
    if not on_cluster:
        print(f"{FORM} ex5_leader_kill: graded on the lab's cluster only ({CLUSTER_HOW}); Check my work leaves it "
              "out of the total here")
        return
    if ex5_run is None and _plain_settings(settings) is not None:  # filled in, but the cell above made no run
        expect(False, "ex5_leader_kill", "a run", "no run",
               "the cell above refused these settings or stopped: change them as its message says, run it again")
        return
    _judge_run(ex5_run)


def ex5_survives(settings) -> None:
    """The grader's own leader kill under the learner's producer settings, on the cluster (grading.CLUSTER_TASKS)."""
    from streamlab.delivery import failover
    from streamlab.lab import cluster, topics

    if settings is None:
        expect(False, "ex5_leader_kill", "a run", "no settings", "fill in the ... of ex5_producer")
        return
    # the grader's process lives on after this check: the topic is made for it and deleted after it
    with topics.temporary_topic("leader-kill", 1, cluster.bootstrap()) as topic:
        _judge_run(failover.leader_kill_under(settings, topic=topic))


def _judge_run(ex5_run) -> None:
    if not isinstance(ex5_run, dict):
        expect(False, "ex5_leader_kill", "a run", "no run", "fill in the ... of ex5_producer, run the cell above")
        return
    found = (f"{ex5_run['acknowledged']} of {ex5_run['sent']} acknowledged, {ex5_run['lost']} of them lost, "
             f"{ex5_run['duplicated']} twice")
    if ex5_run["lost"]:
        hint = "an acknowledged record was only on the dead leader: who must hold it before the leader answers?"
    elif ex5_run["acknowledged"] < ex5_run["sent"]:
        hint = "the producer gave up before a new leader was elected: let it retry, for longer than an election"
    else:
        hint = "a retried send was written twice: let the broker drop a producer's repeated batch"
    expect(ex5_run["survived"], "ex5_leader_kill", "every record acknowledged, none lost, none twice", found, hint)


# What each cause's run leaves for a learner to read, said when a run is named wrong (never the rule's thresholds).
EX6_LOOK = {"capped": "latestOffset against endOffset (module 3's lag), and numInputRows",
            "slow sink": "which part of durationMs fills triggerExecution?",
            "stuck batch": "silent_s against the recent batches' durations, and isTriggerActive",
            "idle": "numInputRows, and the status: idle is silent too, with no trigger active"}


_ex6_kept: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # {the grader's link to a kernel: runs}


def ex6_runs() -> dict:
    """A fresh real run of each cause, {cause: run}, made in the notebook's kernel with its own Spark (the grading
    kernel, while grading). The grader keeps them for the notebook it judges, so its audit, judging this check again
    with other answers, reads the same runs; in the lab each check makes new ones."""
    import copy

    from streamlab.course.checks import notebook

    nb = notebook()
    link = getattr(nb, "remote", None)  # the grader's link to the kernel it judges; the lab's Notebook has none
    made = _ex6_kept.get(link) if link is not None else None
    if made is None:
        made = nb.call("streamlab.observe.stalls.runs", nb.ref("spark"))
        if link is not None:
            _ex6_kept[link] = made
    return copy.deepcopy(made)


def ex6_diagnose(diagnose) -> dict:
    """Check diagnose on a fresh real run of each cause (streamlab.observe.stalls); returns the runs, {cause: run}."""
    fn = _answer(diagnose)
    if fn is None:  # no runs for an unwritten answer: they take half a minute
        expect(False, "ex6_diagnose", "a written diagnose", "`...` still in diagnose",
               "fill in the ... of diagnose, then run this cell again")
        return {}
    made = ex6_runs()
    # in an order of its own each time: a diagnose that counts its calls learns nothing from the order
    for cause, run in random.sample(list(made.items()), len(made)):
        got = attempt(fn, run["progress"], run["status"], run["silent_s"])
        expect(got == cause, f"ex6_{cause.replace(' ', '_')}_run", cause, repr(got), EX6_LOOK[cause])
    return made


# -- Exercise 7: read a task's locality from the plan ---------------------------------------------------------

EX7_READS = tuple(PLANNED_READS)  # plain, then minPartitions=8: the notebook's order
# What frees the cluster's cores for the grader's own reads: its two cores are one kernel's while that kernel runs.
# Check my work stops its own kernel's session first (grader.notebook.release_cluster_cores); another kernel's
# session (another module's notebook, or grader check from a terminal while the notebook runs) is the learner's.
EX7_FREE_CORES = "shut that notebook's kernel down (Kernel > Shut Down Kernel), then check this one again"


def ex7_reads_on_cluster() -> dict:
    """Fresh reads for Check my work (grading.CLUSTER_INPUTS), {read: per-task rows}: a new topic read plain and with
    minPartitions=8 by a Spark application of the grader's own, in a child process (one SparkContext per process)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ, STREAMLAB_CLUSTER="1")
    env.pop("KAFKA_BOOTSTRAP", None)  # the child's Spark and topic live on the cluster, not on a lab broker
    code = "from streamlab.observe.executors import print_planned_reads; print_planned_reads()"
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=Path(__file__).resolve().parents[3],
                          capture_output=True, text=True, timeout=600)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    refused = [ln[len("REFUSED "):] for ln in done.stdout.splitlines() if ln.startswith("REFUSED ")]
    if refused and "cores are all held" in refused[0]:  # the learner's kernel holds them while it waits for this
        raise RuntimeError(f"every cluster core is held by a notebook's kernel: {EX7_FREE_CORES}")
    if not lines:
        last = refused or [ln for ln in done.stderr.splitlines() if ln.strip()][-1:] or ["no output"]
        raise RuntimeError(f"its Spark application on the cluster read nothing (exit {done.returncode}): {last[0]}")
    return json.loads(lines[-1][len("RESULT "):])


def _ran_as_planned(task: dict) -> bool:
    where = task.get("preferred")
    return where is not None and where.rsplit("_", 1)[-1] == task.get("executor")


def ex7_plan(ran_as_planned, ex7_reads, on_cluster: bool) -> None:
    """Check ran_as_planned on every read task of a plain and a minPartitions=8 read on the cluster: in the lab, the
    notebook's own reads (`ex7_reads`); while grading, the grader's fresh reads (never `ex7_reads`)."""
    from streamlab.course.checks import FORM, cluster_input

    made = cluster_input("ex7_plan", "ex7_reads")  # while grading: the grader's reads, or left out (no cluster)
    if made is None:
        if not on_cluster:
            print(f"{FORM} ex7_plan: graded on the lab's cluster only ({CLUSTER_HOW}); Check my work leaves it "
                  "out of the total here")
            return
        made = ex7_reads
    fn = _answer(ran_as_planned)
    if fn is None or not isinstance(made, dict):
        expect(False, "ex7_plan", "reads", "`...` still in ran_as_planned" if fn is None else "no reads",
               "fill in the ... of ran_as_planned, then run the cell above again")
        return
    # every task of both reads, in an order of its own each time: an answer that counts its calls learns nothing
    tasks = [(read, dict(task)) for read in EX7_READS for task in made.get(read, [])]
    wrong: dict[str, list] = {read: [] for read in EX7_READS}
    for read, task in random.sample(tasks, len(tasks)):
        got = attempt(fn, dict(task))
        if not (isinstance(got, bool) and got == _ran_as_planned(task)):
            wrong[read].append((task["task"], got))
    hints = {"plain": "each of these tasks names a preferred executor in its plan: did that executor run it? "
                      "('executor_<host>_<id>' ends with the executor's id)",
             "minPartitions=8": "Spark's locality level says PROCESS_LOCAL for a task with no preference too: "
                                "read the plan instead"}
    for read in EX7_READS:
        count = sum(1 for r, _ in tasks if r == read)
        found = (f"{len(wrong[read])} of {count} tasks wrong, e.g. task {wrong[read][0][0]} gave "
                 f"{wrong[read][0][1]!r}" if wrong[read] else "all right")
        expect(count > 0 and not wrong[read], f"ex7_{read.split('=')[0]}", "every task right", found, hints[read])


def ex7_moved(ran_as_planned, reads) -> None:
    """Hidden check: a plain task the scheduler ran on another executor than its plan asked (its locality wait ran
    out while that executor was busy; Spark reports NODE_LOCAL on the same host) did not run as planned."""
    if not isinstance(reads, dict) or not reads.get("plain"):
        return None  # in the lab: the grader makes the reads
    task = dict(reads["plain"][0])
    ids = {t["executor"] for rows in reads.values() for t in rows} - {task["executor"]}
    task["executor"] = min(ids) if ids else str(int(task["executor"]) + 1)
    task["locality"] = "NODE_LOCAL"
    got = attempt(_answer(ran_as_planned), task)
    expect(got is False, "ex7_moved", "False", repr(got),
           "a plan's preferred executor is a wish: compare it with the executor that ran the task")
