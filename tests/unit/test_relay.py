"""The graded kernel's network (grader/relay.py): in a namespace of its own, its broker's port is relayed and answers
both ways, every other service of the machine's loopback is out of reach, and the relay ends clean.

Uses util-linux's unshare (a network namespace: root, or an unprivileged user namespace); two echo servers on
127.0.0.1 stand in for the broker and for the hub's API.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading

import pytest

from grader.relay import INSIDE, Relay, ports_of

# A pid namespace too: the relay's inside half, in the background, ends with the run (as in grader/sandbox.py).
INNER = ["unshare", "--net", "--pid", "--fork", "--kill-child"]
if os.geteuid() != 0:
    INNER[1:1] = ["--user", "--map-root-user"]
CLIENT = r"""
import json, socket, sys
seen = {}
for name, port in (("broker", int(sys.argv[1])), ("hub", int(sys.argv[2]))):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"x" * 200000 + b"|")
            got = b""
            while not got.endswith(b"|"):
                part = s.recv(65536)
                if not part:
                    break
                got += part
            seen[name] = len(got)
    except OSError as exc:
        seen[name] = type(exc).__name__
print(json.dumps(seen))
"""


def _echo_server() -> socket.socket:
    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(65536):
                    conn.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    return server


@pytest.mark.parametrize("bootstrap, ports", [("127.0.0.1:9092", [9092]), ("localhost:1,127.0.0.1:2", [1, 2]),
                                              ("kafka:9092", None), ("10.0.0.5:9092", None), ("", None),
                                              ("127.0.0.1:9092,kafka:9093", None)])
def test_only_a_broker_on_this_machines_loopback_is_relayed(bootstrap, ports):
    assert ports_of(bootstrap) == ports


def test_inside_its_namespace_a_run_reaches_its_broker_and_nothing_else(tmp_path):
    done = subprocess.run([*INNER, "true"], capture_output=True)
    if done.returncode != 0:
        pytest.fail(f"unshare cannot make a network namespace here: {done.stderr.decode().strip()}")
    broker, hub = _echo_server(), _echo_server()
    bport, hport = broker.getsockname()[1], hub.getsockname()[1]
    python = os.path.realpath(sys.executable)
    script = (f"{python} -I -S -c \"$1\" {tmp_path / 'relay'} -1 -1 {bport} && "
              f"exec {sys.executable} -c \"$2\" {bport} {hport}")
    with broker, hub, Relay(tmp_path / "relay", [bport]) as relay:
        done = subprocess.run([*INNER, "sh", "-c", script, "sh", INSIDE, CLIENT], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr[-2000:]
        seen = json.loads(done.stdout.strip().splitlines()[-1])
        assert seen["broker"] == 200001, f"the broker's bytes did not come back whole through the relay: {seen}"
        assert seen["hub"] == "ConnectionRefusedError", f"a service outside the namespace answered: {seen}"
        assert oct((tmp_path / "relay" / str(bport)).stat().st_mode & 0o777) == "0o600"
    assert not (tmp_path / "relay" / str(bport)).exists(), "the relay's socket outlived it"
    assert not relay._open, "connections the relay piped were left open"
