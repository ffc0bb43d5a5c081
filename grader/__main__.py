"""`python -m grader release | check NOTEBOOK | grade SUBMISSIONS_DIR | audit [ASSIGNMENT ...] | lint | progress |
site | interview | revision`."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .course import RELEASE, ROOT, SOURCE, CouldNotGrade, GraderError


def main(argv: list[str] | None = None) -> int:
    """Run the grader command line; returns the exit code."""
    from streamlab.lab.machine import interrupt_on_termination

    from .course import fast_imports

    fast_imports()
    interrupt_on_termination()  # a killed check or grade stops its sandboxed kernel too (`_run_job`)
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__)
    parser.add_argument("--source", type=Path, default=SOURCE, help="nbgrader source folder (default solutions/)")
    sub = parser.add_subparsers(dest="command", required=True)
    rel = sub.add_parser("release", help="regenerate notebooks/ (student versions) from solutions/")
    rel.add_argument("--out", type=Path, default=RELEASE, help="release folder (default notebooks/)")
    chk = sub.add_parser("check", help="grade one notebook with the hidden tests (the file is not modified)")
    chk.add_argument("notebook", type=Path)
    chk.add_argument("--assignment", help="assignment id, when the file name is not <id>.ipynb")
    chk.add_argument("--timeout", type=int, help="seconds a cell may run (default: nbgrader_config.py)")
    chk.add_argument("--results", type=Path, help="feedback folder (default feedback/ next to the notebook)")
    chk.add_argument("--seed", type=int, help="grade this variant (default: this machine's, as the lab uses)")
    grd = sub.add_parser("grade", help="autograde a cohort: SUBMISSIONS_DIR/<student>/<assignment>/<id>.ipynb")
    grd.add_argument("submissions", type=Path)
    grd.add_argument("--out", type=Path, default=ROOT / "feedback" / "cohort",
                     help="output folder (default feedback/cohort/, git-ignored)")
    grd.add_argument("--workers", type=int, default=2, help="notebooks graded at once (default 2)")
    grd.add_argument("--timeout", type=int, help="seconds a cell may run (default: nbgrader_config.py)")
    grd.add_argument("--no-sandbox", action="store_true",
                     help="grade where user namespaces are unavailable (learner code could then read the tests)")
    aud = sub.add_parser("audit", help="prove each exercise's tests give wrong, constant and random answers 0 points")
    aud.add_argument("assignments", nargs="*", help="assignment ids (default: every one in --source)")
    aud.add_argument("--timeout", type=int, help="seconds a cell may run (default: nbgrader_config.py)")
    sub.add_parser("samples", help="rewrite tests/fixtures/sample-submissions/ from the current 00-setup release")
    prog = sub.add_parser("progress", help="your last Check my work score of every module; --export it for a team "
                                           "lead, who reads a folder of them with --team")
    prog.add_argument("--export", type=Path, metavar="FILE", help="write your progress to FILE (one JSON file)")
    prog.add_argument("--name", help="your name in the exported file (default: your login name)")
    prog.add_argument("--team", type=Path, metavar="FOLDER", help="one table from a folder of exported files")
    lint = sub.add_parser("lint", help="print each module's teaching numbers (../shared/teaching-style.md); "
                                       "exit 1 where one is worse than tests/course-lint.json")
    lint.add_argument("--update", action="store_true", help="write tests/course-lint.json (none may be worse)")
    lint.add_argument("--measure", nargs="*", metavar="ID", help="first run these untouched student notebooks (all "
                                                                 "when none is named) and record each Run All's "
                                                                 "seconds in tests/course-times.json")
    site = sub.add_parser("site", help="the course as a static site (student notebooks, figures; docs/site.md)")
    site.add_argument("--out", type=Path, help="site folder, replaced (default .streamlab/site/)")
    site.add_argument("--executed", type=Path, metavar="DIR",
                      help="executed student notebooks <id>.ipynb: their outputs are shown")
    site.add_argument("--run", action="store_true", help="first run every student notebook into --executed DIR")
    seen = sub.add_parser("seen", help="each live demo's 'What you should see': its last frame from a real run, into "
                                       "solutions/<id>/figures/ and a cell under the demo (grader/seen.py)")
    seen.add_argument("--executed", type=Path, metavar="DIR", help="executed student notebooks <id>.ipynb (default "
                                                                   ".streamlab/site-executed/, which make site fills)")
    seen.add_argument("--run", action="store_true", help="first run every student notebook into the --executed DIR")
    seen.add_argument("--cluster", action="store_true", help="with --run, module 9 too: its setup starts the lab's "
                                                             "cluster (3 brokers, Spark standalone), stopped after it")
    seen.add_argument("--only", nargs="+", metavar="ID", help="these modules only (e.g. 09-cluster-failures, or ONCALL)")
    rev = sub.add_parser("revision", help="revision aids: module 8's tables as a printable cheat sheet (HTML, PDF) "
                                          "and code-only copies of the notebooks")
    rev.add_argument("--out", type=Path, help="folder (default .streamlab/revision/)")
    itv = sub.add_parser("interview", help="a timed mock interview round in the terminal; weak topics come back "
                                           "first in later rounds (streamlab/course/mock.py)")
    itv.add_argument("--topics", help="comma-separated topics (default all)")
    itv.add_argument("--minutes", type=float, default=20, help="the round's length (default 20)")
    itv.add_argument("--history", action="store_true", help="print your interview history per topic and stop")
    itv.add_argument("--forensics", action="store_true",
                     help="a checkpoint forensics case instead: a crashed query's files, what replays and what lands "
                          "twice (streamlab/course/forensics.py)")
    dist = sub.add_parser("distribute", help="copy the course for a graded cohort, without solutions and tests")
    dist.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "release":
            from .course import release

            release(args.out.resolve(), args.source.resolve())
        elif args.command == "check":
            from .grading import check, read_submission, table
            from streamlab.settings import settings

            from .notebook import check_on_hub

            if settings.check_url and args.source == SOURCE and not args.assignment:  # on a workshop's hub
                return check_on_hub(args.notebook, settings.check_url)
            read_submission(args.notebook, args.assignment, args.source.resolve())  # fail fast, one line
            print(f"checking {args.notebook} with the hidden tests (your file is not changed) …", flush=True)
            if not settings.just_saved:
                from .notebook import unsaved_warning

                warning = unsaved_warning(args.notebook)
                if warning:
                    print(f"warning: {warning}", flush=True)
            result = check(args.notebook, args.assignment, args.timeout, args.results, args.source.resolve(),
                           seed=args.seed)
            print(table(result))
        elif args.command == "distribute":
            from .distribute import distribute

            for gone in distribute(args.out):
                print(f"left out {gone}")
            print(f"wrote {args.out.resolve()} (learners: make lab; see NO-SOLUTIONS.md)")
        elif args.command == "audit":
            from .cohort import audit_assignments

            return audit_assignments(args.assignments, args.source.resolve(), args.timeout)
        elif args.command == "progress":
            from . import progress

            if args.team:
                print(progress.team(args.team))
            elif args.export:
                import getpass

                print(f"wrote {progress.export(args.export, args.name or getpass.getuser())}: hand it to your team lead")
            else:
                progress.show()
        elif args.command == "site":
            from .site import DEFAULT_OUT, main as site_main

            return site_main(args.out or DEFAULT_OUT, args.executed, run=args.run)
        elif args.command == "seen":
            from .seen import main as seen_main

            return seen_main(args.executed or ROOT / ".streamlab" / "site-executed", run=args.run,
                             cluster=args.cluster, only=args.only)
        elif args.command == "revision":
            from .revision import DEFAULT_OUT as REVISION_OUT, main as revision_main

            return revision_main(args.out or REVISION_OUT)
        elif args.command == "interview" and args.forensics:
            from streamlab.course.forensics import main as forensics_main

            return forensics_main([])
        elif args.command == "interview":
            from streamlab.course.mock import main as interview_main

            return interview_main((["--topics", args.topics] if args.topics else []) + ["--minutes", str(args.minutes)]
                                  + (["--history"] if args.history else []))
        elif args.command == "lint":
            from .lint import main as lint_main, measure_run_all

            if args.measure is not None:
                measure_run_all(args.measure or None)
            return lint_main(update=args.update, source=args.source.resolve())
        elif args.command == "samples":
            from .cohort import make_samples

            for path in make_samples(source=args.source.resolve()):
                print(f"wrote {path}")
        else:
            from .cohort import grade_cohort

            results = grade_cohort(args.submissions, args.out, args.workers, args.timeout, args.source.resolve(),
                                   sandbox=not args.no_sandbox)
            missed = [r for r in results if not r.graded]
            if missed:
                print(f"error: {len(missed)} submission(s) could not be graded (marked 'not graded' in grades.csv); "
                      "fix the machine and grade again", file=sys.stderr)
                return 4
    except CouldNotGrade as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 4
    except GraderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug in the grader: one line, the traceback only on request
        from streamlab.settings import settings

        if settings.grader_debug:
            raise
        print(f"error: internal grader error ({type(exc).__name__}: {exc}); rerun with GRADER_DEBUG=1 "
              "for the traceback", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        from .grading import end_running

        end_running()  # a cohort's gradings run in threads the interrupt does not reach
        print("error: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
