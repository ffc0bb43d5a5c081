"""Write every static figure of the course: `python tools/figures/make.py` (tests/unit/test_figures.py fails when a
committed figure differs from what its script draws).

Why drawn from code: a figure carries the demo's real numbers (backlogs 800/200, cap 1,000, `offsets/7`), and those
change with the course; a script keeps the picture and the notebook in step, and a reviewer reads the diff.
Each `tools/figures/fig_*.py` has `MODULES` (the modules that show it) and `draw() -> str` (an SVG with a <title>
and a <desc>, its alt text). The SVG goes to `solutions/<module>/figures/<name>.svg`, which `make release` copies
to `notebooks/<module>/figures/`: the notebook shows it as `![alt](figures/<name>.svg)`, in JupyterLab, on the hub
(the learner's copy of the notebooks holds it) and on GitHub.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOLUTIONS = HERE.parent.parent / "solutions"


def figures() -> dict[Path, str]:
    """{where each figure goes: its SVG text} for every figure script."""
    out: dict[Path, str] = {}
    for script in sorted(HERE.glob("fig_*.py")):
        spec = importlib.util.spec_from_file_location(script.stem, script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        name = script.stem[len("fig_"):].replace("_", "-")
        svg = module.draw()
        for aid in module.MODULES:
            out[SOLUTIONS / aid / "figures" / f"{name}.svg"] = svg
    return out


def main() -> int:
    """Write the figures; print each path written."""
    for path, svg in figures().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text() != svg:
            path.write_text(svg)
            print(f"wrote {path.relative_to(SOLUTIONS.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
