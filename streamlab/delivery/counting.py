"""The course's one definition of what a destination holds after failures: *written*, *duplicated* and *lost*.

Why one: module 7 counts what a crashed sink left behind against the ids a source sent, and module 9 counts what a
sink holds against the ids a producer had acknowledged. Both are the same question, "of the records this
destination owes, how many arrived, how many extra copies, how many never", so both use this rule, and a learner
who wrote it in module 7 (Exercise 2) reuses it in module 9 (Exercise 3).

The rule:
  - `owed`: the ids the destination must hold (a source's sent records; a producer's acknowledged ones);
  - `written`: owed ids found at least once;
  - `duplicated`: extra copies of owed ids (an id found 3 times counts 2);
  - `lost`: owed ids never found.
Ids that are not owed are ignored: another producer's records, or a send the producer was told had failed.
"""
from __future__ import annotations


def count_delivery(delivered, owed) -> dict:
    """{'written', 'duplicated', 'lost'} of the `owed` ids among `delivered` (one entry per copy found)."""
    owed = set(owed)
    arrived = [i for i in delivered if i in owed]
    distinct = set(arrived)
    return {"written": len(distinct), "duplicated": len(arrived) - len(distinct), "lost": len(owed - distinct)}
