"""Per learner, a cap on her connections to the room's Kafka, enforced by the machine's kernel (nftables).

Why: every learner's server connects from 127.0.0.1, so Kafka's per-address limits cannot tell learners apart, and
the learners' listener's own cap (kafka.MAX_CONNECTIONS) is shared by the whole room: one learner who opens that
many connections and keeps them (the red team's H6) locks every other learner out until hers close or idle out.
The kernel can tell them apart: each learner's server runs as her own account (walls.py), and a socket carries the
account that opened it. So the room's broker, started by root, comes with one nftables table of its own: a new
connection to the learners' listener from any account but root is refused at once (a TCP reset: the client fails
with "connection refused" instead of waiting) while that account already holds LEARNER_CONNECTIONS of them, counted
by conntrack in a set keyed by the account's uid. Root (the hub, the broker, the instructor's tools) is not capped.

A room's table is named after its folder, so two rooms on one machine never share or remove each other's, and it
goes when the room's broker stops. Without root or without `nft` (Debian: apt install nftables) the room runs
uncapped, and its start says so.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from streamlab.errors import LabError

# A learner's kernel holds a few connections to the broker (Spark's consumers and admin, the demos' producer), a
# few notebooks at once some tens: this is ten times that, and a room of 20 learners at the cap is still inside the
# listener's own cap (kafka.MAX_CONNECTIONS).
LEARNER_CONNECTIONS = 100


def table(folder: Path) -> str:
    """The nftables table of the room kept in `folder`."""
    return "streamlab_room_" + hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:12]


def rules(name: str, port: int, cap: int = LEARNER_CONNECTIONS) -> str:
    """The table, as an `nft -f` script that replaces any earlier one of the same name in one transaction."""
    refuse = (f"ip daddr 127.0.0.1 tcp dport {port} ct state new meta skuid != 0 "
              f"add @accounts {{ meta skuid ct count over {cap} }} reject with tcp reset")
    return f"""table inet {name}
delete table inet {name}
table inet {name} {{
  set accounts {{
    type uid
    size 65535
    flags dynamic
  }}
  chain output {{
    type filter hook output priority filter; policy accept;
    {refuse}
  }}
}}
"""


def unavailable() -> str | None:
    """None when this machine can cap connections per account (root, with `nft`), else why not and the fix."""
    if os.geteuid() != 0:
        return "the room runs without root"
    if shutil.which("nft") is None:
        return "nft is not installed (Debian/Ubuntu: apt install nftables)"
    return None


def _nft(*args: str, script: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["nft", *args], input=script, capture_output=True, text=True, timeout=30)


def cap(folder: Path, port: int, limit: int = LEARNER_CONNECTIONS) -> str | None:
    """Cap every account but root at `limit` connections to 127.0.0.1:`port`; None, or why it could not (a warning:
    the room then runs as before, capped only as a whole)."""
    why = unavailable()
    if why:
        return why
    done = _nft("-f", "-", script=rules(table(folder), port, limit))
    if done.returncode:
        raise LabError(f"nft refused the room's connection cap: {(done.stderr or done.stdout).strip()[-300:]}")
    return None


def capped(folder: Path) -> str | None:
    """The room's table as nft lists it, or None when it has none."""
    if unavailable():
        return None
    done = _nft("list", "table", "inet", table(folder))
    return done.stdout if done.returncode == 0 else None


def uncap(folder: Path) -> bool:
    """Remove the room's table; whether there was one."""
    if capped(folder) is None:
        return False
    _nft("delete", "table", "inet", table(folder))
    return True
