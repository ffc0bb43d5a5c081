"""Red team H1 (attempts G4, G4b, G4c, G4d, G5): a notebook graded by root must not run as the machine's root.

`unshare --user --map-root-user` started by root mapped the kernel to host uid 0: a learner's answer cell, graded by
the instructor, read /etc/shadow and the hub's and the room Kafka's secrets, wrote root's folders and dropped its
loot in the /var/tmp every learner shares. A probe runs through the very sandbox grading builds (`make_sandbox`),
then one real grading of the fixture assignment with an attacking answer cell still earns full marks and gets
nothing out. Only root can show this (CI runs as root).
"""
from __future__ import annotations

import html
import json
import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from grader import sandbox
from grader.course import release
from grader.grading import grade_notebook, make_sandbox

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="grading as the machine's root is what these attacks "
                                                          "target: run as root (CI does)")

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "solutions"
AID = "fx-basics"
SHARED = ("/var/tmp", "/run/lock", "/dev/shm")

PROBE = r"""
import json, os, sys
plant, workshop, marker, course = sys.argv[1:5]
seen = {}
def tried(name, fn):
    try:
        seen[name] = ["ok", fn()]
    except Exception as exc:
        seen[name] = ["refused", type(exc).__name__]
seen["uid_map"] = open("/proc/self/uid_map").read().split()
tried("secret", lambda: open(os.path.join(plant, "secret")).read())
tried("shadow", lambda: open("/etc/shadow").read()[:20])
tried("write_plant", lambda: open(os.path.join(plant, "dropped"), "w").write("x"))
for name in ("hub/instructor.token", "hub/jupyterhub.sqlite", "kafka/admin.secret"):
    seen[name] = os.path.exists(os.path.join(workshop, name))
for shared in ("/var/tmp", "/run/lock", "/dev/shm"):
    seen["sees " + shared] = os.path.exists(os.path.join(shared, marker + "-outside"))
    tried("write " + shared, lambda: open(os.path.join(shared, marker + "-inside"), "w").write("loot"))
tried("home", lambda: open(os.path.join(os.environ["HOME"], "x"), "w").write("x"))
tried("course", lambda: len(open(os.path.join(course, "grader", "worker.py")).read()))
tried("jars", lambda: len(os.listdir(os.path.join(course, ".streamlab", "jars"))))
tried("imports", lambda: __import__("pyspark") and __import__("grader") and __import__("streamlab") and "yes")
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def account_removed_after():
    """The grading account, removed afterwards when these tests made it."""
    try:
        existed = bool(pwd.getpwnam(sandbox.ACCOUNT))
    except KeyError:
        existed = False
    yield
    if not existed:
        subprocess.run(["userdel", sandbox.ACCOUNT], capture_output=True)


@pytest.fixture
def planted(tmp_path, monkeypatch, account_removed_after):
    """Root's secrets where a kernel could look: a 0600 file in a root-owned folder outside every sandbox mount,
    a fake workshop root with the hub's and Kafka's secrets, and a file in each shared writable folder."""
    marker = f"streamlab-redteam-{secrets.token_hex(4)}"
    plant = Path(tempfile.mkdtemp(prefix=marker + "-", dir="/var/lib"))
    workshop = Path(tempfile.mkdtemp(prefix=marker + "-workshop-", dir=ROOT / ".streamlab"))
    made = [plant, workshop]
    try:
        plant.chmod(0o755)
        token = secrets.token_hex(16)
        (plant / "secret").write_text(token)
        (plant / "secret").chmod(0o600)
        workshop.chmod(0o711)
        for name, mode in (("hub/instructor.token", 0o600), ("hub/jupyterhub.sqlite", 0o644),
                           ("kafka/admin.secret", 0o600)):
            (workshop / name).parent.mkdir(exist_ok=True)
            (workshop / name).write_text(token)
            (workshop / name).chmod(mode)
        for shared in SHARED:
            Path(shared, marker + "-outside").write_text("the host's")
        monkeypatch.setenv("STREAMLAB_WORKSHOP_ROOT", str(workshop))
        yield {"plant": plant, "workshop": workshop, "marker": marker, "token": token}
    finally:
        for path in made:
            shutil.rmtree(path, ignore_errors=True)
        for shared in SHARED:
            for suffix in ("-outside", "-inside"):
                Path(shared, marker + suffix).unlink(missing_ok=True)


def test_a_kernel_graded_by_root_runs_as_nobody_and_reaches_no_secret(planted, tmp_path):
    work, course = tmp_path / "work", tmp_path / "course"
    work.mkdir()
    course.mkdir()
    box, why = make_sandbox(course, FIXTURES, work)
    assert box is not None, why
    python = str(Path(sys.prefix).resolve() / "bin" / Path(sys.executable).name)
    done = subprocess.run(box.wrap([python, "-c", PROBE, str(planted["plant"]), str(planted["workshop"]),
                                    planted["marker"], str(ROOT)]),
                          capture_output=True, text=True, timeout=120, cwd=work)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    inside, outside = seen["uid_map"][:2]
    assert inside == "0" and outside != "0", f"the kernel is the host's uid {outside} (G4: uid_map {seen['uid_map']})"
    assert seen["secret"][0] == "refused", "a root-only file was read (G4)"
    assert seen["shadow"][0] == "refused", "/etc/shadow was read (G4)"
    assert seen["write_plant"][0] == "refused" and not (planted["plant"] / "dropped").exists(), \
        "a root-owned folder outside the sandbox was written (G4b)"
    for name in ("hub/instructor.token", "hub/jupyterhub.sqlite", "kafka/admin.secret"):
        assert seen[name] is False, f"the workshop's {name} is visible to a graded kernel (G4, G4c)"
    for shared in SHARED:
        assert seen["sees " + shared] is False, f"the host's {shared} is the kernel's (G4d)"
        assert not Path(shared, planted["marker"] + "-inside").exists(), f"a kernel's file in {shared} got out (G4d)"
    assert seen["home"][0] == "ok", f"the kernel's HOME is not writable: {seen['home']}"
    assert seen["course"][0] == "ok" and seen["jars"][0] == "ok" and seen["jars"][1] > 0, seen
    assert seen["imports"] == ["ok", "yes"], seen


ATTACK = r"""
import os
print("ATT" + "ACKED")
for path in [{secret!r}, "/etc/shadow", {token!r}]:
    try:
        print("RE" + "AD:", open(path).read()[:64])
    except Exception as exc:
        print("DEN" + "IED:", type(exc).__name__)
import socket
for port in [{hub_port}, {kafka_port}]:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
        print("REACH" + "ED", port)
    except OSError as exc:
        print("UNREACHABLE", port, type(exc).__name__)
for path in [{drop!r}, {loot!r}]:
    try:
        open(path, "w").write("loot")
        print("WROTE", path)
    except Exception as exc:
        print("NOT WRITTEN", type(exc).__name__)

def total_lag(latest, consumed):
    return sum(e - consumed.get(p, 0) for p, e in latest.items())
"""


@pytest.mark.broker
def test_grading_as_root_still_gives_full_marks_and_the_attack_gets_nothing(planted, tmp_path, bootstrap):
    release(tmp_path / "release", FIXTURES, quiet=True)
    nb = nbformat.read(tmp_path / "release" / AID / f"{AID}.ipynb", as_version=4)
    solution = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source
                for c in nbformat.read(FIXTURES / AID / f"{AID}.ipynb", as_version=4).cells}
    loot = f"/var/tmp/{planted['marker']}-inside"
    hub_api = socket.create_server(("127.0.0.1", 0))  # a service of the machine, as the hub's API is (G4)
    kafka_port, hub_port = int(bootstrap.rsplit(":", 1)[1]), hub_api.getsockname()[1]
    attack = ATTACK.format(secret=str(planted["plant"] / "secret"), drop=str(planted["plant"] / "dropped"),
                           token=str(planted["workshop"] / "hub/instructor.token"), loot=loot,
                           hub_port=hub_port, kafka_port=kafka_port)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = attack if gid == "ex1_answer" else solution[gid]
    path = tmp_path / "alice" / f"{AID}.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    with hub_api:
        result = grade_notebook(path, AID, student="alice", source=FIXTURES, timeout=60, require_sandbox=True,
                                feedback_dir=tmp_path / "feedback")
        hub_api.setblocking(False)
        with pytest.raises(BlockingIOError):
            hub_api.accept()  # nothing from the graded kernel ever connected
    page = html.unescape(re.sub(r"<[^>]+>", "", Path(result.feedback).read_text(encoding="utf-8")))
    assert "ATTACKED" in page, "the attacking cell did not run"
    assert f"UNREACHABLE {hub_port}" in page, "the graded kernel reached a service of the machine"
    assert f"REACHED {kafka_port}" in page, "the graded kernel could not reach the grading broker"
    assert planted["token"] not in page, "the graded kernel read root's secrets (G4)"
    assert "READ:" not in page, "the graded kernel read /etc/shadow or the hub's token (G4, G4c)"
    assert not (planted["plant"] / "dropped").exists(), "the graded kernel wrote a root-owned folder (G4b)"
    assert not Path(loot).exists(), "the graded kernel's loot reached the shared /var/tmp (G4d)"
    assert (result.score, result.max_score) == (6, 6), [(e.grade_id, e.points, e.hint) for e in result.exercises]


def test_without_setpriv_root_is_told_why_it_cannot_sandbox_and_how_to_fix_it(monkeypatch):
    real = shutil.which
    monkeypatch.setattr(sandbox.shutil, "which", lambda tool: None if tool == "setpriv" else real(tool))
    why = sandbox.available.__wrapped__()
    assert why is not None and "\n" not in why, "root graded without being able to drop its privileges"
    assert "setpriv" in why and "apt install util-linux" in why, why
