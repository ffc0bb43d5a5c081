"""Waiting on a condition, one way for the whole runtime (tests/support's `wait_until` is the tests' twin).

The lab waits on things another process does: a broker applying a topic change, Spark's listener bus filling its
status store, a killed node's partition electing a leader. Each is a condition looked at every few tenths of a
second until a deadline; the loop is written here once, so a longer interval on a loaded machine is one change.
"""
from __future__ import annotations

import time


def wait_until(condition, timeout: float, every: float = 0.2, *,
               retry_on: tuple[type[BaseException], ...] = ()) -> bool:
    """Whether `condition()` came true within `timeout` s, looked at every `every` s (once more after the deadline,
    so a slow last look still counts). An exception of a type in `retry_on` counts as not yet."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if condition():
                return True
        except retry_on:
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(every)
