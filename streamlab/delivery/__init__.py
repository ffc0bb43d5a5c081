"""Delivery: how records leave a query, and what a failure in between does to them.

`sinks` writes one input four ways (plain Kafka, an idempotent table, Kafka transactions, the file sink) and
counts what arrived; `faults` crashes a query at a chosen point of a batch's life and tallies duplicates and
losses; `quarantine` routes what does not parse to a dead-letter topic and replays it once repaired.
"""
