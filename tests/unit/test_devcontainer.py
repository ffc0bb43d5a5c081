"""The dev container (.devcontainer/): what can be proven here without VS Code or Codespaces. Its configuration
names the compose lab's services, folder and port, keeps the lab's own command (JupyterLab, with its token), and its
first step gives docker compose the token the compose file requires (`docker-compose config` then accepts the file
with nothing else set). Building and starting those services is tests/docker's; opening them in VS Code or a
Codespace was not tried here (docker/README.md says so)."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import stat
import subprocess

import yaml
from test_docker import COMPOSE, PORT_VARIABLES, ROOT, docker_compose  # noqa: F401  (the fixture)

FOLDER = ROOT / ".devcontainer"
CONFIG = json.loads((FOLDER / "devcontainer.json").read_text())


def _token_script():
    spec = importlib.util.spec_from_file_location("devcontainer_token", FOLDER / "token.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_it_opens_the_compose_labs_lab_service_with_its_own_command():
    compose = yaml.safe_load(COMPOSE.read_text())
    assert [(FOLDER / f).resolve() for f in CONFIG["dockerComposeFile"]] == [COMPOSE.resolve()]
    assert CONFIG["service"] == "lab" and set(CONFIG["runServices"]) == set(compose["services"]) == {"kafka", "lab"}
    lab = compose["services"]["lab"]
    assert CONFIG["workspaceFolder"] == lab["working_dir"] == "/course"
    # the lab's command serves JupyterLab with the token; a dev container's default would replace it with a sleep
    assert CONFIG["overrideCommand"] is False
    published = [int(p.split(":")[-1]) for p in lab["ports"]]
    assert CONFIG["forwardPorts"] == [8888] and 8888 in published
    assert all(p.startswith("127.0.0.1:") for p in lab["ports"]), lab["ports"]
    assert CONFIG["initializeCommand"] == "python3 .devcontainer/token.py"
    memory = int(re.match(r"(\d+)gb", CONFIG["hostRequirements"]["memory"]).group(1))
    assert memory >= 4 and CONFIG["hostRequirements"]["cpus"] >= 2  # the lab ~0.8 GB, the cluster lab ~2.1 GB


def test_its_first_step_writes_a_token_once_and_keeps_it(tmp_path):
    env = tmp_path / ".env"
    env.write_text("LAB_PORT=8899\n")
    token = _token_script()
    token.main(env)
    first = dict(line.split("=", 1) for line in env.read_text().splitlines())
    assert re.fullmatch(r"[0-9a-f]{32}", first["JUPYTER_TOKEN"]) and first["LAB_PORT"] == "8899"
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    token.main(env)
    assert dict(line.split("=", 1) for line in env.read_text().splitlines()) == first


def test_with_that_env_file_alone_compose_accepts_the_lab(docker_compose, tmp_path):  # noqa: F811
    env_file = tmp_path / ".env"
    _token_script().main(env_file)
    environ = {k: v for k, v in os.environ.items() if k != "JUPYTER_TOKEN" and k not in PORT_VARIABLES}
    done = subprocess.run([docker_compose, "--env-file", str(env_file), "-f", str(COMPOSE), "config"], cwd=ROOT,
                          env=environ, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    token = dict(line.split("=", 1) for line in env_file.read_text().splitlines())["JUPYTER_TOKEN"]
    assert yaml.safe_load(done.stdout)["services"]["lab"]["environment"]["JUPYTER_TOKEN"] == token


def test_the_link_it_prints_opens_the_course_home_in_the_lab_s_root():
    """The attach step's URL names a file of the folder the compose lab serves (docker/start-lab.sh: notebooks/):
    it named notebooks/START-HERE.ipynb, a 404 under that root."""
    path = re.search(r"/lab/tree/([^?\"]+)", CONFIG["postAttachCommand"]).group(1)
    assert 'root="${STREAMLAB_NOTEBOOKS:-$PWD/notebooks}"' in (ROOT / "docker" / "start-lab.sh").read_text()
    assert (ROOT / "notebooks" / path).is_file(), f"{path} is not in notebooks/, the lab's root"
