"""Quiz questions whose graded answer is a plain variable; the grader's hidden reveal() holds the key.

And `self_check`: the ungraded "Check yourself" questions after a section, which answer at once with their
explanation while the idea is fresh (the graded quiz stays for Check my work)."""
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


def self_check(question: str, options: list[str], key: str, why: str) -> None:
    """An ungraded question that answers at once: options a, b, c, … as buttons; a click says right or not, and why.

    Under the grader (and without widgets) it prints the question only: it is worth no points and reveals nothing."""
    import string

    letters = string.ascii_lowercase[:len(options)]
    if key not in letters:
        raise ValueError(f"key {key!r} is not one of {', '.join(letters)}")
    lines = [f"Check yourself: {question}"] + [f"  {letter}) {text}" for letter, text in zip(letters, options)]
    import os

    if judging() or os.environ.get("STREAMLAB_GRADING"):  # a graded run: no one clicks
        print("\n".join(lines))
        return
    try:
        import ipywidgets as W
        from IPython.display import display
    except ImportError:
        print("\n".join(lines))
        return
    from html import escape

    feedback = W.HTML()
    buttons = [W.Button(description=f"{letter}) {text}", layout=W.Layout(width="auto", max_width="100%"))
               for letter, text in zip(letters, options)]

    def answer(letter: str):
        def clicked(_button):
            right = letter == key
            feedback.value = (f"<b>{PASS if right else FAIL} {'Right' if right else f'Not {letter}: the answer is {key}'}"
                              f".</b> {escape(why)}")
        return clicked

    for letter, button in zip(letters, buttons):
        button.on_click(answer(letter))
    display(W.VBox([W.HTML(f"<b>Check yourself.</b> {escape(question)}"), *buttons, feedback]))
