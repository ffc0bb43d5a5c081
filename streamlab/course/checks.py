"""Exercise checks: one actionable line per check.

In the lab a check prints `✓ name` or `✗ name — found …. Hint: …` and the notebook goes on, so Restart & Run All
reaches the end of an unfinished notebook. When the grader judges a test cell it runs the cell in its own process
(never in the learner's kernel) inside `recording()`, and each check's outcome is kept there for partial credit.
A failed check says what was found and where to look, never the expected value (in the lab neither: many
exercises ask for a prediction, and a check that printed the target would answer it). A check that can only see
the form of an answer (`expect_form`) says so instead of showing a pass mark, and is worth nothing to the grader.
The marks are plain characters that every font the lab uses has (DejaVu's), not emoji.
"""
from __future__ import annotations

import math
import threading
from pathlib import Path
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


class Notebook:
    """The notebook's own objects, by name: in the lab this kernel's; while grading, the learner's kernel's
    (so a check can run the learner's function on data the grader made, where that function lives)."""

    def ref(self, name: str):
        """The object the notebook calls `name` (dots reach attributes: "internals.collect")."""
        import importlib
        import types

        from IPython import get_ipython

        first, *rest = name.split(".")
        shell = get_ipython()
        obj = shell.user_ns[first] if shell is not None and first in shell.user_ns else importlib.import_module(first)
        for part in rest:
            if isinstance(obj, types.ModuleType) and not hasattr(obj, part):
                obj = importlib.import_module(f"{obj.__name__}.{part}")
            else:
                obj = getattr(obj, part)
        return obj

    def call(self, name: str, *args, **kwargs):
        """Call the notebook's `name` with plain-data arguments (or refs); the result as plain data."""
        return self.ref(name)(*args, **kwargs)


def notebook_in(where: Notebook):
    """Inside the `with` block, the checks run in this thread reach the notebook's objects through `where` (the
    grader's)."""
    return _held("notebook", where)


def cluster_inputs_given(made: dict):
    """Inside the `with` block, cluster_input() in this thread reads `made` (what the grader made fresh on the
    cluster)."""
    return _held("cluster_inputs", made)


@contextmanager
def _held(name: str, value):
    """This thread's checks state `name` set to `value` inside the block, then what it was."""
    previous = getattr(_state, name, None)
    setattr(_state, name, value)
    try:
        yield value
    finally:
        setattr(_state, name, previous)


def notebook() -> Notebook:
    """Where the notebook's objects live for the check that is running."""
    return getattr(_state, "notebook", None) or Notebook()


def judging() -> bool:
    """True inside the grader's recording() (the grader's own process, never the learner's kernel)."""
    return getattr(_state, "record", None) is not None


class OnTheCluster(Exception):
    """Raised by a check, while the grader judges, for what only the lab's cluster can show (a leader killed under
    the learner's producer). The sandbox may not kill the cluster's processes, so the grader's own process runs
    `task` (one of grader.grading.CLUSTER_TASKS) on plain-data `given` after the run, where the cluster runs; where
    none does, the test cell is left out of the total."""

    def __init__(self, check: str, task: str, args: list):
        super().__init__(f"{check}: judged on the lab's cluster")
        self.check, self.task, self.given = check, task, args


def on_the_cluster(check: str, task: str, *args) -> None:
    """While the grader judges: hand `check` over to the grader's own run of `task` on the cluster (OnTheCluster)."""
    if judging():
        raise OnTheCluster(check, task, list(args))


def cluster_input(check: str, name: str):
    """While the grader judges: the plain data its own process made fresh on the lab's cluster before the run
    (grader.grading.CLUSTER_INPUTS), to try the learner's function on; where it made none (no cluster runs there),
    OnTheCluster leaves the test cell out of the total. In the lab: None (the notebook's own runs are checked)."""
    if not judging():
        return None
    made = (getattr(_state, "cluster_inputs", None) or {}).get(name)
    if made is None:
        raise OnTheCluster(check, None, [])
    return made


PASS, FAIL, FORM = "✓", "✗", "○"  # in DejaVu Sans and DejaVu Sans Mono: no emoji font needed


def expect(passed: bool, name: str, expected: str, found: str, hint: str | None = None) -> None:
    """Report one check: ✓ when `passed`, else what was found and the hint (`expected` is never printed)."""
    # Only a real True passes (a check must not pass on a truthy learner value); numpy's booleans count.
    passed = bool(passed) if type(passed).__module__ == "numpy" else passed is True
    line = f"{PASS} {name}" if passed else f"{FAIL} {name} — found {found}." + (f" Hint: {hint}" if hint else "")
    return report(name, passed, line)


def expect_form(ok: bool, name: str, found: str, hint: str | None = None, what: str = "its form") -> None:
    """A visible check of part of an answer (`what`: its form, by default): never a pass mark, and no points
    (the hidden checks of the same cell grade the answer)."""
    ok = bool(ok) if type(ok).__module__ == "numpy" else ok is True
    if judging():
        return None
    if ok:
        print(f"{FORM} {name}: {found} — only {what} is checked here; Check my work grades the answer")
        return None
    print(f"{FAIL} {name} — found {found}." + (f" Hint: {hint}" if hint else ""))
    return None


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


# -- going back after Run All --------------------------------------------------------------------------------

def needs(section: str, folders=(), topics=(), names=()) -> None:
    """Before a check reads lesson state: when the last cell's cleanup() deleted it (or its cells did not run yet),
    stop with one line naming the section to run again, instead of a traceback. Nothing to do while grading."""
    if judging():
        return None
    from streamlab.errors import LabError

    missing = [f"`{n}`" for n in names if _user_ns().get(n) is None]
    missing += [f"the checkpoint {Path(str(f)).name}" for f in folders if not (f and Path(str(f)).is_dir())]
    if topics and not missing:
        from streamlab.lab import topics as _topics

        try:
            present = set(_topics.list_topics())
        except Exception:  # a broker that does not answer is said by the setup cell, not here
            present = set(topics)
        missing += [f"the topic {t}" for t in topics if t not in present]
    if missing:
        raise LabError(f"this cell needs {', '.join(missing)}, deleted by the last cell's cleanup() or not made yet: "
                       f"run the cells from “{section}” down to this one again")
    return None


def _user_ns() -> dict:
    from IPython import get_ipython

    shell = get_ipython()
    return shell.user_ns if shell is not None else {}


# -- calling a learner's code, and inputs made for a check ---------------------------------------------------

def attempt(fn, *args, **kwargs):
    """Call a learner's function for a check: None when it is not written yet, the error text when it raises."""
    if not callable(fn):
        return None
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # shown by the check as what was found
        return f"{type(exc).__name__}: {exc}"


def fake_progress(batch: int, latest: dict, end: dict, topic: str = "t", rows: int = 100) -> dict:
    """A minimal progress event for tests: one Kafka source with the given {partition: offset} latest and end."""
    as_json = lambda parts: {topic: {str(p): o for p, o in parts.items()}}  # noqa: E731
    return {"batchId": batch, "numInputRows": rows, "inputRowsPerSecond": 0.0, "processedRowsPerSecond": 0.0,
            "durationMs": {"triggerExecution": 0},
            "sources": [{"startOffset": as_json({p: max(0, o - rows) for p, o in end.items()}),
                         "endOffset": as_json(end), "latestOffset": as_json(latest), "numInputRows": rows}]}


def fake_checkpoint(topic: str, ends: dict[int, int]) -> str:
    """A checkpoint folder whose one finished batch ended at `ends` ({partition: offset}), in Spark's own log format
    (offsets/0, commits/0): for a check that needs a checkpoint the notebook never saw. The caller removes it."""
    import json
    import os
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix=f"streamlab-fakeck-{os.getpid()}-"))  # swept if this process dies
    (folder / "offsets").mkdir()
    (folder / "commits").mkdir()
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": 0, "conf": {}}
    (folder / "offsets" / "0").write_text(
        f"v1\n{json.dumps(meta)}\n{json.dumps({topic: {str(p): o for p, o in ends.items()}})}", encoding="utf-8")
    (folder / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}', encoding="utf-8")
    return str(folder)
