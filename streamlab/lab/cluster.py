"""The lab as a cluster: three Kafka brokers and a Spark standalone Master with two Workers, on 127.0.0.1.

One JVM and one broker cannot show what fails in production: which executor reads which partition, an executor
lost mid-batch, a partition leader failing over under a running query. Both engines run as real clusters on one
machine from parts the lab already ships: three KRaft nodes (each broker and controller at once, the quickest
quorum to start) from the same Kafka jars as the single broker, and Spark's standalone Master and Workers from
PySpark's own `bin/spark-class`.

Every topic the course makes gets 3 replicas and `min.insync.replicas=2`, and so do the internal
`__consumer_offsets` and `__transaction_state` (Kafka's own example configs leave them at 1 replica).

Everything lives in `.streamlab/cluster-<port>/`: a node's data, log and pid file, the Spark daemons' logs, work
folders and pid files. A pid file is trusted only when that process's command line names this folder, so a
stale one never makes `cluster stop` kill a bystander. `stop()` ends every process and deletes the folder, also
after a broker or worker was killed; `start()` restarts what is missing and keeps the data of what survived.

Ports: brokers $STREAMLAB_CLUSTER_PORT (9292), +1, +2, their controllers +3..+5; Spark's Master
$STREAMLAB_SPARK_PORT (7077) with its UI on $STREAMLAB_SPARK_UI_PORT (8080); the Workers on the Master's port +1,
+2 and its UI port +1, +2.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from streamlab.errors import LabError, first_line
from streamlab.lab.kraft import (CLUSTER_ID, LOG4J, java_command, kafka_request, kraft_properties, last_lines,
                                 start_lock, terminate)
from streamlab.lab.machine import java_binary, state_dir
from streamlab.settings import settings

NODES = 3
WORKERS = 2
START_TIMEOUT_S = 60.0
NODE_HEAP = ["-Xms48m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
WORKER_CORES = 1
WORKER_MEMORY = "512m"
EXECUTOR_MEMORY = "512m"  # Spark refuses less than 450 MiB (UnifiedMemoryManager.getMaxMemory)
ADMIN_USER = "admin"
SCRAM_MECHANISM = "SCRAM-SHA-512"


@dataclass(frozen=True)
class Ports:
    """Every port one cluster uses."""

    brokers: tuple[int, ...]
    controllers: tuple[int, ...]
    master: int
    master_ui: int
    workers: tuple[int, ...]
    worker_uis: tuple[int, ...]


def ports() -> Ports:
    """The cluster's ports, from $STREAMLAB_CLUSTER_PORT, $STREAMLAB_SPARK_PORT and $STREAMLAB_SPARK_UI_PORT."""
    first, master, ui = settings.cluster_port, settings.spark_port, settings.spark_ui_port
    return Ports(tuple(first + i for i in range(NODES)), tuple(first + NODES + i for i in range(NODES)),
                 master, ui, tuple(master + 1 + i for i in range(WORKERS)), tuple(ui + 1 + i for i in range(WORKERS)))


def folder() -> Path:
    """Where the cluster keeps everything it runs (deleted by stop())."""
    return state_dir() / f"cluster-{ports().brokers[0]}"


def bootstrap() -> str:
    """The three brokers' addresses, as a client's bootstrap.servers."""
    return ",".join(f"127.0.0.1:{p}" for p in ports().brokers)


def master_url() -> str:
    """The Spark standalone Master's URL (spark://127.0.0.1:<port>)."""
    return f"spark://127.0.0.1:{ports().master}"


def wanted() -> bool:
    """Whether the lab runs on the cluster ($STREAMLAB_CLUSTER=1, set by setup(cluster=True))."""
    return settings.cluster


# --- processes -------------------------------------------------------------------------------------------------

def _cmdline(pid: int) -> str:
    try:
        import psutil

        return " ".join(psutil.Process(pid).cmdline())
    except Exception:
        return ""


def _pid(path: Path) -> int | None:
    """The pid in `path`, if that process runs and its command line names the cluster's folder."""
    try:
        pid = int(path.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if str(folder()) in _cmdline(pid) else None


def _node_dir(node: int) -> Path:
    return folder() / f"node-{node}"


def node_pid(node: int) -> int | None:
    """The pid of broker `node` (1..3), if it runs."""
    return _pid(_node_dir(node) / "broker.pid")


def worker_pid(worker: int) -> int | None:
    """The pid of Spark Worker `worker` (1..2), if it runs."""
    return _pid(folder() / "spark" / f"worker-{worker}.pid")


def master_pid() -> int | None:
    """The pid of the Spark Master, if it runs."""
    return _pid(folder() / "spark" / "master.pid")


def executor_pids() -> dict[int, list[int]]:
    """{worker: [pids of the executor JVMs it launched]} (an executor's command line names its Worker's URL)."""
    import psutil

    p = ports()
    found: dict[int, list[int]] = {w: [] for w in range(1, WORKERS + 1)}
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            line = " ".join(proc.info["cmdline"] or [])
        except psutil.Error:
            continue
        if "CoarseGrainedExecutorBackend" not in line:
            continue
        for worker in found:
            if f"Worker@127.0.0.1:{p.workers[worker - 1]}" in line:
                found[worker].append(proc.info["pid"])
    return found


def _api_versions(port: int, timeout: float = 1.0) -> bool:
    """Whether a Kafka broker answers ApiVersions on 127.0.0.1:port (allowed before SASL authentication)."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    except OSError:
        return False
    try:
        sock.settimeout(timeout)
        kafka_request(sock, 18, 0, b"", 11)
        return True
    except (OSError, ValueError, struct.error):
        return False
    finally:
        sock.close()


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


# --- Kafka nodes -----------------------------------------------------------------------------------------------

def _scram_file() -> Path:
    return folder() / "scram.properties"


def scram_enabled() -> bool:
    """Whether the running cluster was started with SCRAM authentication and ACLs."""
    return _scram_file().is_file()


def _node_config(node: int, scram_password: str | None) -> Path:
    p = ports()
    here = _node_dir(node)
    voters = ",".join(f"{i + 1}@127.0.0.1:{c}" for i, c in enumerate(p.controllers))
    listener = "SASL_PLAINTEXT" if scram_password else "PLAINTEXT"
    lines = kraft_properties(node, voters, listener, p.brokers[node - 1], p.controllers[node - 1], here / "data",
                             replicas=3, cleaner_mb=4)
    lines.update({
        # A killed broker is fenced within ~3 s (default 9 s) and its partitions get a new leader: the lesson
        # shows an election, not a wait. A follower that stops fetching leaves the ISR after 5 s (default 30 s).
        "broker.session.timeout.ms": "3000",
        "broker.heartbeat.interval.ms": "500",
        "replica.lag.time.max.ms": "5000",
        "num.replica.fetchers": "1",
    })
    if scram_password:
        jaas = (f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{ADMIN_USER}" '
                f'password="{scram_password}";')
        lines.update({
            "sasl.enabled.mechanisms": SCRAM_MECHANISM,
            "sasl.mechanism.inter.broker.protocol": SCRAM_MECHANISM,
            f"listener.name.sasl_plaintext.{SCRAM_MECHANISM.lower()}.sasl.jaas.config": jaas,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            # The controllers talk PLAINTEXT among themselves and to the brokers as ANONYMOUS: Kafka's own rule
            # is that they are super users (they cannot use SCRAM: its credentials live in the metadata log).
            "super.users": f"User:{ADMIN_USER};User:ANONYMOUS",
            "allow.everyone.if.no.acl.found": "false",
        })
    path = here / "server.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    (here / "log4j2.properties").write_text(LOG4J.replace("@LOG@", str(here / "broker.log")))
    return path


def _format(nodes: list[int], scram_password: str | None) -> None:
    """Format the nodes' storage (in parallel: one JVM each), the admin's SCRAM credential included."""
    procs = []
    for node in nodes:
        here = _node_dir(node)
        shutil.rmtree(here / "data", ignore_errors=True)
        config = _node_config(node, scram_password)
        extra = (["--add-scram", f"{SCRAM_MECHANISM}=[name={ADMIN_USER},password={scram_password}]"]
                 if scram_password else [])
        cmd = java_command(here, "kafka.tools.StorageTool", "format", "-t", CLUSTER_ID, "-c", str(config),
                    "--ignore-formatted", *extra, heap=["-Xmx128m", "-XX:TieredStopAtLevel=1"])
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      stdin=subprocess.DEVNULL))
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        if proc.returncode != 0:
            raise LabError(f"Formatting a cluster node's storage failed: {last_lines(out)}")


def _start_node(node: int, scram_password: str | None) -> subprocess.Popen:
    here = _node_dir(node)
    config = _node_config(node, scram_password)
    from streamlab.lab.cds import broker_options

    heap = [*NODE_HEAP, *broker_options()]  # the brokers' class-data sharing archive, when setup made one
    with open(here / "broker.out", "ab") as log:
        proc = subprocess.Popen(java_command(here, "kafka.Kafka", str(config), heap=heap), stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, cwd=here)
    (here / "broker.pid").write_text(str(proc.pid))
    return proc


# --- Spark standalone ------------------------------------------------------------------------------------------

_SPARK_LOG4J = """rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:spark.daemon.log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n
logger.master.name = org.apache.spark.deploy
logger.master.level = info
"""


def spark_home() -> Path:
    """PySpark's own Spark home (its bin/spark-class starts the Master and the Workers)."""
    import pyspark

    return Path(pyspark.__file__).parent


def temporary_folder() -> Path:
    """The Spark daemons' and executors' java.io.tmpdir: inside the cluster's folder, so `stop` deletes what a
    killed JVM left."""
    tmp = folder() / "spark" / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    return tmp


def _spark_env(name: str) -> dict:
    here = folder() / "spark"
    conf = here / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "log4j2.properties").write_text(_SPARK_LOG4J)
    java = Path(java_binary()).resolve()
    return dict(os.environ, SPARK_HOME=str(spark_home()), SPARK_CONF_DIR=str(conf), SPARK_LOG_DIR=str(here),
                SPARK_LOCAL_IP="127.0.0.1", SPARK_DAEMON_MEMORY="160m", JAVA_HOME=str(java.parent.parent),
                SPARK_WORKER_DIR=str(here / "work"),
                # The folder in every daemon's command line: how a pid file is told from a stale one.
                # Their temporary folders in the cluster's, which `cluster stop` deletes (a killed daemon's stayed
                # in /tmp).
                SPARK_DAEMON_JAVA_OPTS=(f"-Dstreamlab.cluster={folder()} -Dspark.daemon.log={here / name}.log "
                                        f"-Djava.io.tmpdir={temporary_folder()} -XX:+UseSerialGC -XX:TieredStopAtLevel=1"))


def _spark_daemon(name: str, args: list[str]) -> subprocess.Popen:
    here = folder() / "spark"
    env = _spark_env(name)
    with open(here / f"{name}.out", "ab") as log:
        # spark-class ends by exec-ing java, so this pid is the daemon's JVM.
        proc = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], env=env, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, cwd=here)
    (here / f"{name}.pid").write_text(str(proc.pid))
    return proc


def _start_master() -> None:
    p = ports()
    _spark_daemon("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(p.master),
                             "--webui-port", str(p.master_ui)])


def _start_worker(worker: int) -> None:
    p = ports()
    work = folder() / "spark" / f"work-{worker}"
    work.mkdir(parents=True, exist_ok=True)
    _spark_daemon(f"worker-{worker}", ["org.apache.spark.deploy.worker.Worker", master_url(), "--host", "127.0.0.1",
                                       "--port", str(p.workers[worker - 1]), "--webui-port",
                                       str(p.worker_uis[worker - 1]), "--cores", str(WORKER_CORES),
                                       "--memory", WORKER_MEMORY, "--work-dir", str(work)])


def master_state(timeout: float = 2.0) -> dict:
    """What the Master's UI reports (workers, active applications and their cores), {} when it does not answer."""
    import json
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ports().master_ui}/json/", timeout=timeout) as answer:
            return json.load(answer)
    except Exception:  # noqa: BLE001 - not started, or killed: nothing to report
        return {}


def alive_workers(timeout: float = 2.0) -> int:
    """How many Workers the Master lists as ALIVE (from its UI's JSON), 0 when it does not answer."""
    return sum(1 for w in master_state(timeout).get("workers", []) if w.get("state") == "ALIVE")


def cores_held_elsewhere(app_id: str) -> list[str]:
    """The other running applications that hold every core of the cluster, one line each (none: cores are free)."""
    state = master_state()
    if not state or state.get("coresused", 0) < state.get("cores", 0):
        return []
    return [f"{app['id']} ({app.get('name')}, {app.get('cores')} cores, since {app.get('submitdate')})"
            for app in state.get("activeapps", []) if app.get("id") != app_id and app.get("cores")]


# --- the cluster -----------------------------------------------------------------------------------------------

def _taken(port: int, pid_of) -> bool:
    return _listening(port) and pid_of() is None


def start(scram: bool = False, admin_password: str | None = None, spark: bool = True) -> str:
    """Start (or complete) the cluster, wait until every broker and Worker is ready; return the bootstrap.

    scram=True switches on SCRAM-SHA-512 authentication (SASL_PLAINTEXT on 127.0.0.1) with Kafka's
    StandardAuthorizer: `admin` (created when the storage is formatted, with `admin_password`) is a super user, as
    are the controllers, which talk PLAINTEXT; anyone else needs ACLs. Connection options for it: `client_options()`.
    """
    if scram and not admin_password:
        raise LabError("cluster.start(scram=True) needs admin_password=… (the admin's SCRAM password).")
    here = folder()
    with start_lock(here):
        if scram:
            if _scram_file().is_file() and _scram_password() != admin_password:
                raise LabError("The cluster was formatted with another admin password: stop it first "
                               "(`python -m streamlab cluster stop`, which deletes its data).")
            _scram_file().write_text(f"password={admin_password}\n")
            _scram_file().chmod(0o600)
        password = _scram_password()
        p = ports()
        for node in range(1, NODES + 1):
            if _taken(p.brokers[node - 1], lambda: node_pid(node)) or _taken(p.controllers[node - 1],
                                                                           lambda: node_pid(node)):
                raise LabError(f"Port {p.brokers[node - 1]} or {p.controllers[node - 1]} is taken by another "
                               "process: pick other ports, e.g. export STREAMLAB_CLUSTER_PORT="
                               f"{p.brokers[0] + 100}")
        missing = [n for n in range(1, NODES + 1) if node_pid(n) is None]
        for node in missing:
            _node_dir(node).mkdir(parents=True, exist_ok=True)
        unformatted = [n for n in missing if not (_node_dir(n) / "data" / "meta.properties").is_file()]
        if unformatted:
            _format(unformatted, password)
        procs = {n: _start_node(n, password) for n in missing}
        if spark:
            (here / "spark").mkdir(parents=True, exist_ok=True)
            if master_pid() is None:
                if _listening(p.master) or _listening(p.master_ui):
                    raise LabError(f"Port {p.master} or {p.master_ui} is taken: pick others, e.g. export "
                                   f"STREAMLAB_SPARK_PORT={p.master + 100} STREAMLAB_SPARK_UI_PORT={p.master_ui + 100}")
                _start_master()
            for worker in range(1, WORKERS + 1):
                if worker_pid(worker) is None:
                    _start_worker(worker)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            for node, proc in procs.items():
                if proc.poll() is not None:
                    raise LabError(f"Cluster broker {node} exited at start: {_node_log_tail(node)} "
                                   f"(log: {_node_dir(node) / 'broker.log'})")
            brokers = all(_api_versions(port, 0.5) for port in p.brokers)
            workers = not spark or alive_workers(1.0) == WORKERS
            if brokers and workers and _metadata_has_all_brokers(password):
                return bootstrap()
            time.sleep(0.2)
    raise LabError(f"The cluster was not ready within {START_TIMEOUT_S:.0f} s ({status()}); logs in {here}")


def ensure() -> str:
    """The cluster's bootstrap, starting whatever part of it is not running."""
    if running() and master_pid() and all(worker_pid(w) for w in range(1, WORKERS + 1)):
        return bootstrap()
    return start()


def _metadata_has_all_brokers(password: str | None) -> bool:
    """Whether the brokers registered with the controller quorum (all three in the metadata)."""
    try:
        client = _admin(password, timeout_ms=3000)
    except Exception:
        return False
    try:
        return len(client.describe_cluster()["brokers"]) == NODES
    except Exception:
        return False
    finally:
        client.close()


def _scram_password() -> str | None:
    try:
        return _scram_file().read_text().split("=", 1)[1].strip()
    except (OSError, IndexError):
        return None


def client_options(user: str = ADMIN_USER, password: str | None = None) -> dict[str, str]:
    """The `kafka.`-prefixed options a Spark reader or writer needs for this cluster (SCRAM ones when it is on)."""
    options = {"kafka.bootstrap.servers": bootstrap()}
    if scram_enabled():
        password = password if password is not None else _scram_password()
        options.update({
            "kafka.security.protocol": "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": SCRAM_MECHANISM,
            "kafka.sasl.jaas.config": ('org.apache.kafka.common.security.scram.ScramLoginModule required '
                                       f'username="{user}" password="{password}";'),
        })
    return options


def _admin(password: str | None = None, timeout_ms: int = 10_000, user: str = ADMIN_USER):
    from kafka import KafkaAdminClient

    extra = {}
    if password:
        extra = dict(security_protocol="SASL_PLAINTEXT", sasl_mechanism=SCRAM_MECHANISM,
                     sasl_plain_username=user, sasl_plain_password=password)
    return KafkaAdminClient(bootstrap_servers=live_bootstrap(), client_id="streamlab-cluster",
                            request_timeout_ms=timeout_ms, **extra)


def live_bootstrap() -> str:
    """The brokers that run (all of them when none does): kafka-python fails a request sent to a killed broker it
    was handed, instead of trying the next."""
    running = [f"127.0.0.1:{port}" for node, port in enumerate(ports().brokers, 1) if node_pid(node)]
    return ",".join(running) or bootstrap()


def _node_log_tail(node: int) -> str:
    text = ""
    for name in ("broker.log", "broker.out"):
        try:
            text += (_node_dir(node) / name).read_text(errors="replace")[-20_000:]
        except OSError:
            pass
    errors = [ln for ln in text.splitlines() if " ERROR " in ln or "Exception" in ln]
    return last_lines("\n".join(errors) if errors else text)


def all_pids() -> list[int]:
    """The pids of the cluster's daemons that run now: its brokers, its Workers and its Master."""
    pids = [node_pid(n) for n in range(1, NODES + 1)]
    pids += [worker_pid(w) for w in range(1, WORKERS + 1)] + [master_pid()]
    return [pid for pid in pids if pid]


def _orphans() -> list[int]:
    """Processes whose command line names the cluster's folder but whose pid file is gone (executors too)."""
    import psutil

    mine, name = os.getpid(), str(folder())
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if proc.info["pid"] != mine and name in " ".join(proc.info["cmdline"] or []):
                found.append(proc.info["pid"])
        except psutil.Error:
            pass
    return found


def stop() -> str:
    """Stop every process of the cluster (Workers, their executors, Master, brokers) and delete its folder."""
    here = folder()
    if not here.exists():
        return "no cluster was running"
    executors = [pid for pids in executor_pids().values() for pid in pids]
    pids = all_pids()
    # Workers first (their process group holds their executors), then the Master, then the brokers, in parallel.
    import threading

    stoppers = [threading.Thread(target=terminate, args=(pid, 10.0)) for pid in pids]
    for stopper in stoppers:
        stopper.start()
    for stopper in stoppers:
        stopper.join()
    for pid in executors + _orphans():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    shutil.rmtree(here, ignore_errors=True)
    return f"stopped {len(pids)} cluster processes and deleted {here}"


def kill_node(node: int, sig: int = signal.SIGKILL) -> int:
    """Kill broker `node` (1..3) with `sig` (kill -9 by default); return its pid."""
    pid = node_pid(node)
    if pid is None:
        raise LabError(f"Cluster broker {node} is not running: `python -m streamlab cluster start` starts it.")
    os.killpg(pid, sig)
    _reap(pid)
    return pid


def kill_worker(worker: int) -> int:
    """kill -9 Spark Worker `worker` (1..2) and its executors; return its pid."""
    pid = worker_pid(worker)
    if pid is None:
        raise LabError(f"Spark Worker {worker} is not running: `python -m streamlab cluster start` starts it.")
    os.killpg(pid, signal.SIGKILL)
    _reap(pid)
    return pid


def kill_executor(worker: int | None = None, executor_id: str | None = None) -> int:
    """kill -9 one executor JVM (Spark's executor `executor_id`, else one on `worker`, else the first found); its
    Worker then launches a new one. Return its pid."""
    import psutil

    found = executor_pids()
    pids = found.get(worker, []) if worker else [p for ps in found.values() for p in ps]
    if executor_id is not None:
        def runs(pid):
            try:
                return f"--executor-id {executor_id} " in " ".join(psutil.Process(pid).cmdline()) + " "
            except psutil.Error:
                return False
        pids = [pid for pid in pids if runs(pid)]
    if not pids:
        raise LabError("No executor is running on the cluster: start a query on a cluster session first.")
    os.kill(pids[0], signal.SIGKILL)
    return pids[0]


def _reap(pid: int, timeout: float = 10.0) -> None:
    """Wait until a killed process is gone (reaped if it is our child): a JVM's many threads take a moment to die
    after kill -9, and until then its pid file still names a live process."""
    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        except ChildProcessError:  # not ours: gone, or a zombie its parent reaps
            try:
                if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                    return
            except psutil.NoSuchProcess:
                return
        time.sleep(0.05)


def start_node(node: int) -> None:
    """Start broker `node` again (with its data) after it was killed, and wait until it answers."""
    if node_pid(node) is None:
        _start_node(node, _scram_password())
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _api_versions(ports().brokers[node - 1], 0.5):
        if time.monotonic() > deadline:
            raise LabError(f"Cluster broker {node} did not answer within {START_TIMEOUT_S:.0f} s: "
                           f"{_node_log_tail(node)}")
        time.sleep(0.2)


def running() -> bool:
    """Whether every broker answers (the Spark part not asked)."""
    return all(_api_versions(port, 0.5) for port in ports().brokers)


def status() -> str:
    """One line per part: each broker, the Master and each Worker, with its pid and whether it answers."""
    p = ports()
    lines = []
    for node in range(1, NODES + 1):
        pid = node_pid(node)
        state = "answers" if _api_versions(p.brokers[node - 1], 0.5) else "down"
        lines.append(f"broker {node}  127.0.0.1:{p.brokers[node - 1]}  {state}" + (f" (pid {pid})" if pid else ""))
    pid = master_pid()
    lines.append(f"master    {master_url()}  " + ("running" if pid else "down") + (f" (pid {pid}, UI "
                 f"http://127.0.0.1:{p.master_ui})" if pid else "") + (f", {alive_workers()} workers alive"
                                                                        if pid else ""))
    for worker in range(1, WORKERS + 1):
        pid = worker_pid(worker)
        executors = executor_pids().get(worker, [])
        lines.append(f"worker {worker}  127.0.0.1:{p.workers[worker - 1]}  " + ("running" if pid else "down")
                     + (f" (pid {pid}, {len(executors)} executors)" if pid else ""))
    if scram_enabled():
        lines.append("security  SCRAM-SHA-512 on SASL_PLAINTEXT, StandardAuthorizer (admin is a super user)")
    return "\n".join(lines)


METADATA_LAG_S = 15.0  # how long a broker's metadata may lag a topic just made (KRaft spreads it to each broker)


def leader_of(topic: str, partition: int = 0) -> int:
    """The node id (1..3) leading `topic`'s partition, from the cluster's metadata.

    The broker asked may not know a topic made a moment ago (a broker just restarted catches up on the metadata
    log), so an absent partition is asked again for up to METADATA_LAG_S before it is an error."""
    deadline = time.monotonic() + METADATA_LAG_S
    while True:
        client = _admin(_scram_password(), timeout_ms=5000)
        try:
            for described in client.describe_topics([topic]):
                for part in described["partitions"]:
                    if part["partition_index"] == partition:
                        return int(part["leader_id"])
        finally:
            client.close()
        if time.monotonic() >= deadline:
            raise LabError(f"Topic {topic} has no partition {partition} on the cluster.")
        time.sleep(0.5)


def isr_of(topic: str, partition: int = 0) -> list[int]:
    """The in-sync replicas of `topic`'s partition."""
    client = _admin(_scram_password(), timeout_ms=5000)
    try:
        for described in client.describe_topics([topic]):
            for part in described["partitions"]:
                if part["partition_index"] == partition:
                    return sorted(int(r) for r in part["isr_nodes"])
    finally:
        client.close()
    return []


def node_of_port(address: str) -> int:
    """'127.0.0.1:9293' -> 2."""
    port = int(re.sub(r".*:", "", address))
    return ports().brokers.index(port) + 1


def check_login(user: str = ADMIN_USER, password: str | None = None) -> None:
    """Connect as `user` and list the topics; a refused SCRAM login is a LabError of one line naming the fix."""
    try:
        client = _admin(password if password is not None else _scram_password(), timeout_ms=8000, user=user)
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        # kafka-python 3 reports a refused SCRAM login as "Unable to bootstrap": the broker closes the connection.
        # Brokers that answer ApiVersions (allowed before login) but let nobody bootstrap refused the login.
        refused = "bootstrap" in text and scram_enabled() and any(_api_versions(p) for p in ports().brokers)
        if "uthenticat" in text or refused:
            raise LabError(f"SCRAM authentication failed for user {user!r} at {bootstrap()}: check the password "
                           "(sasl.jaas.config in your options file).") from None
        raise LabError(f"Could not connect to {bootstrap()} as {user!r}: {first_line(exc, 200)}") from None
    try:
        client.list_topics()
    finally:
        client.close()
