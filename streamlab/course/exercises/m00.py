"""Module 0's visible exercise check (00-setup): a cap that reads the learner's records in her number of batches.

Why here: a learner's check cell is 1-3 lines (the teaching standard), so the check that cell ran moved here,
unchanged: the same check id, expected text and hint, so the lab's feedback and the grade are the same. The hidden
test stays in the notebook's test cell and takes the variant's numbers and the cap's form from `ex1_target` and
`is_whole`, as the check does.
"""
from __future__ import annotations

import math

from streamlab.course.checks import expect


def ex1_target() -> tuple[int, int]:
    """This learner's (batches, records) for Exercise 1, from her variant."""
    import streamlab

    v = streamlab.variant()
    batches = v.randint("ex1.batches", 3, 6)
    return batches, batches * v.choice("ex1.per_batch", [400, 450, 500, 600, 700, 750, 800])


def is_whole(cap) -> bool:
    """Whether cap is a whole number above 0 (not a bool)."""
    return isinstance(cap, int) and not isinstance(cap, bool) and cap > 0


def ex1_four_batches(cap) -> None:
    """Check that cap reads the variant's records in exactly its number of batches."""
    batches, records = ex1_target()
    whole = is_whole(cap)
    expect(whole and math.ceil(records / cap) == batches, "ex1_batches", f"{batches} batches",
           f"cap = {cap!r}, which reads {records:,} records in {math.ceil(records / cap)} batches" if whole
           else f"cap = {cap!r} (a whole number above 0 is needed)",
           "records / batches: the cap is one budget for the whole source, not per partition")
