"""JupyterHub for a room: its configuration, and the spawner that gives each learner a home, limits and credentials.

At a learner's first login the spawner (WorkshopSpawner):
- makes the learner's home `<root>/home/<name>` (mode 0700; when the hub runs as root, a file system of its own of
  `home_limit` bytes, disks.py) and, when the hub runs as root, a Linux user
  `sl-<name>` that owns it and runs the learner's server, so learners cannot read each other's files; the server
  runs behind walls of its own (walls.py: no other home, no hidden tests, no hub secret or Kafka data in sight);
- copies the course's student notebooks (`notebooks/`, never `solutions/`) into `~/notebooks` (only once: a
  learner's work is never overwritten);
- creates the learner's SCRAM user and prefixed ACLs on the room's Kafka (workshop.kafka) and writes
  their credentials to `~/.streamlab/kafka.properties` (0600), which streamlab.lab.access reads;
- stores the learner's variant seeds (the ones `grader grade` uses for this learner id), so the numbers in their
  notebooks are the numbers they are graded with.
Each server gets `STREAMLAB_TOPIC_PREFIX=<name>-`, `TMPDIR=~/.tmp` (checkpoint folders live in the learner's
home), Spark capped at `STREAMLAB_SPARK_CORES` cores and a `STREAMLAB_SPARK_MEMORY` heap, and, where the
kernel's cgroups are writable, limits on the whole server (kernels and Spark included): memory, processes and
threads (pids), and CPU (a CFS quota of `cpu_limit` cores), in cgroup folders named after this hub's root, so two
hubs on one machine never share a learner's limits; open files and processes are also capped per process (rlimits).
Root never acts on a path the learner controls: every write into a home goes through workshop.homes,
which refuses a symlink at any step (the red team's G2-G3).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from workshop import disks, homes

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
SYSTEM_PREFIX = "sl-"


@dataclass
class Settings:
    """Everything the hub's config needs; written as workshop.json in the workshop folder."""

    root: str
    hub_port: int = 18000
    proxy_api_port: int = 18001
    hub_api_port: int = 18002
    server_ports: tuple[int, int] = (18100, 18199)
    kafka_port: int = 19292
    controller_port: int = 19392
    instructor: str = "instructor"
    auth: str = "native"  # or "lti"
    mem_limit: str = "3G"
    home_limit: str = "4G"  # each learner's home is a file system of this size (disks.py), where the hub is root
    spark_cores: int = 1
    spark_memory: str = "1g"
    cull_timeout_s: int = 2700
    cull_every_s: int = 300
    activity_interval_s: int = 60
    partitions_port: int = 0  # the hub's partitions service (partitions.py) on 127.0.0.1; 0: a free one each start
    checks_port: int = 0  # the hub's checks service (checks.py: learners' Check my work); 0: a free one each start
    lti: dict = field(default_factory=dict)

    def save(self) -> Path:
        """Write workshop.json (what jupyterhub_config.py and the instructor commands read)."""
        path = Path(self.root) / "workshop.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=1))
        return path

    @classmethod
    def load(cls, root: str | Path) -> "Settings":
        """The settings of the workshop in `root`."""
        data = json.loads((Path(root) / "workshop.json").read_text())
        data["server_ports"] = tuple(data["server_ports"])
        return cls(**data)

    def room(self):
        """The room's Kafka."""
        from workshop.kafka import Room

        return Room(Path(self.root) / "kafka", self.kafka_port, self.controller_port)

    def home(self, name: str) -> Path:
        """Learner `name`'s home."""
        return Path(self.root) / "home" / name


def default_root() -> Path:
    """$STREAMLAB_WORKSHOP_ROOT, else .streamlab/workshop beside the code."""
    from streamlab.settings import settings

    return settings.workshop_root


def proxy_command() -> str:
    """configurable-http-proxy from the project's own npm folder (`make workshop` installs it there)."""
    path = REPO / ".streamlab" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
    if not path.exists():
        from streamlab.errors import LabError

        raise LabError(f"configurable-http-proxy is not installed at {path}: run `make workshop` (it runs "
                       "npm install --prefix .streamlab/node configurable-http-proxy)")
    return str(path)


def server_config(settings: Settings) -> Path:
    """The learners' servers' Jupyter config folder (read-only to them; outside `hub/`, which is root's only)."""
    return Path(settings.root) / "server-config"


def write_config(settings: Settings) -> Path:
    """Write the hub's folder (0700: its database, logs, tokens and cookie secret are root's only), the learners'
    server config beside it (readable by all); return the config's path."""
    hub = Path(settings.root) / "hub"
    hub.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(hub, 0o700)
    os.chmod(settings.root, 0o711)  # learners reach their homes below it, but cannot list it
    settings.save()
    folder = server_config(settings)
    (folder / "labconfig").mkdir(parents=True, exist_ok=True)
    (folder / "labconfig" / "page_config.json").write_text(json.dumps({"disabledExtensions": {
        "@jupyter/nbgrader": True, "@jupyterlab/apputils-extension:announcements": True}}, indent=1))
    extensions = {f"nbgrader.server_extensions.{n}": False
                  for n in ("formgrader", "assignment_list", "course_list", "validate_assignment")}
    extensions["workshop.activity"] = True
    (folder / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": extensions}}, indent=1))
    for path in (folder, folder / "labconfig"):
        os.chmod(path, 0o755)
    for path in (folder / "jupyter_server_config.json", folder / "labconfig" / "page_config.json"):
        os.chmod(path, 0o644)
    config = hub / "jupyterhub_config.py"
    config.write_text("# Written by python -m workshop start; edit workshop.json, not this file.\n"
                      "from workshop.hub import configure\n"
                      f"configure(c, {str(settings.root)!r})\n")
    return config


def configure(c, root: str) -> None:
    """Fill JupyterHub's config object `c` for the workshop in `root` (called by jupyterhub_config.py)."""
    settings = Settings.load(root)
    hub = Path(root) / "hub"
    c.JupyterHub.bind_url = f"http://127.0.0.1:{settings.hub_port}"
    c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{settings.hub_api_port}"
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{settings.proxy_api_port}"
    c.ConfigurableHTTPProxy.command = [proxy_command()]
    c.ConfigurableHTTPProxy.pid_file = str(hub / "proxy.pid")
    c.JupyterHub.db_url = f"sqlite:///{hub / 'jupyterhub.sqlite'}"
    c.JupyterHub.cookie_secret_file = str(hub / "cookie_secret")
    c.JupyterHub.pid_file = str(hub / "hub.pid")
    c.JupyterHub.cleanup_servers = True  # stopping the hub stops every learner's server
    c.JupyterHub.spawner_class = WorkshopSpawner
    c.Spawner.default_url = "/lab/tree/notebooks/START-HERE.ipynb"  # the course's home
    c.Spawner.cmd = [str(VENV_BIN / "jupyterhub-singleuser")]
    c.Spawner.mem_limit = settings.mem_limit
    c.Spawner.cpu_limit = float(settings.spark_cores)
    # A server's start imports jupyter_server under a 1-core quota: seconds alone, minutes when a room logs in at
    # once on a loaded machine (the suite's five learners beside two other lanes missed 90 s). Wait long enough.
    c.Spawner.start_timeout = 300
    c.Spawner.http_timeout = 240
    # How often a learner's server reports its last activity to the hub; a busy kernel counts (activity.py).
    # Learners may not add partitions on the room's Kafka: the demos' slider asks the hub's partitions service.
    from streamlab.lab.broker import free_port

    partitions_url = f"http://127.0.0.1:{settings.partitions_port or free_port()}"
    # Learners' Check my work: their walls hide the hidden tests, so the hub's checks service grades for them.
    checks_url = f"http://127.0.0.1:{settings.checks_port or free_port()}"
    c.Spawner.environment = {"JUPYTERHUB_ACTIVITY_INTERVAL": str(settings.activity_interval_s),
                             "STREAMLAB_PARTITIONS_URL": partitions_url, "STREAMLAB_CHECK_URL": checks_url}
    c.Authenticator.admin_users = {settings.instructor}
    if settings.auth == "lti":
        c.JupyterHub.authenticator_class = WorkshopLTIAuthenticator
        for key, value in settings.lti.items():  # issuer, client_id, authorize_url, jwks_endpoint, username_key
            setattr(c.LTI13Authenticator, key, value)
        c.Authenticator.allow_all = True  # the LMS decides who launches the course
    else:
        import nativeauthenticator

        c.JupyterHub.authenticator_class = WorkshopNativeAuthenticator
        c.JupyterHub.template_paths = [str(Path(nativeauthenticator.__file__).parent / "templates")]
        # The instructor's account is made as the hub starts, before any sign-up, with the password kept in
        # hub/instructor.password: nobody can claim the name first (nativeauthenticator approves an admin's
        # sign-up by itself).
        c.WorkshopNativeAuthenticator.instructor = settings.instructor
        c.WorkshopNativeAuthenticator.instructor_password_file = str(hub / "instructor.password")
        c.NativeAuthenticator.open_signup = False  # the instructor approves each sign-up at /hub/authorize
        c.NativeAuthenticator.minimum_password_length = 8
        c.Authenticator.allow_all = True  # everyone the instructor approved
    token = kept_secret(hub / "instructor.token")
    c.JupyterHub.services = [
        {"name": "idle-culler", "command": [sys.executable, "-m", "jupyterhub_idle_culler",
                                            f"--timeout={settings.cull_timeout_s}",
                                            f"--cull-every={settings.cull_every_s}"]},
        {"name": "instructor", "api_token": token},
        {"name": "partitions", "url": partitions_url, "display": False,
         "command": [sys.executable, "-m", "workshop.partitions", str(settings.room().folder),
                     str(settings.kafka_port)]},
        {"name": "checks", "url": checks_url, "display": False,
         "command": [sys.executable, "-m", "workshop.checks", str(Path(root).resolve())],
         # grading as the instructor's commands grade: their lab broker, Java and lab settings (JupyterHub passes a
         # service only a few of the hub's variables)
         "environment": {k: v for k, v in os.environ.items() if k.startswith("STREAMLAB_") or k == "JAVA_HOME"}},
    ]
    c.JupyterHub.load_roles = [
        {"name": "idle-culler", "services": ["idle-culler"],
         "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]},
        {"name": "admin", "services": ["instructor"]},  # the instructor user is admin by admin_users
    ]


def kept_secret(path: Path, nbytes: int = 32) -> str:
    """The secret kept in `path` (root's only, 0600), made at first use."""
    import secrets

    if not path.is_file():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(nbytes))
    os.chmod(path, 0o600)
    return path.read_text().strip()


# Each learner's server, beside its memory limit (mem_limit): tasks (processes and threads: a server, two kernels
# and their Spark JVMs use ~300; 1,500 sleeping processes were started in R4), open files per process, CPU.
TASKS = 1024
FILES = 4096
CPU_PERIOD_US = 100_000
CONTROLLERS = ("memory", "pids", "cpu")


def _cgroup_root(root: str | Path) -> dict[str, Path]:
    """This hub's writable cgroup folders by controller (memory, pids, cpu; cgroup v1 or v2), made where missing;
    named after the workshop's folder, so two hubs on one machine never share or remove each other's."""
    import hashlib

    name = "streamlab-workshop-" + hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:12]
    top = Path("/sys/fs/cgroup")
    if (top / "cgroup.controllers").exists():  # v2: one tree, controllers handed down by cgroup.subtree_control
        folder = top / name
        try:
            folder.mkdir(exist_ok=True)
        except OSError:
            return {}
        for controller in CONTROLLERS:
            try:
                (folder / "cgroup.subtree_control").write_text(f"+{controller}")
            except OSError:
                pass  # not enabled above this hub's folder: no limit of that kind
        enabled = (folder / "cgroup.subtree_control").read_text().split()
        return {controller: folder for controller in CONTROLLERS if controller in enabled}
    found = {}
    for controller in CONTROLLERS:  # v1: a tree per controller
        if not (top / controller / "cgroup.procs").exists():
            continue
        try:
            (top / controller / name).mkdir(exist_ok=True)
        except OSError:
            continue
        found[controller] = top / controller / name
    return found


def _bytes(limit: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    limit = str(limit).strip().upper().rstrip("B")
    return int(float(limit[:-1]) * units[limit[-1]]) if limit and limit[-1] in units else int(limit)


from jupyterhub.spawner import LocalProcessSpawner  # noqa: E402  (the config above is importable without it)



def _give_notebooks(home: Path, ids: tuple[int, int] | None) -> None:
    """The course's student notebooks in the learner's ~/notebooks: all of them the first time; later, only what the
    course gained since (a new module, the home page), never a copy over the learner's own work."""
    if not homes.exists(home, "notebooks"):
        homes.copy_tree(REPO / "notebooks", home, "notebooks", ids)
        return
    for entry in sorted((REPO / "notebooks").iterdir()):
        rel = f"notebooks/{entry.name}"
        if entry.is_symlink() or homes.exists(home, rel):
            continue
        if entry.is_dir():
            homes.copy_tree(entry, home, rel, ids)
        elif entry.is_file():
            homes.write_file(home, rel, entry.read_bytes(), ids)


def _give_seeds(home: Path, name: str, ids: tuple[int, int] | None) -> None:
    """The learner's variant seeds (her exercises' numbers, which the grader uses too): made once per assignment and
    kept; an assignment the course gained since gets its seed added. Her file is read as her own or not at all."""
    from grader.course import assignments
    from streamlab.course.variants import student_seed

    rel = ".streamlab/variants.json"
    seeds: dict | None = {}
    if homes.exists(home, rel):
        try:
            seeds = json.loads(homes.read_file(home, rel, ids[0] if ids else None))
        except (homes.Refused, ValueError, OSError):
            seeds = None  # not hers, or not JSON: left as it is
    if not isinstance(seeds, dict):
        return
    missing = {aid: student_seed(name, aid) for aid in assignments() if aid not in seeds}
    if missing:
        homes.write_file(home, rel, json.dumps({**seeds, **missing}, indent=1).encode(), ids)


class WorkshopSpawner(LocalProcessSpawner):
    """A learner's server as a local process: its own home and Linux user (when the hub is root), the course's
    notebooks, Kafka credentials on the room's broker, and limits (memory via a cgroup, Spark's cores and heap)."""

    def _settings(self) -> Settings:
        return Settings.load(default_root())

    @property
    def system_name(self) -> str:
        """The Linux account the server runs as (only when the hub runs as root)."""
        return SYSTEM_PREFIX + self.user.name

    def _ids(self) -> tuple[int, int] | None:
        if not accounts_possible():
            return None
        import pwd

        entry = pwd.getpwnam(self.system_name)
        return entry.pw_uid, entry.pw_gid

    def _prepare(self) -> dict:
        """Make the home, the account, the notebooks, the Kafka user; return the server's extra environment."""
        from workshop import kafka

        settings = self._settings()
        name = kafka.check_name(self.user.name)
        home = settings.home(name)
        try:
            return self._fill_home(settings, name, home)
        except homes.Refused as exc:
            from streamlab.errors import LabError

            raise LabError(f"{name}'s server was not started: {exc}; remove that path from {home} (as root) "
                           "and start the server again") from None

    def _fill_home(self, settings: Settings, name: str, home: Path) -> dict:
        """_prepare's work in the learner's home, as root: every path there through workshop.homes,
        which follows no link the learner planted (a link on the way is refused)."""
        from streamlab.settings import settings as lab_settings  # `settings` here is the workshop's

        from workshop import kafka

        unbounded = disks.attach(settings.root, name, home, settings.home_limit)
        if unbounded and os.geteuid() == 0:
            self.log.warning("%s", unbounded)
        homes.make_home(home)
        if accounts_possible():
            _ensure_account(self.system_name, home)
        elif os.geteuid() == 0:
            self.log.warning("%s's server runs as root, like every learner's: %s", name, ACCOUNTS_NOTE)
        ids = self._ids()
        _give_notebooks(home, ids)
        state = home / ".streamlab"
        homes.make_dirs(home, ".streamlab", ids)
        homes.symlink(home, ".streamlab/jars", REPO / ".streamlab" / "jars", ids)
        _give_seeds(home, name, ids)
        homes.make_dirs(home, ".tmp", ids, mode=0o700)
        room = settings.room()
        options = kafka.write_options(state / "kafka.properties", room.bootstrap, name,
                                      kafka.add_learner(room, name), ids[0] if ids else None,
                                      gid=ids[1] if ids else None, home=home)
        if ids:
            homes.chown_tree(home, ids)
        return {
            "HOME": str(home), "USER": self.system_name if ids else name, "SHELL": "/bin/bash",
            "TMPDIR": str(home / ".tmp"), "STREAMLAB_HOME": str(state),
            "STREAMLAB_TOPIC_PREFIX": f"{name}-", "STREAMLAB_KAFKA_OPTIONS": str(options),
            "KAFKA_BOOTSTRAP": room.bootstrap,
            "STREAMLAB_SPARK_CORES": str(settings.spark_cores), "STREAMLAB_SPARK_MEMORY": settings.spark_memory,
            "JUPYTER_CONFIG_PATH": str(server_config(settings)),
            "PATH": f"{VENV_BIN}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
            "VIRTUAL_ENV": str(VENV_BIN.parent),
            "PYTHONPATH": str(REPO),
            **({"JAVA_HOME": lab_settings.java_home} if lab_settings.java_home else {}),
        }

    def user_env(self, env):
        """The learner's environment (home, credentials file, prefix, limits), not the hub's."""
        env.update(self._extra)
        return env

    def make_preexec_fn(self, name):
        """In the child: join the learner's cgroups, take the server's task and file limits, become the learner's
        account, start in their home. Behind walls the account is taken at the end of the walls' script (it needs
        root to build them); the limits hold for whatever the account then starts."""
        import resource

        ids, home, cgroups = None if self._walled else self._ids(), self._extra["HOME"], self._cgroup or []
        own_account = bool(self._walled or ids)  # else the server runs as the hub's user, whose count is not its own

        def preexec():
            for folder in cgroups:
                (folder / "cgroup.procs").write_text(str(os.getpid()))
            files = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            files = FILES if files == resource.RLIM_INFINITY else min(FILES, files)
            resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))
            if own_account:  # counted per account over the machine, threads included (root, building the
                resource.setrlimit(resource.RLIMIT_NPROC, (TASKS, TASKS))  # walls, is exempt)
            if ids:
                os.setgroups([])
                os.setgid(ids[1])
                os.setuid(ids[0])
            os.chdir(home)

        return preexec

    def _make_cgroup(self) -> list[Path]:
        """The learner's cgroup folders in this hub's, with their limits: memory (mem_limit), tasks (TASKS), CPU
        (cpu_limit, enforced by CFS quota); [] where the machine lets the hub write none (a warning says so)."""
        limits = {"memory": [("memory.limit_in_bytes", "memory.max", str(_bytes(self.mem_limit)))]
                  if self.mem_limit else [],
                  "pids": [("pids.max", "pids.max", str(TASKS))],
                  "cpu": [] if not self.cpu_limit else [
                      ("cpu.cfs_period_us", None, str(CPU_PERIOD_US)),
                      ("cpu.cfs_quota_us", "cpu.max", str(max(1000, int(self.cpu_limit * CPU_PERIOD_US))))]}
        bases = _cgroup_root(self._settings().root)
        made: list[Path] = []
        for controller, base in bases.items():
            folder = base / self.user.name
            folder.mkdir(exist_ok=True)
            for v1, v2, value in limits[controller]:
                if (folder / v1).exists():
                    (folder / v1).write_text(value)
                elif v2 == "cpu.max":
                    (folder / v2).write_text(f"{value} {CPU_PERIOD_US}")
                elif v2:
                    (folder / v2).write_text(value)
            if folder not in made:
                made.append(folder)
        missing = [controller for controller in CONTROLLERS if controller not in bases]
        if missing:
            self.log.warning("no writable %s cgroup: %s's server has no %s limit (beyond Spark's own caps)",
                             "/".join(missing), self.user.name, "/".join(missing))
        return made

    async def start(self):
        """Prepare the learner (in a thread: it talks to Kafka), then start their server on a port in range."""
        import asyncio

        from workshop import walls

        self._extra = await asyncio.get_running_loop().run_in_executor(None, self._prepare)
        self._cgroup = self._make_cgroup()
        settings = self._settings()
        self.port = _claim_port(*settings.server_ports)
        self.notebook_dir = self._extra["HOME"]
        self._plain_cmd = getattr(self, "_plain_cmd", None) or list(self.cmd)  # a restart wraps it once again
        self._walled = walls.available() is None  # None only for a hub run as root
        if self._walled:
            uid, gid = self._ids()
            self.cmd = walls.wrap(self._plain_cmd, home=Path(self._extra["HOME"]), workshop=Path(settings.root),
                                  config=server_config(settings), uid=uid, gid=gid, port=self.port,
                                  reaches=self._reaches(settings))
        elif os.geteuid() == 0:
            self.log.warning("%s's server runs without walls (%s): it can read the hidden tests and the room's "
                             "Kafka data", self.user.name, walls.available())
        if os.geteuid() == 0 and not accounts_possible() and "--allow-root" not in self.args:
            self.args = [*self.args, "--allow-root"]
        return await super().start()

    _walled = False

    def _reaches(self, settings: Settings) -> list[int]:
        """The machine's ports a walled server reaches (network.py): the room's Kafka, the hub's API, and its
        partitions and checks services."""
        from workshop import network

        return network.ports(settings.room().bootstrap, self.hub.api_url,
                             self.environment.get("STREAMLAB_PARTITIONS_URL", ""),
                             self.environment.get("STREAMLAB_CHECK_URL", ""))

    async def _signal(self, sig):
        """Behind walls, SIGINT and SIGTERM go to the namespace's pid 1, the reaper (walls.py), which passes them
        to the server, which shuts its kernels down (the relay the hub started and its child unshare leave them
        alone); SIGKILL goes to the relay, whose end ends unshare, whose end ends everything inside."""
        if not self._walled or sig in (0, signal.SIGKILL):
            return await super()._signal(sig)
        import psutil

        try:
            inside = [pid1 for unshare in psutil.Process(self.pid).children() for pid1 in unshare.children()]
        except psutil.Error:
            return False
        for process in inside:
            try:
                os.kill(process.pid, sig)
            except ProcessLookupError:
                pass
        return True

    async def stop(self, now=False):
        """Stop the server, then remove its cgroup folders (and this hub's, once empty) and free its port."""
        import asyncio

        await super().stop(now=now)
        _CLAIMED.discard(self.port)
        for folder in getattr(self, "_cgroup", None) or []:
            for _ in range(50):  # the namespace's last processes may take a moment to leave it
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    await asyncio.sleep(0.1)
            try:
                folder.parent.rmdir()  # refused while another learner of this hub has a folder there
            except OSError:
                pass
        self._cgroup = []


class _NoStats:
    """Stands in for the statsd client JupyterHub 6 no longer has (nativeauthenticator 1.3.0 times logins with it)."""

    def timer(self, *_args, **_kwargs):
        return self

    def start(self):
        return self

    def stop(self, *_args, **_kwargs):
        return None


from nativeauthenticator import NativeAuthenticator  # noqa: E402
from nativeauthenticator.handlers import LoginHandler as _NativeLogin  # noqa: E402
from traitlets import Unicode  # noqa: E402


class _LoginHandler(_NativeLogin):
    statsd = _NoStats()


class WorkshopNativeAuthenticator(NativeAuthenticator):
    """The native authenticator (sign-up, instructor approval at /hub/authorize), its login page working on
    JupyterHub 6, the instructor's account made at start, and no sign-up approved for its name alone."""

    instructor = Unicode("", config=True, help="the instructor's user name: made, approved, at start")
    instructor_password_file = Unicode("", config=True, help="where the instructor's first password is kept")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instructor and self.instructor_password_file:
            self.make_instructor()

    def make_instructor(self) -> None:
        """Create the instructor's account, approved, with the password of `instructor_password_file` (made now
        when missing), unless it exists: the hub takes no sign-up before this, so nobody can claim the name."""
        import bcrypt
        from nativeauthenticator.orm import UserInfo

        name = self.normalize_username(self.instructor)
        if self.get_user(name) is not None:
            return
        password = kept_secret(Path(self.instructor_password_file), 12)
        self.db.add(UserInfo(username=name, password=bcrypt.hashpw(password.encode(), bcrypt.gensalt()),
                             is_authorized=True))
        self.db.commit()

    def get_authed_users(self):
        """Only the approved sign-ups: nativeauthenticator adds `admin_users` and `allowed_users`, which approves
        whoever signs up first under such a name."""
        from nativeauthenticator.orm import UserInfo

        return {info.username for info in UserInfo.all_users(self.db) if info.is_authorized}

    def get_handlers(self, app):
        """Its handlers, with the login page's statsd call made harmless."""
        return [(path, _LoginHandler if handler is _NativeLogin else handler)
                for path, handler in super().get_handlers(app)]


from ltiauthenticator.lti13.auth import LTI13Authenticator  # noqa: E402
from ltiauthenticator.lti13.error import LoginError  # noqa: E402


class WorkshopLTIAuthenticator(LTI13Authenticator):
    """LTI 1.3 launches from the LMS, refused (the learner sees why) when the launch's user name is no learner name."""

    def get_username(self, token):
        """The launch's `username_key` claim (its `sub` when it has none), if the hub can make it a learner."""
        from streamlab.errors import LabError
        from workshop.kafka import check_name

        name = super().get_username(token)
        try:
            check_name(self.normalize_username(name))
        except LabError as exc:
            raise LoginError(f"{exc}; the hub takes it from the launch's {self.username_key!r} claim, or its "
                             "'sub' when it has none (docs/workshop.md, LTI 1.3)") from None
        return name


ACCOUNTS_NOTE = ("the course's Python is not executable by other accounts (e.g. pyenv under /root), so learners "
                 "cannot get Linux accounts of their own and can read each other's files and Kafka credentials; "
                 "install Python where every account can run it (see docs/workshop.md)")


def accounts_possible() -> bool:
    """Whether learners' servers can run as Linux accounts of their own: the hub is root, and either the servers
    run behind walls (walls.py, which open the way to the Python for them) or every folder on the way to the
    course's Python and its virtualenv lets others through (and the interpreter run)."""
    if os.geteuid() != 0:
        return False
    from workshop import walls

    if walls.available() is None:
        return True
    for target in (Path(sys.executable).resolve(), VENV_BIN, REPO):
        for folder in [target, *target.parents]:
            if not os.stat(folder).st_mode & 0o001:
                return False
    return True


def _ensure_account(system_name: str, home: Path) -> None:
    """Create the Linux account `system_name` with home `home`; refuse an existing account with another home."""
    import pwd
    import subprocess

    from streamlab.errors import LabError

    try:
        entry = pwd.getpwnam(system_name)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--home-dir", str(home), "--shell", "/bin/bash",
                        "--user-group", system_name], check=True, capture_output=True, timeout=30)
        return
    if Path(entry.pw_dir) != home:
        raise LabError(f"the Linux account {system_name} exists with home {entry.pw_dir}, not {home}: "
                       "it is not this workshop's; pick another learner name")


def remove_accounts(root: str | Path) -> list[str]:
    """Delete the Linux accounts this workshop made (their homes stay); return their names."""
    import pwd
    import subprocess

    home = (Path(root) / "home").resolve()
    gone = []
    for entry in pwd.getpwall():
        if entry.pw_name.startswith(SYSTEM_PREFIX) and Path(entry.pw_dir).parent == home:
            subprocess.run(["userdel", entry.pw_name], capture_output=True, timeout=30)
            gone.append(entry.pw_name)
    return gone


_CLAIMED: set[int] = set()  # ports handed to servers that may not listen yet (the hub starts several at once)


def _claim_port(low: int, high: int) -> int:
    """A port in [low, high] that no server of this hub was given and nothing listens on."""
    for port in range(low, high + 1):
        if port in _CLAIMED:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            _CLAIMED.add(port)
            return port
    from streamlab.errors import LabError

    raise LabError(f"no free port for a learner's server in {low}-{high}: stop idle servers or widen the range")
