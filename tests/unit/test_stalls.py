"""Module 9's Exercise 6 without Spark: the stalled-query runs (streamlab.observe.stalls) as two recorded sets of
real runs hand them to a learner's diagnose (tests/fixtures/stalls/runs.json). Each recorded run shows its own
condition by the helper's margins; the solution's diagnose (read from the solution notebook) names every one, and
the quiet idle run of the hidden test; a constant and the plausible wrong rules name at least one wrong, so the
check, which needs all four, gives them nothing. The live runs themselves: tests/notebooks/test_modules.py -k 09.
"""
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from support import solution_answer

from streamlab.course.exercises import m09
from streamlab.observe import stalls

ROOT = Path(__file__).resolve().parents[2]
SETS = json.loads((ROOT / "tests/fixtures/stalls/runs.json").read_text())["sets"]
RUNS = [(f"set {n} {cause}", cause, run) for n, made in enumerate(SETS, 1) for cause, run in made.items()]


def _solution():
    """The notebook's own answer: the ex6_answer cell with its solution (the stub above it is replaced)."""
    return solution_answer("09-cluster-failures", "ex6_answer", "diagnose")


def _call(fn, run, silent_s=None):
    return fn(run["progress"], run["status"], run["silent_s"] if silent_s is None else silent_s)


def test_every_set_holds_one_run_of_each_cause():
    assert len(SETS) >= 2 and all(set(made) == set(stalls.CAUSES) for made in SETS)
    assert set(stalls.ORDER) == set(stalls.CAUSES)


@pytest.mark.parametrize("label, cause, run", RUNS, ids=[r[0] for r in RUNS])
def test_each_recorded_run_shows_its_condition_with_the_helpers_margins(label, cause, run):
    assert len(run["progress"]) == stalls.SHOWN
    assert stalls._Run(None, cause, 1.0)._shows(run), f"{label} does not show {cause}"


@pytest.mark.parametrize("label, cause, run", RUNS, ids=[r[0] for r in RUNS])
def test_the_solution_names_each_recorded_run(label, cause, run):
    assert _call(_solution(), run) == cause


def test_the_solution_calls_an_idle_query_idle_when_it_is_quiet_for_9_s():
    for made in SETS:
        assert _call(_solution(), made["idle"], silent_s=9.0) == "idle"


def _silence_only(progress, status, silent_s):
    """A plausible mistake: silence alone means stuck."""
    last = progress[-1]
    if silent_s > 2:
        return "stuck batch"
    if last["sources"][0]["latestOffset"] != last["sources"][0]["endOffset"]:
        return "capped"
    return "idle" if last["numInputRows"] == 0 else "slow sink"


def _sink_first(progress, status, silent_s):
    """A plausible mistake: the share of addBatch asked first, over every event shown."""
    if any(e["durationMs"].get("addBatch", 0) > e["durationMs"]["triggerExecution"] / 2 for e in progress):
        return "slow sink"
    if status["isTriggerActive"] and silent_s > 2:
        return "stuck batch"
    last = progress[-1]
    return "capped" if last["sources"][0]["latestOffset"] != last["sources"][0]["endOffset"] else "idle"


def _rates(progress, status, silent_s):
    """A plausible mistake: processing slower than input means a slow sink, whatever else."""
    last = progress[-1]
    if status["isTriggerActive"] and silent_s > 2:
        return "stuck batch"
    if (last.get("processedRowsPerSecond") or 0) < (last.get("inputRowsPerSecond") or 0):
        return "slow sink"
    return "idle" if last["numInputRows"] == 0 else "capped"


@pytest.mark.parametrize("wrong", [lambda *a: "capped", lambda *a: "idle", lambda *a: "stuck batch",
                                   _silence_only, _sink_first, _rates],
                         ids=["constant capped", "constant idle", "constant stuck", "silence only", "sink first",
                              "rates"])
def test_constant_and_plausible_wrong_rules_miss_at_least_one_run(wrong):
    missed = [label for label, cause, run in RUNS if _call(wrong, run) != cause]
    missed += [f"quiet {n}" for n, made in enumerate(SETS, 1) if _call(wrong, made["idle"], 9.0) != "idle"]
    assert missed, "a wrong rule names every run right: the check could not tell it from the answer"


def test_ended_at_is_the_trigger_start_plus_its_duration():
    event = {"timestamp": "2026-11-30T07:19:22.140Z", "durationMs": {"triggerExecution": 860}}
    started = datetime(2026, 11, 30, 7, 19, 22, 140000, tzinfo=timezone.utc).timestamp()
    assert stalls.ended_at(event) == pytest.approx(started + 0.86, abs=1e-6)


class _Query:
    def __init__(self, events, status):
        self.recentProgress = [type("P", (), {"json": json.dumps(e)})() for e in events]
        self.status = status


def test_reading_keeps_the_last_events_as_plain_json_and_the_silence_since_the_last():
    events = [dict(SETS[0]["capped"]["progress"][0], batchId=n) for n in range(5)]
    got = stalls.reading(_Query(events, {"isTriggerActive": True}))
    assert [e["batchId"] for e in got["progress"]] == [2, 3, 4]
    assert got["status"] == {"isTriggerActive": True} and got["silent_s"] > 0
    assert stalls.reading(_Query([], {}))["silent_s"] is None


def test_a_cause_that_is_not_one_of_the_four_is_refused_in_one_line():
    with pytest.raises(ValueError) as refused:
        stalls.run(None, "broken")
    assert "\n" not in str(refused.value) and "capped" in str(refused.value)


def test_the_checks_runs_are_made_in_the_notebooks_kernel_and_kept_for_the_notebook_judged(monkeypatch):
    from streamlab.course import checks

    made = []

    class Kernel:
        """Stands in for the notebook's kernel: checks.notebook(), in the lab or (with `remote`) while grading."""

        def __init__(self, remote=None):
            if remote is not None:
                self.remote = remote

        def ref(self, name):
            return f"the kernel's {name}"

        def call(self, name, *args):
            made.append((name, args))
            return {cause: {"progress": [], "cause": cause} for cause in stalls.ORDER}

    class Link:
        """The grader's link to one kernel."""

    monkeypatch.setattr(checks._state, "notebook", Kernel(), raising=False)
    m09.ex6_runs()
    m09.ex6_runs()
    assert made == [("streamlab.observe.stalls.runs", ("the kernel's spark",))] * 2, "the lab: fresh each check"
    one, other = Link(), Link()
    monkeypatch.setattr(checks._state, "notebook", Kernel(one))
    first = m09.ex6_runs()
    first["idle"]["progress"].append("changed by a learner")
    assert m09.ex6_runs()["idle"]["progress"] == [] and len(made) == 3, "made again, or a copy shared"
    monkeypatch.setattr(checks._state, "notebook", Kernel(other))
    m09.ex6_runs()
    assert len(made) == 4, "the next notebook judged gets runs of its own"


def test_the_check_runs_nothing_for_an_unwritten_answer_and_needs_all_four(monkeypatch, capsys):
    monkeypatch.setattr(m09, "ex6_runs", lambda: pytest.fail("runs made for an unwritten answer"))
    assert m09.ex6_diagnose(None) == {}
    assert capsys.readouterr().out.startswith("✗ ex6_diagnose")
    monkeypatch.setattr(m09, "ex6_runs", lambda: dict(SETS[0]))
    m09.ex6_diagnose(_solution())
    assert capsys.readouterr().out.count("✓") == 4
    m09.ex6_diagnose(lambda *a: "capped")
    out = capsys.readouterr().out
    assert out.count("✓") == 1 and out.count("✗") == 3 and "'capped'" in out


def test_the_hidden_quiet_idle_run_is_what_catches_silence_taken_for_a_stall():
    """cheats.py's `wrong` answer names every live run right; only the idle run read 9 s after its last event (the
    hidden check) tells it from the answer."""
    assert all(_call(_silence_only, run) == cause for _, cause, run in RUNS)
    assert all(_call(_silence_only, made["idle"], 9.0) == "stuck batch" for made in SETS)
