"""Class-data sharing (streamlab/lab/cds.py, cds_dump.py): which archive a JVM looks for, when one is used, how
setup makes one.

A stale archive must never be looked up for a changed jar or JDK, a broken one never handed to a JVM, and a failed dump
must be one line of setup's output, never an error."""
from __future__ import annotations

import os
import stat
import struct
import subprocess
from pathlib import Path

import pytest

from streamlab.lab import cds, cds_dump


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """A state folder, a fake JDK (bin/java, release, lib/modules) and a jars folder of two jars."""
    monkeypatch.setenv("STREAMLAB_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("STREAMLAB_CDS", raising=False)
    jdk = tmp_path / "jdk"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "lib").mkdir()
    (jdk / "bin" / "java").write_text("#!/bin/sh\n")
    (jdk / "release").write_text('IMPLEMENTOR="x"\nJAVA_VERSION="17.0.15"\n')
    (jdk / "lib" / "modules").write_bytes(b"m" * 10)
    jars = tmp_path / "state" / "jars" / "spark-kafka-4.2.0"
    jars.mkdir(parents=True)
    for name in ("a-1.0.jar", "b-2.0.jar"):
        (jars / name).write_bytes(b"jar")
    return {"java": str(jdk / "bin" / "java"), "jdk": jdk, "jars": jars,
            "classpath": [str(jars / "a-1.0.jar"), str(jars / "b-2.0.jar")], "tmp": tmp_path}


def _archive(path: Path, size: int = cds.MIN_SIZE, magic: int = cds.MAGIC) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<I", magic))
        fh.truncate(size)
    return path


def test_same_java_and_class_path_give_the_same_archive(lab):
    first = cds.archive_path("driver", lab["java"], lab["classpath"])
    assert first == cds.archive_path("driver", lab["java"], list(lab["classpath"]))
    assert first.parent == cds.folder() and first.name.startswith("driver-java17.0.15-")
    assert cds.folder() == Path(os.environ["STREAMLAB_HOME"]) / "jars" / "cds"  # where hub and walls reach


def test_a_changed_jar_or_jdk_looks_for_another_archive(lab):
    before = cds.key(lab["java"], lab["classpath"])
    jar = lab["jars"] / "a-1.0.jar"
    jar.write_bytes(b"a rebuilt jar")  # another size
    assert cds.key(lab["java"], lab["classpath"]) != before
    after_jar = cds.key(lab["java"], lab["classpath"])
    os.utime(jar, ns=(1_000_000_000, 1_000_000_000))  # same size, another time
    assert cds.key(lab["java"], lab["classpath"]) != after_jar
    after_time = cds.key(lab["java"], lab["classpath"])
    (lab["jdk"] / "release").write_text('JAVA_VERSION="17.0.16"\n')  # a JDK update
    assert cds.key(lab["java"], lab["classpath"]) != after_time
    assert "java17.0.16-" in cds.archive_path("driver", lab["java"], lab["classpath"]).name
    updated = cds.key(lab["java"], lab["classpath"])
    (lab["jdk"] / "lib" / "modules").write_bytes(b"another module image")
    assert cds.key(lab["java"], lab["classpath"]) != updated


def test_a_jar_added_to_a_wildcard_folder_changes_the_key(lab):
    wildcard = [str(lab["jars"] / "*")]
    before = cds.key(lab["java"], wildcard)
    (lab["jars"] / "c-3.0.jar").write_bytes(b"jar")
    assert cds.key(lab["java"], wildcard) != before
    (lab["jars"] / "notes.txt").write_text("not a jar")  # Java's wildcard takes jars only
    with_c = cds.key(lab["java"], wildcard)
    assert cds.key(lab["java"], wildcard) == with_c


def test_a_learner_reaching_the_jars_through_a_link_finds_the_same_archive(lab):
    """A hub's learner: $STREAMLAB_HOME/jars is a link to the course's .streamlab/jars."""
    direct = cds.key(lab["java"], lab["classpath"])
    home = lab["tmp"] / "learner"
    home.mkdir()
    (home / "jars").symlink_to(lab["jars"].parent)
    linked = [str(home / "jars" / "spark-kafka-4.2.0" / n) for n in ("a-1.0.jar", "b-2.0.jar")]
    assert cds.key(lab["java"], linked) == direct


def test_only_a_valid_archive_is_handed_to_a_jvm_and_never_with_xshare_on(lab, monkeypatch):
    path = cds.folder() / "driver-x.jsa"
    assert cds.use_options(path) == []  # none there
    _archive(path, magic=0xF00BABA2)  # the JDK's static archive, not a dynamic one
    assert cds.use_options(path) == []
    _archive(path, size=4096)  # cut short
    assert cds.use_options(path) == []
    _archive(path)
    assert cds.use_options(path) == [f"-XX:SharedArchiveFile={path}", "-Xshare:auto"]
    monkeypatch.setenv("STREAMLAB_CDS", "off")
    assert cds.use_options(path) == []


def test_the_driver_gets_the_options_of_its_own_class_path_only(lab, monkeypatch):
    monkeypatch.setattr(cds, "java_binary", lambda: lab["java"])
    conf = {"spark.driver.extraClassPath": os.pathsep.join(lab["classpath"])}
    assert cds.driver_options(conf) == ""  # no archive made yet
    target = _archive(cds.archive_path("driver", lab["java"], cds.driver_classpath(conf)))
    assert cds.driver_options(conf) == f" -XX:SharedArchiveFile={target} -Xshare:auto"
    # The offline engine's session: no connector jars on its class path, so not this archive.
    assert cds.driver_options({}) == ""
    assert cds.driver_classpath(conf)[:2] == lab["classpath"]  # extraClassPath first, as Spark's launcher puts it


def test_a_session_starts_without_an_archive_when_java_cannot_be_found(lab, monkeypatch):
    from streamlab.errors import LabError

    def no_java():
        raise LabError("Java was not found")

    monkeypatch.setattr(cds, "java_binary", no_java)
    assert cds.driver_options({"spark.driver.extraClassPath": lab["classpath"][0]}) == ""


def test_publishing_a_dump_is_all_or_nothing_and_removes_older_archives(lab):
    target = cds.folder() / "driver-java17.0.15-new.jsa"
    old, broker = _archive(cds.folder() / "driver-java17.0.15-old.jsa"), _archive(cds.folder() / "broker-x.jsa")
    broken = cds.temporary_path(target)
    broken.write_bytes(b"half an archive")  # a JVM killed while writing it
    assert not cds.publish("driver", broken, target)
    assert not broken.exists() and not target.exists() and old.exists()
    done = _archive(cds.temporary_path(target))
    assert cds.publish("driver", done, target)
    assert cds.valid(target) and not done.exists()
    assert not old.exists() and broker.exists()  # the driver's stale archive went, the broker's is another kind
    mode = stat.S_IMODE(target.stat().st_mode)
    assert mode & 0o444 == 0o444 and not mode & 0o222  # readable by a hub's learners, written by no one
    assert stat.S_IMODE(cds.folder().stat().st_mode) == 0o755


def test_setup_says_in_one_line_when_it_cannot_make_the_archive(lab, monkeypatch):
    monkeypatch.setattr(cds_dump, "driver_archive", lambda: None)

    def failing(*args, **kwargs):
        return subprocess.CompletedProcess(args, 1, "", "Traceback ...\nLabError: the broker did not answer\n")

    monkeypatch.setattr(cds_dump.subprocess, "run", failing)
    line = cds_dump.make_driver_archive()
    assert "\n" not in line and "the broker did not answer" in line and "start without it" in line

    def slow(*args, **kwargs):
        raise subprocess.TimeoutExpired(args, 1)

    monkeypatch.setattr(cds_dump.subprocess, "run", slow)
    assert "took too long" in cds_dump.make_driver_archive()
    monkeypatch.setenv("STREAMLAB_CDS", "off")
    assert cds_dump.make_driver_archive() == "class-data sharing: off (STREAMLAB_CDS=off)"


def test_setup_does_not_make_an_archive_that_is_there(lab, monkeypatch):
    there = _archive(cds.folder() / "driver-java17.0.15-k.jsa")
    monkeypatch.setattr(cds_dump, "driver_archive", lambda: there)
    monkeypatch.setattr(cds_dump.subprocess, "run", lambda *a, **k: pytest.fail("a cached archive was made again"))
    assert cds_dump.make_driver_archive() == f"class-data sharing: Spark's driver archive cached ({there.name})"


def test_a_dump_left_by_an_ended_process_is_removed_and_a_running_one_kept(lab):
    ended = subprocess.Popen(["true"])
    ended.wait()
    target = cds.folder() / "driver-java17.0.15-k.jsa"
    running = cds.temporary_path(target)  # this process's own: a dump under way
    running.write_bytes(b"being written")
    left = running.with_name(f".{target.stem}-{ended.pid}.tmp")
    left.write_bytes(b"a killed dump")
    cds.remove_orphans("driver")
    assert running.exists() and not left.exists()


def test_the_brokers_map_their_archive_only_when_it_matches_their_jars(lab, monkeypatch):
    from streamlab.lab import jars

    broker_jars = lab["tmp"] / "state" / "jars" / "kafka-4.2.0"
    broker_jars.mkdir()
    (broker_jars / "kafka_2.13-4.2.0.jar").write_bytes(b"jar")
    (broker_jars / "manifest.json").write_text('{"jars": ["kafka_2.13-4.2.0.jar"]}')
    monkeypatch.setattr(cds, "java_binary", lambda: lab["java"])
    assert jars.broker_bundle().ready()
    assert cds.broker_options() == []  # none made yet
    target = _archive(cds.broker_archive_path())
    assert target.name.startswith("broker-java17.0.15-")
    assert cds.broker_options() == [f"-XX:SharedArchiveFile={target}", "-Xshare:auto"]
    (broker_jars / "kafka_2.13-4.2.0.jar").write_bytes(b"another kafka")  # a new Kafka: another archive
    assert cds.broker_archive_path() != target and cds.broker_options() == []
    (broker_jars / "manifest.json").unlink()  # jars not set up: the broker's own start says so, not this
    assert cds.broker_options() == []


def test_setup_says_in_one_line_when_the_brokers_archive_cannot_be_made(lab, monkeypatch):
    from streamlab.errors import LabError
    from streamlab.lab import broker

    monkeypatch.setattr("streamlab.lab.jars.Bundle.ready", lambda self: True)
    monkeypatch.setattr(cds, "broker_archive_path", lambda: cds.folder() / "broker-java17.0.15-k.jsa")

    def fails(port, folder, cds_options=None):
        assert cds_options and cds_options[0].startswith("-XX:ArchiveClassesAtExit=")
        raise LabError("The Apache Kafka broker exited at start: no space left")

    monkeypatch.setattr(broker, "start_kafka", fails)
    line = cds_dump.make_broker_archive()
    assert "\n" not in line and "no space left" in line and "start without it" in line
    assert not list(cds.folder().glob("*.tmp")) and not list(cds.folder().glob("*.jsa"))
