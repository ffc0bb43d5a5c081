"""Run the learner's kernel where it cannot read the hidden tests or change what the grader runs.

A user and mount namespace (util-linux `unshare`, no root needed): the course's code, the Python installation and
the grader's own folders are read-only; the hidden tests (`solutions/`, `tests/`, `.git`, the grader's working
folders, a cohort's other submissions and the results) are replaced by empty folders. The mounts are made in an
outer namespace and the kernel runs in an inner one, so the kernel cannot unmount or remount them; a pid namespace
ends every process the notebook started when the kernel stops.

Root → nobody: `unshare --user --map-root-user` started by the machine's root maps the namespace's root to the
host's root, so a graded notebook read /etc/shadow, the hub's tokens and the room Kafka's secrets, wrote root's
files and left its loot in the shared /var/tmp (red team H1, G4–G5). So when the grader is root (`dropped()`), the
outer mount and pid namespace is made as root without a user namespace, and the worker and the kernel run as a
dedicated unprivileged account (`ACCOUNT`, made on demand), whose own user namespace then locks the mounts. There,
besides the above, each folder that keeps other accounts from the Python, the course or Java (e.g. /root) is
replaced by an empty one holding only those (`veil`, shared with the workshop's walls), /var/tmp, /run/lock and
/dev/shm are the run's own, and only the run's folder is the account's to write. A learner's laptop (not root)
keeps the first paragraph's sandbox. Either way, with a grading broker on the loopback, the run also gets a network
namespace whose only way out is that broker (`Sandbox.relay`, grader/relay.py).
"""
from __future__ import annotations

import functools
import os
import pwd
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

OUTER = ["unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc"]
INNER = ["unshare", "--user", "--map-root-user", "--mount"]
# As the machine's root: no user namespace outside (it would map to root); the account makes its own inside.
ROOT_OUTER = ["unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child", "--mount-proc"]
ACCOUNT = "streamlab-grader"  # not `sl-…`: those are the workshop's learners
PRIVATE_TMPFS = ("/var/tmp", "/run/lock", "/dev/shm")  # world-writable beside /tmp: a channel out of a run


@dataclass
class Sandbox:
    """What the kernel may not change (`readonly`), may change inside those (`writable`), and may not see (`hidden`)."""

    readonly: list[Path] = field(default_factory=list)
    writable: list[Path] = field(default_factory=list)
    hidden: list[Path] = field(default_factory=list)
    # A private, empty /tmp holding only this folder (at the same path): runs graded at the same time cannot
    # reach each other's checkpoints, and nothing a notebook leaves in /tmp outlives its run.
    private_tmp_with: Path | None = None
    # Run as this (uid, gid) instead of the caller (only when the caller is the machine's root, see `dropped`):
    # `reach` are what it runs (Python, venv, course, Java), kept visible through folders it may not enter;
    # `scratch` are files replaced by an empty one of the run it may write (e.g. Spark's log);
    # `private_tmp_with` becomes its own and its HOME.
    account: tuple[int, int] | None = None
    reach: list[Path] = field(default_factory=list)
    scratch: list[Path] = field(default_factory=list)
    # A network namespace of the run's own, whose only way out is these broker ports, relayed through Unix sockets
    # in this folder (grader/relay.py): (folder, ports). None: the machine's network.
    relay: tuple[Path, list[int]] | None = None

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
        if self.account is not None:
            return "\n".join(lines + self._as_account())
        lines += self._relay(-1, -1)
        lines.append('exec ' + " ".join(INNER) + ' -- "$@"')
        return "\n".join(lines)

    def _as_account(self) -> list[str]:
        """As root in the outer namespace: veil what the account may not enter, make the shared writable places
        private, give it the run's folder, then become it (its own user namespace locks every mount above)."""
        uid, gid = self.account
        reach = _existing(self.reach)
        keep = _existing([*reach, *self.writable, *self.scratch,
                          *([self.private_tmp_with] if self.private_tmp_with else [])])
        lines = ['stage=$(mktemp -d -p /dev/shm streamlab-veil-XXXXXX)']
        for number, folder in enumerate(sorted(blocking(reach), key=lambda f: len(f.parts))):
            lines += veil(folder, "755", outermost([k for k in keep if folder in k.parents]), f"$stage/{number}")
        lines.append('rmdir "$stage"')
        lines += [f"if [ -d {where} ]; then mount -t tmpfs -o mode=1777,size=256m tmpfs {where}; fi"
                  for where in PRIVATE_TMPFS]
        for i, path in enumerate(_existing(self.scratch)):  # held by the namespace's own /var/tmp
            lines += [f"f=$(mktemp -p /var/tmp .streamlab-scratch-{i}-XXXXXX)", f'chown {uid}:{gid} "$f"',
                      f'mount --bind "$f" {q(path)}']
        home = "/"
        if self.private_tmp_with is not None:
            home = q(Path(self.private_tmp_with).resolve())
            lines.append(f"chown -R {uid}:{gid} {home}")
        return lines + self._relay(uid, gid) + [f"cd {home}", f"export HOME={home}",
                        f'exec setpriv --reuid={uid} --regid={gid} --clear-groups --no-new-privs -- '
                        + " ".join(INNER) + ' -- "$@"']

    def _relay(self, uid: int, gid: int) -> list[str]:
        """The inside half of the broker's relay (grader/relay.py), started before the worker; [] without one."""
        if self.relay is None:
            return []
        from .relay import INSIDE

        folder, ports = self.relay
        python = q(Path(os.path.realpath(sys.executable)))
        return [f"{python} -I -S -c {q(INSIDE)} {q(Path(folder))} {uid} {gid} {' '.join(map(str, ports))}"]

    def _private_tmp(self) -> list[str]:
        """A fresh /tmp that still holds the run's folder and whatever of the course lives under /tmp (a clone
        there, its .venv): each is parked outside /tmp while the new one is mounted, then put back at its path."""
        tmp = Path("/tmp").resolve()
        wanted = _existing([self.private_tmp_with, *self.readonly, *self.writable, *self.reach])
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
        outer = (OUTER if self.account is None else ROOT_OUTER) + (["--net"] if self.relay else [])
        return outer + ["--", "sh", "-c", self.script(), "sandbox"] + list(cmd)


def end(proc: subprocess.Popen) -> None:
    """Stop a sandbox started with `Sandbox.wrap`, everything in it with it: SIGKILL its pid namespace's first
    process (the kernel then kills every other process of the namespace), then `unshare` itself. Killing `unshare`
    alone does not do it when the grader is root: the first process drops to the grading account (setpriv), and a
    change of credentials clears the parent-death signal that `--kill-child` relies on (prctl(2), PR_SET_PDEATHSIG);
    a killed check left its worker, kernel and relay running."""
    try:
        first = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    except OSError:  # gone already, or no such file: only `unshare` to kill
        first = []
    for pid in first:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.kill()


def reached() -> list[Path]:
    """What an unprivileged account needs to run the course: the Python installation, the virtualenv, the course,
    Java (a sandboxed grading run as `streamlab-grader`, a workshop learner's server behind its walls)."""
    from streamlab.settings import settings

    java = settings.java_home or (os.path.dirname(os.path.dirname(os.path.realpath(shutil.which("java"))))
                                            if shutil.which("java") else None)
    course = Path(__file__).resolve().parents[1]
    found = [Path(sys.base_prefix), Path(sys.prefix), course, *([Path(java)] if java else [])]
    return [p.resolve() for p in found if p.exists()]


def q(path: Path) -> str:
    """`path` quoted for a shell script."""
    return shlex.quote(str(path))


def outermost(paths: list[Path]) -> list[Path]:
    """The paths not inside another of them (a mount on the outer one covers the inner), each once."""
    unique = list(dict.fromkeys(paths))
    return [p for p in unique if not any(o != p and o in p.parents for o in unique)]


def blocking(paths: list[Path]) -> list[Path]:
    """The folders on the way to `paths` that other accounts cannot enter (no o+x)."""
    found = []
    for path in paths:
        for folder in reversed(path.parents[:-1]):  # from the top, without /
            if not os.stat(folder).st_mode & 0o001 and folder not in found:
                found.append(folder)
    return found


def veil(folder: Path, mode: str, keep: list[Path], stage: str) -> list[str]:
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


def _existing(paths) -> list[Path]:
    seen, out = set(), []
    for p in paths:
        p = Path(p).resolve()
        if p.exists() and p not in seen:
            seen.add(p)
            out.append(p)
    return out


def dropped() -> bool:
    """True when this process is the machine's root (uid 0 in the initial user namespace): sandboxes then run as
    ACCOUNT. Only the initial namespace maps the whole range ("0 0 4294967295"); a nested one that maps root to its
    parent's root ("0 0 1", the sandbox's inner namespace as a learner's own account made it) is not the machine's."""
    if os.geteuid() != 0:
        return False
    try:
        return Path("/proc/self/uid_map").read_text().split() == ["0", "0", "4294967295"]
    except OSError:
        return True


_made = threading.Lock()


def account() -> tuple[int, int]:
    """The (uid, gid) of ACCOUNT, a system account without home or shell, made now when missing (root only)."""
    with _made:
        try:
            entry = pwd.getpwnam(ACCOUNT)
        except KeyError:
            done = subprocess.run(["useradd", "--system", "--user-group", "--no-create-home",
                                   "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", ACCOUNT],
                                  capture_output=True, text=True)
            try:
                entry = pwd.getpwnam(ACCOUNT)  # another grader may have made it meanwhile
            except KeyError:
                why = (done.stderr.strip().splitlines() or ["?"])[-1]
                raise OSError(f"could not make the account {ACCOUNT} ({why})") from None
        return entry.pw_uid, entry.pw_gid


@functools.lru_cache(maxsize=1)
def available() -> str | None:
    """None when this machine can sandbox a kernel, else why not (one line, with the fix)."""
    as_root = dropped()
    tools = ("unshare", "setpriv", "useradd") if as_root else ("unshare",)
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        return (f"{' and '.join(missing)} is not installed (Debian/Ubuntu: apt install "
                f"{'util-linux passwd' if 'useradd' in missing else 'util-linux'})")
    try:
        probe = Sandbox(account=account() if as_root else None).wrap(["true"])
        done = subprocess.run(probe, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare could not run ({exc})"
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["unknown error"])[-1]
        if as_root:
            return (f"grading as root runs learner code as the account {ACCOUNT} in a namespace of its own, which "
                    f"failed ({why}); on Ubuntu 24.04 run `sysctl kernel.apparmor_restrict_unprivileged_userns=0`, "
                    "in a container allow mount namespaces (or run the grader as a non-root user)")
        return (f"this machine does not allow unprivileged user namespaces ({why}); on Ubuntu 24.04 run "
                "`sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0` (inside Docker: run the grader on the host)")
    return None
