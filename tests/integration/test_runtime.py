"""The runtime a newcomer meets first: the broker's life cycle and a short, actionable message for each mistake."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

import streamlab
from streamlab import broker

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cli(*args, env=None, timeout=30):
    full_env = {**os.environ, **(env or {})}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "streamlab", *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout, cwd=ROOT)
    return done, time.monotonic() - started


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    # a zombie still answers kill(0); read its state
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_broker_cli_start_status_stop_leaves_no_process():
    """`python -m streamlab broker start|status|stop` manages a broker and leaves no process behind."""
    port = str(_free_port())
    env = {"STREAMLAB_BROKER_PORT": port, "KAFKA_BOOTSTRAP": ""}
    started, _ = _cli("broker", "start", env=env)
    assert started.returncode == 0, started.stderr
    assert f"127.0.0.1:{port}" in started.stdout
    pid = int((broker.ROOT / ".streamlab" / f"broker-{port}" / "broker.pid").read_text())
    assert _pid_alive(pid)
    again, seconds = _cli("broker", "start", env=env)
    assert again.returncode == 0 and seconds < 10, "a second start should reuse the running broker"
    status, _ = _cli("broker", "status", env=env)
    assert f"127.0.0.1:{port}: kafka" in status.stdout
    stopped, _ = _cli("broker", "stop", env=env)
    assert "broker stopped" in stopped.stdout
    deadline = time.monotonic() + 5
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _pid_alive(pid), "the broker binary outlived `broker stop`"
    assert broker.probe(f"127.0.0.1:{port}") == "closed"


def test_kafka_bootstrap_pointing_at_nothing(monkeypatch):
    """KAFKA_BOOTSTRAP at a closed port: a one-line error naming the fix within seconds."""
    monkeypatch.setenv("KAFKA_BOOTSTRAP", f"127.0.0.1:{_free_port()}")
    started = time.monotonic()
    with pytest.raises(streamlab.LabError, match="nothing answers there.*unset KAFKA_BOOTSTRAP"):
        streamlab.ensure_broker()
    assert time.monotonic() - started < 10


def test_broker_port_taken_by_something_else(monkeypatch):
    """A non-Kafka server on the broker port is named as such, with the variable that moves the broker."""

    class Quiet(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.delenv("KAFKA_BOOTSTRAP", raising=False)
        monkeypatch.setenv("STREAMLAB_BROKER_PORT", str(server.server_port))
        started = time.monotonic()
        with pytest.raises(streamlab.LabError, match="not Kafka.*STREAMLAB_BROKER_PORT="):
            streamlab.ensure_broker()
        assert time.monotonic() - started < 10
    finally:
        server.shutdown()


def test_missing_broker_binary(monkeypatch, tmp_path):
    """A noida-db install without its binary says to run make setup."""
    import noida_db

    monkeypatch.setattr(noida_db, "__file__", str(tmp_path / "__init__.py"))
    with pytest.raises(streamlab.LabError, match="binary is missing.*make setup"):
        broker._binary()


def test_missing_java_is_one_line(tmp_path):
    """No Java: `python -m streamlab doctor` prints one line naming the fix, no stack trace."""
    done, seconds = _cli("doctor", env={"JAVA_HOME": str(tmp_path / "nowhere")})
    assert done.returncode == 1
    assert "Java was not found" in done.stderr and "JAVA_HOME" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert seconds < 10


def test_old_java_is_refused(tmp_path):
    """Java 11 is refused before Spark starts, with the version found and the one needed."""
    fake = tmp_path / "bin" / "java"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\necho \'openjdk version "11.0.22" 2024-01-16\' >&2\n')
    fake.chmod(0o755)
    done, _ = _cli("doctor", env={"JAVA_HOME": str(tmp_path)})
    assert done.returncode == 1
    assert "needs Java 17 or newer, found Java 11" in done.stderr
    assert "Traceback" not in done.stderr


def test_engine_is_offline_without_the_connector(spark):
    """Without the connector jar, format("kafka") is served by the offline engine, and the setup line says so."""
    assert streamlab.engine(spark) == "offline"
    schema = spark.read.format("kafka").option("kafka.bootstrap.servers", "127.0.0.1:1") \
        .option("subscribe", "x").load().schema
    assert [f.name for f in schema.fields] == [
        "key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]


def test_spark_ui_and_driver_bind_to_loopback(spark):
    """The driver (and the UI when enabled) listen on 127.0.0.1 only."""
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
    assert conf.get("spark.ui.host", "127.0.0.1") == "127.0.0.1"
