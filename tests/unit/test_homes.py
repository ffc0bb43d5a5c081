"""workshop.homes, the way root acts inside a learner's home: a link planted at any component of a path is
refused (or, for the file written, replaced), never followed; a file read for collect is the learner's own regular
file. Runs as any user; the ownership checks need root and skip without it (CI runs as root)."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from workshop import homes

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another uid needs root (CI is root)")


@pytest.fixture
def home(tmp_path) -> Path:
    folder = tmp_path / "home" / "ada"
    homes.make_home(folder)
    return folder


@pytest.fixture
def elsewhere(tmp_path) -> Path:
    """A folder outside the home, with a file in it: what a planted link points at."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "victim").write_text("not the learner's")
    return folder


def _unchanged(folder: Path) -> dict:
    return {p.name: (p.read_text() if p.is_file() else "dir") for p in folder.iterdir()}


def test_a_home_is_made_0700_and_a_linked_home_is_refused(tmp_path, elsewhere):
    home = tmp_path / "h" / "ada"
    homes.make_home(home)
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    (tmp_path / "h" / "bob").symlink_to(elsewhere)
    with pytest.raises(homes.Refused, match="not a folder"):
        homes.make_home(tmp_path / "h" / "bob")
    assert stat.S_IMODE(elsewhere.stat().st_mode) != 0o700


def test_writing_through_a_linked_folder_is_refused_and_writes_nothing_there(home, elsewhere):
    before = _unchanged(elsewhere)
    (home / "feedback").symlink_to(elsewhere)
    with pytest.raises(homes.Refused, match=r"~/feedback is a symlink"):
        homes.write_file(home, "feedback/00-setup/grade.txt", b"3 / 3\n")
    with pytest.raises(homes.Refused, match=r"~/feedback is a symlink"):
        homes.make_dirs(home, "feedback/00-setup")
    assert _unchanged(elsewhere) == before


def test_a_link_deeper_down_is_refused_too(home, elsewhere):
    (home / "a").mkdir()
    (home / "a" / "b").symlink_to(elsewhere)
    with pytest.raises(homes.Refused, match=r"~/a/b is a symlink"):
        homes.write_file(home, "a/b/c/x", b"x")
    assert not (elsewhere / "c").exists()


def test_a_linked_file_is_replaced_not_written_through(home, elsewhere):
    (home / ".streamlab").mkdir()
    (home / ".streamlab" / "kafka.properties").symlink_to(elsewhere / "victim")
    homes.write_file(home, ".streamlab/kafka.properties", b"mine\n", mode=0o600)
    target = home / ".streamlab" / "kafka.properties"
    assert not target.is_symlink() and target.read_text() == "mine\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert (elsewhere / "victim").read_text() == "not the learner's"
    assert [p.name for p in (home / ".streamlab").iterdir()] == ["kafka.properties"], "a temp file was left"


def test_a_folder_where_a_file_goes_is_refused(home):
    (home / "grade.txt").mkdir()
    with pytest.raises(homes.Refused, match="cannot be replaced"):
        homes.write_file(home, "grade.txt", b"x")
    assert list(home.iterdir()) == [home / "grade.txt"]


def test_paths_leaving_the_home_are_no_paths_in_it(home):
    for bad in ("../bob/x", "/etc/passwd", "a/../../x", ""):
        with pytest.raises(ValueError):
            homes.write_file(home, bad, b"x")


def test_exists_sees_a_link_and_refuses_one_on_the_way(home, elsewhere):
    (home / "notebooks").symlink_to(elsewhere)
    assert homes.exists(home, "notebooks") and not homes.exists(home, "nothing")
    with pytest.raises(homes.Refused):
        homes.exists(home, "notebooks/victim")


def test_copy_tree_and_symlink_make_what_the_spawner_needs(home, tmp_path):
    source = tmp_path / "course"
    (source / "00-setup").mkdir(parents=True)
    (source / "00-setup" / "00-setup.ipynb").write_text("{}")
    homes.copy_tree(source, home, "notebooks")
    assert (home / "notebooks" / "00-setup" / "00-setup.ipynb").read_text() == "{}"
    homes.symlink(home, ".streamlab/jars", tmp_path / "jars")
    homes.symlink(home, ".streamlab/jars", tmp_path / "other")  # something is there: left alone
    assert os.readlink(home / ".streamlab" / "jars") == str(tmp_path / "jars")


def test_read_file_gives_the_learners_own_file_only(home, elsewhere):
    (home / "notebooks" / "00-setup").mkdir(parents=True)
    own = home / "notebooks" / "00-setup" / "00-setup.ipynb"
    own.write_text("{ada's}")
    assert homes.read_file(home, "notebooks/00-setup/00-setup.ipynb", os.geteuid()) == b"{ada's}"
    with pytest.raises(FileNotFoundError):
        homes.read_file(home, "notebooks/01/01.ipynb")
    (home / "notebooks" / "01").symlink_to(elsewhere)  # a linked folder on the way
    with pytest.raises(homes.Refused, match="~/notebooks/01 is a symlink"):
        homes.read_file(home, "notebooks/01/victim")
    (home / "notebooks" / "00-setup" / "link.ipynb").symlink_to(elsewhere / "victim")
    with pytest.raises(homes.Refused, match="is a symlink"):
        homes.read_file(home, "notebooks/00-setup/link.ipynb")
    os.link(elsewhere / "victim", home / "notebooks" / "00-setup" / "hard.ipynb")
    with pytest.raises(homes.Refused, match="2 hard links"):
        homes.read_file(home, "notebooks/00-setup/hard.ipynb")
    os.mkfifo(home / "notebooks" / "00-setup" / "fifo.ipynb")  # must not block
    with pytest.raises(homes.Refused, match="not a regular file"):
        homes.read_file(home, "notebooks/00-setup/fifo.ipynb")
    with pytest.raises(homes.Refused, match="over the 4"):
        homes.read_file(home, "notebooks/00-setup/00-setup.ipynb", limit=4)
    with pytest.raises(homes.Refused, match="not to the learner"):
        homes.read_file(home, "notebooks/00-setup/00-setup.ipynb", os.geteuid() + 1)


@needs_root
def test_files_and_folders_are_given_to_the_learner_by_fd(home):
    homes.write_file(home, "feedback/00-setup/grade.txt", b"3 / 3\n", (65534, 65534))
    for path in (home / "feedback", home / "feedback" / "00-setup", home / "feedback" / "00-setup" / "grade.txt"):
        assert (path.stat().st_uid, path.stat().st_gid) == (65534, 65534), path


@needs_root
def test_chown_tree_follows_no_link_and_leaves_hard_links_alone(home, elsewhere):
    (home / "notebooks").mkdir()
    (home / "notebooks" / "mine.ipynb").write_text("{}")
    (home / "feedback").symlink_to(elsewhere)
    os.link(elsewhere / "victim", home / "notebooks" / "hard")
    homes.chown_tree(home, (65534, 65534))
    assert home.stat().st_uid == 65534 and (home / "notebooks" / "mine.ipynb").stat().st_uid == 65534
    assert (home / "feedback").lstat().st_uid == 65534  # the link itself, harmless
    assert elsewhere.stat().st_uid == os.geteuid() and (elsewhere / "victim").stat().st_uid == os.geteuid()


def test_a_returning_learner_gets_what_the_course_gained_and_keeps_her_own_work(home, monkeypatch, tmp_path):
    """A cohort that started before a module (or the home page) was added: the spawner copies what is missing into
    ~/notebooks, leaves her edited notebooks as they are, and adds the new assignment's seed to her variants."""
    import json

    from streamlab.course.variants import student_seed
    from workshop import hub

    course = tmp_path / "course"
    for aid in ("00-setup", "10-new"):
        (course / aid).mkdir(parents=True)
        (course / aid / f"{aid}.ipynb").write_text(f"{{{aid}}}")
    (course / "START-HERE.ipynb").write_text("{home}")
    monkeypatch.setattr(hub, "REPO", tmp_path)
    (tmp_path / "notebooks").symlink_to(course)
    homes.copy_tree(course / "00-setup", home, "notebooks/00-setup")
    (home / "notebooks" / "00-setup" / "00-setup.ipynb").write_text("{ada's answers}")
    hub._give_notebooks(home, None)
    assert (home / "notebooks" / "00-setup" / "00-setup.ipynb").read_text() == "{ada's answers}"
    assert (home / "notebooks" / "10-new" / "10-new.ipynb").read_text() == "{10-new}"
    assert (home / "notebooks" / "START-HERE.ipynb").read_text() == "{home}"

    monkeypatch.setattr("grader.course.assignments", lambda source=None: ["00-setup", "10-new"])
    homes.write_file(home, ".streamlab/variants.json", json.dumps({"00-setup": 1234}).encode())
    hub._give_seeds(home, "ada", None)
    seeds = json.loads((home / ".streamlab" / "variants.json").read_text())
    assert seeds == {"00-setup": 1234, "10-new": student_seed("ada", "10-new")}
