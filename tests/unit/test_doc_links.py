"""Every relative link in the README and the docs/ pages (and docker/README.md) reaches a file of the repository: the
README's first screen sends a learner to these pages, and the operations now live behind its links (issue 32)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "docker" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def _relative_links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))  # code blocks hold no links
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:|#", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = [t for t in _relative_links(page) if not (page.parent / t.split("#", 1)[0]).exists()]
    assert not broken, f"{page.relative_to(ROOT)} links to files that do not exist: {broken}"


def test_the_readme_links_every_docs_page():
    linked = {(ROOT / t.split("#", 1)[0]).resolve() for t in _relative_links(ROOT / "README.md")}
    orphans = [p.name for p in (ROOT / "docs").glob("*.md") if p.resolve() not in linked]
    assert not orphans, f"the README links no way to these docs/ pages: {orphans}"


def test_the_link_check_finds_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("[there](there.md) and [out](https://example.org) and [here](#top)\n", encoding="utf-8")
    assert _relative_links(page) == ["there.md"] and not (page.parent / "there.md").exists()
