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
