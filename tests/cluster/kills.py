"""Run in its own process by test_cluster.py (a SparkContext is one per process, and the suite's is local):
a FailoverDemo on the cluster with N kills of one kind, then print its counts as one JSON line."""
import json
import sys

import streamlab
from streamlab.delivery.failover import FailoverDemo

kind, kills, every = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
spark, bootstrap = streamlab.setup(cluster=True)
script = [(15 + i * every, kind) for i in range(kills)]
demo = FailoverDemo(spark, bootstrap, partitions=4, rate=60, seconds=script[-1][0] + every, script=script,
                    restart_after=max(4.0, every - 4), show=False).start()
result = demo.wait()
result["kills"] = sum(1 for e in demo.events if "kill -9" in e)
result["events"] = demo.events
print(streamlab.cleanup(spark), file=sys.stderr)
print("RESULT " + json.dumps(result))
