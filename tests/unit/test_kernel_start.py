"""A kernel that dies before it answers because another process took one of its ports is started again: that is
the machine's doing, never the notebook's (a rehearsal's cluster run failed once with "Address already in use")."""
from __future__ import annotations

from contextlib import contextmanager

import pytest

from grader.runner import KERNEL_START_S, KERNEL_STARTS, kernel_started


class FakeClient:
    """What kernel_started touches of an nbclient NotebookClient: setup_kernel(), failing its first starts."""

    def __init__(self, failures: int, message: str = "Kernel died before replying to kernel_info"):
        self.failures, self.message, self.starts, self.running, self.stopped = failures, message, 0, False, 0
        self.startup_timeout, self.waited = 60, None  # nbclient's default

    @contextmanager
    def setup_kernel(self, **kwargs):
        self.starts += 1
        self.waited = self.startup_timeout
        if self.starts <= self.failures:
            raise RuntimeError(self.message)
        self.running = True
        try:
            yield
        finally:
            self.running, self.stopped = False, self.stopped + 1


def test_a_kernel_that_died_before_answering_is_started_again_and_stopped_once():
    client = FakeClient(failures=KERNEL_STARTS - 1)
    with kernel_started(client):
        assert client.running
    assert client.starts == KERNEL_STARTS and client.stopped == 1 and not client.running


def test_it_gives_up_after_its_tries_and_other_errors_are_not_retried():
    client = FakeClient(failures=KERNEL_STARTS)
    with pytest.raises(RuntimeError, match="Kernel died"), kernel_started(client):
        pass
    assert client.starts == KERNEL_STARTS
    other = FakeClient(failures=1, message="No such kernel named python3")
    with pytest.raises(RuntimeError, match="No such kernel"), kernel_started(other):
        pass
    assert other.starts == 1


def test_an_error_inside_still_stops_the_kernel():
    client = FakeClient(failures=0)
    with pytest.raises(ZeroDivisionError), kernel_started(client):
        1 / 0
    assert client.stopped == 1


def test_a_kernel_slow_to_answer_on_a_loaded_machine_gets_longer_than_nbclient_s_minute():
    """CI's container ran two checks beside both lanes, and a sandboxed kernel took over 60 s to answer."""
    client = FakeClient(failures=0)
    with kernel_started(client):
        pass
    assert client.waited == KERNEL_START_S > 60
