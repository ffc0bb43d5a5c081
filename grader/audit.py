"""The checker's audit: would a wrong, constant or random answer earn a point on any exercise?

A hidden test that one memorised value satisfies grades nothing. So while the solution is graded (`grader audit`,
and the suite's grading of every solution), each exercise's test cells are judged again after the real judgment of
its last one, with the exercise's answers swapped in the kernel for answers a learner could write without
understanding:
  - `none`: every answer left as the released stub leaves it, None;
  - `zero`: 0, "", or an empty collection; a function that returns 0;
  - `memorized`: a function that returns, whatever it is given, what the right one returned on its first call
    since the exercise's first test cell (the "constant that fits one input" a learner copies from a printed
    result);
  - `near`: the right value nudged (a number plus one, every value of a dict nudged, a quiz letter's neighbour, a
    list without its last item); a function returning its first result nudged;
  - `random 1`, `random 2`: values of the same shape, drawn with a fixed seed (a function draws anew each call);
    for a multiple-choice letter, the other letters, so `near` and the two random kinds try every wrong choice.
A cheat equal to the right answer is not tried, nor are kinds a test cell declares right in a comment
(`# audit: near, random 2 may pass (why)`: where every number in a range is a right answer). An exercise whose
checks read what the notebook's cells made with the answer (`# audit: judged on the crash test's table`) is not
swapped at its test cell. Given other answers for it (`replays`: the released stub, constant and wrong ones;
tests/notebooks/cheats.py), its section is *replayed*: from the heading above its answer to its last test cell,
every code cell runs again in the same kernel with the other answer in place, and its test cells are judged; then
the section runs once more with the right answer, which must earn its points again (`right answer replayed`), or a
cheat's 0 would prove nothing. So one grading of the solution judges its untouched, constant and wrong answers too;
a section that is not fresh when run again (a fixed checkpoint, a table it appends to) fails that last step. Without
replays such an exercise is judged by grading the solution with other answers in place, from the start. The right
answers go back before the notebook's next cell runs. Each kind must score 0 on every test cell; `audit_points`
says which earned some.
"""
from __future__ import annotations

import json
import re
import time

AUDIT_NAME = "__streamlab_audit__"
KINDS = ("none", "zero", "memorized", "near", "random 1", "random 2")
SLOW_KINDS = 2  # an exercise whose test cells take longer than SLOW_S (a live run): `none` and one more that applies
MAY_PASS = re.compile(r"^# audit: (.+?) may pass\b", re.M)
# An exercise judged on what the notebook's own cells made with the answer (a crash test's table), which swapping
# the answer at the test cannot change: its section is replayed with other answers (Auditor._replay) instead.
OUTCOME = re.compile(r"^# audit: judged on (.+)$", re.M)
SLOW_S = 15.0
RIGHT_REPLAYED = "right answer replayed"  # its entry holds the points the right answer lost when replayed (0)

# Runs inside the kernel being graded (the solution's: an instructor's tool, not a learner-facing check).
AUDIT = r'''
class __StreamlabAudit:
    import copy as _copy, json as _json, math as _math, random as _rnd
    LETTERS = "abcd"

    def __init__(self, ns):
        self.ns, self.real, self.first = ns, {}, {}

    def arm(self, names_json):
        self.real = {n: self.ns.get(n) for n in self._json.loads(names_json)}
        self.first = {}
        for name, value in self.real.items():
            if callable(value) and not isinstance(value, type):
                self.ns[name] = self._recorder(name, value)
        return "armed"

    def _recorder(self, name, fn):
        first = self.first

        def recorded(*args, **kwargs):
            result = fn(*args, **kwargs)
            if name not in first:
                first[name] = result
            return result
        return recorded

    def restore(self):
        self.ns.update(self.real)
        return "restored"

    def _letter(self, x):
        return isinstance(x, str) and len(x) == 1 and x in self.LETTERS

    def _zero(self, x):
        if isinstance(x, bool):
            return not x
        if isinstance(x, (int, float)):
            return 0 if x != 0 else 1
        if isinstance(x, str):
            return ""
        if isinstance(x, (list, tuple, set, frozenset, dict)):
            return type(x)()
        return 0

    def _near(self, x, rng, depth=0):
        if isinstance(x, bool):
            return not x
        if isinstance(x, int):
            return x + 1
        if isinstance(x, float):
            return x * 1.1 + 1.0 if self._math.isfinite(x) else 0.0
        if self._letter(x):
            others = [c for c in self.LETTERS if c != x]
            return others[0]
        if isinstance(x, str):
            try:
                return self._json.dumps(self._near(self._json.loads(x), rng, depth + 1))
            except (ValueError, TypeError):
                return x + "x"
        if isinstance(x, dict):  # every value nudged: a test cell may grade one key, and partial credit is fair
            return {k: self._near(v, rng, depth + 1) for k, v in x.items()} if x else {"x": 1}
        if hasattr(x, "_fields"):
            return x._make(self._near(v, rng, depth + 1) for v in x)
        if isinstance(x, (list, tuple)):
            if len(x) > 1:
                return type(x)(x[:-1])
            return type(x)([self._near(v, rng, depth + 1) for v in x]) if x else type(x)([0])
        if isinstance(x, (set, frozenset)):
            return type(x)(list(x)[:-1]) if len(x) > 1 else type(x)({"x"})
        return None if x is not None else 1

    def _random(self, x, rng, depth=0):
        if depth > 20:
            return None
        if isinstance(x, bool):
            return not x  # its only wrong value
        if isinstance(x, int):
            return rng.randint(-3, 2 * abs(x) + 10)
        if isinstance(x, float):
            return rng.uniform(-1.0, 2 * abs(x) + 10.0 if self._math.isfinite(x) else 1e6)
        if self._letter(x):
            return rng.choice([c for c in self.LETTERS if c != x])
        if isinstance(x, str):
            try:
                return self._json.dumps(self._random(self._json.loads(x), rng, depth + 1))
            except (ValueError, TypeError):
                return "".join(rng.choice("abcdefghij ") for _ in range(rng.randint(0, 12)))
        if isinstance(x, dict):
            return {k: self._random(v, rng, depth + 1) for k, v in x.items()}
        if hasattr(x, "_fields"):
            return x._make(self._random(v, rng, depth + 1) for v in x)
        if isinstance(x, (list, tuple, set, frozenset)):
            items = [self._random(v, rng, depth + 1) for v in x] or [rng.randint(0, 9)]
            try:
                return type(x)(items)
            except TypeError:
                return items
        return rng.randint(0, 9)

    def _value(self, kind, x, index):
        rng = self._rnd.Random(f"{kind}:{index}")
        if self._letter(x):
            others = [c for c in self.LETTERS if c != x]
            return {"zero": "", "near": others[0], "random 1": others[1], "random 2": others[2]}.get(kind, x)
        if kind == "zero":
            return self._zero(x)
        if kind == "near":
            return self._near(x, rng)
        return self._random(x, rng)

    def _function(self, kind, name):
        audit = self
        if kind == "zero":
            return lambda *args, **kwargs: 0
        if name not in self.first:
            return None
        first = self.first[name]
        if kind == "memorized":
            return lambda *args, **kwargs: audit._copy.deepcopy(first)
        if kind == "near":
            nudged = self._near(first, self._rnd.Random(kind))
            return lambda *args, **kwargs: audit._copy.deepcopy(nudged)
        rng = self._rnd.Random(kind)
        return lambda *args, **kwargs: audit._random(first, rng)

    def cheat(self, kind):
        if kind == "none":  # the released notebook's stub, `answer = None`
            self.ns.update({name: None for name in self.real})
            return "cheating"
        functions = {n for n, v in self.real.items() if callable(v) and not isinstance(v, type)}
        if kind == "memorized" and not functions:
            return "skip"
        values = {}
        for index, (name, real) in enumerate(self.real.items()):
            if name in functions:
                value = self._function(kind, name)
                if value is None:
                    return "skip"
            else:
                value = self._value("near" if kind == "memorized" else kind, real, index)
                try:
                    if value == real and type(value) is type(real):
                        return "skip"
                except Exception:
                    pass
            values[name] = value
        self.ns.update(values)
        return "cheating"


__streamlab_audit__ = __StreamlabAudit(globals())
'''


class AuditError(Exception):
    """The audit itself could not run in the kernel (never a learner's fault: audits grade solutions)."""


class Auditor:
    """Judges an exercise's test cells again with the cheats above, in the kernel the solution runs in.

    An exercise's test cells share what they compute (the first runs the learner's options, the next read the
    run), so the cheats replay the whole exercise: from the judge's state before its first test cell, every one
    of its test cells in order, after the real judgment of its last."""

    def __init__(self, kernel, judge, tests: dict, owners: dict[str, str], order: list[str],
                 replays: dict | None = None, cells: list | None = None, answers: dict | None = None, execute=None):
        self.kernel, self.judge, self.tests = kernel, judge, tests
        # {exercise: {kind: {answer grade id: source}}}, the notebook's cells, {index: exercise} of its answer cells
        # and how to run a cell (runner.run's client)
        self.replays, self.cells, self.answers, self.execute = replays or {}, cells or [], answers or {}, execute
        self.gids = list(order)
        self.raised: list[str] = []  # what the cells of the last section replayed raised
        self.names = {t.exercise: [n for n, e in owners.items() if e == t.exercise] for t in tests.values()}
        self.order = [gid for gid in order if gid in tests]
        self.last = {tests[gid].exercise: gid for gid in self.order}
        self.before: dict[str, dict] = {}  # exercise: the judge's own names before its first test cell
        self.seconds: dict[str, float] = {}
        self.installed = False
        self.audits: dict[str, list[list]] = {}

    def _ask(self, call: str) -> str:
        if not self.installed:
            self.kernel.install_agent(AUDIT)
            self.installed = True
        answer = self.kernel.evaluate(f"{AUDIT_NAME}.{call}")
        if answer.startswith('{"$err"'):
            raise AuditError(f"{call.split('(')[0]} failed in the kernel: {json.loads(answer)['$err']}")
        return answer

    def judge_test(self, test):
        """The real verdict of `test`; after its exercise's last test cell, the cheats (kept in self.audits)."""
        exercise, names = test.exercise, self.names.get(test.exercise) or []
        if not names:
            return self.judge.judge(test.grade_id, test.source, test.points)
        if exercise not in self.before:
            self.before[exercise] = dict(self.judge.own)
            self._ask(f"arm({json.dumps(json.dumps(names))})")  # from here, a function's first result is kept
        began = time.monotonic()
        verdict = self.judge.judge(test.grade_id, test.source, test.points)
        self.seconds[exercise] = self.seconds.get(exercise, 0.0) + time.monotonic() - began
        if self.last.get(exercise) == test.grade_id:
            try:
                self._cheat(exercise)
                self._ask("restore()")
            except AuditError as exc:
                for gid in self._cells(exercise):
                    self.audits[gid] = [[f"could not be audited ({exc})", None]]
                self.kernel.evaluate(f"{AUDIT_NAME}.restore()")  # the right answers back, whatever failed
        return verdict

    def _cells(self, exercise: str) -> list[str]:
        return [gid for gid in self.order if self.tests[gid].exercise == exercise]

    def _cheat(self, exercise: str) -> None:
        cells = self._cells(exercise)
        slow = self.seconds[exercise] > SLOW_S
        budget = SLOW_KINDS if slow else len(KINDS)
        allowed: set[str] = set()
        for gid in cells:
            declared = MAY_PASS.search(self.tests[gid].source)
            allowed |= {k.strip() for k in declared.group(1).split(",")} if declared else set()
        for gid in cells:
            outcome = OUTCOME.search(self.tests[gid].source)
            self.audits[gid] = [[f"not swapped: judged on {outcome.group(1)}", 0]] if outcome else []
        if exercise in self.replays and any(OUTCOME.search(self.tests[gid].source) for gid in cells):
            self._replay(exercise)
        cells = [gid for gid in cells if not OUTCOME.search(self.tests[gid].source)]
        if not cells:
            return
        real_own = self.judge.own
        try:
            for kind in [k for k in KINDS if k not in allowed and not (slow and k == "zero")]:
                if budget == 0:
                    break
                if self._ask(f"cheat({kind!r})") != "cheating":
                    continue
                budget -= 1
                self.judge.own = dict(self.before[exercise])
                for gid in cells:
                    test = self.tests[gid]
                    self.audits[gid].append([kind, self.judge.judge(gid, test.source, test.points).points])
        finally:
            self.judge.own = real_own

    def _section(self, exercise: str) -> list[int]:
        """The indices of the code cells of `exercise`'s section: from the heading above its first answer cell to its
        last test cell."""
        answers = [i for i, owner in self.answers.items() if owner == exercise]
        last = max(i for i, g in enumerate(self.gids) if g in self.tests and self.tests[g].exercise == exercise)
        start = max((i for i in range(min(answers)) if self.cells[i].cell_type == "markdown"
                     and self.cells[i].source.lstrip().startswith("#")), default=0)
        return [i for i in range(start + 1, last + 1) if self.cells[i].cell_type == "code"]

    def _run_section(self, exercise: str, section: list[int], sources: dict[str, str]) -> dict[str, float]:
        """Run the section's code cells again with `sources` in its answer cells; {test grade id: points}."""
        import copy

        self.judge.own = dict(self.before[exercise])
        points = {}
        for index in section:
            cell, gid = self.cells[index], self.gids[index]
            if gid in self.tests:
                if self.tests[gid].exercise == exercise:
                    test = self.tests[gid]
                    verdict = self.judge.judge(gid, test.source, test.points)
                    points[gid] = verdict.points
                    self.raised += [verdict.error] if verdict.error else [
                        f"{c.name} failed: {c.line}" for c in verdict.checks if not c.passed][:1]
                continue
            again = copy.deepcopy(cell)
            again.source = sources.get(gid, cell.source)
            again.outputs = []
            self.execute(again, index)
            self.cells[index] = cell  # nbclient puts the cell it ran in the notebook: the learner's goes back
            self.raised += [f"cell {index + 1} raised {out.get('ename')}: {str(out.get('evalue'))[:200]}"
                            for out in again.outputs if out.get("output_type") == "error"]
        return points

    def _replay(self, exercise: str) -> None:
        """Each other answer of `exercise` (self.replays) through its section, then the right one again."""
        section = self._section(exercise)
        for kind, sources in self.replays[exercise].items():
            for gid, points in self._run_section(exercise, section, sources).items():
                self.audits[gid].append([f"{kind}, replayed", points])
        self.raised = []
        for gid, points in self._run_section(exercise, section, {}).items():
            self.audits[gid].append([RIGHT_REPLAYED, self.tests[gid].points - points])
            if points < self.tests[gid].points:  # why, for audit_points to say
                self.audits[gid] += [[f"{RIGHT_REPLAYED}: {why}", None] for why in self.raised[:2]]


def audit_points(audits: dict[str, list[list]]) -> list[str]:
    """One line per cheat that earned points (`ex1_textbook: memorized earned 1`) or could not be tried, and per
    right answer that lost points when its section was replayed."""
    return [f"{gid}: {kind} earned {points:g}" if points is not None and kind != RIGHT_REPLAYED
            else f"{gid}: the right answer, its section replayed, lost {points:g}" if points is not None
            else f"{gid}: {kind}"
            for gid, tried in audits.items() for kind, points in tried if points != 0]

