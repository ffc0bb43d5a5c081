"""Run in its own process by test_cluster.py (a SparkContext is one per process, and the suite's is local):
a FailoverDemo on the cluster with N broker kills and N executor kills taking turns, every/2 seconds apart, then
print its counts as one JSON line. One run for both kinds: each run pays a cold driver, its executors and a drain,
minutes on a loaded 2-core machine, and the kinds never overlap (the demo's script waits for a killed broker to be
back before its next step)."""
import json
import sys

import streamlab
from streamlab.delivery.failover import FailoverDemo

kills, every = int(sys.argv[1]), float(sys.argv[2])
spark, bootstrap = streamlab.setup(cluster=True)
script = [(15 + i * every + half, kind) for i in range(kills) for half, kind in ((0.0, "leader"), (every / 2, "executor"))]
demo = FailoverDemo(spark, bootstrap, partitions=4, rate=60, seconds=script[-1][0] + every, script=script,
                    restart_after=max(4.0, every / 2 - 1), show=False).start()
result = demo.wait()
result["broker kills"] = sum(1 for e in demo.events if "kill -9 broker" in e)
result["executor kills"] = sum(1 for e in demo.events if "kill -9 executor" in e)
result["events"] = demo.events
print(streamlab.cleanup(spark), file=sys.stderr)
print("RESULT " + json.dumps(result))
