"""Each learner's server behind walls of its own: a mount namespace that shows only what a learner needs.

Why: on a hub, learners must not read each other's work or credentials, the hidden tests, or the room's Kafka log
files. Linux accounts of their own keep homes apart, but only if every account can run the course's Python; where
it lives under a folder others cannot enter (pyenv under /root, as on the machines this course is built on) every
server ran as root and could read everything. So the hub (root) starts each server through `unshare`, in a new
mount and pid namespace of its own, where:
- each folder that keeps other accounts away from the Python, the course or Java (e.g. /root) is replaced by an empty
  one holding only those, so the learner's account can run them and sees nothing else there;
- the workshop's folder holds only the learner's home and the servers' configuration (read-only): no other home,
  no hub database or secret, no Kafka data;
- `solutions/`, `tests/` and `.git` are empty, and `.streamlab/` holds only the jars; `/tmp` and `/dev/shm` are the
  learner's own;
then the server runs as the learner's account (setpriv), and every process it starts ends with it (the pid
namespace). Nothing of this touches the machine outside the namespace.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from grader.sandbox import outermost, q

REPO = Path(__file__).resolve().parents[2]
UNSHARE = ["unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child", "--mount-proc"]


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


def reached() -> list[Path]:
    """What a learner's server runs: the Python installation, the virtualenv, the course, Java."""
    java = os.environ.get("JAVA_HOME") or (os.path.dirname(os.path.dirname(os.path.realpath(shutil.which("java"))))
                                            if shutil.which("java") else None)
    found = [Path(sys.base_prefix), Path(sys.prefix), REPO, *([Path(java)] if java else [])]
    return [p.resolve() for p in found if p.exists()]


def blocking(paths: list[Path]) -> list[Path]:
    """The folders on the way to `paths` that other accounts cannot enter (no o+x)."""
    found = []
    for path in paths:
        for folder in reversed(path.parents[:-1]):  # from the top, without /
            if not os.stat(folder).st_mode & 0o001 and folder not in found:
                found.append(folder)
    return found


def script(*, home: Path, workshop: Path, config: Path, uid: int, gid: int) -> str:
    """The shell commands run as root in the new namespace, ending in the server run as `uid`:`gid` ("$@")."""
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
    lines += ['rmdir "$stage"', "mount -t tmpfs -o mode=1777 tmpfs /dev/shm",
              f"mount -o remount,bind,ro {q(config)}",
              f"cd {q(home)}",
              f'exec setpriv --reuid={uid} --regid={gid} --clear-groups -- "$@"']
    return "\n".join(lines)


def wrap(cmd: list[str], **where) -> list[str]:
    """`cmd` (the server's command line) run behind the walls: see `script` for `where`."""
    return [*UNSHARE, "--", "sh", "-c", script(**where), "walls", *cmd]


def _veil(folder: Path, mode: str, keep: list[Path], stage: str) -> list[str]:
    """Replace `folder` (when it is there) by an empty one that holds only `keep`, each at its own path."""
    where = q(folder)
    lines = [f"if [ -d {where} ]; then", f'  mkdir "{stage}"']
    for i, path in enumerate(keep):
        lines += [f'  mkdir "{stage}/{i}"', f'  mount --rbind {q(path)} "{stage}/{i}"']
    lines.append(f"  mount -t tmpfs -o mode={mode} tmpfs {where}")
    for i, path in enumerate(keep):
        lines += [f"  mkdir -p {q(path)}", f'  mount --rbind "{stage}/{i}" {q(path)}',
                  f'  umount -R "{stage}/{i}"', f'  rmdir "{stage}/{i}"']
    return lines + [f'  rmdir "{stage}"', "fi"]
