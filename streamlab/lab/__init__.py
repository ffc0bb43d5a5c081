"""The lab's machinery: what must run before a lesson can, and what tidies up after it.

A lesson needs Apache Kafka (`broker`, run from the jars `jars` resolves at set-up), a SparkSession with Spark's own
connector (`session`), topics made for it (`topics`) and data flowing into them (`producer`). `lifecycle` is the
notebook's own life: the one setup cell, the names it hands out, and the cleanup that leaves nothing behind.
"""
