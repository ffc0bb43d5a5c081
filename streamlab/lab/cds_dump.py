"""`streamlab setup`'s part of class-data sharing: it makes the driver's archive (see streamlab/lab/cds.py for why).

A child process (`python -m streamlab.lab.cds_dump driver`) starts a real lab session whose driver JVM is given
-XX:ArchiveClassesAtExit (cds.driver_options, in dump mode), runs a small query, a Kafka batch read and a short
stream, and stops; the JVM writes the classes it loaded as it exits, and the file is renamed to its key's name only
when it is complete. Apart from cds.py so that the lab's floor (cds, machine, jars) imports nothing built on it.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from streamlab.lab import cds
from streamlab.lab.machine import java_binary

DUMP_TIMEOUT_S = cds.DUMP_TIMEOUT_S


def driver_archive() -> Path | None:
    """The driver's archive for the session the lab would start now, if a valid one is there."""
    from streamlab.lab.session import session_conf

    target = cds.archive_path("driver", java_binary(), cds.driver_classpath(session_conf("local[2]")))
    return target if cds.valid(target) else None


def _dump_driver() -> str:
    """In a child process: start a lab session that writes the archive at exit, exercise it, stop it."""
    dumping = cds.dump_driver_here()
    os.environ.pop("STREAMLAB_CLUSTER", None)
    os.environ.pop("SPARK_MASTER", None)
    from pyspark import SparkContext

    from streamlab.lab import session

    spark = session.spark()
    target, tmp = dumping.get("target"), dumping.get("tmp")
    if target is None:
        return "no archive: the session asked for none"
    try:
        _exercise(spark, session)
    finally:  # whatever happened, the JVM ends here (an archive it left unpublished is removed by the parent)
        spark.stop()
        proc = SparkContext._gateway.proc
        proc.stdin.close()  # the gateway JVM exits at EOF on its standard input, writing the archive as it does
        proc.wait(timeout=DUMP_TIMEOUT_S)
    if not cds.publish("driver", tmp, target):
        return "no archive: the JVM wrote none (see .streamlab/spark.log)"
    return f"made {target.name} ({target.stat().st_size >> 20} MB)"


def _exercise(spark, session) -> None:
    """What most notebooks do first: a small query, and on the connector a Kafka batch read and a stream."""
    import tempfile

    spark.range(1000).selectExpr("id % 2 AS k").groupBy("k").count().collect()
    if session.engine(spark) == "connector":
        from streamlab.lab.broker import ensure_broker

        try:  # the connector's classes: a batch read and a stream of a pattern that matches no topic
            bootstrap = ensure_broker()
            read = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                    .option("subscribePattern", "streamlab-cds-none-.*"))
            read.load().count()
            with tempfile.TemporaryDirectory(prefix="streamlab-cds-") as checkpoint:
                query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                         .option("subscribePattern", "streamlab-cds-none-.*").load()
                         .writeStream.format("noop").option("checkpointLocation", checkpoint)
                         .trigger(availableNow=True).start())
                query.awaitTermination(120)
                query.stop()
        except Exception as exc:  # the archive still holds what was loaded so far
            print(f"(the Kafka part was left out: {str(exc).splitlines()[0][:120]})", file=sys.stderr)


def make_driver_archive() -> str:
    """setup's line for the driver's archive: cached, made, or why not (never an error)."""
    if not cds.enabled():
        return "class-data sharing: off (STREAMLAB_CDS=off)"
    try:
        existing = driver_archive()
    except Exception as exc:
        return f"class-data sharing: no archive for Spark's driver ({_why(exc)}); sessions start without it"
    if existing:
        return f"class-data sharing: Spark's driver archive cached ({existing.name})"
    began = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "streamlab.lab.cds_dump", "driver"], capture_output=True,
                              text=True, timeout=DUMP_TIMEOUT_S + 120, stdin=subprocess.DEVNULL)
        last = (done.stdout.strip().splitlines() or [""])[-1]
        if done.returncode != 0 or not last.startswith("made "):
            reason = last or _why_text(done.stderr)
            raise RuntimeError(reason)
    except (OSError, subprocess.TimeoutExpired, RuntimeError) as exc:
        cds.remove_orphans("driver")
        return f"class-data sharing: no archive for Spark's driver ({_why(exc)}); sessions start without it"
    return f"class-data sharing: Spark's driver archive {last} in {time.monotonic() - began:.0f} s"


def make_broker_archive() -> str:
    """setup's line for the brokers' archive: cached, made by a throw-away broker, or why not (never an error)."""
    import shutil
    import tempfile

    if not cds.enabled():
        return "class-data sharing: off for the brokers (STREAMLAB_CDS=off)"
    from streamlab.lab import broker
    from streamlab.lab.jars import broker_bundle
    from streamlab.lab.kraft import log_tail, terminate

    if not broker_bundle().ready():
        return "class-data sharing: no archive for the brokers (their jars are not set up)"
    began = time.monotonic()
    folder = None
    try:
        target = cds.broker_archive_path()
        if cds.valid(target):
            return f"class-data sharing: the brokers' archive cached ({target.name})"
        tmp = cds.temporary_path(target)
        folder = Path(tempfile.mkdtemp(prefix="streamlab-cds-broker-"))
        # Its own folder and a free port: the lab's broker, if one runs, is not touched.
        broker.start_kafka(broker.free_port(), folder, cds_options=[f"-XX:ArchiveClassesAtExit={tmp}"])
        pid = int((folder / "broker.pid").read_text())
        terminate(pid, grace=DUMP_TIMEOUT_S)  # a clean shutdown: the JVM writes the archive as it exits
        if not cds.publish("broker", tmp, target):
            raise RuntimeError(f"the broker wrote no archive ({log_tail(folder)})")
    except Exception as exc:
        cds.remove_orphans("broker")
        return f"class-data sharing: no archive for the brokers ({_why(exc)}); they start without it"
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    return (f"class-data sharing: the brokers' archive made {target.name} ({target.stat().st_size >> 20} MB) "
            f"in {time.monotonic() - began:.0f} s")


def _why(exc: BaseException) -> str:
    return _why_text(str(exc)) if not isinstance(exc, subprocess.TimeoutExpired) else "it took too long"


def _why_text(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return (lines[-1][:200] if lines else "no output")


def main(argv: list[str]) -> int:
    """`python -m streamlab.lab.cds_dump driver`: setup's child that makes the driver's archive."""
    if argv != ["driver"]:
        print("usage: python -m streamlab.lab.cds_dump driver", file=sys.stderr)
        return 2
    from streamlab.lab import cds_dump  # this module under its own name (run as __main__ it is another module object)

    print(cds_dump._dump_driver())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
