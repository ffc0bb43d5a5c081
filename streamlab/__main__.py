"""`python -m streamlab broker start|stop|status` and `python -m streamlab doctor`."""
from __future__ import annotations

import argparse
import sys

from .broker import broker_status, ensure_broker, stop_broker
from .errors import LabError


def main(argv: list[str] | None = None) -> int:
    """Run the streamlab command line."""
    parser = argparse.ArgumentParser(prog="python -m streamlab")
    sub = parser.add_subparsers(dest="command", required=True)
    broker = sub.add_parser("broker", help="start, stop or inspect the embedded Kafka broker")
    broker.add_argument("action", choices=["start", "stop", "status"])
    sub.add_parser("doctor", help="check Java, the broker and Spark, one line each")
    args = parser.parse_args(argv)
    try:
        if args.command == "broker":
            if args.action == "start":
                print(f"broker ready at {ensure_broker()}")
            elif args.action == "stop":
                print("broker stopped" if stop_broker() else "no embedded broker was running")
            else:
                print(broker_status())
        else:
            from .session import engine, java_version, spark

            print(f"java: {java_version()}")
            print(f"broker: {ensure_broker()}")
            session = spark()
            print(f"spark: {session.version}, engine: {engine(session)}")
            session.stop()
    except LabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
