"""`make bench`'s workshop section: a hub in a temporary folder, measured, then stopped.

Hub start (the room's Kafka: format, start, quotas; then JupyterHub with its proxy and culler), one learner's first
login to their first live batch (sign-up, approval, login, server start, setup cell, a capped read on the room's
broker), the memory of a learner's server with and without Spark, and grading throughput (`grader grade` on the
room's hand-ins, one worker per core). From those: the machine a room of 50 needs, as docs/workshop.md states it.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

ROOM = 50


def _tree_rss(pid: int) -> int:
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for each in procs:
        try:
            total += each.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def _tree_cpu(pid: int) -> float:
    import psutil

    total = 0.0
    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    for each in procs:
        try:
            times = each.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
        except psutil.NoSuchProcess:
            pass
    return total


def _server_pid(root: Path, name: str) -> int | None:
    import psutil

    home = str(root / "home" / name)
    for proc in psutil.process_iter(["pid", "cmdline", "cwd"]):
        try:
            if "jupyterhub-singleuser" in " ".join(proc.info["cmdline"] or []) and proc.info["cwd"] == home:
                return proc.info["pid"]
        except (psutil.Error, TypeError):
            continue
    return None


FIRST_READ = ("from streamlab.lab.producer import produce\n"
              "t = streamlab.new_topic('bench', partitions=3)\n"
              "produce(t, 3_000)\n"
              "q = (spark.readStream.format('kafka').option('kafka.bootstrap.servers', bootstrap)\n"
              "     .option('subscribe', t).option('startingOffsets', 'earliest').option('maxOffsetsPerTrigger', 500)\n"
              "     .load().writeStream.format('noop').trigger(availableNow=True).start())\n"
              "q.awaitTermination()\n"
              "print(len([p for p in q.recentProgress if p['numInputRows']]))")


def workshop_section() -> None:
    """Measure and print the workshop figures (STREAMLAB_BENCH_WORKSHOP=0 skips them)."""
    from streamlab.settings import Settings as LabSettings
    from streamlab.settings import settings as lab_settings  # `settings` below is the workshop's

    if not lab_settings.bench_workshop:
        print("workshop: skipped (STREAMLAB_BENCH_WORKSHOP=0)")
        return
    import logging

    from streamlab.lab.broker import free_port
    from workshop import instructor, kafka

    from workshop.__main__ import approve, start, stop
    from workshop.client import Learner
    from workshop.hub import Settings

    # The room's SCRAM runs over plaintext on 127.0.0.1 (docs/workshop.md says why): kafka-python's warning on every
    # login is not a figure.
    logging.getLogger("kafka.net.sasl.scram").setLevel(logging.ERROR)

    root = Path(tempfile.mkdtemp(prefix="streamlab-bench-workshop-"))
    settings = Settings(root=str(root), hub_port=free_port(), proxy_api_port=free_port(), hub_api_port=free_port(),
                        kafka_port=free_port(), controller_port=free_port(), instructor="teacher",
                        spark_cores=1, spark_memory="512m")
    saved = LabSettings.workshop_root.raw()
    os.environ["STREAMLAB_WORKSHOP_ROOT"] = str(root)
    try:
        began = time.perf_counter()
        kafka.start(settings.room())
        kafka_s = time.perf_counter() - began
        began = time.perf_counter()
        start(settings)
        hub_s = time.perf_counter() - began
        print(f"workshop: the room's Kafka (format with the admin's SCRAM credential, start, quotas) {kafka_s:.1f} s, "
              f"then JupyterHub (proxy, culler) {hub_s:.1f} s")
        url = f"http://127.0.0.1:{settings.hub_port}"
        learners = {n: Learner(url, n, f"{n}-password-1") for n in ("ada", "bob", "cy", "dee")}
        for learner in learners.values():
            learner.sign_up()
        approve(settings, list(learners))
        ada = learners["ada"]
        began = time.perf_counter()
        ada.log_in()
        server_s = ada.start_server()
        idle_rss = _tree_rss(_server_pid(root, "ada") or 0)
        kernel = ada.kernel()
        kernel.text("import streamlab\nspark, bootstrap = streamlab.setup()", timeout=600)
        batches = kernel.text(FIRST_READ, timeout=600).strip()
        first_batch_s = time.perf_counter() - began
        pid = _server_pid(root, "ada") or 0
        lesson_rss, lesson_cpu = _tree_rss(pid), _tree_cpu(pid)
        print(f"a learner's first login to first live batch: {first_batch_s:.1f} s (server ready in {server_s:.1f} s; "
              f"{batches} capped batches read on the room's broker)")
        print(f"memory of a learner's server: {idle_rss / 2**20:,.0f} MiB before Spark, {lesson_rss / 2**20:,.0f} MiB "
              f"with the lesson's Spark session (1 core, 512 MiB heap); CPU to the first batch {lesson_cpu:.0f} s")
        kernel.text("print(streamlab.cleanup(spark))")
        kernel.close()
        from grader.cohort import sample_answers

        students = sample_answers()
        for name, learner in learners.items():
            if name != "ada":
                learner.log_in()
                learner.start_server()
            answers = students["alice" if name in ("ada", "cy") else "bob"]
            path = "notebooks/00-setup/00-setup.ipynb"
            notebook = learner.contents(path)["content"]
            for cell in notebook["cells"]:
                gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                if gid in answers:
                    cell["source"] = cell["source"].replace("# YOUR CODE HERE\npass", answers[gid])
            learner.save_notebook(path, notebook)
        cores = os.cpu_count() or 2
        began = time.perf_counter()
        results = instructor.grade(settings, "00-setup", workers=cores, quiet=True)
        grade_s = time.perf_counter() - began
        per_minute = len(results) * 60 / grade_s
        print(f"grading {len(results)} hand-ins of 00-setup with {cores} workers on {cores} cores: {grade_s:.0f} s, "
              f"{per_minute:.1f} submissions per minute")
        _sizing(lesson_rss, lesson_cpu, first_batch_s, per_minute, cores)
    finally:
        print("workshop: stopped " + (", ".join(stop(settings, remove_accounts=True)) or "nothing"))
        if saved is None:
            os.environ.pop("STREAMLAB_WORKSHOP_ROOT", None)
        else:
            os.environ["STREAMLAB_WORKSHOP_ROOT"] = saved
        shutil.rmtree(root, ignore_errors=True)


def _sizing(server_rss: int, lesson_cpu: float, first_batch_s: float, per_minute: float, cores: int) -> None:
    """The machine a room of 50 needs, from this run's figures."""
    broker_and_hub = 1.0  # GiB: the room's broker (512 MiB heap) and JupyterHub with its proxy
    memory = ROOM * server_rss / 2**30 * 1.25 + broker_and_hub  # 25% headroom: kernels grow during a lesson
    # Everyone starts the lesson within ~5 minutes: the CPU seconds of one first batch, 50 times, in 300 s.
    busy_cores = ROOM * lesson_cpu / 300
    print(f"a room of {ROOM}: about {memory:.0f} GiB of memory ({ROOM} × {server_rss / 2**30:.2f} GiB + 25% + "
          f"{broker_and_hub:.0f} GiB for Kafka and the hub) and {max(8, round(busy_cores)):d} cores for everyone "
          f"to start the lesson within 5 minutes ({ROOM} × {lesson_cpu:.0f} CPU-s / 300 s); grading the room: "
          f"{ROOM / per_minute * cores / max(cores, 16):.0f} min on 16 cores at this rate per core")
