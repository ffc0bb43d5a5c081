"""make test's two lanes (tests/lanes.py): every suite runs in exactly one lane, and lane 2 shares no broker or
cluster port with lane 1 (a shared cluster folder once left a whole cluster running after a green run)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
import lanes  # noqa: E402


def test_every_suite_runs_in_exactly_one_lane():
    """Every test file runs in one lane: lane 2 runs its paths (folders or files), lane 1 ignores exactly those."""
    files = {f.relative_to(ROOT) for f in (ROOT / "tests").rglob("test_*.py")}
    second_paths = [Path(path) for path, _ in lanes.lane_2()]
    ignored = [Path(arg.split("=", 1)[1]) for arg in lanes.lane_1() if arg.startswith("--ignore=")]
    assert ignored == second_paths

    def under(path: Path) -> set:
        return {f for f in files if f == path or path in f.parents}

    second = set().union(*(under(path) for path in second_paths))
    first = files - second
    assert all(under(path) for path in second_paths), "lane 2 names a path with no test file"
    for suite in ("unit", "integration", "faults", "notebooks"):
        assert under(Path("tests") / suite) <= first, f"tests/{suite} is not in lane 1"
    assert first and second


def test_lane_2_has_broker_and_cluster_ports_of_its_own(monkeypatch):
    from streamlab.lab import cluster
    from streamlab.lab.broker import broker_port

    for name in ("STREAMLAB_BROKER_PORT", "STREAMLAB_CLUSTER_PORT", "STREAMLAB_SPARK_PORT", "STREAMLAB_SPARK_UI_PORT"):
        monkeypatch.delenv(name, raising=False)
    first = cluster.ports()
    one = {broker_port(), broker_port() + 100, *first.brokers, *first.controllers, first.master, first.master_ui}
    env = lanes._lane_2_env()
    for name in ("STREAMLAB_BROKER_PORT", "STREAMLAB_CLUSTER_PORT", "STREAMLAB_SPARK_PORT", "STREAMLAB_SPARK_UI_PORT"):
        monkeypatch.setenv(name, env[name])
    second = cluster.ports()
    two = {broker_port(), *second.brokers, *second.controllers, second.master, second.master_ui}
    assert not one & two, one & two
    assert cluster.folder() != ROOT / ".streamlab" / f"cluster-{first.brokers[0]}"


def test_each_suite_writes_its_test_times_to_a_file_of_its_own():
    """Per-test times survive the run (test-results/junit/), one file per pytest process, none overwriting another."""
    commands = [lanes.lane_1()] + [command for _, command in lanes.lane_2()]
    files = [arg.split("=", 1)[1] for command in commands for arg in command if arg.startswith("--junitxml=")]
    assert len(files) == len(commands) == len(set(files))
    assert all(Path(f).parent == lanes.JUNIT for f in files)


def test_the_cpu_line_reads_what_the_machine_did():
    """The run's last line says how busy the CPUs were: near 100 % only while something kept them busy."""
    before = lanes.cpu_times()
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    after = lanes.cpu_times()
    assert after[0] > before[0] and after[1] > before[1]
    line = lanes.busy_line(before, after)
    assert line.startswith("CPU use: ") and " % of " in line, line
    assert lanes.busy_line((5.0, 10.0), (15.0, 30.0)).startswith("CPU use: 50 % ")
    assert "not measured" in lanes.busy_line((0.0, 0.0), (0.0, 0.0))
