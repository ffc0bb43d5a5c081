"""The hub's checks service: a learner's Check my work, graded with the hidden tests her server cannot see.

Why: behind her walls (walls.py) `solutions/` is an empty folder, so the grader in her server has no hidden tests
and could only say so. Her server asks the hub instead. This service (root, on 127.0.0.1, started and stopped by
the hub: hub.configure) takes her server's token (services.learner_of), and grades her saved
`notebooks/<id>/<id>.ipynb` as the instructor's grading does (instructor.check: her own file or nothing, in the
sandbox as `streamlab-grader`, with her variant seed, on the instructor's lab broker). It hands the feedback page
back into her home (`feedback/<id>/`) and answers the table her own laptop would print. The room's grades stay the
instructor's: grades.csv is not touched.

Her quiz record is the hub's (`quiz/<learner>.json` in the workshop's folder, root's: never her home, never a path she
names). A wrong answer's explanation names the right option, so, as on a laptop (streamlab.course.quiz.record_check),
each wrong answer moves its question to its next round: options reshuffled, numbers drawn anew. Her next check is
graded in the rounds recorded here (grader.grading.cohort_rounds), whatever her request or her own copy says; the
answer hands them back and her `grader check` writes them into her quiz.json, so her cells show what is graded. A
letter copied from an explanation is then worth what a guess is; a local copy she edits only shows her an order
other than the one graded.

Bounded, since each grading holds a Spark JVM: one check per learner at a time, SLOTS for the room at once, at most
QUEUE waiting; a learner beyond those is told to try again in a minute. Started by the hub as
`python -m workshop.checks WORKSHOP_ROOT`, listening on $JUPYTERHUB_SERVICE_URL; the spawner gives each server
its URL as STREAMLAB_CHECK_URL, which grader.notebook's Check my work uses.
"""
from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from streamlab.course.quiz import hub_record_file, load_record, summary
from streamlab.errors import first_line
from workshop import services
from workshop.instructor import NotCollected
from workshop.services import Refused, learner_of

SLOTS = max(1, (os.cpu_count() or 2) // 2)  # gradings at once: each a Spark JVM and a kernel
QUEUE = 8  # checks waiting for a slot, beyond which a learner is asked to try again
USAGE = "python -m workshop.checks WORKSHOP_ROOT"


class Service:
    """Grades one learner's notebook per request, within the bounds above."""

    name = "checks"

    def __init__(self, root: Path, api_url: str, grade=None, source: Path | None = None):
        from workshop import instructor
        from workshop.hub import Settings

        self.settings, self.api_url = Settings.load(root), api_url
        self._grade = grade or instructor.check  # (settings, assignment, learner) -> a grading result
        self.source = source  # the course whose assignments are checked (the course's solutions/; tests: a fixture)
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(SLOTS)
        self._mine: set[str] = set()  # learners with a check asked and not answered yet
        self._waiting = 0

    def describe(self) -> dict:
        """What a GET answers."""
        return {"service": "streamlab checks", "slots": SLOTS, "queue": QUEUE}

    def handle(self, token: str, body: dict) -> dict:
        """A POST {"assignment": id}: grade the learner's notebook in her recorded rounds; her table, score, feedback
        page and quiz record (anything else in the body, a round included, is ignored)."""
        from grader.course import SOURCE, assignments
        from grader.grading import table

        name = learner_of(self.api_url, token)
        aid, known = body.get("assignment"), assignments(self.source or SOURCE)
        if aid not in known:
            raise Refused(400, f"{aid!r} is not an assignment of this course (one of: {', '.join(known)})")
        with self._lock:
            if name in self._mine:
                raise Refused(409, "a check of yours is running already: its table comes here when it is done")
            if self._waiting >= QUEUE:
                raise Refused(429, "every grading slot of the room is busy: try again in a minute")
            self._mine.add(name)
            self._waiting += 1
        try:
            with self._slots:
                with self._lock:
                    self._waiting -= 1
                try:
                    result = self._grade(self.settings, aid, name)
                except NotCollected as exc:
                    raise Refused(404, f"nothing to grade: {exc} (save it, then check again)") from None
                except Exception as exc:  # the learner gets one line, the hub's log the rest
                    raise Refused(500, f"the grading could not run: {first_line(exc)}") from exc
                # still hers alone (one check per learner): her record moves on before her next check may start
                graded = bool(result.graded and not result.error)
                record = self.keep_quiz(name, aid, result) if graded else load_record(self.record_of(name))
        finally:
            with self._lock:
                self._mine.discard(name)
        entries = record.get(aid, {})
        return {"assignment": aid, "table": table(result), "graded": graded,
                "score": result.score, "max": result.max_score, "feedback": f"feedback/{aid}/{aid}.html",
                "exercises": [[e.grade_id, e.points, e.max_points] for e in result.exercises],
                "quiz": entries, "summary": summary(aid, record) if entries else None}

    def record_of(self, name: str) -> Path:
        """The learner's quiz record, in the workshop's folder (its `quiz/` folder root's alone)."""
        path = hub_record_file(self.settings.root, name)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        return path

    def keep_quiz(self, name: str, aid: str, result) -> dict:
        """Keep a graded check's quiz marks in the learner's record as a laptop's check does (first mark kept, best
        kept, a wrong answer's question to its next round, said in a note); the record afterwards."""
        from grader.progress import quiz_marks, record_quiz

        path = self.record_of(name)
        marks = quiz_marks(result)
        record_quiz(result, path)
        if marks and not path.is_file():
            raise Refused(500, "the hub could not keep your quiz record: tell your instructor")
        return load_record(path)


def main(argv: list[str] | None = None) -> int:
    """Serve until the hub stops this service (or is gone)."""
    args = sys.argv[1:] if argv is None else argv
    where = services.address(USAGE)
    if where is None:
        return 2
    if len(args) != 1 or not (Path(args[0]) / "workshop.json").is_file():
        print(f"usage: {USAGE} (the folder with workshop.json)", file=sys.stderr)
        return 2
    return services.serve(where[0], Service(Path(args[0]), where[1]))


if __name__ == "__main__":
    sys.exit(main())
