"""Red team, disk (issue 27, ../shared/reviews/security.md R5/H11): a learner who writes without end into her home
fills her own file system, not the machine's disk, and no other learner's home; her work outlives the hub's stop.

Real `sl-rtd*` accounts and homes made by the spawner's own preparation on a temporary workshop whose homes are
64 MiB (root only, as in CI: bounding a home needs a loop device); the room's Kafka is not what is attacked here, so
its call is replaced by a fixed password. Everything mounted here is unmounted and every account removed.
"""
from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from workshop import disks, hub, instructor, kafka
from workshop.__main__ import stop
from workshop.hub import SYSTEM_PREFIX, Settings

LIMIT_MIB = 64
LEARNERS = ("rtdmal", "rtdvic")


@pytest.fixture
def workshop(monkeypatch):
    if os.geteuid() != 0 or disks.available():
        pytest.skip(f"bounding homes needs root and loop devices ({disks.available()}); CI runs as root")
    base = Path(tempfile.mkdtemp(prefix="streamlab-redteam-disk-"))
    os.chmod(base, 0o755)
    settings = Settings(root=str(base / "workshop"), home_limit=f"{LIMIT_MIB}M")
    settings.save()
    monkeypatch.setenv("STREAMLAB_WORKSHOP_ROOT", settings.root)
    monkeypatch.setattr(kafka, "add_learner", lambda _room, name, password=None: f"pw-{name}")
    try:
        yield settings
    finally:
        disks.detach_all(settings.root)
        for name in LEARNERS:
            subprocess.run(["userdel", SYSTEM_PREFIX + name], capture_output=True, timeout=30)
        shutil.rmtree(base, ignore_errors=True)


def _prepare(name: str) -> dict:
    """What the hub does before a learner's server starts: her account, her home, her notebooks."""
    try:
        pwd.getpwnam(SYSTEM_PREFIX + name)
        subprocess.run(["userdel", SYSTEM_PREFIX + name], check=True, capture_output=True, timeout=30)  # a killed run's
    except KeyError:
        pass
    return hub.WorkshopSpawner(user=SimpleNamespace(name=name, url=f"/user/{name}/"))._prepare()


def _fill(name: str, path: Path, mib: int) -> tuple[bool, int, str]:
    """What the learner runs in her terminal (as her account): write `mib` MiB to `path`; (all written, bytes
    written, dd's complaint)."""
    entry = pwd.getpwnam(SYSTEM_PREFIX + name)
    done = subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={mib}", "conv=fsync"],
                          user=entry.pw_uid, group=entry.pw_gid, extra_groups=[], capture_output=True, text=True,
                          timeout=300, cwd="/")
    lines = done.stderr.strip().splitlines()
    copied = int(lines[-1].split()[0]) if lines and lines[-1].split()[0].isdigit() else -1
    return done.returncode == 0, copied, (lines or [""])[0]


def test_a_learner_filling_her_home_fills_only_her_own_file_system(workshop):
    """R5/H11: before, 1 GiB went into a home in 3.3 s with no quota."""
    homes = {name: Path(_prepare(name)["HOME"]) for name in LEARNERS}
    assert all(disks.is_mounted(home) for home in homes.values()), "a new learner's home is not a file system"
    assert not (homes["rtdmal"] / "lost+found").exists(), "ext4's lost+found shows in the learner's home"
    before = shutil.disk_usage(workshop.root).free

    complete, written, said = _fill("rtdmal", homes["rtdmal"] / "fill", 4 * LIMIT_MIB)
    assert not complete and "No space left on device" in said, f"her own limit did not stop her: {said}"
    assert 0 < written <= LIMIT_MIB << 20
    image = disks.image(workshop.root, "rtdmal")
    assert image.stat().st_blocks * 512 <= (LIMIT_MIB + 1) << 20, "her image takes more of the machine's disk"
    assert before - shutil.disk_usage(workshop.root).free < (LIMIT_MIB + 16) << 20
    assert (image.stat().st_mode & 0o777) == 0o600 and (image.parent.stat().st_mode & 0o777) == 0o700

    complete, written, said = _fill("rtdvic", homes["rtdvic"] / "notes", 1)
    assert complete and written == 1 << 20, f"another learner could not write in his home after the flood: {said}"


def test_her_work_outlives_the_hubs_stop_and_the_instructor_still_collects_it(workshop):
    home = Path(_prepare("rtdmal")["HOME"])
    notebook = home / "notebooks" / "00-setup" / "00-setup.ipynb"
    mine = notebook.read_bytes() + b" "
    notebook.write_bytes(mine)

    stop(workshop)
    assert not disks.is_mounted(home) and not notebook.exists(), "the stop left her file system mounted"
    found = instructor.collect(workshop, "00-setup", only=["rtdmal"])
    assert found["rtdmal"] is not None and found["rtdmal"].read_bytes() == mine, found.why
    assert not disks.is_mounted(home), "collect left her file system mounted after the hub stopped"

    _prepare("rtdmal")  # her next server start
    assert notebook.read_bytes() == mine, "her work did not survive the hub's stop"


def test_a_home_made_before_the_limit_stays_as_it_was_and_says_so(workshop):
    home = workshop.home("rtdmal")
    (home / "notebooks").mkdir(parents=True)
    (home / "notebooks" / "mine.txt").write_text("kept")
    why = disks.attach(workshop.root, "rtdmal", home, workshop.home_limit)
    assert why and "no size limit" in why and "before" in why
    assert not disks.is_mounted(home) and (home / "notebooks" / "mine.txt").read_text() == "kept"
    assert not disks.image(workshop.root, "rtdmal").exists()

