"""Quiz questions whose graded answer is a plain variable; the grader's hidden reveal() holds the key."""
from __future__ import annotations

from streamlab.course.checks import FAIL, FORM, PASS, expect, judging, report


def check_format(answer, choices: str | None = None, name: str = "answer", number: bool = False) -> None:
    """Visible check: the answer is filled in and has the right form. It never says whether it is right."""
    if number:
        ok = isinstance(answer, (int, float)) and not isinstance(answer, bool)
        want, fix = "a number", "replace None with your number"
    else:
        valid = list(choices or "")
        ok = isinstance(answer, str) and answer.strip().lower() in valid
        want, fix = f"one of {', '.join(valid)}", "set the variable to the letter of your choice"
    if judging():
        return None  # the form is not worth points; reveal() decides
    if ok:
        print(f"{FORM} {name} recorded ({answer!r}): only its form is checked here; Check my work grades it "
              "and shows why")
        return None
    return expect(False, f"{name} is answered", want, repr(answer), fix)


def reveal(answer, correct, explanation: str, name: str = "answer") -> None:
    """Hidden check: compare with the key; the explanation goes with every answer (Check my work shows it)."""
    given = answer.strip().lower() if isinstance(answer, str) else answer
    right = type(given) is type(correct) and given == correct or (
        isinstance(given, (int, float)) and not isinstance(given, bool) and isinstance(correct, (int, float))
        and given == correct)
    # The course promises "whether it is right, and why": a learner who answered is shown why either way.
    verdict = f"{PASS} {name}: right" if right else f"{FAIL} {name}: your answer {answer!r} is not right"
    answered = answer is not None and answer is not Ellipsis and not (isinstance(answer, str) and not answer.strip())
    report(name, right, f"{verdict}. Why: {explanation}" if answered else f"{verdict} (not answered yet)")
