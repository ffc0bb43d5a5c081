"""Root acting inside a learner's home: every step refuses a symlink, so a learner's link never leads root elsewhere.

Why: the hub's spawner and the instructor's commands run as root and write into (and read from) the learners' homes,
which the learners control. A path-based `open`, `mkdir -p`, `copytree` or `os.chown` follows a link at any
component: `~/feedback` → `/etc` made `/etc` the learner's, `~/.streamlab/kafka.properties` → any file made root
overwrite it, `~/notebooks/00-setup` → the solutions handed the hidden tests in (docs/workshop.md; the red team's
G1-G3). The kernel's `fs.protected_symlinks` does not help: it covers only sticky world-writable folders, and is off
on some machines. So here every path is walked from the home one component at a time with directory fds and
`O_NOFOLLOW`, and a link at any component is refused with a one-line reason:
- folders are made with `mkdir(dir_fd=)` and given to the learner by fd (`fchown`);
- files are written to a fresh `O_EXCL` file beside the target, given to the learner by fd, then renamed over the
  target (`rename` replaces a link, never follows it);
- a file is read (collect) only if it is a regular file of the learner's own (her uid, one link, bounded size);
- the whole home is given back with `os.fwalk`, which never enters a linked folder, and `chown` on each entry
  without following it, skipping files with other links (a hard link to someone else's file is not hers to get).
A learner can still race these steps (swap a folder for a link between two calls); each step then fails on the link
instead of following it.
"""
from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path, PurePosixPath

DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_LIMIT = 32 * 1024 * 1024  # a notebook larger than this is no hand-in (the course's are below 1 MB)


class Refused(Exception):
    """Root will not act on this path in a learner's home (the message says why, in one line)."""


def owner(home: Path, system_name: str) -> tuple[int, int] | None:
    """(uid, gid) of the Linux account `system_name` whose home is `home`, when running as root; else None."""
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        entry = pwd.getpwnam(system_name)
    except KeyError:
        return None
    return (entry.pw_uid, entry.pw_gid) if Path(entry.pw_dir) == Path(home) else None


def make_home(home: Path, mode: int = 0o700) -> None:
    """Make the home folder itself (its parents are root's), refusing a link in its place; set its mode."""
    home.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(home, mode)
    except FileExistsError:
        pass
    fd = _open_home(home)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def exists(home: Path, rel: str | os.PathLike) -> bool:
    """Whether anything (a link included) is at `rel` in `home`; a link on the way there is refused."""
    *folders, name = _parts(rel)
    fd = _walk(home, folders, create=False)
    if fd is None:
        return False
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False
    finally:
        os.close(fd)


def make_dirs(home: Path, rel: str | os.PathLike, ids: tuple[int, int] | None = None, mode: int = 0o755) -> None:
    """Make the folders of `rel` in `home` that are missing (owned by `ids`, when given)."""
    os.close(_walk(home, _parts(rel), create=True, ids=ids, mode=mode))


def write_file(home: Path, rel: str | os.PathLike, data: bytes, ids: tuple[int, int] | None = None,
               mode: int = 0o644) -> None:
    """Write `data` to `rel` in `home` (its folders made), owned by `ids` when given; a link there is replaced."""
    *folders, name = _parts(rel)
    parent = _walk(home, folders, create=True, ids=ids)
    temp = f".{name}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=parent)
        try:
            if ids:
                os.fchown(fd, *ids)
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        try:
            os.rename(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except OSError as exc:
            raise Refused(f"~/{_show(rel)} cannot be replaced ({exc.strerror}): it is not a file") from None
    except BaseException:
        try:
            os.unlink(temp, dir_fd=parent)
        except OSError:
            pass
        raise
    finally:
        os.close(parent)


def symlink(home: Path, rel: str | os.PathLike, target: Path, ids: tuple[int, int] | None = None) -> None:
    """Make `rel` in `home` a link to `target` unless something is there already (the link owned by `ids`)."""
    *folders, name = _parts(rel)
    parent = _walk(home, folders, create=True, ids=ids)
    try:
        os.symlink(target, name, dir_fd=parent)
        if ids:
            os.chown(name, *ids, dir_fd=parent, follow_symlinks=False)
    except FileExistsError:
        pass
    finally:
        os.close(parent)


def copy_tree(source: Path, home: Path, rel: str | os.PathLike, ids: tuple[int, int] | None = None) -> None:
    """Copy the folder `source` (root's own, e.g. the course's notebooks) to `rel` in `home`, owned by `ids`."""
    base = PurePosixPath(*_parts(rel))
    for folder, dirnames, filenames in os.walk(source):
        here = base / Path(folder).relative_to(source)
        make_dirs(home, here, ids)
        dirnames.sort()
        for filename in sorted(filenames):
            path = Path(folder) / filename
            if path.is_file() and not path.is_symlink():
                write_file(home, here / filename, path.read_bytes(), ids)


def read_file(home: Path, rel: str | os.PathLike, uid: int | None = None, limit: int = READ_LIMIT) -> bytes:
    """The bytes of `rel` in `home` if it is the learner's own regular file: no link on the way, owned by `uid`
    (when given), one link, at most `limit` bytes. FileNotFoundError when missing, Refused (saying why) otherwise."""
    *folders, name = _parts(rel)
    parent = _walk(home, folders, create=False)
    if parent is None:
        raise FileNotFoundError(errno.ENOENT, "no such file", f"~/{_show(rel)}")
    try:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise
            raise Refused(f"~/{_show(rel)} {_what(parent, name, exc)}") from None
    finally:
        os.close(parent)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"~/{_show(rel)} is not a regular file")
        if uid is not None and st.st_uid != uid:
            raise Refused(f"~/{_show(rel)} belongs to uid {st.st_uid}, not to the learner (uid {uid})")
        if st.st_nlink != 1:
            raise Refused(f"~/{_show(rel)} has {st.st_nlink} hard links: it may be someone else's file")
        if st.st_size > limit:
            raise Refused(f"~/{_show(rel)} is {st.st_size} bytes, over the {limit} a hand-in may have")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise Refused(f"~/{_show(rel)} grew over the {limit} bytes a hand-in may have")
        return b"".join(chunks)
    finally:
        os.close(fd)


def chown_tree(home: Path, ids: tuple[int, int]) -> None:
    """Give the home and everything in it to `ids`, entering no linked folder and following no link; files with
    more than one link are left as they are (a hard link to a file elsewhere must not make it the learner's)."""
    top = _open_home(home)
    try:
        os.fchown(top, *ids)
        for _folder, dirnames, filenames, fd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
            for name in dirnames + filenames:
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    if stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode) or st.st_nlink == 1:
                        if (st.st_uid, st.st_gid) != ids:
                            os.chown(name, *ids, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:  # removed meanwhile by the learner's running server
                    pass
    finally:
        os.close(top)


def _parts(rel: str | os.PathLike) -> list[str]:
    parts = list(PurePosixPath(rel).parts)
    if not parts or PurePosixPath(rel).is_absolute() or any(p in (".", "..") for p in parts):
        raise ValueError(f"{rel!r} is no path inside a home")
    return parts


def _show(rel) -> str:
    return str(PurePosixPath(rel))


def _open_home(home: Path) -> int:
    try:
        return os.open(home, DIR)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise Refused(f"{home} is not a folder (a link?): root acts in no home but a real one") from None
        raise


def _walk(home: Path, folders: list[str], create: bool, ids: tuple[int, int] | None = None,
          mode: int = 0o755) -> int | None:
    """An fd of the folder `home/folders...`, each component opened without following a link (made when
    `create`, owned by `ids`); None when one is missing and not `create`."""
    fd = _open_home(home)
    done: list[str] = []
    try:
        for part in folders:
            try:
                nxt = os.open(part, DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    return None
                try:
                    os.mkdir(part, mode, dir_fd=fd)
                except FileExistsError:
                    pass
                try:
                    nxt = os.open(part, DIR, dir_fd=fd)
                except OSError as exc:
                    raise Refused(f"~/{_show(PurePosixPath(*done, part))} {_what(fd, part, exc)}") from None
                if ids:
                    os.fchown(nxt, *ids)
                os.fchmod(nxt, mode)
            except OSError as exc:
                raise Refused(f"~/{_show(PurePosixPath(*done, part))} {_what(fd, part, exc)}") from None
            os.close(fd)
            fd = nxt
            done.append(part)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _what(fd: int, name: str, exc: OSError) -> str:
    """Why `name` in folder `fd` could not be opened, in a few words."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        return "is a symlink: root follows no link in a learner's home"
    if exc.errno == errno.ENOTDIR:
        return "is not a folder"
    return f"cannot be opened ({exc.strerror})"
