"""The README and `make help` tell a user what they may set and what each module has (issue 16, item 6)."""
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


def _read_variables() -> set[str]:
    found = set()
    for path in [*(ROOT / "streamlab").rglob("*.py"), *(ROOT / "grader").glob("*.py")]:
        text = path.read_text(encoding="utf-8")
        found |= set(re.findall(r"environ(?:\.get)?[\[(]\s*[\"']([A-Z][A-Z0-9_]+)[\"']", text))
        found |= set(re.findall(r"_env_port\(\s*\"([A-Z][A-Z0-9_]+)\"", text))
        found |= set(re.findall(r"^[A-Z_]*_ENV\s*=\s*\"([A-Z][A-Z0-9_]+)\"", text, re.M))  # named once, read by name
    return found - INTERNAL


def test_every_environment_variable_the_code_reads_is_in_the_readme():
    variables = _read_variables()
    assert {"STREAMLAB_BROKER_PORT", "KAFKA_BOOTSTRAP", "STREAMLAB_ENGINE"} <= variables, "the scan finds nothing"
    missing = sorted(v for v in variables if f"`{v}" not in README)
    assert not missing, f"the README does not name these environment variables: {missing}"


def test_make_help_names_the_make_variables_and_the_main_environment_variables():
    help_text = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    make_vars = set(re.findall(r"^([A-Z_]+) \?=", (ROOT / "Makefile").read_text(), re.M)) | {"CLUSTER"}
    missing = sorted(v for v in make_vars if f"{v}=" not in help_text or f"{v}=" not in README)
    assert not missing, f"make help or the README does not name these make variables: {missing}"
    for var in ("STREAMLAB_BROKER_PORT", "KAFKA_BOOTSTRAP", "STREAMLAB_ENGINE", "STREAMLAB_SEED"):
        assert var in help_text, f"make help does not name {var}"


def test_the_readme_lists_every_module_as_written():
    ids = sorted(p.name for p in (ROOT / "solutions").iterdir() if (p / f"{p.name}.ipynb").is_file())
    table = README.split("## Modules", 1)[1].split("\n## ", 1)[0]
    assert all(f"`{aid}`" in table for aid in ids), f"modules missing from the README's table: {ids}"
    assert "not written yet" not in table
