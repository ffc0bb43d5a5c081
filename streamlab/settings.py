"""Every environment variable the course reads, declared once: its name, type, default, help and check.

Why one place: about thirty variables used to be read in two dozen files, each with its own parsing and its own
wording for a bad value (the broker's port parser and the cluster's disagreed on the upper bound). Here each is one
`Setting`; `python -m streamlab settings` lists them with their values, and tests/unit/test_settings.py keeps every
other module of streamlab/, grader/, workshop/ and bench/ from reading os.environ itself.

Why read when used, never cached: tests set variables with monkeypatch, and the grader, the hub and the bench hand
them to the processes they start, so `settings.broker_port` reads os.environ at that moment. A bad value is one
SettingError line naming the variable and the fix, raised only where that setting is used.

The settings module stands below everything (it imports only streamlab.errors): the lab, the grader, the workshop
and the bench may all import it.
"""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from streamlab.errors import LabError

ROOT = Path(__file__).resolve().parents[1]
LEARNER, INSTRUCTOR, INTERNAL = "learner", "cluster, workshop, bench and grader", "internal"
SCOPES = (LEARNER, INSTRUCTOR, INTERNAL)  # who sets it: a learner, an instructor or a team, the course itself


class SettingError(LabError, ValueError):
    """An environment variable set to a value it cannot take; the message names it and the fix (one line)."""


@dataclass(frozen=True)
class Setting:
    """One environment variable: read from os.environ each time its value is asked for."""

    name: str
    parse: Callable[[str, "Setting"], Any]  # the raw text (set, possibly empty) -> the value, or a SettingError
    default: Any  # the value when the variable is unset
    help: str
    scope: str = LEARNER
    shown: str = ""  # the default as a person reads it, when that is not the value itself ("the connector")
    secret: bool = False  # listed as set or unset, never its text
    attr: str = field(default="", compare=False)

    def __set_name__(self, owner, attr: str) -> None:
        object.__setattr__(self, "attr", attr)

    def __get__(self, obj, owner=None):
        return self if obj is None else self.value()

    def raw(self) -> str | None:
        """The variable's text as set now, or None when unset."""
        return os.environ.get(self.name)

    def is_set(self) -> bool:
        """Whether the variable holds something other than blanks (its value is not parsed)."""
        return bool((self.raw() or "").strip())

    def value(self):
        """The value in force now: the default when unset, else the parsed text (or a SettingError)."""
        raw = self.raw()
        return self.default if raw is None else self.parse(raw, self)

    def default_text(self) -> str:
        """The default as `python -m streamlab settings` and the docs show it."""
        if self.shown:
            return self.shown
        if self.default is None or self.default == "":
            return "unset"
        if isinstance(self.default, bool):
            return "on" if self.default else "off"
        if isinstance(self.default, Path):
            return str(self.default.relative_to(ROOT)) + "/" if self.default.is_relative_to(ROOT) else str(self.default)
        return str(self.default)


# --- parsers: (raw text, the setting) -> value ------------------------------------------------------------------

def text(raw: str, setting: Setting) -> str:
    """The text as set (an empty value is kept)."""
    return raw


def text_or_none(raw: str, setting: Setting) -> str | None:
    """The text, or None when empty (as if unset)."""
    return raw or None


def path_or_default(raw: str, setting: Setting) -> Path:
    """A folder; an empty value means the default."""
    return Path(raw) if raw else setting.default


def flag(*yes: str, strip: bool = True) -> Callable[[str, Setting], bool]:
    """True when the (lower-cased) text is one of `yes`."""
    return lambda raw, setting: (raw.strip() if strip else raw).lower() in yes


def unless(*no: str, strip: bool = True) -> Callable[[str, Setting], bool]:
    """True unless the (lower-cased) text is one of `no`."""
    return lambda raw, setting: (raw.strip() if strip else raw).lower() not in no


def non_empty(raw: str, setting: Setting) -> bool:
    """True when set to anything (GRADER_DEBUG=1)."""
    return bool(raw)


def port(example: int, top: int = 65535) -> Callable[[str, Setting], int]:
    """A TCP port from 1 to `top`; an empty value is refused."""
    def parse(raw: str, setting: Setting) -> int:
        try:
            number = int(raw)
        except ValueError:
            raise SettingError(f"{setting.name}={raw!r} is not a port number: set it to e.g. {example}") from None
        if not 0 < number <= top:
            raise SettingError(f"{setting.name}={number} is out of range (1 to {top}): set it to e.g. {example}")
        return number
    return parse


def number(kind: type, what: str, example: str, above_zero: bool = True) -> Callable[[str, Setting], Any]:
    """An int or float (above 0 when `above_zero`); an empty value means the default."""
    def parse(raw: str, setting: Setting):
        if not raw.strip():
            return setting.default
        try:
            value = kind(raw)
        except ValueError:
            raise SettingError(f"{setting.name}={raw!r} is not {what}: unset it or give e.g. {example}") from None
        if above_zero and not value > 0:
            raise SettingError(f"{setting.name}={raw!r} is not {what} above 0: unset it or give e.g. {example}")
        return value
    return parse


def whole_number(raw: str, setting: Setting) -> int | None:
    """A whole number, or None when blank."""
    raw = raw.strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise SettingError(f"{setting.name}={raw!r} is not a whole number; unset it or give e.g. 1234") from None


def engine_name(raw: str, setting: Setting) -> str:
    """'', 'connector' or 'offline' (case and blanks ignored)."""
    asked = raw.strip().lower()
    if asked not in ("", "connector", "offline"):
        raise SettingError(f"{setting.name}={asked!r} is not an engine: use connector (the default) or offline.")
    return asked


def cores(raw: str, setting: Setting) -> str | None:
    """A whole number of cores above 0, as text (Spark's conf takes text), or None when blank."""
    raw = raw.strip()
    if raw and (not raw.isdigit() or int(raw) < 1):
        raise SettingError(f"{setting.name}={raw!r} is not a whole number of cores above 0: set it to e.g. 1")
    return raw or None


def seconds(raw: str, setting: Setting) -> float | None:
    """A number of seconds from 0 to a day, or None when blank."""
    raw = raw.strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise SettingError(f"{setting.name}={raw!r} is not a number of seconds: unset it or give e.g. 20") from None
    if not 0 <= value <= 86_400:
        raise SettingError(f"{setting.name}={raw!r} is not a number of seconds from 0 to 86,400: unset it or give "
                           "e.g. 20")
    return value


def rounds(raw: str, setting: Setting) -> dict[str, int]:
    """{question: round} from JSON; what is not a JSON object counts as no rounds."""
    try:
        given = json.loads(raw or "{}")
    except ValueError:
        return {}
    return {str(q): int(r) for q, r in given.items()} if isinstance(given, dict) else {}


def names(raw: str, setting: Setting) -> list[str]:
    """A comma-separated list."""
    return raw.split(",")


# --- the settings ----------------------------------------------------------------------------------------------

class Settings:
    """The course's environment variables: `settings.broker_port` is the value now, `Settings.broker_port` the
    declaration (name, default, help)."""

    # What a learner may set (docs/settings.md, `make help`).
    broker_port = Setting("STREAMLAB_BROKER_PORT", port(9093), 9092,
                          "the port of the lab's own broker (its data goes to .streamlab/kafka-<port>/): two labs on "
                          "one machine each take their own")
    kafka_bootstrap = Setting("KAFKA_BOOTSTRAP", text_or_none, None,
                              "host:port of another broker to use instead of starting one (Docker's, say)")
    engine = Setting("STREAMLAB_ENGINE", engine_name, "", "offline runs the offline fallback (docs/offline.md); connector "
                     "refuses to fall back", shown="the connector")
    seed = Setting("STREAMLAB_SEED", whole_number, None, "your variant's seed (the numbers in exercises); the grader sets it "
                   "itself", shown="stored per assignment")
    home = Setting("STREAMLAB_HOME", path_or_default, ROOT / ".streamlab",
                   "where the jar cache, broker data, stored variants and your progress and quiz record live")
    spark_ui = Setting("STREAMLAB_SPARK_UI", text, "false", "true serves Spark's own UI on 127.0.0.1:4040")
    cds = Setting("STREAMLAB_CDS", unless("off", "0", "false", "no"), True,
                  "off starts Spark's driver and the lab's brokers without the class-data sharing archives")
    java_home = Setting("JAVA_HOME", text_or_none, None, "the Java 17 Spark and the broker run on",
                        shown="the java on PATH")
    ci = Setting("CI", flag("1", "true", "yes", strip=False), False,
                 "true: a missing prerequisite (jars, Chromium, docker-compose) fails instead of falling back")
    grader_debug = Setting("GRADER_DEBUG", non_empty, False, "1: the grader prints a traceback for an internal error")
    demo_seconds = Setting("STREAMLAB_DEMO_SECONDS", seconds, None,
                           "every live demo ends this many seconds after its script, as under the grader (12 s): for a "
                           "Run All nobody watches")

    # What an instructor, a team or the bench sets (docs/settings.md: on a cluster or in a workshop).
    cluster = Setting("STREAMLAB_CLUSTER", flag("1", "true", "yes"), False,
                      "1 runs the lab on three brokers and a Spark standalone cluster (make lab CLUSTER=1)", INSTRUCTOR)
    cluster_port = Setting("STREAMLAB_CLUSTER_PORT", port(9292, 65529), 9292,
                           "the cluster's first broker port (its brokers and controllers take the next five)",
                           INSTRUCTOR)
    spark_port = Setting("STREAMLAB_SPARK_PORT", port(7077, 65529), 7077,
                         "the cluster's Spark Master port (its Workers take the next two)", INSTRUCTOR)
    spark_ui_port = Setting("STREAMLAB_SPARK_UI_PORT", port(8080, 65529), 8080,
                            "the cluster's Spark Master UI port (its Workers' UIs take the next two)", INSTRUCTOR)
    spark_master = Setting("SPARK_MASTER", text_or_none, None, "points Spark at a team's cluster (spark://host:port)",
                           INSTRUCTOR, shown="local[2], or the lab's cluster")
    spark_cores = Setting("STREAMLAB_SPARK_CORES", cores, None, "caps a learner's Spark at this many cores",
                          INSTRUCTOR)
    spark_memory = Setting("STREAMLAB_SPARK_MEMORY", text_or_none, None,
                           "a learner's Spark driver heap (spark.driver.memory, e.g. 1g)", INSTRUCTOR)
    topic_prefix = Setting("STREAMLAB_TOPIC_PREFIX", text, "", "starts every topic a notebook makes (a workshop's "
                           "learner-)", INSTRUCTOR)
    kafka_options = Setting("STREAMLAB_KAFKA_OPTIONS", text_or_none, None,
                            "a file of Spark kafka.* options (a workshop learner's credentials)", INSTRUCTOR)
    workshop_root = Setting("STREAMLAB_WORKSHOP_ROOT", path_or_default, ROOT / ".streamlab" / "workshop",
                            "the workshop's folder", INSTRUCTOR)
    partitions_url = Setting("STREAMLAB_PARTITIONS_URL", text_or_none, None,
                             "the hub's service that grows a learner's topic (set by the hub's spawner)", INSTRUCTOR)
    hub_api_token = Setting("JUPYTERHUB_API_TOKEN", text, "",
                            "the learner's server's token for the hub's services (set by JupyterHub)", INSTRUCTOR,
                            secret=True)
    hub_api_url = Setting("JUPYTERHUB_API_URL", text, "", "where a hub service asks the hub (set by JupyterHub)",
                          INSTRUCTOR)
    hub_service_url = Setting("JUPYTERHUB_SERVICE_URL", text, "",
                              "where a hub service listens (set by JupyterHub)", INSTRUCTOR)
    bench_containers = Setting("STREAMLAB_BENCH_CONTAINERS", unless("0", strip=False), True,
                               "0: make bench skips its container measurement", INSTRUCTOR)
    bench_workshop = Setting("STREAMLAB_BENCH_WORKSHOP", unless("0", strip=False), True,
                             "0: make bench skips its workshop section", INSTRUCTOR)
    grader_memory_gib = Setting("STREAMLAB_GRADER_MEMORY_GIB", number(float, "a number of GiB", "4"), 4.0,
                                "the memory of one graded kernel, its Spark JVM and children, in GiB", INSTRUCTOR,
                                shown="4")
    grader_output_bytes = Setting("STREAMLAB_GRADER_OUTPUT_BYTES", number(int, "a whole number of bytes",
                                                                          "2000000"), 2_000_000,
                                  "the output the grader keeps of one cell, in bytes", INSTRUCTOR)
    grader_progress_s = Setting("STREAMLAB_GRADER_PROGRESS_S", number(float, "a number of seconds", "30"), 30.0,
                                "how often the grader says it is still grading, in seconds", INSTRUCTOR,
                                shown="30")

    # Set by the course's own machinery (or Jupyter) for its own processes, never by a user.
    grading = Setting("STREAMLAB_GRADING", flag("1", strip=False), False,
                      "1 inside a grading run: demos are capped, nobody clicks", INTERNAL)
    just_saved = Setting("STREAMLAB_JUST_SAVED", non_empty, False,
                         "1: grader.check() saved the notebook itself, so no unsaved-changes warning", INTERNAL)
    assignment = Setting("STREAMLAB_ASSIGNMENT", text_or_none, None, "the assignment a graded kernel runs", INTERNAL,
                         shown="the notebook's name")
    owner_token = Setting("STREAMLAB_OWNER_TOKEN", text, "",
                          "the owner token a grading run in its own network namespace shares", INTERNAL, secret=True)
    quiz_rounds = Setting("STREAMLAB_QUIZ_ROUNDS", rounds, None, "{question: round} the grader passes a graded run "
                          "(JSON)", INTERNAL, shown="the learner's record")
    quiz_shuffled = Setting("STREAMLAB_QUIZ_SHUFFLED", names, None,
                            "the questions a graded notebook shows with options(), comma-separated", INTERNAL,
                            shown="all")
    check_url = Setting("STREAMLAB_CHECK_URL", text_or_none, None,
                        "the hub's checks service that grades Check my work (set by a workshop hub's spawner)",
                        INTERNAL)
    jupyter_session = Setting("JPY_SESSION_NAME", text_or_none, None,
                              "the running notebook's path (set by jupyter_server)", INTERNAL)
    path = Setting("PATH", text, "", "where commands are found (the lab puts .venv/bin first for its terminals)",
                   INTERNAL)

    def __iter__(self):
        """Every declaration, in the order above."""
        return iter([s for s in vars(type(self)).values() if isinstance(s, Setting)])


settings = Settings()


@contextmanager
def set_environment(**values: str):
    """Set environment variables for this process and the processes it starts inside the block, then restore them
    (a grading run's kernels, a workshop's grading)."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def report() -> str:
    """Every setting with its value now (or why it is refused), its default and help, grouped by who sets it."""
    lines = []
    for scope in SCOPES:
        lines.append(f"{scope}:" if scope != LEARNER else "settings you may change (docs/settings.md):")
        for setting in settings:
            if setting.scope != scope:
                continue
            raw = setting.raw()
            default = setting.default_text()
            if raw is None:
                now = "unset" if default == "unset" else f"unset (default: {default})"
            elif setting.secret:
                now = "set (not shown)"
            else:
                try:
                    setting.value()
                    now = f"{raw!r}"
                except SettingError as exc:
                    now = f"{raw!r} ✗ {exc}"
            lines.append(f"  {setting.name}={now}")
            lines.append(f"      {setting.help}")
    return "\n".join(lines)
