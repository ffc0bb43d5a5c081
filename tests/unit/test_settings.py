"""streamlab/settings.py is the one place that reads the environment (issue 34, item 3): every variable declared
once with its default, help and check, read when used. The walk below reads the source with `ast` only."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from streamlab.settings import INSTRUCTOR, LEARNER, SCOPES, Settings, SettingError, settings

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("streamlab", "grader", "workshop", "bench")
HOME = ROOT / "streamlab" / "settings.py"


def _is_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name) \
        and node.value.id == "os"


def env_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of every read of the environment: os.environ.get(…), os.environ[…] read, os.getenv(…),
    `… in os.environ`, and `from os import environ/getenv`. Copies for a child (dict(os.environ), .items()) and
    writes are not reads."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "get" and _is_environ(node.func.value):
                found.append((node.lineno, "os.environ.get"))
            elif node.func.attr == "getenv" and isinstance(node.func.value, ast.Name) and node.func.value.id == "os":
                found.append((node.lineno, "os.getenv"))
        elif isinstance(node, ast.Subscript) and _is_environ(node.value) and isinstance(node.ctx, ast.Load):
            found.append((node.lineno, "os.environ[...]"))
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) \
                and any(_is_environ(c) for c in node.comparators):
            found.append((node.lineno, "in os.environ"))
        elif isinstance(node, ast.ImportFrom) and node.module == "os" \
                and any(a.name in ("environ", "getenv") for a in node.names):
            found.append((node.lineno, "from os import environ"))
    return sorted(found)


def test_the_walk_finds_each_shape_of_read_and_no_write():
    source = ("import os\nos.environ.get('A')\nos.environ['B']\nos.getenv('C')\n'D' in os.environ\n"
              "os.environ['E'] = '1'\nos.environ.pop('F', None)\nenv = dict(os.environ, G='1')\n"
              "x = {k: v for k, v in os.environ.items()}\nfrom os import environ\n")
    assert [line for line, _ in env_reads(ast.parse(source))] == [2, 3, 4, 5, 10]


def test_only_the_settings_module_reads_the_environment():
    """Everything else asks `settings` (streamlab/settings.py), so each variable has one default, one check and
    one help text."""
    reads = [f"{path.relative_to(ROOT)}:{line}: {what}"
             for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py")) if path != HOME
             for line, what in env_reads(ast.parse(path.read_text(encoding="utf-8")))]
    assert not reads, "read the environment through streamlab.settings instead:\n" + "\n".join(reads)


def test_every_setting_has_a_name_help_and_a_scope_and_names_are_unique():
    declared = list(settings)
    assert len(declared) >= 30, "the walk over Settings found too few"
    assert len({s.name for s in declared}) == len(declared), "a variable is declared twice"
    for s in declared:
        assert re.fullmatch(r"[A-Z][A-Z0-9_]+", s.name), s.name
        assert s.scope in SCOPES, f"{s.name}: scope {s.scope!r}"
        assert len(s.help) > 15 and "\n" not in s.help, f"{s.name} has no one-line help text"
        assert s.default_text(), s.name


def test_the_settings_page_names_every_setting_a_person_sets():
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    missing = [s.name for s in settings if s.scope in (LEARNER, INSTRUCTOR) and f"`{s.name}" not in page]
    assert not missing, f"docs/settings.md does not name: {missing}"


def test_make_help_agrees_with_the_settings():
    """Each variable `make help` shows is declared, with the default it shows."""
    help_text = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    by_name = {s.name: s for s in settings}
    shown = re.findall(r"^  ([A-Z][A-Z0-9_]+)=(\S*)\s+(.*)$", help_text, re.M)
    env_lines = [(n, v, h) for n, v, h in shown if n not in ("LAB_PORT", "PYTHON", "CLUSTER")]
    assert len(env_lines) >= 5, help_text
    for name, value, _ in env_lines:
        assert name in by_name, f"make help names {name}, which streamlab/settings.py does not declare"
    assert f"{by_name['STREAMLAB_BROKER_PORT'].default}" in dict((n, v) for n, v, _ in env_lines)[
        "STREAMLAB_BROKER_PORT"]
    assert "python -m streamlab settings" in help_text


def test_values_are_read_when_used(monkeypatch):
    """No value is cached at import: a test's monkeypatch, or a parent's env=, is seen at once."""
    monkeypatch.delenv("STREAMLAB_BROKER_PORT", raising=False)
    assert settings.broker_port == 9092
    monkeypatch.setenv("STREAMLAB_BROKER_PORT", "9692")
    assert settings.broker_port == 9692
    monkeypatch.setenv("KAFKA_BOOTSTRAP", "")
    assert settings.kafka_bootstrap is None, "an empty KAFKA_BOOTSTRAP is as unset"
    monkeypatch.setenv("STREAMLAB_HOME", "")
    assert settings.home == ROOT / ".streamlab"
    assert Settings.broker_port.name == "STREAMLAB_BROKER_PORT", "the class gives the declaration"


# One bad value per checked setting, and the start of its one-line message.
BAD = {
    "STREAMLAB_BROKER_PORT": ("nine", "STREAMLAB_BROKER_PORT='nine' is not a port number: set it to e.g. 9093"),
    "STREAMLAB_CLUSTER_PORT": ("65530", "STREAMLAB_CLUSTER_PORT=65530 is out of range (1 to 65529): set it to e.g."),
    "STREAMLAB_SPARK_PORT": ("0", "STREAMLAB_SPARK_PORT=0 is out of range (1 to 65529): set it to e.g. 7077"),
    "STREAMLAB_SPARK_UI_PORT": ("", "STREAMLAB_SPARK_UI_PORT='' is not a port number: set it to e.g. 8080"),
    "STREAMLAB_ENGINE": ("conector", "STREAMLAB_ENGINE='conector' is not an engine: use connector (the default) or"),
    "STREAMLAB_SEED": ("abc", "STREAMLAB_SEED='abc' is not a whole number; unset it or give e.g. 1234"),
    "STREAMLAB_SPARK_CORES": ("0", "STREAMLAB_SPARK_CORES='0' is not a whole number of cores above 0: set it to"),
    "STREAMLAB_DEMO_SECONDS": ("soon", "STREAMLAB_DEMO_SECONDS='soon' is not a number of seconds: unset it or give"),
    "STREAMLAB_GRADER_MEMORY_GIB": ("-1", "STREAMLAB_GRADER_MEMORY_GIB='-1' is not a number of GiB above 0: unset"),
    "STREAMLAB_GRADER_OUTPUT_BYTES": ("2MB", "STREAMLAB_GRADER_OUTPUT_BYTES='2MB' is not a whole number of bytes:"),
    "STREAMLAB_GRADER_PROGRESS_S": ("often", "STREAMLAB_GRADER_PROGRESS_S='often' is not a number of seconds: un"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_value_is_one_line_naming_the_variable_and_the_fix(name, monkeypatch):
    bad, message = BAD[name]
    setting = next(s for s in settings if s.name == name)
    monkeypatch.setenv(name, bad)
    with pytest.raises(SettingError) as refused:
        setting.value()
    text = str(refused.value)
    assert text.startswith(message) and "\n" not in text, text
    assert "set it" in text or "use " in text or "give" in text, f"{text} names no fix"


def test_good_values_parse_to_their_type(monkeypatch):
    cases = {"STREAMLAB_BROKER_PORT": ("65535", 65535), "STREAMLAB_CLUSTER_PORT": ("65529", 65529),
             "STREAMLAB_ENGINE": (" Offline ", "offline"), "STREAMLAB_SEED": (" 42 ", 42),
             "STREAMLAB_SPARK_CORES": ("2", "2"), "STREAMLAB_DEMO_SECONDS": ("15", 15.0),
             "STREAMLAB_CLUSTER": ("true", True), "CI": ("TRUE", True), "STREAMLAB_CDS": ("off", False),
             "STREAMLAB_BENCH_WORKSHOP": ("0", False), "STREAMLAB_GRADING": ("1", True),
             "STREAMLAB_GRADER_MEMORY_GIB": ("", 4.0), "STREAMLAB_GRADER_OUTPUT_BYTES": ("1000", 1000),
             "STREAMLAB_QUIZ_ROUNDS": ('{"q1": 2}', {"q1": 2}), "STREAMLAB_QUIZ_SHUFFLED": ("a,b", ["a", "b"])}
    by_name = {s.name: s for s in settings}
    for name, (raw, value) in cases.items():
        monkeypatch.setenv(name, raw)
        assert by_name[name].value() == value, name


def test_python_m_streamlab_settings_lists_every_setting_with_its_value_and_hides_secrets():
    import os

    env = dict(os.environ, STREAMLAB_BROKER_PORT="9692", STREAMLAB_SPARK_CORES="none", JUPYTERHUB_API_TOKEN="s3cret")
    done = subprocess.run([sys.executable, "-m", "streamlab", "settings"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    for s in settings:
        assert f"  {s.name}=" in done.stdout and s.help in done.stdout, s.name
    assert "STREAMLAB_BROKER_PORT='9692'" in done.stdout
    assert "is not a whole number of cores" in done.stdout, "a bad value is shown with its message"
    assert "s3cret" not in done.stdout
