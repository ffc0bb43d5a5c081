"""The hub's partitions service: it grows a learner's topic for the live demos' "topic partitions" slider.

Why it exists: Kafka checks a CreatePartitions request against ALTER on the topic only; it passes neither topic
policy (RoomPolicy sees creations and config changes, not growth), so a learner holding ALTER on her own topics could
grow one to ~10,000 partitions in one request, about three files each, past the broker's open-file limit: the whole
room's Kafka dies (the red team's K21). Learners' ACLs therefore hold no ALTER (kafka.LEARNER_OPERATIONS), and this
small service does the one growth the course needs, with the room's admin credentials, within bounds:
- the caller is the learner the hub names for her server's token (`GET /hub/api/user` with $JUPYTERHUB_API_TOKEN,
  which every kernel of her server has); service tokens and unknown tokens are refused;
- only a topic that starts with her prefix (`<name>-`), to at most MAX_PARTITIONS (the slider's top);
- no faster than Kafka's mutation quota would let her grow it herself (kafka.MUTATION_RATE partitions a second).

The hub starts and stops it (hub.configure: `c.JupyterHub.services`) as
`python -m workshop.partitions KAFKA_FOLDER KAFKA_PORT`, listening on $JUPYTERHUB_SERVICE_URL (127.0.0.1);
the spawner gives each server its URL as STREAMLAB_PARTITIONS_URL, which streamlab.lab.topics.add_partitions uses.
"""
from __future__ import annotations

import math
import sys
import threading
import time
from pathlib import Path

from workshop import kafka, services
from workshop.services import Refused, learner_of

MAX_PARTITIONS = 12  # the top of the demos' "topic partitions" slider (streamlab/demo/controls.py)
USAGE = "python -m workshop.partitions KAFKA_FOLDER KAFKA_PORT"


class Service:
    """Grows learners' topics with the room's admin credentials, within the bounds above."""

    name = "partitions"

    def __init__(self, room: kafka.Room, api_url: str):
        self.room, self.api_url = room, api_url
        self._lock = threading.Lock()
        self._next: dict[str, float] = {}  # per learner: when her partitions added so far are paid for

    def describe(self) -> dict:
        """What a GET answers."""
        return {"service": "streamlab partitions", "max": MAX_PARTITIONS}

    def handle(self, token: str, body: dict) -> dict:
        """A POST: grow the topic it names (services.Server calls this)."""
        return self.grow(token, body)

    def grow(self, token: str, body) -> dict:
        """Grow body["topic"] to body["total"] partitions for the learner of `token`; what it has now."""
        from kafka.errors import KafkaError

        from streamlab.lab.topics import partition_ids

        name = learner_of(self.api_url, token)
        if not isinstance(body, dict):
            raise Refused(400, 'send a JSON object {"topic": ..., "total": ...}')
        topic, total = body.get("topic"), body.get("total")
        if not isinstance(topic, str) or not topic.startswith(f"{name}-"):
            raise Refused(403, f"{topic!r} is not one of your topics (your topics start with {name}-)")
        if type(total) is not int or not 1 <= total <= MAX_PARTITIONS:
            raise Refused(400, f"{total!r} partitions: the hub grows a topic to at most {MAX_PARTITIONS} "
                               "(the demos' slider)")
        with self._lock:  # one growth at a time: one admin client, and each learner's rate kept exactly
            if not (self.room.folder / "admin.secret").is_file():
                raise Refused(503, "the workshop's Kafka is not set up: ask the instructor to restart the workshop")
            admin = kafka.admin_client(self.room)
            try:
                current = len(partition_ids(admin, topic))
                if not current:
                    raise Refused(404, f"there is no topic {topic}")
                if total <= current:
                    raise Refused(400, f"{topic} has {current} partitions already: Kafka adds partitions, "
                                       "never removes them")
                now = time.monotonic()
                start = max(now, self._next.get(name, now))
                wait = start - now - MAX_PARTITIONS / kafka.MUTATION_RATE  # a burst of one slider's worth
                if wait > 0:
                    raise Refused(429, f"too many partitions added in a row: try again in {math.ceil(wait)} s")
                try:
                    admin.create_partitions({topic: total})
                except KafkaError as exc:
                    raise Refused(502, f"Kafka refused: {exc}") from None
                self._next[name] = start + (total - current) / kafka.MUTATION_RATE
            finally:
                admin.close()
        return {"topic": topic, "partitions": total}


def main(argv: list[str] | None = None) -> int:
    """Serve until the hub stops this service (or is gone)."""
    args = sys.argv[1:] if argv is None else argv
    where = services.address(USAGE)
    if where is None:
        return 2
    if len(args) != 2 or not args[1].isdigit():
        print(f"usage: {USAGE}", file=sys.stderr)
        return 2
    room = kafka.Room(Path(args[0]), int(args[1]))
    if not (room.folder / "admin.secret").is_file():  # the hub dies with a managed service, so this one stays up
        print(f"no room's Kafka in {room.folder} yet (its admin.secret is missing): requests are refused until "
              "the workshop's Kafka is set up", file=sys.stderr)
    return services.serve(where[0], Service(room, where[1]))


if __name__ == "__main__":
    sys.exit(main())
