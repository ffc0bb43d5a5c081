"""The Kafka broker the lab talks to: Apache Kafka run from its jars, noida-db (the offline fallback), or
$KAFKA_BOOTSTRAP (any other broker, e.g. Docker's).

A broker streamlab starts runs in its own process group, bound to 127.0.0.1, with its data, log and pid file in
`.streamlab/<kind>-<port>/`. A pid file is trusted only when that process is alive and is our broker on that
port, so a stale file never makes `broker stop` kill somebody else's process. Starts are serialised by a file
lock, so two notebooks starting the lab at once get one broker.
"""
from __future__ import annotations

import fcntl
import os
import signal
import socket
import struct
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

from streamlab.errors import LabError
from streamlab.lab.jars import broker_bundle, state_dir

DEFAULT_PORT = 9092
START_TIMEOUT_S = 30.0
STOP_GRACE_S = 15.0
KINDS = ("kafka", "noida")
# A small broker: it shares two cores and the memory with Spark and the notebook kernels.
KAFKA_HEAP = ["-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]


def broker_port() -> int:
    """The lab broker's port: $STREAMLAB_BROKER_PORT, else 9092."""
    raw = os.environ.get("STREAMLAB_BROKER_PORT", str(DEFAULT_PORT))
    try:
        port = int(raw)
    except ValueError:
        raise LabError(f"STREAMLAB_BROKER_PORT={raw!r} is not a port number: set it to e.g. 9093") from None
    if not 0 < port < 65536:
        raise LabError(f"STREAMLAB_BROKER_PORT={port} is out of range: set it to e.g. 9093")
    return port


def broker_kind() -> str:
    """Which broker the lab starts: 'kafka' (Apache Kafka), or 'noida' when the offline engine is in use."""
    from streamlab.lab.session import chosen_engine

    return "kafka" if chosen_engine()[0] == "connector" else "noida"


def data_dir(port: int | None = None, kind: str | None = None) -> Path:
    """Where a broker streamlab starts keeps its data, log and pid file (git-ignored)."""
    return state_dir() / f"{kind or broker_kind()}-{port or broker_port()}"


def _kafka_request(sock: socket.socket, api_key: int, version: int, body: bytes, correlation: int) -> bytes:
    client = b"streamlab"
    header = struct.pack(">hhih", api_key, version, correlation, len(client)) + client
    payload = header + body
    sock.sendall(struct.pack(">i", len(payload)) + payload)
    size_raw = _recv_exact(sock, 4)
    (size,) = struct.unpack(">i", size_raw)
    if not 4 <= size <= 10_000_000:
        raise ValueError("not a Kafka response")
    data = _recv_exact(sock, size)
    if struct.unpack(">i", data[:4])[0] != correlation:
        raise ValueError("not a Kafka response")
    return data[4:]


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ValueError("connection closed")
        buf += chunk
    return buf


def probe(bootstrap: str, timeout: float = 2.0) -> str:
    """Return 'kafka', 'closed' (nothing listens) or 'other' (something that is not Kafka answers)."""
    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    try:
        sock = socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout)
    except (OSError, ValueError):
        return "closed"
    try:
        sock.settimeout(timeout)
        _kafka_request(sock, 18, 0, b"", 7)  # ApiVersions
        _kafka_request(sock, 3, 0, struct.pack(">i", 0), 8)  # Metadata for no topics
        return "kafka"
    except (OSError, ValueError, struct.error):
        return "other"
    finally:
        sock.close()


def _cmdline(pid: int) -> str:
    try:
        import psutil

        return " ".join(psutil.Process(pid).cmdline())
    except Exception:
        return ""


def _our_pid(kind: str, port: int) -> int | None:
    """The pid in the pid file, if that process is alive and is our `kind` broker for this port."""
    folder = data_dir(port, kind)
    try:
        pid = int((folder / "broker.pid").read_text().strip())
    except (OSError, ValueError):
        return None
    if str(folder) in _cmdline(pid):
        return pid
    return None


@contextmanager
def _start_lock(folder: Path):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "start.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def external_bootstrap() -> str | None:
    """$KAFKA_BOOTSTRAP, when the lab is pointed at a broker it does not manage."""
    return os.environ.get("KAFKA_BOOTSTRAP") or None


def ensure_broker(kind: str | None = None, port: int | None = None) -> str:
    """Return the bootstrap address, starting (or reusing) the lab's broker when $KAFKA_BOOTSTRAP is unset."""
    external = external_bootstrap() if kind is None else None
    if external:
        state = probe(external, timeout=3.0)
        if state != "kafka":
            why = "nothing answers there" if state == "closed" else "what answers there is not Kafka"
            raise LabError(
                f"KAFKA_BOOTSTRAP={external} but {why}. Start that broker (`docker compose up -d kafka`) "
                "or unset KAFKA_BOOTSTRAP to use the lab's own broker."
            )
        return external
    kind = kind or broker_kind()
    port = port or broker_port()
    address = f"127.0.0.1:{port}"
    if probe(address) == "kafka":
        return address
    folder = data_dir(port, kind)
    with _start_lock(folder):
        state = probe(address)  # another process may have started it while we waited for the lock
        if state == "kafka":
            return address
        if state == "other":
            raise LabError(f"Port {port} is taken by something that is not Kafka. Stop it, or pick another port: "
                           f"export STREAMLAB_BROKER_PORT={port + 10}")
        stale = _our_pid(kind, port)
        if stale:  # ours, but not answering: a hung broker; replace it
            _terminate(stale)
        (_start_kafka if kind == "kafka" else _start_noida)(port, folder)
    return address


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _kafka_config(port: int, folder: Path) -> Path:
    """Write a single-node KRaft broker's config (its controller on a free port) and return its path."""
    controller = free_port()
    lines = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(folder / "data"),
        "num.partitions": "1",
        # One node: every internal topic has one replica, and few partitions, so the first group or
        # transaction does not wait for 50 partitions to be created.
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "4",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "4",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "share.coordinator.state.topic.num.partitions": "1",
        "group.initial.rebalance.delay.ms": "0",
        # Fewer threads and a small cleaner buffer for a 2-core laptop and a 384 MB heap.
        "num.network.threads": "2",
        "num.io.threads": "2",
        "background.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
        "log.cleaner.dedupe.buffer.size": str(8 * 1024 * 1024),
        "log.retention.check.interval.ms": "10000",
    }
    path = folder / "server.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    log_conf = folder / "log4j2.properties"
    log_conf.write_text(_LOG4J.replace("@LOG@", str(folder / "broker.log")))
    return path


_LOG4J = """status = error
appender.file.type = RollingFile
appender.file.name = file
appender.file.fileName = @LOG@
appender.file.filePattern = @LOG@.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 10MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 2
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.state.name = state.change.logger
logger.state.level = WARN
"""

CLUSTER_ID = "c3RyZWFtbGFiLWNvdXJzZQ"  # the same as docker-compose.yml's


def _java(folder: Path, main: str, *args: str, heap: list[str] | None = None) -> list[str]:
    from streamlab.lab.session import java_binary

    classpath = os.pathsep.join(str(p) for p in broker_bundle().jars())
    return [java_binary(), *(heap or []), f"-Dlog4j2.configurationFile=file:{folder / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={folder}", "-cp", classpath, main, *args]


def _start_kafka(port: int, folder: Path) -> None:
    config = _kafka_config(port, folder)
    data = folder / "data"
    if not (data / "meta.properties").is_file():
        # Never formatted, or a format that was cut short: nothing in it to keep.
        import shutil

        shutil.rmtree(data, ignore_errors=True)
        done = subprocess.run(_java(folder, "kafka.tools.StorageTool", "format", "-t", CLUSTER_ID,
                                    "-c", str(config), "--ignore-formatted"),
                              capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise LabError(f"Formatting the broker's storage failed: {_last_lines(done.stdout + done.stderr)}")
    _launch(_java(folder, "kafka.Kafka", str(config), heap=KAFKA_HEAP), port, folder, "Apache Kafka")


def _start_noida(port: int, folder: Path) -> None:
    try:
        import noida_db
    except ImportError:
        raise LabError("The offline broker (noida-db) is not installed: run `make setup`.") from None
    binary = Path(noida_db.__file__).parent / ("noida-db.exe" if os.name == "nt" else "noida-db")
    if not binary.is_file():
        raise LabError(f"The offline broker binary is missing at {binary}: run `make setup` to reinstall noida-db.")
    cmd = [str(binary), "start", "--only", "kafka", "--host", "127.0.0.1",
           "--kafka-port", str(port), "--data-dir", str(folder / "data")]
    _launch(cmd, port, folder, "noida-db")


def _launch(cmd: list[str], port: int, folder: Path, label: str) -> None:
    out = folder / "broker.out"
    with open(out, "ab") as log:
        # Its own session: the broker survives neither a lost pid file nor a Ctrl-C in a notebook's kernel.
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=folder)
    (folder / "broker.pid").write_text(str(proc.pid))
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            (folder / "broker.pid").unlink(missing_ok=True)
            raise LabError(f"The {label} broker exited at start: {_log_tail(folder)} "
                           f"(full log: {folder / 'broker.log'}){_damage_hint(folder)}")
        if probe(f"127.0.0.1:{port}", timeout=0.5) == "kafka":
            return
        time.sleep(0.1)
    _terminate(proc.pid)
    (folder / "broker.pid").unlink(missing_ok=True)
    raise LabError(f"The {label} broker did not answer within {START_TIMEOUT_S:.0f} s: {_log_tail(folder)} "
                   f"(full log: {folder / 'broker.log'})")


def _last_lines(text: str, n: int = 2) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip() and not ln.startswith(("\t", "SLF4J"))]
    return " | ".join(line[:240] for line in lines[-n:]) or "no output"


def _log_tail(folder: Path) -> str:
    text = ""
    for name in ("broker.log", "broker.out"):
        try:
            text += (folder / name).read_text(errors="replace")[-20_000:]
        except OSError:
            pass
    errors = [ln for ln in text.splitlines() if " ERROR " in ln or "Exception" in ln]
    return _last_lines("\n".join(errors) if errors else text)


def _damage_hint(folder: Path) -> str:
    if (folder / "data" / "meta.properties").is_file():
        return (". If its data folder was damaged (a crash while writing it), `python -m streamlab broker reset` "
                "deletes it, and the lab's topics, and starts afresh")
    return ""


def _terminate(pid: int, grace: float = STOP_GRACE_S) -> None:
    """SIGTERM the process group (a clean broker shutdown), SIGKILL it after `grace` seconds."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except OSError:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            finished, _ = os.waitpid(pid, os.WNOHANG)
            if finished:
                return
        except ChildProcessError:
            pass
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.05)
    try:
        os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (OSError, ChildProcessError):
        pass


def stop_broker(kind: str | None = None, port: int | None = None) -> bool:
    """Stop the broker streamlab started on this port; return whether one was running."""
    port = port or broker_port()
    stopped = False
    for each in ([kind] if kind else KINDS):
        pid = _our_pid(each, port)
        if pid is not None:
            _terminate(pid)
            stopped = True
        (data_dir(port, each) / "broker.pid").unlink(missing_ok=True)
    return stopped


def reset_broker(kind: str | None = None, port: int | None = None) -> str:
    """Stop the lab's broker and delete its data folder (every topic on it); say what was done."""
    import shutil

    kind = kind or broker_kind()
    port = port or broker_port()
    stop_broker(kind, port)
    folder = data_dir(port, kind)
    shutil.rmtree(folder / "data", ignore_errors=True)
    return f"deleted {folder / 'data'}: the next start formats a fresh {kind} broker"


def started_by_streamlab(port: int | None = None) -> bool:
    """Whether a broker streamlab started is running on this port."""
    port = port or broker_port()
    return any(_our_pid(kind, port) for kind in KINDS)


def broker_status() -> str:
    """One line saying which broker the lab would use and whether it answers."""
    external = external_bootstrap()
    if external:
        return f"external broker {external}: {probe(external)}"
    port = broker_port()
    state = probe(f"127.0.0.1:{port}")
    owners = [f"{kind} broker pid {pid}" for kind in KINDS if (pid := _our_pid(kind, port))]
    owner = ", ".join(owners) or "no broker started by streamlab"
    return f"127.0.0.1:{port}: {state} ({owner})"
