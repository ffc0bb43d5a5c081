"""The Kafka broker the lab talks to: Apache Kafka run from its jars, noida-db (the offline fallback), or
$KAFKA_BOOTSTRAP (any other broker, e.g. Docker's).

A broker streamlab starts runs in its own process group, bound to 127.0.0.1, with its data, log and pid file in
`.streamlab/<kind>-<port>/`. A pid file is trusted only when that process is alive and is our broker on that
port, so a stale file never makes `broker stop` kill somebody else's process. Starts are serialised by a file
lock, so two notebooks starting the lab at once get one broker.
"""
from __future__ import annotations

import os
import socket
import struct
import subprocess
import time
from pathlib import Path

from streamlab.errors import LabError
from streamlab.lab.jars import broker_bundle, state_dir  # noqa: F401 (broker_bundle: the workshop imports it here)
# The KRaft launcher's parts, shared with the cluster lab and the workshop's Kafka (their old names kept here).
from streamlab.lab.kraft import CLUSTER_ID, STOP_GRACE_S, kraft_properties  # noqa: F401
from streamlab.lab.kraft import LOG4J as _LOG4J
from streamlab.lab.kraft import java_command as _java
from streamlab.lab.kraft import last_lines as _last_lines
from streamlab.lab.kraft import log_tail as _log_tail
from streamlab.lab.kraft import start_lock as _start_lock
from streamlab.lab.kraft import terminate as _terminate
from streamlab.lab.kraft import kafka_request as _kafka_request
from streamlab.settings import settings

START_TIMEOUT_S = 60.0  # a cold start on a loaded 2-core machine can pass 30 s
KINDS = ("kafka", "noida")
# A small broker: it shares two cores and the memory with Spark and the notebook kernels.
KAFKA_HEAP = ["-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]


def broker_port() -> int:
    """The lab broker's port: $STREAMLAB_BROKER_PORT, else 9092."""
    return settings.broker_port


def broker_kind() -> str:
    """Which broker the lab starts: 'kafka' (Apache Kafka), or 'noida' when the offline engine is in use."""
    from streamlab.lab.session import chosen_engine

    return "kafka" if chosen_engine()[0] == "connector" else "noida"


def data_dir(port: int | None = None, kind: str | None = None) -> Path:
    """Where a broker streamlab starts keeps its data, log and pid file (git-ignored)."""
    return state_dir() / f"{kind or broker_kind()}-{port or broker_port()}"


def parse_bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    """[(host, port), ...] of a bootstrap list such as "a:9092,b:9093", or a LabError naming what is wrong."""
    out = []
    for entry in (e.strip() for e in str(bootstrap).split(",")):
        if not entry:
            continue
        host, colon, port = entry.rpartition(":")
        if not colon or not host:
            raise LabError(f"{entry!r} has no port: write host:port, e.g. {entry or 'localhost'}:9092")
        try:
            number = int(port)
        except ValueError:
            raise LabError(f"{entry!r}: {port!r} is not a port number: write host:port, e.g. localhost:9092") from None
        if not 0 < number < 65536:
            raise LabError(f"{entry!r}: port {number} is out of range (1-65535)")
        out.append((host.strip("[]"), number))
    if not out:
        raise LabError("the bootstrap list is empty: write host:port, e.g. localhost:9092")
    return out


def probe_one(host: str, port: int, timeout: float = 2.0) -> str:
    """'kafka', 'closed' (nothing listens), 'other' (not Kafka) or 'unknown host' for one address."""
    try:
        sock = socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout)
    except socket.gaierror:
        return "unknown host"
    except (OSError, ValueError):
        return "closed"
    try:
        sock.settimeout(timeout)
        _kafka_request(sock, 18, 0, b"", 7)  # ApiVersions
        from streamlab.lab.access import uses_sasl

        if not uses_sasl():  # a SASL listener closes the connection at any request but a handshake
            _kafka_request(sock, 3, 0, struct.pack(">i", 0), 8)  # Metadata for no topics
        return "kafka"
    except (OSError, ValueError, struct.error):
        return "other"
    finally:
        sock.close()


def probe_all(bootstrap: str, timeout: float = 2.0) -> dict[str, str]:
    """{"host:port": probe_one's answer} for every entry of a bootstrap list ({} when it cannot be parsed)."""
    try:
        entries = parse_bootstrap(bootstrap)
    except LabError:
        return {}
    return {f"{h}:{p}": probe_one(h, p, timeout) for h, p in entries}


def probe(bootstrap: str, timeout: float = 2.0) -> str:
    """Return 'kafka' (some entry of the list answers as Kafka), 'closed' (nothing listens) or 'other'."""
    try:
        entries = parse_bootstrap(bootstrap)
    except LabError:
        return "closed"
    states = []
    for host, port in entries:
        state = probe_one(host, port, timeout)
        if state == "kafka":
            return "kafka"
        states.append(state)
    return "other" if "other" in states else "closed"


def topic_states(bootstrap: str, names: list[str], timeout: float = 2.0) -> dict[str, bool] | None:
    """{topic: exists} as the broker's metadata says (never auto-creating one), or None when no entry answers."""
    try:
        entries = parse_bootstrap(bootstrap)
    except LabError:
        return None
    body = struct.pack(">i", len(names)) + b"".join(struct.pack(">h", len(n.encode())) + n.encode() for n in names)
    body += b"\x00"  # Metadata v4: allow_auto_topic_creation = false
    for host, port in entries:
        try:
            with socket.create_connection((host, port), timeout=timeout) as sock:
                sock.settimeout(timeout)
                data = _kafka_request(sock, 3, 4, body, 9)
        except (OSError, ValueError, struct.error):
            continue
        try:
            return _metadata_topics(data)
        except (ValueError, struct.error, IndexError):
            continue
    return None


def _metadata_topics(data: bytes) -> dict[str, bool]:
    """{topic: exists} from a Metadata v4 response body."""
    pos = 4  # throttle_time_ms

    def i32():
        nonlocal pos
        (v,) = struct.unpack_from(">i", data, pos)
        pos += 4
        return v

    def i16():
        nonlocal pos
        (v,) = struct.unpack_from(">h", data, pos)
        pos += 2
        return v

    def string():
        nonlocal pos
        n = i16()
        if n < 0:
            return None
        v = data[pos:pos + n].decode()
        pos += n
        return v

    for _ in range(i32()):  # brokers: node_id, host, port, rack
        i32(), string(), i32(), string()
    string()  # cluster_id
    i32()  # controller_id
    out = {}
    for _ in range(i32()):
        error, name = i16(), string()
        pos += 1  # is_internal
        for _ in range(i32()):  # partitions: error, index, leader, replicas[], isr[]
            i16(), i32(), i32()
            for _ in range(2):
                count = i32()
                pos += 4 * count
        out[name] = error == 0
    return out


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


def external_bootstrap() -> str | None:
    """$KAFKA_BOOTSTRAP, when the lab is pointed at a broker it does not manage."""
    return settings.kafka_bootstrap


def already_running(on_cluster: bool = False, timeout: float = 1.0) -> bool:
    """Whether the lab's Kafka is there before a command starts it: $KAFKA_BOOTSTRAP, the cluster's folder (on a
    cluster), or anything listening on the broker's port. A command stops at its end only what it started."""
    if external_bootstrap():
        return True
    if on_cluster:
        from streamlab.lab import cluster

        return cluster.folder().exists()
    return probe(f"127.0.0.1:{broker_port()}", timeout=timeout) != "closed"


def ensure_broker(kind: str | None = None, port: int | None = None) -> str:
    """Return the bootstrap address, starting (or reusing) the lab's broker when $KAFKA_BOOTSTRAP is unset."""
    external = external_bootstrap() if kind is None else None
    if external:
        check_bootstrap(external, "KAFKA_BOOTSTRAP", "Start that broker (`docker compose up -d kafka`) or unset "
                        "KAFKA_BOOTSTRAP to use the lab's own broker.")
        return external
    if kind is None and port is None:
        from streamlab.lab import cluster

        if cluster.wanted():  # $STREAMLAB_CLUSTER=1 or setup(cluster=True): the three brokers
            return cluster.ensure()
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
        (start_kafka if kind == "kafka" else _start_noida)(port, folder)
    return address


def check_bootstrap(bootstrap: str, what: str, fix: str, timeout: float = 3.0) -> None:
    """A LabError naming `what` (the variable or option) when no entry of `bootstrap` answers as Kafka."""
    try:
        entries = parse_bootstrap(bootstrap)
    except LabError as exc:
        raise LabError(f"{what}={bootstrap}: {exc}") from None
    states = {f"{h}:{p}": probe_one(h, p, timeout) for h, p in entries}
    if "kafka" in states.values():
        return
    why = []
    for address, state in states.items():
        host = address.rpartition(":")[0]
        why.append({"closed": f"nothing answers at {address}",
                    "unknown host": f"the host {host!r} is not known (a typo, or a container that is not running)",
                    "other": f"what answers at {address} is not Kafka"}[state])
    raise LabError(f"{what}={bootstrap} but {'; '.join(why)}. {fix}")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _kafka_config(port: int, folder: Path) -> Path:
    """Write a single-node KRaft broker's config (its controller on a free port) and return its path."""
    controller = free_port()
    lines = kraft_properties(1, f"1@127.0.0.1:{controller}", "PLAINTEXT", port, controller, folder / "data")
    path = folder / "server.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    log_conf = folder / "log4j2.properties"
    log_conf.write_text(_LOG4J.replace("@LOG@", str(folder / "broker.log")))
    return path


def start_kafka(port: int, folder: Path, cds_options: list[str] | None = None) -> None:
    """Format (the first time) and start the broker; its JVM maps the class-data sharing archive when there is one
    (cds_options: setup's throw-away broker that makes it)."""
    from streamlab.lab import cds

    config = _kafka_config(port, folder)
    data = folder / "data"
    if not (data / "meta.properties").is_file():
        # Never formatted, or a format that was cut short: nothing in it to keep.
        import shutil

        shutil.rmtree(data, ignore_errors=True)
        try:
            done = subprocess.run(_java(folder, "kafka.tools.StorageTool", "format", "-t", CLUSTER_ID,
                                        "-c", str(config), "--ignore-formatted"),
                                  capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise LabError("Formatting the broker's storage took over 180 s (is the machine overloaded?): try "
                           "`python -m streamlab broker start` again when it is quieter.") from None
        if done.returncode != 0:
            raise LabError(f"Formatting the broker's storage failed: {_last_lines(done.stdout + done.stderr)}")
    heap = [*KAFKA_HEAP, *(cds.broker_options() if cds_options is None else cds_options)]
    _launch(_java(folder, "kafka.Kafka", str(config), heap=heap), port, folder, "Apache Kafka")


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
    try:
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
        raise LabError(f"The {label} broker did not answer within {START_TIMEOUT_S:.0f} s: {_log_tail(folder)} "
                       f"(full log: {folder / 'broker.log'})")
    except BaseException:
        # Whatever went wrong after the launch (a timeout, Ctrl-C, a pid file that cannot be written), the JVM
        # must not outlive it: nothing else would know to stop it.
        if proc.poll() is None:
            _terminate(proc.pid, grace=5.0)
        try:
            (folder / "broker.pid").unlink(missing_ok=True)
        except OSError:
            pass
        raise


def _damage_hint(folder: Path) -> str:
    if (folder / "data" / "meta.properties").is_file():
        return (". If its data folder was damaged (a crash while writing it), `python -m streamlab broker reset` "
                "deletes it, and the lab's topics, and starts afresh")
    return ""


def _processes_naming(folder: Path) -> list[int]:
    """Live processes whose command line names this broker folder (a broker whose pid file was lost)."""
    try:
        import psutil
    except ImportError:
        return []
    found, mark = [], str(folder)
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            args = proc.info["cmdline"] or []
            if any(a.endswith("=" + mark) or (mark + "/") in a or a == mark for a in args):
                found.append(proc.info["pid"])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return [pid for pid in found if pid != os.getpid()]


def stop_broker(kind: str | None = None, port: int | None = None) -> bool:
    """Stop the broker streamlab started on this port; return whether one was running."""
    port = port or broker_port()
    stopped = False
    for each in ([kind] if kind else KINDS):
        folder = data_dir(port, each)
        pid = _our_pid(each, port)
        if pid is not None:
            _terminate(pid)
            stopped = True
        for stray in _processes_naming(folder):  # one whose pid file was never written or was lost
            _terminate(stray, grace=5.0)
            stopped = True
        for leftover in (folder / "broker.pid", folder / LAB_STARTED):
            try:
                leftover.unlink(missing_ok=True)
            except OSError:
                pass
    return stopped


# -- who uses a broker streamlab started: a lab stops it only when the last user leaves -------------------------

LAB_STARTED = "started-by-lab"


def add_user(kind: str | None = None, port: int | None = None) -> None:
    """Register this process as a user of the lab's broker (quietly nothing where the folder is read-only)."""
    from streamlab.lab.owners import my_token

    users = data_dir(port, kind) / "users"
    try:
        users.mkdir(parents=True, exist_ok=True)
        (users / my_token()).write_text(str(os.getpid()))
    except OSError:
        pass


def remove_user(kind: str | None = None, port: int | None = None) -> None:
    """This process no longer uses the lab's broker."""
    from streamlab.lab.owners import my_token

    try:
        (data_dir(port, kind) / "users" / my_token()).unlink(missing_ok=True)
    except OSError:
        pass


def other_users(kind: str | None = None, port: int | None = None) -> list[int]:
    """The pids of the other live processes using the lab's broker (files of dead ones are removed)."""
    from streamlab.lab.owners import alive, my_token

    users = data_dir(port, kind) / "users"
    found = []
    for entry in sorted(users.glob("*")) if users.is_dir() else []:
        if entry.name == my_token():
            continue
        if alive(entry.name):
            try:
                found.append(int(entry.read_text().strip() or 0))
            except (OSError, ValueError):
                found.append(0)
        else:
            try:
                entry.unlink(missing_ok=True)
            except OSError:
                pass
    return found


def mark_lab_started(kind: str | None = None, port: int | None = None) -> None:
    """Note that a lab started this broker, so the last lab (or kernel) to leave stops it."""
    try:
        (data_dir(port, kind) / LAB_STARTED).touch()
    except OSError:
        pass


def lab_started(kind: str | None = None, port: int | None = None) -> bool:
    """Whether a lab started the broker now running (and so a lab stops it when its last user leaves)."""
    return (data_dir(port, kind) / LAB_STARTED).exists() and started_by_streamlab(port)


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
