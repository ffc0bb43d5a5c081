"""Checkpoint forensics read by Spark's and Delta's own code: the files a case writes (streamlab/course/forensics.py)
are read by Spark 4.2's OffsetSeqLog and CommitLog, the Kafka connector's initial-offsets log and Delta 4.4's
DeltaLog exactly as the forensics' truth reads them: the batch Spark would replay (its latest offsets batch above
its latest commit, a cut `.N.<uuid>.tmp` ignored), that batch's offsets, and the app ids' txn versions Delta
skips by. A case only the course's reader could parse would grade candidates on a format Spark never writes."""
from __future__ import annotations

import json

from streamlab.course import forensics

OFFSETS = "org.apache.spark.sql.execution.streaming.checkpointing"


def _cases(tmp_path):
    """Three cases: one whose commits/N write was cut (a .tmp file), one that crashed during the Kafka write, one
    whose Delta write had committed."""
    made, wanted = {}, {"tmp": None, "partial": None, "landed": None}
    for seed in range(80):
        case = forensics.make(seed, tmp_path / str(seed))
        truth = forensics.truth(case.folder)
        kind = ("tmp" if list((case.folder / "checkpoint" / "commits").glob(".*.tmp")) else
                "partial" if truth["twice"]["kafka"] < truth["batch_rows"] else
                "landed" if truth["delta_has_batch"] else None)
        if kind and wanted[kind] is None:
            wanted[kind] = seed
            made[kind] = (case, truth)
        if None not in wanted.values():
            return made
    raise AssertionError(f"seeds 0..79 lack a case of each kind: {wanted}")


def test_spark_and_delta_read_a_case_as_the_forensics_do(delta, tmp_path):
    jvm, session = delta._jvm, delta._jsparkSession
    for kind, (case, truth) in _cases(tmp_path).items():
        ckpt = case.folder / "checkpoint"
        offset_log = getattr(jvm, OFFSETS).OffsetSeqLog(session, str(ckpt / "offsets"), False)
        commit_log = getattr(jvm, OFFSETS).CommitLog(session, str(ckpt / "commits"), False)
        latest = offset_log.getLatest().get()
        assert latest._1() == truth["replay_batch"] and commit_log.getLatest().get()._1() == latest._1() - 1, kind
        planned = json.loads(latest._2().offsets().apply(0).get().json())[truth["topic"]]
        assert {int(p): o for p, o in planned.items()} == {p: r[1] for p, r in truth["ranges"].items()}, kind
        before = offset_log.get(latest._1() - 1).get().offsets().apply(0).get().json()
        assert {int(p): o for p, o in json.loads(before)[truth["topic"]].items()} == \
            {p: r[0] for p, r in truth["ranges"].items()}, kind
        initial = jvm.org.apache.spark.sql.kafka010.KafkaSourceInitialOffsetWriter(
            session, str(ckpt / "sources" / "0")).get(0).get().json()
        assert json.loads(initial) == json.loads((ckpt / "sources" / "0" / "0").read_bytes()[1:].split(b"\n")[1])
        log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(session, str(case.folder / "table"))
        snapshot = log.unsafeVolatileSnapshot()
        versions = forensics.txn_versions(case.folder / "table")
        assert snapshot.version() == len(forensics.delta_log(case.folder / "table")) - 1, kind
        txns = snapshot.transactions()
        assert {app: txns.apply(app) for app in versions} == versions, kind
        assert txns.apply(truth["app_id"]) == truth["skip_through"], kind
        adds = sum(1 for _v, actions in forensics.delta_log(case.folder / "table") for a in actions if "add" in a)
        assert snapshot.numOfFiles() == adds, kind
