"""make test's two lanes (tests/lanes.py): every suite runs in exactly one lane, and lane 2 shares no broker or
cluster port with lane 1 (a shared cluster folder once left a whole cluster running after a green run)."""
from __future__ import annotations

import sys
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
