"""The exercises' visible checks, one module per course module (`m05` for 05-rate-limiting, ...).

A learner's check cell is one call (`m05.ex1_live(per_record_ms, measured_events)`), as the teaching standard asks;
the checks it makes live here, with the same ids, expected text and hints as before. The hidden tests stay in the
notebooks' test cells, which the grader alone runs.
"""
