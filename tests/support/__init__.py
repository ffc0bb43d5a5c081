"""What the suite's tests share: waiting on a condition, a free port, a guardian for what a killed run leaves, and
printing past pytest's capture.

One of each, so that a fix (a longer look interval on a loaded machine, a guardian that also removes folders) is
made once. Tests import it as `support` (tests/ is on pytest's path, as for labrun.py).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from streamlab.lab.broker import free_port  # noqa: F401  (one free_port for the lab and the tests)
from streamlab.lab.wait import wait_until  # noqa: F401  (one loop for the lab and the tests)

ROOT = Path(__file__).resolve().parents[2]


def show(pytestconfig, lines: list[str]) -> None:
    """Print `lines` past pytest's capture, so that every run (CI's -q one too) shows the counts a test judged."""
    import contextlib

    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        print("\n" + "\n".join(lines))


def wait_for(condition, timeout: float = 30.0, what: str = "the query") -> None:
    """Wait until `condition()` is true; fail the test, naming `what`, when it is not within `timeout` s."""
    assert wait_until(condition, timeout), f"{what} did not get there within {timeout:.0f} s"


# The guardian's first half: wait until the test process is gone (a SIGKILL or a CI time-out runs no teardown).
_WAIT_FOR_EXIT = r"""
import os, shutil, sys, time
pid, args = int(sys.argv[1]), sys.argv[2:]
while True:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        break
    time.sleep(1)
"""


def guardian(cleanup: str, *args: str) -> subprocess.Popen:
    """Start a process, in a session of its own, that runs the Python `cleanup` (which reads `args`, a list of
    strings) once this test process has ended, however it ended: what a killed run started is still stopped."""
    return subprocess.Popen([sys.executable, "-c", _WAIT_FOR_EXIT + cleanup, str(os.getpid()), *map(str, args)],
                            cwd=ROOT, start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def solution_answer(assignment: str, grade_id: str, name: str):
    """`name` as a solution notebook's answer cell `grade_id` defines it (the stub above its solution replaced)."""
    import nbformat

    root = Path(__file__).resolve().parents[2]
    nb = nbformat.read(root / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    namespace: dict = {}
    exec(cell.source.replace("### BEGIN SOLUTION", "").replace("### END SOLUTION", ""), namespace)
    return namespace[name]


def judged(grade_id: str, source: str, points: float, values: dict, modules: dict | None = None):
    """A test cell judged as the grader does (grader.judge.Judge), the learner's kernel holding `values` (plain data,
    `...` sent as the kernel's agent sends it, functions called on plain data) and `modules` ({name: module path}, as
    the notebook imported them)."""
    import json

    from grader.judge import Judge
    from grader.wire import decode, encode

    def value(name, v):
        if v is ...:
            return {"$o": [name], "type": "ellipsis"}
        if isinstance(v, dict) and ... in v.values():
            return {"$d": [[k, value(name, x)] for k, x in v.items()]}
        return encode(v)

    class Kernel:
        def ask(self, method, *args, timeout=None):
            name = json.loads(args[0])[0]
            if method == "call":  # the learner's function (or the course's), run "in the kernel" on plain data
                given, kwargs = decode(args[1].replace('{"$ref":', '{"$o":'),
                                       lambda tag, payload: values[payload[tag][0]])  # a reference: the object
                if name == "streamlab":
                    import importlib

                    path = json.loads(args[0])
                    target = importlib.import_module(".".join(path[:-1]))
                    return json.dumps(encode(getattr(target, path[-1])(*given, **kwargs)))
                return json.dumps(encode(values[name](*given, **kwargs)))
            if name in (modules or {}):
                return json.dumps({"$imp": [modules[name], None]})
            if callable(values[name]):
                return json.dumps({"$fn": [name]})
            return json.dumps(value(name, values[name]))

    return Judge(Kernel(), lambda: None, set(values)).judge(grade_id, source, points)
