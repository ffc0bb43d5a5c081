"""Exercise scaffolds: partial code with `...` where the learner writes (the teaching standard's "scaffolds").

Why here: an answer cell shows a skeleton to fill in, which runs as it is (`...` is Python's Ellipsis), so Run All
never stops on an untouched exercise. The cells that would run a crash test or a write with the answer ask
`filled` first and wait, with one line naming what to fill in, until no `...` is left.
"""
from __future__ import annotations

import types


def _has_gap(value) -> bool:
    if value is Ellipsis:
        return True
    in_kernel = getattr(type(value), "filled_in_kernel", None)  # the grader's stand-in for a learner's function
    if in_kernel is not None:
        return not in_kernel(value)
    if isinstance(value, str):
        return "..." in value
    if isinstance(value, dict):
        return any(_has_gap(v) for v in value.values())
    if isinstance(value, (tuple, list, frozenset, set)):
        return any(_has_gap(v) for v in value)
    if isinstance(value, types.CodeType):
        return any(_has_gap(c) for c in value.co_consts)
    code = getattr(value, "__code__", None)
    return code is not None and _has_gap(code)


def filled(*answers) -> bool:
    """Whether every answer is written (not None) and holds no `...` of its scaffold (in its code or its text)."""
    return all(answer is not None and not _has_gap(answer) for answer in answers)


def waiting(*names: str) -> str:
    """The one line a cell shows while an exercise's scaffold is not filled in."""
    return f"not written yet: fill in the ... of {', '.join(names)}, then run this cell again"
