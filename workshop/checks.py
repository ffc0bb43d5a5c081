"""The hub's checks service: a learner's Check my work, graded with the hidden tests her server cannot see.

Why: behind her walls (walls.py) `solutions/` is an empty folder, so the grader in her server has no hidden tests
and could only say so. Her server asks the hub instead. This service (root, on 127.0.0.1, started and stopped by
the hub: hub.configure) takes her server's token (services.learner_of), and grades her saved
`notebooks/<id>/<id>.ipynb` as the instructor's grading does (instructor.check: her own file or nothing, in the
sandbox as `streamlab-grader`, with her variant seed, on the instructor's lab broker). It hands the feedback page
back into her home (`feedback/<id>/`) and answers the table her own laptop would print. The room's grades stay the
instructor's: grades.csv is not touched.

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

    def __init__(self, root: Path, api_url: str, grade=None):
        from workshop import instructor
        from workshop.hub import Settings

        self.settings, self.api_url = Settings.load(root), api_url
        self._grade = grade or instructor.check  # (settings, assignment, learner) -> a grading result
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(SLOTS)
        self._mine: set[str] = set()  # learners with a check asked and not answered yet
        self._waiting = 0

    def describe(self) -> dict:
        """What a GET answers."""
        return {"service": "streamlab checks", "slots": SLOTS, "queue": QUEUE}

    def handle(self, token: str, body: dict) -> dict:
        """A POST {"assignment": id}: grade the learner's notebook; her table, score and feedback page."""
        from grader.course import SOURCE, assignments
        from grader.grading import table

        name = learner_of(self.api_url, token)
        aid, known = body.get("assignment"), assignments(SOURCE)
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
        finally:
            with self._lock:
                self._mine.discard(name)
        return {"assignment": aid, "table": table(result), "graded": bool(result.graded and not result.error),
                "score": result.score, "max": result.max_score, "feedback": f"feedback/{aid}/{aid}.html",
                "exercises": [[e.grade_id, e.points, e.max_points] for e in result.exercises]}


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
