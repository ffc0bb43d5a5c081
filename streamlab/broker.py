"""The Kafka broker the lab talks to: the embedded noida-db server, or $KAFKA_BOOTSTRAP (Docker)."""
from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

from .errors import LabError

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PORT = 9092
START_TIMEOUT_S = 10.0


def broker_port() -> int:
    """The embedded broker's port: $STREAMLAB_BROKER_PORT, else 9092."""
    raw = os.environ.get("STREAMLAB_BROKER_PORT", str(DEFAULT_PORT))
    try:
        port = int(raw)
    except ValueError:
        raise LabError(f"STREAMLAB_BROKER_PORT={raw!r} is not a port number: set it to e.g. 9093") from None
    if not 0 < port < 65536:
        raise LabError(f"STREAMLAB_BROKER_PORT={port} is out of range: set it to e.g. 9093")
    return port


def data_dir(port: int | None = None) -> Path:
    """Where the embedded broker keeps its data and pid file (git-ignored)."""
    return ROOT / ".streamlab" / f"broker-{port or broker_port()}"


def _binary() -> Path:
    try:
        import noida_db
    except ImportError:
        raise LabError("The embedded broker (noida-db) is not installed: run `make setup`.") from None
    path = Path(noida_db.__file__).parent / ("noida-db.exe" if os.name == "nt" else "noida-db")
    if not path.is_file():
        raise LabError(f"The broker binary is missing at {path}: run `make setup` to reinstall noida-db.")
    return path


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


def _pid_file(port: int) -> Path:
    return data_dir(port) / "broker.pid"


def _running_pid(port: int) -> int | None:
    try:
        pid = int(_pid_file(port).read_text().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def ensure_broker() -> str:
    """Return the bootstrap address, starting (or reusing) the embedded broker when $KAFKA_BOOTSTRAP is unset."""
    external = os.environ.get("KAFKA_BOOTSTRAP")
    if external:
        state = probe(external, timeout=3.0)
        if state != "kafka":
            why = "nothing answers there" if state == "closed" else "what answers there is not Kafka"
            raise LabError(
                f"KAFKA_BOOTSTRAP={external} but {why}. Start the broker (`docker compose up -d kafka`) "
                "or unset KAFKA_BOOTSTRAP to use the embedded broker."
            )
        return external
    port = broker_port()
    address = f"127.0.0.1:{port}"
    state = probe(address)
    if state == "kafka":
        return address
    if state == "other":
        raise LabError(
            f"Port {port} is taken by something that is not Kafka. Stop it, or pick another port: "
            f"export STREAMLAB_BROKER_PORT={port + 1}"
        )
    _start(port)
    return address


def _start(port: int) -> None:
    binary = _binary()
    folder = data_dir(port)
    folder.mkdir(parents=True, exist_ok=True)
    log = open(folder / "broker.log", "ab")
    cmd = [str(binary), "start", "--only", "kafka", "--host", "127.0.0.1",
           "--kafka-port", str(port), "--data-dir", str(folder / "data")]
    # Our own process group, so the broker outlives neither a lost pid file nor a Ctrl-C in the notebook.
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, cwd=folder)
    _pid_file(port).write_text(str(proc.pid))
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = (folder / "broker.log").read_text(errors="replace").strip().splitlines()[-3:]
            raise LabError(f"The embedded broker exited at start ({' | '.join(tail)}). See {folder / 'broker.log'}.")
        if probe(f"127.0.0.1:{port}", timeout=0.5) == "kafka":
            return
        time.sleep(0.1)
    _terminate(proc.pid)
    raise LabError(f"The embedded broker did not answer within {START_TIMEOUT_S:.0f}s. See {folder / 'broker.log'}.")


def _terminate(pid: int, grace: float = 5.0) -> None:
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
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (OSError, ChildProcessError):
        pass


def stop_broker() -> bool:
    """Stop the embedded broker started by ensure_broker; return whether one was running."""
    port = broker_port()
    pid = _running_pid(port)
    if pid is None:
        return False
    _terminate(pid)
    _pid_file(port).unlink(missing_ok=True)
    return True


def broker_status() -> str:
    """One line saying which broker the lab would use and whether it answers."""
    external = os.environ.get("KAFKA_BOOTSTRAP")
    if external:
        return f"external broker {external}: {probe(external)}"
    port = broker_port()
    pid = _running_pid(port)
    state = probe(f"127.0.0.1:{port}")
    owner = f"embedded broker pid {pid}" if pid else "no embedded broker started by streamlab"
    return f"127.0.0.1:{port}: {state} ({owner})"
