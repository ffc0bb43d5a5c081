"""Consumer groups on the broker: what `kafka-consumer-groups.sh` lists, describes, resets and deletes.

Spark's Kafka source is not a group member: its executors `assign()` partitions and never commit, so these tools
see an ordinary consumer's progress but not a query's (a query's position lives in its checkpoint: see
`streamlab.observe.checkpoint` and `streamlab.observe.lag`). The course uses them to show that contrast, and to clean up the
groups it makes.
"""
from __future__ import annotations

import time
import uuid

from streamlab.observe import lag as _lag
from streamlab.lab import teardown
from streamlab.lab.broker import ensure_broker, probe
from streamlab.lab.topics import admin, describe_topic

_made_groups: list[str] = []
_made_on: str | None = None  # the broker committing_consumer last made one on (the kernel's exit uses only that one)


def consumer_groups(bootstrap: str | None = None):
    """Every consumer group the broker knows, with its committed offsets (as `kafka-consumer-groups --describe`)."""
    import pandas as pd

    client = admin(bootstrap)
    try:
        rows = []
        for group in client.list_groups():
            gid = group["group_id"]
            committed = coordinated(lambda: client.list_group_offsets(gid)).get(gid, {})
            if not committed:
                rows.append({"group": gid, "state": group.get("group_state"), "topic": None, "partition": None,
                             "committed_offset": None})
            for tp, meta in sorted(committed.items()):
                rows.append({"group": gid, "state": group.get("group_state"), "topic": tp.topic,
                             "partition": tp.partition, "committed_offset": meta.offset})
        return pd.DataFrame(rows, columns=["group", "state", "topic", "partition", "committed_offset"])
    finally:
        client.close()


def committing_consumer(topic: str, n: int, group: str | None = None, bootstrap: str | None = None) -> str:
    """An ordinary consumer: join `group` (a fresh one by default), read `n` records from the start, commit, leave.

    Returns the group id. Groups made here are deleted by `forget_groups()` (and when the kernel exits).
    """
    from kafka import KafkaConsumer

    global _made_on
    group = group or f"plain-app-{uuid.uuid4().hex[:6]}"
    bootstrap = bootstrap or ensure_broker()
    _made_on = bootstrap
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    _made_groups.append(group)
    try:
        read, deadline = 0, time.monotonic() + 20
        while read < n and time.monotonic() < deadline:
            for records in consumer.poll(500, max_records=n - read).values():
                read += len(records)
        consumer.commit()  # commits the position: the next offset to read, per assigned partition
    finally:
        consumer.close()
    return group


def groups_on(topic: str, bootstrap: str | None = None) -> dict:
    """{group id: {partition: committed offset}} for every consumer group that committed offsets on `topic`."""
    client = admin(bootstrap)
    try:
        found = {}
        for group in client.list_groups():
            gid = group["group_id"] if isinstance(group, dict) else group[0]
            committed = client.list_group_offsets(gid).get(gid, {})
            parts = {tp.partition: meta.offset for tp, meta in committed.items() if tp.topic == topic}
            if parts:
                found[gid] = dict(sorted(parts.items()))
        return found
    finally:
        client.close()


def all_groups(bootstrap: str | None = None) -> list[str]:
    """Every consumer group id the broker knows (what `kafka-consumer-groups --list` prints)."""
    client = admin(bootstrap)
    try:
        return sorted(g["group_id"] if isinstance(g, dict) else g[0] for g in client.list_groups())
    finally:
        client.close()


def describe_group(group: str, topic: str, bootstrap: str | None = None):
    """A table like `kafka-consumer-groups --describe --group G`: committed offset, log end offset, lag."""
    import pandas as pd

    committed = groups_on(topic, bootstrap).get(group, {})
    ends = _lag.latest_offsets(topic, bootstrap)[topic]
    rows = [{"TOPIC": topic, "PARTITION": p, "CURRENT-OFFSET": committed.get(p, "-"), "LOG-END-OFFSET": end,
             "LAG": end - committed[p] if p in committed else "-"} for p, end in sorted(ends.items())]
    return pd.DataFrame(rows).set_index("PARTITION")


def forget_groups(bootstrap: str | None = None) -> list[str]:
    """Delete the consumer groups `committing_consumer` made; returns their ids."""
    gone = list(dict.fromkeys(_made_groups))
    if gone:
        client = admin(bootstrap)
        try:
            known = set(all_groups(bootstrap))
            targets = [g for g in gone if g in known]
            if targets:
                client.delete_groups(targets)
        finally:
            client.close()
    _made_groups.clear()
    return gone


def _at_exit() -> None:
    """Delete this kernel's groups on the broker they were made on, if it still answers: an exit never starts one
    (the learner may have stopped it)."""
    try:
        if _made_groups and _made_on and probe(_made_on, timeout=1.0) == "kafka":
            forget_groups(_made_on)
    except Exception:  # noqa: BLE001 - at exit the broker may already be gone: nothing to say, nothing to do
        pass


teardown.register("consumer groups", _at_exit)


def consume_and_commit(topic: str, group: str, bootstrap: str | None = None, timeout: float = 10.0) -> int:
    """Read `topic` to its end as a plain Kafka consumer in `group` (subscribe, poll, commit); return records read."""
    from kafka import KafkaConsumer

    total = sum(last for _, last in describe_topic(topic, bootstrap).values())
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap or ensure_broker(), group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
    read, deadline = 0, time.monotonic() + timeout
    try:
        while read < total and time.monotonic() < deadline:
            read += sum(len(batch) for batch in consumer.poll(timeout_ms=500).values())
        consumer.commit()  # what Spark never does
    finally:
        consumer.close()
    return read


def delete_group(group: str, bootstrap: str | None = None) -> None:
    """Delete a consumer group (and its committed offsets) from the broker; a missing group is ignored."""
    client = admin(bootstrap)
    try:
        if any((g["group_id"] if isinstance(g, dict) else g[0]) == group for g in client.list_groups()):
            client.delete_groups([group])
    except Exception:
        pass  # a group that still has members, or a broker that is going away: nothing left to clean here
    finally:
        client.close()


def group_offsets(group: str, bootstrap: str | None = None) -> dict:
    """{topic: {partition: committed offset}} that Kafka holds for `group` ({} when it committed nothing)."""
    client = admin(bootstrap)
    try:
        found = coordinated(lambda: client.list_group_offsets({group: None})).get(group, {})
    finally:
        client.close()
    out: dict = {}
    for tp, meta in sorted(found.items()):
        out.setdefault(tp.topic, {})[tp.partition] = meta.offset
    return out


def reset_group(group: str, topic: str, to: str = "earliest", bootstrap: str | None = None) -> dict:
    """Commit `to` ("earliest" or "latest") as `group`'s offsets on every partition of `topic`, like
    `kafka-consumer-groups --group G --topic T --reset-offsets --to-earliest --execute`; returns them."""
    from kafka import TopicPartition
    from kafka.admin import OffsetSpec

    spec = {"earliest": OffsetSpec.EARLIEST, "latest": OffsetSpec.LATEST}[to]
    client = admin(bootstrap)
    try:
        coordinated(lambda: client.reset_group_offsets(group, {TopicPartition(topic, p): spec
                                                              for p in describe_topic(topic, bootstrap)}))
    finally:
        client.close()
    return group_offsets(group, bootstrap)


COORDINATOR_WAIT_S = 30.0  # a broker's first group: __consumer_offsets is still being created (seconds)


def coordinated(call, wait_s: float = COORDINATOR_WAIT_S):
    """`call()`, asked again every 0.5 s for up to `wait_s` while the group coordinator is not there yet (a fresh
    broker creating `__consumer_offsets`), as Kafka's own CLI retries; any other error at once."""
    from kafka.errors import CoordinatorLoadInProgressError, CoordinatorNotAvailableError, NotCoordinatorError

    deadline = time.monotonic() + wait_s
    while True:
        try:
            return call()
        except (CoordinatorNotAvailableError, CoordinatorLoadInProgressError, NotCoordinatorError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
