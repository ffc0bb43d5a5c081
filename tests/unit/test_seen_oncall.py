"""The on-call night's What you should see (grader/seen_oncall.py): each act has a chart from a recorded run under
its "What you should see", before and after a right fix; the alt text states that run's numbers; `grader seen`
refuses a run whose fix did not score or whose chart would not show the act's story. The answers it types, like
00-setup's, are kept where a hub's learner cannot read them."""
from __future__ import annotations

import copy
import json
import shutil

import nbformat
import pytest

from grader import seen_oncall
from grader.course import PAGE_FIGURES, SOURCE, GraderError

RECORDED = SOURCE / PAGE_FIGURES / seen_oncall.SAMPLES_KEPT


def _recorded() -> dict:
    return json.loads(RECORDED.read_text())


def test_each_act_shows_its_recorded_chart_under_what_you_should_see():
    nb = nbformat.read(SOURCE / f"{seen_oncall.PAGE}.ipynb", as_version=4)
    ids = [c.get("id") for c in nb.cells]
    recorded = _recorded()
    for n, under in seen_oncall.UNDER.items():
        assert "What you should see" in nb.cells[ids.index(under)].source, f"act {n}: cell {under} moved"
        below = nb.cells[ids.index(under) + 1]
        assert below.get("id") == seen_oncall.CELL_ID.format(n), f"act {n}: no recorded chart under it: make seen"
        story = seen_oncall.Story(recorded[str(n)])
        assert seen_oncall.check(story) == "", seen_oncall.check(story)
        # the cell states the recorded run's own numbers: a chart redrawn from other samples needs its cell redone
        assert below.source == seen_oncall.cell_source(n, seen_oncall.alt(story))
        png = (SOURCE / PAGE_FIGURES / seen_oncall.FIGURE.format(n)).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_recorded_run_shows_each_act_before_and_after_its_fix():
    stories = {n: seen_oncall.Story(a) for n, a in _recorded().items()}
    one, two, three = stories["1"], stories["2"], stories["3"]
    assert [s["attempts"][-1]["points"] for s in (one, two, three)] == [2, 2, 2]
    lags = one.series("lag")
    before = [y for t, y in zip(*lags) if t < one.fixed_at]
    assert max(before) > one["alert_seconds"] * one["rate"]  # the pager's line was crossed before the fix
    assert lags[1][-1] <= one["lag_seconds"] * one["rate"]  # and the lag is under the bound at the end
    capped = [b["rows"] for b in one.batches() if b["t"] < one.fixed_at]
    assert max(capped) <= 100 and sorted(capped)[len(capped) // 2] >= 90  # the cap (100), batch after batch
    assert seen_oncall._added(two, "duplicates", two.in_force_at) == 0
    assert any(at > two.in_force_at for _, at in two["crashes"])
    late = [b for b in three.batches(planned=True) if b["t"] > three.fixed_at]
    assert late and all(b["rows"] == b["planned"] for b in late)


def test_apply_draws_the_charts_and_puts_each_cell_once(tmp_path):
    source, executed = tmp_path / "solutions", tmp_path / "executed"
    source.mkdir()
    executed.mkdir()
    shutil.copyfile(SOURCE / f"{seen_oncall.PAGE}.ipynb", source / f"{seen_oncall.PAGE}.ipynb")
    shutil.copyfile(RECORDED, executed / seen_oncall.SAMPLES)
    assert seen_oncall.apply(executed, source) == [seen_oncall.FIGURE.format(n) for n in (1, 2, 3)]
    seen_oncall.apply(executed, source)  # again: the cells are refreshed, not added twice
    cells = nbformat.read(source / f"{seen_oncall.PAGE}.ipynb", as_version=4).cells
    before = nbformat.read(SOURCE / f"{seen_oncall.PAGE}.ipynb", as_version=4).cells
    assert [c.get("id") for c in cells] == [c.get("id") for c in before]
    for n in (1, 2, 3):
        assert (source / PAGE_FIGURES / seen_oncall.FIGURE.format(n)).read_bytes()[:4] == b"\x89PNG"
    assert json.loads((source / PAGE_FIGURES / seen_oncall.SAMPLES_KEPT).read_text()) == _recorded()


@pytest.mark.parametrize("spoil, said", [
    (lambda r: r["1"]["attempts"][-1].update(points=0), "act 1: the right fix scored 0/2"),
    (lambda r: r["2"]["samples"][-1].update(duplicates=10 ** 6), "act 2: copies were added"),
    (lambda r: r["2"].update(crashes=[c for c in r["2"]["crashes"] if c[1] < r["2"]["attempts"][-1]["began"]]),
     "act 2: no crash was recorded after the fix"),
    (lambda r: r["3"].update(batches={k: {**b, "rows": b["planned"]} for k, b in r["3"]["batches"].items()}),
     "act 3: no batch was recorded reading fewer rows"),
    (lambda r: [x.update(earliest=0) for x in r["3"]["samples"] if "earliest" in x],
     "act 3: the log's earliest offset did not rise"),
    (lambda r: r.pop("3"), "act 3: not recorded"),
])
def test_a_run_that_does_not_show_the_story_is_refused_with_the_fix(tmp_path, spoil, said):
    source, executed = tmp_path / "solutions", tmp_path / "executed"
    source.mkdir()
    executed.mkdir()
    shutil.copyfile(SOURCE / f"{seen_oncall.PAGE}.ipynb", source / f"{seen_oncall.PAGE}.ipynb")
    recorded = copy.deepcopy(_recorded())
    spoil(recorded)
    (executed / seen_oncall.SAMPLES).write_text(json.dumps(recorded))
    with pytest.raises(GraderError, match="make seen") as caught:
        seen_oncall.apply(executed, source)
    assert said in str(caught.value)
    assert not (source / PAGE_FIGURES).exists()  # nothing written from a run that does not show it


def test_the_recorded_run_fixes_each_cell_and_is_no_learner_answer():
    page = nbformat.read(SOURCE / f"{seen_oncall.PAGE}.ipynb", as_version=4)
    tags = {t for c in page.cells for t in c.metadata.get("tags", [])}
    assert set(seen_oncall.right_fixes()) <= tags
    for cell in page.cells:  # the page's fix cells still hold the learner's placeholders
        if set(cell.metadata.get("tags", [])) & set(seen_oncall.right_fixes()):
            assert "..." in cell.source or "change this" in cell.source


def test_the_site_draws_each_act_s_chart_on_the_on_call_page(tmp_path):
    """`make site` copies the pages' figures/ and the page shows each chart as an image (inside its <details>)."""
    import re

    from grader.course import RELEASE
    from grader.site import build

    site = build(tmp_path / "site", RELEASE)
    html = (site.out / f"{seen_oncall.PAGE}.html").read_text(encoding="utf-8")
    images = set(re.findall(r'<img[^>]*\ssrc="([^"]+)"', html))
    for n in (1, 2, 3):
        rel = f"figures/{seen_oncall.FIGURE.format(n)}"
        assert rel in images, f"{rel} is not drawn on the page"
        assert (site.out / rel).read_bytes() == (SOURCE / rel).read_bytes(), f"{rel}: not this release's chart"


def _readable_on_a_hub(lines: dict[str, str]) -> list[str]:
    """'<what> in <file>' for each of `lines` found as text or JSON string in a file a hub's learner can read.

    A hub's walls empty solutions/ (and tests/) for learners; grader/, streamlab/ and the student pages stay
    readable."""
    root = SOURCE.parent
    texts = {str(p.relative_to(root)): p.read_text(encoding="utf-8", errors="ignore")
             for folder in ("grader", "streamlab", "workshop", "bench", "docs", "notebooks")
             for p in (root / folder).rglob("*") if p.suffix in (".py", ".md", ".json", ".ipynb") and p.is_file()}
    return [f"{what} in {name}" for what, line in lines.items() for name, text in texts.items()
            if line in text or json.dumps(line)[1:-1] in text]


def test_the_right_fixes_are_answers_kept_where_a_hub_learner_cannot_read_them():
    """The recorded run's right fixes live in solutions/ only."""
    assert seen_oncall.FIXES.parent == SOURCE
    found = _readable_on_a_hub({tag: max(fix.splitlines(), key=len).strip()
                                for tag, fix in seen_oncall.right_fixes().items()})
    assert not found, f"a right fix is readable on a hub: {found}"


def test_setup_s_answers_are_kept_where_a_hub_learner_cannot_read_them():
    """00-setup's solution lines and the right sample student's answers (grader samples) live in solutions/ and
    tests/ only: not in grader/ as they once did."""
    from grader.cohort import SAMPLES, sample_answers

    assert SAMPLES.is_relative_to(SOURCE.parent / "tests")
    lines = {f"sample alice's {gid}": answer.strip() for gid, answer in sample_answers()["alice"].items()}
    solution = nbformat.read(SOURCE / "00-setup" / "00-setup.ipynb", as_version=4)
    for cell in solution.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        inside = [ln.strip() for part in cell.source.split("### BEGIN SOLUTION")[1:]
                  for ln in part.split("### END SOLUTION")[0].splitlines()]
        lines.update({f"00-setup's {gid} solution line {k + 1}": ln for k, ln in enumerate(inside) if ln})
    assert len(lines) >= 6, f"00-setup's answers were not found: {sorted(lines)}"
    found = _readable_on_a_hub(lines)
    assert not found, f"00-setup's answer is readable on a hub: {found}"


def test_without_the_sample_answers_grader_samples_says_so_in_one_line(tmp_path):
    from grader.cohort import sample_answers

    with pytest.raises(GraderError, match="sample students' answers are unreadable") as err:
        sample_answers(tmp_path)
    assert "\n" not in str(err.value)


def test_without_the_fixes_make_seen_says_so_in_one_line(tmp_path):
    with pytest.raises(GraderError, match="right fixes are unreadable") as err:
        seen_oncall.right_fixes(tmp_path / "none.json")
    assert "\n" not in str(err.value)
