"""nbgrader settings for the course: solutions/ is the source, notebooks/ the release (python -m grader wraps these)."""
import os

c = get_config()  # noqa: F821 (provided by nbgrader)
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"
# Stubs must not raise: an untouched notebook runs to the end (`pass` is a valid statement and function body, and
# prints nothing, where `...` as a cell's last line printed `Ellipsis` under it).
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\npass"}
# Streaming cells wait on queries: a generous per-cell limit; an endless loop is interrupted and reported.
c.Execute.timeout = 180
# Put back deleted test cells; a warning on stderr (Spark, py4j, DeprecationWarning) must not fail a test.
c.OverwriteCells.add_missing_cells = True
c.IgnorePattern.pattern = r"^"
# Keep the kernel's own start-up log (e.g. ipykernel's TCP notice) out of the grader's output.
c.Execute.extra_arguments = ["--HistoryManager.hist_file=:memory:", "--IPKernelApp.log_level=ERROR"]
