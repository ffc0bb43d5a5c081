"""The course layout (solutions/ = nbgrader source, notebooks/ = release) and `python -m grader release`."""
from __future__ import annotations

import filecmp
import json
import logging
import re
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "solutions"
RELEASE = ROOT / "notebooks"
CONFIG_FILE = ROOT / "nbgrader_config.py"
ASSIGNMENT_ID = re.compile(r"^\d\d-[a-z0-9-]+$")


def fast_imports() -> None:
    """Skip jsonschema's IRI grammar (seconds to build at import; nbformat's schema never uses it) in this process."""
    if "jsonschema" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)


def _prepare_nbgrader() -> None:
    """nbgrader shells out to `alembic heads` for each new gradebook (seconds): ask alembic in-process, once."""
    from streamlab.settings import settings

    bindir = str(Path(sys.executable).parent)
    if bindir not in settings.path.split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + settings.path
    import functools
    import warnings

    import nbgrader.api

    warnings.filterwarnings("ignore", module="nbgrader")
    warnings.filterwarnings("ignore", message=".*not in session.*")
    if hasattr(nbgrader.api.get_alembic_version, "cache_info"):
        return
    original = nbgrader.api.get_alembic_version

    @functools.lru_cache(maxsize=1)
    def head() -> str:
        """The newest gradebook schema revision nbgrader ships."""
        try:
            from alembic.config import Config as AlembicConfig
            from alembic.script import ScriptDirectory

            cfg = AlembicConfig()
            cfg.set_main_option("script_location", str(Path(nbgrader.api.__file__).parent / "alembic"))
            return ScriptDirectory.from_config(cfg).get_current_head()
        except Exception:
            return original()

    nbgrader.api.get_alembic_version = head


class GraderError(Exception):
    """A problem that stops one notebook (or one command) from being graded; its message is one line."""


class CouldNotGrade(GraderError):
    """The machine, not the learner, is at fault (no Java, the broker down or lost mid-check): never a score."""

    def __str__(self) -> str:
        return f"could not grade: {super().__str__()}"


def assignments(source: Path = SOURCE) -> list[str]:
    """The assignment ids present in `source`: folders <id>/ holding <id>.ipynb, sorted."""
    if not source.is_dir():
        return []
    return sorted(p.name for p in source.iterdir() if (p / f"{p.name}.ipynb").is_file())


def nbgrader_config(root: Path, source: Path = SOURCE, release: Path | None = None, timeout: int | None = None):
    """The course's nbgrader Config (from nbgrader_config.py), pointed at a course folder `root`."""
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    cfg = PyFileConfigLoader(CONFIG_FILE.name, path=str(CONFIG_FILE.parent)).load_config()
    extra = Config()
    extra.CourseDirectory.root = str(root)
    extra.CourseDirectory.source_directory = str(source)
    extra.CourseDirectory.release_directory = str(release or (root / "release"))
    extra.CourseDirectory.db_url = f"sqlite:///{root / 'gradebook.db'}"
    extra.CourseDirectory.course_id = ""
    extra.Exchange.root = str(root / "exchange")  # unused, but nbgrader's API wants a writable one
    if timeout is not None:
        extra.Execute.timeout = int(timeout)
    cfg.merge(extra)
    return cfg


def nbgrader_api(root: Path, **kwargs):
    """An NbGraderAPI on the course folder `root` (see nbgrader_config for the keyword arguments)."""
    _prepare_nbgrader()
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    cfg = nbgrader_config(root, **kwargs)
    (root / "exchange").mkdir(parents=True, exist_ok=True)
    coursedir = CourseDirectory(config=cfg)
    api = NbGraderAPI(coursedir=coursedir, config=cfg)
    api.log.setLevel(logging.WARNING)
    return api


@contextmanager
def temp_course(prefix: str = "grader-"):
    """A throw-away nbgrader course folder (its own gradebook), removed afterwards.

    All of them live in one private folder, which every grading sandbox hides: a kernel graded at the same time
    as another submission cannot read that submission's gradebook.
    """
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=private_tmp()))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def private_tmp() -> Path:
    """The grader's own temporary folder (mode 700), hidden from learner kernels."""
    folder = Path(tempfile.gettempdir()) / "streamlab-grader"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def generate(assignment_id: str, root: Path, source: Path = SOURCE, release: Path | None = None,
             timeout: int | None = None):
    """Run nbgrader generate_assignment for one assignment into `release` with a gradebook in `root`."""
    api = nbgrader_api(root, source=source, release=release, timeout=timeout)
    result = api.generate_assignment(assignment_id, force=True, create=True)
    if not result.get("success"):
        last = (result.get("error") or result.get("log") or "unknown error").strip().splitlines()[-1]
        raise GraderError(f"nbgrader could not generate {assignment_id} from {source / assignment_id}: {last}")
    for path in (Path(release or (root / "release")) / assignment_id).glob("*.ipynb"):
        _no_stub_under_scaffolds(path)
    return api


STUB = "# YOUR CODE HERE\npass"  # nbgrader's code_stub (nbgrader_config.py), where a solution was cleared


def without_stub(code: str) -> str:
    """`code` without nbgrader's stub at its end when the cell is a scaffold (it has `...` to fill in): the stub
    under a scaffold only says "write here" a second time, below the lines the learner is to fill."""
    head, stub, tail = code.rpartition(STUB)
    scaffold = any("..." in line.split("#")[0] for line in head.splitlines())
    return head.rstrip("\n") if stub and scaffold and not tail.strip() else code


def _no_stub_under_scaffolds(path: Path) -> None:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    changed = False
    for cell in nb.cells:
        if cell.cell_type == "code" and STUB in cell.source:
            kept = without_stub(cell.source)
            changed |= kept != cell.source
            cell.source = kept
    if changed:
        nbformat.write(nb, path)


def released(assignment_id: str, source: Path = SOURCE) -> Path:
    """The student version of one assignment (nbgrader generate_assignment), made once per content of its source.

    Every grading needs it, and generating it costs a throw-away gradebook and seconds of CPU; so it is cached in
    the grader's private folder under a digest of the assignment's source files, the course's nbgrader config and
    this file.
    A changed notebook has another digest, so a stale release is never used."""
    import hashlib
    from importlib.metadata import version  # not `import nbgrader`: a second of its server extensions, every check

    source = Path(source).resolve()  # nbgrader runs in a temporary course folder: a relative path would miss
    folder = source / assignment_id
    digest = hashlib.sha256(f"{version('nbgrader')}\0".encode() + CONFIG_FILE.read_bytes()
                            + Path(__file__).read_bytes())  # this file shapes the release too (_no_stub_under_scaffolds)
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts):
        digest.update(f"\0{path.relative_to(folder)}\0".encode() + path.read_bytes())
    cached = private_tmp() / "releases" / f"{assignment_id}-{digest.hexdigest()[:20]}"
    if (cached / f"{assignment_id}.ipynb").is_file():
        return cached
    cached.parent.mkdir(mode=0o700, exist_ok=True)
    with temp_course("grader-release-") as root:
        generate(assignment_id, root, source=source)
        try:
            os.rename(root / "release" / assignment_id, cached)  # atomic: a grader made at the same time wins
        except OSError:
            if not (cached / f"{assignment_id}.ipynb").is_file():
                raise
    return cached


def release(out: Path = RELEASE, source: Path = SOURCE, quiet: bool = False) -> list[str]:
    """Regenerate the student version of every assignment in `source` into `out`; return the ids."""
    ids = assignments(source)
    out.mkdir(parents=True, exist_ok=True)
    with temp_course("grader-release-") as root:
        for aid in ids:
            generate(aid, root, source=source, release=out)
            _normalise(out / aid)
            if not quiet:
                print(f"released {source.name}/{aid} -> {out.name}/{aid}")
    for page in pages(source):  # the course's home (START-HERE): no solution in it, copied as it is
        shutil.copyfile(page, out / page.name)
        _normalise_file(out / page.name)
        if not quiet:
            print(f"copied {source.name}/{page.name} -> {out.name}/{page.name}")
    if (source / PAGE_FIGURES).is_dir():  # the pages' figures (the home's course map)
        shutil.rmtree(out / PAGE_FIGURES, ignore_errors=True)
        shutil.copytree(source / PAGE_FIGURES, out / PAGE_FIGURES)
    for stale in stale_releases(out, source):
        shutil.rmtree(out / stale)
        if not quiet:
            print(f"removed {out.name}/{stale} (no {source.name}/{stale}/{stale}.ipynb any more)")
    return ids


def stale_releases(out: Path = RELEASE, source: Path = SOURCE) -> list[str]:
    """Released assignment folders whose source is gone."""
    have = set(assignments(source))
    return sorted(p.name for p in out.iterdir()
                  if p.is_dir() and ASSIGNMENT_ID.match(p.name) and (p / f"{p.name}.ipynb").is_file()
                  and p.name not in have) if out.is_dir() else []


PAGE_FIGURES = "figures"  # the top-level pages' figures: solutions/figures/ -> notebooks/figures/


def place_below(nb, at: int, cell_id: str, text: str) -> bool:
    """Put `text` in markdown cell `cell_id` right below cell `at`: update it if it is there, else insert it (True)."""
    import nbformat

    below = nb.cells[at + 1] if at + 1 < len(nb.cells) else None
    if below is not None and below.get("id") == cell_id:
        below.source = text
        return False
    cell = nbformat.v4.new_markdown_cell(text)
    cell["id"] = cell_id
    nb.cells.insert(at + 1, cell)
    return True


def pages(source: Path = SOURCE) -> list[Path]:
    """The course's notebooks that are no assignment (the home, START-HERE.ipynb): `source`'s top-level notebooks."""
    return sorted(source.glob("*.ipynb")) if source.is_dir() else []


def _normalise(folder: Path) -> None:
    """Make released notebooks byte-stable: one JSON layout, no execution counts or outputs."""
    for path in folder.rglob("*.ipynb"):
        _normalise_file(path)


def _normalise_file(path: Path) -> None:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nbformat.write(nb, path)


def comparable(path: Path) -> dict:
    """A notebook's content without volatile fields (outputs, counts): cell sources, types, ids, metadata."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = [{k: v for k, v in cell.items() if k not in ("outputs", "execution_count")} for cell in nb["cells"]]
    for cell in cells:
        if isinstance(cell.get("source"), list):
            cell["source"] = "".join(cell["source"])
    return {"metadata": nb.get("metadata", {}), "nbformat": nb.get("nbformat"), "cells": cells}


def release_differences(out: Path = RELEASE, source: Path = SOURCE) -> list[str]:
    """What differs between `out` and a fresh release of `source` (empty when up to date), one line each."""
    problems = []
    with temp_course("grader-fresh-") as tmp:
        fresh = tmp / "fresh"
        release(fresh, source, quiet=True)
        for aid in assignments(source) + ([PAGE_FIGURES] if (source / PAGE_FIGURES).is_dir() else []):
            new_files = {p.relative_to(fresh / aid) for p in (fresh / aid).rglob("*") if p.is_file()}
            old_dir = out / aid
            old_files = {p.relative_to(old_dir) for p in old_dir.rglob("*") if p.is_file()
                         and ".ipynb_checkpoints" not in p.parts} if old_dir.is_dir() else set()
            for rel in sorted(new_files - old_files):
                problems.append(f"{out.name}/{aid}/{rel} is missing")
            for rel in sorted(old_files - new_files):
                problems.append(f"{out.name}/{aid}/{rel} has no counterpart in {source.name}/{aid}")
            for rel in sorted(new_files & old_files):
                a, b = fresh / aid / rel, old_dir / rel
                if rel.suffix == ".ipynb":
                    try:
                        same = comparable(a) == comparable(b)
                    except (ValueError, KeyError):
                        same = False
                else:
                    same = filecmp.cmp(a, b, shallow=False)
                if not same:
                    problems.append(f"{out.name}/{aid}/{rel} differs from a fresh release of {source.name}/{aid}")
        for page in pages(source):
            if not (out / page.name).is_file() or comparable(fresh / page.name) != comparable(out / page.name):
                problems.append(f"{out.name}/{page.name} differs from {source.name}/{page.name}")
    problems += [f"{out.name}/{s} has no source in {source.name}/" for s in stale_releases(out, source)]
    return problems
