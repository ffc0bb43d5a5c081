"""What the machine gives the lab, at the bottom of it: the project's folders, its Java, whether it runs in CI.

Nothing here imports the rest of the lab, so the broker, the jars, the cluster and the session all stand on it.
"""
from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

from streamlab.errors import LabError
from streamlab.settings import settings

ROOT = Path(__file__).resolve().parents[2]


def state_dir() -> Path:
    """The project's git-ignored state folder ($STREAMLAB_HOME, else .streamlab beside the code)."""
    return settings.home


def java_binary() -> str:
    """The `java` that Spark and the broker start ($JAVA_HOME's, else the one on PATH), or a LabError."""
    home = settings.java_home
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if home and not (Path(java).is_file() and os.access(java, os.X_OK)):
        found = shutil.which("java")
        raise LabError(f"JAVA_HOME={home} holds no Java ({java} is not there): point JAVA_HOME at a Java 17 or "
                       "newer installation (the folder that has bin/java)" + (
                           f", or unset it to use {found}" if found else "") + ".")
    if not java or not Path(java).exists():
        raise LabError("Java was not found. Spark needs Java 17 or newer: install it "
                       "(Debian/Ubuntu: `sudo apt-get install openjdk-17-jre-headless`) or set JAVA_HOME.")
    return java


def in_ci() -> bool:
    """Whether this runs under CI ($CI set true), where the real stack is required and no fallback is taken."""
    return settings.ci


def interrupt_on_termination() -> None:
    """A SIGTERM or SIGHUP (a `kill`, a closed terminal) raises KeyboardInterrupt, as Ctrl-C does: the `finally`
    blocks and exit handlers that stop what this process started run, where Python's default would just die."""
    def interrupted(_signum, _frame):
        raise KeyboardInterrupt

    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, interrupted)
