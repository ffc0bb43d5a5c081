"""`python -m grader lint`: the teaching numbers of every module, as ../shared/teaching-style.md defines them.

Why: a course gets heavier one paragraph at a time, and nobody notices a 450-word cell above a control panel until
a learner does. These numbers are cheap to compute from the solution notebooks, so the suite keeps them from
regressing (tests/unit/test_course_lint.py compares them with `LINT_BASELINE`, which only ever tightens): a module
may get better, never worse.

Per module:
- `long_cells`: markdown cells over 200 words (target 0);
- `mean_sentence`: mean words per sentence of the prose (target 22 or fewer);
- `figures`: static figures shown (markdown images of files in the module's `figures/` folder; target 1 or more);
- `frame`: which of *Why it matters*, *By the end you can*, *Time*, *You need* open the module (target all four);
- `ending`: whether it ends with *Takeaways* (at most 6 bullets) and a *Next* link (target both);
- `queries`: cells that show a whole `readStream` ... `writeStream` ... `start()` query, run or in a ```python block
  (target 1 or more);
- `long_checks`: visible check cells longer than 3 lines (target 0);
- `open_deeper`: collapsed *Going deeper* heading cells that hold more than their heading (target 0): JupyterLab hides
  the cells under a collapsed heading, never the rest of the heading's own cell, so that text shows anyway.
And for the quizzes (each module's lettered questions, the interview pool's written-out ones, all of them, and apart
the ungraded Check yourself questions): how often a blind strategy is right — always the longest option, always
the one with the most code, the best single letter (target: 35 % or less each); none may score more than in the
baseline, and a module's quiz or the pool's above QUIZ_TARGET fails the lint.
And the time each module costs a learner (issue 32), by ../shared/reviews/teaching.md §1.1's assumptions applied to
the notebooks as they are now, plus the measured wait of its Run All (tests/course-times.json, written by
`python -m grader.lint --measure [ID ...]`, which runs each student notebook as `make site` does): its *Time* line
and START-HERE's module map must state it within 15 % (say the total rounded to 5 min), or the lint fails.
A module longer than a sitting is taken in two (issue 29): a markdown cell tagged `"streamlab": {"sitting": 2}` starts
the second, which runs in a fresh kernel after the Setup cells; the lint fails where a sitting's main path (Going deeper
left out) is over SITTING_MAX minutes, or where a stated sitting is more than 15 % off.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .course import ROOT, SOURCE, GraderError, assignments

LINT_BASELINE = ROOT / "tests" / "course-lint.json"
FRAME = {"why": r"why it matters", "can": r"by the end you can", "time": r"\*\*time\b|^#+\s*time\b|^time\s*:",
         "need": r"\*\*you need|^#+\s*you need|^you need\s*:"}
IMAGE = re.compile(r"!\[[^\]]*\]\((figures/[^)\s]+)\)|<img[^>]+src=\"(figures/[^\"]+)\"")
HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", re.S)
# Better is lower for these, higher for the others (see `worse`).
LOWER_IS_BETTER = ("long_cells", "mean_sentence", "long_checks", "open_deeper")
# A number at its target may move within it (a reworded quiz option lengthens a sentence or two).
TARGETS = {"mean_sentence": 22.0}


@dataclass
class Numbers:
    """One module's teaching numbers."""

    long_cells: int = 0
    mean_sentence: float = 0.0
    figures: int = 0
    frame: list[str] = field(default_factory=list)
    ending: list[str] = field(default_factory=list)
    queries: int = 0
    long_checks: int = 0
    open_deeper: int = 0


def prose(markdown: str) -> str:
    """The words a learner reads in a markdown cell: no code blocks, HTML tags, link targets or table rules."""
    text = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    text = re.sub(r"<[^>]+>", " ", text)
    text = re.sub(r"!\[([^\]]*)\]\([^)]*\)", " ", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"^\s*\|?[\s:|-]+\|?\s*$", " ", text, flags=re.M)
    return text


def words(text: str) -> list[str]:
    """The words of `text` (a word holds a letter or digit)."""
    return [w for w in re.split(r"\s+", text) if re.search(r"\w", w)]


def sentences(text: str) -> list[list[str]]:
    """The sentences of `text`, each as its words: split at . ! ? and at line ends of headings, bullets and rows."""
    out = []
    for line in re.split(r"\n\s*(?=[#*\-|>]|\d+\.)|\n\s*\n", text):
        for piece in re.split(r"(?<=[.!?])\s+(?=[A-Z`*(\"'])", line):
            found = words(piece)
            if found:
                out.append(found)
    return out


def is_check(cell) -> bool:
    """A graded test cell (nbgrader points), what a learner sees of it is linted."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return cell.cell_type == "code" and meta.get("grade") and "points" in meta and not meta.get("solution")


def measure(nb) -> Numbers:
    """The teaching numbers of one notebook."""
    found = Numbers()
    markdown = [c for c in nb.cells if c.cell_type == "markdown"]
    lengths = []
    for cell in markdown:
        text = prose(cell.source)
        if len(words(text)) > 200:
            found.long_cells += 1
        lengths += [len(s) for s in sentences(text)]
        found.figures += sum(1 for _ in IMAGE.finditer(cell.source))
        found.open_deeper += bool(cell.metadata.get("jp-MarkdownHeadingCollapsed") and cell.source.strip().count("\n"))
    found.mean_sentence = round(sum(lengths) / len(lengths), 1) if lengths else 0.0
    opening = " ".join(c.source for c in markdown[:3]).lower()
    found.frame = [key for key, pattern in FRAME.items() if re.search(pattern, opening, re.M)]
    closing = "\n".join(c.source for c in markdown[-3:])
    takeaways = re.search(r"takeaways?\b(.*?)(?=\n#|\Z)", closing, re.S | re.I)
    if takeaways and 1 <= len(re.findall(r"^\s*[-*] ", takeaways.group(1), re.M)) <= 6:
        found.ending.append("takeaways")
    if re.search(r"next\s*(→|->|:)", closing, re.I):
        found.ending.append("next")
    for cell in nb.cells:
        shown = cell.source if cell.cell_type == "code" else " ".join(re.findall(r"```python(.*?)```", cell.source,
                                                                                re.S))
        if re.search(r"readStream", shown) and re.search(r"writeStream", shown) and re.search(r"\.start\(", shown):
            found.queries += 1
        if is_check(cell):
            visible = [line for line in HIDDEN.sub("", cell.source).strip().splitlines() if line.strip()]
            found.long_checks += len(visible) > 3
    return found


def course(source: Path = SOURCE) -> dict[str, Numbers]:
    """{assignment id: its numbers} for every module in `source`."""
    import nbformat

    return {aid: measure(nbformat.read(source / aid / f"{aid}.ipynb", as_version=4)) for aid in assignments(source)}


def worse(now: Numbers, then: dict) -> list[str]:
    """What got worse in `now` than in the baseline entry `then`, one phrase each."""
    out = []
    for key, value in asdict(now).items():
        old = then.get(key)
        if old is None:
            continue
        if isinstance(value, list):
            lost = sorted(set(old) - set(value))
            if lost:
                out.append(f"{key} lost {', '.join(lost)}")
        elif key in TARGETS and value <= TARGETS[key]:
            continue
        elif (value > old) if key in LOWER_IS_BETTER else (value < old):
            out.append(f"{key} {old} -> {value}")
    return out


def table(numbers: dict[str, Numbers]) -> str:
    """The numbers as a text table, one module a row."""
    head = f"{'module':<24}{'>200w':>6}{'sent':>6}{'figs':>6}{'queries':>8}{'checks>3':>9}{'open':>5}  frame / ending"
    rows = [head]
    for aid, n in numbers.items():
        rows.append(f"{aid:<24}{n.long_cells:>6}{n.mean_sentence:>6}{n.figures:>6}{n.queries:>8}{n.long_checks:>9}"
                    f"{n.open_deeper:>5}"
                    f"  {'+'.join(n.frame) or '-'} / {'+'.join(n.ending) or '-'}")
    return "\n".join(rows)


def quizzes_worse(now: dict[str, dict], then: dict[str, dict]) -> list[str]:
    """Where a blind strategy scores more than in the baseline `then`, one phrase each."""
    return [f"{name}: {strategy} {then[name][strategy]:.0%} -> {scores[strategy]:.0%}"
            for name, scores in now.items() if name in then
            for strategy in STRATEGIES if scores[strategy] > then[name].get(strategy, 1.0)]


def main(update: bool = False, source: Path = SOURCE) -> int:
    """Print the tables; with `update`, write the baseline (refused where something got worse). Exit 1 where a
    number got worse, or where a module's stated *Time* is more than TIME_TOLERANCE off its computed minutes."""
    numbers, quizzes = course(source), quiz_report(source)
    print(table(numbers))
    print(f"\n{'blind strategies':<24}{'asked':>6}" + "".join(f"{s:>20}" for s in STRATEGIES) + "   (target: 35 % or less)")
    for name, scores in quizzes.items():
        print(f"{name:<24}{scores['questions']:>6}" + "".join(f"{scores[s]:>20.0%}" for s in STRATEGIES))
    baseline = json.loads(LINT_BASELINE.read_text()) if LINT_BASELINE.is_file() else {}
    regressions = {aid: worse(n, baseline.get(aid, {})) for aid, n in numbers.items()}
    regressions["quizzes"] = quizzes_worse(quizzes, baseline.get("quizzes", {}))
    regressions = {aid: r for aid, r in regressions.items() if r}
    for aid, what in regressions.items():
        print(f"worse than {LINT_BASELINE.name}: {aid}: {'; '.join(what)}")
    above = quizzes_above(quizzes)
    for line in above:
        print(f"blind strategy over the {QUIZ_TARGET:.0%} target: {line}")
    if above:  # fails the lint, and no baseline is written while a quiz can be passed blind
        regressions["blind strategies"] = above
    computed = course_minutes(source)
    print("\n" + time_table(computed))
    off = times_off(computed, stated_times(source))
    for line in off:
        print(f"time off by more than {TIME_TOLERANCE:.0%}: {line}")
    long_sittings = sittings_off(computed)
    for line in long_sittings:
        print(f"sitting too long: {line}")
    if update and not regressions:
        data = {aid: asdict(n) for aid, n in numbers.items()}
        data["quizzes"] = quizzes
        LINT_BASELINE.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {LINT_BASELINE.relative_to(ROOT)}")
    return 1 if regressions or off or long_sittings else 0


# -- quizzes: can a blind strategy pass them? ------------------------------------------------------------------------
QUESTION = re.compile(r"\*\*Q(\d+)\.?\*\*")
OPTION = re.compile(r"^\s*(?:[-*]\s*)?\(?([a-e])\)\s+(.+?)\s*$", re.M)
KEY = re.compile(r"quiz\.reveal\(\s*q(\d+)\s*,\s*[\"']([a-e])[\"']")
ANSWER = re.compile(r"### BEGIN SOLUTION\s*q(\d+)\s*=\s*(?:quiz\.seen\(\s*[\"']q\d+[\"']\s*,\s*)?[\"']([a-e])[\"']")

STRATEGIES = ("longest", "most code", "best single letter")
QUIZ_TARGET = 0.35  # the most any blind strategy may score on a module's quiz, or on the pool


@dataclass
class Asked:
    """One multiple-choice question: where it is, its options by letter and its key."""

    where: str
    options: dict[str, str]
    key: str


def lettered(nb, pattern: re.Pattern = KEY) -> dict[int, str]:
    """{question number: letter} from a notebook's code cells: the keys its hidden tests reveal (KEY), or the
    answers its solution cells give (ANSWER)."""
    return {int(n): k for cell in nb.cells if cell.cell_type == "code" for n, k in pattern.findall(cell.source)}


def written_options(nb) -> dict[int, dict[str, str]]:
    """{question number: {letter: option}} in the notebook's own order, from the cells that show them
    (streamlab.course.quiz.options; each learner sees them reordered by her seed)."""
    import ast

    found = {}
    for cell in nb.cells:
        if cell.cell_type != "code" or "quiz.options(" not in cell.source:
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "quiz.options" and len(node.args) == 2:
                name, listed = ast.literal_eval(node.args[0]), ast.literal_eval(node.args[1])
                found[int(name.lstrip("q"))] = dict(zip("abcde", listed))
    return found


def notebook_questions(aid: str, nb) -> list[Asked]:
    """The lettered questions of a notebook's quiz whose key a hidden test reveals, their options in the notebook's
    order (a cell's quiz.options, or lettered lines of the question's markdown)."""
    keys, written = lettered(nb), written_options(nb)
    found = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        parts = QUESTION.split(cell.source)
        for number, body in zip(parts[1::2], parts[2::2]):
            options = written.get(int(number)) or {letter: text for letter, text in OPTION.findall(body)}
            if int(number) in keys and len(options) >= 3:
                found.append(Asked(f"{aid} Q{number}", options, keys[int(number)]))
    return found


def self_check_questions(aid: str, nb) -> list[Asked]:
    """The ungraded Check yourself questions a notebook asks (streamlab.course.self_checks), in its order."""
    from streamlab.course.self_checks import QUESTIONS, asked_in

    return [Asked(f"{aid} {name}", dict(zip("abcde", QUESTIONS[name].options)), QUESTIONS[name].key)
            for cell in nb.cells if cell.cell_type == "code" for name in asked_in(cell.source)]


def pool_questions() -> list[Asked]:
    """The written-out questions of the interview pool (streamlab.course.interview.FIXED)."""
    from streamlab.course.interview import FIXED, LETTERS

    return [Asked(f"pool {qid}", dict(zip(LETTERS, options)), key) for qid, _t, _q, options, key, _w in FIXED]


def _code(text: str) -> int:
    return sum(len(m) for m in re.findall(r"`[^`]*`", text)) + len(re.findall(r"[()=_.\[\]]", text))


def blind(questions: list[Asked]) -> dict[str, float]:
    """The share of `questions` each blind strategy answers right: always the longest option, always the one with
    the most code in it (ties: the first letter), and the best single letter."""
    if not questions:
        return dict.fromkeys(STRATEGIES, 0.0)
    longest = sum(max(q.options, key=lambda k: len(q.options[k])) == q.key for q in questions)
    code = sum(max(q.options, key=lambda k: _code(q.options[k])) == q.key for q in questions)
    letters = max(sum(q.key == letter for q in questions) for letter in "abcde")
    return {name: round(hits / len(questions), 3) for name, hits in zip(STRATEGIES, (longest, code, letters))}


def quiz_report(source: Path = SOURCE) -> dict[str, dict]:
    """{module or 'pool' or 'all': {questions, and each strategy's score}}."""
    import nbformat

    notebooks = {aid: nbformat.read(source / aid / f"{aid}.ipynb", 4) for aid in assignments(source)}
    per: dict[str, list[Asked]] = {aid: notebook_questions(aid, nb) for aid, nb in notebooks.items()}
    per["pool"] = pool_questions()
    per["all"] = [q for qs in per.values() for q in qs]
    # Ungraded, answered at once in the notebook, each learner's options in her own order: still no free points.
    per["check yourself"] = [q for aid, nb in notebooks.items() for q in self_check_questions(aid, nb)]
    return {name: {"questions": len(qs), **blind(qs)} for name, qs in per.items()}


def quizzes_above(report: dict[str, dict], target: float = QUIZ_TARGET) -> list[str]:
    """Each module's or the pool's blind strategy that scores above `target` in a quiz_report, one line each
    ('all' is their sum and the Check yourself questions are ungraded, so neither is held to it)."""
    return [f"{name}: {strategy} {scores[strategy]:.0%} of {scores['questions']} questions; "
            "add questions or spread the keys"
            for name, scores in report.items() if name not in ("all", "check yourself")
            for strategy in STRATEGIES if scores[strategy] > target]


# -- time: what a module costs a learner ------------------------------------------------------------------------------
# ../shared/reviews/teaching.md §1.1's assumptions, computed from the notebooks as they are now (its script, kept in
# what it counts; on the review's commit this gives its minutes exactly). One change: a quiz's options, now shown by a
# quiz.options cell, are read as words, as the review read them in markdown, not as a lesson cell with an output
# (08's 32 questions would otherwise cost 27 minutes more). The *Time* a module states must stay within
# TIME_TOLERANCE of this.
TIMES = ROOT / "tests" / "course-times.json"  # the measured Run All of each module (measure_run_all writes it)
WPM = 150  # dense technical prose, read in order to understand it
CODE_S_PER_CELL, CODE_S_PER_LINE = 10, 4  # orienting on a lesson cell; reading one of its lines
OUTPUT_S, WIDGET_S = 20, 150  # reading one output and relating it to the text; one live widget (run, controls, chart)
EXERCISE_S_PER_POINT, QUIZ_S, CHECK_S = 240, 60, 120  # an exercise's point; a quiz question; Check my work
TIME_TOLERANCE = 0.15
WIDGET = re.compile(r"\b\w*Demo\(|\.explorer\(|Interview\(|ChoiceTable\(|CheckpointBrowser\(")
INFRA = re.compile(r"streamlab\.setup\(|streamlab\.cleanup\(|grader\.check_button")
STATED = re.compile(r"\*\*Time:?\*\*:?\s*(?:about\s*)?(\d+)\s*min", re.I)
# "in two sittings (55 + 60)": what a module's Time line and START-HERE's map say after the total
STATED_SITTINGS = re.compile(r"^[^|\n(]{0,40}\((\d+)\s*\+\s*(\d+)\)")
SITTING_MAX = 80  # minutes of main path one sitting may take (issue 29: about 75)


@dataclass
class Minutes:
    """What one module costs a learner, in minutes (Run All in seconds, as measured)."""

    read: float
    run: float
    exercises: float
    quiz: float
    check: float
    run_all_s: float | None = None
    words: int = 0
    main: float = 0.0  # the total without the collapsed Going deeper sections (a first read)
    sittings: list[float] = field(default_factory=list)  # each sitting's total (they add up to `total`)
    sittings_main: list[float] = field(default_factory=list)  # each sitting's main path

    @property
    def total(self) -> float:
        """Every part, the measured Run All's wait included."""
        return self.read + self.run + self.exercises + self.quiz + self.check + (self.run_all_s or 0) / 60

    @property
    def stated(self) -> int:
        """The total as a module states it: rounded to 5 minutes."""
        return int(5 * round(self.total / 5))


def _shows_output(code: str) -> bool:
    """Whether a lesson cell shows the learner something to read (§1.1: prints, displays, or ends on a value)."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return True
    if not tree.body:
        return False
    if re.search(r"\b(print|display|\.show)\s*\(", code):
        return True
    last = tree.body[-1]
    if isinstance(last, ast.Expr):
        value = last.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return False
        if isinstance(value, ast.Call):
            name = ast.unparse(value.func)
            if name.endswith((".start", "expect", "expect_form", "expect_equal", "check_format")):
                return name.endswith(".start")
        return True
    if isinstance(last, ast.If):
        return "print(" in code or ".start()" in code
    return False


def _option_words(code: str) -> int:
    """The words of the options a quiz.options cell shows (its string literals but the question's name)."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return len(code.split())
    return sum(len(node.value.split()) for node in ast.walk(tree) if isinstance(node, ast.Constant)
               and isinstance(node.value, str) and not re.fullmatch(r"q\d+|streamlab\.course", node.value))


def minutes(nb, run_all_s: float | None = None) -> Minutes:
    """One notebook's minutes by §1.1's assumptions; `run_all_s`, its measured Run All, is added as waiting."""
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    lesson = [c.source for c in nb.cells if c.cell_type == "code" and not c.metadata.get("nbgrader", {}).get("grade")
              and not c.metadata.get("nbgrader", {}).get("solution") and not INFRA.search(c.source)]
    graded = [c.metadata["nbgrader"] for c in nb.cells if c.cell_type == "code"
              and c.metadata.get("nbgrader", {}).get("grade")]
    # A quiz's options shown by a cell (quiz.options, each learner's order) are read as the review read them in the
    # question's markdown: as words, not as a lesson cell and its output.
    options = [s for s in lesson if "quiz.options(" in s]
    lesson = [s for s in lesson if s not in options]
    words_read = sum(len(m.split()) for m in markdown) + sum(_option_words(s) for s in options)
    code_s = sum(CODE_S_PER_CELL + CODE_S_PER_LINE * len([x for x in s.splitlines() if x.strip()]) for s in lesson)
    shown = sum(_shows_output(s) for s in lesson)
    widgets = sum(len(WIDGET.findall(s)) for s in lesson)
    points = sum(g.get("points", 0) for g in graded if g.get("grade_id", "").startswith("ex"))
    questions = len(re.findall(r"\*\*Q\d+\.", "\n".join(markdown)))
    return Minutes(read=words_read / WPM, run=(code_s + shown * OUTPUT_S + widgets * WIDGET_S) / 60,
                   exercises=points * EXERCISE_S_PER_POINT / 60, quiz=questions * QUIZ_S / 60, check=CHECK_S / 60,
                   run_all_s=run_all_s, words=words_read)


def main_path(nb):
    """`nb` without the cells of its collapsed *Going deeper* sections (heading metadata jp-MarkdownHeadingCollapsed:
    hidden until the next heading of its level or above), as a first read sees it."""
    import copy

    kept, collapsed = [], None
    for cell in nb.cells:
        heading = re.match(r"(#+)\s", cell.source.lstrip()) if cell.cell_type == "markdown" else None
        if heading:
            level = len(heading.group(1))
            if collapsed is not None and level <= collapsed:
                collapsed = None
            if collapsed is None and cell.metadata.get("jp-MarkdownHeadingCollapsed"):
                collapsed = level
        if collapsed is None or (heading and len(heading.group(1)) == collapsed
                                 and cell.metadata.get("jp-MarkdownHeadingCollapsed")):
            kept.append(cell)
    out = copy.copy(nb)
    out.cells = kept
    return out


def sitting_starts(nb) -> list[int]:
    """The indexes of the cells that start a new sitting (cell metadata "streamlab": {"sitting": N})."""
    return [i for i, cell in enumerate(nb.cells) if (cell.metadata.get("streamlab") or {}).get("sitting")]


def setup_cells(nb) -> list[int]:
    """The indexes of the code cells of the *Setup* section: what a learner back in a new kernel runs first."""
    out, inside = [], False
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and re.match(r"#+\s", cell.source.lstrip()):
            inside = bool(re.match(r"#+\s*Setup\b", cell.source.lstrip()))
        elif inside and cell.cell_type == "code":
            out.append(i)
    return out


def sittings(nb, run_all_s: float | None = None) -> list[tuple[float, float]]:
    """(total, main path) minutes of each sitting of `nb`, split at its sitting cells: Check my work counts once, in
    the last; the measured Run All is shared in proportion to each sitting's running of cells. The totals add up to
    `minutes(nb, run_all_s).total`."""
    import copy

    bounds = [0, *[i for i in sitting_starts(nb) if i > 0], len(nb.cells)]
    parts = []
    for start, end in zip(bounds, bounds[1:]):
        part = copy.copy(nb)
        part.cells = nb.cells[start:end]
        parts.append((minutes(part), minutes(main_path(part))))
    run = sum(m.run for m, _ in parts) or 1.0
    out = []
    for index, (whole, main) in enumerate(parts):
        last = index == len(parts) - 1
        for m in (whole, main):
            m.run_all_s = (run_all_s or 0) * whole.run / run
            m.check = m.check if last else 0.0
        out.append((whole.total, main.total))
    return out


def _bound_and_read(code: str) -> tuple[set[str], set[str]]:
    """The names a cell binds (assigns, imports, defines, takes as arguments) and the names it reads."""
    import ast

    from IPython.core.inputtransformer2 import TransformerManager

    tree = ast.parse(TransformerManager().transform_cell(code))
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound, read


def sitting_needs(nb) -> dict[int, list[str]]:
    """{cell index: names it reads that neither the Setup cells nor the cells from its sitting's start down to it
    bind}: what a learner back in a new kernel would meet as a NameError (builtins and IPython's names aside)."""
    import builtins

    known = set(dir(builtins)) | {"get_ipython", "display", "In", "Out", "exit", "quit"}
    out = {}
    for start in [i for i in sitting_starts(nb) if i > 0]:
        bounds = [i for i in sitting_starts(nb) if i > start]
        end = bounds[0] if bounds else len(nb.cells)
        have = set(known)
        for index in setup_cells(nb):
            have |= _bound_and_read(nb.cells[index].source)[0]
        for index in range(start, end):
            cell = nb.cells[index]
            if cell.cell_type != "code":
                continue
            bound, read = _bound_and_read(cell.source)
            missing = sorted(read - have - bound)
            if missing:
                out[index] = missing
            have |= bound
    return out


def measured() -> dict[str, dict]:
    """{module: its measured Run All} from TIMES (empty where it was never measured)."""
    return json.loads(TIMES.read_text()).get("modules", {}) if TIMES.is_file() else {}


def course_minutes(source: Path = SOURCE) -> dict[str, Minutes]:
    """{assignment id: its minutes} for every module in `source`, with its measured Run All where there is one."""
    import nbformat

    runs, out = measured(), {}
    for aid in assignments(source):
        nb = nbformat.read(source / aid / f"{aid}.ipynb", as_version=4)
        seconds = (runs.get(aid) or {}).get("seconds")
        out[aid] = minutes(nb, seconds)
        out[aid].main = minutes(main_path(nb), seconds).total
        split = sittings(nb, seconds)
        out[aid].sittings, out[aid].sittings_main = [t for t, _ in split], [m for _, m in split]
    return out


def sittings_off(computed: dict[str, Minutes]) -> list[str]:
    """Where a sitting's main path is over SITTING_MAX minutes, one phrase each."""
    out = []
    for aid, m in computed.items():
        for number, main in enumerate(m.sittings_main, 1):
            if main > SITTING_MAX:
                fix = ("move its sitting-2 cell" if len(m.sittings_main) > 1 else
                       'start a second sitting: a markdown cell with metadata "streamlab": {"sitting": 2}')
                out.append(f"{aid}: sitting {number} is {main:.0f} min of main path (over {SITTING_MAX}): {fix}")
    return out


def stated_times(source: Path = SOURCE) -> dict[str, dict[str, int | None]]:
    """{module: {"frame": the minutes its own *Time* line states, "home": START-HERE's module map's}}; where they
    state two sittings, also "frame sittings" and "home sittings": [minutes, minutes]."""
    import nbformat

    home = source / "START-HERE.ipynb"
    home_text = "\n".join(c.source for c in nbformat.read(home, 4).cells) if home.is_file() else ""
    out = {}
    for aid in assignments(source):
        nb = nbformat.read(source / aid / f"{aid}.ipynb", as_version=4)
        opening = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")[:4000]
        frame = STATED.search(opening)
        row = re.search(rf"^\|\s*\[[^\]]*\]\({re.escape(aid)}/[^)]*\)\s*\|.*\|\s*(\d+)\s*min\b([^|]*)\|\s*$",
                        home_text, re.M)
        out[aid] = {"frame": int(frame.group(1)) if frame else None, "home": int(row.group(1)) if row else None}
        for where, after in (("frame", frame and opening[frame.end():]), ("home", row and row.group(2))):
            two = STATED_SITTINGS.search(after) if after else None
            if two:
                out[aid][f"{where} sittings"] = [int(two.group(1)), int(two.group(2))]
    return out


def times_off(computed: dict[str, Minutes], stated: dict[str, dict]) -> list[str]:
    """Where a stated time is missing or more than TIME_TOLERANCE away from the computed total, one phrase each."""
    out = []
    for aid, m in computed.items():
        said = stated.get(aid, {})
        unsaid = [w for w in ("frame", "home") if w in said and f"{w} sittings" not in said]
        for where in unsaid if len(m.sittings) > 1 else []:
            out.append(f"{aid}: no stated sittings ({where}): after the total, say "
                       f"({' + '.join(str(int(5 * round(t / 5))) for t in m.sittings)})")
        for where, value in said.items():
            if where.endswith("sittings"):
                say = " + ".join(str(int(5 * round(t / 5))) for t in m.sittings)
                if len(value) != len(m.sittings) or any(abs(v - t) > max(TIME_TOLERANCE * t, 5)
                                                        for v, t in zip(value, m.sittings)):
                    out.append(f"{aid}: {where} say {' + '.join(map(str, value))} min, computed "
                               f"{' + '.join(f'{t:.0f}' for t in m.sittings)}: say ({say})")
            elif value is None:
                out.append(f"{aid}: no stated time ({where}): say about {m.stated} min")
            elif abs(value - m.total) > TIME_TOLERANCE * m.total:
                out.append(f"{aid}: {where} says {value} min, computed {m.total:.0f}: say about {m.stated} min")
    return out


def time_table(computed: dict[str, Minutes]) -> str:
    """The minutes as a text table, one module a row, and the course's total."""
    runs = measured()
    rows = [f"{'minutes':<24}{'read':>6}{'run':>6}{'exer.':>6}{'quiz':>6}{'check':>6}{'Run All':>9}{'total':>7}"
            f"{'say':>5}{'main':>6}{'sittings':>12}   measured Run All (s, load 1/5/15 min before)"]
    for aid, m in computed.items():
        run = runs.get(aid) or {}
        seen = (f"{run['seconds']} s, load {'/'.join(str(x) for x in run.get('load_before', []))}, {run.get('date', '')}"
                if run.get("seconds") is not None else run.get("why", "not measured"))
        rows.append(f"{aid:<24}{m.read:>6.0f}{m.run:>6.0f}{m.exercises:>6.0f}{m.quiz:>6.0f}{m.check:>6.0f}"
                    f"{(m.run_all_s or 0) / 60:>9.1f}{m.total:>7.0f}{m.stated:>5}{m.main:>6.0f}"
                    f"{'+'.join(f'{x:.0f}' for x in m.sittings_main) if len(m.sittings) > 1 else '-':>12}   {seen}")
    total = sum(m.total for m in computed.values())
    rows.append(f"{'in all':<24}{sum(m.read for m in computed.values()):>6.0f}{sum(m.run for m in computed.values()):>6.0f}"
                f"{sum(m.exercises for m in computed.values()):>6.0f}{sum(m.quiz for m in computed.values()):>6.0f}"
                f"{sum(m.check for m in computed.values()):>6.0f}"
                f"{sum((m.run_all_s or 0) for m in computed.values()) / 60:>9.1f}{total:>7.0f}"
                f"{int(5 * round(sum(m.stated for m in computed.values()) / 5)):>5}"
                f"{sum(m.main for m in computed.values()):>6.0f}")
    rows.append("say: the total rounded to 5 min, what a module's *Time* and START-HERE state (within "
                f"{TIME_TOLERANCE:.0%}); main: without the collapsed Going deeper sections; Run All: its measured "
                f"wait; sittings: each sitting's main path (at most {SITTING_MAX})")
    return "\n".join(rows)


def measure_run_all(ids: list[str] | None = None, path: Path = TIMES) -> dict:
    """Run each untouched student notebook once, as `make site` does (grader.site.execute: its own kernel, demos
    ending 15 s after their script), one at a time, and record its wall seconds with the machine's load average
    before and after in `path` (kept for modules not run now)."""
    import datetime
    import os
    import tempfile
    import time

    import nbformat

    from .course import RELEASE
    from .site import DEMO_SECONDS, execute, needs_cluster

    data = json.loads(path.read_text()) if path.is_file() else {}
    data["how"] = (f"grader.site.execute (make site's run): each student notebook in notebooks/, one at a time, in a "
                   f"kernel of its own against the lab's broker, demos ending {DEMO_SECONDS} s after their script; "
                   "wall seconds of the whole Run All. load = os.getloadavg() (1, 5, 15 min) before and after: the "
                   "machine has 2 cores shared with other sessions, so a load above ~1 inflates the seconds")
    modules = data.setdefault("modules", {})
    unknown = [aid for aid in ids or () if not (RELEASE / f"{aid}.ipynb").is_file()
               and not (RELEASE / aid / f"{aid}.ipynb").is_file()]
    if unknown:
        raise GraderError(f"no student notebook {unknown[0]} in {RELEASE.name}/: name a module such as "
                          f"{assignments(RELEASE)[0]} (make release makes them)")
    for aid in ids or assignments(RELEASE):
        page = RELEASE / f"{aid}.ipynb"  # a page beside the modules (ONCALL): run from a folder of its own
        nb = nbformat.read(page if page.is_file() else RELEASE / aid / f"{aid}.ipynb", as_version=4)
        if needs_cluster(nb):
            modules[aid] = {"seconds": None, "why": "its setup starts the lab's cluster (make lab CLUSTER=1): not run"}
            continue
        before, started = [round(x, 2) for x in os.getloadavg()], time.monotonic()
        with tempfile.TemporaryDirectory(prefix="course-times-") as out:
            release = RELEASE
            if page.is_file():
                import shutil

                release = Path(out) / "release"
                shutil.copytree(RELEASE / "figures", release / aid / "figures")
                shutil.copy(page, release / aid / f"{aid}.ipynb")
            execute(Path(out), release=release, only=[aid])
            ran = nbformat.read(Path(out) / f"{aid}.ipynb", as_version=4)
        seconds = round(time.monotonic() - started, 1)
        errors = sum(o.output_type == "error" for c in ran.cells if c.cell_type == "code" for o in c.outputs)
        modules[aid] = {"seconds": seconds, "load_before": before, "load_after": [round(x, 2) for x in os.getloadavg()],
                        "errors": errors,
                        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
        path.write_text(json.dumps(data, indent=1) + "\n")
        print(f"{aid}: {seconds} s, load {before} -> {modules[aid]['load_after']}, {errors} error(s)", flush=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return data


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--measure"]:
        measure_run_all(sys.argv[2:] or None)
