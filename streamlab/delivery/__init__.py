"""Delivery: how records leave a query, and what a failure in between does to them.

`sinks` writes one input four ways (plain Kafka, an idempotent table, Kafka transactions, the file sink) and
counts what arrived; `faults` crashes a query at a chosen point of a batch's life and tallies duplicates and
losses; `quarantine` routes what does not parse to a dead-letter topic and replays it once repaired.
`counting.count_delivery` is the course's one definition of written, duplicated and lost, which modules 7 and 9 use.
"""
from streamlab.delivery.counting import count_delivery  # noqa: F401  (modules 7 and 9: one rule, one import)
