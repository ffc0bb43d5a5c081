"""Who made a topic, and who uses a broker: an owner token per process that anyone can test for life.

A kernel killed with `kill -9`, out of memory or by a check that timed out runs no exit handler, so what it made
must carry a mark a later process can test. A pid is not enough: the checker runs kernels in their own pid
namespace, where pid 7 is somebody else's pid 7 outside. The mark here is a random token, and the process holds
an abstract Unix socket named after it (Linux; abstract sockets live in the network namespace, which the checker's
sandbox shares, and vanish with the last process holding them). The token is alive exactly while that socket is
bound: `alive(token)` tries to bind the same name.

Topics made by `lab.new_topic` carry the token in their name (`<prefix>-o<token>-<random>`); users of a broker
streamlab started are files named by their token in `.streamlab/<kind>-<port>/users/`.

A grading run with a network namespace of its own (grader/relay.py) sees none of the machine's abstract sockets,
and the machine none of its: its kernel would take every other kernel for dead and delete their live topics (a
learner's demo lost its topic mid-run while Check my work ran), and every other kernel would take the grading's
for dead. So the grader gives such a run one token in `$STREAMLAB_OWNER_TOKEN` and holds that token's socket
outside for as long as the run lasts (`holding`); inside, `alive` answers True for every token: from there it
cannot be told, and what a run leaves is swept by the grader after it.
"""
from __future__ import annotations

import os
import re
import secrets
import socket
import threading
from contextlib import contextmanager

from streamlab.settings import settings

_lock = threading.Lock()
_held: dict[int, tuple[str, socket.socket]] = {}  # pid -> (token, the bound socket); a fork gets its own
TOKEN = re.compile(r"o([0-9a-f]{10})")
SHARED_ENV = "STREAMLAB_OWNER_TOKEN"  # set by the grader for a run in a network namespace of its own
TOPIC = re.compile(r".+-o([0-9a-f]{10})-[0-9a-f]{6}")


def _name(token: str) -> bytes:
    return b"\0streamlab-owner-" + token.encode()


def _given() -> str | None:
    """The token the grader gave this run (held outside its network namespace), else None."""
    token = settings.owner_token
    return token if TOKEN.fullmatch(f"o{token}") else None


def new_token() -> str:
    """A fresh owner token (for `holding`)."""
    return secrets.token_hex(5)


@contextmanager
def holding(token: str):
    """Hold `token` alive here for the block: a run in a network namespace of its own uses it inside."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(_name(token))
    except OSError:  # no abstract sockets here: nobody can prove anything dead either
        pass
    try:
        yield token
    finally:
        sock.close()


def my_token() -> str:
    """This process's owner token (bound on first use, released when the process ends, however it ends)."""
    given = _given()
    if given:
        return given
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
    if _given():  # in a network namespace of its own: the machine's sockets are out of sight
        return True
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
