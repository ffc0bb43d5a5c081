"""A learner at the hub without a browser: sign up, log in, start the server, run cells — through the hub's HTTP API
and the kernel's websocket, as JupyterLab does. The workshop's CI simulation and `make bench` use it.
"""
from __future__ import annotations

import json
import time
import uuid
from datetime import datetime, timezone

import requests


class HubError(RuntimeError):
    """The hub or a learner's server answered with an error."""


class Learner:
    """One learner's session with the hub at `hub_url` (http://127.0.0.1:18000)."""

    def __init__(self, hub_url: str, name: str, password: str):
        self.hub, self.name, self.password = hub_url.rstrip("/"), name, password
        self.http = requests.Session()
        self.token: str | None = None

    def _form(self, path: str, data: dict) -> requests.Response:
        self.http.get(f"{self.hub}{path}", timeout=30)
        xsrf = self.http.cookies.get("_xsrf", "")
        reply = self.http.post(f"{self.hub}{path}", data={**data, "_xsrf": xsrf}, timeout=30,
                               allow_redirects=False)
        if reply.status_code >= 400:
            raise HubError(f"POST {path}: {reply.status_code} {reply.text[:200]}")
        return reply

    def sign_up(self) -> None:
        """Sign up (the native authenticator; the instructor approves the account afterwards)."""
        self._form("/hub/signup", {"username": self.name, "signup_password": self.password,
                                   "signup_password_confirmation": self.password})

    def log_in(self) -> None:
        """Log in with the form, then get an API token for this learner (what JupyterLab's session holds)."""
        reply = self._form("/hub/login", {"username": self.name, "password": self.password})
        if reply.status_code != 302:
            raise HubError(f"{self.name} could not log in (status {reply.status_code}: not approved yet?)")
        xsrf = self.http.cookies.get("_xsrf", "")
        reply = self.http.post(f"{self.hub}/hub/api/users/{self.name}/tokens", json={"note": "workshop client"},
                               headers={"X-XSRFToken": xsrf}, timeout=30)
        if reply.status_code >= 400:
            raise HubError(f"token for {self.name}: {reply.status_code} {reply.text[:200]}")
        self.token = reply.json()["token"]

    def api(self, method: str, path: str, **kwargs) -> requests.Response:
        """A request with this learner's token (path from the hub's root: /hub/api/… or /user/<name>/api/…)."""
        reply = requests.request(method, f"{self.hub}{path}", headers={"Authorization": f"token {self.token}"},
                                 timeout=kwargs.pop("timeout", 60), **kwargs)
        if reply.status_code >= 400:
            raise HubError(f"{method} {path}: {reply.status_code} {reply.text[:300]}")
        return reply

    def start_server(self, timeout: float = 600, tries: int = 2) -> float:
        """Ask the hub for this learner's server and wait until it is ready; return the seconds it took. A spawn the
        hub gave up on (its server gone, neither pending nor ready) is asked for again, `tries` times in all."""
        began = time.monotonic()
        for _ in range(tries):
            self.api("POST", f"/hub/api/users/{self.name}/server")
            asked = time.monotonic()
            while time.monotonic() - began < timeout:
                server = self.api("GET", f"/hub/api/users/{self.name}").json().get("servers", {}).get("", {})
                if server.get("ready"):
                    return time.monotonic() - began
                if not server and time.monotonic() - asked > 5:  # the hub stopped the spawn (its log says why)
                    break
                time.sleep(0.5)
            else:
                raise HubError(f"{self.name}'s server was not ready within {timeout:.0f} s")
        raise HubError(f"{self.name}'s server failed to start {tries} times: the hub's log says why")

    @property
    def server(self) -> str:
        """The path prefix of this learner's server."""
        return f"/user/{self.name}"

    def contents(self, path: str = "") -> dict:
        """The contents API's model of a file or folder in the learner's home."""
        return self.api("GET", f"{self.server}/api/contents/{path}").json()

    def save_notebook(self, path: str, notebook: dict) -> None:
        """Write a notebook into the learner's home through the contents API."""
        self.api("PUT", f"{self.server}/api/contents/{path}",
                 json={"type": "notebook", "format": "json", "content": notebook})

    def kernel(self) -> "Kernel":
        """A new kernel in this learner's server."""
        kid = self.api("POST", f"{self.server}/api/kernels", json={"name": "python3"}).json()["id"]
        return Kernel(self, kid)


class Kernel:
    """A kernel in a learner's server, driven over its websocket (Jupyter's messaging protocol, JSON frames)."""

    def __init__(self, learner: Learner, kid: str):
        import websocket

        self.learner, self.id, self.session = learner, kid, uuid.uuid4().hex
        url = learner.hub.replace("http", "ws", 1) + f"{learner.server}/api/kernels/{kid}/channels"
        self.ws = websocket.create_connection(url, header=[f"Authorization: token {learner.token}"], timeout=30)

    def run(self, code: str, timeout: float = 300) -> list[dict]:
        """Execute `code`; return its outputs as nbformat output dicts; raise HubError when the cell raised."""
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "username": self.learner.name, "session": self.session,
                       "msg_type": "execute_request", "version": "5.3",
                       "date": datetime.now(timezone.utc).isoformat()},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        outputs, replied, idle = [], None, False
        deadline = time.monotonic() + timeout
        while not (replied and idle):
            if time.monotonic() > deadline:
                raise HubError(f"a cell did not finish within {timeout:.0f} s: {code[:80]!r}")
            self.ws.settimeout(max(1.0, deadline - time.monotonic()))
            msg = json.loads(self.ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "execute_reply":
                replied = content
            elif kind == "status" and content.get("execution_state") == "idle":
                idle = True
            elif kind == "stream":
                outputs.append({"output_type": "stream", "name": content["name"], "text": content["text"]})
            elif kind in ("execute_result", "display_data"):
                out = {"output_type": kind, "data": content["data"], "metadata": content.get("metadata", {})}
                if kind == "execute_result":
                    out["execution_count"] = content.get("execution_count")
                outputs.append(out)
            elif kind == "error":
                outputs.append({"output_type": "error", "ename": content["ename"], "evalue": content["evalue"],
                                "traceback": content["traceback"]})
        if replied.get("status") != "ok":
            raise HubError(f"{replied.get('ename')}: {replied.get('evalue')} (in {code[:80]!r})")
        return outputs

    def text(self, code: str, timeout: float = 300) -> str:
        """Run `code` and return what it printed and its result's text."""
        parts = []
        for out in self.run(code, timeout):
            parts.append(out.get("text") or out.get("data", {}).get("text/plain", ""))
        return "".join(parts)

    def close(self) -> None:
        """Close the websocket and shut the kernel down."""
        try:
            self.ws.close()
        finally:
            self.learner.api("DELETE", f"{self.learner.server}/api/kernels/{self.id}")


def instructor_api(hub_url: str, token: str, method: str, path: str, **kwargs) -> requests.Response:
    """A hub API request with the instructor service's token."""
    reply = requests.request(method, f"{hub_url.rstrip('/')}{path}", headers={"Authorization": f"token {token}"},
                             timeout=60, **kwargs)
    if reply.status_code >= 400:
        raise HubError(f"{method} {path}: {reply.status_code} {reply.text[:300]}")
    return reply
