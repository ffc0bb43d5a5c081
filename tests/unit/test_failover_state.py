"""Module 9's FailoverDemo on the live demo's shared parts (issue 34), without the cluster: its batches, events,
query, clock and stop are a DemoState's, its length where nobody watches follows the live demos' cap, and the
kernel's exit (teardown's "live demos") stops a demo a learner left running, as it stops a LiveDemo."""
from __future__ import annotations

import threading
import time

import pytest

from streamlab.delivery import failover
from streamlab.delivery.failover import FailoverDemo, capped
from streamlab.demo.loop import running_demos, stop_all
from streamlab.demo.settings import KnobError
from streamlab.demo.state import DemoState


def _demo(**options) -> FailoverDemo:
    return FailoverDemo(None, "127.0.0.1:1", partitions=1, show=False, **options)


def test_its_batches_events_and_query_are_its_demo_state_s():
    demo = _demo()
    assert isinstance(demo.state, DemoState)
    demo.batches.append({"batch": 0})
    demo.events.append("  1.0 s  armed")
    assert demo.state.history == [{"batch": 0}] and demo.state.events == ["  1.0 s  armed"]
    demo.query = "q"
    assert demo.state.query == "q"
    demo.batches = []  # a test (or a learner) may set them too
    assert demo.state.history == [] and _demo().batches == [], "each demo has its own state"


def test_the_clock_counts_from_start_and_the_demo_s_time_from_its_first_batch():
    demo = _demo()
    assert demo.now() == 0.0 and demo._since_first_batch() == 0.0, "not started: no time"
    demo.state.t0 = time.monotonic() - 30
    assert 29.9 < demo.now() < 31 and demo._since_first_batch() == 0.0, "no batch yet: the demo's time waits"
    demo.state.live_from = 20.0
    assert 9.9 < demo._since_first_batch() < 11
    demo._event("kill -9 broker 2, leader of partition 0")
    assert demo.events[-1].endswith("s  kill -9 broker 2, leader of partition 0") and demo.events[-1].startswith(" 30.")


def test_nobody_watches_its_script_then_a_few_seconds(monkeypatch):
    monkeypatch.delenv("STREAMLAB_DEMO_SECONDS", raising=False)
    monkeypatch.delenv("STREAMLAB_GRADING", raising=False)
    assert capped(45, [10, 25]) == 45, "a learner's demo runs its full length"
    monkeypatch.setenv("STREAMLAB_GRADING", "1")
    assert capped(45, [10, 25]) == 37 and capped(60, []) == 25 and capped(20, [10]) == 20
    assert _demo(seconds=45, script=[(10, "executor"), (25, "leader")]).seconds == 37
    monkeypatch.delenv("STREAMLAB_GRADING")
    monkeypatch.setenv("STREAMLAB_DEMO_SECONDS", "5")
    assert capped(45, [10, 25]) == 30 and capped(45, []) == 5
    monkeypatch.setenv("STREAMLAB_DEMO_SECONDS", "soon")
    with pytest.raises(KnobError, match="STREAMLAB_DEMO_SECONDS"):
        _demo(seconds=45)


class _Query:
    def __init__(self):
        self.isActive, self.stops = True, 0

    def stop(self):
        self.isActive, self.stops = False, self.stops + 1


def test_the_kernel_s_exit_stops_a_demo_left_running_once_and_its_script_player(monkeypatch):
    demo = _demo(script=[(5, "executor")])
    demo.query = _Query()
    demo.state.t0 = time.monotonic()
    restarted = []
    monkeypatch.setattr(failover.cluster, "start_node", restarted.append)
    demo.killed_nodes = [2]  # a broker killed and not back yet
    demo._player = threading.Thread(target=demo._play, daemon=True)
    demo._player.start()
    running_demos.add(demo)
    stop_all()  # what teardown's "live demos" runs
    demo._player.join(2)
    assert not demo._player.is_alive(), "the script player ends when the demo is stopped"
    assert demo.state.done.is_set() and demo.query.stops == 1
    assert restarted == [2] and demo.killed_nodes == [], "the broker it killed is started again"
    assert demo not in running_demos
    demo.stop()
    assert demo.query.stops == 1 and restarted == [2], "a second stop does nothing more"
