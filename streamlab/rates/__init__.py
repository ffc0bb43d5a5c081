"""Rates: how fast a query reads, and what decides it.

Structured Streaming has no feedback loop: a cap (`maxOffsetsPerTrigger`) read when the query starts is all
there is, sized and watched with `ratecontrol`. DStreams had one, Spark's PID rate estimator, re-created bit for
bit in `pid` so module 4 can show what it did and why Structured Streaming dropped it.
"""
