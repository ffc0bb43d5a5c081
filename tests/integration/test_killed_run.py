"""A test run killed with SIGKILL leaves no broker and no temporary folder behind (conftest's guardian)."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from support import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_a_killed_run_stops_the_brokers_it_started(tmp_path):
    from streamlab.lab.broker import data_dir, probe, stop_broker

    port = free_port()
    inner = tmp_path / "tests"
    inner.mkdir()
    (inner / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    shutil.copytree(ROOT / "tests" / "support", inner / "support")  # the guardian conftest starts lives there
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


SPARK_AND_HANG = """
import sys
from streamlab.lab.session import spark
s = spark()
s.range(20000).selectExpr("id % 7 AS k").groupBy("k").count().collect()  # a shuffle: lz4 loads its native library
print(s.sparkContext._jvm.java.lang.System.getProperty("java.io.tmpdir"), flush=True)
sys.stdin.read()
"""


def test_a_killed_kernel_s_spark_leaves_its_temporary_files_in_a_folder_the_next_setup_sweeps(tmp_path, monkeypatch):
    """Spark's driver JVM writes lz4's native library, block manager and shuffle files to java.io.tmpdir; a kernel
    killed with kill -9 used to leave them in /tmp for ever. They are in a folder named after the kernel's pid,
    which the next sweep removes, and nothing of theirs is at the top of the temporary folder."""
    import tempfile

    from streamlab.lab.lifecycle import sweep_orphans

    env = dict(os.environ, TMPDIR=str(tmp_path))
    kernel = subprocess.Popen([sys.executable, "-c", SPARK_AND_HANG], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=env, cwd=ROOT)
    try:
        folder = Path(kernel.stdout.readline().strip())
        assert folder.parent == tmp_path and folder.name.startswith(f"streamlab-jvm-{kernel.pid}-"), folder
        assert any(p.name.startswith("liblz4") for p in folder.iterdir()), sorted(p.name for p in folder.iterdir())
    finally:
        kernel.kill()
        kernel.wait(timeout=30)
    deadline = time.monotonic() + 30  # the JVM sees its stdin close and exits
    while time.monotonic() < deadline and any(str(folder) in " ".join(cmd) for cmd in _jvm_command_lines()):
        time.sleep(0.5)
    assert folder.is_dir(), "kill -9 runs no exit handler: the folder is there until the next sweep"
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    said = sweep_orphans()
    assert not folder.exists() and "1 Spark temporary folder left by kernels that are gone" in said, said
    assert [p.name for p in tmp_path.iterdir()] == [], "the JVM wrote outside its folder"


def _jvm_command_lines():
    import psutil

    for proc in psutil.process_iter(["name", "cmdline", "status"]):
        if proc.info["name"] == "java" and proc.info["status"] != psutil.STATUS_ZOMBIE:
            yield proc.info["cmdline"] or []
