"""Who made a topic, and who uses a broker: an owner token per process that anyone can test for life.

A kernel killed with `kill -9`, out of memory or by a check that timed out runs no exit handler, so what it made
must carry a mark a later process can test. A pid is not enough: the checker runs kernels in their own pid
namespace, where pid 7 is somebody else's pid 7 outside. The mark here is a random token, and the process holds
an abstract Unix socket named after it (Linux; abstract sockets live in the network namespace, which the checker's
sandbox shares, and vanish with the last process holding them). The token is alive exactly while that socket is
bound: `alive(token)` tries to bind the same name.

Topics made by `lab.new_topic` carry the token in their name (`<prefix>-o<token>-<random>`); users of a broker
streamlab started are files named by their token in `.streamlab/<kind>-<port>/users/`.
"""
from __future__ import annotations

import os
import re
import secrets
import socket
import threading

_lock = threading.Lock()
_held: dict[int, tuple[str, socket.socket]] = {}  # pid -> (token, the bound socket); a fork gets its own
TOKEN = re.compile(r"o([0-9a-f]{10})")
TOPIC = re.compile(r".+-o([0-9a-f]{10})-[0-9a-f]{6}")


def _name(token: str) -> bytes:
    return b"\0streamlab-owner-" + token.encode()


def my_token() -> str:
    """This process's owner token (bound on first use, released when the process ends, however it ends)."""
    pid = os.getpid()
    with _lock:
        held = _held.get(pid)
        if held is None:
            token = secrets.token_hex(5)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.bind(_name(token))
            except OSError:  # no abstract sockets here (not Linux): a token nobody can prove dead
                sock.close()
                sock = None
            held = _held[pid] = (token, sock)
        return held[0]


def alive(token: str) -> bool:
    """Whether the process that owns `token` still runs (True when that cannot be told: never sweep then)."""
    if token == my_token() or _held[os.getpid()][1] is None:
        return True
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.bind(_name(token))
    except OSError:  # EADDRINUSE: still bound by its owner (or it cannot be told)
        return True
    finally:
        probe.close()
    return False


def topic_name(prefix: str) -> str:
    """A fresh topic name carrying this process's token, so a later kernel can delete it if this one dies."""
    return f"{prefix}-o{my_token()}-{secrets.token_hex(3)}"


def owner_of(topic: str) -> str | None:
    """The owner token in a topic name made by topic_name(), else None."""
    match = TOPIC.fullmatch(topic)
    return match[1] if match else None


def orphaned(names) -> list[str]:
    """The topics among `names` whose owner process is gone."""
    owners: dict[str, bool] = {}
    out = []
    for name in names:
        token = owner_of(name)
        if token is None:
            continue
        if token not in owners:
            owners[token] = alive(token)
        if not owners[token]:
            out.append(name)
    return out
