"""The red team's attempts on root acting on a learner's paths (../shared/reviews/security.md, G1-G3), replayed on the
real functions: a learner plants a link in her home, then the instructor collects and hands back feedback, and the
spawner prepares her next server. Nothing outside her home may be written, chowned or handed in, and her own files
still work. Also the instructor's account, made at start rather than claimed, and the hub's state, root's only.

Real `sl-rt*` accounts on a temporary workshop (root only, as in CI: the holes are root's); the stand-ins for `/etc`
and for the solutions are root-owned folders in a temporary folder. No hub and no broker are started: the spawner's
Kafka call is replaced by a fixed password (the room's Kafka is not what is attacked here).
"""
from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from workshop import disks, hub, instructor, kafka
from workshop.hub import SYSTEM_PREFIX, Settings

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the holes are root's: run as root (CI is)")
LEARNERS = ("rtada", "rtbob")
AID = "00-setup"


def _add_account(name: str, home: Path) -> tuple[int, int]:
    try:
        pwd.getpwnam(SYSTEM_PREFIX + name)
        subprocess.run(["userdel", SYSTEM_PREFIX + name], check=True, capture_output=True, timeout=30)  # a killed run's
    except KeyError:
        pass
    hub._ensure_account(SYSTEM_PREFIX + name, home)
    entry = pwd.getpwnam(SYSTEM_PREFIX + name)
    return entry.pw_uid, entry.pw_gid


@pytest.fixture
def workshop(monkeypatch):
    """A workshop root with learners rtada and rtbob (accounts, homes, their own 00-setup notebooks, credentials),
    and `elsewhere`: root-owned stand-ins (a folder like /etc, a 0600 file, a solutions folder)."""
    if os.geteuid() != 0:
        pytest.skip("the holes are root's: run as root (CI is)")
    base = Path(tempfile.mkdtemp(prefix="streamlab-redteam-"))
    os.chmod(base, 0o755)
    settings = Settings(root=str(base / "workshop"))
    settings.save()
    made = []
    try:
        elsewhere = base / "elsewhere"
        (elsewhere / "etc").mkdir(parents=True)
        (elsewhere / "etc" / "passwd").write_text("root's\n")
        (elsewhere / "secret").write_text("root's 0600\n")
        os.chmod(elsewhere / "secret", 0o600)
        (elsewhere / "solutions" / AID).mkdir(parents=True)
        (elsewhere / "solutions" / AID / f"{AID}.ipynb").write_text('{"BEGIN SOLUTION": "HIDDEN TESTS"}')
        ids = {}
        for name in LEARNERS:
            home = settings.home(name)
            (home / "notebooks" / AID).mkdir(parents=True)
            (home / "notebooks" / AID / f"{AID}.ipynb").write_text(f'{{"work": "{name}\'s"}}')
            (home / ".streamlab").mkdir()
            ids[name] = _add_account(name, home)
            made.append(name)
            kafka.write_options(home / ".streamlab" / "kafka.properties", "127.0.0.1:1", name, f"pw-{name}")
            for path in [home, *home.rglob("*")]:
                os.chown(path, *ids[name])
            os.chmod(home, 0o700)
        monkeypatch.setenv("STREAMLAB_WORKSHOP_ROOT", settings.root)
        monkeypatch.setattr(kafka, "add_learner", lambda _room, name, password=None: f"pw-{name}")
        yield SimpleNamespace(settings=settings, elsewhere=elsewhere, ids=ids, before=_snapshot(elsewhere))
    finally:
        disks.detach_all(settings.root)  # a home the spawner made is a file system of its own
        for name in made:
            subprocess.run(["userdel", SYSTEM_PREFIX + name], capture_output=True, timeout=30)
        shutil.rmtree(base, ignore_errors=True)


def _snapshot(folder: Path) -> dict:
    """Every path under `folder` (itself included) with its owner, mode and content: what must not change."""
    return {str(p): (p.lstat().st_uid, p.lstat().st_gid, stat.S_IMODE(p.lstat().st_mode),
                     p.read_bytes() if p.is_file() else None)
            for p in [folder, *sorted(folder.rglob("*"))]}


def _plant(link: Path, target: Path) -> None:
    """What the learner does in her terminal: replace `link` by a symlink to `target` (owned by her, as hers are)."""
    if link.is_dir() and not link.is_symlink():
        shutil.rmtree(link)
    elif link.exists() or link.is_symlink():
        link.unlink()
    link.symlink_to(target)
    owner = link.parent.stat()
    os.chown(link, owner.st_uid, owner.st_gid, follow_symlinks=False)


def _result(name: str) -> SimpleNamespace:
    return SimpleNamespace(student=name, assignment=AID, graded=True, error=None, score=3.0, max_score=3.0)


def _graded_out(workshop, names) -> Path:
    out = Path(workshop.settings.root) / "grades" / AID
    for name in names:
        (out / "feedback" / name).mkdir(parents=True)
        (out / "feedback" / name / f"{AID}.html").write_text(f"<p>{name}'s feedback</p>")
    return out


def _spawner(name: str) -> hub.WorkshopSpawner:
    return hub.WorkshopSpawner(user=SimpleNamespace(name=name, url=f"/user/{name}/"))


# --- G1, G1b: collect hands in only the learner's own file ----------------------------------------------------------

@root_only
def test_g1_a_linked_module_folder_does_not_hand_the_solution_in(workshop):
    ada = workshop.settings.home("rtada")
    _plant(ada / "notebooks" / AID, workshop.elsewhere / "solutions" / AID)
    found = instructor.collect(workshop.settings, AID)
    assert found["rtada"] is None, "the solution notebook was handed in as rtada's"
    assert "symlink" in found.why["rtada"]
    assert not (Path(workshop.settings.root) / "collected" / AID / "rtada").exists()
    assert found["rtbob"].read_text() == '{"work": "rtbob\'s"}'  # a learner's own notebook still goes in


@root_only
def test_g1b_a_link_to_another_learners_folder_does_not_hand_his_work_in(workshop):
    _plant(workshop.settings.home("rtada") / "notebooks" / AID, workshop.settings.home("rtbob") / "notebooks" / AID)
    found = instructor.collect(workshop.settings, AID)
    assert found["rtada"] is None and "symlink" in found.why["rtada"]
    assert found["rtbob"].read_text() == '{"work": "rtbob\'s"}'


@root_only
def test_g1c_a_hard_link_to_another_learners_notebook_is_not_handed_in(workshop):
    # with fs.protected_hardlinks=0 (some machines) a learner can link a file she cannot read; root does it here
    ada = workshop.settings.home("rtada") / "notebooks" / AID / f"{AID}.ipynb"
    ada.unlink()
    os.link(workshop.settings.home("rtbob") / "notebooks" / AID / f"{AID}.ipynb", ada)
    found = instructor.collect(workshop.settings, AID)
    assert found["rtada"] is None and "refused" in found.why["rtada"]


# --- G2, G2b: hand-back writes and chowns nothing outside the home --------------------------------------------------

@root_only
def test_g2_a_linked_feedback_folder_makes_nothing_outside_the_learners(workshop, capsys):
    _plant(workshop.settings.home("rtada") / "feedback", workshop.elsewhere / "etc")
    out = _graded_out(workshop, LEARNERS)
    instructor._hand_back(workshop.settings, AID, [_result("rtada"), _result("rtbob")], out)
    assert _snapshot(workshop.elsewhere) == workshop.before, "root wrote into or chowned the link's target"
    assert "rtada: no feedback handed back" in capsys.readouterr().err
    bob = workshop.settings.home("rtbob") / "feedback" / AID  # the other learner still gets his feedback, as his
    assert (bob / "grade.txt").read_text() == f"{AID}: 3 / 3\n"
    assert (bob / f"{AID}.html").read_text() == "<p>rtbob's feedback</p>"
    for path in (bob.parent, bob, bob / "grade.txt", bob / f"{AID}.html"):
        assert (path.stat().st_uid, path.stat().st_gid) == workshop.ids["rtbob"], path


@root_only
def test_g2b_a_link_to_another_learners_home_does_not_lock_him_out(workshop):
    bob = workshop.settings.home("rtbob")
    before = _snapshot(bob)
    _plant(workshop.settings.home("rtada") / "feedback", bob)
    instructor._hand_back(workshop.settings, AID, [_result("rtada")], _graded_out(workshop, ["rtada"]))
    assert _snapshot(bob) == before, "rtbob's home changed hands or content"


# --- G3, G3b: the spawner writes no file through a link -------------------------------------------------------------

@root_only
def test_g3_a_linked_credentials_file_is_replaced_not_written_through(workshop):
    ada = workshop.settings.home("rtada")
    _plant(ada / ".streamlab" / "kafka.properties", workshop.elsewhere / "secret")
    env = _spawner("rtada")._prepare()
    assert _snapshot(workshop.elsewhere) == workshop.before, "root overwrote the link's target"
    options = Path(env["STREAMLAB_KAFKA_OPTIONS"])
    assert not options.is_symlink() and 'username="rtada"' in options.read_text()
    assert (options.stat().st_uid, stat.S_IMODE(options.stat().st_mode)) == (workshop.ids["rtada"][0], 0o600)
    assert (ada / "notebooks" / AID / f"{AID}.ipynb").read_text() == '{"work": "rtada\'s"}'  # her work is kept


@root_only
def test_g3_write_options_as_called_before_writes_through_no_link(workshop):
    ada = workshop.settings.home("rtada")
    _plant(ada / ".streamlab" / "kafka.properties", workshop.elsewhere / "secret")
    kafka.write_options(ada / ".streamlab" / "kafka.properties", "127.0.0.1:1", "rtada", "pw", workshop.ids["rtada"][0])
    assert _snapshot(workshop.elsewhere) == workshop.before


@root_only
def test_g3b_a_link_to_another_learners_credentials_leaves_them_his(workshop):
    bob = workshop.settings.home("rtbob") / ".streamlab" / "kafka.properties"
    _plant(workshop.settings.home("rtada") / ".streamlab" / "kafka.properties", bob)
    _spawner("rtada")._prepare()
    assert 'username="rtbob"' in bob.read_text() and bob.stat().st_uid == workshop.ids["rtbob"][0]


@root_only
def test_g3c_a_linked_state_folder_stops_the_server_with_a_reason_and_writes_nothing(workshop):
    _plant(workshop.settings.home("rtada") / ".streamlab", workshop.elsewhere / "etc")
    with pytest.raises(Exception, match=r"~/\.streamlab is a symlink.*remove that path"):
        _spawner("rtada")._prepare()
    assert _snapshot(workshop.elsewhere) == workshop.before


@root_only
def test_g3d_the_home_chown_leaves_a_hard_linked_file_alone(workshop):
    # with fs.protected_hardlinks=0 a learner can hard-link a root-owned file into her home
    os.link(workshop.elsewhere / "secret", workshop.settings.home("rtada") / "loot")
    _spawner("rtada")._prepare()
    assert _snapshot(workshop.elsewhere) == workshop.before, "the spawner gave a root-owned file to the learner"


@root_only
def test_a_new_learners_home_is_made_and_given_to_her(workshop):
    subprocess.run(["userdel", SYSTEM_PREFIX + "rtada"], check=True, capture_output=True, timeout=30)
    shutil.rmtree(workshop.settings.home("rtada"))
    try:
        env = _spawner("rtada")._prepare()
        home, ids = Path(env["HOME"]), hub.WorkshopSpawner(user=SimpleNamespace(name="rtada"))._ids()
        assert stat.S_IMODE(home.stat().st_mode) == 0o700
        for path in (home, home / "notebooks" / AID / f"{AID}.ipynb", home / ".streamlab" / "variants.json",
                     home / ".tmp", Path(env["STREAMLAB_KAFKA_OPTIONS"])):
            assert (path.stat().st_uid, path.stat().st_gid) == ids, path
        assert (home / ".streamlab" / "jars").is_symlink()
        assert "BEGIN SOLUTION" not in (home / "notebooks" / AID / f"{AID}.ipynb").read_text()
    finally:
        subprocess.run(["userdel", SYSTEM_PREFIX + "rtada"], capture_output=True, timeout=30)


# --- the instructor is made at start; the hub's state is root's only -----------------------------------------------

def test_the_instructor_is_made_at_start_and_no_sign_up_claims_an_admin_name(tmp_path, monkeypatch):
    import asyncio

    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker
    from traitlets.config import Config

    monkeypatch.setattr(hub, "proxy_command", lambda: "/bin/true")
    settings = Settings(root=str(tmp_path), instructor="teacher")
    hub.write_config(settings)
    c = Config()
    hub.configure(c, str(tmp_path))
    c.Authenticator.admin_users = {"teacher", "assistant"}
    db = sessionmaker(bind=create_engine(f"sqlite:///{tmp_path / 'hub' / 'jupyterhub.sqlite'}"))()
    auth = c.JupyterHub.authenticator_class(config=c, _deprecated_db_session=db)
    password = (tmp_path / "hub" / "instructor.password")
    assert stat.S_IMODE(password.stat().st_mode) == 0o600
    assert asyncio.run(auth.authenticate(None, {"username": "teacher", "password": password.read_text()})) \
        == "teacher"
    assert auth.create_user("teacher", "claimed-first-1") is None, "the instructor's name was claimed by a sign-up"
    assert not auth.create_user("assistant", "claimed-first-1").is_authorized, "an admin name approved itself"
    again = c.JupyterHub.authenticator_class(config=c, _deprecated_db_session=db)  # a restart keeps the account
    assert asyncio.run(again.authenticate(None, {"username": "teacher", "password": password.read_text()}))


def test_the_hubs_state_is_root_only_and_the_servers_config_readable(tmp_path):
    from workshop.__main__ import _owner_only

    settings = Settings(root=str(tmp_path / "workshop"))
    config = hub.write_config(settings)
    state = Path(settings.root) / "hub"
    (state / "jupyterhub.sqlite").write_text("db")
    os.chmod(state / "jupyterhub.sqlite", 0o644)
    _owner_only(state)
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in state.iterdir()} == {0o600}, config
    server = hub.server_config(settings)
    assert state not in server.parents, "the servers' config must not sit in the hub's private folder"
    for path in [server, *server.rglob("*")]:
        assert stat.S_IMODE(path.stat().st_mode) & 0o005 == (0o005 if path.is_dir() else 0o004), path
