"""The course's pins live in pyproject.toml; environment.yml, the installed packages and the Docker image follow them."""
from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"
ENVIRONMENT = ROOT / "environment.yml"
DOCKERFILE = ROOT / "docker" / "Dockerfile"


def _name(raw: str) -> str:
    return re.sub(r"[-_.]+", "-", raw).lower()


def _pins(requirements: list[str], where: str) -> dict[str, str]:
    pins = {}
    for req in requirements:
        match = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;,]+)\s*", req)
        assert match, f"{where}: {req!r} is not pinned as name==version"
        pins[_name(match.group(1))] = match.group(2)
    return pins


def pyproject_pins() -> dict[str, str]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    pins = _pins(project["dependencies"], "pyproject.toml dependencies")
    pins.update(_pins(project["optional-dependencies"]["test"], "pyproject.toml test extra"))
    return pins


def environment() -> dict:
    return yaml.safe_load(ENVIRONMENT.read_text())


def environment_pip_pins() -> dict[str, str]:
    pip_sections = [d["pip"] for d in environment()["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip_sections) == 1, "environment.yml needs exactly one `pip:` section"
    return _pins(pip_sections[0], "environment.yml pip section")


def dockerfile_args() -> dict[str, str]:
    return dict(re.findall(r"^ARG\s+(\w+)=\"?([^\"\s]*)\"?", DOCKERFILE.read_text(), flags=re.M))


PINS = pyproject_pins()


def test_pyproject_pins_the_core_packages():
    for name in ("pyspark", "jupyterlab", "pytest", "pyyaml"):
        assert name in PINS, f"pyproject.toml no longer pins {name}"


@pytest.mark.parametrize("name", sorted(PINS))
def test_environment_yml_has_the_same_version(name):
    env = environment_pip_pins()
    assert name in env, f"{name}=={PINS[name]} is pinned in pyproject.toml but missing from environment.yml"
    assert env[name] == PINS[name], (
        f"{name}: pyproject.toml pins {PINS[name]}, environment.yml says {env[name]}")


def test_environment_yml_lists_nothing_pyproject_does_not_pin():
    extra = sorted(set(environment_pip_pins()) - set(PINS))
    assert not extra, f"environment.yml pins {extra}, which pyproject.toml does not: remove them or pin them there"


def test_environment_yml_gives_python_311_and_java_17_from_conda_forge():
    env = environment()
    assert env["channels"] == ["conda-forge"], f"channels are {env['channels']}, expected only conda-forge"
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    assert "python=3.11" in conda, f"environment.yml conda packages {conda} lack python=3.11"
    assert "openjdk=17" in conda, f"environment.yml conda packages {conda} lack openjdk=17"


@pytest.mark.parametrize("name", sorted(PINS))
def test_installed_version_matches_the_pin(name):
    try:
        installed = metadata.version(name)
    except metadata.PackageNotFoundError:
        pytest.fail(f"{name} is pinned ({PINS[name]}) but not installed here: run `make setup`")
    assert installed == PINS[name], f"{name} {installed} is installed but pyproject.toml pins {PINS[name]}: run `make setup`"


def test_dockerfile_spark_version_is_the_pyspark_pin():
    args = dockerfile_args()
    assert args.get("spark_version") == PINS["pyspark"], (
        f"docker/Dockerfile ARG spark_version={args.get('spark_version')} but pyproject.toml pins pyspark=={PINS['pyspark']}")


def test_session_spark_version_is_the_pyspark_pin():
    text = (ROOT / "streamlab" / "lab" / "session.py").read_text()
    match = re.search(r'^SPARK_VERSION\s*=\s*"([^"]+)"', text, flags=re.M)
    assert match, "streamlab/lab/session.py no longer defines SPARK_VERSION"
    assert match.group(1) == PINS["pyspark"], (
        f"streamlab/lab/session.py SPARK_VERSION={match.group(1)} but pyproject.toml pins pyspark=={PINS['pyspark']}")


def test_the_connector_is_built_for_the_installed_spark_and_its_scala():
    import pyspark

    from streamlab.lab.jars import connector_bundle

    (group, artifact, version), = connector_bundle().modules
    core = sorted((Path(pyspark.__file__).parent / "jars").glob("spark-core_*.jar"))
    assert core, "pyspark ships no spark-core jar"
    scala = re.match(r"spark-core_(\d+\.\d+)-", core[0].name).group(1)
    assert (group, artifact, version) == ("org.apache.spark", f"spark-sql-kafka-0-10_{scala}", pyspark.__version__)


def test_dockerfile_installs_the_pins_from_pyproject():
    text = DOCKERFILE.read_text()
    assert re.search(r"^COPY\s+pyproject\.toml\s", text, flags=re.M), "docker/Dockerfile does not copy pyproject.toml"
    assert re.search(r"tomllib\.load\(open\('[^']*pyproject\.toml'", text) and "['project']['dependencies']" in text, (
        "docker/Dockerfile should read the pins from pyproject.toml's [project] dependencies")
    assert re.search(r"pip install[^\n]*-r /tmp/pins/requirements\.txt", text), (
        "docker/Dockerfile should pip install the requirements it read from pyproject.toml")
    assert re.search(r"pip install[^\n]*--no-deps \.", text) or re.search(r"echo /home/lab/course > \S*\.pth", text), (
        "docker/Dockerfile should install the course package (pip install --no-deps ., or a .pth naming its folder)")
    for line in text.splitlines():
        if "pip install" in line:
            assert "==" not in line, f"docker/Dockerfile pins a package by hand (a second list to drift): {line.strip()}"


def test_delta_jars_are_the_delta_spark_pin_built_for_the_installed_spark():
    import pyspark

    from streamlab.lab.jars import DELTA_VERSION, delta_bundle

    assert DELTA_VERSION == PINS["delta-spark"], (
        f"streamlab/lab/jars.py DELTA_VERSION={DELTA_VERSION} but pyproject.toml pins delta-spark=={PINS['delta-spark']}")
    (group, artifact, version), = delta_bundle().modules
    minor = ".".join(pyspark.__version__.split(".")[:2])
    assert (group, artifact, version) == ("io.delta", f"delta-spark_{minor}_2.13", DELTA_VERSION)


def test_the_docker_image_resolves_delta_beside_the_connector():
    assert re.search(r"python -m streamlab jars --only connector --only delta", DOCKERFILE.read_text()), (
        "docker/Dockerfile should resolve Delta Lake's jars with the connector's (the lakehouse module needs them)")


def test_kafka_python_checksums_records_in_c():
    """crc32c is pinned for kafka-python, which silently falls back to a pure-Python CRC-32C without it."""
    from kafka.record import util

    assert util.crc32c_c is not None, "kafka-python found no crc32c module: pip install -e . (it is pinned)"


def test_importing_nbformat_builds_no_iri_parser():
    """make setup (and the image) removes rfc3987-syntax: with it, every process importing jsonschema (JupyterLab,
    nbgrader, Check my work) spent 2.5 s of CPU building Earley parsers for a format no schema here uses."""
    import subprocess
    import sys

    code = "import sys, nbformat, jupyter_events.validators; print('rfc3987_syntax' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert loaded.stdout.strip() == "False", loaded.stdout + loaded.stderr[-2000:]
