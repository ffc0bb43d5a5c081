"""Every assignment in solutions/: the solution scores full marks; the untouched student version runs and scores 0;
no wrong, constant or random answer earns a point on any exercise (grader/audit.py, run on the solution's grading).
Each module is graded once, its solution, where the audit also judges the stubs (its `none` cheat) and wrong and
constant answers. Where checks read what the notebook's cells made with an answer (UNTOUCHED_GRADED), the audit
replays that exercise's section with the released stubs and with tests/notebooks/cheats.py's answers, then with the
right one (cheats.REPLAYED: modules 6, 7 and 10, whose such sections start fresh when run again); a module judged on
outcomes that is not in REPLAYED has its untouched version and its cheating notebooks graded from the start.

Parametrised over whatever solutions/ holds when the tests are collected. Streaming notebooks spend much of their
time waiting (trigger intervals, demos that run for seconds), so every run goes at once, in one go before the
first test: the grader grades all solutions and untouched student versions as one cohort (GRADERS workers), while
the untouched versions run as a learner's Run All, then going back (tests/labrun.py), LAB_RUNS at a time: each
kernel with a temporary folder of its own, its demos ending seconds after their script, as under the grader.
Module 9 (the cluster) runs that way in tests/cluster, on the cluster that suite has; module 10 (Delta Lake) in
tests/lakehouse, beside lane 2.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest

from cheats import CHEATS, REPLAYED
from grader.audit import OUTCOME, RIGHT_REPLAYED
from grader.cohort import grade_cohort
from grader.course import ROOT, SOURCE, assignments, release
from grader.runner import exercise_of, grade_id
from labrun import problems, run_as_a_learner

IDS = assignments(SOURCE)
GRADERS, LAB_RUNS = 3, 2
EXECUTED = ROOT / "test-results" / "executed"  # each lab run's notebook after Run All, which the site shows


@functools.cache
def _solution(aid: str):
    """A solution notebook, read once (collection asks three questions of each, a test one more)."""
    return nbformat.read(SOURCE / aid / f"{aid}.ipynb", as_version=4)


def _code(aid: str) -> list[str]:
    """The code cells of a solution."""
    return [cell.source for cell in _solution(aid).cells if cell.cell_type == "code"]


def _judged_on_outcomes(aid: str) -> bool:
    return any(OUTCOME.search(source) for source in _code(aid))


# The untouched student version is graded where some checks read what the notebook's cells made with the answer
# (grader/audit.py's `# audit: judged on`): only its own run can show that its stubs earn 0 there. Elsewhere the
# audit's `none` cheat judges each exercise with the stubs' None, on the solution's run.
UNTOUCHED_GRADED = {aid for aid in IDS if _judged_on_outcomes(aid)}
# A module whose setup cell starts the cluster (module 9) runs as a learner's Run All in tests/cluster, on the
# cluster that suite already has: started here too, beside lane 2's, it was a second cluster on two cores.
ON_THE_CLUSTER = {aid for aid in IDS if any("setup(cluster=True)" in source for source in _code(aid))}
# Module 10 (Delta Lake) runs as a learner's Run All in tests/lakehouse, beside lane 2: here it tipped lane 1 over
# the suite's budget (its Delta commits take seconds each); its gradings stay here with every other module's.
ELSEWHERE = ON_THE_CLUSTER | {aid for aid in IDS if aid.endswith("-lakehouse")}
LAB_IDS = [aid for aid in IDS if aid not in ELSEWHERE]

pytestmark = [pytest.mark.broker, pytest.mark.spark]


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory, bootstrap):
    """{assignment id: ({'solution': Result, 'untouched': Result}, lab-run record)}, plus the folders all left.

    Only the assignments whose tests were selected (`-k 04`) run."""
    assert "STREAMLAB_GRADING" not in os.environ, "the lab run must not see STREAMLAB_GRADING"
    selected = {item.callspec.params[name] for item in request.session.items if getattr(item, "callspec", None)
                for name in ("outcome", "lab_run") if name in item.callspec.params}
    ids = [aid for aid in IDS if aid in selected] or IDS
    before, began = _temporary_folders(), time.monotonic()
    student_versions = tmp_path_factory.mktemp("release")
    release(student_versions, SOURCE, quiet=True)  # fresh, whether or not notebooks/ is up to date
    tmp = tmp_path_factory.mktemp("runs")
    subs = tmp / "submissions"
    for aid in ids:
        for student, nb in (("solution", SOURCE / aid / f"{aid}.ipynb"),
                            ("untouched", student_versions / aid / f"{aid}.ipynb")):
            if student == "untouched" and (aid not in UNTOUCHED_GRADED or aid in REPLAYED):
                continue
            (subs / student / aid).mkdir(parents=True)
            shutil.copyfile(nb, subs / student / aid / f"{aid}.ipynb")
        for student, answers in ({} if aid in REPLAYED else CHEATS.get(aid, {})).items():
            (subs / student / aid).mkdir(parents=True)
            nbformat.write(_cheating(aid, answers), subs / student / aid / f"{aid}.ipynb")
        if aid == SHARED_KEY:
            (subs / "shared-key" / aid).mkdir(parents=True)
            nbformat.write(_with_shared_key(aid)[0], subs / "shared-key" / aid / f"{aid}.ipynb")
    with ThreadPoolExecutor(LAB_RUNS) as pool:
        labs = {}
        for aid in (aid for aid in ids if aid in LAB_IDS):
            copy = tmp / "lab" / aid
            shutil.copytree(student_versions / aid, copy)
            labs[aid] = pool.submit(run_as_a_learner, copy / f"{aid}.ipynb", tmp / "lab-tmp" / aid,
                                    EXECUTED / f"{aid}.ipynb")  # its outputs for the site (test_site.py)
        replays = {aid: _replays(aid, student_versions) for aid in ids if aid in REPLAYED}
        graded = grade_cohort(subs, tmp / "out", workers=GRADERS, source=SOURCE, quiet=True,
                              audit={"solution": replays})
        lab = {aid: future.result(timeout=1800) for aid, future in labs.items()}
    results = {aid: {r.student: r for r in graded if r.assignment == aid} for aid in ids}
    _report_timings(request.config, results, lab, time.monotonic() - began)
    return {aid: (results[aid], lab.get(aid)) for aid in ids}, sorted(_temporary_folders() - before)


def _replays(aid: str, student_versions) -> dict:
    """{exercise: {kind: {answer grade id: source}}} of the exercises judged on outcomes: the released stubs
    (`untouched`) and the answers of tests/notebooks/cheats.py, for the solution's grading to replay their sections
    with (grader/audit.py)."""
    from grader.runner import is_answer

    released = nbformat.read(student_versions / aid / f"{aid}.ipynb", as_version=4)
    outcomes = {exercise_of(gid) for gid, source in _tests(aid) if OUTCOME.search(source)}
    replays = {ex: {"untouched": {grade_id(c): c.source for c in released.cells
                                  if is_answer(c) and exercise_of(grade_id(c)) == ex}} for ex in outcomes}
    for kind, answers in CHEATS.get(aid, {}).items():
        for gid, source in answers.items():
            replays[exercise_of(gid)].setdefault(kind, {})[gid] = source
    return replays


def _cheating(aid: str, answers: dict[str, str]):
    """The solution with the answer cells named in `answers` (grade ids) holding those sources instead."""
    nb = nbformat.read(SOURCE / aid / f"{aid}.ipynb", as_version=4)
    cells = {grade_id(cell): cell for cell in nb.cells}
    assert set(answers) <= set(cells), f"{aid}: tests/notebooks/cheats.py names answer cells it does not have"
    for gid, source in answers.items():
        cells[gid].source = source
    return nb


# Quiz options are shown in each learner's own order (streamlab.course.quiz): the solution answers with the letters
# its grading's learner ("solution") sees. Module 8 (32 lettered questions) is also handed in by "shared-key", with
# those letters copied into every lettered answer, as a key passed round a room would be.
SHARED_KEY = "08-cheat-sheet"


def _lettered_tests(nb) -> dict[int, str]:
    """{question number: grade id of its test cell} of the lettered questions."""
    from grader import lint

    keys = lint.lettered(nb)
    return {int(n): grade_id(cell) for cell in nb.cells if cell.cell_type == "code" and "quiz.reveal(" in cell.source
            for n in re.findall(r"quiz\.reveal\(\s*q(\d+)\s*,", cell.source) if int(n) in keys}


@functools.cache
def _with_shared_key(aid: str):
    """(the solution answering with the letters learner "solution" sees, {grade id of each lettered test: the
    points those letters must earn when read through learner "shared-key"'s own order})."""
    from grader import lint
    from streamlab.course import quiz
    from streamlab.course.variants import Variant, student_seed

    solution = _solution(aid)
    keys, tests, written = lint.lettered(solution), _lettered_tests(solution), lint.written_options(solution)
    mine = Variant(aid, student_seed("solution", aid), {})
    theirs = Variant(aid, student_seed("shared-key", aid), {})
    letters = {n: quiz.seen(f"q{n}", key, "".join(written[n]), drawn=mine) for n, key in keys.items()}
    expected = {tests[n]: float(quiz.canonical(f"q{n}", letters[n], "".join(written[n]), drawn=theirs) == keys[n])
                for n in keys}
    copied = nbformat.from_dict(solution)
    for cell in copied.cells:
        hit = re.fullmatch(r"q(\d+)_answer", grade_id(cell) or "")
        if hit and int(hit.group(1)) in letters:
            cell.source = f'q{hit.group(1)} = "{letters[int(hit.group(1))]}"  # the key another learner shared'
    return copied, expected


def _report_timings(config, results: dict, lab: dict, total: float) -> None:
    """Where the fixture's minutes go (graded runs, lab runs), one line per assignment: tests/conftest.py prints
    them in pytest's summary (a fixture's own output is captured)."""
    lines = [f"notebook runs, {total:.0f} s in all (graded: solution / untouched / cheats; lab: Run All + going "
             "back):"]
    for aid in results:
        if aid in REPLAYED:  # the stubs and cheats were judged in the solution's grading, their sections replayed
            graded = f"{results[aid]['solution'].seconds:.0f} s (with replays)" if "solution" in results[aid] else "-"
        else:
            graded = " / ".join(f"{results[aid][s].seconds:.0f} s" if s in results[aid] else "-"
                                for s in ("solution", "untouched", *CHEATS.get(aid, {})))
        record = lab.get(aid, {})
        ran = (f"lab {record.get('seconds', '-')} s + {record.get('reentry seconds', '-')} s" if aid in lab
               else "lab run in tests/cluster" if aid in ON_THE_CLUSTER else "lab run in tests/lakehouse")
        lines.append(f"  {aid:28} graded {graded:16} {ran}")
    config.streamlab_summary = getattr(config, "streamlab_summary", []) + lines


@pytest.fixture(params=IDS)
def outcome(request, runs):
    """(assignment id, {'solution': Result, 'untouched': Result}, lab-run record) for one assignment."""
    results, lab = runs[0][request.param]
    return request.param, results, lab


@pytest.fixture(params=LAB_IDS)
def lab_run(request, runs):
    """(assignment id, lab-run record) for one assignment run here as a learner would (not ON_THE_CLUSTER)."""
    return request.param, runs[0][request.param][1]


def _temporary_folders() -> set[str]:
    """The checkpoint folders streamlab makes (streamlab.new_checkpoint) in the system's temporary folder, of
    processes that are gone. A live process's folders are its own: make test runs the compose, cluster and hub
    labs beside these runs (tests/lanes.py)."""
    from streamlab.lab.lifecycle import orphaned_folders

    return {folder.name for folder in orphaned_folders()}


def test_solutions_hold_assignments():
    assert IDS, "solutions/ holds no assignment (<id>/<id>.ipynb)"


@pytest.mark.timeout(3600)
def test_solution_scores_full_marks(outcome):
    aid, results, _ = outcome
    sol = results["solution"]
    assert sol.error is None, f"{aid}: the solution could not be graded: {sol.error}"
    missing = [f"{e.grade_id} {e.points:g}/{e.max_points:g}: {e.hint}" for e in sol.exercises if _loses(e)]
    assert sol.max_score > 0 and not missing, f"{aid}: the solution loses points:\n" + "\n".join(missing)
    left_out = sorted(e.grade_id for e in sol.exercises if e.status == "cluster")
    assert left_out == (["ex5_leader_kill", "ex7_plan"] if aid == "09-cluster-failures" else []), (aid, left_out)


@pytest.mark.timeout(3600)
def test_untouched_student_version_scores_zero(outcome):
    aid, results, _ = outcome
    if "untouched" not in results:  # every test cell judged with the stubs: the audit's `none`, or its section
        sol = results["solution"]   # replayed with the released stubs where it is judged on outcomes (REPLAYED)
        tried = {gid: [p for kind, p in sol.audit.get(gid, []) if kind in ("none", "untouched, replayed")]
                 for gid in (e.grade_id for e in sol.exercises)}  # both for a swappable check of a replayed section
        assert tried and all(p and set(p) == {0} for p in tried.values()), f"{aid}: the stubs earn points: {tried}"
        return
    blank = results["untouched"]
    assert blank.error is None, f"{aid}: the untouched student version could not be graded: {blank.error}"
    earned = [f"{e.grade_id} {e.points:g}/{e.max_points:g}" for e in blank.exercises if e.points]
    assert blank.exercises and not earned, f"{aid}: the untouched student version earns points: {earned}"


@pytest.mark.timeout(3600)
def test_no_wrong_constant_or_random_answer_earns_a_point(outcome):
    """Each test cell, judged again right after the solution's with the exercise's answers swapped for 0 or empty,
    a function returning what the right one returned first (a memorised constant), the answer nudged, and random
    answers of the same shape (every other letter of a quiz), gives each of them 0 points."""
    from grader.audit import audit_points

    aid, results, _ = outcome
    sol = results["solution"]
    assert sol.error is None, f"{aid}: the solution could not be graded: {sol.error}"
    unaudited = [e.grade_id for e in sol.exercises if not sol.audit.get(e.grade_id)]
    assert not unaudited, f"{aid}: test cells no cheat was tried on: {unaudited}"
    scored = audit_points(sol.audit)
    assert not scored, f"{aid}: answers that are not the answer earn points:\n" + "\n".join(scored)


@pytest.mark.timeout(3600)
def test_constant_and_wrong_answers_earn_nothing_where_checks_read_what_the_notebook_made(outcome):
    """Where the audit cannot swap an answer (its checks read what the notebook's cells made with it), the answers
    of tests/notebooks/cheats.py earn 0: in the solution's grading, each exercise's section replayed with them, after
    which the right answer, replayed, earns its points again (REPLAYED); elsewhere the solution with those answers
    replaced, graded from the start, where every exercise left right keeps full marks."""
    aid, results, _ = outcome
    outcomes = {exercise_of(gid) for gid, source in _tests(aid) if OUTCOME.search(source)}
    assert set().union(*CHEATS.get(aid, {}).values()) >= {f"{ex}_answer" for ex in outcomes}, (
        f"{aid}: exercises judged on outcomes with no cheat in cheats.py")
    if aid in REPLAYED:  # judged in the solution's grading, each exercise's section replayed (grader/audit.py)
        sol = results["solution"]
        assert sol.error is None, f"{aid}: the solution could not be graded: {sol.error}"
        for kind, answers in CHEATS[aid].items():
            for gid in (gid for gid, _ in _tests(aid) if exercise_of(gid) in {exercise_of(a) for a in answers}):
                tried = [p for k, p in sol.audit.get(gid, []) if k == f"{kind}, replayed"]
                assert tried == [0], f"{aid}: {kind} answers, replayed, earn {tried} on {gid}"
        for gid in (gid for gid, source in _tests(aid) if OUTCOME.search(source)):
            lost = [p for k, p in sol.audit.get(gid, []) if k == RIGHT_REPLAYED]
            assert lost == [0], f"{aid}: the right answer, its section replayed, lost {lost} on {gid}"
        return
    for student, answers in CHEATS.get(aid, {}).items():
        graded = results[student]
        assert graded.error is None, f"{aid}, {student} answers: could not be graded: {graded.error}"
        cheated = {exercise_of(gid) for gid in answers}
        assert cheated <= {exercise_of(e.grade_id) for e in graded.exercises}, f"{aid}, {student}: not judged"
        earned = [f"{e.grade_id} {e.points:g}/{e.max_points:g}" for e in graded.exercises
                  if exercise_of(e.grade_id) in cheated and e.points]
        assert not earned, f"{aid}: {student} answers earn points: {earned}"
        lost = [f"{e.grade_id} {e.points:g}/{e.max_points:g}: {e.hint}" for e in graded.exercises
                if exercise_of(e.grade_id) not in cheated and _loses(e)]
        assert not lost, f"{aid}, {student} answers: the exercises left right lose points: {lost}"


def _loses(exercise) -> bool:
    """An exercise that did not earn its points; one judged only where the lab's cluster runs (module 9's leader
    kill, and Exercise 7's reads made fresh on the cluster) is left out of the total here (status "cluster", 0 of 0),
    neither earned nor lost."""
    return exercise.status != "passed" and not (exercise.status == "cluster" and exercise.max_points == 0)


def _tests(aid: str) -> list[tuple[str, str]]:
    """(grade id, source) of a solution's test cells."""
    from grader.runner import is_test

    return [(grade_id(cell), cell.source) for cell in _solution(aid).cells if is_test(cell)]


@pytest.mark.timeout(3600)
def test_untouched_student_version_runs_to_the_end(lab_run):
    aid, lab = lab_run
    errors = problems(lab)["errors"]
    assert not errors, f"{aid}: the untouched student version stops with an error:\n" + "\n".join(errors)


@pytest.mark.timeout(3600)
def test_no_red_stderr_box_and_the_setup_cell_names_the_connector(lab_run):
    """What a learner sees on Run All: no cell writes to stderr (the JVM's start-up lines, Spark's warnings)."""
    aid, lab = lab_run
    seen = problems(lab)["stderr"]
    assert not seen, f"{aid}: cells wrote to stderr:\n" + "\n".join(seen)


def _shown(lab: dict, cell_id: str):
    """The value a cell showed in the lab run (a dict or list literal, or text), parsed."""
    import ast

    assert cell_id in lab.get("shown", {}), f"cell {cell_id} showed nothing in the lab run"
    text = lab["shown"][cell_id]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _ints(mapping) -> dict:
    return {int(k): v for k, v in mapping.items()}


@pytest.mark.timeout(3600)
def test_what_is_new_since_3x_shows_the_numbers_its_text_states(runs):
    """Issue 15, item 3: the cells of 02 and 07 on what Spark added since 3.x show, live, the numbers the text under
    them states (KafkaSourceProvider.scala:569-582 by time; 550-557 the scan's metrics; StreamingQueryCheckpoint-
    Metadata.scala:62-76 the missing metadata file; KafkaMicroBatchStream's latestOffset with read_committed;
    AsyncProgressTrackingMicroBatchExecution.scala:253-295)."""
    labs = {aid[:2]: record for aid, (_, record) in runs[0].items()}
    assert "02" in labs and "07" in labs, "this test reads the lab runs of 02 and 07"
    if "02" in labs:
        lab = labs["02"]
        by_time = _shown(lab, "m2-bytime-code")
        assert _ints(by_time["startingTimestamp=cut"]) == {0: 20, 1: 20}, by_time
        assert _ints(by_time["by partition (0 from cut, 1 from 0)"]) == {0: 20, 1: 70}, by_time
        assert isinstance(by_time["an hour later"], str) and by_time["an hour later, strategy latest"] == {}, by_time
        lost = _shown(lab, "m2-dataloss-code")
        assert lost["failOnDataLoss=true"]["error"], lost
        kept = lost["failOnDataLoss=false"]
        assert kept["error"] is None and kept["rows"] == 40, lost
        assert kept["scan"].get("dataLoss") == 2 and kept["scan"].get("offsetOutOfRange") == 60, lost
        assert "STREAMING_CHECKPOINT_MISSING_METADATA_FILE" in str(_shown(lab, "m2-metadata-code"))
    if "07" in labs:
        lab = labs["07"]
        dedup = _shown(lab, "m7-dedup-code")
        assert dedup["rows kept"] == dedup["distinct ids kept"] == 200 and dedup["batches"] >= 2, dedup
        stalled = _shown(lab, "m7-open-tx-code")
        assert _ints(stalled["log end"]) == {0: 86}, stalled
        assert stalled["read_committed, transaction open"]["rows"] == 30, stalled
        assert stalled["read_committed, after the commit"]["rows"] == 85, stalled
        relay = _shown(lab, "m7-async-code")
        plain, asynchronous = relay["default"], relay["async, 10 s"]
        assert plain["error"] is None and plain["commits"] >= plain["batches"] >= 3, relay
        assert asynchronous["error"] is None and asynchronous["batches"] >= 3, relay
        # files at most every 10 s, not one per batch: the first batch's, then none within the 6 s run
        assert asynchronous["commits"] <= asynchronous["offsets"] <= 2 < asynchronous["batches"], relay
        assert relay["into foreachBatch"] and relay["with availableNow"], relay


@pytest.mark.timeout(3600)
def test_no_untouched_answer_cell_prints_ellipsis(lab_run):
    """An answer stub (`# YOUR CODE HERE`, then `pass`) shows nothing under it: `...` printed `Ellipsis`."""
    aid, lab = lab_run
    assert not problems(lab)["ellipsis"], f"{aid}: cells print Ellipsis: {lab['ellipsis']}"


@pytest.mark.timeout(3600)
def test_every_live_claim_of_a_self_test_holds(lab_run):
    """A self-test (08's sheet) proves each row on the learner's broker: in the lab run every claim printed holds
    (a claim printing ✗ is a row of the sheet that Spark contradicts, or a proof that does not prove it)."""
    aid, lab = lab_run
    if any("claims.claim" in source for source in _code(aid)):
        assert lab.get("claims"), f"{aid}: its self-test printed no claim in the lab run"
    failed = problems(lab)["claims"]
    assert not failed, f"{aid}: claims of its self-test do not hold:\n" + "\n".join(failed)


@pytest.mark.timeout(3600)
def test_every_section_and_check_can_be_run_again_after_run_all(lab_run):
    """After Run All (which ends with cleanup()), each check cell and each section, entered afresh, runs without
    an error: what a cell needs is recreated, or the cell says in one line what to run."""
    aid, lab = lab_run
    broken = problems(lab)["going back"]
    assert not broken, f"{aid}: going back after Run All breaks:\n" + "\n".join(broken)


@pytest.mark.timeout(3600)
def test_the_lab_run_leaves_no_temporary_folder(lab_run):
    aid, lab = lab_run
    assert not problems(lab)["left behind"], f"{aid}: the lab run left {lab['left_behind']} in its temporary folder"


@pytest.mark.timeout(3600)
def test_the_gradings_leave_no_temporary_folder(runs):
    _, left = runs
    assert not left, f"grading the solutions and the untouched versions left {left}"


@pytest.mark.timeout(3600)
def test_a_quiz_key_shared_between_learners_is_worth_a_guess(runs):
    """A key passed round ("Q3 is b"), graded through the learner's own order: exactly the questions where the
    other learner's letter shows the right option in hers earn their point (under half), and every other exercise of
    the solution keeps full marks on her variant."""
    if SHARED_KEY not in runs[0]:
        pytest.skip(f"{SHARED_KEY} was not selected")
    expected = _with_shared_key(SHARED_KEY)[1]
    assert 0 < sum(expected.values()) < len(expected) / 2, "these two learners' orders would not show the point"
    shared = runs[0][SHARED_KEY][0]["shared-key"]
    assert shared.error is None, shared.error
    points = {e.grade_id: e for e in shared.exercises}
    assert {gid: points[gid].points for gid in expected} == expected, \
        "the shared letters are not read through her order"
    others = [e for gid, e in points.items() if gid not in expected]
    assert others and all(e.status == "passed" for e in others), \
        [(e.grade_id, e.hint) for e in others if e.status != "passed"]
