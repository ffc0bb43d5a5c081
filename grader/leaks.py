"""Find solution text, hidden tests and quiz keys that leaked into released files."""
from __future__ import annotations

import json
import re
from pathlib import Path

from .course import SOURCE, assignments

MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
_REGIONS = (("BEGIN SOLUTION", "END SOLUTION"), ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS"))
_TRIVIAL = re.compile(r"^[\W_]*(pass|return|else|try|finally|break|continue|\.\.\.)?[\W_]*$")


def _split(source: str) -> tuple[list[str], list[str]]:
    """(lines inside solution / hidden-test regions, lines outside them) of one cell."""
    inside, outside, depth = [], [], 0
    for line in source.splitlines():
        if any(begin in line for begin, _ in _REGIONS):
            depth += 1
            continue
        if any(end in line for _, end in _REGIONS):
            depth = max(0, depth - 1)
            continue
        (inside if depth else outside).append(line.strip())
    return inside, outside


def secrets(source: Path = SOURCE) -> list[tuple[str, str]]:
    """(assignment, line) pairs that must never be released: solution and hidden-test lines, quiz keys."""
    public: set[str] = set()
    public_text: list[str] = []
    found: list[tuple[str, str]] = []
    for aid in assignments(source):
        nb = json.loads((source / aid / f"{aid}.ipynb").read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            inside, outside = _split(text)
            public.update(outside)
            public_text.extend(outside)
            found += [(aid, line) for line in inside]
            for literal in re.findall(r"\"([^\"\n]{25,})\"|'([^'\n]{25,})'", "\n".join(inside)):
                found.append((aid, literal[0] or literal[1]))  # e.g. a quiz explanation, searched as a substring
            for key in re.findall(r"reveal\(\s*\w+\s*,\s*(['\"][^'\"]+['\"])", "\n".join(inside)):
                found.append((aid, key))  # a quiz key as it would be written in an answer cell
    everything_public = "\n".join(public_text)
    return [(aid, line) for aid, line in dict.fromkeys(found)
            if line not in public and line not in everything_public and not _TRIVIAL.match(line) and len(line) >= 3]


def _searchable(path: Path) -> str:
    raw = path.read_bytes().decode("utf-8", errors="ignore")
    if path.suffix == ".ipynb":
        try:
            nb = json.loads(raw)
            parts = []
            for cell in nb.get("cells", []):
                src = cell.get("source", "")
                parts.append("".join(src) if isinstance(src, list) else src)
                for out in cell.get("outputs", []):
                    parts.append(json.dumps(out, ensure_ascii=False))
            raw += "\n" + "\n".join(parts)
        except (ValueError, AttributeError):
            pass
    return raw


def find_leaks(folder: Path, source: Path = SOURCE) -> list[str]:
    """One line per leak found in any file under `folder`: a marker or a secret line."""
    problems = []
    keys = secrets(source)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        text = _searchable(path)
        lines = {ln.strip() for ln in text.splitlines()}
        rel = path.relative_to(folder)
        for marker in MARKERS:
            if marker in text:
                problems.append(f"{rel}: contains the marker '{marker}'")
        for aid, secret in keys:
            quoted = secret[0] in "'\"" and secret[-1] == secret[0] and len(secret) <= 40
            if quoted:
                hit = re.search(r"=\s*" + re.escape(secret) + r"\s*$", text, re.M)
            else:
                hit = secret in lines or (len(secret) >= 25 and secret in text)
            if hit:
                problems.append(f"{rel}: contains {'a quiz key' if quoted else 'secret text'} of {aid}: {secret[:80]}")
    return problems
