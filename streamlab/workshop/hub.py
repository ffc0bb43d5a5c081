"""JupyterHub for a room: its configuration, and the spawner that gives each learner a home, limits and credentials.

At a learner's first login the spawner (WorkshopSpawner):
- makes the learner's home `<root>/home/<name>` (mode 0700) and, when the hub runs as root, a Linux user
  `sl-<name>` that owns it and runs the learner's server, so learners cannot read each other's files; the server
  runs behind walls of its own (walls.py: no other home, no hidden tests, no hub secret or Kafka data in sight);
- copies the course's student notebooks (`notebooks/`, never `solutions/`) into `~/notebooks` (only once: a
  learner's work is never overwritten);
- creates the learner's SCRAM user and prefixed ACLs on the room's Kafka (streamlab.workshop.kafka) and writes
  their credentials to `~/.streamlab/kafka.properties` (0600), which streamlab.lab.access reads;
- stores the learner's variant seeds (the ones `grader grade` uses for this learner id), so the numbers in their
  notebooks are the numbers they are graded with.
Each server gets `STREAMLAB_TOPIC_PREFIX=<name>-`, `TMPDIR=~/.tmp` (checkpoint folders live in the learner's
home), Spark capped at `STREAMLAB_SPARK_CORES` cores and a `STREAMLAB_SPARK_MEMORY` heap, and, where the
kernel's cgroup memory controller is writable, a memory limit on the whole server (kernels and Spark included).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
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
    spark_cores: int = 1
    spark_memory: str = "1g"
    cull_timeout_s: int = 2700
    cull_every_s: int = 300
    activity_interval_s: int = 60
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
        from streamlab.workshop.kafka import Room

        return Room(Path(self.root) / "kafka", self.kafka_port, self.controller_port)

    def home(self, name: str) -> Path:
        """Learner `name`'s home."""
        return Path(self.root) / "home" / name


def default_root() -> Path:
    """$STREAMLAB_WORKSHOP_ROOT, else .streamlab/workshop beside the code."""
    return Path(os.environ.get("STREAMLAB_WORKSHOP_ROOT") or REPO / ".streamlab" / "workshop")


def proxy_command() -> str:
    """configurable-http-proxy from the project's own npm folder (`make workshop` installs it there)."""
    path = REPO / ".streamlab" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
    if not path.exists():
        from streamlab.errors import LabError

        raise LabError(f"configurable-http-proxy is not installed at {path}: run `make workshop` (it runs "
                       "npm install --prefix .streamlab/node configurable-http-proxy)")
    return str(path)


def write_config(settings: Settings) -> Path:
    """Write the hub's folder: jupyterhub_config.py, the learners' server config; return the config's path."""
    hub = Path(settings.root) / "hub"
    hub.mkdir(parents=True, exist_ok=True)
    os.chmod(settings.root, 0o711)  # learners reach their homes below it, but cannot list it
    settings.save()
    server_config = hub / "server-config"
    (server_config / "labconfig").mkdir(parents=True, exist_ok=True)
    (server_config / "labconfig" / "page_config.json").write_text(json.dumps({"disabledExtensions": {
        "@jupyter/nbgrader": True, "@jupyterlab/apputils-extension:announcements": True}}, indent=1))
    extensions = {f"nbgrader.server_extensions.{n}": False
                  for n in ("formgrader", "assignment_list", "course_list", "validate_assignment")}
    extensions["streamlab.workshop.activity"] = True
    (server_config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": extensions}}, indent=1))
    for path in (server_config, server_config / "labconfig"):
        os.chmod(path, 0o755)
    config = hub / "jupyterhub_config.py"
    config.write_text("# Written by python -m streamlab.workshop start; edit workshop.json, not this file.\n"
                      "from streamlab.workshop.hub import configure\n"
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
    c.Spawner.default_url = "/lab/tree/notebooks"
    c.Spawner.cmd = [str(VENV_BIN / "jupyterhub-singleuser")]
    c.Spawner.mem_limit = settings.mem_limit
    c.Spawner.cpu_limit = float(settings.spark_cores)
    c.Spawner.start_timeout = 120
    c.Spawner.http_timeout = 90
    # How often a learner's server reports its last activity to the hub; a busy kernel counts (activity.py).
    c.Spawner.environment = {"JUPYTERHUB_ACTIVITY_INTERVAL": str(settings.activity_interval_s)}
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
        c.NativeAuthenticator.open_signup = False  # the instructor approves each sign-up at /hub/authorize
        c.NativeAuthenticator.minimum_password_length = 8
        c.Authenticator.allow_all = True  # everyone the instructor approved
    token = _secret(hub / "instructor.token")
    c.JupyterHub.services = [
        {"name": "idle-culler", "command": [sys.executable, "-m", "jupyterhub_idle_culler",
                                            f"--timeout={settings.cull_timeout_s}",
                                            f"--cull-every={settings.cull_every_s}"]},
        {"name": "instructor", "api_token": token},
    ]
    c.JupyterHub.load_roles = [
        {"name": "idle-culler", "services": ["idle-culler"],
         "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]},
        {"name": "admin", "services": ["instructor"]},  # the instructor user is admin by admin_users
    ]


def _secret(path: Path) -> str:
    import secrets

    if not path.is_file():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
    return path.read_text().strip()


def _cgroup_root() -> Path | None:
    """A writable memory cgroup folder for the learners' servers (v1 or v2), or None."""
    for base in (Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup")):
        marker = "memory.limit_in_bytes" if base.name == "memory" else "memory.max"
        if base.name != "memory" and "memory" not in (base / "cgroup.subtree_control").read_text(errors="ignore") \
                if (base / "cgroup.subtree_control").exists() else base.name != "memory":
            continue
        folder = base / "streamlab-workshop"
        try:
            folder.mkdir(exist_ok=True)
        except OSError:
            continue
        if base.name != "memory" or (folder / marker).exists():
            return folder
    return None


def _bytes(limit: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    limit = str(limit).strip().upper().rstrip("B")
    return int(float(limit[:-1]) * units[limit[-1]]) if limit and limit[-1] in units else int(limit)


from jupyterhub.spawner import LocalProcessSpawner  # noqa: E402  (the config above is importable without it)


class WorkshopSpawner(LocalProcessSpawner):
    """A learner's server as a local process: its own home and Linux user (when the hub is root), the course's
    notebooks, Kafka credentials on the room's broker, and limits (memory via a cgroup, Spark's cores and heap)."""

    def _settings(self) -> Settings:
        return Settings.load(default_root() if not os.environ.get("STREAMLAB_WORKSHOP_ROOT")
                             else os.environ["STREAMLAB_WORKSHOP_ROOT"])

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
        from streamlab.course.variants import student_seed
        from streamlab.workshop import kafka

        settings = self._settings()
        name = kafka.check_name(self.user.name)
        home = settings.home(name)
        home.mkdir(parents=True, exist_ok=True)
        os.chmod(home, 0o700)
        if accounts_possible():
            _ensure_account(self.system_name, home)
        elif os.geteuid() == 0:
            self.log.warning("%s's server runs as root, like every learner's: %s", name, ACCOUNTS_NOTE)
        notebooks = home / "notebooks"
        if not notebooks.exists():
            shutil.copytree(REPO / "notebooks", notebooks)
        state = home / ".streamlab"
        (state / "jars").parent.mkdir(parents=True, exist_ok=True)
        if not (state / "jars").exists():
            (state / "jars").symlink_to(REPO / ".streamlab" / "jars")
        variants = state / "variants.json"
        if not variants.exists():
            from grader.course import assignments

            variants.write_text(json.dumps({aid: student_seed(name, aid) for aid in assignments()}, indent=1))
        (home / ".tmp").mkdir(exist_ok=True)
        room = settings.room()
        options = kafka.write_options(state / "kafka.properties", room.bootstrap, name,
                                      kafka.add_learner(room, name))
        ids = self._ids()
        if ids:
            for path in [home, *home.rglob("*")]:
                if not path.is_symlink():
                    os.chown(path, *ids)
        return {
            "HOME": str(home), "USER": self.system_name if ids else name, "SHELL": "/bin/bash",
            "TMPDIR": str(home / ".tmp"), "STREAMLAB_HOME": str(state),
            "STREAMLAB_TOPIC_PREFIX": f"{name}-", "STREAMLAB_KAFKA_OPTIONS": str(options),
            "KAFKA_BOOTSTRAP": room.bootstrap,
            "STREAMLAB_SPARK_CORES": str(settings.spark_cores), "STREAMLAB_SPARK_MEMORY": settings.spark_memory,
            "JUPYTER_CONFIG_PATH": str(Path(settings.root) / "hub" / "server-config"),
            "PATH": f"{VENV_BIN}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
            "VIRTUAL_ENV": str(VENV_BIN.parent),
            "PYTHONPATH": str(REPO),
            **({"JAVA_HOME": os.environ["JAVA_HOME"]} if os.environ.get("JAVA_HOME") else {}),
        }

    def user_env(self, env):
        """The learner's environment (home, credentials file, prefix, limits), not the hub's."""
        env.update(self._extra)
        return env

    def make_preexec_fn(self, name):
        """In the child: join the learner's memory cgroup, become the learner's account, start in their home.
        Behind walls the account is taken at the end of the walls' script (it needs root to build them)."""
        ids, home, cgroup = None if self._walled else self._ids(), self._extra["HOME"], self._cgroup

        def preexec():
            if cgroup is not None:
                (cgroup / "cgroup.procs").write_text(str(os.getpid()))
            if ids:
                os.setgroups([])
                os.setgid(ids[1])
                os.setuid(ids[0])
            os.chdir(home)

        return preexec

    def _make_cgroup(self) -> Path | None:
        base = _cgroup_root()
        if base is None or not self.mem_limit:
            self.log.warning("no writable memory cgroup: %s's server has no memory limit beyond Spark's heap",
                             self.user.name)
            return None
        folder = base / self.user.name
        folder.mkdir(exist_ok=True)
        limit = str(self.mem_limit)
        if (folder / "memory.limit_in_bytes").exists():
            (folder / "memory.limit_in_bytes").write_text(limit)
        else:
            (folder / "memory.max").write_text(limit)
        return folder

    async def start(self):
        """Prepare the learner (in a thread: it talks to Kafka), then start their server on a port in range."""
        import asyncio

        from streamlab.workshop import walls

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
                                  config=Path(settings.root) / "hub" / "server-config", uid=uid, gid=gid)
        elif os.geteuid() == 0:
            self.log.warning("%s's server runs without walls (%s): it can read the hidden tests and the room's "
                             "Kafka data", self.user.name, walls.available())
        if os.geteuid() == 0 and not accounts_possible() and "--allow-root" not in self.args:
            self.args = [*self.args, "--allow-root"]
        return await super().start()

    _walled = False

    async def _signal(self, sig):
        """Behind walls, SIGINT and SIGTERM go to the server itself, which shuts its kernels down (unshare, the
        process the hub started, ignores them); SIGKILL goes to unshare, whose end ends everything inside."""
        if not self._walled or sig in (0, signal.SIGKILL):
            return await super()._signal(sig)
        import psutil

        try:
            inside = psutil.Process(self.pid).children()
        except psutil.Error:
            return False
        for process in inside:
            try:
                os.kill(process.pid, sig)
            except ProcessLookupError:
                pass
        return True

    async def stop(self, now=False):
        """Stop the server, then remove its cgroup and free its port."""
        await super().stop(now=now)
        _CLAIMED.discard(self.port)
        folder = getattr(self, "_cgroup", None)
        if folder is not None:
            try:
                folder.rmdir()
            except OSError:
                pass


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


class _LoginHandler(_NativeLogin):
    statsd = _NoStats()


class WorkshopNativeAuthenticator(NativeAuthenticator):
    """The native authenticator (sign-up, instructor approval at /hub/authorize), its login page working on
    JupyterHub 6."""

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
        from streamlab.workshop.kafka import check_name

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
    from streamlab.workshop import walls

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
