"""What the kernel stops when it exits, in one stated order: each concern registers a step, one handler runs them.

Why one registry: the lab used to have an `atexit` handler per module (demos, lag monitors, consumer groups,
background producers, the offline sink's producers, the lifecycle's cleanup, the JVM's temporary folder), and
`atexit` runs handlers in the reverse order they were registered, that is in the reverse order a notebook happened
to import those modules. So whether the demos stopped before their queries, or the JVM's folder went before the
queries writing into it, depended on the notebook's first cells. Here the order is one list, `ORDER`, read top to
bottom; a step that fails says one line on stderr and the steps after it still run; each step runs once, so
`run()` may be called again (by a test, or by the exit handler after a test) and does nothing more.

Adding a concern that needs stopping at exit is one line where that concern lives:
`teardown.register("lag monitors", stop_monitors)` with the name placed in `ORDER` (or an explicit `order=`).
"""
from __future__ import annotations

import atexit
import sys
import threading
from dataclasses import dataclass
from typing import Callable

# The kernel's exit, first to last: what produces or reads data stops before what it uses goes away.
ORDER: dict[str, int] = {
    "live demos": 10,  # each demo stops its own query and producers, and knows which ones they are
    "incidents": 20,  # the incident round's faults and queries (streamlab.course.incidents)
    "lag monitors": 30,  # threads polling queries: stopped before the queries they poll
    "queries, topics and folders": 40,  # lifecycle: every query, background producer, checkpoint folder, topic
    "background producers": 50,  # any producer still running (when the lifecycle had nothing to clean)
    "offline sink producers": 60,  # the offline Kafka sink's cached producers in this process
    "consumer groups": 70,  # the groups committing_consumer made (the broker is still there)
    "broker user": 80,  # this kernel no longer counts as a user of the lab's broker
    "jvm folder": 90,  # the driver JVM's temporary folder: last, once nothing writes into it
}


@dataclass
class Step:
    """One named step of a teardown, run at its `order` (ties: in the order they were registered)."""

    name: str
    run: Callable[[], object]
    order: int
    done: bool = False


class Teardown:
    """An ordered set of named steps, each run at most once; `reset()` makes them runnable again (for tests)."""

    def __init__(self, order: dict[str, int] | None = None):
        self.order = dict(ORDER if order is None else order)
        self.steps: dict[str, Step] = {}
        self._lock = threading.RLock()

    def register(self, name: str, step: Callable[[], object], order: int | None = None) -> Callable[[], object]:
        """Run `step` at exit at `order` (default: the name's place in ORDER); the same name again replaces it."""
        if order is None:
            if name not in self.order:
                raise ValueError(f"teardown step {name!r} has no place: add it to teardown.ORDER or pass order=")
            order = self.order[name]
        with self._lock:
            self.steps.pop(name, None)  # a re-registered step (a reloaded module) goes to the end of its ties
            self.steps[name] = Step(name, step, order)
        return step

    def names(self) -> list[str]:
        """The registered steps' names, in the order run() takes them."""
        with self._lock:
            return [s.name for s in sorted(self.steps.values(), key=lambda s: s.order)]  # stable: ties keep order

    def run(self) -> list[str]:
        """Run every step not run yet, in order; one line on stderr for each that fails; return the names run."""
        ran = []
        while True:  # a step registered while others run (a module a step imports) runs in this pass too
            with self._lock:  # held only to pick the steps: a step may start threads that register or run
                todo = [s for s in sorted(self.steps.values(), key=lambda s: s.order) if not s.done]
                for step in todo:
                    step.done = True  # a step that fails, or calls run() itself, is not run again
            if not todo:
                return ran
            for step in todo:
                ran.append(step.name)
                try:
                    step.run()
                except Exception as exc:  # noqa: BLE001 - one failing step must not stop the steps after it
                    detail = str(exc).strip().splitlines()
                    print(f"streamlab at exit: {step.name} failed: {type(exc).__name__}"
                          f"{': ' + detail[0] if detail else ''}", file=sys.stderr, flush=True)

    def reset(self, forget: bool = False) -> None:
        """Make every step runnable again; with forget=True, drop the steps too."""
        with self._lock:
            if forget:
                self.steps.clear()
            for step in self.steps.values():
                step.done = False


_kernel = Teardown()


def register(name: str, step: Callable[[], object], order: int | None = None) -> Callable[[], object]:
    """Stop something of this kernel when it exits: `step` runs at the place of `name` in ORDER (or at `order`)."""
    return _kernel.register(name, step, order)


def run() -> list[str]:
    """Run the kernel's teardown now (steps already run are skipped); return the names run."""
    return _kernel.run()


def reset(forget: bool = False) -> None:
    """Make the kernel's teardown steps runnable again (forget=True: drop them), for tests."""
    _kernel.reset(forget)


def names() -> list[str]:
    """The kernel's teardown steps, in the order they run."""
    return _kernel.names()


atexit.register(run)  # the one exit handler of streamlab (tests/unit/test_teardown.py checks there is no other)
