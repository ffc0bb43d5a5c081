"""What the hub's small services for learners share: who is asking, one JSON answer, bounded threads, an end.

Why: a learner's server asks the hub for a few things her own account may not do (grow a topic of hers on the room's
Kafka: partitions.py; grade her notebook with the hidden tests: checks.py). Each is a JupyterHub-managed service on
127.0.0.1 that runs as root, so each must know the learner from her server's token alone (`learner_of`, asked of the
hub's API), answer every request with one JSON object and one line a learner can act on (`Refused`), never let a
flood of connections cost threads (`Server`), and stop when the hub is gone, however it ended (`serve`).
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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


class _Handler(BaseHTTPRequestHandler):
    timeout = 10  # a connection that sends nothing is closed

    def do_GET(self):
        self._answer(200, self.server.service.describe())

    def do_POST(self):
        try:
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY:
                raise Refused(400, f"send a JSON body of at most {MAX_BODY} bytes")
            try:
                body = json.loads(self.rfile.read(length))
            except ValueError:
                raise Refused(400, "the body is not JSON") from None
            if not isinstance(body, dict):
                raise Refused(400, "send a JSON object")
            scheme, _, token = self.headers.get("Authorization", "").partition(" ")
            status, answer = 200, self.server.service.handle(token.strip() if scheme.lower() == "token" else "", body)
        except Refused as exc:
            status, answer = exc.status, {"error": str(exc)}
        except Exception as exc:  # anything else: the learner gets one line, the hub's log the rest
            self.log_error("%r", exc)
            status, answer = 500, {"error": f"the hub's {self.server.service.name} service failed: "
                                            f"{type(exc).__name__}"}
        self._answer(status, answer)

    def _answer(self, status: int, answer: dict) -> None:
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Server(ThreadingHTTPServer):
    """An HTTP server for one service (its `name`, `describe()` and `handle(token, body)`), MAX_ACTIVE at once."""

    daemon_threads = True

    def __init__(self, address, service):
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


def _until_orphaned(server: Server, parent: int) -> None:
    """Stop serving once the process that started this one (the hub) is gone, however it ended."""
    while os.getppid() == parent:
        time.sleep(2)
    server.shutdown()


def address(usage: str) -> tuple[int, str] | None:
    """(the port of $JUPYTERHUB_SERVICE_URL on 127.0.0.1, $JUPYTERHUB_API_URL), or None after printing `usage`."""
    from streamlab.settings import settings

    url = urllib.parse.urlsplit(settings.hub_service_url)
    api = settings.hub_api_url
    if url.hostname != "127.0.0.1" or not url.port or not api:
        print(f"usage: {usage}, started by the hub (it sets JUPYTERHUB_SERVICE_URL on 127.0.0.1 and "
              "JUPYTERHUB_API_URL)", file=sys.stderr)
        return None
    return url.port, api


def serve(port: int, service) -> int:
    """Serve `service` on 127.0.0.1:`port` until the hub stops it (or is gone)."""
    server = Server(("127.0.0.1", port), service)
    threading.Thread(target=_until_orphaned, args=(server, os.getppid()), daemon=True).start()
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0
