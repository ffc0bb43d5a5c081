"""`make test`: the whole suite in two lanes side by side, so that it fits the time CI gives it.

Most of the suite waits: for trigger intervals, for demos that run for seconds, for a container image to build,
for a killed broker to come back. Lane 1 is the course itself on the lab's broker (unit, integration, faults,
notebooks). Lane 2 is the three labs that bring their own engines, one after another: the compose lab on podman,
the cluster lab (three brokers, a Spark Master and two Workers) and the workshop hub, and then the browser tests,
which serve a JupyterLab of their own (there to balance the lanes: once the hub and the browser's checks graded a
fixture instead of 00-setup, lane 2 had about nine minutes to spare, and the learner's loop moved here from lane 1),
and, beside them (ALONGSIDE), the broker outage of more than two minutes (tests/outage), the incident round's faults
(tests/incidents) and the Delta crash lab.
Lane 2 runs on a broker port and cluster ports of their own (each + 300), so that neither lane ever stops a broker
or a cluster the other uses.

Lane 1's output shows live; lane 2 prints one line per suite as it ends, then its full output at the end. Each
suite's per-test times go to test-results/junit/ (JUnit XML), and the last line says how busy the machine's CPUs
were: on a saturated machine only less work, not another lane, shortens the run. The exit code is the worst of all.
Ctrl-C or a SIGTERM reaches every pytest process, whose own guardians stop what each started.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
LANE_2 = ["tests/docker", "tests/cluster", "tests/workshop", "tests/browser", "tests/outage", "tests/incidents",
          "tests/lakehouse"]
# Lane 2's suites that run one after another beside lane 2's others, not after them: a broker outage of minutes and
# the incident round's faults mostly wait; the Delta crash lab (a cold driver process per SIGKILL) does not, but at
# about 9 minutes it would tip lane 1 over the budget.
ALONGSIDE = ["tests/outage", "tests/incidents", "tests/lakehouse"]
LANE_2_OFFSET = 300  # lane 2's broker and cluster ports: lane 1's + 300 (its cluster: 9292..9297)
JUNIT = ROOT / "test-results" / "junit"


def _junit(name: str) -> str:
    return f"--junitxml={JUNIT / name}.xml"


def lane_1() -> list[str]:
    """The course on the lab's broker: everything except lane 2's."""
    return PYTEST + ["--durations=30", _junit("lane-1")] + [f"--ignore={path}" for path in LANE_2]


def lane_2() -> list[tuple[str, list[str]]]:
    """The labs with their own engines, then the other browser tests, in the order they run."""
    return [(path, PYTEST + ["--durations=10", _junit(Path(path).name), path]) for path in LANE_2]


def cpu_times() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs so far, from /proc/stat; (0, 0) where there is none."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0.0, 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return float(sum(fields[:8]) - idle), float(sum(fields[:8]))


def busy_line(before: tuple[float, float], after: tuple[float, float]) -> str:
    """How busy the CPUs were between two cpu_times() readings, as one line."""
    total = after[1] - before[1]
    if total <= 0:
        return "CPU use: not measured (no /proc/stat)"
    return f"CPU use: {100 * (after[0] - before[0]) / total:.0f} % of {os.cpu_count()} CPUs over the run"


def _lane_2_env() -> dict:
    from streamlab.lab.broker import broker_port
    from streamlab.lab.cluster import ports

    # A cluster of its own too (its folder is named by its first port): lane 1's module 9 starts the lab's
    # cluster, and a fixture that found lane 2's folder there took it for a cluster it must not stop (a rehearsal
    # left a Master, two Workers and three brokers running).
    cluster = ports()
    env = dict(os.environ, STREAMLAB_BROKER_PORT=str(broker_port() + LANE_2_OFFSET),
               STREAMLAB_CLUSTER_PORT=str(cluster.brokers[0] + LANE_2_OFFSET),
               STREAMLAB_SPARK_PORT=str(cluster.master + LANE_2_OFFSET),
               STREAMLAB_SPARK_UI_PORT=str(cluster.master_ui + LANE_2_OFFSET))
    env.pop("KAFKA_BOOTSTRAP", None)
    return env


def main() -> int:
    sys.path.insert(0, str(ROOT))
    logs = ROOT / "test-results" / "lane-2"
    logs.mkdir(parents=True, exist_ok=True)
    env = _lane_2_env()

    def log_of(path: str) -> Path:
        return logs / (Path(path).name + ".log")

    children: list[subprocess.Popen] = []
    stopping = threading.Event()
    codes: dict[str, int] = {}

    def start(command, **kw) -> subprocess.Popen:
        child = subprocess.Popen(command, cwd=ROOT, start_new_session=True, **kw)
        children.append(child)
        return child

    def forward(signum, _frame):
        stopping.set()
        for child in children:
            try:
                os.killpg(child.pid, signum)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)

    lane_2_ended: list[float] = []

    def run_lane_2(alongside: bool = False):
        for path, command in lane_2():
            if (path in ALONGSIDE) != alongside:
                continue
            if stopping.is_set():
                return
            log = log_of(path)
            began = time.monotonic()
            with open(log, "w") as out:
                codes[path] = start(command, env=env, stdout=out, stderr=subprocess.STDOUT).wait()
            last = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
            print(f"\n[lane 2] {path}: {last[-1] if last else 'no output'} "
                  f"({time.monotonic() - began:.0f} s)", flush=True)

    print(f"[lane 2] {', '.join(LANE_2)} run side by side with the rest (broker port "
          f"{env['STREAMLAB_BROKER_PORT']}); their output follows at the end", flush=True)
    start_all, cpu_before = time.monotonic(), cpu_times()
    second = threading.Thread(target=lambda: (run_lane_2(), lane_2_ended.append(time.monotonic())), name="lane-2")
    second.start()
    beside = threading.Thread(target=run_lane_2, args=(True,), name="lane-2-alongside")
    beside.start()
    codes["lane 1"] = start(lane_1()).wait()
    took = {"lane 1": time.monotonic() - start_all}
    for thread in (second, beside):
        while thread.is_alive():
            thread.join(timeout=1)
    took["lane 2"] = (lane_2_ended[0] if lane_2_ended else time.monotonic()) - start_all  # without the ALONGSIDE
    for path in LANE_2:
        log = log_of(path)
        if log.exists():
            print(f"\n==================== lane 2: {path} ====================", flush=True)
            print(log.read_text(errors="replace"), end="", flush=True)
    failed = {name: code for name, code in codes.items() if code}
    print(f"\nlanes: {', '.join(f'{name} exit {code}' for name, code in codes.items())}", flush=True)
    print("lane times: " + ", ".join(f"{name} {seconds // 60:.0f} min {seconds % 60:.0f} s"
                                     for name, seconds in took.items()), flush=True)
    print(busy_line(cpu_before, cpu_times()), flush=True)
    if len(codes) < 1 + len(LANE_2):  # a suite of lane 2 never ran (stopped)
        return max([1, *failed.values()])
    return max(failed.values(), default=0)


if __name__ == "__main__":
    sys.exit(main())
