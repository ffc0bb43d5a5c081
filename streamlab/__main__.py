"""`python -m streamlab setup|jars|broker start|stop|status|reset|cluster start|stop|status|doctor|lab|settings`."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from streamlab.errors import LabError
from streamlab.settings import settings


def _jars(only: list[str] | None = None) -> int:
    from streamlab.lab.jars import setup_all
    from streamlab.lab.session import in_ci

    try:
        for line in setup_all(only):
            print(line)
    except LabError as exc:
        if in_ci() or settings.engine == "connector":
            why = "CI=true" if in_ci() else "STREAMLAB_ENGINE=connector"
            print(f"error: {exc} ({why}: the real stack is required, no fallback)", file=sys.stderr)
            return 1
        print(f"warning: {exc}\nwarning: until then the lab runs on the offline fallback (noida-db and "
              "streamlab's re-creation of the connector; see docs/offline.md).", file=sys.stderr)
    return 0


NBGRADER_SERVER_EXTENSIONS = ("formgrader", "assignment_list", "course_list", "validate_assignment")


def _learner_jupyter_config() -> Path:
    """A Jupyter config folder for the learner's lab: nbgrader's instructor panels switched off.

    They grade from a gradebook the learner does not have; instructors run `jupyter lab` from .venv as usual
    (see grader/README.md).
    """
    import json

    from streamlab.lab.jars import state_dir

    folder = state_dir() / "jupyter-config"
    (folder / "labconfig").mkdir(parents=True, exist_ok=True)
    (folder / "labconfig" / "page_config.json").write_text(
        # The news pop-up asks to reach the internet, which the lab never needs.
        json.dumps({"disabledExtensions": {"@jupyter/nbgrader": True,
                                           "@jupyterlab/apputils-extension:announcements": True}}, indent=1))
    (folder / "jupyter_server_config.json").write_text(json.dumps({"ServerApp": {"jpserver_extensions": {
        f"nbgrader.server_extensions.{name}": False for name in NBGRADER_SERVER_EXTENSIONS}}}, indent=1))
    return folder


def _fresh_workspaces() -> Path:
    """An empty folder for JupyterLab's workspaces, emptied at each `make lab`.

    JupyterLab restores the last session's tabs, and every notebook it reopens starts a kernel (three kernels in the
    cluster lab before anything ran). A new `make lab` opens the course's home alone; within one lab, a reload still
    keeps the tabs.
    """
    import shutil

    from streamlab.lab.jars import state_dir

    folder = state_dir() / "jupyter-workspaces"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _lab(port: int) -> int:
    """Set up, serve JupyterLab, and on exit stop the broker only if this command started it."""
    import signal
    import subprocess

    from streamlab.lab.broker import already_running, external_bootstrap, probe

    if probe(f"127.0.0.1:{port}", timeout=1.0) != "closed":
        print(f"error: port {port} is taken (is a lab already running? `jupyter server list` shows it); "
              f"stop it, or start this one with `make lab LAB_PORT={port + 1}`", file=sys.stderr)
        return 1
    from streamlab.lab import cluster

    on_cluster = cluster.wanted()  # make lab CLUSTER=1: the notebooks' kernels inherit STREAMLAB_CLUSTER=1
    ran_before = already_running(on_cluster)
    if main(["setup"]):
        return 1
    root = Path(__file__).resolve().parent.parent
    venv_bin = str(Path(sys.executable).parent)
    env = dict(os.environ, VIRTUAL_ENV=str(Path(venv_bin).parent),
               # JupyterLab's terminals get the course's environment, so `python -m grader check` works there.
               PATH=venv_bin + os.pathsep + settings.path,
               JUPYTER_CONFIG_DIR=str(_learner_jupyter_config()), JUPYTERLAB_WORKSPACES_DIR=str(_fresh_workspaces()))
    cmd = [sys.executable, "-m", "jupyter", "lab", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
           "--ServerApp.port_retries=0", f"--ServerApp.root_dir={root / 'notebooks'}", "--no-browser"]
    if (root / "notebooks" / "START-HERE.ipynb").is_file():  # the course's home: paths, the module map, progress
        cmd.append("--LabApp.default_url=/lab/tree/START-HERE.ipynb")
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    from streamlab.lab import broker as _broker

    managed = not external_bootstrap() and not on_cluster
    if managed:
        _broker.add_user()  # other labs and kernels on this broker see this lab as a user
        if not ran_before:
            _broker.mark_lab_started()
    proc = subprocess.Popen(cmd, env=env, cwd=root)

    class Ended(Exception):
        """SIGTERM or SIGHUP (a `kill`, a closed terminal): by default Python would die here and leave JupyterLab
        and its kernels running."""

    def ended(signum, _frame):
        raise Ended(signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, ended)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        try:
            return proc.wait(timeout=15)
        except (KeyboardInterrupt, subprocess.TimeoutExpired):
            proc.kill()
            return 130
    except Ended as why:
        proc.terminate()  # JupyterLab shuts its kernels down on SIGTERM, and with them their Spark
        try:
            return proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            return 128 + why.args[0]
    finally:
        if not ran_before and on_cluster:
            print(f"{cluster.stop()} (this lab started the cluster)")
        elif managed:
            _leave_broker()


def _leave_broker() -> None:
    """This lab leaves the broker: stop it when a lab started it and no other lab or kernel uses it any more."""
    import time

    from streamlab.lab import broker

    broker.remove_user()
    # This lab's own kernels end with JupyterLab: give them a few seconds to go before counting who is left.
    deadline = time.monotonic() + 5
    while (others := broker.other_users()) and time.monotonic() < deadline:
        time.sleep(0.2)
    if others:
        print(f"broker left running: {len(others)} other lab(s) or kernel(s) use it (pids "
              f"{', '.join(map(str, others))})")
    elif broker.lab_started() and broker.stop_broker():
        print("broker stopped (a lab started it and no other lab or kernel uses it)")


def main(argv: list[str] | None = None) -> int:
    """Run the streamlab command line."""
    parser = argparse.ArgumentParser(prog="python -m streamlab")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("setup", help="check Java, resolve the Kafka and connector jars, start the broker")
    jars = sub.add_parser("jars", help="resolve the broker's and the connector's jars from Maven Central")
    jars.add_argument("--only", choices=["connector", "broker", "delta"], action="append",
                      help="just these bundles (the Docker image: connector and delta)")
    broker = sub.add_parser("broker", help="start, stop, inspect or reset the lab's Kafka broker")
    broker.add_argument("action", choices=["start", "stop", "status", "reset"])
    cluster = sub.add_parser("cluster", help="start, stop or inspect the lab's cluster: 3 Kafka brokers, a Spark "
                                             "Master and 2 Workers")
    cluster.add_argument("action", choices=["start", "stop", "status"])
    cluster.add_argument("--scram", action="store_true", help="SCRAM-SHA-512 authentication and ACLs (StandardAuthorizer)")
    cluster.add_argument("--admin-password", help="the admin's SCRAM password (with --scram)")
    sub.add_parser("doctor", help="check Java, the broker and Spark, one line each")
    lab = sub.add_parser("lab", help="set up, then serve JupyterLab on the notebooks; Ctrl-C stops what it started")
    lab.add_argument("--port", type=int, default=8888)
    sub.add_parser("settings", help="list every environment variable the course reads: its value now, its default "
                                    "and what it does")
    args = parser.parse_args(argv)
    if args.command == "lab":
        return _lab(args.port)
    if args.command == "settings":
        from streamlab.settings import report

        print(report())
        return 0
    from streamlab.lab.broker import broker_status, ensure_broker, reset_broker, stop_broker
    from streamlab.lab.session import chosen_engine, java_version

    try:
        if args.command in ("setup", "jars"):
            java_version()
            status = _jars(getattr(args, "only", None))
            if status or args.command == "jars":
                return status
            from streamlab.lab.cds_dump import make_broker_archive, make_driver_archive

            if not settings.kafka_bootstrap and chosen_engine()[0] == "connector":
                print(make_broker_archive())  # before the broker starts, so that it starts on it
            print(f"broker ready at {ensure_broker()} ({chosen_engine()[1]})")
            print(make_driver_archive())  # Spark sessions start on archived classes; a failure is one line
        elif args.command == "cluster":
            from streamlab.lab import cluster as lab_cluster

            if args.action == "start":
                print(f"cluster ready: brokers {lab_cluster.start(args.scram, args.admin_password)}, "
                      f"Spark {lab_cluster.master_url()} (UI http://127.0.0.1:{lab_cluster.ports().master_ui})")
            elif args.action == "stop":
                print(lab_cluster.stop())
            else:
                print(lab_cluster.status())
        elif args.command == "broker":
            if args.action == "start":
                print(f"broker ready at {ensure_broker()}")
            elif args.action == "stop":
                print("broker stopped" if stop_broker() else "no broker started by streamlab was running")
            elif args.action == "reset":
                print(reset_broker())
            else:
                print(broker_status())
        else:
            from streamlab.lab.session import engine, spark

            print(f"java: {java_version()}")
            print(f"broker: {ensure_broker()}")
            session = spark()
            print(f"spark: {session.version}, engine: {engine(session)} ({chosen_engine()[1]})")
            session.stop()
    except LabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
