"""`python -m bench` (what `make bench` runs): the benchmark ratios, printed."""
import sys

USAGE = """usage: python -m bench

Measures and prints the benchmark ratios in one run (it starts brokers, Spark, the cluster, the compose lab
and a hub, so it takes a while): engine vs raw consumer, grading vs running, Delta against the file sink, the
cluster, compose and hub labs. It takes no arguments; its settings are environment variables
(python -m streamlab settings lists them)."""

if sys.argv[1:]:
    if sys.argv[1] in ("-h", "--help"):
        print(USAGE)
        sys.exit(0)
    print(f"bench: no arguments are taken (got {' '.join(sys.argv[1:])}); run `python -m bench --help`",
          file=sys.stderr)
    sys.exit(2)

from bench import main  # noqa: E402  (after the arguments: --help starts nothing)

try:
    sys.exit(main())
except KeyboardInterrupt:
    print("bench: interrupted; what it started is stopped", file=sys.stderr)
    sys.exit(130)
