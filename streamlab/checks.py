"""Exercise checks: one actionable line per check, raising only when the grader runs the notebook.

In the lab a failed check prints `❌ name — expected …, found ….  Hint: …` and the notebook goes on, so
Restart & Run All reaches the end of an unfinished notebook. Under the grader ($STREAMLAB_GRADING=1) the same
check raises CheckFailed, which nbgrader counts as a failed test.
"""
from __future__ import annotations

import math
import os


class CheckFailed(AssertionError):
    """A visible or hidden exercise check that did not pass."""


def grading() -> bool:
    """True when the grader, not a learner, is running the notebook."""
    return os.environ.get("STREAMLAB_GRADING") == "1"


def expect(passed: bool, name: str, expected: str, found: str, hint: str | None = None) -> None:
    """Report one check: ✅ when `passed`, else the expected/found line (raising under the grader)."""
    if passed:
        print(f"✅ {name}")
        return  # None, so a test cell ending in a check shows no Out[] line
    line = f"❌ {name} — expected {expected}, found {found}."
    if hint:
        line += f" Hint: {hint}"
    if grading():
        raise CheckFailed(line)
    print(line)


def expect_equal(actual, expected, name: str, hint: str | None = None) -> None:
    """Check that `actual == expected`."""
    return expect(actual == expected, name, repr(expected), repr(actual), hint)


def expect_close(actual, expected: float, name: str, rel: float = 0.05, hint: str | None = None) -> None:
    """Check that a number is within `rel` (relative) of `expected`."""
    ok = isinstance(actual, (int, float)) and not isinstance(actual, bool) and math.isclose(
        actual, expected, rel_tol=rel, abs_tol=1e-9)
    return expect(ok, name, f"{expected} (±{rel:.0%})", repr(actual), hint)
