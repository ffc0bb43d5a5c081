"""Class-data sharing (Java's dynamic AppCDS) for the lab's JVMs: they start on classes already parsed and verified.

Why: every Spark session (a learner's notebook, each Check my work, each of the suite's ~150 notebook runs on a
2-core CI machine) starts a fresh driver JVM that loads some 15,000 classes from about 300 jars, parsing and verifying
each one; every broker start loads 5,000 more. A dynamic archive holds those classes as they are once loaded, and a
JVM started with -XX:SharedArchiveFile maps it instead of doing that work again. Measured on this 2-core machine
(loaded by others, 3 alternated runs each): a session to its first Kafka batch read took 8.9-10.9 s of the driver
JVM's CPU with the archive against 18.8-19.3 s without (wall 13-22 s against 32-45 s); a broker to ready 3.6-3.9 s of
CPU against 6.0-6.9 s.

How: `streamlab setup` makes the driver's archive once (streamlab/lab/cds_dump.py): a child process starts a real lab
session with -XX:ArchiveClassesAtExit, runs a small query, a Kafka batch read and a short stream, and the JVM writes
the classes it loaded when it exits. The archive's file name holds a key of the Java installation and of the driver's
class path (every jar's real path, size and time), so a changed jar, Spark or JDK looks for another file and the next
setup makes it. A driver gets `-XX:SharedArchiveFile=… -Xshare:auto` only when the file of its key is there and begins
with the archive's magic number; Java checks the class path itself again and, with -Xshare:auto, starts without the
archive on any mismatch (one warning line in spark.log), it never refuses to start. An archive is written under a
temporary name and renamed when complete. Making one that fails is one line of setup's output, never an error: the
lab runs the same without it, only slower to start. The brokers' archive (the lab's broker and the cluster's three
nodes run the same jars) is made the same way before setup starts the lab's broker: a throw-away broker in a temporary
folder, started with -XX:ArchiveClassesAtExit and stopped once it answers.

Where: `<state folder>/jars/cds/`, because a hub's learners (other Linux accounts) reach `.streamlab/jars` through the
link in their own state folder, and behind walls `.streamlab/jars` is what is kept (workshop/walls.py); the
folder is world-readable, the archives read-only. `STREAMLAB_CDS=off` starts every JVM without an archive (what
`make bench` compares against).
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path

from streamlab.lab.machine import java_binary, state_dir
from streamlab.settings import settings

MAGIC = 0xF00BABA8  # the first 4 bytes of a JDK dynamic archive (CDS_DYNAMIC_ARCHIVE_MAGIC), little-endian
MIN_SIZE = 1 << 20  # an archive of a real JVM's classes is tens of MB; anything this small is a broken file
DUMP_TIMEOUT_S = 600  # a dump on a loaded 2-core machine took 130 s


def enabled() -> bool:
    """False when $STREAMLAB_CDS is off (or 0, false, no): every JVM then starts without an archive."""
    return settings.cds


def folder() -> Path:
    """Where the archives are kept: beside the jars, which a hub's learners and walls already reach."""
    return state_dir() / "jars" / "cds"


def _stat(path: str) -> list:
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return [real, "missing"]
    return [real, st.st_size, st.st_mtime_ns] if not os.path.isdir(real) else [real, "dir", sorted(os.listdir(real))]


def _entries(classpath: list[str]) -> list:
    """Each class path entry's real path, size and time; a `folder/*` entry stands for the jars in it (Java's own
    expansion of a wildcard)."""
    out = []
    for entry in classpath:
        if entry.endswith("*"):
            base = entry[:-1] or "."
            try:
                names = sorted(n for n in os.listdir(base) if n.lower().endswith(".jar"))
            except OSError:
                names = []
            out.append([entry, [_stat(os.path.join(base, n)) for n in names]])
        else:
            out.append(_stat(entry))
    return out


def java_release(java: str) -> str:
    """The Java installation's version ('17.0.15') from its `release` file, without starting a JVM."""
    home = Path(os.path.realpath(java)).parent.parent
    try:
        for line in (home / "release").read_text().splitlines():
            if line.startswith("JAVA_VERSION="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return "unknown"


def key(java: str, classpath: list[str]) -> str:
    """A short key of the Java installation (its binary, version and module image) and of the class path."""
    home = Path(os.path.realpath(java)).parent.parent
    identity = [_stat(java), java_release(java), _stat(str(home / "lib" / "modules")), _entries(classpath)]
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:16]


def archive_path(kind: str, java: str, classpath: list[str]) -> Path:
    """The archive for JVMs of this kind ('driver' or 'broker') with this Java and class path."""
    return folder() / f"{kind}-java{java_release(java)}-{key(java, classpath)}.jsa"


def valid(path: Path) -> bool:
    """Whether `path` is a readable, complete-looking dynamic archive (Java checks the rest when it maps it)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
            size = os.fstat(fh.fileno()).st_size
    except OSError:
        return False
    return len(head) == 4 and struct.unpack("<I", head)[0] == MAGIC and size >= MIN_SIZE


def use_options(path: Path) -> list[str]:
    """The JVM options that map `path` when it is valid ([] otherwise), never stopping the JVM on a mismatch."""
    if not enabled() or not valid(path):
        return []
    return [f"-XX:SharedArchiveFile={path}", "-Xshare:auto"]


def _tidy(kind: str, keep: Path) -> None:
    """Remove this kind's archives of other keys (an old jar, Spark or JDK): each is tens to hundreds of MB."""
    for old in folder().glob(f"{kind}-*.jsa"):
        if old != keep:
            old.unlink(missing_ok=True)
    remove_orphans(kind)


def remove_orphans(kind: str) -> None:
    """Remove the temporary files of dumps whose process has ended without publishing them (failed or killed)."""
    for tmp in folder().glob(f".{kind}-*.tmp"):
        try:
            os.kill(int(tmp.stem.rsplit("-", 1)[1]), 0)
        except (ValueError, IndexError, ProcessLookupError):
            tmp.unlink(missing_ok=True)
        except OSError:  # alive, another account's
            pass


def publish(kind: str, tmp: Path, target: Path) -> bool:
    """Rename a finished dump to its final name (world-readable); False, and the file removed, if it is broken."""
    if not valid(tmp):
        tmp.unlink(missing_ok=True)
        return False
    os.chmod(tmp, 0o444)
    os.replace(tmp, target)
    _tidy(kind, target)
    return True


def temporary_path(target: Path) -> Path:
    """Where this process writes a dump of `target` before publish() renames it (a hidden name, its pid in it)."""
    folder().mkdir(parents=True, exist_ok=True)
    os.chmod(folder(), 0o755)
    return folder() / f".{target.stem}-{os.getpid()}.tmp"


# ---- the driver ----------------------------------------------------------------------------------------------------

def driver_classpath(conf: dict) -> list[str]:
    """What Spark's launcher puts on the driver's class path: spark.driver.extraClassPath, then Spark's conf folder and
    its jars (a wildcard). Anything else there (a $SPARK_DIST_CLASSPATH, say) Java itself finds not to match."""
    from pyspark.find_spark_home import _find_spark_home

    home = _find_spark_home()
    extra = [e for e in conf.get("spark.driver.extraClassPath", "").split(os.pathsep) if e]
    return [*extra, os.path.join(home, "conf"), os.path.join(home, "jars", "*")]


_dumping: dict | None = None  # set by setup's child that makes the driver's archive (streamlab/lab/cds_dump.py)


def dump_driver_here() -> dict:
    """Make this process's next session dump the driver's archive; the dict gets its target and tmp paths."""
    global _dumping
    _dumping = {}
    return _dumping


def driver_options(conf: dict) -> str:
    """What the lab's driver adds to spark.driver.extraJavaOptions: the archive's options when a valid one exists for
    this class path (else nothing); in setup's child, the option that makes it."""
    if not enabled():
        return ""
    try:
        target = archive_path("driver", java_binary(), driver_classpath(conf))
    except Exception:  # whatever went wrong here, the session starts, without the archive
        return ""
    if _dumping is not None:
        _dumping.update(target=target, tmp=temporary_path(target))
        return f" -XX:ArchiveClassesAtExit={_dumping['tmp']}"
    return "".join(f" {option}" for option in use_options(target))


# ---- the brokers ---------------------------------------------------------------------------------------------------

def broker_archive_path() -> Path:
    """The archive for Kafka broker JVMs on the lab's broker jars (the lab's broker and the cluster's nodes)."""
    from streamlab.lab.jars import broker_bundle

    return archive_path("broker", java_binary(), [str(p) for p in broker_bundle().jars()])


def broker_options() -> list[str]:
    """What a broker JVM adds to its options: the archive's when a valid one exists for the broker jars, else []."""
    try:
        return use_options(broker_archive_path())
    except Exception:  # missing jars or Java: the broker's own start says so; never because of the archive
        return []
