"""Quiz questions whose graded answer is a plain variable; explanations are shown by the grader's hidden tests."""
from __future__ import annotations

from .checks import CheckFailed, expect, grading


def check_format(answer, choices: str | None = None, name: str = "answer", number: bool = False) -> None:
    """Visible check: the answer is filled in and has the right form (never says whether it is right)."""
    if number:
        ok = isinstance(answer, (int, float)) and not isinstance(answer, bool)
        return expect(ok, f"{name} is answered", "a number", repr(answer), "replace None with your number")
    valid = list(choices or "")
    ok = isinstance(answer, str) and answer.strip().lower() in valid
    return expect(ok, f"{name} is answered", f"one of {', '.join(valid)}", repr(answer),
                  "set the variable to the letter of your choice")


def reveal(answer, correct, explanation: str, name: str = "answer") -> None:
    """Hidden check: compare with the key and always print the explanation (it lands in the feedback)."""
    given = answer.strip().lower() if isinstance(answer, str) else answer
    right = given == correct
    print(("✅ " if right else "❌ ") + f"{name}: {explanation}")
    if not right and grading():
        raise CheckFailed(f"{name}: your answer {answer!r} is not right. {explanation}")
