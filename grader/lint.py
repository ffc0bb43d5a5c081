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


def main(update: bool = False, source: Path = SOURCE) -> int:
    """Print the table; with `update`, write the baseline (refused where a module got worse)."""
    numbers = course(source)
    print(table(numbers))
    baseline = json.loads(LINT_BASELINE.read_text()) if LINT_BASELINE.is_file() else {}
    regressions = {aid: worse(n, baseline.get(aid, {})) for aid, n in numbers.items()}
    regressions = {aid: r for aid, r in regressions.items() if r}
    for aid, what in regressions.items():
        print(f"worse than {LINT_BASELINE.name}: {aid}: {'; '.join(what)}")
    if update and not regressions:
        LINT_BASELINE.write_text(json.dumps({aid: asdict(n) for aid, n in numbers.items()}, indent=1) + "\n")
        print(f"wrote {LINT_BASELINE.relative_to(ROOT)}")
    return 1 if regressions else 0
