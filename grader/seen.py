"""`python -m grader seen`: every live demo's *What you should see*, its chart at its end in a real run.

A live demo's chart exists only while a kernel runs it. A learner on a noisy laptop, on the hub or reading on GitHub
or the static site needs to know what a healthy run looks like (../shared/teaching-style.md: every live demo has a
What you should see image beside it). So each demo's last frame, the PNG it froze when it ended
(streamlab.demo.live.LiveDemo._freeze), is kept in its module's `figures/` as `seen-<cell id>[-k].png`, and a
markdown cell right under the demo's cell shows it, folded in a `<details>`, so that the live chart stays the first
thing seen.

The frames come from notebooks as Run All left them: the untouched student versions that `make site` runs (demos
ending DEMO_SECONDS after their script, the story complete), or any folder of such runs (--executed). A demo cell
is matched to its solution's cell by cell id; exercises' cells (nbgrader's) are never taken, nor a demo of the learner's
own answer (cell metadata `"streamlab": {"seen": false}`, module 5's race). `make seen` runs the
notebooks, then writes the figures and cells into solutions/; `make release` carries them to notebooks/.
"""
from __future__ import annotations

import base64
import re
from pathlib import Path

from .course import SOURCE, GraderError, assignments, place_below
from .site import DEMO_SECONDS

FRAME = ("image/png", "application/vnd.jupyter.widget-view+json")  # a demo's frozen last frame has both
CELL_ID = "seen-{}"  # the id of the markdown cell under a demo's cell
TITLE = re.compile(r"""\btitle\s*=\s*f?(["'])(.+?)\1""")
SUMMARY = ("<b>What you should see</b>: a recorded run, stopped {seconds} s after its script. Your numbers will "
           "differ. The shape should not.")


def recorded(cell) -> bool:
    """Whether a code cell's demos get a What you should see: not an exercise's cell, nor a race of the learner's own
    answer (`"streamlab": {"seen": false}`), whose chart shows what that answer did."""
    meta = cell.get("metadata", {})
    return (cell.cell_type == "code" and not meta.get("nbgrader", {}).get("grade_id")
            and meta.get("streamlab", {}).get("seen", True))


def frames(executed_nb) -> dict[str, list[bytes]]:
    """{cell id: the PNG frames its demos froze, in order} of an executed notebook (only cells `recorded`)."""
    found: dict[str, list[bytes]] = {}
    for cell in executed_nb.cells:
        if not recorded(cell):
            continue
        shots = [base64.b64decode(out["data"]["image/png"]) for out in cell.get("outputs", [])
                 if all(mime in out.get("data", {}) for mime in FRAME)]
        if shots and cell.get("id"):
            found[cell["id"]] = shots
    return found


def _alt(source: str, k: int, count: int) -> str:
    """Alt text of a demo's k-th frame: its title= when the cell gives one."""
    titles = [m.group(2) for m in TITLE.finditer(source)]
    what = f"the demo '{titles[k]}'" if k < len(titles) and len(titles) == count else "this demo"
    if "FailoverDemo(" in source:  # module 9's frame is its kill table, not a chart
        return ("The table of this demo at its end in a recorded run: which executor read each partition, batch by "
                "batch, the batches an executor or a leader was killed under, and both sinks' counts")
    return f"The chart of {what} in a recorded run"


def seen_cell_source(names: list[str], alts: list[str]) -> str:
    """The markdown under a demo: its frames, folded."""
    images = "\n\n".join(f"![{alt}](figures/{name})" for name, alt in zip(names, alts))
    return f"<details><summary>{SUMMARY.format(seconds=DEMO_SECONDS)}</summary>\n\n{images}\n\n</details>"


def apply(aid: str, executed: Path, source: Path = SOURCE) -> list[str]:
    """Write one module's frames into source/<aid>/figures/ and put their cells under its demo cells; the names."""
    import nbformat

    run = executed / f"{aid}.ipynb"
    if not run.is_file():
        return []
    shots = frames(nbformat.read(run, as_version=4))
    path = source / aid / f"{aid}.ipynb"
    nb = nbformat.read(path, as_version=4)
    index = {cell.get("id"): i for i, cell in enumerate(nb.cells)}
    written = []
    if shots:
        (source / aid / "figures").mkdir(exist_ok=True)
    for cell_id, pngs in shots.items():
        if cell_id not in index:
            raise GraderError(f"{run}: cell {cell_id} is not in {path}: run the notebooks of the current release "
                              "again (make seen)")
        at = index[cell_id]
        names = [f"seen-{cell_id}{'' if len(pngs) == 1 else f'-{k + 1}'}.png" for k in range(len(pngs))]
        for name, png in zip(names, pngs):
            (source / aid / "figures" / name).write_bytes(png)
        text = seen_cell_source(names, [_alt(nb.cells[at].source, k, len(pngs)) for k in range(len(pngs))])
        if place_below(nb, at, CELL_ID.format(cell_id), text):
            index = {c.get("id"): i for i, c in enumerate(nb.cells)}
        written += names
    nbformat.write(nb, path)
    return written


def main(executed: Path, run: bool = False, source: Path = SOURCE, cluster: bool = False,
         only: list[str] | None = None) -> int:
    """`python -m grader seen`: run the student notebooks into `executed` first when `run` (module 9 on the lab's
    cluster too when `cluster`; `only` those ids, ONCALL the on-call night's page), then apply every module and the
    on-call night (grader/seen_oncall.py: its acts with a right fix, recorded)."""
    from . import seen_oncall

    modules = [aid for aid in only if aid != seen_oncall.PAGE] if only else None
    oncall = not only or seen_oncall.PAGE in only
    if run:
        from .site import execute

        executed.mkdir(parents=True, exist_ok=True)
        if modules is None or modules:
            execute(executed, only=modules, cluster=cluster)
        if oncall:
            seen_oncall.record(executed)
    if not executed.is_dir():
        raise GraderError(f"{executed}: no such folder of executed notebooks (make seen runs them)")
    for aid in assignments(source) if modules is None else modules:
        names = apply(aid, executed, source)
        if names:
            print(f"{aid}: {len(names)} figure(s): {', '.join(names)}")
    if oncall:
        names = seen_oncall.apply(executed, source)
        if names:
            print(f"{seen_oncall.PAGE}: {len(names)} figure(s): {', '.join(names)}")
    print("then: .venv/bin/python -m grader release (the student notebooks get the figures and cells)")
    return 0
