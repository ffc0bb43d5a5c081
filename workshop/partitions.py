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

import json
import math
import os
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from workshop import kafka

MAX_PARTITIONS = 12  # the top of the demos' "topic partitions" slider (streamlab/demo/controls.py)
MAX_BODY = 1024
MAX_ACTIVE = 16  # requests served at once; a connection beyond them is closed unanswered
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1 only: never an http_proxy


class Refused(Exception):
    """A request the service does not carry out: an HTTP status and the one line the learner sees."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def learner_of(api_url: str, token: str) -> str:
    """The learner the hub says `token` belongs to, or Refused."""
    if not token:
        raise Refused(401, "no token: send your server's $JUPYTERHUB_API_TOKEN (Authorization: token ...)")
    request = urllib.request.Request(api_url.rstrip("/") + "/user", headers={"Authorization": f"token {token}"})
    try:
        with _DIRECT.open(request, timeout=10) as answer:
            model = json.load(answer)
    except urllib.error.HTTPError:
        raise Refused(403, "the hub does not know this token") from None
    except (OSError, ValueError) as exc:
        raise Refused(503, f"the hub did not answer ({exc})") from None
    if not isinstance(model, dict) or model.get("kind") != "user" or not isinstance(model.get("name"), str):
        raise Refused(403, "this token is not a learner's")
    return model["name"]


class Service:
    """Grows learners' topics with the room's admin credentials, within the bounds above."""

    def __init__(self, room: kafka.Room, api_url: str):
        self.room, self.api_url = room, api_url
        self._lock = threading.Lock()
        self._next: dict[str, float] = {}  # per learner: when her partitions added so far are paid for

    def grow(self, token: str, body) -> dict:
        """Grow body["topic"] to body["total"] partitions for the learner of `token`; what it has now."""
        from kafka.errors import KafkaError

        from streamlab.lab.topics import _partitions

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
            admin = kafka._admin(self.room)
            try:
                current = len(_partitions(admin, topic))
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


class _Handler(BaseHTTPRequestHandler):
    timeout = 10  # a connection that sends nothing is closed

    def do_GET(self):
        self._answer(200, {"service": "streamlab partitions", "max": MAX_PARTITIONS})

    def do_POST(self):
        try:
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY:
                raise Refused(400, f'send a JSON body {{"topic": ..., "total": ...}} of at most {MAX_BODY} bytes')
            try:
                body = json.loads(self.rfile.read(length))
            except ValueError:
                raise Refused(400, "the body is not JSON") from None
            scheme, _, token = self.headers.get("Authorization", "").partition(" ")
            status, answer = 200, self.server.service.grow(token.strip() if scheme.lower() == "token" else "", body)
        except Refused as exc:
            status, answer = exc.status, {"error": str(exc)}
        except Exception as exc:  # anything else: the learner gets one line, the hub's log the rest
            self.log_error("%r", exc)
            status, answer = 500, {"error": f"the partitions service failed: {type(exc).__name__}"}
        self._answer(status, answer)

    def _answer(self, status: int, answer: dict) -> None:
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, service: Service):
        self.service = service
        self._slots = threading.BoundedSemaphore(MAX_ACTIVE)
        super().__init__(address, _Handler)

    def process_request(self, request, client_address):
        if not self._slots.acquire(blocking=False):  # a flood of connections costs no threads
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def _until_orphaned(server: _Server, parent: int) -> None:
    """Stop serving once the process that started this one (the hub) is gone, however it ended."""
    while os.getppid() == parent:
        time.sleep(2)
    server.shutdown()


def main(argv: list[str] | None = None) -> int:
    """Serve until the hub stops this service (or is gone)."""
    args = sys.argv[1:] if argv is None else argv
    url = urllib.parse.urlsplit(os.environ.get("JUPYTERHUB_SERVICE_URL", ""))
    api = os.environ.get("JUPYTERHUB_API_URL", "")
    if len(args) != 2 or not args[1].isdigit() or url.hostname != "127.0.0.1" or not url.port or not api:
        print("usage: python -m workshop.partitions KAFKA_FOLDER KAFKA_PORT, started by the hub (it sets "
              "JUPYTERHUB_SERVICE_URL on 127.0.0.1 and JUPYTERHUB_API_URL)", file=sys.stderr)
        return 2
    room = kafka.Room(Path(args[0]), int(args[1]))
    if not (room.folder / "admin.secret").is_file():  # the hub dies with a managed service, so this one stays up
        print(f"no room's Kafka in {room.folder} yet (its admin.secret is missing): requests are refused until "
              "the workshop's Kafka is set up", file=sys.stderr)
    server = _Server(("127.0.0.1", url.port), Service(room, api))
    threading.Thread(target=_until_orphaned, args=(server, os.getppid()), daemon=True).start()
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
