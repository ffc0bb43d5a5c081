"""`python -m bench` (what `make bench` runs): the benchmark ratios, printed."""
import sys

from bench import main

try:
    sys.exit(main())
except KeyboardInterrupt:
    print("bench: interrupted; what it started is stopped", file=sys.stderr)
    sys.exit(130)
