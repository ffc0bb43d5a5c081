"""`make test`: the suite in two lanes at once, because most of its time is waiting, not computing.

The notebook tests grade and run every module (kernels, Spark, demos that wait on trigger intervals); the rest
(faults, browser, integration, unit) mostly wait on brokers, queries and timeouts. One after the other they took
55 minutes on a 2-core machine; side by side the machine's cores are busy instead of idle. Both lanes share the
broker `make setup` started (neither stops it), and nothing else: each pytest has its own temporary folder and
its own guardian, and the tests that start other brokers (noida-db, the cluster) are all in one lane.

Each lane's output goes to its own log, printed whole when the lane ends, with its summary line; the exit status
is the first failing lane's. Ctrl-C or a SIGTERM stops both lanes (their guardians stop what they started).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
APART = ["tests/docker", "tests/cluster", "tests/workshop"]  # their own make targets


def lanes(extra: list[str]) -> dict[str, list[str]]:
    """The two lanes' pytest command lines."""
    notebooks = ["tests/notebooks"]
    rest = [f"--ignore={p}" for p in APART + notebooks] + ["tests"]
    return {"notebooks": PYTEST + ["--durations=15", *extra, *notebooks],
            "the rest": PYTEST + ["--durations=15", *extra, *rest]}


def main(argv: list[str]) -> int:
    """Run the lanes side by side; print each lane's log as it ends; return the first non-zero status."""
    logs = Path(tempfile.mkdtemp(prefix="make-test-lanes-"))  # not streamlab-*: tests count those
    running: dict[str, tuple[subprocess.Popen, Path, float]] = {}
    for name, command in lanes(argv).items():
        log = logs / f"{name.replace(' ', '-')}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        running[name] = (proc, log, time.monotonic())
        print(f"lane {name}: {' '.join(command[2:])}  (log: {log})", flush=True)

    def stop(signum, _frame):
        for proc, _, _ in running.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    status = 0
    pending = dict(running)
    began, said = time.monotonic(), time.monotonic()
    while pending:
        if time.monotonic() - said >= 300:  # a sign of life for CI: the logs come whole at the end of each lane
            said = time.monotonic()
            print(f"… {(said - began) / 60:.0f} min: still running: {', '.join(pending)}", flush=True)
        for name, (proc, log, started) in list(pending.items()):
            if proc.poll() is None:
                continue
            del pending[name]
            print(f"\n======== lane {name}: exit {proc.returncode} after {time.monotonic() - started:.0f} s ========",
                  flush=True)
            sys.stdout.write(log.read_text(errors="replace"))
            sys.stdout.flush()
            status = status or proc.returncode
        time.sleep(1)
    for log in logs.iterdir():
        log.unlink()
    logs.rmdir()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
