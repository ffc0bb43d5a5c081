"""A simulated workshop: the hub with five learners, each signing up, approved by the instructor, logging in and
starting a server through the hub's HTTP API; two of them run 00-setup's first live read in their own kernel on the
room's SCRAM broker; each hands in the grader's small fixture assignment (tests/fixtures/solutions/fx-basics: two
right, two wrong, one untouched), which the instructor grades as a room, regrades for one learner and exports; one
learner hands in 00-setup too, regraded for real on the hub (the course's own checks of every module are graded in
tests/notebooks/test_modules.py). The scores match what each learner handed in.

Lighter than a real room on purpose (budget: a few minutes on 2 cores): three of the five kernels never start
Spark, and the graded run is the grader's, on the machine's lab broker, as in a real workshop.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path

import pytest

from support import guardian
from streamlab.lab.broker import free_port
from workshop import instructor
from workshop.__main__ import approve, start, stop
from workshop.client import HubError, Learner
from workshop.hub import Settings

pytestmark = [pytest.mark.broker, pytest.mark.spark, pytest.mark.timeout(2400)]  # minutes on a machine shared by many runs

# 00-setup, handed in by ada (its one real grading here), and the fixture every learner hands in
def _00_as_ada_answers_it() -> tuple[dict[str, str], int]:
    """00-setup answered right as ada writes it, and its full marks: each quiz key's option under the letter her own
    order shows it (streamlab.course.quiz: each learner sees a quiz's options in an order drawn from her seed)."""
    import nbformat

    from grader import lint
    from grader.course import SOURCE
    from streamlab.course import quiz
    from streamlab.course.variants import Variant, student_seed

    nb = nbformat.read(SOURCE / "00-setup" / "00-setup.ipynb", as_version=4)
    keys, written = lint.lettered(nb), lint.written_options(nb)
    drawn = Variant("00-setup", student_seed("ada", "00-setup"), {})
    answers = {f"q{n}_answer": f'q{n} = "{quiz.seen(f"q{n}", key, "".join(written[n]), drawn=drawn)}"'
               for n, key in keys.items()}
    top = sum(c.metadata["nbgrader"].get("points", 0) for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade"))
    return {"ex1_cap": "cap = -(-ex1_records // ex1_batches)", **answers}, top


RIGHT_00, TOP_00 = _00_as_ada_answers_it()
FIXTURE, FIXTURES = "fx-basics", Path(__file__).resolve().parents[1] / "fixtures" / "solutions"
RIGHT = {"q1_answer": 'q1 = "b"', "q2_answer": "q2 = 250"}
WRONG = {"q1_answer": 'q1 = "c"', "q2_answer": "q2 = 1000"}
HANDED_IN = {"ada": RIGHT, "bob": WRONG, "cy": RIGHT, "dee": WRONG, "eve": None}


@pytest.fixture(scope="module")
def hub(bootstrap):
    """A workshop in a temporary folder, on free ports; everything it started is stopped afterwards."""
    root = Path(tempfile.mkdtemp(prefix="streamlab-workshop-"))
    settings = Settings(root=str(root), hub_port=free_port(), proxy_api_port=free_port(),
                        hub_api_port=free_port(), kafka_port=free_port(), controller_port=free_port(),
                        instructor="teacher", mem_limit="2G", spark_cores=1, spark_memory="512m")
    old = os.environ.get("STREAMLAB_WORKSHOP_ROOT")
    os.environ["STREAMLAB_WORKSHOP_ROOT"] = str(root)
    settings.save()
    # A run killed by a time-out runs no teardown: this watcher stops the workshop when the test process is gone.
    watching = guardian(STOP_WORKSHOP, root)
    try:
        start(settings)
        yield settings
    finally:
        stopped = stop(settings, remove_accounts=True)
        print(f"stopped: {', '.join(stopped)}")
        if old is None:
            os.environ.pop("STREAMLAB_WORKSHOP_ROOT", None)
        else:
            os.environ["STREAMLAB_WORKSHOP_ROOT"] = old
        shutil.rmtree(root, ignore_errors=True)
        watching.kill()
        watching.wait()


STOP_WORKSHOP = """
root, = args
if os.path.isdir(root):
    from workshop.__main__ import main
    main(["--root", root, "stop", "--remove-accounts"])
    shutil.rmtree(root, ignore_errors=True)
"""


@pytest.fixture(scope="module")
def room(hub):
    """The five learners, signed up, approved, logged in, each with a running server."""
    url = f"http://127.0.0.1:{hub.hub_port}"
    learners = {name: Learner(url, name, f"{name}-password-1") for name in HANDED_IN}
    for learner in learners.values():
        learner.sign_up()
    with pytest.raises(HubError, match="not approved"):
        learners["ada"].log_in()  # the instructor has not approved anybody yet
    assert approve(hub, list(learners)) == list(learners)
    errors = []

    def come_in(learner):
        try:
            learner.log_in()
            learner.start_server()
        except Exception as exc:  # reported below, with the learner's name
            errors.append(f"{learner.name}: {exc}")

    threads = [threading.Thread(target=come_in, args=(learner,)) for learner in learners.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    assert not errors, errors
    return learners


def test_each_learner_gets_the_student_notebooks_and_their_own_credentials(hub, room):
    for name, learner in room.items():
        # each route leads to the learner's own server (five servers started at once get five ports)
        assert learner.api("GET", f"{learner.server}/api/me").json()["identity"]["username"] == name
        folders = {c["name"] for c in learner.contents("notebooks")["content"]}
        # the modules' folders, copied at first login (not compared with notebooks/ itself: on a shared machine
        # another run may re-release it meanwhile)
        assert "00-setup" in folders and len(folders) >= 5
        assert "solutions" not in {c["name"] for c in learner.contents("")["content"]}
        text = json.dumps(learner.contents("notebooks/00-setup/00-setup.ipynb")["content"])
        assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
        credentials = hub.home(name) / ".streamlab" / "kafka.properties"
        assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
        assert f'username="{name}"' in credentials.read_text()
    with pytest.raises(HubError, match="403|404"):  # a learner's token does not open another learner's server
        room["bob"].api("GET", "/user/ada/api/contents/notebooks")


WALLS_PROBE = """
import json, os, socket
from pathlib import Path

root, repo = Path({root!r}), Path({repo!r})


def connect(port):
    socket.create_connection(("127.0.0.1", port), timeout=5).close()


tries = {{
    "bob's server": lambda: connect({bob_port}),
    "the hub's proxy API": lambda: connect({proxy_api_port}),
    "bob's credentials": lambda: (root / "home" / "bob" / ".streamlab" / "kafka.properties").read_text(),
    "bob's home": lambda: os.listdir(root / "home" / "bob"),
    "the hidden tests": lambda: (repo / "solutions" / "00-setup" / "00-setup.ipynb").read_text(),
    "the test suite": lambda: (repo / "tests" / "conftest.py").read_text(),
    "the git history": lambda: os.listdir(repo / ".git" / "objects"),
    "the hub's cookie secret": lambda: (root / "hub" / "cookie_secret").read_text(),
    "the instructor's token": lambda: (root / "hub" / "instructor.token").read_text(),
    "the room's Kafka data": lambda: os.listdir(root / "kafka"),
    "the course's code, to change it": lambda: open(repo / "streamlab" / "planted.py", "w").close(),
    "her own credentials": lambda: (Path.home() / ".streamlab" / "kafka.properties").read_text(),
    "her own home, to write": lambda: (Path.home() / "notes.txt").write_text("mine"),
}}


def attempt(run):
    try:
        run()
        return "allowed"
    except OSError as exc:
        return type(exc).__name__


def sockets():
    \"\"\"Every listening TCP socket in sight, as (port, whether a process in sight holds it).\"\"\"
    held = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            held.update(os.readlink(f"/proc/{{pid}}/fd/{{fd}}") for fd in os.listdir(f"/proc/{{pid}}/fd"))
        except OSError:
            pass
    return sorted({{(int(line.split()[1].rsplit(":", 1)[1], 16), f"socket:[{{line.split()[9]}}]" in held)
                    for name in ("/proc/net/tcp", "/proc/net/tcp6")
                    for line in open(name).read().splitlines()[1:] if line.split()[3] == "0A"}})


given = [os.environ[name] for name in ("KAFKA_BOOTSTRAP", "JUPYTERHUB_API_URL", "STREAMLAB_PARTITIONS_URL",
                                       "STREAMLAB_CHECK_URL")]
print(json.dumps({{"uid": os.getuid(), "sockets": sockets(), "given": given,
                  **{{what: attempt(run) for what, run in tries.items()}}}}))
"""


def _server_port(hub, name: str) -> int:
    """The machine's port of `name`'s server, as the hub's database keeps it."""
    import sqlite3

    with sqlite3.connect(Path(hub.root) / "hub" / "jupyterhub.sqlite") as db:
        (port,), = db.execute("SELECT servers.port FROM servers JOIN spawners ON spawners.server_id = servers.id "
                              "JOIN users ON spawners.user_id = users.id WHERE users.name = ?", (name,))
    return port


def test_a_learners_server_sees_its_own_home_and_nothing_of_anyone_else(hub, room):
    """Behind its walls (workshop/walls.py), ada's kernel runs as her own account: it reads and writes her
    home and credentials, and cannot read bob's home or credentials, the hidden tests, the hub's secrets or the
    room's Kafka data, nor change the course's code, whatever folder the course's Python lives in. On a network of
    its own (network.py: the red team's P15), it sees no socket but her server's own, and cannot reach bob's server
    or the hub's proxy API (her Kafka, the hub's API, the partitions and the checks services are tried by later
    tests)."""
    from workshop import network
    from workshop.hub import REPO

    if os.geteuid() != 0:
        pytest.skip("learners get accounts and walls of their own only on a hub run as root (CI runs it as root)")
    kernel = room["ada"].kernel()
    try:
        seen = json.loads(kernel.text(WALLS_PROBE.format(root=str(hub.root), repo=str(REPO),
                                                         bob_port=_server_port(hub, "bob"),
                                                         proxy_api_port=hub.proxy_api_port), timeout=120))
    finally:
        kernel.close()
    assert seen.pop("uid") != 0, "ada's kernel runs as root"
    sockets, given = seen.pop("sockets"), network.ports(*seen.pop("given"))
    assert len(given) == 4 and hub.kafka_port in given and hub.hub_api_port in given
    strangers = {port for port, held in sockets if not held}  # the relay's ports: its files are not hers to read
    assert strangers == set(given), f"ada sees listening sockets not hers nor her relay's: {strangers} ({sockets})"
    assert {hub.hub_port, hub.proxy_api_port, _server_port(hub, "bob")}.isdisjoint(p for p, _ in sockets)
    assert seen.pop("her own credentials") == "allowed" and seen.pop("her own home, to write") == "allowed"
    allowed = [what for what, result in seen.items() if result == "allowed"]
    assert not allowed, f"ada's kernel reaches {allowed}: {seen}"
    assert (hub.home("bob") / ".streamlab" / "kafka.properties").is_file()  # there, just not for her
    assert not (REPO / "streamlab" / "planted.py").exists()


def test_two_learners_read_live_on_the_room_broker_each_under_their_own_prefix(hub, room):
    """ada and bob run 00-setup's setup cell and its first capped read in their own kernels, at the same time."""
    outputs, errors = {}, []

    def lesson(name):
        kernel = room[name].kernel()
        try:
            setup = kernel.text("import streamlab\nspark, bootstrap = streamlab.setup()", timeout=600)
            read = kernel.text(
                "from streamlab.lab.producer import produce\n"
                "demo_topic = streamlab.new_topic('setup', partitions=3)\n"
                "produce(demo_topic, 3_000)\n"
                "q = (spark.readStream.format('kafka').option('kafka.bootstrap.servers', bootstrap)\n"
                "     .option('subscribe', demo_topic).option('startingOffsets', 'earliest')\n"
                "     .option('maxOffsetsPerTrigger', 500).load()\n"
                "     .writeStream.format('noop').trigger(availableNow=True).start())\n"
                "q.awaitTermination()\n"
                "print(demo_topic, [p['numInputRows'] for p in q.recentProgress if p['numInputRows']])\n"
                "import os\n"  # the demos' partitions slider: through the hub's service, learners hold no ALTER
                "from streamlab.lab.topics import add_partitions, partition_count\n"
                "add_partitions(demo_topic, 4, bootstrap)\n"
                "print('partitions', partition_count(demo_topic), 'STREAMLAB_PARTITIONS_URL' in os.environ)\n"
                "print(streamlab.cleanup(spark))", timeout=600)
            outputs[name] = (setup, read)
        except Exception as exc:
            errors.append(f"{name}: {exc}")
        finally:
            kernel.close()

    threads = [threading.Thread(target=lesson, args=(n,)) for n in ("ada", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(900)
    assert not errors, errors
    for name, (setup, read) in outputs.items():
        assert f"127.0.0.1:{hub.kafka_port}" in setup and "local[1]" in setup  # the room's broker, one core
        topic, batches = read.splitlines()[0].split(" ", 1)
        assert topic.startswith(f"{name}-setup-")
        assert batches == "[500, 500, 500, 500, 500, 500]"
        assert "partitions 4 True" in read.splitlines(), read


def _hand_in(learner: Learner, answers: dict | None, aid: str = FIXTURE, wrong: dict = WRONG) -> None:
    """Save `aid` in the learner's notebooks/ with `answers` (None: untouched); the fixture is put there first."""
    from grader.course import released

    path = f"notebooks/{aid}/{aid}.ipynb"
    if aid == FIXTURE:  # not in the course's notebooks/: handed to the learner as a new notebook
        learner.api("PUT", f"{learner.server}/api/contents/notebooks/{aid}", json={"type": "directory"})
        if not any(item["name"] == f"{aid}.ipynb" for item in learner.contents(f"notebooks/{aid}")["content"]):
            learner.save_notebook(path, json.loads((released(aid, FIXTURES) / f"{aid}.ipynb").read_text()))
    notebook = learner.contents(path)["content"]
    if answers is None:
        return  # untouched
    for cell in notebook["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in answers:
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            # the released stub, or an earlier wrong answer (a learner fixing their notebook before a regrade)
            cell["source"] = source.replace("# YOUR CODE HERE\npass", answers[gid]).replace(
                wrong.get(gid, "\0"), answers[gid])
    learner.save_notebook(path, notebook)


def test_the_instructor_grades_the_room_regrades_one_and_exports(hub, room):
    for name, learner in room.items():
        _hand_in(learner, HANDED_IN[name])
    results = instructor.grade(hub, FIXTURE, workers=2, source=FIXTURES)
    scores = {r.student: (r.score, r.max_score) for r in results}
    assert all(r.graded and not r.error for r in results), [(r.student, r.error) for r in results]
    assert scores == {"ada": (2, 6), "bob": (0, 6), "cy": (2, 6), "dee": (0, 6), "eve": (0, 6)}
    rows = list(csv.DictReader((Path(hub.root) / "grades" / FIXTURE / "grades.csv").open()))
    assert {r["student"]: r["score"] for r in rows} == {"ada": "2", "bob": "0", "cy": "2", "dee": "0", "eve": "0"}
    for name in room:  # feedback lands in each learner's home, where their lab shows it
        assert (hub.home(name) / "feedback" / FIXTURE / "grade.txt").read_text().startswith(f"{FIXTURE}: ")
        assert room[name].contents(f"feedback/{FIXTURE}/{FIXTURE}.html")["type"] == "file"

    _hand_in(room["bob"], RIGHT)  # bob fixes his notebook and asks for a regrade
    again = instructor.regrade(hub, FIXTURE, "bob", source=FIXTURES)
    assert (again.score, again.max_score) == (2, 6)
    rows = list(csv.DictReader((Path(hub.root) / "grades" / FIXTURE / "grades.csv").open()))
    assert {r["student"]: r["score"] for r in rows} == {"ada": "2", "bob": "2", "cy": "2", "dee": "0", "eve": "0"}

    # A module of the course itself, graded for real on the hub: 00-setup's Run All in ada's notebook.
    _hand_in(room["ada"], RIGHT_00, "00-setup")
    real = instructor.regrade(hub, "00-setup", "ada")
    assert (real.score, real.max_score) == (TOP_00, TOP_00), real.error
    assert (hub.home("ada") / "feedback" / "00-setup" / "grade.txt").read_text().startswith("00-setup: ")

    canvas = list(csv.reader(instructor.export(hub, Path(hub.root) / "canvas.csv", "canvas").open()))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "00-setup", FIXTURE]
    assert canvas[1][-2:] == [str(TOP_00), "6"], canvas[1]
    by_login = {r[3]: r[-2:] for r in canvas[2:]}
    assert by_login["ada"] == [str(TOP_00), "2"] and by_login["dee"] == ["", "0"], by_login
    moodle = list(csv.reader(instructor.export(hub, Path(hub.root) / "moodle.csv", "moodle").open()))
    assert moodle[0] == ["username", "00-setup", FIXTURE] and {r[0]: r[1:] for r in moodle[1:]}["bob"] == ["", "2"]


CHECK = """
import os
from grader.notebook import check
from grader.progress import load
code = check(os.path.expanduser("~/notebooks/{aid}/{aid}.ipynb"))
print("code", code, "progress", load().get("{aid}", {{}}).get("score"))
"""


def test_a_learner_s_check_my_work_is_graded_by_the_hub(hub, room):
    """Her walls hide the hidden tests, so her Check my work asks the hub's checks service (workshop/checks.py),
    which grades her saved 00-setup (handed in right by the test above) and answers the table her laptop would
    print; the score lands in her progress and her feedback folder, never in the instructor's grades.csv. What is
    not a module of the course is refused in one line."""
    grades = (Path(hub.root) / "grades" / "00-setup" / "grades.csv").read_text()
    (hub.home("ada") / "feedback" / "00-setup" / "grade.txt").unlink()
    kernel = room["ada"].kernel()
    try:
        said = kernel.text(CHECK.format(aid="00-setup"), timeout=900)
    finally:
        kernel.close()
    assert f"score: {TOP_00} / {TOP_00}" in said and "feedback: feedback/00-setup/00-setup.html" in said, said
    assert said.rstrip().endswith(f"code 0 progress {float(TOP_00)}"), said
    assert (hub.home("ada") / "feedback" / "00-setup" / "grade.txt").read_text() == f"00-setup: {TOP_00} / {TOP_00}\n"
    assert (Path(hub.root) / "grades" / "00-setup" / "grades.csv").read_text() == grades
    kernel = room["bob"].kernel()
    try:
        said = kernel.text(CHECK.format(aid=FIXTURE), timeout=120)
    finally:
        kernel.close()
    assert f"⚠ the hub did not grade it: '{FIXTURE}' is not an assignment of this course" in said, said
    assert said.rstrip().endswith("code 1 progress None"), said
