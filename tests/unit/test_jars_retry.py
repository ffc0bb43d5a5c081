"""Resolving the lab's jars survives a download that fails once (seen on a first `make setup` here), and still says
why in one line when every try fails."""
from __future__ import annotations

import pytest

from streamlab.errors import LabError
from streamlab.lab import jars

# Stands in for `java -jar ivy.jar ...`: fails until its FAILS-th run, then retrieves one jar where Ivy would.
FAKE_IVY = r"""#!/bin/sh
n=$(($(cat "{count}") + 1)); echo $n > "{count}"
if [ $n -le {fails} ]; then echo ':: org.example#demo;1.0: download failed'; exit 1; fi
for a in "$@"; do case "$a" in *'[artifact]'*) d=$(dirname "$a");; esac; done
mkdir -p "$d" && touch "$d/demo-1.0.jar"
"""


def _fake(tmp_path, monkeypatch, fails: int):
    count, java = tmp_path / "count", tmp_path / "java"
    count.write_text("0")
    java.write_text(FAKE_IVY.format(count=count, fails=fails))
    java.chmod(0o755)
    monkeypatch.setattr(jars, "java_binary", lambda: str(java))
    monkeypatch.setattr(jars, "ivy_jar", lambda: tmp_path / "ivy.jar")
    monkeypatch.setattr(jars, "state_dir", lambda: tmp_path / "state")
    return count


def test_a_download_that_fails_once_is_tried_again(tmp_path, monkeypatch):
    count = _fake(tmp_path, monkeypatch, fails=jars.RESOLVE_TRIES - 1)
    got = jars.resolve(jars.Bundle("demo", "1.0", [("org.example", "demo", "1.0")]))
    assert [p.name for p in got] == ["demo-1.0.jar"] and int(count.read_text()) == jars.RESOLVE_TRIES


def test_a_resolve_that_keeps_failing_says_why_in_one_line(tmp_path, monkeypatch):
    count = _fake(tmp_path, monkeypatch, fails=99)
    with pytest.raises(LabError, match=r"Could not fetch the demo 1.0 jars .*download failed.*make setup") as err:
        jars.resolve(jars.Bundle("demo", "1.0", [("org.example", "demo", "1.0")]))
    assert "\n" not in str(err.value) and int(count.read_text()) == jars.RESOLVE_TRIES
