"""Checkpoint forensics (streamlab/course/forensics.py): a case's files have the exact shape of the real checkpoint
Spark wrote in tests/fixtures/spark-checkpoints/ (and of Delta's log), the course's checkpoint reader reads them,
the truth is computed from the files (change a file and it changes), right answers score full, and a constant
answer, a wrong one or another case's answers score about nothing; seeds draw different numbers; a graded case
shows in the interview history and `grader progress`; the terminal round runs from `grader interview --forensics`."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from streamlab.course import forensics, mock
from streamlab.observe import checkpoint as cp

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "spark-checkpoints"
SEEDS = range(60)


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMLAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("STREAMLAB_SEED", "4242")
    return tmp_path / "home"


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    root = tmp_path_factory.mktemp("cases")
    return {seed: forensics.make(seed, root / str(seed)) for seed in SEEDS}


def right_answers(folder) -> dict:
    truth = forensics.truth(folder)
    return {key: truth[key] for key in forensics.POINTS}


def share(case, answers) -> float:
    result = forensics.grade(case.folder, answers)
    return result.score / result.max_score


def test_checkpoint_files_have_the_real_fixtures_shape(cases):
    real = FIXTURE / "kafka"
    real_offsets = (real / "offsets" / "0").read_text()
    real_meta = json.loads(real_offsets.splitlines()[1])
    for case in list(cases.values())[:10]:
        ckpt = case.folder / "checkpoint"
        metadata = (ckpt / "metadata").read_text()
        assert re.fullmatch(r'\{"id":"[0-9a-f-]{36}"\}', metadata)
        assert metadata.endswith("}") == (real / "metadata").read_text().endswith("}")  # no newline, as Spark
        for n in cp.batches(ckpt):
            text = (ckpt / "offsets" / str(n)).read_text()
            lines = text.split("\n")
            assert lines[0] == "v1" and len(lines) == 3 and not text.endswith("\n")
            meta = json.loads(lines[1])
            assert list(meta) == list(real_meta) and set(meta["conf"]) == set(real_meta["conf"])
            offsets = json.loads(lines[2])
            assert lines[2] == json.dumps(offsets, separators=(",", ":"))  # compact, as Spark's JsonUtils
            assert all(isinstance(o, int) for parts in offsets.values() for o in parts.values())
        for n in cp.commits(ckpt):
            assert (ckpt / "commits" / str(n)).read_bytes() == (real / "commits" / "0").read_bytes()
        initial = (ckpt / "sources" / "0" / "0").read_bytes()
        assert initial.startswith(b"\0v1\n{")  # the Kafka source's NUL byte (SPARK-19517), then v1 and the JSON
        assert cp.kafka_offsets(cp.initial_offsets(ckpt))


def test_every_file_has_the_hadoop_checksum_spark_and_delta_write(cases):
    for name in ("offsets/0", "offsets/1", "commits/0", "metadata"):  # the writer reproduces Spark's own .crc files
        file = FIXTURE / "kafka" / name
        assert forensics.hadoop_crc(file.read_bytes()) == (file.parent / f".{file.name}.crc").read_bytes()
    case = cases[3]
    checked = 0
    for file in case.folder.rglob("*"):
        if file.is_file() and not file.name.startswith(".") and file.parent.name != "broker" and file.name != "job.py":
            assert (file.parent / f".{file.name}.crc").read_bytes() == forensics.hadoop_crc(file.read_bytes())
            checked += 1
    assert checked >= 8


def test_delta_log_is_one_json_action_a_line_with_commitinfo_txn_and_add_stats(cases):
    for case in list(cases.values())[:10]:
        log = forensics.delta_log(case.folder / "table")
        assert [v for v, _a in log] == list(range(len(log)))
        for version, actions in log:
            raw = (case.folder / "table" / "_delta_log" / f"{version:020d}.json").read_text()
            assert raw.endswith("\n") and len(raw.splitlines()) == len(actions)
            kinds = [next(iter(a)) for a in actions]
            assert kinds[0] == "commitInfo" and kinds.count("txn") == 1 and "add" in kinds
            assert ("protocol" in kinds and "metaData" in kinds) == (version == 0)
            info = actions[0]["commitInfo"]
            assert info["operation"] == "WRITE" and info.get("readVersion", -1) == version - 1
            adds = [a["add"] for a in actions if "add" in a]
            assert sum(json.loads(a["stats"])["numRecords"] for a in adds) == \
                int(info["operationMetrics"]["numOutputRows"])
            txn = next(a["txn"] for a in actions if "txn" in a)
            assert set(txn) == {"appId", "version", "lastUpdated"}
        schema = json.loads(log[0][1][2]["metaData"]["schemaString"])
        assert [f["name"] for f in schema["fields"]] == ["order_id", "topic", "partition", "offset", "kafka_ts"]


def test_the_delta_files_of_committed_batches_hold_exactly_their_checkpoint_ranges(cases):
    for case in list(cases.values())[:10]:
        ckpt = case.folder / "checkpoint"
        truth = forensics.truth(case.folder)
        initial = cp.kafka_offsets(cp.initial_offsets(ckpt))[truth["topic"]]
        for version, actions in forensics.delta_log(case.folder / "table"):
            txn = next(a["txn"] for a in actions if "txn" in a)
            if txn["appId"] != truth["app_id"]:
                continue
            n = txn["version"]
            start = initial if n == 0 else cp.offsets(ckpt, n - 1).kafka()[truth["topic"]]
            end = cp.offsets(ckpt, n).kafka()[truth["topic"]]
            files = {json.loads(a["add"]["stats"])["minValues"]["partition"]: json.loads(a["add"]["stats"])
                     for a in actions if "add" in a}
            for p, stats in files.items():
                assert (stats["minValues"]["offset"], stats["maxValues"]["offset"] + 1) == (start[p], end[p])


def test_right_answers_score_full_on_every_case(cases):
    for case in cases.values():
        result = forensics.grade(case.folder, right_answers(case.folder))
        assert result.score == result.max_score, result.report()


def test_answers_as_a_candidate_types_them_are_read(cases):
    truth = forensics.truth(cases[5].folder)
    typed = {"replay_batch": str(truth["replay_batch"]),
             "ranges": {str(p): (str(a), b) for p, (a, b) in truth["ranges"].items()},
             "twice": {k: str(v) for k, v in truth["twice"].items()}, "skip_through": str(truth["skip_through"])}
    assert share(cases[5], typed) == 1


def test_constant_and_other_cases_answers_score_about_nothing(cases):
    constants = [
        {"replay_batch": 1, "ranges": {}, "twice": dict.fromkeys(forensics.SINKS, 0), "skip_through": None},
        {"replay_batch": 3, "ranges": {0: [0, 1000], 1: [0, 1000]}, "twice": {"append": 1000, "merge": 0,
                                                                               "delta": 0, "kafka": 1000},
         "skip_through": 3},
        {},
    ]
    for answers in constants:
        mean = sum(share(c, answers) for c in cases.values()) / len(cases)
        assert mean < 0.12, (answers, mean)
    seeds = list(cases)
    copied = [share(cases[s], right_answers(cases[seeds[(i + 1) % len(seeds)]].folder)) for i, s in enumerate(seeds)]
    assert sum(copied) / len(copied) < 0.12
    assert max(copied) < 0.5  # a copied sheet never passes


def test_each_wrong_part_loses_its_points(cases):
    case = cases[11]
    right = right_answers(case.folder)
    n = right["replay_batch"]
    off_by_one = {p: [a, b + 1] for p, (a, b) in right["ranges"].items()}
    from_start = {p: [cp.kafka_offsets(cp.initial_offsets(case.folder / "checkpoint"))[forensics.truth(
        case.folder)["topic"]][p], b] for p, (_a, b) in right["ranges"].items()}
    for key, wrong in (("replay_batch", n + 1), ("replay_batch", n - 1), ("ranges", off_by_one),
                       ("ranges", from_start), ("twice", {**right["twice"], "merge": right["twice"]["kafka"]}),
                       ("twice", {**right["twice"], "kafka": right["twice"]["kafka"] + 1}),
                       ("skip_through", (right["skip_through"] or 0) + 1)):
        result = forensics.grade(case.folder, {**right, key: wrong})
        assert result.points[key] == 0 and result.score == result.max_score - forensics.POINTS[key], (key, wrong)
        assert f"✗ {key}" in result.report()


def test_seeds_draw_different_numbers_and_every_crash_moment(cases):
    truths = [forensics.truth(c.folder) for c in cases.values()]
    assert len({json.dumps(t["ranges"]) for t in truths}) == len(truths)
    assert len({t["replay_batch"] for t in truths}) >= 5
    assert len({t["twice"]["kafka"] for t in truths}) >= len(truths) // 2  # a capped batch is often near the cap
    partial = [t for t in truths if 0 < t["twice"]["kafka"] < t["batch_rows"]]
    landed = [t for t in truths if t["delta_has_batch"]]
    neither = [t for t in truths if t["twice"]["kafka"] == t["batch_rows"] and not t["delta_has_batch"]]
    assert partial and landed and neither  # the three moments of the crash all occur
    assert all(t["twice"]["append"] == t["batch_rows"] for t in landed)
    assert all(t["skip_through"] == t["replay_batch"] - 1 for t in partial + neither)
    assert forensics.make(7, cases[7].folder.parent / "again").story.split(" to ")[0] == \
        cases[7].story.split(" to ")[0]  # the same seed, the same case


def test_a_cut_commit_write_leaves_a_tmp_file_that_is_not_a_commit(cases):
    cut = [c for c in cases.values() if list((c.folder / "checkpoint" / "commits").glob(".*.tmp"))]
    assert cut, "no case with a cut commits/N write among the seeds"
    for case in cut:
        tmp = next((case.folder / "checkpoint" / "commits").glob(".*.tmp"))
        n = int(tmp.name.split(".")[1])
        assert forensics.truth(case.folder)["replay_batch"] == n


def test_the_truth_is_read_from_the_files_not_stored(tmp_path):
    seed = next(s for s in SEEDS if forensics.truth(forensics.make(s, tmp_path / str(s)).folder)["delta_has_batch"])
    folder = tmp_path / str(seed)
    before = forensics.truth(folder)
    log = folder / "table" / "_delta_log"
    version = next(v for v, actions in forensics.delta_log(folder / "table") for a in actions
                   if a.get("txn", {}).get("appId") == before["app_id"]
                   and a["txn"]["version"] == before["replay_batch"])
    last = log / f"{version:020d}.json"
    assert version == len(list(log.glob("*.json"))) - 1  # the replayed batch's write is the table's last commit
    last.unlink()  # as if the crash had come just before the Delta commit of the replayed batch
    (log / f".{last.name}.crc").unlink()
    after = forensics.truth(folder)
    assert before["twice"]["append"] == before["batch_rows"] and after["twice"]["append"] == 0
    assert after["skip_through"] == before["skip_through"] - 1
    n = before["replay_batch"]
    for name in (str(n), f".{n}.crc"):
        (folder / "checkpoint" / "commits" / name).write_bytes((folder / "checkpoint" / "commits" / "0").read_bytes()
                                                                if name == str(n) else b"")
    with pytest.raises(ValueError, match="not a crashed query"):
        forensics.truth(folder)


def test_bad_answers_get_a_clear_message_not_a_crash(cases):
    with pytest.raises(TypeError, match="answers must be a dict"):
        forensics.grade(cases[0].folder, "batch 3")
    odd = {"replay_batch": "three", "ranges": {"zero": [1, 2]}, "twice": [0, 0], "skip_through": True}
    assert forensics.grade(cases[0].folder, odd).score == 0


def test_a_graded_case_shows_in_the_history_and_in_progress(home):
    case = forensics.new_case()
    assert case.folder.is_relative_to(home) and case.case_id == "4242.0"
    case.grade(right_answers(case.folder))
    second = forensics.new_case()
    assert second.case_id == "4242.1" and forensics.truth(second.folder)["ranges"] != \
        forensics.truth(case.folder)["ranges"]
    blank = second.grade({"replay_batch": None, "ranges": {}, "twice": dict.fromkeys(forensics.SINKS)})
    assert blank.report().startswith("no answer yet") and "offsets/" not in blank.report()  # nothing given away
    assert len(mock.load()["forensics"]) == 1  # and nothing kept: running the page from the top records nothing
    second.grade({"replay_batch": -1})
    entries = mock.load()["forensics"]
    assert [(e["case"], e["score"]) for e in entries] == [("4242.0", 6), ("4242.1", 0)]
    lines = "\n".join(mock.progress_lines())
    assert "checkpoint forensics: 2 case(s), last 0/6" in lines and "best 100%" in lines
    from grader import progress

    assert "checkpoint forensics: 2 case(s)" in progress.table({})


def test_the_terminal_round_from_grader_interview(home, monkeypatch, capsys):
    from grader.__main__ import main

    expected = forensics.make("4242.0", home / "forensics" / "4242.0")
    truth = forensics.truth(expected.folder)
    typed = iter([str(truth["replay_batch"]), *[f"{a} {b}" for a, b in truth["ranges"].values()],
                  *[str(truth["twice"][s]) for s in forensics.SINKS], str(truth["skip_through"])])
    monkeypatch.setattr("builtins.input", lambda _prompt="": next(typed))
    assert main(["interview", "--forensics"]) == 0
    out = capsys.readouterr().out
    assert "score 6/6" in out and str(expected.folder) in out and "replay_batch:" in out
