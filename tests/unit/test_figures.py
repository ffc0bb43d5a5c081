"""The course's static figures (tools/figures/) are what their scripts draw, carry alt text, and keep text readable."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _make():
    spec = importlib.util.spec_from_file_location("make_figures", ROOT / "tools" / "figures" / "make.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_figure_is_what_its_script_draws_with_alt_text_and_readable_text():
    drawn = _make().figures()
    for path, svg in drawn.items():
        assert path.is_file() and path.read_text() == svg, f"{path} is stale: run python tools/figures/make.py"
        assert re.search(r"<title>[^<]{8,}</title>", svg) and re.search(r"<desc>[^<]{20,}</desc>", svg), path
        sizes = [float(s) for s in re.findall(r'font-size="([\d.]+)"', svg)]
        assert sizes and min(sizes) >= 12, f"{path}: text under 12 px"


def test_every_figure_file_in_the_solutions_has_a_script():
    drawn = set(_make().figures())
    on_disk = set((ROOT / "solutions").glob("*/figures/*.svg"))
    assert on_disk <= drawn, f"figures with no script in tools/figures: {sorted(on_disk - drawn)}"
