"""streamlab.lab.wait.wait_until: the runtime's one poll loop (topics, failover, executors' read map use it)."""
from __future__ import annotations

import itertools

import pytest

from streamlab.lab.wait import wait_until


def test_a_condition_that_comes_true_is_waited_for():
    calls = itertools.count(1)
    assert wait_until(lambda: next(calls) >= 3, timeout=30, every=0.001)
    assert next(calls) == 4, "looked at until the third call held, and not after"


def test_a_condition_that_never_holds_is_false_after_the_deadline_and_looked_at_once_more():
    calls = []
    assert wait_until(lambda: calls.append(1) and False, timeout=0.0, every=0.001) is False
    assert len(calls) == 1


def test_only_the_listed_errors_count_as_not_yet():
    answers = iter([ConnectionError("broker just killed"), False, True])

    def condition():
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert wait_until(condition, timeout=30, every=0.001, retry_on=(OSError,))
    with pytest.raises(ZeroDivisionError):
        wait_until(lambda: 1 / 0, timeout=30, every=0.001, retry_on=(OSError,))
