"""Faults a newcomer hits with the lab's own broker and its jars: each one short line that names the fix, fast.

Every test here runs its own Apache Kafka broker on a free port (its folder `.streamlab/kafka-<port>/`), so the
shared lab broker on 9092 is never touched.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from streamlab.lab import broker, jars
from streamlab.errors import LabError

from faultkit import ROOT, cli as _cli, free_port as _free_port, processes_of as _processes_of

pytestmark = pytest.mark.broker


def test_broker_cli_start_status_stop_leaves_no_process(port):
    """`python -m streamlab broker start|status|stop` runs Apache Kafka and leaves no JVM behind."""
    env = {"STREAMLAB_BROKER_PORT": str(port)}
    started, seconds = _cli("broker", "start", env=env)
    assert started.returncode == 0, started.stderr
    assert f"127.0.0.1:{port}" in started.stdout
    folder = broker.data_dir(port, "kafka")
    assert len(_processes_of(folder)) == 1, "expected exactly one broker process"
    assert "kafka.Kafka" in broker._cmdline(int((folder / "broker.pid").read_text()))
    again, seconds = _cli("broker", "start", env=env)
    assert again.returncode == 0 and seconds < 10, "a second start should reuse the running broker"
    status, _ = _cli("broker", "status", env=env)
    assert f"127.0.0.1:{port}: kafka (kafka broker pid" in status.stdout
    stopped, _ = _cli("broker", "stop", env=env)
    assert "broker stopped" in stopped.stdout
    assert not _processes_of(folder), "a broker JVM outlived `broker stop`"
    assert broker.probe(f"127.0.0.1:{port}") == "closed"


def test_a_stale_pid_file_never_kills_another_process(port):
    """A pid file naming some other live process: `broker stop` leaves that process alone."""
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        folder = broker.data_dir(port, "kafka")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "broker.pid").write_text(str(bystander.pid))
        stopped, _ = _cli("broker", "stop", env={"STREAMLAB_BROKER_PORT": str(port)})
        assert "no broker started by streamlab was running" in stopped.stdout
        assert bystander.poll() is None, "`broker stop` killed a process that was not our broker"
    finally:
        bystander.kill()
        bystander.wait()


def test_two_starts_at_once_give_one_broker(port):
    """Two `broker start` at the same moment: both succeed and share one broker, none is orphaned."""
    env = {**os.environ, "KAFKA_BOOTSTRAP": "", "STREAMLAB_BROKER_PORT": str(port)}
    procs = [subprocess.Popen([sys.executable, "-m", "streamlab", "broker", "start"], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=90) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert len(_processes_of(broker.data_dir(port, "kafka"))) == 1, "two starts left two brokers"
    broker.stop_broker(port=port)
    assert not _processes_of(broker.data_dir(port, "kafka"))


def test_an_exit_handler_never_restarts_a_stopped_broker(port):
    """A script that made a topic and stopped the broker: exiting does not start the broker again."""
    script = ("import streamlab\nfrom streamlab.lab import lifecycle as lab\nlab.new_topic('exit')\nstreamlab.stop_broker()\n")
    env = {**os.environ, "KAFKA_BOOTSTRAP": "", "STREAMLAB_BROKER_PORT": str(port)}
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    time.sleep(1)
    assert broker.probe(f"127.0.0.1:{port}") == "closed", "the exit handler started the broker again"
    assert not _processes_of(broker.data_dir(port, "kafka"))


def test_a_broker_killed_hard_restarts_with_its_data(port):
    """kill -9 mid-run (a laptop crash): the next start recovers the log and the records are still there."""
    from streamlab.lab import topics

    address = broker.ensure_broker()
    name = topics.create_topic("survivor", 1, address)
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=address, acks="all")
    for i in range(10):
        producer.send(name, str(i).encode())
    producer.flush()
    producer.close()
    folder = broker.data_dir(port, "kafka")
    os.killpg(int((folder / "broker.pid").read_text()), signal.SIGKILL)
    time.sleep(0.5)
    assert broker.ensure_broker() == address
    assert topics.describe_topic(name, address) == {0: (0, 10)}


def test_a_format_cut_short_is_redone(port):
    """A data folder without meta.properties (a format that was killed) is formatted afresh, not reported."""
    data = broker.data_dir(port, "kafka") / "data"
    data.mkdir(parents=True)
    (data / "bootstrap.checkpoint.tmp").write_bytes(b"\x00\x01half")
    address = broker.ensure_broker()
    assert broker.probe(address) == "kafka"


def test_a_damaged_data_folder_fails_fast_and_names_reset(port):
    """A data folder the broker refuses: the log's own reason and `broker reset` within seconds; reset mends it."""
    broker.ensure_broker()
    broker.stop_broker()
    meta = broker.data_dir(port, "kafka") / "data" / "meta.properties"
    meta.write_text("")  # what a crash in the middle of rewriting it leaves
    started = time.monotonic()
    with pytest.raises(LabError) as failure:
        broker.ensure_broker()
    assert time.monotonic() - started < 15
    message = str(failure.value)
    assert "exited at start" in message and "broker reset" in message and "broker.log" in message
    assert len(message) < 700, "the message should be a few lines at most"
    assert not _processes_of(broker.data_dir(port, "kafka"))
    reset, _ = _cli("broker", "reset", env={"STREAMLAB_BROKER_PORT": str(port)})
    assert reset.returncode == 0, reset.stderr
    assert broker.probe(broker.ensure_broker()) == "kafka"


def test_broker_port_taken_by_something_else(port):
    """A non-Kafka server on the broker port is named as such, with the variable that moves the broker."""

    class Quiet(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        done, seconds = _cli("broker", "start", env={"STREAMLAB_BROKER_PORT": str(server.server_port)})
        assert done.returncode == 1
        assert "not Kafka" in done.stderr and "STREAMLAB_BROKER_PORT=" in done.stderr
        assert "Traceback" not in done.stderr and seconds < 10
    finally:
        server.shutdown()


def _wait_http(url: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return True
        except urllib.error.HTTPError:
            return True  # it answers (403 without the token)
        except OSError:
            time.sleep(0.3)
    return False


@pytest.mark.parametrize("broker_ran_before, stop", [(False, "ctrl-c"), (True, "kill")])
def test_lab_stops_only_a_broker_it_started(port, broker_ran_before, stop):
    """Ctrl-C in `make lab` (or `kill` on it, or closing its terminal) stops JupyterLab, and the broker only when this
    lab started it."""
    if broker_ran_before:
        broker.ensure_broker()
    lab_port = _free_port()
    env = {**os.environ, "KAFKA_BOOTSTRAP": "", "STREAMLAB_BROKER_PORT": str(port)}
    lab = subprocess.Popen([sys.executable, "-m", "streamlab", "lab", "--port", str(lab_port)], env=env, cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        assert _wait_http(f"http://127.0.0.1:{lab_port}/api/status", 180), "JupyterLab did not answer"
        if stop == "ctrl-c":
            os.killpg(lab.pid, signal.SIGINT)  # what Ctrl-C in the terminal does: the whole foreground group
        else:
            lab.terminate()  # `kill <pid>` on the lab's own process: JupyterLab is not told by anyone else
        lab.wait(timeout=40)
    finally:
        if lab.poll() is None:
            os.killpg(lab.pid, signal.SIGKILL)
    assert not _wait_http(f"http://127.0.0.1:{lab_port}/api/status", 1), f"JupyterLab outlived {stop}"
    running = broker.probe(f"127.0.0.1:{port}") == "kafka"
    assert running == broker_ran_before, (
        "the lab stopped a broker it did not start" if broker_ran_before else "the lab left its broker running")


def test_a_second_lab_on_a_taken_port_says_so(port):
    """`make lab` while another lab holds the port: one line naming LAB_PORT, before anything starts."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    try:
        done, seconds = _cli("lab", "--port", str(holder.getsockname()[1]), env={"STREAMLAB_BROKER_PORT": str(port)})
    finally:
        holder.close()
    assert done.returncode == 1 and "is taken" in done.stderr and "LAB_PORT=" in done.stderr
    assert seconds < 10 and broker.probe(f"127.0.0.1:{port}") == "closed"


def test_maven_central_unreachable_at_setup(tmp_path):
    """No route to Maven Central: one line saying so, and what the fallback means; CI fails instead."""
    env = {"STREAMLAB_HOME": str(tmp_path),
           # Every HTTP(S) request through a proxy that is not there: what a laptop without network sees.
           "JAVA_TOOL_OPTIONS": "-Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=9 "
                                "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=9"}
    laptop, seconds = _cli("jars", env={**env, "CI": ""})
    assert laptop.returncode == 0, laptop.stderr
    assert "Could not fetch the spark-kafka" in laptop.stderr and "STREAMLAB_ENGINE=offline" in laptop.stderr
    assert "offline fallback" in laptop.stderr and "Traceback" not in laptop.stderr
    assert seconds < 30
    ci, _ = _cli("jars", env={**env, "CI": "true"})
    assert ci.returncode == 1 and "Could not fetch" in ci.stderr and "the real stack is required" in ci.stderr
    assert "warning:" not in ci.stderr


def test_an_incomplete_jar_cache(tmp_path, monkeypatch):
    """A cache with a jar missing: the fallback says why; where the real stack is required, a LabError does."""
    from streamlab.lab.session import chosen_engine

    bundle = jars.connector_bundle()
    monkeypatch.setenv("STREAMLAB_HOME", str(tmp_path))
    monkeypatch.delenv("KAFKA_BOOTSTRAP", raising=False)
    monkeypatch.delenv("STREAMLAB_ENGINE", raising=False)
    for each in (bundle, jars.broker_bundle()):
        shutil.copytree(jars.ROOT / ".streamlab" / "jars" / each.folder.name, each.folder)
    names = json.loads((bundle.folder / "manifest.json").read_text())["jars"]
    (bundle.folder / names[0]).unlink()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(LabError, match="cache is incomplete.*make setup"):
        chosen_engine()
    monkeypatch.setenv("CI", "")
    kind, why = chosen_engine()
    assert kind == "offline" and "incomplete" in why and "make setup" in why


def test_an_unknown_engine_name_is_refused(monkeypatch):
    """STREAMLAB_ENGINE=conector (a typo) is named, with the two values it takes."""
    from streamlab.lab.session import chosen_engine

    monkeypatch.setenv("STREAMLAB_ENGINE", "conector")
    with pytest.raises(LabError, match="'conector' is not an engine: use connector .* or offline"):
        chosen_engine()


LOST_BROKER_SCRIPT = r'''
import json, sys, time
import streamlab
from streamlab.lab import lifecycle as lab

session, bootstrap = streamlab.setup()
topic = lab.new_topic("lost", 2)
query = (session.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
         .load().writeStream.format("noop").trigger(processingTime="1 second").start())
while not query.recentProgress:
    time.sleep(0.2)
streamlab.stop_broker()
lost = time.monotonic()
while query.isActive and time.monotonic() - lost < 60:
    time.sleep(0.1)
stopped_after = time.monotonic() - lost
time.sleep(0.5)  # the watch prints just after it stops the query
started = time.monotonic()
said = lab.cleanup(session)
print(json.dumps({"active": query.isActive, "stopped_after": stopped_after,
                  "cleanup_s": time.monotonic() - started, "cleanup": said}), flush=True)
session.stop()
'''


@pytest.mark.spark
def test_a_broker_lost_under_a_running_query(port, tmp_path):
    """The broker dies under a query: the query is stopped within seconds with one line that names the fix, and
    cleanup() neither hangs nor starts the broker again."""
    script = tmp_path / "lost.py"
    script.write_text(LOST_BROKER_SCRIPT)
    env = {**os.environ, "KAFKA_BOOTSTRAP": "", "STREAMLAB_BROKER_PORT": str(port)}
    done = subprocess.run([sys.executable, str(script)], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert not result["active"], "the query kept waiting on the lost broker"
    assert result["stopped_after"] < 10, f"the query was stopped {result['stopped_after']:.0f} s after the loss"
    warned = [line for line in done.stderr.splitlines() if "stopped answering" in line]
    assert len(warned) == 1 and "broker start" in warned[0], done.stderr[-2000:]
    assert result["cleanup_s"] < 10 and "not answering" in result["cleanup"]
    assert broker.probe(f"127.0.0.1:{port}") == "closed", "cleanup() started the broker again"
    assert "Traceback" not in done.stderr


def test_a_second_lab_keeps_the_broker_the_first_started(port):
    """Two `make lab` on one broker (the second on LAB_PORT+1): Ctrl-C on the first leaves the broker to the second,
    which stops it when it leaves last (it used to be stopped under the second lab)."""
    env = {**os.environ, "KAFKA_BOOTSTRAP": "", "STREAMLAB_BROKER_PORT": str(port)}
    labs = []
    try:
        for _ in range(2):
            lab_port = _free_port()
            lab = subprocess.Popen([sys.executable, "-m", "streamlab", "lab", "--port", str(lab_port)], env=env,
                                   cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   start_new_session=True)
            labs.append(lab)
            assert _wait_http(f"http://127.0.0.1:{lab_port}/api/status", 180), "JupyterLab did not answer"
        first, second = labs
        os.killpg(first.pid, signal.SIGINT)
        out, _ = first.communicate(timeout=60)
        assert "broker left running: 1 other lab(s) or kernel(s) use it" in out, out[-2000:]
        assert broker.probe(f"127.0.0.1:{port}") == "kafka", "the first lab stopped the broker the second uses"
        os.killpg(second.pid, signal.SIGINT)
        out, _ = second.communicate(timeout=60)
        assert "broker stopped (a lab started it and no other lab or kernel uses it)" in out, out[-2000:]
        assert broker.probe(f"127.0.0.1:{port}") == "closed"
        assert not _processes_of(broker.data_dir(port, "kafka"))
    finally:
        for lab in labs:
            if lab.poll() is None:
                os.killpg(lab.pid, signal.SIGKILL)
