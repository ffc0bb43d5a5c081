"""A container engine for the compose test, from Debian's packages: podman serving the Docker API.

These machines have no Docker daemon and reach no image registry, so this module brings what `docker compose up`
needs and stops all of it again:

- `ensure_packages()`: podman, docker-compose, debootstrap... from Debian (as root; otherwise `Unavailable` says
  why, and the test skips, or fails under CI=true);
- `docker_api()`: `podman system service` on a socket in a temporary folder, with this folder's containers.conf
  (nothing in /etc is changed), stopped when the block ends, and killed with its parent if the test is killed;
- `base_image()`: a Debian bookworm root file system with Python 3.11, pip and venv (debootstrap), imported into
  podman's storage under a tag keyed by its recipe, so a second run reuses it. It stands in for
  python:3.11-slim-bookworm (`PYTHON_IMAGE` of docker-compose.yml, the Dockerfile's `python_image`);
- `kafka_image()`: the stand-in for apache/kafka (tests/docker/kafka/), from the native broker's Maven jars;
- `Stack`: docker-compose on a copy of the course, with health checks driven by `podman healthcheck run` (podman
  4.3 runs them from systemd timers, and there is no systemd here).
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CONTAINERS_CONF = HERE / "containers.conf"
# iptables: netavark sets up the containers' network with it ("netavark: No such file or directory" without).
PACKAGES = ("podman", "runc", "debootstrap", "uidmap", "slirp4netns", "fuse-overlayfs", "docker-compose",
            "netavark", "aardvark-dns", "catatonit", "iptables")
MIRROR = "http://deb.debian.org/debian"
BASE_PACKAGES = ("python3", "python3-venv", "python3-pip", "ca-certificates")
BASE_REPO = "localhost/streamlab-test/bookworm-python"
PROJECT = "streamlab-test"
LAB_UID = 1000  # the Dockerfile's lab_uid


class Unavailable(Exception):
    """The engine cannot be had here; the message says why and what would fix it."""


def _run(cmd: list[str], timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, **kw)


def missing_packages() -> list[str]:
    done = _run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n", *PACKAGES], timeout=60)
    installed = {line.split()[0] for line in done.stdout.splitlines() if line.endswith(" installed")}
    return [p for p in PACKAGES if p not in installed]


def ensure_packages() -> None:
    """Install the Debian packages the engine needs (root only)."""
    if not shutil.which("dpkg-query"):
        raise Unavailable("not a Debian system: the compose test installs podman and docker-compose with apt-get")
    missing = missing_packages()
    if not missing:
        return
    if os.geteuid() != 0:
        raise Unavailable(f"{' '.join(missing)} not installed and this is not root: "
                          f"sudo apt-get install {' '.join(missing)} (or run make test-docker as root)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"],
                ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing]):
        done = _run(cmd, timeout=900, env=env)
        if done.returncode != 0:
            raise Unavailable(f"{' '.join(cmd[:2])} failed: {(done.stdout + done.stderr).strip()[-600:]}")


def podman_env() -> dict[str, str]:
    return dict(os.environ, CONTAINERS_CONF=str(CONTAINERS_CONF))


def podman(*args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
    done = _run(["podman", *args], timeout=timeout, env=podman_env())
    if check and done.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args)} failed ({done.returncode}): {(done.stdout + done.stderr)[-1500:]}")
    return done


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM when the process that started it dies (a killed test)."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@contextmanager
def docker_api():
    """`podman system service` on a private socket: yields the DOCKER_HOST value; stopped when the block ends."""
    folder = Path(tempfile.mkdtemp(prefix="streamlab-podman-"))
    sock = folder / "podman.sock"
    log = open(folder / "service.log", "wb")
    proc = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{sock}"], env=podman_env(),
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=_die_with_parent)
    try:
        host = f"unix://{sock}"
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise Unavailable(f"podman system service exited: {(folder / 'service.log').read_text()[-800:]}")
            if sock.exists() and _run(["docker", "version"], timeout=30,
                                      env=dict(os.environ, DOCKER_HOST=host)).returncode == 0:
                break
            if time.monotonic() > deadline:
                raise Unavailable("podman system service did not answer the Docker API within 30 s")
            time.sleep(0.3)
        yield host
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except OSError:
            pass
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def check_engine() -> None:
    """Raise Unavailable when podman cannot run a container here (no overlay, no namespaces...)."""
    done = podman("info", "--format", "{{.Host.OCIRuntime.Name}}", check=False, timeout=60)
    if done.returncode != 0:
        raise Unavailable(f"podman cannot run here: {(done.stdout + done.stderr).strip()[-600:]}")


# ------------------------------------------------------------------------------------------ the base images

def base_recipe() -> str:
    return (f"debootstrap --variant=minbase --include={','.join(BASE_PACKAGES)} bookworm {MIRROR}; "
            "without apt's caches")


def base_image() -> str:
    """The bookworm + Python 3.11 base (a python:3.11-slim-bookworm stand-in), built once per recipe."""
    tag = f"{BASE_REPO}:{hashlib.sha256(base_recipe().encode()).hexdigest()[:12]}"
    if podman("image", "exists", tag, check=False).returncode == 0:
        return tag
    work = Path(tempfile.mkdtemp(prefix="streamlab-rootfs-", dir="/var/tmp"))
    try:
        rootfs = work / "rootfs"
        done = _run(["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", "bookworm",
                     str(rootfs), MIRROR], timeout=900)
        if done.returncode != 0:
            raise RuntimeError(f"debootstrap failed: {(done.stdout + done.stderr)[-1500:]}")
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for item in (rootfs / cache).glob("*"):
                if item.is_file():
                    item.unlink()
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(["podman", "import", "--change", 'CMD ["/bin/bash"]', "-", tag],
                                  stdin=tar.stdout, capture_output=True, text=True, env=podman_env(), timeout=600)
        tar.stdout.close()
        tar.wait()
        if imported.returncode != 0:
            raise RuntimeError(f"podman import failed: {imported.stderr[-1500:]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tag


def _jars_module():
    try:
        from streamlab.lab import jars
    except ImportError:  # before the package's reorganisation
        from streamlab.lab import jars
    return jars


def kafka_version() -> str:
    return _jars_module().KAFKA_VERSION


def kafka_jars() -> list[Path]:
    """The native broker's jars (`python -m streamlab jars --only broker`) and Kafka's tools for the CLI scripts."""
    jars = _jars_module()
    done = _run([str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv").is_dir() else "python3",
                 "-m", "streamlab", "jars", "--only", "broker"], timeout=900, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"python -m streamlab jars --only broker failed: {done.stderr[-1500:]}")
    broker = jars.broker_bundle().jars()
    tools = jars.resolve(jars.Bundle("kafka-tools", jars.KAFKA_VERSION,
                                     (("org.apache.kafka", "kafka-tools", jars.KAFKA_VERSION),)))
    chosen = {jars._artifact(p.name): p for p in tools}
    chosen.update({jars._artifact(p.name): p for p in broker})  # the broker's own versions win
    return sorted(chosen.values())


def kafka_image(base: str) -> str:
    """Build the apache/kafka stand-in under the official name the compose file uses (layer-cached)."""
    tag = f"docker.io/apache/kafka:{kafka_version()}"
    context = Path(tempfile.mkdtemp(prefix="streamlab-kafka-image-"))
    try:
        shutil.copytree(HERE / "kafka", context, dirs_exist_ok=True)
        (context / "libs").mkdir()
        for jar in kafka_jars():
            os.link(jar, context / "libs" / jar.name) if jar.stat().st_dev == context.stat().st_dev \
                else shutil.copy2(jar, context / "libs" / jar.name)
        podman("build", "--build-arg", f"base_image={base}", "-t", tag, str(context), timeout=1200)
    finally:
        shutil.rmtree(context, ignore_errors=True)
    return tag


# ------------------------------------------------------------------------------------------ the compose stack

def course_copy(dest: Path) -> Path:
    """The course's files (tracked, and new ones git does not ignore) copied to `dest`, owned by the lab's user.

    The lab runs as uid 1000 and bind mounts keep host uids: the container's user must own what it writes. A copy
    also keeps the test apart from edits made in the working tree while it runs.
    """
    listed = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, timeout=60)
    for name in filter(None, listed.stdout.split("\0")):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    ca = os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE")
    if ca and Path(ca).is_file():
        # The registries here are reached through a TLS-inspecting proxy: docker/ca/ is the Dockerfile's place
        # for such a CA (used by the build stage only, never left in the image).
        shutil.copy2(ca, dest / "docker" / "ca" / "host-ca.crt")
    for path in [dest, *dest.rglob("*")]:
        os.lchown(path, LAB_UID, LAB_UID)
    return dest


@dataclass
class Stack:
    """docker-compose on a copy of the course, under the project name streamlab-test."""

    folder: Path
    docker_host: str
    env: dict = field(default_factory=dict)
    files: tuple = ("docker-compose.yml", "docker-compose.podman.yml")
    project: str = PROJECT

    def environ(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_TOKEN", "DOCKER_BUILDKIT")}
        env.update(DOCKER_HOST=self.docker_host, COMPOSE_DOCKER_CLI_BUILD="0", DOCKER_BUILDKIT="0",
                   COMPOSE_PROJECT_NAME=self.project, **self.env)
        env.update(extra)
        return env

    def compose(self, *args: str, timeout: float = 600, check: bool = True, env: dict | None = None,
                ) -> subprocess.CompletedProcess:
        cmd = ["docker-compose"] + [a for f in self.files for a in ("-f", f)]
        done = _run([*cmd, *args], timeout=timeout, cwd=self.folder, env=env or self.environ())
        if check and done.returncode != 0:
            raise RuntimeError(f"docker-compose {' '.join(args)} failed ({done.returncode}):\n"
                               f"{(done.stdout + done.stderr)[-3000:]}")
        return done

    def exec(self, service: str, *cmd: str, timeout: float = 600, user: str | None = None,
             ) -> subprocess.CompletedProcess:
        return self.compose("exec", "-T", *(["--user", user] if user else []), service, *cmd,
                            timeout=timeout, check=False)

    def containers(self) -> dict[str, str]:
        """{service: container id} of this project's containers, running or not."""
        done = podman("ps", "-a", "--filter", f"label=com.docker.compose.project={self.project}",
                      "--format", "{{.ID}} {{.Labels}}", check=False)
        found = {}
        for line in done.stdout.splitlines():
            cid, _, labels = line.partition(" ")
            for part in labels.strip("map[]").split():
                key, _, value = part.partition(":")
                if key == "com.docker.compose.service":
                    found[value] = cid
        return found

    def health(self, service: str) -> str:
        cid = self.containers().get(service)
        if not cid:
            return "missing"
        done = podman("inspect", "--format", "{{.State.Health.Status}}", cid, check=False)
        return done.stdout.strip() or "none"

    def up(self, timeout: float = 300) -> float:
        """`docker-compose up -d`, driving the health checks meanwhile; seconds until both services are healthy."""
        started = time.monotonic()
        env = self.environ()
        cmd = ["docker-compose"] + [a for f in self.files for a in ("-f", f)] + ["up", "-d"]
        proc = subprocess.Popen(cmd, cwd=self.folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True)
        output: list[str] = []
        reader = threading.Thread(target=lambda: output.extend(proc.stdout), daemon=True)
        reader.start()
        try:
            while True:
                for cid in self.containers().values():
                    podman("healthcheck", "run", cid, check=False, timeout=60)
                states = {s: self.health(s) for s in ("kafka", "lab")}
                if proc.poll() is not None and proc.returncode != 0:
                    raise RuntimeError(f"docker-compose up failed ({proc.returncode}):\n{''.join(output)[-3000:]}")
                if proc.poll() == 0 and all(v == "healthy" for v in states.values()):
                    return time.monotonic() - started
                if time.monotonic() - started > timeout:
                    raise RuntimeError(f"not healthy within {timeout:.0f} s: {states}\n{''.join(output)[-2000:]}\n"
                                       f"{self.logs()[-3000:]}")
                time.sleep(2)
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(30)
            reader.join(5)

    def wait_healthy(self, service: str, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while self.health(service) != "healthy":
            if time.monotonic() > deadline:
                raise RuntimeError(f"{service} not healthy within {timeout:.0f} s: {self.logs()[-3000:]}")
            cid = self.containers().get(service)
            if cid:
                podman("healthcheck", "run", cid, check=False, timeout=60)
            time.sleep(2)

    def logs(self) -> str:
        return self.compose("logs", "--no-color", "--tail", "60", check=False, timeout=60).stdout

    def down(self) -> None:
        self.compose("down", "-v", "--remove-orphans", "-t", "10", check=False, timeout=300)

    def leftovers(self) -> list[str]:
        """Whatever of this project is still there: containers, networks, volumes."""
        found = [f"container {c}" for c in self.containers().values()]
        for kind in ("network", "volume"):
            done = podman(kind, "ls", "--format", "{{.Name}}", check=False)
            found += [f"{kind} {n}" for n in done.stdout.split() if n.startswith(f"{self.project}_")]
        return found


def image_size(tag: str) -> int:
    done = podman("image", "inspect", "--format", "{{.Size}}", tag)
    return int(done.stdout.strip())


def image_layers(tag: str) -> list[str]:
    done = podman("image", "inspect", "--format", "{{json .RootFS.Layers}}", tag)
    return json.loads(done.stdout)


def processes_of(container_ids: list[str]) -> list[str]:
    """Processes still running that belong to these containers (their cgroup, or conmon naming them)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            cgroup = Path(f"/proc/{proc.pid}/cgroup").read_text()
        except OSError:
            continue
        text = cgroup + " " + " ".join(proc.info["cmdline"] or [])
        if any(cid[:12] in text for cid in container_ids):
            found.append(f"{proc.pid} {' '.join(proc.info['cmdline'] or [])[:160]}")
    return found


def stop_exec_leftovers(project: str = PROJECT) -> None:
    """podman 4.3 leaves a conmon per `exec` for 300 s after it ends; these tests started them, so they stop them."""
    import psutil

    stopping = []
    for proc in psutil.process_iter(["pid", "name", "cmdline"]):
        cmd = proc.info["cmdline"] or []
        if proc.info["name"] == "conmon" and "--exec" in cmd and any(project in c for c in cmd):
            try:
                proc.terminate()
                stopping.append(proc)
            except psutil.Error:
                pass
    psutil.wait_procs(stopping, timeout=10)
