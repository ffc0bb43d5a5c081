"""The lab's Java parts: the Apache Kafka broker's jars, Spark's Kafka connector and Delta Lake, resolved at set-up.

`make setup` runs `python -m streamlab jars`, which asks Apache Ivy (the resolver PySpark itself ships in
`pyspark/jars/ivy-*.jar`, and uses for `spark.jars.packages`) to resolve each bundle with its dependencies from
Maven Central and copy the jars into `.streamlab/jars/<bundle>-<version>/`. A bundle is complete when its
`manifest.json` lists every jar it retrieved and all of them are there. The lab only ever reads these folders:
nothing is downloaded while it runs.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from streamlab.errors import LabError
from streamlab.lab.machine import ROOT, in_ci, java_binary, state_dir
from streamlab.settings import settings

# The broker's version: the `apache/kafka` image of docker-compose.yml uses the same one
# (tests/unit/test_pins.py fails when they drift).
KAFKA_VERSION = "4.2.0"
SCALA = "2.13"
# Kafka's own distribution logs through log4j2 with this binding; Maven's kafka_2.13 leaves it out.
LOG4J_VERSION = "2.25.3"
# Delta Lake for the lakehouse module: the Python package `delta-spark` of pyproject.toml is the same version
# (tests/unit/test_pins.py), and its Maven artifact names the Spark minor it is built for.
DELTA_VERSION = "4.4.0"
# Delta's defaults are a cluster's: it rebuilds a table's state (needed by MERGE and txnAppId appends, not by plain
# appends) in 50 tasks, which on the lab's local[2] made each such commit take 5-20 s instead of 1-5 s (measured).
# Every lab session starts with these (streamlab.lab.session._enable_delta).
DELTA_LAB_CONF = {"spark.databricks.delta.snapshotPartitions": "2"}
RESOLVE_TIMEOUT_S = 600
# Ivy's runs before a resolve is given up: a first set-up here failed once (':::: ...') and passed when run again.
RESOLVE_TRIES = 3


def spark_version() -> str:
    """The installed PySpark's version: the connector must be exactly this one."""
    import pyspark

    return pyspark.__version__


@dataclass(frozen=True)
class Bundle:
    """A set of Maven modules resolved together into one folder of jars."""

    name: str
    version: str
    modules: tuple[tuple[str, str, str], ...]

    @property
    def folder(self) -> Path:
        return state_dir() / "jars" / f"{self.name}-{self.version}"

    def jars(self) -> list[Path]:
        """The bundle's jars, or a LabError naming `make setup` when the cache is missing or incomplete."""
        manifest = self.folder / "manifest.json"
        try:
            names = json.loads(manifest.read_text())["jars"]
        except (OSError, ValueError, KeyError):
            raise LabError(f"The {self.name} jars ({self.version}) are not set up: run `make setup`.") from None
        missing = [n for n in names if not (self.folder / n).is_file()]
        if missing:
            raise LabError(f"The {self.name} jar cache is incomplete ({len(missing)} of {len(names)} jars missing, "
                           f"e.g. {missing[0]}): run `make setup` again.")
        return [self.folder / n for n in names]

    def ready(self) -> bool:
        """Whether every jar of the bundle is in the cache."""
        try:
            self.jars()
            return True
        except LabError:
            return False


def broker_bundle() -> Bundle:
    """Apache Kafka's broker (KRaft), run as a local JVM process."""
    return Bundle("kafka", KAFKA_VERSION, (
        ("org.apache.kafka", f"kafka_{SCALA}", KAFKA_VERSION),
        ("org.apache.logging.log4j", "log4j-slf4j-impl", LOG4J_VERSION),
    ))


def connector_bundle() -> Bundle:
    """Spark's own Kafka connector, of exactly the installed Spark version."""
    version = spark_version()
    return Bundle("spark-kafka", version, (("org.apache.spark", f"spark-sql-kafka-0-10_{SCALA}", version),))


def delta_bundle() -> Bundle:
    """Delta Lake's Spark module, built for the installed Spark's minor version (io.delta:delta-spark_4.2_2.13)."""
    minor = ".".join(spark_version().split(".")[:2])
    return Bundle("delta", DELTA_VERSION, (("io.delta", f"delta-spark_{minor}_{SCALA}", DELTA_VERSION),))


def delta_jars() -> list[Path]:
    """Delta's jars that neither PySpark nor the connector's bundle already bring (none shadowed, none twice)."""
    shipped = _shipped()
    if connector_bundle().ready():
        shipped |= {_artifact(p.name) for p in connector_bundle().jars()}
    return [p for p in delta_bundle().jars() if _artifact(p.name) not in shipped]


def connector_jars() -> list[Path]:
    """The connector's jars that PySpark does not already ship (so Spark's own copies are never shadowed)."""
    shipped = _shipped()
    return [p for p in connector_bundle().jars() if _artifact(p.name) not in shipped]


def _shipped() -> set[str]:
    """The artifacts whose jars PySpark itself ships (pyspark/jars/)."""
    import pyspark

    return {_artifact(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}


def _artifact(filename: str) -> str:
    """'kafka-clients-3.9.2.jar' -> 'kafka-clients'."""
    return re.sub(r"-\d[\w.\-]*\.jar$", "", filename)


def ivy_jar() -> Path:
    """The Apache Ivy jar that PySpark ships."""
    import pyspark

    found = sorted((Path(pyspark.__file__).parent / "jars").glob("ivy-*.jar"))
    if not found:
        raise LabError("PySpark's Ivy jar is missing: run `make setup` to reinstall pyspark.")
    return found[-1]


def _ivy_file(bundle: Bundle) -> str:
    deps = "\n".join(f'    <dependency org="{g}" name="{a}" rev="{v}" conf="default->default"/>'
                     for g, a, v in bundle.modules)
    return f"""<ivy-module version="2.0">
  <info organisation="streamlab" module="{bundle.name}"/>
  <configurations><conf name="default"/></configurations>
  <dependencies>
{deps}
  </dependencies>
</ivy-module>
"""


def resolve(bundle: Bundle, quiet: bool = True) -> list[Path]:
    """Resolve `bundle` with Ivy into its folder (seconds when cached); a LabError says why it could not."""
    if bundle.ready():
        return bundle.jars()
    staging = Path(tempfile.mkdtemp(prefix=f".{bundle.name}-", dir=_mkdir(state_dir() / "jars")))
    try:
        (staging / "ivy.xml").write_text(_ivy_file(bundle))
        cmd = [java_binary(), "-jar", str(ivy_jar()), "-ivy", str(staging / "ivy.xml"), "-confs", "default",
               "-cache", str(state_dir() / "ivy-cache"),
               "-retrieve", str(staging / "jars" / "[artifact]-[revision](-[classifier]).[ext]")]
        if quiet:
            cmd.append("-warn")
        for _attempt in range(RESOLVE_TRIES):  # a download can fail once and not again: Ivy's cache keeps the rest
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S,
                                      stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                raise LabError(f"Resolving the {bundle.name} jars took over {RESOLVE_TIMEOUT_S} s: check the "
                               "network (or proxy) to Maven Central and run `make setup` again.") from None
            jars = sorted(p.name for p in (staging / "jars").glob("*.jar"))
            if done.returncode == 0 and jars:
                break
        if done.returncode != 0 or not jars:
            raise LabError(f"Could not fetch the {bundle.name} {bundle.version} jars from Maven Central "
                           f"({_ivy_reason(done.stdout + done.stderr)}). {FALLBACK_HINT}")
        if bundle.folder.exists():
            shutil.rmtree(bundle.folder)
        (staging / "jars").rename(bundle.folder)
        # Written last: a folder without its manifest is an incomplete cache, never mistaken for a complete one.
        (bundle.folder / "manifest.json").write_text(json.dumps({"modules": bundle.modules, "jars": jars}, indent=1))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return bundle.jars()


FALLBACK_HINT = ("Check the network (or the proxy) and run `make setup` again; without Maven Central the lab can "
                 "run on the offline fallback: STREAMLAB_ENGINE=offline make lab")


def _ivy_reason(output: str) -> str:
    """The one line of Ivy's output that says why it failed."""
    for pattern, reason in (
        (r"UnknownHostException", "the repository's host name does not resolve: no network?"),
        (r"(ConnectException|Connection refused|connect timed out|NoRouteToHost)", "the repository cannot be reached"),
        (r"(SSLHandshake|PKIX|certificate)", "the repository's TLS certificate is not trusted (a proxy?)"),
        (r"::\s+(\S+#\S+;\S+): not found", r"\1 is not published there"),
    ):
        match = re.search(pattern, output)
        if match:
            return match.expand(reason) if "\\1" in reason else reason
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    return lines[-1][:160] if lines else "Ivy printed nothing"


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def needed_bundles() -> list[Bundle]:
    """The connector's bundle, and the broker's unless $KAFKA_BOOTSTRAP names a broker the lab does not run."""
    if settings.kafka_bootstrap:
        return [connector_bundle()]
    return [connector_bundle(), broker_bundle()]


BUNDLES = {"connector": connector_bundle, "broker": broker_bundle, "delta": delta_bundle}


def setup_all(only: list[str] | None = None) -> list[str]:
    """Resolve the bundles the lab needs (what `make setup` runs); return one line per bundle.

    Delta Lake is the lakehouse module's alone: without it every other module runs, so a failure to resolve it is a
    line of its own rather than an error (except in CI, where the whole stack is required).
    """
    lines = []
    bundles = [BUNDLES[name]() for name in only] if only else [*needed_bundles(), delta_bundle()]
    for bundle in bundles:
        cached = bundle.ready()
        try:
            jars = resolve(bundle)
        except LabError as missing:
            if bundle.name != "delta" or in_ci() or only:
                raise
            lines.append(f"delta {bundle.version}: not set up, so the lakehouse module's cells will say so ({missing})")
            continue
        where = bundle.folder.relative_to(ROOT) if bundle.folder.is_relative_to(ROOT) else bundle.folder
        lines.append(f"{bundle.name} {bundle.version}: {len(jars)} jars {'cached' if cached else 'resolved'} in {where}")
    return lines
