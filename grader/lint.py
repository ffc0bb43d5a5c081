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
- `long_checks`: visible check cells longer than 3 lines (target 0).
And for the quizzes (each module's lettered questions, the interview pool's written-out ones, all of them, and apart
the ungraded Check yourself questions): how often a blind strategy is right — always the longest option, always
the one with the most code, the best single letter (target: 35 % or less each); none may score more than in the
baseline.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .course import ROOT, SOURCE, assignments

LINT_BASELINE = ROOT / "tests" / "course-lint.json"
FRAME = {"why": r"why it matters", "can": r"by the end you can", "time": r"\*\*time\b|^#+\s*time\b|^time\s*:",
         "need": r"\*\*you need|^#+\s*you need|^you need\s*:"}
IMAGE = re.compile(r"!\[[^\]]*\]\((figures/[^)\s]+)\)|<img[^>]+src=\"(figures/[^\"]+)\"")
HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", re.S)
# Better is lower for these, higher for the others (see `worse`).
LOWER_IS_BETTER = ("long_cells", "mean_sentence", "long_checks")
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
    head = f"{'module':<24}{'>200w':>6}{'sent':>6}{'figs':>6}{'queries':>8}{'checks>3':>9}  frame / ending"
    rows = [head]
    for aid, n in numbers.items():
        rows.append(f"{aid:<24}{n.long_cells:>6}{n.mean_sentence:>6}{n.figures:>6}{n.queries:>8}{n.long_checks:>9}"
                    f"  {'+'.join(n.frame) or '-'} / {'+'.join(n.ending) or '-'}")
    return "\n".join(rows)


def quizzes_worse(now: dict[str, dict], then: dict[str, dict]) -> list[str]:
    """Where a blind strategy scores more than in the baseline `then`, one phrase each."""
    return [f"{name}: {strategy} {then[name][strategy]:.0%} -> {scores[strategy]:.0%}"
            for name, scores in now.items() if name in then
            for strategy in STRATEGIES if scores[strategy] > then[name].get(strategy, 1.0)]


def main(update: bool = False, source: Path = SOURCE) -> int:
    """Print the tables; with `update`, write the baseline (refused where something got worse)."""
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
    if update and not regressions:
        data = {aid: asdict(n) for aid, n in numbers.items()}
        data["quizzes"] = quizzes
        LINT_BASELINE.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {LINT_BASELINE.relative_to(ROOT)}")
    return 1 if regressions else 0


# -- quizzes: can a blind strategy pass them? ------------------------------------------------------------------------
QUESTION = re.compile(r"\*\*Q(\d+)\.?\*\*")
OPTION = re.compile(r"^\s*(?:[-*]\s*)?\(?([a-e])\)\s+(.+?)\s*$", re.M)
KEY = re.compile(r"quiz\.reveal\(\s*q(\d+)\s*,\s*[\"']([a-e])[\"']")
ANSWER = re.compile(r"### BEGIN SOLUTION\s*q(\d+)\s*=\s*(?:quiz\.seen\(\s*[\"']q\d+[\"']\s*,\s*)?[\"']([a-e])[\"']")

STRATEGIES = ("longest", "most code", "best single letter")


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
