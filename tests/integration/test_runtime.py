"""The runtime a newcomer meets first: the broker's life cycle and a short, actionable message for each mistake."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import free_port

import streamlab
from streamlab.lab import broker

ROOT = Path(__file__).resolve().parents[2]


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


def test_kafka_bootstrap_pointing_at_nothing(monkeypatch):
    """KAFKA_BOOTSTRAP at a closed port: a one-line error naming the fix within seconds."""
    monkeypatch.setenv("KAFKA_BOOTSTRAP", f"127.0.0.1:{free_port()}")
    started = time.monotonic()
    with pytest.raises(streamlab.LabError, match="nothing answers at 127.0.0.1:[0-9]+.*unset KAFKA_BOOTSTRAP"):
        streamlab.ensure_broker()
    assert time.monotonic() - started < 10


def test_missing_offline_broker_binary(monkeypatch, tmp_path):
    """A noida-db install without its binary (the offline fallback) says to run make setup."""
    import noida_db

    monkeypatch.setattr(noida_db, "__file__", str(tmp_path / "__init__.py"))
    with pytest.raises(streamlab.LabError, match="binary is missing.*make setup"):
        broker._start_noida(free_port(), tmp_path)


def test_missing_java_is_one_line(tmp_path):
    """No Java: `python -m streamlab doctor` prints one line naming the fix, no stack trace."""
    done, seconds = _cli("doctor", env={"JAVA_HOME": str(tmp_path / "nowhere")})
    assert done.returncode == 1
    assert "JAVA_HOME=" in done.stderr and "holds no Java" in done.stderr
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


def test_the_default_engine_is_spark_s_own_connector(spark, bootstrap):
    """format("kafka") is Spark's KafkaSourceProvider, with no routing, on an Apache Kafka broker."""
    assert streamlab.engine(spark) == "connector"
    assert streamlab.lab.session.chosen_engine()[0] == "connector"
    plan = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap) \
        .option("subscribe", "x").load()._jdf.queryExecution().analyzed().toString()
    assert "KafkaSourceProvider" in plan or "KafkaRelation" in plan, plan[:300]


def test_spark_ui_and_driver_bind_to_loopback(spark):
    """The driver (and the UI when enabled) listen on 127.0.0.1 only."""
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
    assert conf.get("spark.ui.host", "127.0.0.1") == "127.0.0.1"


def test_cleanup_deletes_the_checkpoint_folders_it_made(spark):
    """streamlab.new_checkpoint() folders, used by a query, are gone after cleanup()."""
    from streamlab.lab import lifecycle as lab

    folder = streamlab.new_checkpoint("unit")
    query = spark.readStream.format("rate").load().writeStream.format("noop") \
        .option("checkpointLocation", folder).start()
    query.processAllAvailable()
    assert Path(folder, "offsets").is_dir()
    said = lab.cleanup(spark)
    deleted = re.search(r"(\d+) checkpoint folders", said)
    # Other tests of this process may have left folders of their own: at least this one was deleted and counted.
    assert not Path(folder).exists() and deleted and int(deleted.group(1)) >= 1 and not query.isActive, said


def test_a_failing_catch_up_job_reports_its_cause_in_one_line(spark, topic, bootstrap):
    """Module 5's exercise 3 check shows the catch-up job's error: the cause's line, not Spark's "[STREAM_FAILED]
    Query … terminated" envelope; a query that fails while it runs is reported, not raised into the check."""
    from streamlab.lab.producer import produce
    from streamlab.rates import ratecontrol

    backlog = topic(partitions=1)
    produce(backlog, 10, bootstrap=bootstrap)
    # a cap the connector cannot parse fails in the query's thread, after start()
    run = ratecontrol.catch_up_run(spark, backlog, {"maxOffsetsPerTrigger": "1,000"}, {"availableNow": True},
                                   timeout=60, bootstrap=bootstrap)
    assert run["rows"] == [] and not run["stopped"], run
    assert run["error"].endswith('For input string: "1,000"') and "STREAM_FAILED" not in run["error"], run
    refused = ratecontrol.catch_up_run(spark, backlog, {"minOffsetsPerTrigger": 50, "maxOffsetsPerTrigger": 5},
                                       {"availableNow": True}, timeout=60, bootstrap=bootstrap)
    assert refused["error"] == ("IllegalArgumentException: The value of minOffsetPerTrigger(50) is higher than the "
                                "maxOffsetsPerTrigger(5)."), refused


def test_the_cluster_is_not_started_where_the_lab_uses_another_kafka(bootstrap, tmp_path):
    """A workshop's server, a team's lab or the compose lab sets KAFKA_BOOTSTRAP: module 9's setup(cluster=True) then
    starts no cluster of its own (three brokers and a Spark cluster inside a learner's server) and says why."""
    from streamlab.lab import cluster

    port = "29292"  # a cluster port nobody uses: its folder must not appear
    env = dict(os.environ, KAFKA_BOOTSTRAP=bootstrap, STREAMLAB_CLUSTER_PORT=port, TMPDIR=str(tmp_path))
    env.pop("STREAMLAB_CLUSTER", None)
    done = subprocess.run([sys.executable, "-c", "import streamlab; s, b = streamlab.setup(cluster=True); "
                           "print('MASTER', s.sparkContext.master); streamlab.cleanup(s)"],
                          env=env, capture_output=True, text=True, timeout=300, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    said = [line for line in done.stdout.splitlines() if line.startswith("cluster ")]
    assert len(said) == 1 and "not started" in said[0] and "make lab CLUSTER=1" in said[0], done.stdout
    assert "MASTER local[" in done.stdout, done.stdout
    assert not cluster.folder().with_name(f"cluster-{port}").exists()
