"""The mock interview (streamlab/course/mock.py) and the pool it draws from: the pool covers module 9 and reaches
150 questions that no blind strategy passes, every question links to the section that proves it, a round mixes
kinds and fits its minutes, the weak topics of one round are asked first in the next (fsrs), answers after the
time is up do not count, the history survives a corrupt file and shows in `grader progress`, and the candidate's
page (solutions/INTERVIEW.ipynb) holds the 20 model answers and runs twice from the top."""
from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from datetime import datetime, timedelta, timezone

import nbformat
import pytest

from grader import lint
from grader.course import RELEASE, SOURCE
from streamlab.course import interview, mock, pool_more

T0 = datetime(2026, 11, 28, 12, 0, tzinfo=timezone.utc)
PAGE = SOURCE / "INTERVIEW.ipynb"


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMLAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("STREAMLAB_SEED", "4242")
    return tmp_path / "home"


def _headings(notebook: str) -> set[str]:
    nb = nbformat.read(SOURCE / notebook / f"{notebook}.ipynb", as_version=4)
    return {line.lstrip("#").strip().replace("`", "") for c in nb.cells if c.cell_type == "markdown"
            for line in c.source.splitlines() if re.match(r"#{1,6} ", line)}


def test_the_pool_holds_150_questions_and_20_on_module_9():
    topics = Counter(interview.make(qid, random.Random(0)).topic for qid in interview.pool_ids())
    assert interview.pool_size() >= 150, interview.pool_size()
    assert topics["cluster"] >= 20, topics
    assert len(set(interview.pool_ids())) == len(interview.pool_ids()), "question ids must be unique"


def test_no_blind_strategy_passes_the_pool_or_the_new_questions():
    mine = [lint.Asked(r[0], dict(zip("abcd", r[3])), r[4]) for r in pool_more.FIXED]
    for name, asked in (("pool", lint.pool_questions()), ("pool_more", mine)):
        scores = lint.blind(asked)
        assert all(score < 0.35 for score in scores.values()), (name, scores)
    assert max(Counter(r[4] for r in pool_more.FIXED).values()) <= math.ceil(len(pool_more.FIXED) / 4)


def test_every_question_links_to_its_module_and_the_new_ones_to_a_section_that_exists():
    for qid in interview.pool_ids():
        q = interview.make(qid, random.Random(0))
        notebook, section = mock.where(qid, q.topic)
        assert (SOURCE / notebook / f"{notebook}.ipynb").is_file(), (qid, notebook)
    places = list(pool_more.WHERE.items()) + [(row[0], row[5]) for row in mock.EXPLAIN]
    assert {row[0] for row in pool_more.WRITTEN} | {f"n-{k}" for k in pool_more.NUMBERED} <= set(pool_more.WHERE)
    for qid, (notebook, section) in places:
        assert section in _headings(notebook), f"{qid}: no heading {section!r} in {notebook}"
        assert not re.search(r"[()\"#]", section), f"{qid}: {section!r} makes a fragile link anchor"
        assert mock.link((notebook, section)) == f"{notebook}/{notebook}.ipynb#" + section.replace(" ", "-")


def _expected(kind: str, n: dict):
    """The new numbered questions' answers, recomputed here from their numbers."""
    if kind == "little_wait":
        return n["lag"] / n["rate"]
    if kind == "catch_up":
        return n["lag"] / (n["processed"] - n["incoming"])
    if kind == "available_now_batches":
        return -(-n["backlog"] // n["cap"])
    if kind == "preferred_index":
        return ((n["code"] % n["executors"]) + n["executors"]) % n["executors"]  # Java's floorMod
    if kind == "brokers_to_lose":
        return n["replicas"] - n["minimum"]
    if kind == "replay_copies":
        return 2 * n["records"]
    raise AssertionError(f"no expected answer for {kind}")


@pytest.mark.parametrize("kind", sorted(pool_more.NUMBERED))
def test_the_new_numbered_questions_vary_and_their_keys_are_right(kind):
    texts = set()
    for seed in range(40):
        q = interview.make(f"n-{kind}", random.Random(seed))
        texts.add(q.text)
        assert len(set(q.options)) == 4 and q.key in "abcd", q.options
        given = float(q.options["abcd".index(q.key)].replace(",", ""))
        assert given == pytest.approx(_expected(kind, q.numbers)), (q.text, q.options, q.key)
    assert len(texts) >= 3


def test_the_20_explain_items_are_30_to_60_seconds_and_have_key_points():
    assert len(mock.EXPLAIN) == 20 and len({row[0] for row in mock.EXPLAIN}) == 20
    for qid, topic, question, model, points, _where in mock.EXPLAIN:
        assert topic in interview.TOPICS and question.endswith("?"), qid
        assert 75 <= len(model.split()) <= 150, f"{qid}: {len(model.split())} words is not 30-60 s said"
        assert 3 <= len(points) <= 5, qid


def test_a_round_mixes_kinds_fits_its_minutes_and_refuses_bad_input():
    rnd = mock.Round(minutes=20, seed=3, now=T0)
    kinds = Counter(it.kind for it in rnd.items)
    assert set(kinds) == {"choice", "number", "explain"}, kinds
    assert sum(it.seconds for it in rnd.items) <= 20 * 60 and len(rnd.items) >= 10
    assert len({it.topic for it in rnd.items}) >= 6, "a short round still spreads over the topics"
    only = mock.Round(["cluster"], 10, seed=3, now=T0)
    assert {it.topic for it in only.items} == {"cluster"}
    with pytest.raises(ValueError, match="no topic kafka-streams: choose from"):
        mock.Round(["kafka-streams"], 10)
    with pytest.raises(ValueError, match="minutes must be more than 0"):
        mock.Round(None, 0)


def _answer_all(rnd, wrong_topic, now):
    for it in list(rnd.items):
        if it.topic == wrong_topic:
            given = {"choice": "z", "number": "-1", "explain": []}[it.kind]
        else:
            given = list(range(len(it.points))) if it.kind == "explain" else it.key
        assert rnd.answer(given, now=now) is (it.topic != wrong_topic), it


def test_the_weak_topic_of_one_round_comes_back_first_in_the_next(home):
    topics = ["cluster", "sinks", "offsets"]
    first = mock.Round(topics, 20, seed=1, now=T0)
    _answer_all(first, "cluster", T0 + timedelta(minutes=5))
    assert first.finish(now=T0 + timedelta(minutes=10))["cluster"][0] == 0
    missed = {it.id for it in first.items if it.topic == "cluster"}
    later = T0 + timedelta(minutes=30)  # the same evening: the missed topic is due, the known ones are not
    assert mock.weak_topics(now=later) == ["cluster"]
    second = mock.Round(topics, 20, seed=2, now=later)
    asked = Counter(it.topic for it in second.items)
    assert second.items[0].topic == "cluster" and asked["cluster"] > max(asked["sinks"], asked["offsets"]), asked
    assert missed & {it.id for it in second.items}, "the questions missed are asked again"
    data = json.loads((home / "interview.json").read_text())
    assert datetime.fromisoformat(data["topics"]["sinks"]["due"]) > later + timedelta(days=1)
    assert [p.name for p in home.iterdir() if p.name.endswith(".tmp")] == [], "no temporary file left"


def test_answers_after_the_time_is_up_do_not_count():
    rnd = mock.Round(["rate"], 5, seed=1, now=T0)
    it = rnd.current
    right = it.key if it.kind != "explain" else list(range(len(it.points)))
    assert rnd.answer(right, now=T0 + timedelta(minutes=6)) is False
    assert rnd.results[it.id] == {"right": False, "late": True, "given": right if it.kind == "explain" else str(right)}
    assert rnd.answer(rnd.current.key or [0, 1, 2, 3], now=T0 + timedelta(minutes=1)) in (True, False)


def test_numbers_and_self_marks_are_judged_as_a_candidate_types_them():
    number = mock.Item("n", "lag", "number", "?", key="12,000")
    assert mock.is_right(number, "12000") and mock.is_right(number, " 12,000 ") and not mock.is_right(number, "1200")
    assert not mock.is_right(number, "twelve thousand")
    explain = mock.Item("x", "lag", "explain", "?", points=["a", "b", "c", "d"])
    assert mock.is_right(explain, [0, 1, 3]) and not mock.is_right(explain, [0, 1]) and not mock.is_right(explain, [])


def test_a_corrupt_history_starts_afresh_and_progress_shows_the_rounds(home):
    from grader import progress

    home.mkdir(parents=True)
    (home / "interview.json").write_text("{not json")
    assert mock.load() == {"rounds": [], "cards": {}, "topics": {}, "design": []}
    assert "interview: no mock round yet" in progress.table()
    rnd = mock.Round(["lag"], 5, seed=1, now=T0)
    _answer_all(rnd, "none", T0)
    rnd.finish(now=T0 + timedelta(minutes=4))
    json.loads((home / "interview.json").read_text())
    table = progress.table()
    assert "interview: 1 mock round(s)" in table
    assert re.search(r"^\s+lag\s+(\d+)/\1\s+(\d+)/\2 ", table, re.M), table


def test_the_terminal_round_asks_scores_and_keeps_the_history(home):
    lines = []
    answers = iter(["a", "0", "", "1 2 3 4", "b", "c", "d"] * 5)
    scores = mock.run_terminal(["backpressure"], 6, ask=lambda _prompt: next(answers), out=lines.append, seed=5)
    text = "\n".join(lines)
    assert "A 6-minute round" in text and "score " in text and "proven live in notebooks/04-backpressure" in text
    assert list(scores) == ["backpressure"] and scores["backpressure"][1] >= 4
    assert len(mock.load()["rounds"]) == 1
    assert mock.main(["--topics", "nope"]) == 2


def test_the_widget_runs_a_round_headless():
    widget = mock.MockRound(["sinks"], 5)
    widget.start()
    while widget.round.current is not None:
        it = widget.round.current
        if it.kind == "explain":
            widget.reveal()
        widget.answer(it.key if it.kind != "explain" else [0, 1, 2, 3])
        assert "proven live" in widget.feedback.value
        widget.next()
    assert "Round over" in widget.header.value and "score" in widget.body.value
    assert mock.load()["rounds"][-1]["scores"]["sinks"][0] >= 1


def test_the_interview_page_holds_the_20_answers_and_its_links_resolve():
    nb = nbformat.read(PAGE, as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for qid, _topic, question, model, _points, place in mock.EXPLAIN:
        assert question in text and model in text, f"{qid}: the page and mock.EXPLAIN differ"
        # the heading's cell id: JupyterLab opens a clicked link there (a heading anchor leaves it at the top)
        assert f"]({mock.proof_target(place)})" in text and "#cell-id=" in mock.proof_target(place), qid
    for link in set(re.findall(r"\]\(([^)#\s]+\.ipynb)", text)):
        assert (SOURCE / link).is_file(), link
    assert (RELEASE / "INTERVIEW.ipynb").is_file(), "notebooks/ lacks the page: run python -m grader release"


def test_the_interview_page_runs_twice_from_the_top(tmp_path):
    from nbclient import NotebookClient

    for _ in range(2):
        nb = nbformat.read(PAGE, as_version=4)
        NotebookClient(nb, timeout=120, kernel_name="python3",
                       resources={"metadata": {"path": str(SOURCE)}}).execute()
        bad = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
               if o.output_type == "error" or o.get("name") == "stderr"]
        assert not bad, bad
    printed = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "interview: no mock round yet" in printed and "payments-eo" in printed


def test_progress_shows_the_incident_round_and_the_on_call_nights():
    """`grader progress` lists what course/incidents.py and course/oncall.py keep in the history."""
    data = {"rounds": [], "cards": {}, "topics": {}, "design": [],
            "incidents": [{"fault": "cap-too-low", "score": 2, "of": 2}, {"fault": "retention-gap", "score": 1, "of": 2}],
            "oncall": [{"total": 2, "of": 6, "acts": {}}, {"total": 5, "of": 6, "acts": {}}]}
    lines = mock.progress_lines(data)
    assert "  incident round: 2 incident(s), last 1/2 (retention-gap), 3/4 in all" in lines, lines
    assert "  on-call night: 2 night(s), last 5/6, best 5/6" in lines, lines
