"""The interview pool: its size and coverage, valid keys and explanations, numbered questions, draws and scores."""
from __future__ import annotations

import math
import random

import pytest

from streamlab.course import interview
from streamlab.course.interview import LETTERS, NUMBERED, TOPICS, Interview, draw, make, pool_ids, summary, to_reread


def all_questions(seed=0):
    rng = random.Random(seed)
    return [make(qid, rng) for qid in pool_ids()]


def test_pool_holds_at_least_60_questions_and_covers_every_topic():
    questions = all_questions()
    assert len(questions) >= 60
    assert len(set(pool_ids())) == len(pool_ids()), "question ids must be unique"
    assert {q.topic for q in questions} == set(TOPICS)
    for topic in TOPICS:
        assert sum(q.topic == topic for q in questions) >= 4, f"topic {topic} has fewer than 4 questions"


@pytest.mark.parametrize("seed", range(5))
def test_every_question_has_four_distinct_options_a_valid_key_and_an_explanation(seed):
    for q in all_questions(seed):
        assert q.text.strip() and q.why.strip(), q.id
        assert len(q.options) == 4 and len(set(q.options)) == 4, (q.id, q.options)
        assert q.key in LETTERS, (q.id, q.key)


def test_keys_are_not_all_the_same_letter():
    keys = [q.key for q in all_questions()]
    assert len(set(keys)) == 4 and max(keys.count(k) for k in LETTERS) < 0.5 * len(keys)


def _expected(kind: str, n: dict):
    """The right answer of a numbered question, recomputed here from its numbers (independently of the module)."""
    def share(cap, size, total):
        x = cap * (size / total)
        return min(size, math.ceil(x) if x < 1 else math.floor(x))

    if kind == "equal_split":
        return share(n["cap"], n["backlog"], n["parts"] * n["backlog"])
    if kind == "uneven_split":
        return share(n["cap"], n["big"], n["big"] + n["small"])
    if kind == "small_partitions":
        return n["parts"]
    if kind == "tasks":
        return n["parts"]
    if kind == "resume":
        return n["end"]
    if kind == "total_lag":
        return sum(a - b for a, b in zip(n["latest"], n["end"]))
    if kind == "lag_growth":
        return (n["rate"] - n["processed"]) * n["seconds"]
    if kind == "size_cap":
        return min(2 * n["rate"] * n["trigger"], math.floor(n["trigger"] * 1000 * 0.8 / n["cost"]))
    if kind == "min_offsets":
        return min(n["minimum"] / n["rate"], n["delay"])
    if kind == "two_topics":
        return n["a"] + n["b"]
    raise AssertionError(f"no expected answer for {kind}")


@pytest.mark.parametrize("kind", sorted(k for k, (_t, fn) in NUMBERED.items() if fn.__module__ == interview.__name__))
def test_numbered_questions_vary_between_draws_and_their_keys_are_right(kind):
    texts = set()
    for seed in range(30):
        q = make(f"n-{kind}", random.Random(seed))
        texts.add(q.text)
        given = q.options[LETTERS.index(q.key)]
        assert float(given.replace(",", "")) == pytest.approx(_expected(kind, q.numbers)), (q.text, q.options, q.key)
    assert len(texts) >= 3, f"{kind}: the numbers do not vary between draws"


def test_the_split_follows_the_connectors_planner():
    from streamlab.offline import planner

    rng = random.Random(7)
    for _ in range(200):
        backlogs = {p: rng.choice([0, 1, rng.randint(1, 5000)]) for p in range(rng.randint(1, 8))}
        cap = rng.randint(1, 6000)
        ends = planner.rate_limit(cap, {("t", p): 0 for p in backlogs}, {("t", p): n for p, n in backlogs.items()})
        assert interview.prorate(cap, backlogs) == {p: ends[("t", p)] for p in backlogs}


@pytest.mark.parametrize("seed", range(10))
def test_a_draw_has_no_duplicates_and_spans_the_topics(seed):
    questions = draw(16, seed)
    assert len(questions) == 16 and len({q.id for q in questions}) == 16
    assert {q.topic for q in questions} == set(TOPICS), "16 questions round-robin over 8 topics cover them all"
    assert len({q.id for q in draw(len(pool_ids()), seed)}) == len(pool_ids())


def test_draws_differ_and_a_seed_repeats():
    assert [q.id for q in draw(10, 1)] == [q.id for q in draw(10, 1)]
    assert [q.text for q in draw(10, 1)] != [q.text for q in draw(10, 2)]
    with pytest.raises(ValueError):
        draw(len(pool_ids()) + 1)


def test_summary_scores_by_topic_and_names_what_to_reread():
    qs = [make("sink-value"), make("sink-topic"), make("offsets-where"), make("lag-cli")]
    answers = {"sink-value": "c", "sink-topic": "a", "offsets-where": "B", "lag-cli": None}
    scores = summary(qs, answers)
    assert scores == {
        "offsets": {"right": 1, "asked": 1, "module": 2, "title": "offsets and the checkpoint",
                    "reread": "02-offset-tracking"},
        "lag": {"right": 0, "asked": 1, "module": 3, "title": "consumer lag", "reread": "03-consumer-lag"},
        "sinks": {"right": 1, "asked": 2, "module": 7, "title": "sinks and exactly-once",
                  "reread": "07-sinks-exactly-once"},
    }
    assert list(scores) == ["offsets", "lag", "sinks"], "ordered by module"
    assert to_reread(scores) == ["03-consumer-lag", "07-sinks-exactly-once"], "weakest first, perfect ones left out"
    assert "score 2/4" in interview.report(scores)


def test_the_widget_runs_headless_through_a_whole_draw():
    quiz = Interview(n=5, seed=3)
    assert quiz.current is quiz.questions[0] and len(quiz.buttons.children) == 4
    for i, q in enumerate(list(quiz.questions)):
        letter = q.key if i % 2 == 0 else next(l for l in LETTERS if l != q.key)
        assert quiz.answer(letter) == (i % 2 == 0)
        assert q.why in quiz.feedback.value or "&" in quiz.feedback.value
        assert not quiz.answer(q.key), "a question is answered once"
        quiz.next()
    assert quiz.current is None and "score 3/5" in quiz.body.value
    quiz.size.value = 7
    quiz.restart()
    assert quiz.index == 0 and quiz.answers == {} and len(quiz.questions) == 7


def test_a_zero_progress_lag_is_not_taught_as_caught_up():
    # Module 3's myth: an uncapped batch reads up to the latestOffset it was planned with, so this lag is always 0.
    q = make("lag-zero")
    right = q.options[LETTERS.index(q.key)]
    assert "uncapped" in right and "falls behind" in right
    assert "caught up" not in right and "keeps up" not in right


def test_the_default_trigger_runs_no_batch_without_new_data():
    # MicroBatchExecution skips the batch and sleeps pollingDelayMs when nothing new is there.
    assert "idle" not in make("rate-default-trigger").why
    assert "no batch" in make("rate-default-trigger").why
