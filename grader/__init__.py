"""The course's exercise checker, built on nbgrader: release, check (learner) and grade (instructor)."""
from __future__ import annotations

from .course import GraderError, assignments, release
from .grading import Result, grade_notebook
from .notebook import check, check_button, check_here, timing

__all__ = ["GraderError", "Result", "assignments", "check", "check_button", "check_here", "grade_notebook", "release", "timing"]
