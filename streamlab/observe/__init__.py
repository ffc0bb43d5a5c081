"""What we observe: the numbers an engineer reads to know what a streaming query is doing.

Progress events (`progress`), consumer lag (`lag`), the checkpoint's plan and commits (`checkpoint`, browsed and
replayed in `replay`), what consumer groups the broker knows (`groups`), which topics one source reads
(`subscriptions`) and the Kafka source seen from the inside: which task read which offsets (`internals`). Each
reads the real thing (the query, the checkpoint folder, the broker), never a copy the notebook could change.
"""
