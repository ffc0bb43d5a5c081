"""The kernel's one teardown (streamlab.lab.teardown): stated order, isolated steps, run once, the only exit handler."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from streamlab.lab import teardown
from streamlab.lab.teardown import ORDER, Teardown

ROOT = Path(__file__).resolve().parents[2]


def test_steps_run_in_their_declared_order_whatever_the_registration_order():
    ran = []
    steps = Teardown()
    for name in ("jvm folder", "lag monitors", "background producers", "live demos", "queries, topics and folders"):
        steps.register(name, lambda name=name: ran.append(name))
    steps.register("first of all", lambda: ran.append("first of all"), order=1)
    assert steps.run() == ran
    assert ran == ["first of all", "live demos", "lag monitors", "queries, topics and folders",
                   "background producers", "jvm folder"]


def test_the_stated_order_stops_users_before_what_they_use():
    """Demos before the queries they run, monitors before the queries they poll, the JVM's folder last."""
    assert ORDER["live demos"] < ORDER["queries, topics and folders"] < ORDER["background producers"]
    assert ORDER["lag monitors"] < ORDER["queries, topics and folders"] < ORDER["consumer groups"]
    assert max(ORDER.values()) == ORDER["jvm folder"]


def test_a_failing_step_says_one_line_and_the_later_steps_still_run(capsys):
    ran = []
    steps = Teardown({"a": 1, "b": 2, "c": 3})
    steps.register("c", lambda: ran.append("c"))
    steps.register("b", lambda: 1 / 0)
    steps.register("a", lambda: ran.append("a"))
    assert steps.run() == ["a", "b", "c"]
    assert ran == ["a", "c"]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "streamlab at exit: b failed: ZeroDivisionError" in err, err


def test_running_twice_runs_each_step_once_and_reset_makes_them_runnable_again():
    ran = []
    steps = Teardown({"a": 1})
    steps.register("a", lambda: ran.append("a"))
    steps.run()
    assert steps.run() == [] and ran == ["a"]
    steps.reset()
    assert steps.run() == ["a"] and ran == ["a", "a"]
    steps.reset(forget=True)
    assert steps.run() == [] and steps.names() == []


def test_a_step_that_runs_the_teardown_itself_does_not_loop():
    ran = []
    steps = Teardown({"a": 1, "b": 2})
    steps.register("a", lambda: ran.append(("a", steps.run())))
    steps.register("b", lambda: ran.append("b"))
    steps.run()
    assert ran == [("a", []), "b"], ran  # both were taken by the outer run: the inner one had nothing left


def test_the_same_name_registered_again_replaces_the_step_and_a_name_without_a_place_is_refused():
    ran = []
    steps = Teardown({"a": 1})
    steps.register("a", lambda: ran.append(1))
    steps.register("a", lambda: ran.append(2))
    steps.run()
    assert ran == [2]
    with pytest.raises(ValueError, match="add it to teardown.ORDER"):
        steps.register("nowhere", lambda: None)


def test_the_lab_registers_its_steps_in_the_kernels_teardown():
    import streamlab  # noqa: F401 - the lifecycle registers its steps on import
    from streamlab.demo import live  # noqa: F401
    from streamlab.lab import producer  # noqa: F401
    from streamlab.observe import groups, lag  # noqa: F401

    names = teardown.names()
    for name in ("live demos", "lag monitors", "queries, topics and folders", "background producers",
                 "offline sink producers", "consumer groups", "broker user", "jvm folder"):
        assert name in names, names
    assert names == sorted(names, key=lambda n: ORDER[n])


def test_a_kernel_that_exits_runs_the_teardown_once_in_order():
    """A real interpreter exit: the one atexit handler runs the steps in ORDER, each once."""
    script = ("from streamlab.lab import teardown\n"
              "for name in ('jvm folder', 'live demos', 'consumer groups'):\n"
              "    teardown.register(name, lambda name=name: print(name, flush=True))\n"
              "teardown.register('test: fails', lambda: 1 / 0, order=15)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["live demos", "consumer groups", "jvm folder"], done.stdout
    assert "streamlab at exit: test: fails failed: ZeroDivisionError" in done.stderr, done.stderr


def _exit_handlers(path: Path) -> list[int]:
    """Lines of `path` that register an exit handler with atexit (a call or a decorator, however imported)."""
    tree = ast.parse(path.read_text())
    names = {"atexit"}
    registers = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname or a.name for a in node.names if a.name == "atexit"}
        elif isinstance(node, ast.ImportFrom) and node.module == "atexit":
            registers |= {a.asname or a.name for a in node.names if a.name == "register"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "register" and isinstance(node.value, ast.Name) \
                and node.value.id in names:
            found.append(node.lineno)
        elif isinstance(node, ast.Name) and node.id in registers:
            found.append(node.lineno)
    return found


def test_the_scan_finds_each_shape_of_exit_handler(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import atexit\nimport atexit as ax\nfrom atexit import register as r\n"
                      "@atexit.register\ndef a(): pass\nax.register(a)\nr(a)\nteardown.register('x', a)\n")
    assert sorted(_exit_handlers(sample)) == [4, 6, 7]


def test_no_module_but_the_teardown_registers_an_exit_handler():
    """Every other concern registers a named step (teardown.register), so the exit order stays one list."""
    found = [f"{path.relative_to(ROOT)}:{line}" for path in sorted((ROOT / "streamlab").rglob("*.py"))
             if path != ROOT / "streamlab" / "lab" / "teardown.py" for line in _exit_handlers(path)]
    assert not found, f"atexit.register outside streamlab/lab/teardown.py: {found}"


def test_the_consumer_groups_step_never_starts_a_broker_at_exit(monkeypatch):
    """H4's finding: at exit, deleting the groups `committing_consumer` made used the lab's broker, starting it if
    the learner had stopped it. Now it uses the broker they were made on, and only if it answers."""
    from streamlab.observe import groups

    started, forgot = [], []
    monkeypatch.setattr(groups, "ensure_broker", lambda: started.append(1) or "127.0.0.1:1")
    monkeypatch.setattr(groups, "forget_groups", lambda bootstrap=None: forgot.append(bootstrap))
    monkeypatch.setattr(groups, "_made_groups", ["plain-app-1"])
    monkeypatch.setattr(groups, "_made_on", "127.0.0.1:1")  # nothing listens on port 1
    groups._at_exit()
    assert started == [] and forgot == []
    monkeypatch.setattr(groups, "probe", lambda bootstrap, timeout=2.0: "kafka")
    groups._at_exit()
    assert started == [] and forgot == ["127.0.0.1:1"]
