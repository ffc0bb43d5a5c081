"""Create, grow, describe and delete topics on the lab's broker."""
from __future__ import annotations

import time
import uuid
from contextlib import contextmanager

from streamlab.lab import access
from streamlab.lab.broker import ensure_broker
from streamlab.lab.wait import wait_until
from streamlab.settings import settings

access.install_clients()  # a workshop's SCRAM credentials on every kafka-python client (nothing outside one)


def admin(bootstrap: str | None = None):
    """A KafkaAdminClient on the lab's broker (close it when done)."""
    from kafka import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap or ensure_broker(), client_id="streamlab-admin",
                            request_timeout_ms=10_000)


def unique_name(prefix: str = "lab") -> str:
    """A topic name no other run uses, so notebooks and tests never collide (in a workshop, the learner's)."""
    return f"{access.topic_prefix()}{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(name: str, partitions: int = 1, bootstrap: str | None = None, replace: bool = False,
                 configs: dict | None = None, assignment: dict[int, list[int]] | None = None) -> str:
    """Create `name` with `partitions` partitions and topic `configs` (optionally deleting it first); wait until listed.

    `assignment` ({partition: [broker ids, the leader first]}) places the replicas instead of the broker."""
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    client = admin(bootstrap)
    try:
        if replace and name in client.list_topics():
            client.delete_topics([name])
            _wait(lambda: name not in client.list_topics())
        try:
            # -1: the broker's default replication factor (1 on the single broker, 3 on the cluster)
            if assignment:
                client.create_topics([NewTopic(name, replica_assignments=assignment, topic_configs=configs or {})])
            else:
                client.create_topics([NewTopic(name, partitions, -1, topic_configs=configs or {})])
        except TopicAlreadyExistsError:
            pass
        _wait(lambda: len(partition_ids(client, name)) >= partitions)
    finally:
        client.close()
    return name


def add_partitions(name: str, total: int, bootstrap: str | None = None) -> None:
    """Grow `name` to `total` partitions (on a workshop's hub, through its partitions service)."""
    from kafka.admin import NewPartitions

    client = admin(bootstrap)
    try:
        if settings.partitions_url:
            _grow_on_hub(settings.partitions_url, name, total)
        else:
            client.create_partitions({name: NewPartitions(total)})
        _wait(lambda: len(partition_ids(client, name)) >= total)
    finally:
        client.close()


def _grow_on_hub(url: str, name: str, total: int) -> None:
    """Ask the hub's partitions service (workshop/partitions.py) to grow `name`: a learner on a workshop's
    Kafka may not add partitions herself. A refusal, or a service that does not answer, is one LabError line."""
    from streamlab.errors import LabError
    from streamlab.lab import hubservice

    if not settings.hub_api_token:
        raise LabError(f"cannot grow {name} to {total} partitions: this server has no $JUPYTERHUB_API_TOKEN for "
                       "the hub's partitions service (start it from the hub)")
    try:
        hubservice.ask(url, {"topic": name, "total": total}, timeout=60)
    except hubservice.Refused as exc:
        raise LabError(f"the hub did not grow {name} to {total} partitions: {exc}") from None
    except hubservice.Unanswered as exc:
        raise LabError(f"cannot grow {name} to {total} partitions: the hub's partitions service at {url} does not "
                       f"answer ({exc}); ask the instructor to restart the hub") from None


def delete_topic(*names: str, bootstrap: str | None = None) -> None:
    """Delete topics that exist and wait until they are gone; names that do not exist are ignored."""
    client = admin(bootstrap)
    try:
        deadline = time.monotonic() + 30
        # A client that still knows a deleted topic (a cached producer refreshing its metadata) can have the
        # broker auto-create it again, so delete until it stays gone.
        while existing := [n for n in names if n in client.list_topics()]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"topics {existing} were still listed 30 s after being deleted")
            try:
                client.delete_topics(existing)
            except Exception:
                pass  # deleted by a concurrent call in between: the loop looks again
            try:
                _wait(lambda: not set(existing) & set(client.list_topics()), timeout=5)
            except TimeoutError:
                continue
    finally:
        client.close()


def delete_within(names, bootstrap: str, timeout: float = 5.0) -> list[str]:
    """Delete topics, giving up after `timeout` s whatever the broker does; return the names not confirmed gone."""
    import threading

    names = list(names)
    gone: list[str] = []

    def work():
        client = admin(bootstrap)
        try:
            existing = [n for n in names if n in client.list_topics()]
            if existing:
                try:
                    client.delete_topics(existing)
                except Exception:
                    pass  # some were deleted meanwhile: looked at again below
            end, listed = time.monotonic() + timeout, set(names)
            while time.monotonic() < end:
                listed = set(client.list_topics())
                if not listed & set(names):
                    break
                time.sleep(0.1)
            gone.extend(n for n in names if n not in listed)
        finally:
            client.close()

    thread = threading.Thread(target=work, daemon=True, name="streamlab-delete-topics")
    thread.start()
    thread.join(timeout)
    return [n for n in names if n not in gone]


def list_topics(bootstrap: str | None = None) -> list[str]:
    """The topics on the broker, internal ones left out."""
    client = admin(bootstrap)
    try:
        return sorted(t for t in client.list_topics() if not t.startswith("__"))
    finally:
        client.close()


def partition_count(name: str, bootstrap: str | None = None) -> int:
    """How many partitions `name` has (0 when it does not exist)."""
    client = admin(bootstrap)
    try:
        return len(partition_ids(client, name))
    finally:
        client.close()


def describe_topic(name: str, bootstrap: str | None = None) -> dict[int, tuple[int, int]]:
    """{partition: (earliest offset, latest offset)} for `name`."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap or ensure_broker(), enable_auto_commit=False)
    try:
        parts = sorted(consumer.partitions_for_topic(name) or [])
        tps = [TopicPartition(name, p) for p in parts]
        first = consumer.beginning_offsets(tps)
        last = consumer.end_offsets(tps)
        return {tp.partition: (first[tp], last[tp]) for tp in tps}
    finally:
        consumer.close()


def layout(name, bootstrap: str | None = None) -> dict[int, int]:
    """{partition: records held} of a topic ({} when there is no such topic): what a check compares with the
    lesson's own topic, so a notebook variable pointed at another topic is noticed."""
    if not isinstance(name, str) or not name:
        return {}
    try:
        return {p: last - first for p, (first, last) in describe_topic(name, bootstrap).items()}
    except Exception:  # a name that is not a topic (or not a valid one)
        return {}


def records(name: str, bootstrap: str | None = None, committed: bool = False, timeout: float = 30.0) -> list:
    """Every record of a topic, from its earliest offset to its latest one now (kafka-python ConsumerRecords),
    read with a plain Kafka client: the ground truth a check compares with, independent of Spark.

    `committed=True` reads with isolation_level=read_committed: records of aborted transactions are skipped, and
    the end is the last stable offset, so it never waits on an open transaction.
    """
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap or ensure_broker(), enable_auto_commit=False,
                             isolation_level="read_committed" if committed else "read_uncommitted")
    try:
        tps = [TopicPartition(name, p) for p in sorted(consumer.partitions_for_topic(name) or [])]
        if not tps:
            return []
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        out, deadline = [], time.monotonic() + timeout
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise TimeoutError(f"could not read {name} to its end within {timeout:.0f} s")
            for batch in consumer.poll(timeout_ms=300).values():
                out.extend(r for r in batch if r.offset < ends[TopicPartition(r.topic, r.partition)])
        return out
    finally:
        consumer.close()


@contextmanager
def temporary_topic(prefix: str = "lab", partitions: int = 1, bootstrap: str | None = None):
    """A fresh topic for the duration of a `with` block, deleted afterwards."""
    name = create_topic(unique_name(prefix), partitions, bootstrap)
    try:
        yield name
    finally:
        delete_topic(name, bootstrap=bootstrap)


def partition_ids(client, name: str) -> list[int]:
    """The partition numbers of topic `name` as `client` (an admin client) describes it; [] if there is none."""
    try:
        described = client.describe_topics([name])
    except Exception:
        return []
    for topic in described:
        if topic.get("name", topic.get("topic")) == name and not topic.get("error_code"):
            return sorted(p.get("partition_index", p.get("partition")) for p in topic.get("partitions", []))
    return []


def _wait(condition, timeout: float = 30.0) -> None:
    if not wait_until(condition, timeout, every=0.05):
        raise TimeoutError(f"the broker did not apply the topic change within {timeout:.0f} s")
