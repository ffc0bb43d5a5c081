"""One notebook's grading run inside the sandbox: `python -m grader.worker FD` (the job arrives on stdin).

The grader's parent process reads the hidden tests, then starts this worker in a sandbox (grader/sandbox.py) where
they, the other submissions and the results are not mounted, the course's code is read-only and /tmp is private.
The worker runs the learner's kernel (in a further, nested sandbox) and the checks, and writes what happened to
the pipe FD. So even a check that touches a path the notebook named cannot reach anything secret or shared.
When the grader is the machine's root, the worker and the kernel run as the unprivileged grading account
(grader/sandbox.py `dropped`): root's own files are then out of reach too, and the worker refuses to run as root.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path


def run_job(job: dict) -> dict:
    """Run one job (as grading.grade_notebook sends it) and return what happened, as JSON-able data."""
    import nbformat

    from .runner import Test, judge_spark, run
    from .sandbox import Sandbox, dropped

    if dropped():  # a root-run grader must have dropped to its account before starting this worker
        raise RuntimeError("the grading worker runs as the machine's root: grade through grading.make_sandbox")
    # No preload(): in the sandbox the course's code and Python are read-only, so late imports are safe.
    nb = nbformat.from_dict(job["nb"])
    tests = {gid: Test(**spec) for gid, spec in job["tests"].items()}
    box = Sandbox() if job.get("kernel_sandbox") else None  # nested: locks the mounts, ends the kernel's processes
    from streamlab.course.checks import cluster_inputs_given

    with cluster_inputs_given(job.get("cluster_inputs") or {}):  # what the grader's process made on the cluster
        outcome = run(nb, tests, job["owners"], Path(job["workdir"]), int(job["timeout"]), box, judge_spark,
                      audit=job.get("audit") or False)
    return {"nb": outcome.nb, "verdicts": {g: asdict(v) for g, v in outcome.verdicts.items()},
            "stopped": outcome.stopped, "cell_errors": {str(k): v for k, v in outcome.cell_errors.items()},
            "audits": outcome.audits}


def main() -> int:
    """Read the job from stdin, write the outcome as JSON to the file descriptor given as the only argument."""
    out = os.fdopen(int(sys.argv[1]), "w", encoding="utf-8")
    job = json.load(sys.stdin)
    try:
        result = run_job(job)
    except BaseException as exc:  # reported by the parent as one line
        from streamlab.errors import first_line

        result = {"error": first_line(exc, 340)}
    with out:
        json.dump(result, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
