"""A kernel killed mid-demo (a restart gives a busy kernel seconds before SIGKILL) leaves its checkpoint folders;
the next kernel's first checkpoint deletes them, and never a folder of a process that still runs."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from streamlab.lab.lifecycle import remove_orphaned_folders

MAKE_AND_HANG = ("from streamlab.lab.lifecycle import new_checkpoint; print(new_checkpoint('demo'), flush=True); "
                 "import time; time.sleep(120)")


def test_a_killed_kernel_s_folders_go_and_a_live_one_s_stay():
    kernel = subprocess.Popen([sys.executable, "-c", MAKE_AND_HANG], stdout=subprocess.PIPE, text=True)
    try:
        folder = Path(kernel.stdout.readline().strip())
        assert folder.is_dir() and f"-{kernel.pid}-" in folder.name, folder
        remove_orphaned_folders()
        assert folder.is_dir(), "the folder of a kernel that still runs was deleted"
    finally:
        os.kill(kernel.pid, signal.SIGKILL)
        kernel.wait()
    assert folder.is_dir(), "SIGKILL runs no exit handler: the folder should still be there before the sweep"
    assert len(remove_orphaned_folders()) >= 1
    assert not folder.exists(), "the killed kernel's checkpoint folder was left behind"


def test_folders_without_a_pid_are_not_touched(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    other = tmp_path / "streamlab-grading-abcd1234"
    other.mkdir()
    remove_orphaned_folders()
    assert other.is_dir()
