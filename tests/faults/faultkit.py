"""Helpers of the fault suite (imported by its conftest and tests)."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from streamlab.lab import broker
from support import wait_until  # noqa: F401  (the fault tests import it from here)

ROOT = Path(__file__).resolve().parents[2]
PORTS = range(19800, 19900)


def free_port() -> int:
    """A port in 19800-19899 that nothing listens on and no broker folder of ours names."""
    for number in PORTS:
        if broker.data_dir(number, "kafka").exists():
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", number))
            except OSError:
                continue
        return number
    raise RuntimeError("no free port in 19800-19899")


def processes_of(folder: Path) -> list[int]:
    """Live processes whose command line names this broker folder (ours, whatever the pid file says)."""
    return broker._processes_naming(folder)


def cli(*args, env=None, timeout=90):
    """`python -m streamlab ARGS`: (the finished process, seconds it took)."""
    full_env = {**os.environ, "KAFKA_BOOTSTRAP": "", **(env or {})}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "streamlab", *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout, cwd=ROOT, stdin=subprocess.DEVNULL)
    return done, time.monotonic() - started


def wipe(number: int) -> None:
    """Stop whatever broker of ours runs on `number` and delete its folder."""
    folder = broker.data_dir(number, "kafka")
    # A lab killed in the middle of its setup may still be launching the broker: look again for a few seconds.
    deadline, quiet = time.monotonic() + 10, 0
    while quiet < 3 and time.monotonic() < deadline:
        broker.stop_broker(port=number)
        found = processes_of(folder)
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        quiet = 0 if found else quiet + 1
        time.sleep(0.5)
    shutil.rmtree(folder, ignore_errors=True)


def kill_broker(port: int) -> None:
    """kill -9 our broker on `port` (a crash), and wait until nothing answers there."""
    pid = int((broker.data_dir(port, "kafka") / "broker.pid").read_text())
    os.killpg(pid, signal.SIGKILL)
    wait_until(lambda: broker.probe(f"127.0.0.1:{port}", timeout=0.5) == "closed", 10)
