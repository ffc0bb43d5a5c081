"""A learner's server behind its walls (workshop/walls.py), without a hub: run as the learner's account in
a namespace that shows their home and the course, and nothing else of the workshop or the hidden tests."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from streamlab.lab.broker import free_port
from workshop import walls

PROBE = r"""
try() { if eval "$2" >/dev/null 2>&1; then echo "$1 allowed"; else echo "$1 refused"; fi; }
echo "uid $(id -u)"
try other-home "cat $ROOT/home/bob/secret"
try workshop-list "ls $ROOT"
try hub-secret "cat $ROOT/hub/cookie_secret"
try hidden-tests "ls $REPO/solutions/00-setup"
try course-code "touch $REPO/streamlab/planted.py"
try config-write "touch $ROOT/server-config/planted"
try own-home "touch $ROOT/home/ada/mine"
try config-read "cat $ROOT/server-config/settings.json"
try python "$PYTHON -c 'import streamlab, pyspark'"
echo "processes $(ls /proc | grep -c '^[0-9]')"
"""


@pytest.mark.skipif(os.geteuid() != 0 or walls.available() is not None,
                    reason="walls need a hub run as root with util-linux's unshare and setpriv (CI has them)")
def test_behind_its_walls_a_server_reaches_its_home_and_the_course_only():
    root = Path(tempfile.mkdtemp(prefix="streamlab-walls-"))
    try:
        for folder in ("home/ada", "home/bob", "hub", "server-config", "kafka"):
            (root / folder).mkdir(parents=True)
        (root / "home" / "bob" / "secret").write_text("bob's")
        (root / "hub" / "cookie_secret").write_text("hub's")
        (root / "server-config" / "settings.json").write_text("{}")
        os.chown(root / "home" / "ada", 65534, 65534)
        for home in (root / "home").iterdir():
            os.chmod(home, 0o700)
        cmd = walls.wrap(["sh", "-c", PROBE], home=root / "home" / "ada", workshop=root,
                         config=root / "server-config", uid=65534, gid=65534, port=free_port(), reaches=[])
        env = {"PATH": "/usr/bin:/bin", "ROOT": str(root), "REPO": str(walls.REPO), "PYTHON": sys.executable,
               "PYTHONPATH": str(walls.REPO)}
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr
        seen = dict(line.split(" ", 1) for line in done.stdout.splitlines())
        assert seen.pop("uid") == "65534"
        # pid 1 (the reaper), the network relay, the probe (sh), ls, grep and the count's subshell
        assert int(seen.pop("processes")) <= 6, "the server sees processes outside its namespace"
        assert {what: seen[what] for what in ("own-home", "config-read", "python")} == dict.fromkeys(
            ("own-home", "config-read", "python"), "allowed"), seen
        refused = ("other-home", "workshop-list", "hub-secret", "hidden-tests", "course-code", "config-write")
        assert {what: seen[what] for what in refused} == dict.fromkeys(refused, "refused"), seen
        assert not (walls.REPO / "streamlab" / "planted.py").exists()
        assert not list(Path("/dev/shm").glob("streamlab-walls-*")), "the walls' staging folder was left behind"
    finally:
        subprocess.run(["rm", "-rf", str(root)], check=False)
