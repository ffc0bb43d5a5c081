"""The on-call night (streamlab.course.oncall, solutions/ONCALL.ipynb): the page, run top to bottom in a kernel
with a learner's own fixes in its three fix cells, scores 6/6 on the live pipelines and keeps the night in the
history; fixes that change nothing or too little (the same cap, a cap under the rate, tonight's append, a no-op
write, failOnDataLoss left false) score 0 for their act on the same live pipelines, failOnDataLoss=true alone 1
(the query fails loudly, records are still lost); untouched fix cells score 0 at once, without a wait. Each
act's time to its symptom and to its grade is printed for the issue's note."""
from __future__ import annotations

import json
import re
import time

import nbformat
import pytest

from grader.course import SOURCE
from grader.seen_oncall import right_fixes
from streamlab.course import incidents, oncall

PAGE = SOURCE / "ONCALL.ipynb"

# A learner's fixes, one per tagged cell: her cap with headroom, her idempotent write, her retention and
# failOnDataLoss, the same the recorded run of `make seen` types in. Nothing in the course stores them: each is graded
# only by what the pipeline does afterwards.
LEARNER = right_fixes()


@pytest.fixture
def history(tmp_path, monkeypatch):
    """The learner's history file, in a temporary folder (STREAMLAB_HOME also holds the lab's jars)."""
    from streamlab.course import mock

    path = tmp_path / "interview.json"
    monkeypatch.setattr(mock, "history_file", lambda: path)
    oncall._scores.clear()
    return path


def test_untouched_fix_cells_score_0_at_once(history):
    began = time.monotonic()
    assert oncall.Act(1, None).fix(options={"maxOffsetsPerTrigger": ...})["points"] == 0
    assert oncall.Act(1, None).fix()["points"] == 0
    assert oncall.Act(2, None).fix(write=None)["points"] == 0
    assert oncall.Act(3, None).fix(options={"failOnDataLoss": ...}, retention_ms=...)["points"] == 0
    assert time.monotonic() - began < 1.0
    night = oncall.score()
    assert night == {"acts": {1: 0, 2: 0, 3: 0}, "total": 0, "of": 6}
    assert json.loads(history.read_text())["oncall"][-1]["total"] == 0
    assert [oncall.ACTS[n].fault for n in (1, 2, 3)] == ["cap-too-low", "replayed-batch", "retention-gap"]
    assert all(story.fault in incidents.FAULTS for story in oncall.ACTS.values())


@pytest.mark.broker
@pytest.mark.spark
def test_the_page_with_a_learners_fixes_scores_6_of_6(bootstrap, tmp_path, capsys):
    from nbclient import NotebookClient

    nb = nbformat.read(PAGE, as_version=4)
    tagged = {tag: cell for cell in nb.cells for tag in cell.metadata.get("tags", []) if tag in LEARNER}
    assert set(tagged) == set(LEARNER), "the page lost a fix cell's tag"
    for tag, cell in tagged.items():
        cell.source = LEARNER[tag].strip()
    history = tmp_path / "interview.json"
    nb.cells.insert(0, nbformat.v4.new_code_cell(
        f"from streamlab.course import mock\nfrom pathlib import Path\nmock.history_file = lambda: Path({str(history)!r})"))
    began = time.monotonic()
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(SOURCE)}}).execute()
    seconds = time.monotonic() - began
    text = {id(c): "".join(o.get("text", "") for o in c.get("outputs", [])) for c in nb.cells}
    graded = {tag: text[id(cell)] for tag, cell in tagged.items()}
    for tag, said in graded.items():
        assert re.search(r"✓ act \d: 2/2", said), f"{tag}: {said}"
    assert "the night: 6/6" in "".join(text.values())
    assert json.loads(history.read_text())["oncall"][-1]["total"] == 6
    with capsys.disabled():
        print(f"\n  the page with a learner's fixes: 6/6 in {seconds:.0f} s")
        for tag, said in graded.items():
            print(f"    {tag}: {said.strip().splitlines()[-1]}")


@pytest.mark.broker
@pytest.mark.spark
def test_fixes_that_change_nothing_score_0(spark, bootstrap, history, capsys):
    from streamlab.lab.topics import list_topics

    lines = []
    act = oncall.start(1, spark, bootstrap)
    try:
        act.wait_for_symptom(timeout=120)
        lines.append(f"act 1 symptom after {act.incident.detected_s} s, the alert after {act.incident.elapsed():.0f} s")
        assert act.incident._log_lag() > oncall.ALERT_SECONDS * 300  # a backlog to drain: a no-op is told apart
        for name, cap in (("the same cap", 100), ("a cap under the rate", 250)):
            got = act.fix(options={"maxOffsetsPerTrigger": cap}, within=10)
            assert got["points"] == 0, got
            lines.append(f"act 1, {name}: {got['evidence']}")
    finally:
        act.stop()
    act = oncall.start(2, spark, bootstrap)
    try:
        act.wait_for_symptom(timeout=120)
        lines.append(f"act 2 symptom after {act.incident.detected_s} s")
        for name, write in (("tonight's append", incidents.append_write(act.table)),
                            ("a no-op write", lambda batch_df, batch_id: None)):
            got = act.fix(write=write)
            assert got["points"] == 0, got
            lines.append(f"act 2, {name}: {got['evidence']}")
    finally:
        act.stop()
    act = oncall.start(3, spark, bootstrap)
    try:
        act.wait_for_symptom(timeout=120)
        lines.append(f"act 3 symptom after {act.incident.detected_s} s")
        assert act.settings()["topic retention.ms"] == 1000  # what the broker says, as the learner reads it
        left = act.fix(options={"failOnDataLoss": "false"})
        assert left["points"] == 0, left
        lines.append(f"act 3, failOnDataLoss left false: {left['evidence']}")
        loud = act.fix(options={"failOnDataLoss": "true"})  # half a fix: loud, but retention still 1 s
        assert loud["points"] == 1 and "loudly" in loud["evidence"], loud
        lines.append(f"act 3, failOnDataLoss=true alone: 1 point, {loud['evidence']}")
    finally:
        said = act.stop()
    assert oncall.score()["total"] == 1  # act 3's last fix, the loud half
    assert not spark.streams.active
    assert not set(act.incident.topics) & set(list_topics(bootstrap)), said
    with capsys.disabled():
        print("\n  " + "\n  ".join(lines))
