"""The graded kernel's only way out: its broker's ports, relayed into a network namespace of the run's own.

Why: a graded notebook shared the machine's network, so a learner's answer cell could reach every service on
127.0.0.1 (the hub's API, the room's Kafka, another learner's Jupyter or Spark driver) and probe them with whatever
it found (red team H1). A grading run now has a network namespace of its own (`unshare --net`): only its loopback,
where the kernel, the grading worker and the judge's Spark talk to each other as before. The grading broker is the
one thing outside it they need; Kafka's clients reach it at the address the broker advertises (127.0.0.1:PORT), so:
- inside, `INSIDE` (a small Python process started by the sandbox's script, as the run's account) listens on
  127.0.0.1:PORT of the namespace's own loopback, and pipes each connection into the Unix socket `<folder>/PORT`;
- outside, `Relay` (threads of the grader) accepts on those Unix sockets and pipes each to 127.0.0.1:PORT.
A Unix socket is a file, so it crosses the network namespace where the file system reaches, and nothing else does.

Only a broker on this machine's loopback can be relayed so (`ports_of`); a broker elsewhere (the compose lab's
`kafka:9092`) or a Spark cluster (whose executors connect back to the driver) keeps the machine's network, and the
grading says why in its notes.
"""
from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

LOOPBACK = ("127.0.0.1", "localhost")
# Run inside the namespace, as its root, as `python -I -S -c INSIDE FOLDER UID GID PORT...`: brings the loopback up,
# binds every port, becomes UID:GID (-1: stays), goes to the background (the sandbox's script goes on only once the
# ports listen) and pipes each connection to FOLDER/PORT. Self-contained, as it runs where `grader` cannot be imported
# (isolated, in a namespace that may not reach the course): its pipe and bridge are _pipe's and _bridge's twins.
# A new network namespace's loopback is down: this brings it up (SIOCGIFFLAGS, then SIOCSIFFLAGS with IFF_UP), as
# `ip link set lo up` would, with no iproute2 needed; as root of the namespace, after `import fcntl, socket, struct`.
LOOPBACK_UP = r"""
probe = socket.socket()  # the namespace's loopback starts down: up, as `ip link set lo up` would (no iproute2 needed)
flags = struct.unpack("16sH14s", fcntl.ioctl(probe, 0x8913, struct.pack("16sH14s", b"lo", 0, b"")))[1]
fcntl.ioctl(probe, 0x8914, struct.pack("16sH14s", b"lo", flags | 1, b""))
probe.close()
"""
# Then to the background (the caller goes on once this returns: every port listens), silent, in a session of its own.
TO_BACKGROUND = r"""
if os.fork():
    os._exit(0)
os.setsid()
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
"""
INSIDE = r"""
import fcntl, os, socket, struct, sys, threading
folder, uid, gid, ports = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [int(p) for p in sys.argv[4:]]
""" + LOOPBACK_UP + r"""listeners = []
for port in ports:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(128)
    listeners.append((server, port))
if uid >= 0:  # the ports are bound: the rest runs as the run's account
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
""" + TO_BACKGROUND + r"""def pipe(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass
def bridge(a, b):
    other = threading.Thread(target=pipe, args=(b, a), daemon=True)
    other.start()
    pipe(a, b)
    other.join()
    a.close()
    b.close()
def serve(server, port):
    while True:
        client, _ = server.accept()
        try:
            out = socket.socket(socket.AF_UNIX)
            out.connect(os.path.join(folder, str(port)))
        except OSError:
            client.close()
            continue
        threading.Thread(target=bridge, args=(client, out), daemon=True).start()
threads = [threading.Thread(target=serve, args=pair) for pair in listeners]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
"""


def ports_of(bootstrap: str) -> list[int] | None:
    """The broker's ports when every address of `bootstrap` is this machine's loopback, else None."""
    ports = []
    for address in filter(None, (part.strip() for part in bootstrap.split(","))):
        host, _, port = address.rpartition(":")
        if host not in LOOPBACK or not port.isdigit():
            return None
        ports.append(int(port))
    return ports or None


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    try:
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _bridge(a: socket.socket, b: socket.socket, done) -> None:
    """Pipe both ways until both ends are done, then close both."""
    other = threading.Thread(target=_pipe, args=(b, a), daemon=True)
    other.start()
    _pipe(a, b)
    other.join()
    done(a, b)


class Relay:
    """The outside half: a Unix socket `folder/PORT` per port, each connection piped to 127.0.0.1:PORT.

    A context manager; `owner` (uid, gid) may connect besides the caller (the grading account)."""

    def __init__(self, folder: Path, ports: list[int], owner: tuple[int, int] | None = None):
        self.folder, self.ports, self.owner = Path(folder), list(ports), owner
        self._listeners: list[socket.socket] = []
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def __enter__(self) -> "Relay":
        self.folder.mkdir(mode=0o755, exist_ok=True)
        for port in self.ports:
            path = self.folder / str(port)
            server = socket.socket(socket.AF_UNIX)
            server.bind(str(path))
            if self.owner is not None:
                os.chown(path, *self.owner)
            os.chmod(path, 0o600)
            server.listen(128)
            self._listeners.append(server)
            threading.Thread(target=self._serve, args=(server, port), daemon=True,
                             name=f"grader-relay-{port}").start()
        return self

    def _serve(self, server: socket.socket, port: int) -> None:
        while True:
            try:
                inside, _ = server.accept()
            except OSError:  # closed by __exit__
                return
            try:
                outside = socket.create_connection(("127.0.0.1", port), timeout=10)
                outside.settimeout(None)
            except OSError:  # the broker is gone: the client inside sees its connection closed, as it would
                inside.close()
                continue
            with self._lock:
                self._open.update((inside, outside))
            threading.Thread(target=_bridge, args=(inside, outside, self._close), daemon=True).start()

    def _close(self, *ends: socket.socket) -> None:
        with self._lock:
            for end in ends:
                self._open.discard(end)
                end.close()

    def __exit__(self, *_exc) -> None:
        for server in self._listeners:
            server.close()
        with self._lock:
            for end in self._open:
                try:
                    end.close()
                except OSError:
                    pass
            self._open.clear()
        for port in self.ports:
            try:
                (self.folder / str(port)).unlink()
            except OSError:
                pass
