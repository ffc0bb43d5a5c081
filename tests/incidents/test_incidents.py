"""The live incident round (streamlab.course.incidents): every fault runs, shows its symptom in the course's tools,
is graded 2/2 for its true cause and fix and 0 for a wrong answer, recovers after apply_fix(), and leaves nothing
running. Detection times (seconds from start until the symptom is visible) are printed for the issue's note."""
from __future__ import annotations

import threading
import time

import pytest

from streamlab.course import incidents

pytestmark = [pytest.mark.broker, pytest.mark.spark]

DETECTED: dict[str, float] = {}


def test_a_constant_answer_scores_at_most_one_fault_worth_over_the_set():
    best = max(sum(incidents.grade(f, cause, fix)["score"] for f in incidents.FAULTS)
               for cause in incidents.CAUSES for fix in incidents.FIXES)
    assert best <= 2, "a constant answer earns more than one fault's worth"
    assert len(incidents.CAUSES) >= len(incidents.FAULTS) + 3 and len(incidents.FIXES) >= len(incidents.FAULTS) + 3
    assert len({f.cause for f in incidents.FAULTS.values()}) == len({f.fix for f in incidents.FAULTS.values()}) \
        == len(incidents.FAULTS) >= 4


def test_unknown_ids_are_refused_in_one_line_naming_the_choices():
    with pytest.raises(incidents.LabError, match="pick one of cap-too-low"):
        incidents.grade("cap-too-low", "lag", "raise-cap")
    with pytest.raises(incidents.LabError, match="fault='nope'.*give one of"):
        incidents.start(None, "", fault="nope")


def _threads() -> set[str]:
    return {t.name for t in threading.enumerate()}


def test_the_single_broker_round_never_draws_a_cluster_fault_and_refuses_one_in_one_line(monkeypatch):
    """broker-lost needs the cluster (tests/cluster/test_cluster_incident.py runs it there)."""
    monkeypatch.setattr(incidents, "on_cluster", lambda: False)
    drawn = {incidents.random.Random(seed).choice(incidents.drawable(False)) for seed in range(500)}
    assert drawn == set(incidents.FAULTS) - incidents.CLUSTER_ONLY
    assert set(incidents.drawable(True)) == set(incidents.FAULTS)
    with pytest.raises(incidents.LabError) as refused:
        incidents.start(None, "", fault="broker-lost")
    line = str(refused.value)
    assert "\n" not in line and "needs the lab's cluster" in line and "setup(cluster=True)" in line, line


@pytest.mark.parametrize("fault", incidents.drawable(cluster=False))
def test_fault_shows_its_symptom_is_graded_and_recovers(spark, bootstrap, fault, capsys):
    from streamlab.lab.topics import list_topics

    truth = incidents.FAULTS[fault]
    wrong_cause = next(c for c in incidents.CAUSES if c != truth.cause)
    wrong_fix = next(f for f in incidents.FIXES if f != truth.fix)
    threads_before = _threads()
    began = time.monotonic()
    incident = incidents.start(spark, bootstrap, seed=7, fault=fault)
    try:
        evidence = incident.wait_for_symptom(timeout=180)
        DETECTED[fault] = incident.detected_s
        assert incident.diagnose(wrong_cause, wrong_fix)["score"] == 0
        assert incident.apply_fix()["applied"] is False  # a wrong fix changes nothing
        right = incident.diagnose(truth.cause, truth.fix)
        assert (right["cause"], right["fix"], right["score"]) == (1, 1, 2)
        assert incident.answer["score"] == 0, "the first answer is the one that counts"
        from streamlab.course import mock

        kept = mock.load()["incidents"]  # the first answer, in the learner's history for grader progress
        assert [(k["fault"], k["score"]) for k in kept] == [(fault, 0)], kept
        assert f"incident round: 1 incident(s), last 0/2 ({fault})" in "\n".join(mock.progress_lines())
        fixed = incident.apply_fix(timeout=180)  # slow-records took 85 s at a load of 14 on 2 cores
        assert fixed["recovered"], fixed
    finally:
        said = incident.stop()
    assert not spark.streams.active
    assert not set(incident.topics) & set(list_topics(bootstrap)), said
    left = {t for t in _threads() - threads_before if "incident" in t or "BackgroundProducer" in t}
    assert not left, f"still running: {left}"
    with capsys.disabled():
        print(f"\n  {fault}: symptom after {incident.detected_s} s ({evidence}); recovered {fixed['seconds']} s "
              f"after the fix; {time.monotonic() - began:.0f} s in all")
