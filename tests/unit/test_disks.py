"""A workshop's home size limit, as an instructor writes it in workshop.json or on the command line."""
from __future__ import annotations

import pytest

from workshop import disks


@pytest.mark.parametrize("text, size", [("4G", 4 << 30), ("512M", 512 << 20), ("1.5g", 3 << 29),
                                        ("64MB", 64 << 20), (str(32 << 20), 32 << 20)])
def test_a_limit_is_read_as_people_write_it(text, size):
    assert disks.size_of(text) == size


@pytest.mark.parametrize("text", ["", "four", "4X", "1M", "-2G"])
def test_a_limit_that_cannot_hold_a_home_is_refused_with_the_fix(text):
    with pytest.raises(ValueError, match=r"home_limit .*at least 16M, like 4G"):
        disks.size_of(text)


def test_a_workshop_without_root_keeps_plain_homes_and_says_why(monkeypatch, tmp_path):
    disks.available.cache_clear()
    monkeypatch.setattr(disks.os, "geteuid", lambda: 1000)
    try:
        why = disks.attach(tmp_path, "ada", tmp_path / "home" / "ada")
        assert why == "ada's home has no size limit: the hub does not run as root"
        assert not disks.image(tmp_path, "ada").exists()
    finally:
        disks.available.cache_clear()
