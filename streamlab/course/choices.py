"""The four options of a numbered interview question: the right answer and three wrong ones, lettered a–d.

Why a module of its own: the first pool (interview.py) and the pool beside it (pool_more.py) both make numbered
questions with it, and the drill's machinery in interview.py imports pool_more, so the helper cannot live in either
without an import circle.
"""
from __future__ import annotations

import random

LETTERS = "abcd"


def choices(rng: random.Random, right, wrongs) -> tuple[list, str]:
    """Four options (the right one and three distinct wrong ones) in random order; returns (options, key)."""
    seen, options = {str(right)}, [str(right)]
    for wrong in wrongs:
        if str(wrong) not in seen:
            seen.add(str(wrong))
            options.append(str(wrong))
        if len(options) == 4:
            break
    step = 1
    while len(options) < 4:  # distractors that happened to coincide: fill with nearby numbers
        for candidate in (f"{_num(right) + step:,}", f"{max(0, _num(right) - step):,}"):
            if candidate not in seen and len(options) < 4:
                seen.add(candidate)
                options.append(candidate)
        step += 1
    rng.shuffle(options)
    return options, LETTERS[options.index(str(right))]


def _num(text) -> int:
    return int(str(text).replace(",", ""))
