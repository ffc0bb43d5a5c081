"""The settings page (docs/settings.md, linked from the README) and `make help` tell a user what they may set; the
README lists every module with the time START-HERE gives it (issue 16, item 6; issue 32, item 3)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Set by the course's own machinery for its own processes, never by a user.
INTERNAL = {"STREAMLAB_GRADING", "STREAMLAB_JUST_SAVED", "JPY_SESSION_NAME", "PATH", "PYSPARK_PYTHON",
            "PYSPARK_DRIVER_PYTHON", "STREAMLAB_ASSIGNMENT", "PYTEST_CURRENT_TEST", "VIRTUAL_ENV", "HOME", "TMPDIR",
            "STREAMLAB_BENCH_OUT",  # the bench hands it to its own child process
            "STREAMLAB_QUIZ_ROUNDS", "STREAMLAB_QUIZ_SHUFFLED"}  # the grader hands the quiz's rounds to its runs
README = (ROOT / "README.md").read_text(encoding="utf-8")
SETTINGS = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")  # every variable lives here since issue 32


def _read_variables() -> set[str]:
    """Every variable the code reads: since issue 34 only streamlab.settings reads the environment
    (tests/unit/test_settings.py holds that), so its declarations are the list."""
    from streamlab.settings import INTERNAL as INTERNAL_SCOPE, settings
    return {s.name for s in settings if s.scope != INTERNAL_SCOPE} - INTERNAL


def test_every_environment_variable_the_code_reads_is_on_the_settings_page():
    variables = _read_variables()
    assert {"STREAMLAB_BROKER_PORT", "KAFKA_BOOTSTRAP", "STREAMLAB_ENGINE"} <= variables, "the scan finds nothing"
    missing = sorted(v for v in variables if f"`{v}" not in SETTINGS)
    assert not missing, f"docs/settings.md does not name these environment variables: {missing}"
    assert "(docs/settings.md)" in README, "the README does not link the settings page"


def test_make_help_names_the_make_variables_and_the_main_environment_variables():
    help_text = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    make_vars = set(re.findall(r"^([A-Z_]+) \?=", (ROOT / "Makefile").read_text(), re.M)) | {"CLUSTER"}
    missing = sorted(v for v in make_vars if f"{v}=" not in help_text or f"{v}=" not in SETTINGS)
    assert not missing, f"make help or docs/settings.md does not name these make variables: {missing}"
    assert "docs/settings.md" in help_text, "make help does not say where the settings are described"
    for var in ("STREAMLAB_BROKER_PORT", "KAFKA_BOOTSTRAP", "STREAMLAB_ENGINE", "STREAMLAB_SEED"):
        assert var in help_text, f"make help does not name {var}"


def test_the_readme_lists_every_module_as_written():
    ids = sorted(p.name for p in (ROOT / "solutions").iterdir() if (p / f"{p.name}.ipynb").is_file())
    table = README.split("## Modules", 1)[1].split("\n## ", 1)[0]
    assert all(f"`{aid}`" in table for aid in ids), f"modules missing from the README's table: {ids}"
    assert "not written yet" not in table


def _times(text: str, row: str) -> dict[str, int]:
    return {aid: int(minutes) for aid, minutes in re.findall(row, text, re.M)}


def test_the_readmes_module_times_are_start_heres():
    """A learner reads each module's time on GitHub and in the lab's home notebook: the two give the same minutes."""
    import json
    home = json.loads((ROOT / "notebooks" / "START-HERE.ipynb").read_text(encoding="utf-8"))
    home_text = "\n".join("".join(c["source"]) for c in home["cells"] if c["cell_type"] == "markdown")
    home_times = _times(home_text, r"^\| \[\d\d · [^\]]+\]\(([^/)]+)/[^)]*\) \|.*\| (\d+) min(?: \(\d+ \+ \d+\))? \|$")
    table = README.split("## Modules", 1)[1].split("\n## ", 1)[0]
    readme_times = _times(table, r"^\| \d+ \| \[`([^`]+)`\]\([^)]*\) \|.*\| (\d+) min \|$")
    assert len(home_times) == 11, f"START-HERE's module map has {len(home_times)} timed modules, not 11"
    assert readme_times == home_times, f"the README's times {readme_times} differ from START-HERE's {home_times}"
