"""The audit's cheats (grader/audit.py), run on a plain namespace as they run in a graded kernel's globals."""
from __future__ import annotations

import pytest

from grader.audit import AUDIT, AUDIT_NAME, KINDS, MAY_PASS, audit_points


def _auditor(ns: dict):
    exec(AUDIT, ns)
    return ns[AUDIT_NAME]


def _cheats(ns: dict, names: list[str]) -> dict[str, dict]:
    """{kind: the names' values while cheating}, the right answers restored after each."""
    import json

    audit = _auditor(ns)
    real = {n: ns[n] for n in names}
    audit.arm(json.dumps(names))
    for name in names:  # the test's own calls: the recorder keeps the first result
        if callable(real[name]):
            ns[name](3, 4)
            ns[name](5, 6)
    seen = {}
    for kind in KINDS:
        if audit.cheat(kind) == "cheating":
            seen[kind] = {n: ns[n] for n in names}
        audit.restore()
        assert all(ns[n] is real[n] for n in names), "the right answers must come back"
    return seen


def test_every_wrong_letter_of_a_quiz_is_tried_and_never_the_right_one():
    seen = _cheats({"q1": "b"}, ["q1"])
    letters = sorted(v["q1"] for v in seen.values() if v["q1"] is not None)
    assert letters == ["", "a", "c", "d"] and seen["none"]["q1"] is None, seen


@pytest.mark.parametrize("value", [7, 0, 2.5, "maxOffsetsPerTrigger", '{"t": {"0": 5}}', {"plain": 3, "min2": 3},
                                   ["more cores", "cheaper work per record"], {"availableNow": True}, True])
def test_a_data_answer_is_never_tried_as_itself(value):
    seen = _cheats({"answer": value}, ["answer"])
    assert len(seen) >= 3, seen  # zero, near and two random draws, less any equal to the answer
    assert all(v["answer"] != value for v in seen.values()) and seen["none"]["answer"] is None, seen


def test_a_function_is_tried_as_a_memorised_constant_and_as_random_results():
    ns = {"split_cap": lambda a, b: {0: a * 10, 1: b}}
    seen = _cheats(ns, ["split_cap"])
    assert set(seen) == set(KINDS), seen
    assert seen["memorized"]["split_cap"](99, 99) == {0: 30, 1: 4}, "the first result, whatever the input"
    assert seen["zero"]["split_cap"](1, 2) == 0
    nudged = seen["near"]["split_cap"](1, 2)
    assert nudged != {0: 30, 1: 4} and set(nudged) == {0, 1}
    draws = [seen["random 1"]["split_cap"](1, 2) for _ in range(3)]
    assert all(set(d) == {0, 1} for d in draws) and len({repr(d) for d in draws}) > 1, draws


def test_a_function_the_test_never_called_gets_no_memorised_cheat():
    import json

    ns = {"f": lambda: 1}
    audit = _auditor(ns)
    audit.arm(json.dumps(["f"]))
    assert audit.cheat("memorized") == "skip" and audit.cheat("zero") == "cheating" and audit.cheat("none") == "cheating"
    audit.restore()


def test_a_declared_right_range_and_the_report():
    source = "### BEGIN HIDDEN TESTS\n# audit: near, random 2 may pass (a range of caps is right)\nexpect(...)"
    assert MAY_PASS.search(source).group(1) == "near, random 2"
    lines = audit_points({"ex1_a": [["zero", 0.0], ["memorized", 1.0]], "ex2_b": [["could not be audited (x)", None]]})
    assert lines == ["ex1_a: memorized earned 1", "ex2_b: could not be audited (x)"]


def test_an_exercise_judged_on_what_the_notebook_made_is_declared_not_swapped():
    from grader.audit import OUTCOME

    source = "### BEGIN HIDDEN TESTS\n# audit: judged on the SQLite table the crash test wrote\nexpect(...)"
    assert OUTCOME.search(source).group(1) == "the SQLite table the crash test wrote"
    assert MAY_PASS.search(source) is None
