"""The course's SparkSession, and which engine serves format("kafka")."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from streamlab.errors import LabError
from streamlab.lab.machine import in_ci, java_binary  # noqa: F401 (also their old address: session.in_ci)
from streamlab.settings import settings

SPARK_VERSION = "4.2.0"
CONNECTOR_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
MIN_JAVA = 17


def java_version() -> int:
    """The major version of the Java that Spark will start, or a LabError naming the fix."""
    java = java_binary()
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=10).stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"`{java} -version` failed ({exc}): check JAVA_HOME.") from None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        raise LabError(f"Could not read the Java version from `{java} -version`: check JAVA_HOME.")
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0" style
        major = int(match.group(2))
    if major < MIN_JAVA:
        raise LabError(f"Spark {SPARK_VERSION} needs Java {MIN_JAVA} or newer, found Java {major} at {java}: "
                       "install Java 17 and point JAVA_HOME at it.")
    return major


def spark():
    """A local SparkSession with course defaults, on which format("kafka") works for reads and writes."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        _enable_kafka(active)
        return active
    java_version()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    master = spark_master()
    conf = session_conf(master)
    from streamlab.lab.cds import driver_options

    # Class-data sharing: the driver maps the classes `streamlab setup` archived (when a valid archive exists).
    conf["spark.driver.extraJavaOptions"] += driver_options(conf)
    _launch_quiet_jvm(conf)
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    if master.startswith("spark://"):
        _await_executors(session, master)
    _enable_kafka(session)
    return session


# Spark's other checkpoint file manager: the same files and the same rename of a temporary file (atomic on a local
# disk), made through Hadoop's FileSystem API (CheckpointFileManager.scala).
CHECKPOINT_FILE_MANAGER = "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"


def session_conf(master: str) -> dict:
    """The Spark configuration of a new lab session on `master` (what spark() starts it with)."""
    log_conf = Path(__file__).with_name("log4j2.properties")
    conf = {
        "spark.master": master,
        "spark.app.name": "streamlab",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.ui.enabled": settings.spark_ui,
        "spark.ui.host": "127.0.0.1",
        # -Xss: stopping a query whose foreachBatch is running can overflow the stream execution thread's
        # default 1 MB stack in java.util.regex, printing a 1024-frame trace at every stop.
        # C1 only and the serial collector: the lab's batches are small and short-lived, so C2's compiler threads
        # and a parallel collector cost more CPU than they save (start-up and a 30-batch read ~25% faster here).
        "spark.driver.extraJavaOptions": (f"-Dlog4j.configurationFile=file:{log_conf} -Xss16m "
                                          "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"),
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
        # query.stop() waits at most this long for a stream thread blocked on a lost broker.
        "spark.sql.streaming.stopTimeout": "15s",
        "spark.python.worker.reuse": "true",
        "spark.ui.showConsoleProgress": "false",
    }
    if chosen_engine()[0] == "connector":
        from streamlab.lab.jars import connector_jars

        # On the driver's class path (local mode: the executors share its JVM), straight from the set-up cache.
        conf["spark.driver.extraClassPath"] = os.pathsep.join(str(p) for p in connector_jars())
        if not master.startswith("local"):
            # A cluster's executors are other JVMs: the driver serves them the same jars (spark.jars).
            conf["spark.jars"] = ",".join(str(p) for p in connector_jars())
    # The same checkpoint files (offsets/N, commits/N, their .crc, written to a temporary file and renamed), by
    # Hadoop's FileSystem API instead of its FileContext API, Spark's default: without Hadoop's native library
    # (PySpark ships none) every FileContext rename forks `readlink` four times and every new file `chmod`, about
    # ten processes a micro-batch: 40 % of a small batch's driver CPU here (`make bench`, "checkpoint CPU"). Not on a
    # Spark cluster of your own (SPARK_MASTER), whose checkpoints may live on a store where Spark's default matters.
    if not settings.spark_master:
        conf["spark.sql.streaming.checkpointFileManagerClass"] = CHECKPOINT_FILE_MANAGER
    _enable_delta(conf, master)
    if master.startswith("spark://"):
        from streamlab.lab.cluster import EXECUTOR_MEMORY

        conf.update({
            "spark.executor.memory": EXECUTOR_MEMORY,
            "spark.executor.cores": "1",
            "spark.cores.max": "2",
            "spark.executor.extraJavaOptions": "-Xss16m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        })
        if not settings.spark_master:  # the lab's cluster: what a killed executor leaves goes with it
            from streamlab.lab import cluster

            conf["spark.executor.extraJavaOptions"] += f" -Djava.io.tmpdir={cluster.temporary_folder()}"
    _cap_for_workshop(conf)
    if conf["spark.master"].startswith("local"):
        # The driver's RPC and block manager listen on 127.0.0.1, which every learner of a workshop shares: without
        # authentication another learner's kernel could ask them anything, e.g. stop this session's block manager
        # (P14). In local mode Spark then makes a random secret of its own for this session, held only inside this
        # JVM (a secret passed here would sit on the JVM's command line, readable by others in `ps`). A cluster
        # (spark://) would need the same secret on its Master and Workers, so it stays as it is.
        conf["spark.authenticate"] = "true"
    return conf


def _enable_delta(conf: dict, master: str) -> None:
    """Delta Lake's jars, SQL extension and catalog, whenever `make setup` resolved them (the lakehouse module)."""
    from streamlab.lab.jars import DELTA_LAB_CONF, delta_bundle, delta_jars

    if not delta_bundle().ready():
        return
    jars = [str(p) for p in delta_jars()]
    conf["spark.driver.extraClassPath"] = os.pathsep.join(filter(None, [conf.get("spark.driver.extraClassPath"),
                                                                        *jars]))
    if not master.startswith("local"):
        conf["spark.jars"] = ",".join(filter(None, [conf.get("spark.jars"), *jars]))
    conf["spark.sql.extensions"] = "io.delta.sql.DeltaSparkSessionExtension"
    conf["spark.sql.catalog.spark_catalog"] = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
    conf.update(DELTA_LAB_CONF)  # a lab-sized table log: Delta's 50 snapshot partitions cost seconds a batch here


EXECUTORS_WAIT_S = 90.0  # executors are JVMs the Workers start: seconds, more on a loaded machine
HELD_S = 10.0  # a driver that just ended may still hold its cores for a moment: a refusal waits this long


def _await_executors(session, master: str) -> None:
    """Wait until the cluster gave this session an executor; one that gets none says why (and is stopped), instead
    of every query waiting without a word."""
    import time

    from streamlab.lab import cluster

    context = session.sparkContext
    if context.getConf().get("spark.dynamicAllocation.enabled", "false") == "true":
        return  # executors come with the first job, not before
    lab_cluster = master == cluster.master_url() and not settings.spark_master
    began = time.monotonic()
    while context._jsc.sc().getExecutorMemoryStatus().size() < 2:  # the driver's block manager counts as one
        waited = time.monotonic() - began
        held = cluster.cores_held_elsewhere(context.applicationId) if lab_cluster and waited > HELD_S else []
        if held or waited > EXECUTORS_WAIT_S:
            session.stop()
            if held:
                raise LabError("The cluster's cores are all held by another Spark application, most likely another "
                               f"notebook's kernel: {'; '.join(held)}. Shut that kernel down (Kernel > Shut Down "
                               "Kernel, or streamlab.cleanup(spark) and spark.stop() in it), then run this cell again.")
            raise LabError(f"The cluster at {master} gave this session no executor within {EXECUTORS_WAIT_S:.0f} s: "
                           "its Workers may be down or busy with other applications (its Master's UI shows which).")
        time.sleep(0.25)


def _cap_for_workshop(conf: dict) -> None:
    """A workshop's spawner caps each learner's Spark: $STREAMLAB_SPARK_CORES cores, $STREAMLAB_SPARK_MEMORY heap."""
    raw = settings.spark_cores  # a whole number above 0, or a LabError naming the variable
    if raw:
        if conf["spark.master"].startswith("local"):
            conf["spark.master"] = f"local[{raw}]"
        conf["spark.cores.max"] = raw  # what a standalone master (the cluster lab's) honours
        conf["spark.default.parallelism"] = raw
    if settings.spark_memory:
        conf["spark.driver.memory"] = settings.spark_memory


def spark_master() -> str:
    """Where a new session runs: $SPARK_MASTER (a team's cluster), the lab's cluster ($STREAMLAB_CLUSTER=1), or
    local[2]."""
    if settings.spark_master:
        return settings.spark_master
    from streamlab.lab import cluster

    if cluster.wanted():
        cluster.ensure()
        return cluster.master_url()
    return "local[2]"


def _launch_quiet_jvm(conf: dict) -> None:
    """Start Spark's JVM with its console output in .streamlab/spark.log, so no start-up line reaches a cell.

    ipykernel forwards a child process's stderr into the running cell; the JVM's banner lines ("Setting default
    log level...", incubator-module warnings) are not the lesson. Errors still reach the learner as exceptions.
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    from streamlab import patches
    from streamlab.lab.jars import state_dir

    if SparkContext._gateway is not None:
        return
    try:
        state_dir().mkdir(parents=True, exist_ok=True)
        log = open(state_dir() / "spark.log", "ab")
    except OSError:  # a read-only course folder: Spark's console output goes to a private temporary file instead
        import tempfile

        log = tempfile.NamedTemporaryFile(prefix="streamlab-spark-", suffix=".log", delete=False)
    _private_temporary_folder(conf)
    spark_conf = SparkConf(loadDefaults=False)
    for key, value in conf.items():
        spark_conf.set(key, value)
    patches.adopt_gateway(launch_gateway(spark_conf, popen_kwargs={"stdout": log, "stderr": log}))


def _private_temporary_folder(conf: dict) -> None:
    """The driver JVM's temporary files (lz4's native library, Spark's block manager and shuffle files) in a folder
    named after this process, removed when it exits normally, or by the next setup() when it was killed (kill -9, a
    kernel restart or shutdown, which kills a kernel that does not end within seconds): left in /tmp, each killed
    kernel kept ~150 KB of them there for ever."""
    import tempfile

    try:
        folder = tempfile.mkdtemp(prefix=f"streamlab-jvm-{os.getpid()}-")
    except OSError:  # no writable temporary folder: Spark's own default, and its own message later
        return
    conf["spark.driver.extraJavaOptions"] += f" -Djava.io.tmpdir={folder}"
    conf.setdefault("spark.local.dir", folder)
    # Delta's catalog makes the session catalog's warehouse, by default spark-warehouse/ in the notebook's folder
    # (seen in module 10's folder in JupyterLab); the course writes tables by path, so nothing is lost here.
    conf.setdefault("spark.sql.warehouse.dir", os.path.join(folder, "spark-warehouse"))
    _jvm_folders.append(folder)  # removed by lifecycle's last teardown step ("jvm folder"), after queries stop


_jvm_folders: list[str] = []


def remove_jvm_folder() -> None:
    """Delete the driver JVM's temporary folder (at exit: the JVM ends with this process)."""
    import shutil

    for folder in _jvm_folders:
        shutil.rmtree(folder, ignore_errors=True)


def _connector_on_classpath(session) -> bool:
    try:
        session.sparkContext._jvm.java.lang.Class.forName(CONNECTOR_CLASS)
        return True
    except Exception:
        return False


def chosen_engine() -> tuple[str, str]:
    """('connector' or 'offline', why): the engine a new session gets, from $STREAMLAB_ENGINE and the jar cache.

    The connector whenever `make setup` resolved its jars and the broker's; else the offline fallback, with the
    reason, except where the real stack is required ($STREAMLAB_ENGINE=connector, or CI): there a LabError.
    """
    from streamlab.lab.jars import needed_bundles

    asked = settings.engine  # '', connector or offline, or a LabError naming the variable
    if asked == "offline":
        return "offline", "STREAMLAB_ENGINE=offline"
    for bundle in needed_bundles():
        try:
            bundle.jars()
        except LabError as missing:
            if asked == "connector" or in_ci():
                raise
            return "offline", f"fallback, because {str(missing)[0].lower()}{str(missing)[1:]}"
    return "connector", "Apache Kafka and Spark's own connector"


def engine(session=None) -> str:
    """'connector' when Spark's own Kafka connector serves format("kafka"), else 'offline'."""
    session = session or spark()
    if settings.engine == "offline":
        return "offline"
    return "connector" if _connector_on_classpath(session) else "offline"


def _enable_kafka(session) -> None:
    from streamlab.lab import access

    access.install_spark()  # a workshop's credentials and name prefix (nothing outside a workshop)
    if engine(session) == "offline":
        from streamlab.offline import install

        install(session)
