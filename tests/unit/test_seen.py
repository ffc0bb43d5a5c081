"""What you should see (grader/seen.py): every live demo of the course has its last frame from a real run under it,
and `grader seen` puts it there from an executed notebook, once, without taking an exercise's cells."""
from __future__ import annotations

import base64
import re
from pathlib import Path

import nbformat
import pytest

from grader import seen
from grader.course import SOURCE, assignments

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def _frozen(png: bytes = PNG) -> dict:
    return nbformat.v4.new_output("display_data", data={"image/png": base64.b64encode(png).decode(),
                                                        "application/vnd.jupyter.widget-view+json": {"model_id": "x"}})


def _course(tmp_path: Path):
    """A one-module course: a demo cell, its wait() cell, an exercise cell that also froze a chart."""
    source, executed = tmp_path / "solutions", tmp_path / "executed"
    (source / "m1").mkdir(parents=True)
    executed.mkdir()
    demo = nbformat.v4.new_code_cell('demo = LiveDemo(spark, topic, title="the cap at work").start()')
    demo["id"] = "demo1"
    wait = nbformat.v4.new_code_cell("demo.wait()")
    wait["id"] = "wait1"
    exercise = nbformat.v4.new_code_cell("race = RaceDemo().start()", metadata={"nbgrader": {"grade_id": "ex1_answer"}})
    exercise["id"] = "ex1"
    nb = nbformat.v4.new_notebook(cells=[demo, wait, exercise])
    nbformat.write(nb, source / "m1" / "m1.ipynb")
    ran = nbformat.from_dict(nb)
    ran.cells[0].outputs = [_frozen(), nbformat.v4.new_output("stream", text="ended\n")]
    ran.cells[2].outputs = [_frozen()]
    nbformat.write(ran, executed / "m1.ipynb")
    return source, executed


def test_a_demo_s_last_frame_goes_under_it_once_and_an_exercise_s_never(tmp_path):
    source, executed = _course(tmp_path)
    assert seen.apply("m1", executed, source) == ["seen-demo1.png"]
    assert (source / "m1" / "figures" / "seen-demo1.png").read_bytes() == PNG
    seen.apply("m1", executed, source)  # run again: the cell is refreshed, not added twice
    cells = nbformat.read(source / "m1" / "m1.ipynb", as_version=4).cells
    assert [c.get("id") for c in cells] == ["demo1", "seen-demo1", "wait1", "ex1"]
    text = cells[1].source
    assert "What you should see" in text and "![The chart of the demo 'the cap at work' in a recorded run]" in text
    assert "(figures/seen-demo1.png)" in text and text.startswith("<details>")


def test_a_run_of_another_release_is_refused_with_the_fix(tmp_path):
    source, executed = _course(tmp_path)
    ran = nbformat.read(executed / "m1.ipynb", as_version=4)
    ran.cells[0]["id"] = "gone"
    nbformat.write(ran, executed / "m1.ipynb")
    with pytest.raises(seen.GraderError, match="make seen"):
        seen.apply("m1", executed, source)


def _demo_cells(nb) -> list:
    """Code cells that start a live demo and get a What you should see (seen.recorded)."""
    return [c for c in nb.cells if seen.recorded(c) and re.search(r"Demo\(", c.source)
            and re.search(r"\.start\(\)", c.source)]


@pytest.mark.parametrize("aid", assignments(SOURCE))
def test_every_live_demo_shows_what_you_should_see(aid):
    """Under each demo's cell, its frames from a recorded run (make seen), files that exist and are PNGs: module 9's
    FailoverDemo too, recorded on the lab's cluster (`make seen` starts it), its kill table as the demo ended."""
    nb = nbformat.read(SOURCE / aid / f"{aid}.ipynb", as_version=4)
    assert _demo_cells(nb) or aid == "08-cheat-sheet", f"{aid}: no live demo found (has the demo's cell changed?)"
    ids = [c.get("id") for c in nb.cells]
    for cell in _demo_cells(nb):
        at = ids.index(cell.get("id"))
        below = nb.cells[at + 1]
        assert below.get("id") == seen.CELL_ID.format(cell.get("id")), (
            f"{aid}: the demo in cell {at + 1} has no 'What you should see' under it: run make seen")
        for name in re.findall(r"\(figures/(seen-[^)]+\.png)\)", below.source):
            assert (SOURCE / aid / "figures" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
