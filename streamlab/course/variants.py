"""Per-learner numbers: exercises draw topic sizes, caps and rates from the learner's seed, so two learners differ.

The seed comes from, in order: $STREAMLAB_SEED (the grader sets it: from the nbgrader student id in a cohort,
from `--seed` or this machine's stored seed for `grader check`), else the seed stored for this assignment in
`.streamlab/variants.json`, made at random on first use. The same (assignment, seed, key) always gives the same
number, whatever order the cells run in, so the notebook, its visible checks and the grader's hidden checks agree.

Quiz draws have rounds: a draw named `qN` or `qN.<anything>` belongs to quiz question qN (its numbers, and the
order of its options, streamlab.course.quiz). After Check my work explained a wrong answer to qN, the question is in
its next round and `variant()` draws its numbers anew (the key gets `#round`); round 0 is the first variant. The
rounds come from the learner's record (streamlab.course.quiz_record.rounds), which the grader passes to the runs it
grades.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import re
import secrets
import tempfile
from contextlib import contextmanager
from pathlib import Path

from streamlab.course.quiz_record import rounds
from streamlab.settings import settings

SEED_ENV = "STREAMLAB_SEED"
ASSIGNMENT_ENV = "STREAMLAB_ASSIGNMENT"


def _store() -> Path:
    from streamlab.lab.jars import state_dir

    return state_dir() / "variants.json"


def _stored() -> dict:
    try:
        data = json.loads(_store().read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


@contextmanager
def _locked():
    """Hold the store's lock: two kernels or graders making a seed at once must agree on one."""
    path = _store()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as lock:
        try:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:  # Windows: no flock; the unique temporary file below still keeps the store whole
            pass
        yield path


def save_json(path: Path, data: dict) -> None:
    """Write `data` as JSON to `path` atomically (a temporary file beside it, then a rename)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".variants-", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)


def current_assignment() -> str:
    """The assignment id of the running notebook ($STREAMLAB_ASSIGNMENT, the notebook's file name, or its folder)."""
    if settings.assignment:
        return settings.assignment
    session = settings.jupyter_session  # jupyter_server sets it to the notebook's path
    if session and session.endswith(".ipynb"):
        return Path(session).stem
    return Path.cwd().name


def student_seed(student: str, assignment: str) -> int:
    """The seed of one learner in a cohort: a stable hash of the nbgrader student id and the assignment."""
    digest = hashlib.sha256(f"{student}\0{assignment}".encode()).hexdigest()
    return int(digest[:8], 16) % 1_000_000


def stored_seed(assignment: str, create: bool = True) -> int | None:
    """This machine's seed for `assignment` (made and stored on first use when `create`)."""
    value = _stored().get(assignment)
    if isinstance(value, int) or not create:
        return value if isinstance(value, int) else None
    with _locked() as path:
        data = _stored()  # again, under the lock: another process may have made it meanwhile
        value = data.get(assignment)
        if not isinstance(value, int):
            value = secrets.randbelow(1_000_000)
            data[assignment] = value
            save_json(path, data)
    return value


def seed_for(assignment: str) -> int:
    """The seed in force for `assignment`: $STREAMLAB_SEED when set, else this machine's stored one."""
    given = settings.seed  # a whole number, or a ValueError naming the variable
    return stored_seed(assignment) if given is None else given


def new_variant(assignment: str | None = None) -> int:
    """Draw fresh numbers for an assignment (self-paced): store a new seed; re-run the notebook to use it."""
    assignment = assignment or current_assignment()
    with _locked() as path:
        data = _stored()
        old = data.get(assignment)
        value = old
        while value == old:
            value = secrets.randbelow(1_000_000)
        data[assignment] = value
        save_json(path, data)
    print(f"{assignment}: new variant {value}. Restart the kernel and run all cells to get its numbers.")
    return value


QUESTION_KEY = re.compile(r"^(q\d+)(?:\.|$)")
# {(assignment, question): round} of the quiz draws this process made with rounds (what the learner was shown),
# so a visible check can tell that Check my work has since moved the question on (streamlab.course.quiz).
drawn_rounds: dict[tuple[str, str], int] = {}


def question_of(key: str) -> str | None:
    """The quiz question a draw belongs to ("q7.start" -> "q7"), or None for an exercise's draw."""
    hit = QUESTION_KEY.match(key)
    return hit.group(1) if hit else None


class Variant:
    """The numbers of one (assignment, seed): each draw is named, so it never depends on the order of cells.

    `rounds` ({question: round}) gives a quiz question's draws (keys `qN` or `qN.…`) of a later round other numbers;
    without it every draw is round 0's."""

    def __init__(self, assignment: str, seed: int, rounds: dict[str, int] | None = None):
        self.assignment, self.seed, self.rounds = assignment, int(seed), rounds

    def __repr__(self) -> str:
        return f"Variant({self.assignment!r}, seed={self.seed})"

    def round_of(self, key: str) -> int:
        """The round of the quiz question `key` belongs to (0 for an exercise's draw or without rounds)."""
        question = question_of(key)
        return int(self.rounds.get(question, 0)) if question and self.rounds else 0

    def rng(self, key: str) -> random.Random:
        """A generator for one named draw (the same for the same assignment, seed, key and round)."""
        turn = self.round_of(key)
        if self.rounds is not None and question_of(key):
            drawn_rounds[(self.assignment, question_of(key))] = turn
        return random.Random(f"{self.assignment}:{self.seed}:{key}" + (f"#{turn}" if turn else ""))

    def randint(self, key: str, low: int, high: int, step: int = 1) -> int:
        """A whole number from low to high inclusive, a multiple of `step` above `low`."""
        return low + step * self.rng(key).randint(0, (high - low) // step)

    def choice(self, key: str, options):
        """One of `options`."""
        return self.rng(key).choice(list(options))

    def sample(self, key: str, options, k: int) -> list:
        """`k` different items of `options`, in drawn order."""
        return self.rng(key).sample(list(options), k)

    def numbers(self, prefix: str, **ranges) -> dict:
        """Several whole numbers at once: numbers("q4", end=(3000, 6000, 100)) -> {"end": 4700}, each drawn as
        randint(f"{prefix}.{name}", low, high[, step])."""
        return {name: self.randint(f"{prefix}.{name}", *spec) for name, spec in ranges.items()}

    def uniform(self, key: str, low: float, high: float, digits: int = 2) -> float:
        """A number from low to high, rounded to `digits` decimals."""
        return round(self.rng(key).uniform(low, high), digits)


def variant(assignment: str | None = None, seed: int | None = None) -> Variant:
    """The running notebook's variant (or another assignment's / seed's, as the grader asks), its quiz questions in
    the rounds the learner's record (or the grader) gives."""
    assignment = assignment or current_assignment()
    return Variant(assignment, seed_for(assignment) if seed is None else seed, rounds(assignment))
