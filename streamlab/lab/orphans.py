"""What kernels that are gone left behind: their checkpoint folders, their topics, their JVM's temporary folder.

A kernel killed mid-demo (a restart gives a busy kernel only a few seconds before SIGKILL, out of memory, a check
that timed out) runs no exit handler, so what it made stays. Its names say whose it was: a folder carries the
kernel's pid (streamlab-<name>-<pid>-…), a topic its owner token (streamlab.lab.owners), so the next kernel's
setup() deletes them once that process no longer runs.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from streamlab.lab import topics as _topics
from streamlab.lab.broker import probe


def orphaned_folders() -> list[Path]:
    """The checkpoint folders (new_checkpoint: streamlab-<name>-<pid>-…) of kernels that are gone."""
    found = []
    for folder in Path(tempfile.gettempdir()).glob("streamlab-*-*-*"):
        match = re.fullmatch(r"streamlab-.+-(\d+)-[a-z0-9_]{8}", folder.name)
        if match and folder.is_dir() and int(match[1]) != os.getpid() and not pid_runs(int(match[1])):
            found.append(folder)
    return found


def remove_orphaned_folders() -> list[Path]:
    """Delete the folders left by kernels that were killed (their pid no longer runs); return them."""
    gone = orphaned_folders()
    for folder in gone:
        shutil.rmtree(folder, ignore_errors=True)
    return gone


def pid_runs(pid: int) -> bool:
    """Whether a process `pid` runs (someone else's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def count(n: int, noun: str) -> str:
    """'1 topic', '2 topics'."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def sweep(bootstrap: str | None, left: list[str], timeout: float = 5.0) -> str:
    """Delete the folders and topics of kernels that are gone, and the topics in `left` (this kernel's, which an
    earlier cleanup could not delete; `left` keeps those the broker did not delete in time); say what ('' when
    nothing)."""
    from kafka.errors import KafkaError

    from streamlab.lab.owners import orphaned

    gone = remove_orphaned_folders()
    jvm = sum(folder.name.startswith("streamlab-jvm-") for folder in gone)  # session._private_temporary_folder
    folders = len(gone) - jvm
    theirs: list[str] = []
    mine: list[str] = []
    if bootstrap and probe(bootstrap, timeout=1.0) == "kafka":
        try:
            listed = _topics.list_topics(bootstrap)
            theirs = orphaned(listed)
            mine = [t for t in dict.fromkeys(left) if t in listed]
            failed = _topics.delete_within(theirs + mine, bootstrap, timeout) if theirs or mine else []
            # A topic that is not listed is gone already; one the broker did not delete in time stays for later.
            left[:] = [t for t in mine if t in failed]
            theirs = [t for t in theirs if t not in failed]
            mine = [t for t in mine if t not in failed]
        except (KafkaError, OSError):
            theirs, mine = [], []  # a broker that went away meanwhile: the next setup() tries again
    said = []
    if mine:
        said.append(f"{count(len(mine), 'topic')} an earlier cleanup() left while the broker was not answering")
    parts = [count(len(theirs), "topic") if theirs else "", count(folders, "checkpoint folder") if folders else "",
             count(jvm, "Spark temporary folder") if jvm else ""]
    parts = [p for p in parts if p]
    if parts:
        said.append(f"{' and '.join(parts)} left by kernels that are gone")
    return "; ".join(said)
