"""The course's own checks: what a notebook asks, and how an answer is judged.

`checks` prints one actionable line per visible check; `quiz` holds answers as plain variables the hidden tests
judge; `variants` gives each learner their own numbers; `scenarios` are live runs a check makes from scratch;
`claims` proves the cheat sheet's statements live; `interview` is the question pool for interview practice.
"""
