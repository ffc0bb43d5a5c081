"""The room's Kafka: one KRaft node with SCRAM authentication, Kafka's StandardAuthorizer, and a user per learner.

Kafka's own rules, followed here:
- the first admin exists before the broker ever starts: `kafka-storage format --add-scram` writes its SCRAM
  credential into the metadata log (SCRAM credentials live there, so nothing else can create the first one);
- the controller cannot authenticate with SCRAM (it reads the credentials from the log it serves), so its listener
  uses SASL/PLAIN with a static password, and its principal `User:controller` is in `super.users` with the admin's;
  unlike a PLAINTEXT controller listener (whose ANONYMOUS principal would have to be a super user), a learner who
  connects to the controller's port gets nothing without that password;
- `allow.everyone.if.no.acl.found=false`: a learner can do only what an ACL allows.

Each learner `ada` gets the SCRAM user `ada` and PREFIXED ACLs on topics, consumer groups and transactional ids
whose names start with `ada-` (in a prefixed ACL `*` is a literal character, so `ada-*` would match only names
starting with `ada-*`): on topics the operations the course uses (LEARNER_OPERATIONS), never ALTER, the one
CreatePartitions needs. A default user quota (`--entity-default`) gives every user — each one separately, on each
broker — the same produce and fetch byte rates.

What one learner may cost the room is bounded too (the red team's K20-K22): the learners' listener takes at most
MAX_CONNECTIONS connections, CONNECTION_RATE new ones a second, and closes a connection idle for IDLE_MS, so a
connection flood can no longer exhaust the broker's files and kill it; every user has a `controller_mutation_rate`
quota; and our own topic policy (policy/RoomPolicy.java, compiled at start) caps a learner's topics: partitions at
creation, retention (no -1), record size, segment size. CreatePartitions passes neither policy, so with ALTER one
request could grow her own topic to ~10,000 partitions, past the broker's file limit (K21): learners hold no ALTER,
and the demos' partitions slider asks the hub's partitions service (partitions.py), which grows only her own topics,
to at most 12 partitions, at her mutation rate. All learners share 127.0.0.1, so Kafka cannot tell their connections
apart; the kernel can (each learner's server runs as her own account), and caps each account's connections to the
learners' listener (connections.py), so one learner cannot hold the listener's and keep the others out.

The learner's credentials reach their notebooks as a file of Spark `kafka.*` options (streamlab.lab.access).
"""
from __future__ import annotations

import os
import re
import secrets
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from streamlab.errors import LabError
from streamlab.lab.broker import kraft_properties

MECHANISM = "SCRAM-SHA-512"
ADMIN = "admin"
NAME = re.compile(r"[a-z][a-z0-9]{1,19}")
# Per learner, per broker: a live demo needs ~100 KB/s; a flood is held to this.
PRODUCE_BYTES_S = 512 * 1024
FETCH_BYTES_S = 1024 * 1024
HEAP = ["-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
# Connections: every learner shares 127.0.0.1, so per-IP limits cannot tell them apart; these keep the broker alive
# (below its open-file limit, which it also needs for its log files) and slow a flood down, for the whole room.
MAX_CONNECTIONS = 2000  # a room of 60 learners uses a few hundred; lowered to a quarter of the broker's file limit
CONNECTION_RATE = 100  # new connections per second on a listener (a class logging in at once needs a few hundred)
IDLE_MS = 180_000  # a connection that says nothing for 3 minutes is closed (clients reconnect by themselves)
CONTROLLER_CONNECTIONS = 100  # the controller's listener serves this broker only: learners have no password for it
# Per learner: partitions created or deleted per second (Kafka's controller_mutation_rate; a burst of ~11 s of it).
MUTATION_RATE = 10
# Learners' topics (policy/RoomPolicy.java; topics named admin-* and Kafka's own __* are the admin's, not capped).
TOPIC_CAPS = {"max.partitions": 32, "max.retention.ms": 7 * 24 * 3600 * 1000, "max.retention.bytes": 256 << 20,
              "max.message.bytes": 1 << 20, "min.segment.bytes": 16 << 20, "min.segment.ms": 3600 * 1000}
POLICY = "workshop.policy.RoomPolicy"
# What a learner may do on names starting with `<name>-` (prefixed ACLs). No ALTER on topics: CreatePartitions needs
# it and passes neither RoomPolicy hook (K21); the demos' slider grows topics through the hub (partitions.py).
# Groups and transactional ids: every operation Kafka has for them (Kafka 4's group configs excepted).
LEARNER_OPERATIONS = {
    "TOPIC": ("READ", "WRITE", "CREATE", "DELETE", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"),
    "GROUP": ("READ", "DESCRIBE", "DELETE"),
    "TRANSACTIONAL_ID": ("WRITE", "DESCRIBE"),
}
POLICY_SOURCE = Path(__file__).with_name("policy") / "RoomPolicy.java"


@dataclass(frozen=True)
class Room:
    """Where the room's broker listens and keeps its data."""

    folder: Path
    port: int = 19292
    controller_port: int = 19392

    @property
    def bootstrap(self) -> str:
        """The learners' bootstrap address."""
        return f"127.0.0.1:{self.port}"

    def _secret(self, name: str) -> str:
        path = self.folder / f"{name}.secret"
        if not path.is_file():
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(24))
        return path.read_text().strip()

    @property
    def admin_password(self) -> str:
        """The admin's SCRAM password (made at the first format, kept 0600 in the room's folder)."""
        return self._secret("admin")

    def admin_config(self) -> dict:
        """kafka-python arguments of the admin."""
        return {"bootstrap_servers": self.bootstrap, "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": MECHANISM, "sasl_plain_username": ADMIN,
                "sasl_plain_password": self.admin_password}


def spark_options(user: str, password: str) -> dict[str, str]:
    """The Spark `kafka.*` options that authenticate `user` (what STREAMLAB_KAFKA_OPTIONS files hold)."""
    jaas = (f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" '
            f'password="{password}";')
    return {"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": MECHANISM,
            "kafka.sasl.jaas.config": jaas}


def client_config(bootstrap: str, user: str, password: str) -> dict:
    """kafka-python arguments that authenticate `user`."""
    return {"bootstrap_servers": bootstrap, "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": MECHANISM,
            "sasl_plain_username": user, "sasl_plain_password": password}


def _server_properties(room: Room, policy: bool = False) -> Path:
    """Write the broker's config: SCRAM, ACLs, and the limits that keep one learner from taking the room's broker
    down (connections below its open-file limit, a creation rate, an idle time-out; with `policy`, RoomPolicy's caps
    on learners' topics)."""
    import resource

    controller = room._secret("controller")
    data = room.folder / "data"
    lines = kraft_properties(1, f"1@127.0.0.1:{room.controller_port}", "SASL_PLAINTEXT", room.port,
                             room.controller_port, data, controller_protocol="SASL_PLAINTEXT", threads=(3, 4))
    lines.update({
        "sasl.enabled.mechanisms": MECHANISM,
        "sasl.mechanism.inter.broker.protocol": MECHANISM,
        f"listener.name.sasl_plaintext.{MECHANISM.lower()}.sasl.jaas.config":
            f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{ADMIN}" '
            f'password="{room.admin_password}";',
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config":
            f'org.apache.kafka.common.security.plain.PlainLoginModule required username="controller" '
            f'password="{controller}" user_controller="{controller}";',
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:{ADMIN};User:controller",
        "allow.everyone.if.no.acl.found": "false",
    })
    # Connections cost the broker a file each: at its limit (20,000 here) it died (H6). Its soft limit is raised to
    # the hard one at start; a quarter of that is left to connections, the rest to its log segments and indexes.
    # The SASL listener is also the inter-broker one, which the broker-wide max.connections does not bound: its
    # listener-level limits do.
    files = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    connections = min(MAX_CONNECTIONS, (files if files != resource.RLIM_INFINITY else 1 << 20) // 4)
    lines.update({
        "max.connections": str(connections + CONTROLLER_CONNECTIONS),
        "listener.name.sasl_plaintext.max.connections": str(connections),
        "listener.name.sasl_plaintext.max.connection.creation.rate": str(CONNECTION_RATE),
        "listener.name.controller.max.connections": str(CONTROLLER_CONNECTIONS),
        "listener.name.controller.max.connection.creation.rate": str(CONNECTION_RATE),
        "connections.max.idle.ms": str(IDLE_MS),
        # A topic that sets nothing keeps at most this much per partition (learners may not set more: RoomPolicy).
        "log.retention.bytes": str(TOPIC_CAPS["max.retention.bytes"]),
    })
    if policy:
        lines.update({"create.topic.policy.class.name": POLICY, "alter.config.policy.class.name": POLICY,
                      **{f"streamlab.policy.{k}": str(v) for k, v in TOPIC_CAPS.items()}})
    path = room.folder / "server.properties"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write("".join(f"{k}={v}\n" for k, v in lines.items()))
    from streamlab.lab.kraft import LOG4J

    (room.folder / "log4j2.properties").write_text(LOG4J.replace("@LOG@", str(room.folder / "broker.log")))
    return path


def _java(room: Room, main: str, *args: str, heap: list[str] | None = None) -> list[str]:
    from streamlab.lab.kraft import java_command

    return java_command(room.folder, main, *args, heap=heap or ["-Xmx128m", "-XX:TieredStopAtLevel=1"])


def running(room: Room) -> int | None:
    """The pid of the room's broker when it runs (and is ours), else None."""
    try:
        pid = int((room.folder / "broker.pid").read_text())
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return pid if str(room.folder).encode() in handle.read() else None
    except (OSError, ValueError):
        return None


def start(room: Room, timeout: float = 180.0, produce: int = PRODUCE_BYTES_S, fetch: int = FETCH_BYTES_S) -> str:
    """Format (first time: with the admin's SCRAM credential) and start the room's broker; set the user quota
    (`produce` and `fetch` bytes per second, per user and broker)."""
    from streamlab.lab.broker import probe_one

    if running(room):
        _cap_learners(room)
        return room.bootstrap
    if probe_one("127.0.0.1", room.port) != "closed":
        raise LabError(f"port {room.port} is taken by another process: stop it or pick another "
                       "(python -m workshop start --kafka-port N)")
    room.folder.mkdir(parents=True, exist_ok=True)
    classes = _compile_policy(room)
    config = _server_properties(room, policy=classes is not None)

    def java(main: str, *args: str, heap: list[str] | None = None) -> list[str]:
        command = _java(room, main, *args, heap=heap)
        if classes is not None:  # the config names the policy class: whatever reads it must find it
            command[command.index("-cp") + 1] += os.pathsep + str(classes)
        return command

    if not (room.folder / "data" / "meta.properties").is_file():
        done = subprocess.run(java("kafka.tools.StorageTool", "format", "-t", "d29ya3Nob3Atcm9vbS0x",
                                   "-c", str(config), "--ignore-formatted",
                                   "--add-scram", f"{MECHANISM}=[name={ADMIN},password={room.admin_password}]"),
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        if done.returncode:
            raise LabError(f"formatting the room's broker failed: {(done.stdout + done.stderr).strip()[-300:]}")
    command = java("kafka.Kafka", str(config), heap=HEAP)
    with open(room.folder / "broker.out", "ab") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=room.folder, preexec_fn=_all_files)
    (room.folder / "broker.pid").write_text(str(proc.pid))
    deadline = time.monotonic() + timeout
    while True:
        if time.monotonic() > deadline:
            stop(room)
            raise LabError(f"the room's broker did not answer within {timeout:.0f} s; see {room.folder / 'broker.log'}")
        if proc.poll() is not None:
            from streamlab.lab.kraft import log_tail

            raise LabError(f"the room's broker exited at start: {log_tail(room.folder)} "
                           f"(log: {room.folder / 'broker.log'})")
        if probe_one("127.0.0.1", room.port, timeout=0.5) == "closed":
            time.sleep(0.2)  # a client made before the port listens backs off for up to half a minute
            continue
        try:
            admin = admin_client(room)
            admin.list_topics()
            admin.close()
            break
        except Exception:
            if time.monotonic() > deadline:
                stop(room)
                raise LabError(f"the room's broker did not answer within {timeout:.0f} s; see "
                               f"{room.folder / 'broker.log'}") from None
            time.sleep(0.5)
    set_quotas(room, produce, fetch)
    _cap_learners(room)
    return room.bootstrap


def _cap_learners(room: Room) -> None:
    """Each learner's account at most connections.LEARNER_CONNECTIONS to the learners' listener (the kernel's count,
    connections.py); where the machine cannot, a warning that says what that leaves open and the fix."""
    import sys

    from workshop import connections

    why = connections.cap(room.folder, room.port)
    if why:
        print(f"warning: {why}: a learner's connections to the room's Kafka are not capped, so one learner can hold "
              f"its listener's {MAX_CONNECTIONS} and keep the others out until hers close", file=sys.stderr)


def _all_files() -> None:
    """In the broker's process: its open-file soft limit raised to the hard one (max.connections is set below it)."""
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _compile_policy(room: Room) -> Path | None:
    """Compile policy/RoomPolicy.java against the broker's kafka-clients jar into the room's folder; the folder of
    its classes, or None (with a warning: learners' topics are then uncapped) where there is no javac."""
    import shutil
    import sys

    from streamlab.lab.broker import broker_bundle
    from streamlab.lab.session import java_binary

    beside = Path(java_binary()).resolve().parent / "javac"  # the JDK of the java that runs the broker
    javac = str(beside) if os.access(beside, os.X_OK) else shutil.which("javac")
    jars = [str(p) for p in broker_bundle().jars() if Path(p).name.startswith("kafka-clients-")]
    if not javac or not jars:
        print("warning: no javac (install a JDK, e.g. apt install openjdk-17-jdk-headless): learners' topics on the "
              "room's broker have no cap on partitions, retention or record size", file=sys.stderr)
        return None
    classes = room.folder / "policy"
    shutil.rmtree(classes, ignore_errors=True)
    done = subprocess.run([javac, "-nowarn", "-d", str(classes), "-cp", jars[0], str(POLICY_SOURCE)],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    if done.returncode:
        raise LabError(f"compiling {POLICY_SOURCE.name} failed: {(done.stdout + done.stderr).strip()[-300:]}")
    return classes


def stop(room: Room) -> bool:
    """Stop the room's broker (SIGTERM, then SIGKILL after 15 s); whether it ran."""
    from streamlab.lab.kraft import terminate
    from workshop import connections

    pid = running(room)
    if pid:
        terminate(pid)
    (room.folder / "broker.pid").unlink(missing_ok=True)
    connections.uncap(room.folder)
    return bool(pid)


def admin_client(room: Room):
    """A Kafka admin client for the room's broker, as its admin user (SCRAM)."""
    from kafka import KafkaAdminClient

    return KafkaAdminClient(client_id="streamlab-workshop", request_timeout_ms=15_000, **room.admin_config())


def set_quotas(room: Room, produce: int = PRODUCE_BYTES_S, fetch: int = FETCH_BYTES_S) -> None:
    """Every user's default produce/fetch byte rate and partition mutation rate (per broker; Kafka's CLI class)."""
    props = room.folder / "admin-client.properties"
    fd = os.open(props, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write("".join(f"{k[6:]}={v}\n" for k, v in spark_options(ADMIN, room.admin_password).items()))
    # The default applies to each user separately, the admin's byte rates included (it only provisions).
    # controller_mutation_rate: partitions a user may create or delete per second (K21: a few requests of thousands);
    # the admin's own is high (quotas resolve per kind: its byte rates stay the default).
    for entity, quotas in ((["--entity-default"], f"producer_byte_rate={produce},consumer_byte_rate={fetch},"
                                                   f"controller_mutation_rate={MUTATION_RATE}"),
                           (["--entity-name", ADMIN], f"controller_mutation_rate={MUTATION_RATE * 10_000}")):
        done = subprocess.run(_java(room, "kafka.admin.ConfigCommand", "--bootstrap-server", room.bootstrap,
                                    "--command-config", str(props), "--alter", "--entity-type", "users", *entity,
                                    "--add-config", quotas),
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        if done.returncode:
            raise LabError(f"setting the user quotas failed: {(done.stdout + done.stderr).strip()[-300:]}")


def add_learner(room: Room, name: str, password: str | None = None) -> str:
    """Create (or reset) learner `name`'s SCRAM user and their prefixed ACLs; return the password."""
    from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                             ResourcePattern, ResourcePatternFilter, ResourceType, ScramMechanism,
                             UserScramCredentialUpsertion)

    check_name(name)
    password = password or secrets.token_urlsafe(18)
    admin = admin_client(room)
    try:
        admin.alter_user_scram_credentials([UserScramCredentialUpsertion(name, ScramMechanism.SCRAM_SHA_512,
                                                                         password)])
        principal = f"User:{name}"
        # A room provisioned before LEARNER_OPERATIONS gave operation ALL (ALTER with it): reset it away.
        admin.delete_acls([ACLFilter(principal, None, ACLOperation.ALL, ACLPermissionType.ANY,
                                     ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))])
        acls = [ACL(principal, "*", getattr(ACLOperation, operation), ACLPermissionType.ALLOW,
                    ResourcePattern(getattr(ResourceType, kind), f"{name}-", ACLResourcePatternType.PREFIXED))
                for kind, operations in LEARNER_OPERATIONS.items() for operation in operations]
        result = admin.create_acls(acls)
        failed = result.get("failed") if isinstance(result, dict) else None
        if failed:
            raise LabError(f"creating {name}'s ACLs failed: {failed}")
    finally:
        admin.close()
    return password


def learner_acls(room: Room, name: str) -> list[tuple[str, str, str, str]]:
    """(resource type, name, pattern type, operation) of every ACL of `name`."""
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ResourcePatternFilter, ResourceType
    from kafka.admin import ACLResourcePatternType

    admin = admin_client(room)
    try:
        found, _error = admin.describe_acls(ACLFilter(f"User:{name}", None, ACLOperation.ANY, ACLPermissionType.ANY,
                                                      ResourcePatternFilter(ResourceType.ANY, None,
                                                                            ACLResourcePatternType.ANY)))
    finally:
        admin.close()
    return sorted((a.resource_pattern.resource_type.name, a.resource_pattern.resource_name,
                   a.resource_pattern.pattern_type.name, a.operation.name) for a in found)


def write_options(path: Path, bootstrap: str, user: str, password: str, uid: int | None = None, *,
                  gid: int | None = None, home: Path | None = None) -> Path:
    """Write the learner's `kafka.*` options file (0600, owned by the learner when `uid` is given). Root writes it
    without following any link from `home` (default: the file's folder) on: a new file renamed over the old one."""
    from workshop import homes

    if home is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        home = path.parent
    text = (f"# {user}'s credentials on the workshop's Kafka at {bootstrap}: keep them to yourself\n"
            + "".join(f"{k}={v}\n" for k, v in spark_options(user, password).items()))
    ids = None if uid is None else (uid, -1 if gid is None else gid)
    homes.write_file(home, path.relative_to(home), text.encode(), ids, mode=0o600)
    return path


RESERVED = (ADMIN, "controller", "learner")


def check_name(name: str) -> str:
    """`name` if it is a learner name Kafka, Linux and the hub all accept, else a LabError saying what is."""
    # "learner" is the grader's name for the self-paced learner of this machine (grader.grading.DEFAULT_STUDENT):
    # graded under it, a room's learner would get root's own variant and quiz record instead of hers
    if not NAME.fullmatch(name or "") or name in RESERVED:
        raise LabError(f"{name!r} cannot be a learner name: use 2-20 lowercase letters and digits, starting with "
                       f"a letter (not {', '.join(RESERVED)})")
    return name
