"""Design rounds (streamlab/course/design.py): each model answer passes its own round and no other; an empty answer,
a constant one, a buzzword list, the scenario pasted back and an overlong answer fail every round; a partial answer
is told which rubric points it misses; the widget keeps the result in the interview history."""
from __future__ import annotations

import re

import pytest

from grader.course import SOURCE
from streamlab.course import design

GENERIC = ("I would use exactly-once semantics with idempotent writes and checkpoints. I would monitor the lag and "
           "set up alerts on it. Retries and backfills are handled carefully by the team. Deduplication ensures the "
           "correctness of the data in every case.")
BUZZWORDS = ("exactly-once idempotent merge upsert checkpoint hdfs transaction batch id foreachBatch read_committed "
             "lag monitor retry backfill dedup skew minPartitions replay startingTimestamp availableNow retention "
             "acks=all leader election twice 20,000 5 s")


def test_at_least_five_rounds_each_with_a_rubric_a_model_answer_and_pitfalls():
    assert len(design.ROUNDS) >= 5 and len(design.BY_ID) == len(design.ROUNDS)
    for r in design.ROUNDS:
        assert len(r.points) >= 5 and len({p.id for p in r.points}) == len(r.points), r.id
        assert len(r.pitfalls) >= 3 and r.model and r.scenario, r.id
        for notebook, section in r.where:
            nb = (SOURCE / notebook / f"{notebook}.ipynb").read_text()
            assert section in re.sub(r"`", "", nb), (r.id, section)


@pytest.mark.parametrize("round_id", list(design.BY_ID))
def test_the_model_answer_passes_its_own_round_and_no_other(round_id):
    model = design.BY_ID[round_id].model
    own = design.check(round_id, model)
    assert own.passed and own.missing == [] and own.notes == [], own.report()
    for other in design.ROUNDS:
        if other.id != round_id:
            assert not design.check(other.id, model).passed, f"{round_id}'s model answer passes {other.id}"


@pytest.mark.parametrize("round_id", list(design.BY_ID))
def test_empty_constant_buzzword_pasted_and_overlong_answers_fail(round_id):
    scenario = design.BY_ID[round_id].scenario
    everything = " ".join(r.model for r in design.ROUNDS)
    for name, answer in (("empty", ""), ("None", None), ("generic", GENERIC), ("buzzwords", BUZZWORDS),
                         ("scenario", scenario), ("scenario twice", scenario + "\n" + scenario),
                         ("every model answer", everything)):
        found = design.check(round_id, answer)
        assert not found.passed, f"{round_id}: the {name} answer passes: {found.report()}"
    assert design.check(round_id, scenario).met == [], "the scenario alone makes no rubric point"
    assert "repeats the scenario" in design.check(round_id, scenario).report()
    assert "words: an interviewer stops listening" in design.check(round_id, everything).report()


def test_a_scenario_quoted_before_a_real_answer_still_passes():
    r = design.BY_ID["replay-tuesday"]
    assert design.check(r.id, r.scenario + "\n\n" + r.model).passed


def test_a_partial_answer_is_told_which_points_it_misses():
    answer = ("Spark's Kafka sink is at-least-once, because a restart replays the batch that was not committed. "
              "The checkpoint must live on HDFS so any node finds it after a restart. "
              "I would set acks=all on the producer so nothing acknowledged is lost.")
    found = design.check("payments-eo", answer)
    assert set(found.met) == {"replay", "checkpoint", "producer"}, found.met
    assert set(found.missing) == {"idempotent", "transaction", "readers"} and not found.passed
    assert "✗ has downstream readers use read_committed" in found.report()
    with pytest.raises(KeyError, match="no design round 'nope': choose from payments-eo"):
        design.check("nope", answer)


def test_the_widget_checks_and_keeps_the_result_in_the_history(tmp_path, monkeypatch):
    from streamlab.course import mock

    monkeypatch.setenv("STREAMLAB_HOME", str(tmp_path))
    widget = design.DesignRound("kafka-delta")
    assert not widget.check("").passed
    assert widget.check(design.BY_ID["kafka-delta"].model).passed and "6 of 6 points" in widget.result.value
    widget.show_model()
    assert "Pitfalls" in widget.result.value
    history = mock.load()["design"]
    assert [e["passed"] for e in history] == [False, True]
    assert "design rounds: 1 of 1 tried passed" in "\n".join(mock.progress_lines())
