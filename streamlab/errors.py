"""Errors as a learner meets them: one exception type for problems a learner can fix, and one line for any other.

A failed Spark query raises a `StreamingQueryException` whose text is two stack traces (the JVM's and Python's)
around the one sentence that matters. `first_line` finds that sentence; `LabError` is raised by the lab itself
with a message that names the fix, and is shown in a notebook as that line alone instead of a traceback.
"""
from __future__ import annotations

import re


class LabError(RuntimeError):
    """A problem with the lab's environment, whose message says how to fix it."""


def first_line(exc: BaseException | str, limit: int = 400) -> str:
    """Any error, a Spark query's included, cut to `Name: message` on one line: the cause, not the envelope."""
    root = _jvm_root_cause(exc) if isinstance(exc, BaseException) else None
    text = str(exc)
    if root is not None and root[0] != "PythonException" and "Traceback (most recent call last)" not in root[1]:
        name, message = root
    else:
        # A Python error (in foreachBatch, or the offline engine's source) travels back through py4j: its last
        # 'XxxError: ...' line is the cause; a data source's error carries its module path (a.b.XxxError).
        found = [(n, m) for n, m in re.findall(
            r"^\s*((?:[\w]+\.)*\w+(?:Exception|Error|Invalid)): (.+?)(?=\s+SQLSTATE|\s+at [\w.$]+\(|$)", text, flags=re.M)
            if not n.startswith(("py4j", "Py4J"))]
        if found:
            name, message = found[-1]
            name = name.rsplit(".", 1)[-1]
        else:
            name = type(exc).__name__ if isinstance(exc, BaseException) else ""
            message = next((line.strip() for line in text.splitlines() if line.strip()), "")
    reason = re.search(r"^\s*Reason: (.+?)(?:\s+SQLSTATE.*)?$", str(message), flags=re.M) or re.search(
        r"^\s*Reason: (.+?)(?:\s+SQLSTATE.*)?$", text, flags=re.M)
    if reason:  # Spark's data-loss errors give their cause on a line of its own
        message = reason.group(1)
    message = " ".join(str(message).split())
    if message.startswith(f"{name}: "):  # kafka-python repeats its class name in the message
        message = message[len(name) + 2:]
    line = f"{name}: {message}" if name and message else (message or name)
    if "out of bounds timestamp" in line:  # pandas cannot hold years past 2262: usually ms read as seconds
        line += " (a timestamp far in the future: were milliseconds read as seconds?)"
    return line if len(line) <= limit else line[:limit - 3] + "..."


def _jvm_root_cause(exc: BaseException):
    """(simple class name, message) of the deepest cause of a JVM exception behind `exc`, or None (not from the JVM)."""
    origin = getattr(exc, "_origin", None) or getattr(exc, "java_exception", None)
    if origin is None:
        return None
    try:
        for _ in range(20):  # a cause chain, not a cycle
            cause = origin.getCause()
            if cause is None:
                break
            origin = cause
        return origin.getClass().getSimpleName(), origin.getMessage() or ""
    except Exception:  # noqa: BLE001 - the gateway is gone, or not a Throwable: fall back to the text
        return None


def _show_short(shell, etype, value, tb, tb_offset=None):
    print(f"⚠  {value}")
    return None


def install_notebook_handler() -> None:
    """In IPython, print LabError as its one-line message rather than a stack trace."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        shell.set_custom_exc((LabError,), _show_short)
