"""Exercise checks: one actionable line per check.

In the lab a check prints `✅ name` or `❌ name — found …. Hint: …` and the notebook goes on, so Restart & Run All
reaches the end of an unfinished notebook. When the grader judges a test cell it runs the cell in its own process
(never in the learner's kernel) inside `recording()`, and each check's outcome is kept there for partial credit.
A failed check says what was found and where to look; the expected value is for the lab (`show_expected`) and
never printed while grading, so feedback does not hand out answers.
"""
from __future__ import annotations

import math
import threading
from contextlib import contextmanager
from dataclasses import dataclass


class CheckFailed(AssertionError):
    """A check that did not pass (kept for code that wants to stop at the first failure)."""


@dataclass
class Outcome:
    """One check's result as the grader records it."""

    name: str
    passed: bool
    line: str


_state = threading.local()


@contextmanager
def recording():
    """Collect every check run inside the block (the grader's side); yields the list of Outcome."""
    outcomes: list[Outcome] = []
    previous = getattr(_state, "record", None)
    _state.record = outcomes
    try:
        yield outcomes
    finally:
        _state.record = previous


def judging() -> bool:
    """True inside the grader's recording() (the grader's own process, never the learner's kernel)."""
    return getattr(_state, "record", None) is not None


def expect(passed: bool, name: str, expected: str, found: str, hint: str | None = None) -> None:
    """Report one check: ✅ when `passed`, else what was found (and, in the lab, what was expected) and the hint."""
    passed = passed is True or (type(passed).__name__ == "bool_" and bool(passed))
    if passed:
        line = f"✅ {name}"
    else:
        shown = f"found {found}" if judging() else f"expected {expected}, found {found}"
        line = f"❌ {name} — {shown}." + (f" Hint: {hint}" if hint else "")
    return report(name, passed, line)


def report(name: str, passed: bool, line: str) -> None:
    """Print one check's line and, while the grader judges, record it."""
    if judging():
        _state.record.append(Outcome(name, bool(passed), line))
    print(line)
    return None  # so a test cell ending in a check shows no Out[] line


def expect_equal(actual, expected, name: str, hint: str | None = None) -> None:
    """Check that `actual == expected`."""
    try:
        same = bool(actual == expected)
    except Exception:
        same = False
    return expect(same, name, repr(expected), repr(actual), hint)


def expect_close(actual, expected: float, name: str, rel: float = 0.05, hint: str | None = None) -> None:
    """Check that a number is within `rel` (relative) of `expected`."""
    ok = isinstance(actual, (int, float)) and not isinstance(actual, bool) and math.isclose(
        actual, expected, rel_tol=rel, abs_tol=1e-9)
    return expect(ok, name, f"{expected} (±{rel:.0%})", repr(actual), hint)
