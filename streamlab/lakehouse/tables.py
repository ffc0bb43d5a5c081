"""Reading a Delta table back: what a stream committed to it, counted from the table's own log, never from Spark's.

The crash lab and module 10 judge a sink by the table it leaves: `ids` lists every row's id (duplicates kept, so a
replayed batch shows), `history` lists the table's versions (one per committed write: a batch Delta skipped as
already written leaves none), and `file_count` is the number of data files the current version references (the
small-files problem, and what `OPTIMIZE` does to it). `delta_ready` / `require_delta` say in one line when Delta's
jars are not set up (the offline fallback has none), so the lakehouse cells stop there and nothing else breaks.
"""
from __future__ import annotations

from streamlab.errors import LabError
from streamlab.lab.jars import DELTA_LAB_CONF

NOT_SET_UP = ("Delta Lake's jars are not set up in this session: run `make setup`, then restart the kernel "
              "(the offline fallback has no Delta).")


def delta_ready() -> bool:
    """Whether Delta can be used: its jars are set up, its Python package imports, and a running session has them."""
    from streamlab.lab.jars import delta_bundle

    if not delta_bundle().ready():
        return False
    try:
        import delta  # noqa: F401 - delta-spark, the Python side of the same release
    except ImportError:
        return False
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is None:
        return True  # the lab's next session gets Delta (streamlab.lab.session._enable_delta)
    # A session started before `make setup` resolved Delta has neither its jars nor its extension.
    return "DeltaSparkSessionExtension" in (active.conf.get("spark.sql.extensions", "") or "")


def require_delta() -> None:
    """Raise a one-line LabError naming `make setup` unless Delta can be used (see delta_ready)."""
    if not delta_ready():
        raise LabError(NOT_SET_UP)


# Delta's lab-sized settings, which every lab session starts with, live with Delta's jars (lab.jars.DELTA_LAB_CONF).
LAB_CONF = DELTA_LAB_CONF


def session():
    """The running SparkSession (the lab's: streamlab.spark() starts one with Delta when there is none)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession() or SparkSession._instantiatedSession
    if active is None:
        from streamlab.lab.session import spark

        active = spark()
    return active


def table(spark, path):
    """The DeltaTable at `path`, or a one-line LabError when nothing has been written there yet."""
    from delta.tables import DeltaTable

    require_delta()
    if not DeltaTable.isDeltaTable(spark, str(path)):
        raise LabError(f"{path} is not a Delta table (yet): no write has committed there. Run the cell that "
                       "writes it first, or check the path.")
    return DeltaTable.forPath(spark, str(path))


def file_count(path) -> int:
    """The number of data files the table's current version references (DeltaTable.detail()'s numFiles)."""
    spark = session()
    return int(table(spark, path).detail().select("numFiles").first()[0])


def history(spark, path):
    """The table's versions, oldest first, as a pandas DataFrame: version, operation, operationParameters and
    rows written (the commit's numOutputRows; 0 for a commit that wrote no rows, such as OPTIMIZE's)."""
    import pandas as pd

    rows = (table(spark, path).history()
            .select("version", "operation", "operationParameters", "operationMetrics").orderBy("version").collect())
    return pd.DataFrame([{"version": r["version"], "operation": r["operation"],
                          "operationParameters": dict(r["operationParameters"] or {}),
                          "rows written": int((r["operationMetrics"] or {}).get("numOutputRows", 0) or 0)}
                         for r in rows], columns=["version", "operation", "operationParameters", "rows written"])


def ids(spark, path, column: str = "id", version: int | None = None) -> list[int]:
    """Every row's `column` in the table (at `version`, time travel, when given), sorted, duplicates kept."""
    table(spark, path)  # a clear line when there is no table yet
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", int(version))
    return sorted(int(r[0]) for r in reader.load(str(path)).select(column).collect() if r[0] is not None)
