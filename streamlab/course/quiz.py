"""Quiz questions whose graded answer is a plain variable; the grader's hidden reveal() holds the key.

Options shuffled per learner: `options("q3", [...])` shows a question's options in an order drawn from the
learner's variant seed (streamlab.course.variants), lettered a, b, c, … as she sees them. She answers with the letter
she sees; reveal() maps it through the same seed to the option written first, second, … in the notebook (the
canonical order, in which the hidden test's key is written), so "Q3 is b" passed from one learner to another is
worth a guess, while the right option earns the point under every seed. A solution answers with `seen("q3", "d")`.

Feedback that teaches without becoming an answer key: Check my work shows every answer's explanation, and a wrong
answer's explanation names the right option. So each wrong answer moves its question to its next round: its options
are reshuffled and its numbers (draws named `qN…`) drawn anew for the next try. The learner's record
(streamlab.course.quiz_record), `$STREAMLAB_HOME/quiz.json`, keeps per question its round, the first attempt's mark
(the first Check my work in which she answered it) and the best mark; `python -m grader progress` shows both.
`grader check` (the learner's own Check my work) writes it and grades in its rounds; her notebook's cells read it,
and a visible check says when a question moved on since its cells ran. On a workshop's hub the record that counts is
the hub's: its checks service grades her in the rounds it keeps for her (`hub_record_file`, out of her reach) and
hands them back, and `grader check` writes them here (`keep_record`) so her cells show what is graded; the
instructor's grading of what the hub collected uses the same rounds. Any other cohort is graded in round 0.

And `self_check`: the ungraded "Check yourself" questions after a section (their texts and keys in
streamlab/course/self_checks.py, their options in each learner's order too), which answer at once with their
explanation while the idea is fresh (the graded quiz stays for Check my work)."""
from __future__ import annotations

import string

from streamlab.course import variants
from streamlab.course.checks import FAIL, FORM, PASS, expect, judging, report
# The learner's record lives in quiz_record (variants reads its rounds too); callers keep these names here.
from streamlab.course.quiz_record import (  # noqa: F401
    hub_record_file, keep_record, load_record, record_check, record_file, recorded_rounds, rounds, summary,
    write_record,
)
from streamlab.settings import settings

ROUNDS_ENV = "STREAMLAB_QUIZ_ROUNDS"  # the grader sets it ({question: round}) for the run it grades
SHUFFLED_ENV = "STREAMLAB_QUIZ_SHUFFLED"  # and this: the questions the notebook shows with options(), comma-separated
LETTERS = string.ascii_lowercase
_choices: dict[str, str] = {}  # {question: its letters}, from check_format, for the reveal() of the same test cell


# -- options in the learner's order ------------------------------------------------------------------------------------

def order(name: str, count: int, drawn=None) -> list[int]:
    """The learner's order of a question's options: position i shows the option written i-th in the notebook
    at order[i]. `drawn`: a Variant (default: the running notebook's, in the question's round)."""
    drawn = drawn or variants.variant()
    return drawn.sample(f"{name}.options", range(count), count)


def canonical(name: str, letter: str, choices: str = "abcd", drawn=None) -> str:
    """The notebook's letter of the option the learner sees as `letter`."""
    return LETTERS[order(name, len(choices), drawn)[choices.index(letter)]]


def seen(name: str, key: str, choices: str = "abcd", drawn=None) -> str:
    """The letter under which the learner sees the notebook's option `key` (a solution's answer)."""
    return choices[order(name, len(choices), drawn).index(LETTERS.index(key))]


def options(name: str, texts: list[str]) -> None:
    """Show a question's options in the learner's order, lettered as she answers (the notebook writes them in its
    own order, the hidden test's key in that order's letters)."""
    drawn = variants.variant()  # its draw records the round shown (variants.drawn_rounds), for check_format
    shown = [texts[i] for i in order(name, len(texts), drawn)]
    turn = drawn.round_of(f"{name}.options")
    lines = [f"- {letter}) {text}" for letter, text in zip(LETTERS, shown)]
    if turn:
        lines.append(f"\n*Reshuffled (try {turn + 1}): Check my work explained your earlier answer.*")
    _choices[name] = LETTERS[:len(texts)]
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display

        if get_ipython() is not None:
            display(Markdown("\n".join(lines)))
            return
    except ImportError:
        pass
    print("\n".join(lines))


def shuffled(name: str) -> bool:
    """Whether the learner saw this question's options in her own order: the grader names those questions (a
    notebook whose options are lettered in its markdown shows them in its own order); outside the grader, yes."""
    listed = settings.quiz_shuffled
    return listed is None or name in listed


def _moved_on(name: str) -> int | None:
    """The question's round now when the options or numbers this kernel showed were of an earlier one, else None."""
    aid = variants.current_assignment()
    was = variants.drawn_rounds.get((aid, name))
    now = rounds(aid).get(name, 0)
    return now if was is not None and was != now else None


def check_format(answer, choices: str | None = None, name: str = "answer", number: bool = False) -> None:
    """Visible check: the answer is filled in and has the right form. It never says whether it is right.

    In the lab it also says when Check my work has moved the question to a new round since its cells ran."""
    if choices:
        _choices[name] = choices
    if number:
        ok = isinstance(answer, (int, float)) and not isinstance(answer, bool)
        want, fix = "a number", "replace None with your number"
    else:
        valid = list(choices or "")
        ok = isinstance(answer, str) and answer.strip().lower() in valid
        want, fix = f"one of {', '.join(valid)}", "set the variable to the letter of your choice"
    if judging():
        return None  # the form is not worth points; reveal() decides
    turn = _moved_on(name)
    if turn is not None:
        print(f"{FAIL} {name}: Check my work explained your earlier answer, so this question is new (try {turn + 1}:"
              " options reshuffled, numbers drawn again). Run its cells again and answer from what they show now")
        return None
    if ok:
        print(f"{FORM} {name} recorded ({answer!r}): only its form is checked here; Check my work grades it "
              "and shows why")
        return None
    return expect(False, f"{name} is answered", want, repr(answer), fix)


def reveal(answer, correct, explanation: str, name: str = "answer", choices: str | None = None) -> None:
    """Hidden check: compare with the key; the explanation goes with every answer (Check my work shows it).

    A lettered key is the notebook's letter: the learner's letter is mapped through her order first (`choices`:
    the question's letters, by default those its check_format named)."""
    given = answer.strip().lower() if isinstance(answer, str) else answer
    if isinstance(correct, str) and len(correct) == 1 and isinstance(given, str) and shuffled(name):
        choices = choices or _choices.get(name, "abcd")
        if given in choices and len(given) == 1:
            given = canonical(name, given, choices)
    right = type(given) is type(correct) and given == correct or (
        isinstance(given, (int, float)) and not isinstance(given, bool) and isinstance(correct, (int, float))
        and given == correct)
    # The course promises "whether it is right, and why": a learner who answered is shown why either way.
    verdict = f"{PASS} {name}: right" if right else f"{FAIL} {name}: your answer {answer!r} is not right"
    answered = answer is not None and answer is not Ellipsis and not (isinstance(answer, str) and not answer.strip())
    report(name, right, f"{verdict}. Why: {explanation}" if answered else f"{verdict} (not answered yet)")


def self_order(name: str, count: int) -> list[int]:
    """The learner's order of the Check yourself question `name`'s options, drawn from her variant seed: position i
    shows the option written i-th at order[i]."""
    return order(f"self-{name}", count)


def self_check(name: str) -> None:
    """Ask the Check yourself question `name` (streamlab.course.self_checks): options a, b, c, … as buttons, in the
    learner's own order (`self_order`); a click says right or not, and why, and marks the buttons.

    Under the grader (and without widgets) it prints the question only: it is worth no points and reveals nothing."""
    from streamlab.course.self_checks import QUESTIONS

    if name not in QUESTIONS:
        raise KeyError(f"no Check yourself question {name!r} in streamlab/course/self_checks.py")
    asked = QUESTIONS[name]
    letters = LETTERS[:len(asked.options)]
    shown = self_order(name, len(asked.options))
    options = [asked.options[i] for i in shown]
    key = letters[shown.index(letters.index(asked.key))]
    lines = [f"Check yourself: {asked.question}"] + [f"  {letter}) {text}" for letter, text in zip(letters, options)]
    if judging() or settings.grading:  # a graded run: no one clicks
        print("\n".join(lines))
        return
    try:
        import ipywidgets as W
        from IPython.display import display
    except ImportError:
        print("\n".join(lines))
        return

    feedback = W.HTML()
    buttons = [W.Button(description=f"{letter}) {text.replace('`', '')}", tooltip=text.replace("`", ""),
                        layout=W.Layout(width="auto", max_width="100%")) for letter, text in zip(letters, options)]

    def answer(letter: str):
        def clicked(_button):
            right = letter == key
            for each, button in zip(letters, buttons):
                button.button_style = "success" if each == key else "danger" if each == letter else ""
            # the right option's text too: a learner who cannot tell the buttons' red from green still finds it
            verdict = "Right" if right else f"Not {letter}: the answer is {key}) {as_html(options[letters.index(key)])}"
            feedback.value = f"{TEXT}<b>{PASS if right else FAIL} {verdict}.</b> {as_html(asked.why)}</div>"
        return clicked

    for letter, button in zip(letters, buttons):
        button.on_click(answer(letter))
    question = W.HTML(f"{TEXT}<b>Check yourself.</b> {as_html(asked.question)}</div>")
    display(W.VBox([question, *buttons, feedback], layout=W.Layout(margin="12px 0 4px 0")))


# A widget's HTML is laid out as one line of a control (tall line height, no code style): as the notebook's prose.
TEXT = '<div style="line-height: 1.5; margin: 2px 0">'
# A code span looks like the prose's, but is no <code> element: in a widget, <code> is a live demo's readout (the
# browser tests find a demo's numbers by it, and a question above the demo was taken for its readout).
CODE = ('<span class="course-code" style="font-family: var(--jp-code-font-family, monospace); '
        'background: var(--jp-layout-color2, #eee); padding: 0 3px; border-radius: 2px">')


def as_html(text: str) -> str:
    """A question's or an explanation's text as HTML: escaped, its `code` spans shaded in a code font."""
    import re
    from html import escape

    return re.sub(r"`([^`]+)`", lambda m: f"{CODE}{m.group(1)}</span>", escape(text))
