"""The checker against a submission that misbehaves: memory and output are bounded with a reason that says so,
a stuck cell or a lost broker is never a silent wait, and what the run's kernel made is removed even when the
kernel died."""
from __future__ import annotations

import subprocess
import time

import psutil
import pytest

from grader import grading, runner
from streamlab.lab import topics

BOUND_S = 20

NOTEBOOK = [
    "print(('x' * 999 + '\\n') * 3000)",  # 3 MB of output in one cell
    "from streamlab.lab import lifecycle as lab\nmade = [lab.new_topic('checked'), lab.new_topic('checked')]\n"
    "import os\nprint(os.getpid(), ' '.join(made))",
    "hog = bytearray(3 * 2**30)\nhog[::4096] = b'1' * len(hog[::4096])",
    "print('never runs')",
]


@pytest.mark.broker
def test_a_cell_that_takes_too_much_memory_and_output(shared_broker, monkeypatch, tmp_path):
    """A cell printing 3 MB keeps 2 MB and says so; a cell that allocates past the limit is stopped with 'used more
    than N GiB of memory', its kernel and children are gone, and the topics the kernel made are swept."""
    import nbformat

    _, address = shared_broker
    monkeypatch.setenv("KAFKA_BOOTSTRAP", address)
    monkeypatch.setattr(runner, "MEMORY_LIMIT_GIB", 1.0)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in NOTEBOOK]
    started = time.monotonic()
    outcome = runner.run(nb, {}, {}, tmp_path, 120, None, None)
    seconds = time.monotonic() - started
    assert outcome.stopped and "cell 3" in outcome.stopped, outcome.stopped
    assert "used more than 1 GiB of memory" in outcome.stopped, outcome.stopped
    first = outcome.nb.cells[0].outputs
    kept = sum(len(o.get("text", "")) for o in first)
    assert kept <= runner.OUTPUT_LIMIT_BYTES + 10_000 and "dropped the rest" in first[-1]["text"], kept
    kernel_pid, *made = outcome.nb.cells[1].outputs[0]["text"].split()
    kernel_pid = int(kernel_pid)
    assert len(made) == 2
    assert not outcome.nb.cells[3].outputs
    assert not psutil.pid_exists(kernel_pid) or psutil.Process(kernel_pid).status() == psutil.STATUS_ZOMBIE
    assert set(made) <= set(topics.list_topics(address)), "the kernel's topics should still be there before the sweep"
    grading._sweep_after_run(address)
    assert not set(made) & set(topics.list_topics(address)), "the dead kernel's topics were left on the broker"
    assert seconds < 120 + BOUND_S


def test_a_lost_broker_ends_the_run_with_the_reason(tmp_path):
    """The broker stops answering while a cell runs: within seconds the run is ended (its sandbox process killed)
    with one line saying so, instead of waiting out the cell's time-out."""
    said = []
    (tmp_path / ".grader-progress").write_text(f"cell ex1_answer|{time.time():.0f}")
    stand_in = subprocess.Popen(["sleep", "120"])  # the sandbox's process
    beat = grading.Heartbeat(tmp_path, "127.0.0.1:1", 180, say=said.append)
    beat.attach(stand_in)
    started = time.monotonic()
    with beat:
        stand_in.wait(timeout=60)
    seconds = time.monotonic() - started
    assert beat.lost and "stopped answering while cell ex1_answer ran" in beat.lost and "broker start" in beat.lost
    assert said == [f"… {beat.lost}"] and seconds < BOUND_S, (said, seconds)


@pytest.mark.broker
def test_a_stuck_cell_gets_progress_lines(shared_broker, tmp_path, monkeypatch):
    """While a cell runs long, the checker prints a line every PROGRESS_EVERY_S naming it (it was silent 230 s)."""
    _, address = shared_broker
    monkeypatch.setattr(grading, "PROGRESS_EVERY_S", 1.0)
    (tmp_path / ".grader-progress").write_text(f"cell 7 (`while True: pass`)|{time.time():.0f}")
    said = []
    with grading.Heartbeat(tmp_path, address, 180, say=said.append):
        time.sleep(6)
    assert said and all("running cell 7 (`while True: pass`) for" in line for line in said), said
    assert "interrupted after 180 s" in said[0]
