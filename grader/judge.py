"""Hidden and visible checks, run in the grader's own process on values fetched from the learner's kernel.

Learner code runs in the same kernel as the lesson, so anything it can reach there (environment variables,
streamlab's check functions, IPython's exception handling, the checks' source) it can switch off, replace or read.
Here a test cell's code — visible and hidden part, taken from the instructor's source, never from the submission —
runs in the grader. Names the cell does not define itself are fetched from the kernel when the cell is judged:
plain data as a copy, the learner's functions as remote functions (run in the kernel, sandboxed, with plain-data
arguments), other objects as read-only proxies. Points come from the checks' own record, kept in this process.
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import importlib
import io
import json
import re
import symtable
import sys
import time
from dataclasses import dataclass, field

from .wire import AGENT, AGENT_NAME, WireError, decode, encode

# Modules a test cell may refer to by a name the notebook imported (the judge imports its own copy).
SAFE_MODULES = {"math", "json", "re", "statistics", "collections", "itertools", "functools", "pathlib",
                "datetime", "time", "random", "shutil", "os.path", "textwrap"}
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class KernelStuck(BaseException):
    """The learner's kernel stopped answering (a call that ignores interrupts): nothing more can be judged.

    A BaseException, so a check's `except Exception` cannot mistake it for the learner's function failing.
    """


class LearnerCodeError(Exception):
    """Base of the exceptions re-raised in the grader for an error raised by the learner's code in the kernel."""


_error_types: dict[str, type] = {}


def learner_error(name: str, message: str) -> LearnerCodeError:
    """An exception named like the learner's (e.g. `TypeError`), so `attempt` reports it as the kernel saw it."""
    name = name if _IDENT.match(name or "") else "Error"
    if name not in _error_types:
        _error_types[name] = type(name, (LearnerCodeError,), {})
    return _error_types[name](message)


@dataclass
class Check:
    """One expect()/reveal() outcome inside a test cell."""

    name: str
    passed: bool
    line: str


@dataclass
class Verdict:
    """What the judge decided about one test cell."""

    grade_id: str
    points: float
    max_points: float
    checks: list[Check] = field(default_factory=list)
    output: str = ""
    error: str | None = None  # an exception that stopped the cell's checks
    skipped: str | None = None
    # {"check", "task", "args"}: a check only the lab's cluster can judge (checks.OnTheCluster), which the grader's
    # own process runs after the sandbox's run (grading.settle_on_cluster); "ran" is set once it did.
    cluster: dict | None = None


def _one_line(text: str, limit: int = 400) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def free_names(source: str) -> tuple[list[str], set[str]]:
    """(names a cell reads but does not define, names its top level binds), scope by scope (Python's symtable):
    a function's parameter named like a notebook variable does not hide that variable elsewhere in the cell."""
    top = symtable.symtable(source, "<test>", "exec")
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    free: list[str] = []

    def visit(table) -> None:
        for sym in table.get_symbols():
            name = sym.get_name()
            if (sym.is_referenced() and (table is top or sym.is_global()) and name not in bound
                    and not hasattr(builtins, name) and name not in free):
                free.append(name)
        for child in table.get_children():
            visit(child)

    visit(top)
    return free, bound


def assigned_names(source: str) -> set[str]:
    """Names an answer cell binds at its top level (the learner's answer variables and functions)."""
    try:
        return free_names(source)[1]
    except SyntaxError:
        return set()


class Kernel:
    """The grader's own channel to the learner's kernel: fetch a value, call a function, with time limits."""

    def __init__(self, client, interrupt, timeout: float = 60.0):
        self.client, self.interrupt, self.timeout = client, interrupt, timeout
        self.stuck: str | None = None

    def _expression(self, expr: str, timeout: float | None = None) -> str:
        if self.stuck:
            raise KernelStuck(self.stuck)
        limit = self.timeout if timeout is None else timeout
        msg_id = self.client.execute("", silent=True, store_history=False, user_expressions={"r": expr})
        deadline = time.monotonic() + limit
        interrupted = False
        while True:
            remaining = deadline - time.monotonic()
            try:
                reply = self.client.get_shell_msg(timeout=max(0.1, remaining))
            except Exception:  # queue.Empty: no answer in time
                if interrupted:
                    self.stuck = (f"the notebook's code did not stop when interrupted after {limit:.0f} s "
                                  "(does it catch KeyboardInterrupt?)")
                    raise KernelStuck(self.stuck) from None
                self.interrupt()
                interrupted, deadline = True, time.monotonic() + 10
                continue
            if reply["parent_header"].get("msg_id") != msg_id:
                continue
            if interrupted:
                return json.dumps({"$err": ["TimeoutError", f"did not finish within {limit:.0f} s (an endless "
                                                            "loop?) and was interrupted"]})
            result = reply["content"].get("user_expressions", {}).get("r", {})
            if result.get("status") != "ok":
                return json.dumps({"$err": [result.get("ename", "Error"), result.get("evalue", "")]})
            text = result.get("data", {}).get("text/plain", "")
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                raise WireError("unreadable answer from the kernel") from None
            if not isinstance(value, str):
                raise WireError("unreadable answer from the kernel")
            return value

    def ping(self, timeout: float) -> None:
        """Return once the kernel answers; KernelStuck when it does not within `timeout` (plus an interrupt)."""
        self._expression("'ok'", timeout)

    def install_agent(self, code: str = AGENT) -> None:
        """Define the agent in the kernel (again, if learner code deleted it); or other grader-side `code`."""
        msg_id = self.client.execute(code, silent=True, store_history=False)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            reply = self.client.get_shell_msg(timeout=30)
            if reply["parent_header"].get("msg_id") == msg_id:
                return
        raise KernelStuck("the kernel did not answer the grader")

    def evaluate(self, expr: str, timeout: float | None = None) -> str:
        """The string an expression of the grader's own code in the kernel returns (a KernelStuck if none)."""
        return self._expression(expr, timeout)

    def ask(self, method: str, *args: str, timeout: float | None = None) -> str:
        call = f"{AGENT_NAME}.{method}({', '.join(repr(a) for a in args)})"
        text = self._expression(call, timeout)
        if '"$err"' in text[:20] and "NameError" in text and AGENT_NAME in text:
            self.install_agent()
            text = self._expression(call, timeout)
        return text


class Remote:
    """Builds grader-side stand-ins for what the kernel sends."""

    def __init__(self, kernel: Kernel, spark_factory, answer_names: set[str]):
        self.kernel, self.spark_factory, self.answer_names = kernel, spark_factory, answer_names

    def fetch(self, name: str):
        return self._decode(self.kernel.ask("get", json.dumps([name])), name)

    def _decode(self, text: str, root: str | None):
        def make(tag, payload):
            if tag == "$err":
                ename, message = (payload["$err"] + ["", ""])[:2] if isinstance(payload["$err"], list) else ("Error", "")
                raise learner_error(str(ename), str(message))
            if tag == "$spark":
                return self.spark_factory()
            path = payload.get(tag)
            if tag == "$imp":
                return self._import(path, root)
            if not _valid_path(path):
                raise WireError("bad reference")
            return RemoteFunction(self, path) if tag == "$fn" else RemoteObject(self, path, str(payload.get("type")))
        return decode(text, make)

    def _import(self, origin, root):
        if not (isinstance(origin, list) and len(origin) == 2 and isinstance(origin[0], str)):
            raise WireError("bad import reference")
        module, name = origin
        top = module.split(".")[0]
        if name is None:  # a module object: import the grader's own copy, from a short list
            if top == "streamlab" or module in SAFE_MODULES:
                return importlib.import_module(module)
            raise learner_error("TypeError", f"the grader does not use module {module} from the notebook")
        # A function or class from the course's own library may be used as itself, never as a learner's answer.
        if top == "streamlab" and root not in self.answer_names and isinstance(name, str) and _IDENT.match(
                name.replace(".", "_")):
            obj = importlib.import_module(module)
            for part in name.split("."):
                obj = getattr(obj, part)
            return obj
        if root is not None and root not in self.answer_names and (module, name) == ("pathlib", "Path"):
            import pathlib

            return pathlib.Path
        return RemoteFunction(self, [root]) if root else _unusable(module, name)

    def call(self, path, args, kwargs):
        payload = json.dumps([encode(list(args), _ref), encode(dict(kwargs), _ref)])
        return self._decode(self.kernel.ask("call", json.dumps(path), payload), None)

    def get(self, path):
        return self._decode(self.kernel.ask("get", json.dumps(path)), None)


def _unusable(module, name):
    raise learner_error("TypeError", f"{module}.{name} cannot be judged here")


def _valid_path(path) -> bool:
    return (isinstance(path, list) and path and isinstance(path[0], str) and _IDENT.match(path[0]) is not None
            and all((isinstance(s, str) and _IDENT.match(s)) or (isinstance(s, list) and len(s) == 2)
                    for s in path[1:]))


def _ref(value):
    return value._path if isinstance(value, (RemoteFunction, RemoteObject)) else None


class RemoteFunction:
    """A learner's function: calling it runs it in the learner's (sandboxed) kernel with plain-data arguments."""

    def __init__(self, remote: Remote, path: list):
        self._remote, self._path = remote, path

    def __call__(self, *args, **kwargs):
        return self._remote.call(self._path, args, kwargs)

    def filled_in_kernel(self) -> bool:
        """Whether the learner's function holds no `...` of its skeleton (scaffold.filled, asked in the kernel: a
        tampered answer can only say it is filled, and is then judged as written)."""
        try:
            return self._remote.call(["streamlab", "course", "scaffold", "filled"], (self,), {}) is not False
        except (LearnerCodeError, WireError):
            return True

    def __repr__(self) -> str:
        return f"<the notebook's {_show(self._path)}>"


class RemoteObject:
    """An object of the notebook's (a query, a demo): attributes are read from the kernel as plain data."""

    def __init__(self, remote: Remote, path: list, type_name: str):
        self._remote, self._path, self._type = remote, path, type_name

    def __getattr__(self, name: str):
        if name.startswith("__") or not _IDENT.match(name):
            raise AttributeError(name)
        return self._remote.get(self._path + [name])

    def __getitem__(self, key):
        if not isinstance(key, (str, int)):
            raise TypeError("only str or int keys can be read from the notebook's objects")
        return self._remote.get(self._path + [["k", key]])

    def __call__(self, *args, **kwargs):
        return self._remote.call(self._path, args, kwargs)

    def __repr__(self) -> str:
        if self._type == "builtins.ellipsis":  # what a skeleton's `return ...` gives
            return "`...` (not written yet)"
        return f"<the notebook's {_show(self._path)} ({self._type})>"


def _show(path) -> str:
    out = str(path[0])
    for step in path[1:]:
        out += f".{step}" if isinstance(step, str) else f"[{step[1]!r}]"
    return out


class RemoteNotebook:
    """checks.notebook() while grading: the learner's kernel, reached through the agent."""

    def __init__(self, remote: Remote):
        self.remote = remote

    def ref(self, name: str):
        """A reference to the kernel's `name`, to pass to call() (its value is never fetched)."""
        parts = name.split(".")
        if not all(_IDENT.match(p) for p in parts):
            raise ValueError(f"not a name: {name!r}")
        return RemoteObject(self.remote, parts, "reference")

    def call(self, name: str, *args, **kwargs):
        """Run the kernel's `name` there with these arguments; its result as plain data (or a proxy)."""
        return self.remote.call(self.ref(name)._path, args, kwargs)


def score(verdict: Verdict) -> Verdict:
    """Give a judged test cell its points: all when every check passed and nothing broke, else none."""
    total = len(verdict.checks) + (1 if verdict.error else 0)
    passed = sum(c.passed for c in verdict.checks)
    # All or nothing per test cell: its checks try one behaviour on several inputs, and an answer that passes
    # only some of them is most often a constant that happens to fit one (`return "stable"`). Partial credit
    # comes from an exercise's several test cells.
    verdict.points = float(verdict.max_points) if total and passed == total else 0.0
    if not total:
        verdict.error = "the test made no check (tell the instructor)"
    return verdict


def judged_checks(record) -> list[Check]:
    """The checks' own record (checks.recording) as the verdict keeps it."""
    return [Check(c.name, c.passed, _one_line(c.line)) for c in record]


ON_THE_CLUSTER = "○ judged on the lab's cluster, by the grader's own run"


class Judge:
    """Runs the instructor's test cells for one notebook; keeps names the test cells themselves define."""

    def __init__(self, kernel: Kernel, spark_factory, answer_names: set[str]):
        self.remote = Remote(kernel, spark_factory, answer_names)
        self.kernel = kernel
        self.own: dict = {}  # names bound by earlier test cells (e.g. a run one check starts and the next reads)

    def judge(self, grade_id: str, source: str, max_points: float) -> Verdict:
        """Run one test cell here; its points when every check passed, else 0 (also when the cell breaks)."""
        from streamlab.course import checks
        from streamlab.errors import first_line

        verdict = Verdict(grade_id, 0.0, max_points)
        try:
            free, top = free_names(source)
        except SyntaxError as exc:
            verdict.error = f"the test itself does not parse ({exc.msg}); tell the instructor"
            return verdict
        from streamlab.course import quiz

        # The checks themselves always come from here, whatever the notebook bound to these names.
        namespace = {"__name__": "__judge__", "__builtins__": builtins, **self.own, "checks": checks, "quiz": quiz,
                     "expect": checks.expect, "expect_equal": checks.expect_equal, "expect_close": checks.expect_close}
        out = io.StringIO()
        with checks.notebook_in(RemoteNotebook(self.remote)), checks.recording() as record, \
                contextlib.redirect_stdout(out):
            try:
                for name in free:
                    if name not in namespace:
                        namespace[name] = self.remote.fetch(name)
                exec(compile(source, f"<test {grade_id}>", "exec"), namespace)
            except KernelStuck:
                raise
            except checks.OnTheCluster as handed:
                verdict.cluster = {"check": handed.check, "task": handed.task, "args": handed.given}
            except LearnerCodeError as exc:
                verdict.error = f"{type(exc).__name__}: {exc}"
            except WireError as exc:
                verdict.error = f"the grader could not read the notebook's values ({exc})"
            except checks.CheckFailed as exc:  # an old-style raising check
                verdict.error = str(exc)
            except Exception as exc:
                verdict.error = first_line(exc, 240)
        for name in top:
            if name in namespace:
                self.own[name] = namespace[name]
        verdict.checks = judged_checks(record)
        verdict.output = out.getvalue()
        if verdict.cluster is not None:  # judged after the run, by the grader's own process (or left out)
            verdict.skipped = ON_THE_CLUSTER
            return verdict
        return score(verdict)


def preload() -> None:
    """Import everything a check may import, before any learner code runs (files could change later)."""
    import pkgutil

    import streamlab

    for info in pkgutil.walk_packages(streamlab.__path__, "streamlab."):
        try:
            importlib.import_module(info.name)
        except Exception:
            pass
    for name in SAFE_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    for name in ("pandas", "kafka", "kafka.admin", "pyspark.sql", "pyspark.sql.functions"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    sys.modules.setdefault("rfc3987_syntax", None)
