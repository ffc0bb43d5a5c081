"""On a fresh broker the first group lookup meets no coordinator for seconds (`__consumer_offsets` is being
created): module 2's first `group_offsets` failed a learner's Run All with CoordinatorNotAvailableError. The lab asks
again, as Kafka's CLI does, and gives up with the broker's error when it never comes."""
from __future__ import annotations

import pytest
from kafka.errors import CoordinatorNotAvailableError, UnknownTopicOrPartitionError

from streamlab.observe.groups import coordinated


def test_a_coordinator_that_comes_is_waited_for():
    calls = []

    def lookup():
        calls.append(1)
        if len(calls) < 3:
            raise CoordinatorNotAvailableError()
        return {"g": {}}

    assert coordinated(lookup, wait_s=5) == {"g": {}} and len(calls) == 3


def test_another_error_is_raised_at_once():
    calls = []

    def lookup():
        calls.append(1)
        raise UnknownTopicOrPartitionError()

    with pytest.raises(UnknownTopicOrPartitionError):
        coordinated(lookup, wait_s=5)
    assert len(calls) == 1


def test_a_coordinator_that_never_comes_is_the_broker_s_error():
    def lookup():
        raise CoordinatorNotAvailableError()

    with pytest.raises(CoordinatorNotAvailableError):
        coordinated(lookup, wait_s=0.6)
