"""The self-test's bookkeeping: one verdict per claim (a re-run replaces it) and where a run started reading."""
from __future__ import annotations

import json

from streamlab.course import claims


def test_a_claim_prints_one_line_and_a_rerun_replaces_its_verdict(capsys):
    claims._claims.clear()
    assert claims.claim(False, "the cap is split by backlog", "even") is None
    claims.claim(True, "the cap is split by backlog")
    claims.claim(True, "once ignores the cap")
    out = capsys.readouterr().out.splitlines()
    assert out == ["✗ the cap is split by backlog  (seen: even)", "✓ the cap is split by backlog",
                   "✓ once ignores the cap"]
    assert [(v["claim"], v["ok"]) for v in claims.verdicts()] == [("the cap is split by backlog", True),
                                                                 ("once ignores the cap", True)]


def test_started_at_reads_the_first_data_batch_start_offset_as_json_text_or_dict():
    run = {"progress": [{"sources": [{"startOffset": json.dumps({"t": {"0": 1700, "1": 800}})}]},
                        {"sources": [{"startOffset": {"t": {"0": 1800, "1": 900}}}]}]}
    assert claims.started_at(run, "t") == {0: 1700, 1: 800}
    assert claims.started_at({"progress": [{"sources": [{"startOffset": "null"}]}]}, "t") is None
    assert claims.started_at({"progress": []}, "t") is None
