"""A test run killed with SIGKILL leaves no broker and no temporary folder behind (conftest's guardian)."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_killed_run_stops_the_brokers_it_started(tmp_path):
    from streamlab.lab.broker import data_dir, probe, stop_broker

    port = _free_port()
    inner = tmp_path / "tests"
    inner.mkdir()
    (inner / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (inner / "test_hold.py").write_text(textwrap.dedent("""
        import time
        def test_hold(bootstrap, tmp_path):
            (tmp_path / "marker").write_text(str(tmp_path))
            print("READY", tmp_path, flush=True)
            time.sleep(600)
    """))
    env = {**os.environ, "STREAMLAB_BROKER_PORT": str(port)}
    env.pop("KAFKA_BOOTSTRAP", None)
    basetemp = tmp_path / "basetemp"
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(inner),
                            f"--basetemp={basetemp}", "--rootdir", str(tmp_path)],
                           cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        for line in run.stdout:
            if "READY" in line or time.monotonic() > deadline:
                break
        assert probe(f"127.0.0.1:{port}") == "kafka", "the inner run did not start its broker"
        run.send_signal(signal.SIGKILL)
        run.wait(10)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (probe(f"127.0.0.1:{port}") == "kafka" or basetemp.exists()):
            time.sleep(0.5)
        assert probe(f"127.0.0.1:{port}") != "kafka", "a killed test run left its Kafka broker running"
        assert not basetemp.exists(), f"a killed test run left its temporary folder {basetemp}"
    finally:
        if run.poll() is None:
            run.kill()
        stop_broker("kafka", port)
        shutil.rmtree(data_dir(port, "kafka"), ignore_errors=True)
