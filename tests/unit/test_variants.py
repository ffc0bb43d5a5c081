"""Per-learner variants: the same seed and key always give the same number; other seeds give other numbers."""
from __future__ import annotations

import pytest

from streamlab.course import variants


def test_same_seed_same_numbers_in_any_order():
    a, b = variants.Variant("00-setup", 42), variants.Variant("00-setup", 42)
    first = [a.randint("x", 1, 1000), a.choice("y", "abcdef")]
    assert [b.choice("y", "abcdef"), b.randint("x", 1, 1000)][::-1] == first


def test_two_learners_get_different_numbers():
    draws = {variants.Variant("00-setup", variants.student_seed(s, "00-setup")).randint("n", 0, 10**6)
             for s in ("alice", "bob", "carol", "dave")}
    assert len(draws) == 4
    assert variants.student_seed("alice", "00-setup") == variants.student_seed("alice", "00-setup")
    assert variants.student_seed("alice", "00-setup") != variants.student_seed("alice", "01-source-internals")


def test_randint_respects_bounds_and_step():
    v = variants.Variant("m", 7)
    values = {variants.Variant("m", s).randint("k", 1000, 9000, step=500) for s in range(200)}
    assert values <= set(range(1000, 9001, 500)) and len(values) > 5
    assert v.sample("s", range(10), 3) == variants.Variant("m", 7).sample("s", range(10), 3)


def test_seed_from_environment_then_store(tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMLAB_HOME", str(tmp_path))
    monkeypatch.delenv(variants.SEED_ENV, raising=False)
    stored = variants.seed_for("00-setup")
    assert variants.seed_for("00-setup") == stored, "a learner keeps their numbers between sessions"
    monkeypatch.setenv(variants.SEED_ENV, "123")
    assert variants.variant("00-setup").seed == 123
    monkeypatch.setenv(variants.SEED_ENV, "abc")
    with pytest.raises(ValueError, match="not a whole number"):
        variants.seed_for("00-setup")
    monkeypatch.delenv(variants.SEED_ENV)
    new = variants.new_variant("00-setup")
    assert new != stored and variants.seed_for("00-setup") == new


def test_processes_making_the_seed_at_once_all_get_the_same_one(tmp_path):
    """Two graders (or a kernel and a grader) making an assignment's seed at once must agree, and neither fail."""
    import subprocess
    import sys

    go = tmp_path / "go"
    code = ("import os, time\nfrom streamlab.course import variants\n"  # all imported, then all at once
            f"while not os.path.exists({str(go)!r}): time.sleep(0.001)\nprint(variants.stored_seed('race'))")
    env = {**__import__("os").environ, "STREAMLAB_HOME": str(tmp_path)}
    env.pop(variants.SEED_ENV, None)
    runs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for _ in range(8)]
    __import__("time").sleep(3)
    go.touch()
    outs = [run.communicate(timeout=60) for run in runs]
    assert all(run.returncode == 0 for run in runs), [err for _, err in outs]
    assert len({out.strip() for out, _ in outs}) == 1, outs
    assert not list(tmp_path.glob("*.tmp"))
