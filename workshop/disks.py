"""Each learner's home on a file system of its own, so that one learner cannot fill the machine's disk.

Why: the red team filled 1 GiB of a home in 3.3 s with nothing to stop it (R5/H11). Linux bounds a folder's size only
with a quota, which needs a file system mounted with quotas (a hub cannot assume one), or with a file system of the
folder's own. So when the hub runs as root, a new learner's home is an ext4 image, `<workshop>/disks/<name>.img`,
of `home_limit` bytes, mounted on `<workshop>/home/<name>` through a loop device (nosuid, nodev, no reserved blocks).
The image is sparse: on the machine's disk it takes what she wrote, never more than the limit. Writing past the
limit fails in her own home with "No space left on device"; the machine and every other home are untouched.

- The image is made only for a home that does not exist yet (or is empty): a home made before the hub had this is
  left as it was, unbounded, and `attach` says so in one line.
- Homes stay mounted while the hub runs; `python -m workshop stop` unmounts them (`detach_all`), and the
  instructor's commands that read or write homes after that (collect, grade, regrade) mount the ones they need for
  their run (`mounted`). The images keep the learners' work across hub restarts and machine reboots.
- Where the hub is not root, or the machine has no loop devices (a container without them) or no `mkfs.ext4`
  (Debian: e2fsprogs), homes are plain folders and `available()` says why, as the walls and cgroups do.
"""
from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
from pathlib import Path

LIMIT = "4G"  # a home's size: the notebooks, every module's checkpoints and Delta tables take well under 1 GiB
MOUNT_OPTIONS = "loop,nosuid,nodev"


def image(root: str | Path, name: str) -> Path:
    """The file that holds learner `name`'s home."""
    return Path(root) / "disks" / f"{name}.img"


@functools.lru_cache(maxsize=1)
def available() -> str | None:
    """None when homes can have file systems of their own here (root, mkfs.ext4, loop devices), else why not."""
    if os.geteuid() != 0:
        return "the hub does not run as root"
    if shutil.which("mkfs.ext4") is None or shutil.which("mount") is None:
        return "mkfs.ext4 is not installed (Debian/Ubuntu: apt install e2fsprogs)"
    if not Path("/dev/loop-control").exists():
        return "this machine has no loop devices (/dev/loop-control)"
    return None


def size_of(limit: str) -> int:
    """Bytes of a limit written as 4G, 512M or a number of bytes; a clear error for anything else."""
    text = str(limit).strip().upper().removesuffix("B")
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    try:
        value = int(float(text[:-1]) * units[text[-1]]) if text[-1:] in units else int(text)
    except (ValueError, IndexError):
        value = 0
    if value < 16 << 20:
        raise ValueError(f"home_limit {limit!r}: give a size of at least 16M, like 4G or 512M (workshop.json)")
    return value


def is_mounted(home: Path) -> bool:
    """Whether a file system is mounted on `home` itself."""
    return os.path.ismount(home)


def attach(root: str | Path, name: str, home: Path, limit: str = LIMIT) -> str | None:
    """Mount learner `name`'s home from its image, making the image first for a new home; None when her home is
    bounded, else why it is not (one line)."""
    why = available()
    if why:
        return f"{name}'s home has no size limit: {why}"
    if is_mounted(home):
        return None
    disk = image(root, name)
    if not disk.exists():
        if home.is_symlink() or (home.exists() and (not home.is_dir() or any(home.iterdir()))):
            return f"{name}'s home has no size limit: it was made before the hub bounded homes"
        _make(disk, size_of(limit))
    home.mkdir(parents=True, exist_ok=True)
    _mount(disk, home)
    with contextlib.suppress(OSError):
        (home / "lost+found").rmdir()  # ext4's, empty on a new image: not the learner's to see in her lab
    return None


def detach(home: Path) -> bool:
    """Unmount a home (its loop device is freed with it); whether one was mounted."""
    if not is_mounted(home):
        return False
    done = subprocess.run(["umount", str(home)], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:  # still held by a process that outlived its server: gone from the tree, freed after
        subprocess.run(["umount", "--lazy", str(home)], capture_output=True, timeout=60)
    return True


def detach_all(root: str | Path) -> list[str]:
    """Unmount every learner's home of the workshop in `root`; the learners whose homes were unmounted."""
    folder = Path(root) / "home"
    names = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    return [name for name in names if detach(folder / name)]


@contextlib.contextmanager
def mounted(root: str | Path, homes: dict[str, Path]):
    """Within the block, every home of {learner: home} that has an image is mounted; those mounted here are
    unmounted after it (the instructor's commands after the hub stopped)."""
    here = []
    try:
        for name, home in homes.items():
            if image(root, name).exists() and not available() and not is_mounted(home):
                home.mkdir(parents=True, exist_ok=True)
                _mount(image(root, name), home)
                here.append(home)
        yield
    finally:
        for home in here:
            detach(home)


def _make(disk: Path, size: int) -> None:
    """A sparse ext4 image of `size` bytes, root's only, made under a temporary name and then moved into place."""
    disk.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(disk.parent, 0o700)
    fresh = disk.with_suffix(".new")
    with open(fresh, "wb") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.truncate(size)
    done = subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1",
                           str(fresh)], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        fresh.unlink(missing_ok=True)
        raise OSError(f"mkfs.ext4 failed on {fresh}: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    os.replace(fresh, disk)


def _mount(disk: Path, home: Path) -> None:
    done = subprocess.run(["mount", "-o", MOUNT_OPTIONS, str(disk), str(home)], capture_output=True, text=True,
                          timeout=60)
    if done.returncode != 0:
        raise OSError(f"cannot mount {disk} on {home}: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
