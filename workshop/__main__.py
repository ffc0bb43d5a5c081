"""`python -m workshop start|stop|status|approve|collect|grade|regrade|export` — the instructor's commands."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from streamlab.errors import LabError
from streamlab.lab.machine import interrupt_on_termination
from streamlab.settings import settings as lab_settings  # `settings` in this module is a workshop's
from workshop import disks
from workshop.hub import VENV_BIN, Settings, default_root, write_config


def _settings(args) -> Settings:
    root = Path(args.root or default_root()).resolve()
    if (root / "workshop.json").is_file():
        settings = Settings.load(root)
    else:
        settings = Settings(root=str(root))
    for key in ("hub_port", "kafka_port", "instructor", "auth", "mem_limit", "home_limit", "spark_cores",
                "cull_timeout_s"):
        value = getattr(args, key, None)
        if value is not None:
            setattr(settings, key, value)
    return settings


def hub_pid(settings: Settings) -> int | None:
    """The running hub's pid (from its pid file, checked against /proc), else None."""
    try:
        pid = int((Path(settings.root) / "hub" / "hub.pid").read_text())
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return pid if b"jupyterhub" in handle.read() else None
    except (OSError, ValueError):
        return None


def start(settings: Settings, timeout: float = 120.0) -> subprocess.Popen:
    """Start the room's Kafka and JupyterHub (which starts its proxy and the idle culler); return the hub process."""
    import urllib.request

    from workshop import kafka
    from workshop.hub import kept_secret

    if hub_pid(settings):
        raise LabError(f"a hub already runs for {settings.root}: python -m workshop stop")
    try:
        disks.size_of(settings.home_limit)
    except ValueError as exc:
        raise LabError(str(exc)) from None
    config = write_config(settings)
    hub = Path(settings.root) / "hub"
    room = settings.room()
    _owner_only(hub)
    _owner_only(room.folder)
    old = os.umask(0o077)  # the room's Kafka data, logs and secrets: root's only
    try:
        kafka.start(room)
    finally:
        os.umask(old)
    _owner_only(room.folder)
    env = dict(os.environ, STREAMLAB_WORKSHOP_ROOT=settings.root,
               CONFIGPROXY_AUTH_TOKEN=kept_secret(hub / "proxy.token"),
               PATH=f"{VENV_BIN}{os.pathsep}{lab_settings.path}")
    for key in ("STREAMLAB_TOPIC_PREFIX", "STREAMLAB_KAFKA_OPTIONS", "KAFKA_BOOTSTRAP"):
        env.pop(key, None)
    with os.fdopen(os.open(hub / "hub.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as log:
        proc = subprocess.Popen([str(VENV_BIN / "jupyterhub"), "-f", str(config)], cwd=hub, env=env,
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    deadline = time.monotonic() + timeout
    url = f"http://127.0.0.1:{settings.hub_port}/hub/api/"
    while True:
        if proc.poll() is not None:
            stop(settings)  # the proxy it may have started, and the room's Kafka
            raise LabError(f"JupyterHub exited at start: {_tail(hub / 'hub.log')} (log: {hub / 'hub.log'})")
        try:
            urllib.request.urlopen(url, timeout=2).read()
            _owner_only(hub)  # its database and pid files, made by the hub with the default umask
            return proc
        except OSError:
            if time.monotonic() > deadline:
                stop(settings)
                raise LabError(f"JupyterHub did not answer at {url} within {timeout:.0f} s (log: {hub / 'hub.log'})")
            time.sleep(0.3)


def _owner_only(folder: Path) -> None:
    """Make `folder` (the hub's or the room Kafka's state, root's own) and everything in it readable by its owner
    only: folders 0700, files 0600. Links are left alone."""
    import stat

    if not folder.is_dir():  # the room's Kafka before its first start
        return
    for _path, _dirs, files, fd in os.fwalk(folder):
        os.fchmod(fd, 0o700)
        for name in files:
            try:
                if stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    os.chmod(name, 0o600, dir_fd=fd)
            except FileNotFoundError:  # a log rolled over meanwhile
                pass


def _tail(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    return " | ".join(lines[-3:])[-500:]


def stop(settings: Settings, remove_accounts: bool = False) -> list[str]:
    """Stop the hub (it stops every learner's server and its proxy), then the room's Kafka; say what stopped."""
    from streamlab.lab.kraft import terminate
    from workshop import kafka

    done = []
    pid = hub_pid(settings)
    if pid:
        terminate(pid, grace=60)  # SIGTERM: the hub stops the servers (cleanup_servers) and the proxy first
        done.append(f"hub (pid {pid})")
    proxy = Path(settings.root) / "hub" / "proxy.pid"
    try:
        ppid = int(proxy.read_text())
        with open(f"/proc/{ppid}/cmdline", "rb") as handle:
            if b"configurable-http-proxy" in handle.read():
                terminate(ppid)
                done.append(f"proxy (pid {ppid})")
    except (OSError, ValueError):
        pass
    if kafka.stop(settings.room()):
        done.append("the room's Kafka")
    unmounted = disks.detach_all(settings.root)  # the servers are gone: their homes' file systems are free
    if unmounted:
        done.append(f"{len(unmounted)} learners' home file systems (unmounted; their images keep the work)")
    if remove_accounts and os.geteuid() == 0:
        from workshop.hub import remove_accounts as remove

        done += [f"account {name}" for name in remove(settings.root)]
    return done


def approve(settings: Settings, names: list[str]) -> list[str]:
    """Approve native-authenticator sign-ups (what /hub/authorize does in the browser); return who was approved."""
    import sqlite3

    db = sqlite3.connect(Path(settings.root) / "hub" / "jupyterhub.sqlite")
    try:
        approved = []
        for name in names:
            if db.execute("UPDATE users_info SET is_authorized = 1 WHERE username = ?", (name,)).rowcount:
                approved.append(name)
        db.commit()
    finally:
        db.close()
    return approved


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m workshop", description=__doc__)
    parser.add_argument("--root", help="the workshop's folder (default $STREAMLAB_WORKSHOP_ROOT or "
                                       ".workshop)")
    sub = parser.add_subparsers(dest="command", required=True)
    st = sub.add_parser("start", help="start the room's Kafka and JupyterHub on 127.0.0.1; Ctrl-C stops both")
    st.add_argument("--hub-port", type=int)
    st.add_argument("--kafka-port", type=int)
    st.add_argument("--instructor", help="the hub's admin user (default instructor)")
    st.add_argument("--auth", choices=("native", "lti"))
    st.add_argument("--mem-limit", help="memory per learner's server, e.g. 3G")
    st.add_argument("--home-limit", help="disk per learner's home, e.g. 4G (a file system of its own; root only)")
    st.add_argument("--spark-cores", type=int, help="cores per learner's Spark session")
    st.add_argument("--cull-timeout-s", type=int, help="idle seconds before the culler stops a server")
    st.add_argument("--background", action="store_true", help="return once the hub answers")
    sp = sub.add_parser("stop", help="stop the hub, every learner's server and the room's Kafka")
    sp.add_argument("--remove-accounts", action="store_true", help="also delete the sl-* Linux accounts made")
    sub.add_parser("status", help="what runs")
    ap = sub.add_parser("approve", help="approve learners' sign-ups (as /hub/authorize does)")
    ap.add_argument("names", nargs="+")
    co = sub.add_parser("collect", help="copy every learner's notebook of an assignment")
    co.add_argument("assignment")
    gr = sub.add_parser("grade", help="collect and grade an assignment for the whole room; feedback to each home")
    gr.add_argument("assignment")
    gr.add_argument("--workers", type=int, help="notebooks graded at once (default: one per core)")
    gr.add_argument("--timeout", type=int)
    rg = sub.add_parser("regrade", help="grade one learner's notebook again")
    rg.add_argument("assignment")
    rg.add_argument("learner")
    ex = sub.add_parser("export", help="write the grades as a CSV an LMS imports")
    ex.add_argument("--format", choices=("canvas", "moodle"), default="canvas")
    ex.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    settings = _settings(args)
    try:
        if args.command == "start":
            proc = start(settings)
            if settings.auth == "native":
                password = Path(settings.root) / "hub" / "instructor.password"
                print(f"hub      http://127.0.0.1:{settings.hub_port}/  (instructor: log in as "
                      f"{settings.instructor!r} with the password in {password}, change it at "
                      "/hub/change-password; approve learners at /hub/authorize)")
            else:
                print(f"hub      http://127.0.0.1:{settings.hub_port}/  (instructor: launch it from the LMS as "
                      f"{settings.instructor!r})")
            print(f"kafka    {settings.room().bootstrap} (SCRAM, ACLs, quotas)")
            if args.background:
                return 0
            try:
                interrupt_on_termination()
                proc.wait()
            except KeyboardInterrupt:
                pass
            finally:
                print("stopped: " + (", ".join(stop(settings)) or "nothing was running"))
        elif args.command == "stop":
            print("stopped: " + (", ".join(stop(settings, args.remove_accounts)) or "nothing was running"))
        elif args.command == "status":
            from workshop import kafka

            pid = hub_pid(settings)
            print(f"hub      {'pid ' + str(pid) if pid else 'not running'} ({settings.root})")
            print(f"kafka    {'pid ' + str(kafka.running(settings.room())) if kafka.running(settings.room()) else 'not running'}")
        elif args.command == "approve":
            print("approved: " + (", ".join(approve(settings, args.names)) or "nobody (no such sign-up)"))
        elif args.command == "collect":
            from workshop.instructor import collect

            found = collect(settings, args.assignment)
            for name, path in found.items():
                print(f"{name:<20} {path or found.why.get(name, 'no notebook')}")
        elif args.command == "grade":
            from workshop.instructor import grade

            grade(settings, args.assignment, args.workers, args.timeout)
        elif args.command == "regrade":
            from grader.grading import points_text
            from workshop.instructor import regrade

            r = regrade(settings, args.assignment, args.learner, None)
            print(f"{r.student:<16} {r.assignment:<24} "
                  f"{r.error or (points_text(r.score) + ' / ' + points_text(r.max_score))}")
        elif args.command == "export":
            from workshop.instructor import export

            out = args.out or Path(settings.root) / f"grades-{args.format}.csv"
            print(f"wrote {export(settings, out, args.format)}")
    except LabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
