"""`make bench` runs sections that live with the tests they measure (tests/docker/measure.py): they must import the
way the bench imports them, from a plain interpreter, not only under pytest (a run once died there on `labrun`)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_bench_imports_its_container_section_outside_pytest():
    done = subprocess.run([sys.executable, "-c", "from bench import container_measure; "
                           "print(callable(container_measure().run))"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr[-1500:]


def test_the_bench_stops_the_lab_broker_it_started_and_only_that_one(monkeypatch):
    """`make bench` starts the lab's broker (streamlab.setup()); it was left running after the bench ended."""
    import bench
    from streamlab.lab import broker

    stopped = []
    monkeypatch.setattr(broker, "stop_broker", lambda kind=None, port=None: stopped.append((kind, port)) or True)
    monkeypatch.setattr(broker, "external_bootstrap", lambda: None)
    monkeypatch.setattr(bench, "_measure", lambda: 0)
    monkeypatch.setattr(broker, "probe", lambda bootstrap, timeout=2.0: "closed")
    assert bench.main() == 0 and stopped == [("kafka", broker.broker_port())]
    stopped.clear()
    monkeypatch.setattr(broker, "probe", lambda bootstrap, timeout=2.0: "kafka")  # the learner's lab was running
    assert bench.main() == 0 and stopped == []
