"""Calls for use inside a notebook (check, check_here) and the timing helper `make bench` uses."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from .course import RELEASE, ROOT


def _find(target: str | os.PathLike | None) -> Path:
    if target is None:
        from streamlab.settings import settings

        session = settings.jupyter_session  # set by jupyter_server: the notebook's path
        if session and Path(session).suffix == ".ipynb" and Path(session).is_file():
            return Path(session)
        here = Path.cwd() / f"{Path.cwd().name}.ipynb"  # kernels run in the notebook's folder, notebooks/<id>/
        if here.is_file():
            return here
        raise ValueError("cannot tell which notebook is running: call grader.check('<assignment-id>') instead")
    path = Path(target)
    if path.suffix == ".ipynb" or path.exists():
        return path
    return RELEASE / str(target) / f"{target}.ipynb"


def _target_or_none(target: str | os.PathLike | None, call: str) -> Path | None:
    """The notebook to grade, or None (said in one line) inside a grading run or when it cannot be found."""
    from streamlab.settings import settings

    if settings.grading:
        print(f"{call} is skipped while the grader runs this notebook")
        return None
    try:
        return _find(target)
    except ValueError as exc:
        print(f"⚠ {exc}")
        return None


def check(target: str | os.PathLike | None = None, timeout: int | None = None,
          source: str | os.PathLike | None = None, _announce: bool = True) -> int | None:
    """Grade a saved notebook (an assignment id, a path, or the running notebook) in a subprocess; print the table."""
    path = _target_or_none(target, "check()")
    if path is None:
        return None
    if _announce:
        print(f"Grading the last saved version of {path.name} (save first: Ctrl-S) …", flush=True)
    else:
        print("Grading it with the hidden tests in a fresh kernel (a minute or two) …", flush=True)
    from streamlab.settings import settings

    if settings.check_url and source is None:
        return check_on_hub(path, settings.check_url)
    release_cluster_cores(path.stem)
    cmd = [sys.executable, "-m", "grader"] + (["--source", str(source)] if source else []) + ["check", str(path)]
    if timeout:
        cmd += ["--timeout", str(timeout)]
    env = {**os.environ, "STREAMLAB_JUST_SAVED": "1"} if not _announce else None
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    # The feedback page is written next to the notebook: name it as the file browser shows it.
    shown = done.stdout.replace(f"feedback: {path.resolve().parent}/", f"feedback: {path.parent.name}/")
    print(shown.split("\n", 1)[-1].rstrip() if done.returncode == 0 else "", end="")
    if done.returncode != 0:
        print("⚠ " + (done.stderr.strip().splitlines() or ["the grader failed"])[-1].removeprefix("error: "))
    else:
        print()
    return done.returncode


def release_cluster_cores(aid: str) -> bool:
    """Before grading an assignment the grader feeds from the lab's cluster (grading.CLUSTER_INPUTS): stop this
    kernel's Spark session there, whose two executors hold every core the cluster has, so the grader's own Spark
    application can run; one line says so. True when it stopped one."""
    from streamlab.lab import cluster

    from .grading import CLUSTER_INPUTS

    if aid not in CLUSTER_INPUTS or not cluster.wanted():
        return False
    from pyspark.sql import SparkSession

    # A click runs on one of the kernel's other threads (JupyterLab's subshells), where getActiveSession() is None
    active = SparkSession.getActiveSession() or SparkSession._instantiatedSession
    if active is None or active.sparkContext.master != cluster.master_url():
        return False
    active.stop()
    print("○ this kernel's Spark session on the cluster is stopped, so the grader can use the cluster's cores: run "
          "the Setup cell again to go on", flush=True)
    return True


HUB_CHECK_WAIT_S = 1800  # a room's checks queue for the hub's few grading slots


def check_on_hub(path: Path, url: str) -> int:
    """Check my work on a workshop's hub: the hub grades the saved notebook (the hidden tests stay with it, out of
    this server's sight) in the quiz rounds it keeps for her and answers the table; the score goes into this
    learner's progress as a local check's, the hub's quiz record into her quiz.json (what her cells show)."""
    from types import SimpleNamespace

    from streamlab.lab import hubservice

    aid = path.stem
    if path.resolve() != (Path.home() / "notebooks" / aid / f"{aid}.ipynb").resolve():
        print(f"⚠ The hub grades notebooks/{aid}/{aid}.ipynb in your home, not {path}: your answers must be there.")
    try:
        got = hubservice.ask(url.rstrip("/") + "/", {"assignment": aid}, timeout=HUB_CHECK_WAIT_S)
    except hubservice.Refused as exc:
        print(f"⚠ the hub did not grade it: {exc}")
        return 1
    except hubservice.Unanswered as exc:
        print(f"⚠ the hub's checks service did not answer ({exc}): tell your instructor")
        return 1
    print(got["table"])
    print(f"feedback: {got['feedback']} (in your home)")
    from streamlab.course.quiz import keep_record

    # The hub's record is the one graded: her copy follows it, so her quiz cells show the rounds her next check grades.
    if "quiz" in got and not keep_record(aid, got["quiz"]):
        print("⚠ could not write your quiz record ($STREAMLAB_HOME/quiz.json): the options your cells show may not be "
              "the ones graded; tell your instructor")
    if got.get("summary"):
        print(got["summary"])
    from .progress import record

    record(SimpleNamespace(graded=got["graded"], assignment=aid, score=got["score"], max_score=got["max"],
                           exercises=[SimpleNamespace(grade_id=g, points=p, max_points=m)
                                      for g, p, m in got["exercises"]]))
    return 0


SAVE_WAIT_S = 10.0


def save_open_notebook(path: Path, wait: float = SAVE_WAIT_S) -> bool:
    """Ask JupyterLab to save the notebook this kernel runs (through ipylab); True once the file on disk changed.

    Kernel-to-browser messages go out while a cell runs, so the save happens during this cell; without a
    JupyterLab front end (a headless run) nothing answers and this returns False after `wait` seconds.
    """
    try:
        from ipylab import JupyterFrontEnd
    except ImportError:
        return False
    before = path.stat().st_mtime_ns
    JupyterFrontEnd().commands.execute("docmanager:save")
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if path.stat().st_mtime_ns != before:
            time.sleep(0.3)  # let the write finish
            return True
        time.sleep(0.1)
    return False


def check_here(timeout: int | None = None, source: str | os.PathLike | None = None) -> int | None:
    """Save the notebook this kernel runs, grade it with the hidden tests and print the table.

    `source`: the course whose hidden tests grade it (the course's own solutions/ unless a test fixture says)."""
    path = _target_or_none(None, "check_here()")
    if path is None:
        return None
    if save_open_notebook(path):
        print(f"Saved {path.name}.")
    else:
        age = time.time() - path.stat().st_mtime
        print(f"⚠ Could not save {path.name} for you: what is graded is the copy saved {_ago(age)}. "
              "Save it (Ctrl-S) and run this cell again to grade your latest answers.")
    return check(path, timeout, source=source, _announce=False)


def check_button(timeout: int | None = None, source: str | os.PathLike | None = None):
    """A "Check my work" button: a click saves this notebook, grades it with the hidden tests, shows the table.

    A button rather than a call, so Restart & Run All never starts a grading run; the click is handled while the
    notebook is idle, as widget events are.
    """
    import ipywidgets as W
    from IPython.display import display

    button = W.Button(description="Check my work", icon="check", button_style="primary",
                      layout=W.Layout(width="180px"))
    out = W.Output()

    def on_click(_):
        button.disabled, button.description = True, "checking …"
        out.clear_output()
        try:
            with out:
                check_here(timeout, source)
                _link_feedback()
        finally:
            button.disabled, button.description = False, "Check again"

    button.on_click(on_click)
    display(W.VBox([button, out]))


def _link_feedback() -> None:
    """A link to the HTML feedback the check wrote next to the notebook (JupyterLab opens it in a tab)."""
    from IPython.display import HTML, display

    try:
        page = _find(None)
    except ValueError:
        return
    feedback = page.parent / "feedback" / f"{page.stem}.html"
    if feedback.is_file():
        display(HTML(f'<a href="feedback/{feedback.name}" target="_blank">Open the full feedback</a> '
                     f'(also in the file browser: {page.parent.name}/feedback/{feedback.name})'))


def _ago(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    return f"{seconds / 60:.0f} min ago" if seconds < 5400 else f"{seconds / 3600:.1f} h ago"


def timing(notebook: str | os.PathLike, timeout: int | None = None,
           source: str | os.PathLike | None = None) -> tuple[float, float]:
    """(seconds to execute `notebook` plainly, seconds for `python -m grader check` on it); the file is untouched."""
    import tempfile

    import nbformat
    from nbclient import NotebookClient

    path = Path(notebook).resolve()
    nb = nbformat.read(path, as_version=4)
    from .grading import stderr_to

    with tempfile.TemporaryDirectory(prefix="grader-timing-") as tmp, stderr_to(Path(tmp) / "kernel.log"):
        started = time.monotonic()
        NotebookClient(nb, timeout=timeout or 600, allow_errors=True, kernel_name="python3",
                       extra_arguments=["--IPKernelApp.log_level=ERROR"],
                       resources={"metadata": {"path": tmp}}).execute()
        plain = time.monotonic() - started
    # the check's feedback goes to a folder of its own, not to feedback/ beside the notebook (notebooks/, in make bench)
    with tempfile.TemporaryDirectory(prefix="grader-timing-results-") as results:
        started = time.monotonic()
        cmd = [sys.executable, "-m", "grader"] + (["--source", str(source)] if source else []) + ["check", str(path)]
        cmd += (["--timeout", str(timeout)] if timeout else []) + ["--results", results]
        check = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            check.wait()
        except BaseException:  # interrupted: the check stops its sandboxed kernel on SIGTERM, not when it is killed
            check.terminate()
            try:
                check.wait(timeout=30)
            except subprocess.TimeoutExpired:
                check.kill()
            raise
        return plain, time.monotonic() - started


def unsaved_warning(path: Path) -> str | None:
    """A warning when `path` is open in a running JupyterLab whose kernel ran cells after the file was saved."""
    import json
    import urllib.request
    from datetime import datetime

    try:
        from jupyter_server.serverapp import list_running_servers
    except ImportError:
        return None
    path = Path(path).resolve()
    saved = path.stat().st_mtime
    for server in list_running_servers():
        root = Path(server.get("root_dir") or server.get("notebook_dir") or "/")
        url = f"{server['url'].rstrip('/')}/api/sessions?token={server.get('token', '')}"
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:  # noqa: S310 - a local server of the learner's
                sessions = json.load(reply)
        except Exception:  # a stale runtime file or a server that does not answer: nothing to say
            continue
        for session in sessions:
            if (root / session.get("path", "")).resolve() != path:
                continue
            active = (session.get("kernel") or {}).get("last_activity")
            if not active:
                continue
            ran = datetime.fromisoformat(active.replace("Z", "+00:00")).timestamp()
            if ran > saved + 5:
                when = lambda t: datetime.fromtimestamp(t).strftime("%H:%M:%S")  # noqa: E731
                return (f"{path.name} is open in JupyterLab and its kernel was busy at {when(ran)}, after the file "
                        f"was last saved ({when(saved)}): if you changed answers since, save it (Ctrl-S) first — this "
                        "grades the saved copy")
    return None
