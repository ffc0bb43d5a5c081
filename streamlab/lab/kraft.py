"""The KRaft launcher's parts that the lab's single broker (broker.py), the cluster lab (cluster.py) and the
workshop's Kafka share: a node's server.properties, its log4j2 file, the java command on the broker's jars, a start
lock, process termination, the last lines of a log, and the one Kafka request the probes and the cluster send.

It stands on the machine (machine.py) and the jars (jars.py) only: the modules that start brokers import it,
never one another for it.
"""
from __future__ import annotations

import fcntl
import os
import signal
import socket
import struct
import time
from contextlib import contextmanager
from pathlib import Path

from streamlab.errors import LabError
from streamlab.lab.jars import broker_bundle
from streamlab.lab.machine import java_binary

STOP_GRACE_S = 15.0


def kafka_request(sock: socket.socket, api_key: int, version: int, body: bytes, correlation: int) -> bytes:
    client = b"streamlab"
    header = struct.pack(">hhih", api_key, version, correlation, len(client)) + client
    payload = header + body
    sock.sendall(struct.pack(">i", len(payload)) + payload)
    size_raw = recv_exact(sock, 4)
    (size,) = struct.unpack(">i", size_raw)
    if not 4 <= size <= 10_000_000:
        raise ValueError("not a Kafka response")
    data = recv_exact(sock, size)
    if struct.unpack(">i", data[:4])[0] != correlation:
        raise ValueError("not a Kafka response")
    return data[4:]


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ValueError("connection closed")
        buf += chunk
    return buf


@contextmanager
def start_lock(folder: Path):
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / "start.lock", "w")
    except OSError as exc:
        raise LabError(f"Cannot write the broker's folder {folder} ({exc.strerror}): make it writable, or set "
                       "STREAMLAB_HOME to a folder you can write (the broker keeps its data there).") from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def kraft_properties(node: int, voters: str, listener: str, port: int, controller: int, data: Path,
                     replicas: int = 1, controller_protocol: str = "PLAINTEXT", threads: tuple[int, int] = (2, 2),
                     cleaner_mb: int = 8) -> dict[str, str]:
    """server.properties of a KRaft node that is broker and controller at once, on 127.0.0.1 (the single lab's,
    the cluster's nodes and the workshop's broker: the callers add authentication and their own timings)."""
    min_isr = str(min(replicas, 2))
    lines = {
        "process.roles": "broker,controller",
        "node.id": str(node),
        "controller.quorum.voters": voters,
        "listeners": f"{listener}://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
        "advertised.listeners": f"{listener}://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": listener,
        "listener.security.protocol.map": f"{listener}:{listener},CONTROLLER:{controller_protocol}",
        "log.dirs": str(data),
        "num.partitions": "1",
        # Every internal topic has as many replicas as there are nodes (two must have a write when there are
        # three), and few partitions, so the first group or transaction does not wait for 50 to be created.
        **({"default.replication.factor": str(replicas), "min.insync.replicas": min_isr} if replicas > 1 else {}),
        "offsets.topic.replication.factor": str(replicas),
        "offsets.topic.num.partitions": "4",
        "transaction.state.log.replication.factor": str(replicas),
        "transaction.state.log.min.isr": min_isr,
        "transaction.state.log.num.partitions": "4",
        "share.coordinator.state.topic.replication.factor": str(replicas),
        "share.coordinator.state.topic.min.isr": min_isr,
        "share.coordinator.state.topic.num.partitions": "1",
        "group.initial.rebalance.delay.ms": "0",
        # Few threads and a small cleaner buffer for a 2-core laptop and a small heap.
        "num.network.threads": str(threads[0]),
        "num.io.threads": str(threads[1]),
        "background.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
        "log.cleaner.dedupe.buffer.size": str(cleaner_mb * 1024 * 1024),
        "log.retention.check.interval.ms": "10000",
    }
    return lines


LOG4J = """status = error
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


def java_command(folder: Path, main: str, *args: str, heap: list[str] | None = None) -> list[str]:
    classpath = os.pathsep.join(str(p) for p in broker_bundle().jars())
    # Its temporary files (lz4's native library) in its own folder: a broker killed with kill -9 leaves them there,
    # emptied at its next start, not in /tmp.
    tmp = folder / "tmp"
    if main == "kafka.Kafka":
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True, exist_ok=True)
    return [java_binary(), *(heap or []), f"-Dlog4j2.configurationFile=file:{folder / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={folder}", f"-Djava.io.tmpdir={tmp}", "-cp", classpath, main, *args]


def last_lines(text: str, n: int = 2) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip() and not ln.startswith(("\t", "SLF4J"))]
    return " | ".join(line[:240] for line in lines[-n:]) or "no output"


def log_tail(folder: Path) -> str:
    text = ""
    for name in ("broker.log", "broker.out"):
        try:
            text += (folder / name).read_text(errors="replace")[-20_000:]
        except OSError:
            pass
    errors = [ln for ln in text.splitlines() if " ERROR " in ln or "Exception" in ln]
    return last_lines("\n".join(errors) if errors else text)


def terminate(pid: int, grace: float = STOP_GRACE_S) -> None:
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
