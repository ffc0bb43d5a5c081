"""Answers a learner could write without understanding, for the exercises judged on what the notebook's own cells
made with the answer (grader/audit.py's `# audit: judged on`).

The audit cannot swap such an answer at its test cell: the cells between the answer and the test already ran with
the right one, and what they wrote (topics, a SQLite file, a replay) stays. So in the modules of REPLAYED (every
module here) the solution's grading runs each such exercise's section again with these answers (and the released
stubs), then with the right one (grader/audit.py); a module not in REPLAYED would have each of these notebooks, the
solution with some answer cells replaced, graded from the start like any submission (tests/notebooks/test_modules.py).
Either way the exercises replaced must earn 0, every other one full marks.
  - `constant`: an answer that gives the same thing whatever it is given: one fixed message, one topic;
  - `wrong`: the plausible wrong answer (the notebook's own at-least-once code, everything unparsed to the clean
    topic) or random values of the right shape.
The untouched student version (every answer None) is judged beside them. A writer that writes nothing (a constant
that returns None) is not graded again: it leaves the topics and tables as the untouched version's None does, and
graded, such writers made the constant notebooks take 264 s and 316 s where the wrong ones took 117 s and 122 s
(the rehearsal of efa54f5), which the suite's time cannot spare.
"""
from __future__ import annotations

# Modules whose exercises judged on outcomes start fresh when their section runs again (new topics, tables and
# checkpoints): their stubs and these answers are judged in the solution's own grading, each exercise's section
# replayed with them and then with the right answer (grader/audit.py), not by grading whole notebooks again. Module
# 6's Exercise 4 replays the demo's quarantine into a fresh copy of the demo's topics each time its cell runs.
REPLAYED = {"06-multi-topic", "07-sinks-exactly-once", "10-lakehouse"}

CHEATS: dict[str, dict[str, dict[str, str]]] = {
    "06-multi-topic": {
        "constant": {
            "ex4_answer": ("def repair(value):\n"
                           "    return '{\"id\": 1, \"user\": \"user-1\", \"amount\": 1.0}'\n"),
        },
        "wrong": {
            "ex3_answer": ("def route(batch_df, batch_id):\n"
                           "    for source in EX3_SCHEMAS:\n"
                           "        quarantine.write(batch_df.where(F.col('topic') == source).select('value'),\n"
                           "                         EX3_CLEAN[source])\n"),
            "ex4_answer": ("import random\n"
                           "_rng = random.Random(7)\n\n"
                           "def repair(value):\n"
                           "    return json.dumps({'id': _rng.randint(0, 999), 'user': f'user-{_rng.randint(0, 9)}',\n"
                           "                       'amount': round(_rng.uniform(0, 99), 2)})\n"),
        },
    },
    "07-sinks-exactly-once": {
        "constant": {
            "ex1_answer": ("def route(events):\n"
                           "    return events.select(F.lit(ex1_base + '-' + ACTIONS[0]).alias('topic'),\n"
                           "                         F.col('user').alias('key'),\n"
                           "                         F.to_json(F.struct('id', 'user', 'amount')).alias('value'))\n"),
        },
        "wrong": {
            "ex1_answer": ("def route(events):\n"
                           "    pick = (F.rand(7) * len(ACTIONS)).cast('int') + 1\n"
                           "    return events.select(\n"
                           "        F.concat(F.lit(ex1_base + '-'), F.element_at(F.array(*map(F.lit, ACTIONS)), pick))"
                           ".alias('topic'),\n"
                           "        F.concat(F.lit('user-'), (F.rand(8) * 10).cast('int').cast('string')).alias('key'),\n"
                           "        F.to_json(F.struct((F.rand(9) * 1000).cast('int').alias('id'))).alias('value'))\n"),
            "ex3_answer": "ex3_ddl, ex3_save = given_ddl, given_save\n",
            "ex4_answer": "ex4_write = given_write\n",
        },
    },
    # Module 9's Exercise 6 is judged on the grader's own live runs, at its test cell, where the audit swaps the
    # answer: its `memorized` kind is the constant (what the answer returned first, whatever it is given), and
    # earns 0. Graded whole, the likeliest wrong rule, silence taken for a stall, which names all four live runs
    # right, earns 0 too (the idle run read 9 s after its last event catches it), and every other exercise full
    # marks. A separate constant notebook is not graded: it would be one more module-9 grading (about 60 s) for
    # what the audit proves.
    "09-cluster-failures": {
        "wrong": {
            "ex6_answer": ("from streamlab.observe.lag import total_lag\n\n\n"
                           "def diagnose(progress, status, silent_s):\n"
                           "    last = progress[-1]\n"
                           "    if silent_s > 2:\n"
                           "        return 'stuck batch'\n"
                           "    if total_lag(last) > 0:\n"
                           "        return 'capped'\n"
                           "    return 'idle' if last['numInputRows'] == 0 else 'slow sink'\n"),
        },
    },
    "10-lakehouse": {
        "constant": {  # the right types on the stream, one made-up event in every row
            "ex1_answer": ("def to_silver(bronze_df):\n"
                           "    return bronze_df.select(F.lit(1).cast('long').alias('id'), F.lit('user-1').alias('user'),\n"
                           "                            F.lit('deposit').alias('action'), F.lit(1.0).alias('amount'),\n"
                           "                            F.timestamp_millis(F.lit(0).cast('long')).alias('event_time'),\n"
                           "                            'partition', 'offset')\n"),
        },
        "wrong": {  # the plausible mistakes: guessed types, a plain append, one app id for all, no cap
            "ex1_answer": ("def to_silver(bronze_df):\n"
                           "    schema = 'id long, user string, action string, amount int, ts long'\n"
                           "    return (bronze_df.select(F.from_json('json', schema).alias('e'), 'partition', 'offset')\n"
                           "            .select('e.id', 'e.user', 'e.action', 'e.amount',\n"
                           "                    F.col('e.ts').cast('timestamp').alias('event_time'), 'partition', 'offset'))\n"),
            "ex2_answer": ("def upsert_balances(batch_df, batch_id):\n"
                           "    batch_df.write.format('delta').mode('append').save(ex2_path)\n"),
            "ex3_answer": ("def ex3_writer(checkpoint):\n"
                           "    def write(batch_df, batch_id):\n"
                           "        (batch_df.write.format('delta').mode('append').option('txnAppId', 'ex3')\n"
                           "         .option('txnVersion', batch_id).save(ex3_path))\n"
                           "    return write\n"),
            "ex4_answer": ("def ex4_start(source, target, checkpoint):\n"
                           "    return (spark.readStream.format('delta').load(source).writeStream.format('delta')\n"
                           "            .option('checkpointLocation', checkpoint).trigger(availableNow=True).start(target))\n"),
        },
    },
}
