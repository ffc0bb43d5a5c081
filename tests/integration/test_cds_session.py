"""A lab set up by `streamlab setup` starts its Spark sessions on the class-data sharing archive setup made.

What a learner and the suite rely on for a faster start: the driver JVM of a session the lab starts really maps the
archive (it is in the JVM's memory maps), not merely names it on its command line."""
from __future__ import annotations

from pathlib import Path

from streamlab.lab.cds_dump import driver_archive


def test_a_lab_session_maps_the_archive_setup_made(spark):
    from pyspark import SparkContext

    archive = driver_archive()
    assert archive is not None, ("no valid class-data sharing archive for this class path: `make setup` makes it "
                                 "(its line 'class-data sharing: ...' says why not)")
    pid = SparkContext._gateway.proc.pid
    assert f"-XX:SharedArchiveFile={archive}" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    mapped = {line.split(maxsplit=5)[-1] for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
              if line.count(" ") >= 5}
    assert str(archive) in mapped, f"the driver JVM ({pid}) was given {archive.name} but did not map it"
    assert spark.range(3).count() == 3
