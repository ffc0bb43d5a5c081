"""The compose lab, built and run on a real container engine: podman serving the Docker API, driven by Debian's
docker-compose 1.29, exactly as a learner runs `docker compose up --build`.

No image registry is reachable here, so the two images docker-compose.yml starts from are made locally
(tests/docker/engine.py): a debootstrap bookworm base with Python 3.11 for the lab's Dockerfile (its
`python_image`, set through PYTHON_IMAGE), and a stand-in for apache/kafka built from the native broker's Maven
jars (tests/docker/kafka/). The compose file itself runs unchanged, plus docker-compose.podman.yml.

One stack serves the whole module, on a copy of the course owned by the lab's uid, under the project name
streamlab-test, with the host ports 18888 (lab), 19094 (Kafka) and 14040 (Spark's UI). `make test-docker` runs it;
without root or Debian it skips saying why, and under CI=true it fails instead.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

# No packages here, so both are found by path, also when make bench imports this file (tests/docker/measure.py)
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
import engine  # noqa: E402  (tests/docker/engine.py)
from labrun import DEMO_SECONDS, DEMO_SECONDS_ENV  # noqa: E402  (tests/labrun.py)

pytestmark = pytest.mark.timeout(3600)

ROOT = engine.ROOT
RESULTS = ROOT / "test-results" / "docker"
TOKEN = secrets.token_hex(16)
PORTS = {"LAB_PORT": "18888", "BROKER_PORT": "19094", "SPARK_UI_PORT": "14040"}
LAB = f"http://127.0.0.1:{PORTS['LAB_PORT']}"
LAB_IMAGE = "streamlab-lab:local"


def _unavailable(why: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"the compose test cannot run in CI: {why}", pytrace=False)
    pytest.skip(f"the compose test needs podman from Debian: {why}")


@pytest.fixture(scope="module")
def docker_host():
    """The Docker API (podman system service), stopped when the module ends."""
    try:
        engine.ensure_packages()
        engine.check_engine()
        with engine.docker_api() as host:
            yield host
    except engine.Unavailable as exc:
        _unavailable(str(exc))


@pytest.fixture(scope="module")
def images(docker_host):
    base = engine.base_image()
    return base, engine.kafka_image(base)


@pytest.fixture(scope="module")
def stack(docker_host, images):
    """The lab, built with `docker-compose build` and started with `docker-compose up -d`, both healthy."""
    folder = Path(tempfile.mkdtemp(prefix="streamlab-compose-"))
    try:
        engine.course_copy(folder)
        lab = engine.Stack(folder, docker_host, env={**PORTS, "JUPYTER_TOKEN": TOKEN, "PYTHON_IMAGE": images[0]})
        lab.down()  # what a killed earlier run may have left
        lab.compose("build", "lab", timeout=2400)
        lab.image_layers = engine.image_layers(LAB_IMAGE)
        lab.up_seconds = lab.up()
        yield lab
    finally:
        if "lab" in locals():
            lab.down()
            engine.stop_exec_leftovers()
        shutil.rmtree(folder, ignore_errors=True)


def _inspect(cid: str) -> dict:
    return json.loads(engine.podman("inspect", cid).stdout)[0]


# ------------------------------------------------------------------------------------------ the images

def test_the_base_image_is_bookworm_with_python_311(docker_host, images):
    done = engine.podman("run", "--rm", images[0], "bash", "-c",
                         ". /etc/os-release; echo $VERSION_CODENAME; python3 -c 'import sys, venv, ensurepip; "
                         "print(sys.version_info[:2])'; python3 -m pip --version")
    codename, version, pip = done.stdout.splitlines()[:3]
    assert codename == "bookworm" and version == "(3, 11)", done.stdout
    assert pip.startswith("pip "), pip


def test_kafka_stand_in_turns_kafka_variables_into_server_properties(docker_host, images):
    """The official image's rule: `_` -> `.`, `__` -> `_`, `___` -> `-`; the scripts' own variables are not settings."""
    done = engine.podman("run", "--rm", "-e", "KAFKA_LOG_DIRS=/tmp/x", "-e", "KAFKA_A_B__C___D=1",
                         "-e", "KAFKA_HEAP_OPTS=-Xmx1g", "-e", "OTHER=2", images[1], "/etc/kafka/docker/run", "--print")
    assert done.stdout.splitlines() == ["a.b_c-d=1", "log.dirs=/tmp/x"], done.stdout
    tools = engine.podman("run", "--rm", images[1], "ls", "/opt/kafka/bin").stdout.split()
    assert {"kafka-broker-api-versions.sh", "kafka-server-start.sh", "kafka-storage.sh", "kafka-topics.sh"} <= set(tools)


# ------------------------------------------------------------------------------------------ the running stack

def test_both_services_are_healthy_with_ports_on_127_0_0_1_only(stack):
    containers = stack.containers()
    assert set(containers) == {"kafka", "lab"}, containers
    published = {}
    for service, cid in containers.items():
        assert stack.health(service) == "healthy", f"{service}: {stack.health(service)}"
        for port, bindings in (_inspect(cid)["NetworkSettings"]["Ports"] or {}).items():
            for binding in bindings or []:
                published[binding["HostPort"]] = (service, port, binding["HostIp"])
    assert published == {"19094": ("kafka", "9094/tcp", "127.0.0.1"), "18888": ("lab", "8888/tcp", "127.0.0.1"),
                         "14040": ("lab", "4040/tcp", "127.0.0.1")}, published
    server = stack.exec("kafka", "cat", "/opt/kafka/config/server.properties").stdout
    assert "advertised.listeners=INTERNAL://kafka:9092,EXTERNAL://localhost:19094" in server, server
    status = urllib.request.urlopen(urllib.request.Request(f"{LAB}/api/status",
                                                           headers={"Authorization": f"token {TOKEN}"}), timeout=10)
    assert status.status == 200
    try:
        urllib.request.urlopen(f"{LAB}/api/contents", timeout=10)
        pytest.fail("JupyterLab answered without its token")
    except urllib.error.HTTPError as err:
        assert err.code == 403


def test_the_host_reaches_kafka_through_the_external_listener(stack):
    """kafka-python on the host: bootstrap 127.0.0.1:19094, then the advertised localhost:19094 for the data."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    bootstrap = f"127.0.0.1:{PORTS['BROKER_PORT']}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20_000)
    admin.create_topics([NewTopic("from-the-host", 1, 1)])
    try:
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        for i in range(5):
            producer.send("from-the-host", f"m{i}".encode())
        producer.flush(20)
        producer.close()
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=10_000)
        consumer.assign([TopicPartition("from-the-host", 0)])
        consumer.seek_to_beginning()
        values = [m.value for _, m in zip(range(5), consumer)]
        consumer.close()
        assert values == [f"m{i}".encode() for i in range(5)]
        # The lab's side: the same topic through the internal listener, with Kafka's own CLI in the broker.
        listed = stack.exec("kafka", "/opt/kafka/bin/kafka-topics.sh", "--bootstrap-server", "kafka:9092", "--list")
        assert "from-the-host" in listed.stdout.split(), listed.stdout + listed.stderr
    finally:
        admin.delete_topics(["from-the-host"])
        admin.close()


RUN_NOTEBOOKS = r"""
import json, sys, tempfile, time
import nbformat
from nbclient import NotebookClient
report = {}
for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        NotebookClient(nb, timeout=900, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": tmp}}).execute()
    errors = [o.get("ename", "") + ": " + o.get("evalue", "")[:300] for c in nb.cells if c.cell_type == "code"
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") + "".join(str(v) for v in o.get("data", {}).values())
                   for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    report[path] = {"seconds": time.monotonic() - started, "errors": errors, "text": text[:20000]}
print(json.dumps(report))
"""


def test_setup_runs_top_to_bottom_in_the_container(stack):
    """00-setup as Restart & Run All, in the lab container against the Kafka container, with the connector engine;
    meanwhile Spark's UI answers on the host's published port. 00 is the module whose point is the environment (its
    live demo included); every other module's Run All is proven on the host (tests/notebooks/test_modules.py), and
    `make bench` times module 4 here against the host (tests/docker/measure.py)."""
    ui_seen: list[str] = []
    done_event = threading.Event()

    def watch_ui():
        while not done_event.wait(2):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{PORTS['SPARK_UI_PORT']}/jobs/", timeout=5) as r:
                    ui_seen.append(r.read(4000).decode(errors="replace"))
                    return
            except (urllib.error.URLError, OSError):
                pass

    watcher = threading.Thread(target=watch_ui, daemon=True)
    watcher.start()
    try:
        # demos end DEMO_SECONDS after their script, as in every learner run of the tests (tests/labrun.py)
        done = stack.exec("lab", "env", f"{DEMO_SECONDS_ENV}={DEMO_SECONDS}", "python", "-c", RUN_NOTEBOOKS,
                          "notebooks/00-setup/00-setup.ipynb", timeout=1800)
    finally:
        done_event.set()
        watcher.join(10)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    for path, result in report.items():
        assert not result["errors"], f"{path} raised in the container: {result['errors']}"
    setup = report["notebooks/00-setup/00-setup.ipynb"]["text"]
    assert "kafka:9092" in setup, f"the setup cell does not name the compose broker:\n{setup[:2000]}"
    assert re.search(r"connector", setup, re.I) and "offline" not in setup.split("kafka:9092")[0][-400:].lower(), (
        f"the setup cell does not report Spark's connector:\n{setup[:2000]}")
    (RESULTS).mkdir(parents=True, exist_ok=True)
    (RESULTS / "run-all-seconds.json").write_text(json.dumps({p: r["seconds"] for p, r in report.items()}))
    assert ui_seen and "Spark" in ui_seen[0], "Spark's UI did not answer on 127.0.0.1:14040 while notebooks ran"


def _score(output: str) -> tuple[int, int]:
    match = re.search(r"^score: (\d+) / (\d+)$", output, re.M)
    assert match, f"no score line in the grader's output:\n{output[-3000:]}"
    return int(match.group(1)), int(match.group(2))


FIXTURE = "tests/fixtures/solutions"  # the grader's small assignment (fx-basics: 6 points, one read of the broker)


def test_grader_check_in_the_container(stack):
    """A solution earns full marks and the untouched student version 0, sandboxed when the container allows it,
    two learners checking at once. The grader's small fixture assignment, which reads the container's Kafka: this
    proves the check's plumbing in the container; every module's own checks are graded in
    tests/notebooks/test_modules.py, and 00-setup runs for real here above and in the browser below."""
    why = stack.exec("lab", "python", "-c", "from grader import sandbox; print(sandbox.available())").stdout.strip()
    from concurrent.futures import ThreadPoolExecutor

    released = stack.exec("lab", "python", "-m", "grader", "--source", FIXTURE, "release", "--out", "/tmp/fx-release",
                          timeout=300)
    assert released.returncode == 0, (released.stdout + released.stderr)[-3000:]
    with ThreadPoolExecutor(2) as both:  # two learners checking at once: each run its own kernel and results
        solution, student = both.map(lambda who: stack.exec(
            "lab", "python", "-m", "grader", "--source", FIXTURE, "check", f"{who[0]}/fx-basics/fx-basics.ipynb",
            "--results", f"/tmp/grader-{who[1]}", timeout=900), [(FIXTURE, "solution"), ("/tmp/fx-release", "student")])
    assert solution.returncode == 0 and student.returncode == 0, (solution.stdout + solution.stderr)[-3000:] + (
        student.stdout + student.stderr)[-3000:]
    got, total = _score(solution.stdout)
    assert total > 0 and got == total, solution.stdout[-3000:]
    assert _score(student.stdout) == (0, total), student.stdout[-3000:]
    if why == "None":  # user namespaces work in the container (docker-compose.podman.yml unmasks /proc)
        assert "user namespaces" not in solution.stdout + solution.stderr
    else:
        assert "user namespaces" in solution.stdout + solution.stderr, (
            f"the sandbox is unavailable ({why}) but the grader did not say so")
    (RESULTS).mkdir(parents=True, exist_ok=True)
    (RESULTS / "sandbox.txt").write_text(f"sandbox unavailable: {why}\n")


def test_jupyterlab_from_the_container_in_a_browser(stack):
    """Chromium on the host opens 00-setup in the container's JupyterLab through the published port with the token,
    the notebook's kernel starts in the container (its status reaches Idle over the kernel's websocket), and its
    cells run from the page up to the live demo, whose readout counts batches read from the container's Kafka."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        if os.environ.get("CI") == "true" or os.geteuid() == 0:
            pytest.fail("Chromium is missing: `make test` installs Debian's chromium package")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    RESULTS.mkdir(parents=True, exist_ok=True)
    shot = RESULTS / "lab-in-container.png"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True,
                                     args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                           "--disable-background-networking", "--disable-component-update"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{LAB}/lab/tree/00-setup/00-setup.ipynb?token={TOKEN}")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
            page.wait_for_function("() => /Python 3 \\(ipykernel\\) \\| Idle/.test(document.body.innerText)",
                                   timeout=120_000)
            text = page.locator(".jp-Notebook").inner_text()
            page.screenshot(path=str(shot))
            # the learner's first steps, from the page's own menu (this lab does not expose its app to scripts)
            page.locator(".jp-Notebook .jp-Cell").first.click()
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            readout = "(document.querySelector('.widget-html-content code') || {}).textContent"
            page.wait_for_function(f"() => / · batches [1-9]/.test({readout} || '')", timeout=240_000)
            chart = page.locator(".widget-image").first
            chart.scroll_into_view_if_needed()
            drawn = chart.get_attribute("src")  # then one more drawing, with these batches on it
            page.wait_for_function("(src) => document.querySelector('.widget-image').getAttribute('src') !== src",
                                   arg=drawn, timeout=30_000)
            page.screenshot(path=str(RESULTS / "demo-in-container.png"))
            live = page.evaluate(f"() => {readout}")
            page.locator("button", has_text="stop demo").first.click()
            page.wait_for_function(f"() => /ended/.test({readout} || '')", timeout=60_000)
        except Exception:
            page.screenshot(path=str(shot), full_page=True)
            raise
        finally:
            browser.close()
    assert "streamlab.setup()" in text, text[:2000]
    assert "producer 800 rec/s" in live, live
    logs = stack.compose("logs", "--no-color", "lab", check=False, timeout=60).stdout
    assert "Kernel started" in logs, logs[-2000:]


def test_the_learner_lab_in_the_container_has_no_instructor_panels(stack):
    """As in `make lab`: nbgrader's formgrader and assignment panels are off, JupyterLab and widgets on."""
    server = stack.exec("lab", "jupyter", "server", "extension", "list")
    lab = stack.exec("lab", "jupyter", "labextension", "list")
    listed = re.sub(r"\x1b\[[0-9;]*m", "", server.stdout + server.stderr + lab.stdout + lab.stderr)
    assert re.search(r"nbgrader\.server_extensions\.formgrader disabled", listed), listed[-3000:]
    assert re.search(r"@jupyter/nbgrader v\S+ disabled", listed), listed[-3000:]
    assert re.search(r"@jupyter-widgets/jupyterlab-manager v\S+ enabled", listed), listed[-3000:]


def test_a_notebook_edited_on_the_host_shows_in_the_container(stack):
    note = stack.folder / "notebooks" / "00-setup" / "edited-on-the-host.txt"
    note.write_text("edited on the host\n")
    os.chown(note, engine.LAB_UID, engine.LAB_UID)
    try:
        seen = stack.exec("lab", "cat", "notebooks/00-setup/edited-on-the-host.txt")
        assert seen.stdout == "edited on the host\n", seen.stdout + seen.stderr
        back = stack.exec("lab", "bash", "-c", "echo saved in the lab > notebooks/00-setup/saved-in-the-lab.txt")
        assert back.returncode == 0, back.stderr
        saved = stack.folder / "notebooks" / "00-setup" / "saved-in-the-lab.txt"
        assert saved.read_text() == "saved in the lab\n" and saved.stat().st_uid == engine.LAB_UID
    finally:
        note.unlink(missing_ok=True)
        (stack.folder / "notebooks" / "00-setup" / "saved-in-the-lab.txt").unlink(missing_ok=True)


def test_the_ivy_cache_and_jar_folder_are_the_lab_users(stack):
    done = stack.exec("lab", "bash", "-c", "id -u; touch ~/.ivy2/probe && rm ~/.ivy2/probe && "
                      "touch $STREAMLAB_HOME/probe && rm $STREAMLAB_HOME/probe && echo writable")
    assert done.stdout.split() == [str(engine.LAB_UID), "writable"], done.stdout + done.stderr


# ------------------------------------------------------------------------------------------ what learners hit

def test_without_a_token_compose_refuses_to_start(stack):
    env = stack.environ()
    env.pop("JUPYTER_TOKEN")
    done = stack.compose("up", "--no-start", env=env, check=False, timeout=120)
    assert done.returncode != 0 and "set JUPYTER_TOKEN" in done.stdout + done.stderr, done.stdout + done.stderr


def test_a_taken_lab_port_is_named(stack):
    """Port 8888 taken on the host (here a free port we hold): compose names the address in its error."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        other = engine.Stack(stack.folder, stack.docker_host, project="streamlab-test-port",
                             env={**stack.env, "LAB_PORT": str(port), "BROKER_PORT": "19095",
                                  "SPARK_UI_PORT": "14041"})
        try:
            done = other.compose("up", "-d", "--no-deps", "lab", check=False, timeout=180)
        finally:
            other.down()
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert f"127.0.0.1:{port}" in output and "address already in use" in output, output[-2000:]
    assert other.leftovers() == []


def test_an_unwritable_course_folder_is_refused_with_the_fix(stack):
    """The working tree owned by another uid, or mounted read-only: start-lab stops and says what to do."""
    root_owned = Path(tempfile.mkdtemp(prefix="streamlab-rootowned-"))
    root_owned.chmod(0o755)  # readable by the lab's user, as a working tree is; only not writable
    try:
        for mount in (f"{root_owned}:/course", f"{stack.folder}:/course:ro"):
            done = engine.podman("run", "--rm", "-e", "JUPYTER_TOKEN=x", "-v", mount, "-w", "/course",
                                 LAB_IMAGE, check=False, timeout=120)
            assert done.returncode == 65, done.stdout + done.stderr
            assert "cannot be written by the lab's user (uid 1000)" in done.stderr, done.stderr
            assert "LAB_UID=$(id -u) docker compose up --build" in done.stderr, done.stderr
        assert "mounted read-only" in done.stderr, done.stderr
    finally:
        shutil.rmtree(root_owned, ignore_errors=True)


def test_with_kafka_down_the_lab_says_so(stack):
    """The broker stopped: the notebooks' setup names KAFKA_BOOTSTRAP and how to start it; back up, it works again."""
    stack.compose("stop", "kafka", timeout=120)
    try:
        done = stack.exec("lab", "python", "-c", "import streamlab; streamlab.setup()", timeout=300)
        output = done.stdout + done.stderr
        assert done.returncode != 0, output
        # a stopped service leaves the network's DNS (netavark here, Docker's embedded DNS alike): its name is unknown
        assert ("KAFKA_BOOTSTRAP=kafka:9092 but nothing answers at kafka:9092" in output or
                "KAFKA_BOOTSTRAP=kafka:9092 but the host 'kafka' is not known (a typo, or a container that is not "
                "running)" in output), output[-2000:]
        assert "docker compose up -d kafka" in output, output[-2000:]
    finally:
        stack.compose("start", "kafka", timeout=120)
        stack.wait_healthy("kafka")


def test_a_rebuild_after_a_notebook_edit_reuses_the_dependency_layers(stack):
    path = stack.folder / "notebooks" / "00-setup" / "00-setup.ipynb"
    nb = json.loads(path.read_text())
    nb["cells"][0]["source"] = "".join(nb["cells"][0]["source"]) + "\n<!-- edited for the rebuild test -->"
    path.write_text(json.dumps(nb, indent=1))
    started = time.monotonic()
    stack.compose("build", "lab", timeout=1200)
    seconds = time.monotonic() - started
    after = engine.image_layers(LAB_IMAGE)
    before = stack.image_layers
    assert len(after) == len(before), (before, after)
    assert after[:-1] == before[:-1], "a notebook edit rebuilt more than the course layer"
    assert after[-1] != before[-1], "the edited notebook is not in the rebuilt image"
    (RESULTS).mkdir(parents=True, exist_ok=True)
    (RESULTS / "warm-rebuild-seconds.txt").write_text(f"{seconds:.1f}\n")


def test_down_leaves_nothing_behind(stack):
    ids = list(stack.containers().values())
    started = time.monotonic()
    stack.down()
    seconds = time.monotonic() - started
    assert stack.leftovers() == [], stack.leftovers()
    engine.stop_exec_leftovers()
    assert engine.processes_of(ids) == [], engine.processes_of(ids)
    assert seconds < 60, f"docker-compose down took {seconds:.0f} s"
