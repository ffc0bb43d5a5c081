"""Run the learner's kernel where it cannot read the hidden tests or change what the grader runs.

A user and mount namespace (util-linux `unshare`, no root needed): the course's code, the Python installation and
the grader's own folders are read-only; the hidden tests (`solutions/`, `tests/`, `.git`, the grader's working
folders, a cohort's other submissions and the results) are replaced by empty folders. The mounts are made in an
outer namespace and the kernel runs in an inner one, so the kernel cannot unmount or remount them; a pid namespace
ends every process the notebook started when the kernel stops.
"""
from __future__ import annotations

import functools
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

OUTER = ["unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc"]
INNER = ["unshare", "--user", "--map-root-user", "--mount"]


@dataclass
class Sandbox:
    """What the kernel may not change (`readonly`), may change inside those (`writable`), and may not see (`hidden`)."""

    readonly: list[Path] = field(default_factory=list)
    writable: list[Path] = field(default_factory=list)
    hidden: list[Path] = field(default_factory=list)
    # A private, empty /tmp holding only this folder (at the same path): runs graded at the same time cannot
    # reach each other's checkpoints, and nothing a notebook leaves in /tmp outlives its run.
    private_tmp_with: Path | None = None

    def script(self) -> str:
        """The shell commands run in the outer namespace before the kernel starts."""
        lines = ["set -e"]
        if self.private_tmp_with is not None:
            lines += self._private_tmp()
        ro = sorted(_existing(self.readonly), key=lambda p: len(p.parts))  # a parent's bind would hide a child's
        lines += [f"mount --bind {q(p)} {q(p)}" for p in ro]
        lines += [f"mount --bind {q(p)} {q(p)}" for p in _existing(self.writable)]
        lines += [f"mount -o remount,bind,ro {q(p)}" for p in ro]
        for path in outermost(_existing(self.hidden)):
            # Guarded: under a fresh /tmp, a hidden folder that lived there is gone already.
            if path.is_dir():
                lines.append(f"if [ -d {q(path)} ]; then mount -t tmpfs -o size=64k,mode=755 tmpfs {q(path)}; fi")
            else:
                lines.append(f"if [ -e {q(path)} ]; then mount --bind /dev/null {q(path)}; fi")
        lines.append('exec ' + " ".join(INNER) + ' -- "$@"')
        return "\n".join(lines)

    def _private_tmp(self) -> list[str]:
        """A fresh /tmp that still holds the run's folder and whatever of the course lives under /tmp (a clone
        there, its .venv): each is parked outside /tmp while the new one is mounted, then put back at its path."""
        tmp = Path("/tmp").resolve()
        wanted = _existing([self.private_tmp_with, *self.readonly, *self.writable])
        keep = [p for p in wanted if p == self.private_tmp_with.resolve() or tmp in p.parents]
        keep = outermost(keep)
        lines = ["stage=$(mktemp -d -p /dev/shm streamlab-stage-XXXXXX)"]
        for i, path in enumerate(keep):
            lines += [f'mkdir "$stage/{i}"', f'mount --rbind {q(path)} "$stage/{i}"']
        lines.append("mount -t tmpfs -o mode=1777 tmpfs /tmp")
        for i, path in enumerate(keep):
            lines += [f"mkdir -p {q(path)}", f'mount --rbind "$stage/{i}" {q(path)}', f'umount -R "$stage/{i}"',
                      f'rmdir "$stage/{i}"']
        return lines + ['rmdir "$stage"']

    def wrap(self, cmd: list[str]) -> list[str]:
        """`cmd` (the kernel's command line) run inside the sandbox."""
        return OUTER + ["--", "sh", "-c", self.script(), "sandbox"] + list(cmd)


def q(path: Path) -> str:
    return shlex.quote(str(path))


def outermost(paths: list[Path]) -> list[Path]:
    """The paths not inside another of them (a mount on the outer one covers the inner), each once."""
    unique = list(dict.fromkeys(paths))
    return [p for p in unique if not any(o != p and o in p.parents for o in unique)]


def _existing(paths) -> list[Path]:
    seen, out = set(), []
    for p in paths:
        p = Path(p).resolve()
        if p.exists() and p not in seen:
            seen.add(p)
            out.append(p)
    return out


@functools.lru_cache(maxsize=1)
def available() -> str | None:
    """None when this machine can sandbox a kernel, else why not (one line, with the fix)."""
    if shutil.which("unshare") is None:
        return "util-linux's unshare is not installed (Debian/Ubuntu: apt install util-linux)"
    probe = Sandbox(hidden=[]).wrap(["true"])
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare could not run ({exc})"
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["unknown error"])[-1]
        return (f"this machine does not allow unprivileged user namespaces ({why}); on Ubuntu 24.04 run "
                "`sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0` (inside Docker: run the grader on the host)")
    return None
