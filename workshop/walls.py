"""Each learner's server behind walls of its own: a mount namespace that shows only what a learner needs.

Why: on a hub, learners must not read each other's work or credentials, the hidden tests, or the room's Kafka log
files. Linux accounts of their own keep homes apart, but only if every account can run the course's Python; where
it lives under a folder others cannot enter (pyenv under /root, as on the machines this course is built on) every
server ran as root and could read everything. So the hub (root) starts each server through `unshare`, in a new
mount, pid and network namespace of its own, where:
- each folder that keeps other accounts away from the Python, the course or Java (e.g. /root) is replaced by an empty
  one holding only those, so the learner's account can run them and sees nothing else there;
- the workshop's folder holds only the learner's home and the servers' configuration (read-only): no other home,
  no hub database or secret, no Kafka data;
- `solutions/`, `tests/` and `.git` are empty, and `.streamlab/` holds only the jars; `/tmp`, `/dev/shm`, `/var/tmp`
  and `/run/lock` are the learner's own (tmpfs: no channel to another learner, and their pages count against the
  server's memory cgroup, so a learner fills her own memory limit, not the machine's disk);
then the server runs as the learner's account (setpriv) under a small reaper of ours as the namespace's pid 1 (a
server, as pid 1, never waits for the orphans it inherits: each stayed a zombie holding a pid until the server
stopped), and every process it starts ends with it (the pid namespace). Nothing of this touches the machine outside
the namespace. The learner's home is a file system of its own, bounded by the hub (disks.py), and shown here as it
is mounted; her Kafka topics are bounded by the room broker's caps. Its network is its own too (network.py): it sees
its own sockets only, is reached by the hub's proxy on its port, and reaches the room's Kafka and the hub's API and
partitions service, nothing else of the machine.
"""
from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from grader.sandbox import PRIVATE_TMPFS, blocking, outermost, q, reached
from grader.sandbox import veil as _veil
from workshop import network

REPO = Path(__file__).resolve().parents[1]
UNSHARE = ["unshare", "--mount", "--propagation", "private", "--pid", "--net", "--fork", "--kill-child",
           "--mount-proc"]
# pid 1 of the namespace, as the learner: starts the server, passes it the hub's SIGINT/SIGTERM (hub._signal sends
# them to unshare's child, this), waits for every child it inherits, and ends (ending the namespace) with the server.
REAPER = r"""
import os, signal, sys
server = 0
def forward(number, _frame):
    if server > 0:
        try:
            os.kill(server, number)
        except ProcessLookupError:
            pass
for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(number, forward)
server = os.fork()
if server == 0:
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    except OSError as exc:
        print(f"walls: cannot run {sys.argv[1]}: {exc}", file=sys.stderr, flush=True)
    os._exit(127)
while True:
    pid, status = os.wait()
    if pid == server:
        code = os.waitstatus_to_exitcode(status)
        sys.exit(code if code >= 0 else 128 - code)
"""


@functools.lru_cache(maxsize=1)
def available() -> str | None:
    """None when this hub can put servers behind walls (root, util-linux's unshare and setpriv), else why not."""
    if os.geteuid() != 0:
        return "the hub does not run as root"
    missing = [tool for tool in ("unshare", "setpriv") if shutil.which(tool) is None]
    if missing:
        return f"util-linux's {' and '.join(missing)} is not installed (Debian/Ubuntu: apt install util-linux)"
    try:
        done = subprocess.run([*UNSHARE, "--", "sh", "-c", "mount -t tmpfs tmpfs /tmp"], capture_output=True,
                              text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare could not run ({exc})"
    if done.returncode != 0:
        return f"unshare could not make a mount namespace ({(done.stderr.strip().splitlines() or ['?'])[-1]})"
    return None


def script(*, home: Path, workshop: Path, config: Path, uid: int, gid: int, relays: str) -> str:
    """The shell commands run as root in the new namespace, ending in the server run as `uid`:`gid` ("$@");
    `relays` is network.config()'s, for the relays started before it."""
    home, workshop, config = home.resolve(), workshop.resolve(), config.resolve()
    jars, runs = (REPO / ".streamlab" / "jars").resolve(), reached()
    keep = [home, config, *runs, jars]
    veils = {Path("/tmp"): "1777", workshop: "711", REPO / ".streamlab": "755",
             **{folder: "755" for folder in blocking(runs)},
             **{REPO / name: "755" for name in ("solutions", "tests", ".git")}}
    lines = ["set -e", 'stage=$(mktemp -d -p /dev/shm streamlab-walls-XXXXXX)']
    for number, (folder, mode) in enumerate(sorted(veils.items(), key=lambda item: len(item[0].parts))):
        folder = folder.resolve() if folder.exists() else folder
        lines += _veil(folder, mode, outermost([k for k in keep if folder in k.parents]), f"$stage/{number}")
    lines.append('rmdir "$stage"')
    lines += [f"if [ -d {where} ] && [ ! -L {where} ]; then mount -t tmpfs -o mode=1777,nosuid,nodev,size=512m "
              f"tmpfs {where}; fi" for where in PRIVATE_TMPFS]
    lines += [f"mount -o remount,bind,ro {q(config)}",
              " ".join(map(shlex.quote, network.inside(relays))),  # returns once the relays listen
              f"exec {network.IN_FD}<&- {network.CONTROL_FD}<&-",  # the relays' ends are not the server's
              f"cd {q(home)}",
              f"exec setpriv --reuid={uid} --regid={gid} --clear-groups -- {q(Path(sys.executable))} -I -S -c "
              f'{q(REAPER)} "$@"']
    return "\n".join(lines)


def wrap(cmd: list[str], *, port: int, reaches: list[int], uid: int, gid: int, **where) -> list[str]:
    """`cmd` (the server's command line, listening on 127.0.0.1:`port`) run behind the walls as `uid`:`gid`,
    reaching the machine's 127.0.0.1 only at the ports `reaches`: see `script` for `where`."""
    relays = network.config(uid=uid, gid=gid, inbound=port, outbound=reaches)
    walled = [*UNSHARE, "--", "sh", "-c", script(uid=uid, gid=gid, relays=relays, **where), "walls", *cmd]
    return network.outside(walled, relays)
