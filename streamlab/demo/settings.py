"""The knobs a demo's query starts with, checked where they are set.

Spark reads `maxOffsetsPerTrigger`, the trigger interval, `minPartitions` (and here the demo's cost per record)
only when a query starts, so a demo is a `StreamSettings` plus a producer rate and a topic's partition count. They
live in one small dataclass so that every path that sets them (the constructor, `set()`, a slider, a script) goes
through the same checks: a bad value is refused at once, in the cell that gave it, with a one-line message that
names the knob as Spark calls it, instead of being handed to a running query that dies of it later.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, Callable

from streamlab.errors import LabError

MAX_RATE = 100_000  # records/s one background producer can be asked for
MAX_CAP = 10_000_000
MAX_TRIGGER_S = 3_600.0
MAX_COST_MS = 100.0  # per record: beyond it a batch of a few hundred records takes minutes
MAX_PARTITIONS = 64
MAX_MIN_PARTITIONS = 1_000
MAX_MIN_OFFSETS = 10_000_000
MAX_DELAY_S = 3_600.0


class KnobError(LabError, ValueError):
    """A value a knob cannot take; its message names the knob and what it accepts (shown as one line)."""


def checked_number(name: str, value, *, whole: bool, lo: float, hi: float, what: str):
    """`value` as an int (whole) or float within lo..hi, or a KnobError naming `name`."""
    if isinstance(value, bool) or value is None:
        raise KnobError(f"{name} must be {what}, got {value!r}")
    if isinstance(value, str):
        try:
            value = float(value.strip().replace("_", "").replace(",", ""))
        except ValueError:
            raise KnobError(f"{name} must be {what}, got {value!r}") from None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise KnobError(f"{name} must be {what}, got {value!r}") from None
    if math.isnan(number) or (whole and number != int(number)) or not lo <= number <= hi:
        raise KnobError(f"{name} must be {what}, got {value!r}")
    return int(number) if whole else number


def check_rate(value, name: str = "producer rate") -> int:
    """A producer rate in records/s (0 pauses the producer)."""
    return checked_number(name, value, whole=True, lo=0, hi=MAX_RATE,
                   what=f"a whole number of records/s from 0 to {MAX_RATE:,}")


def check_cap(value) -> int | None:
    """maxOffsetsPerTrigger: a whole number ≥ 1, or None / 0 for no cap."""
    if value is None or (not isinstance(value, bool) and isinstance(value, (int, float)) and value == 0):
        return None
    return checked_number("maxOffsetsPerTrigger", value, whole=True, lo=1, hi=MAX_CAP,
                   what=f"a whole number of records from 1 to {MAX_CAP:,} (or 0 / None: no cap)")


def check_trigger(value) -> float:
    """The processingTime trigger interval in seconds (0: the next batch as soon as the last one ends)."""
    return checked_number("trigger interval (processingTime, seconds)", value, whole=False, lo=0, hi=MAX_TRIGGER_S,
                   what=f"a number of seconds from 0 to {MAX_TRIGGER_S:g} (0: as fast as possible)")


def check_cost(value) -> float:
    """The demo's simulated work per record, in milliseconds."""
    return checked_number("cost per record (ms)", value, whole=False, lo=0, hi=MAX_COST_MS,
                   what=f"a number of milliseconds from 0 to {MAX_COST_MS:g}")


def _unset_or_count(name: str, value, hi: int) -> int:
    """A Spark option that is a whole number ≥ 1 when set: 0 or None leaves it unset."""
    if value is None:
        return 0
    return checked_number(name, value, whole=True, lo=0, hi=hi, what=f"a whole number from 1 to {hi:,} (or 0: unset)")


def check_min_partitions(value) -> int:
    """minPartitions: a whole number ≥ 1, or 0 / None: unset."""
    return _unset_or_count("minPartitions", value, MAX_MIN_PARTITIONS)


def check_min_offsets(value) -> int:
    """minOffsetsPerTrigger: a whole number ≥ 1, or 0 / None: unset (a trigger never waits)."""
    return _unset_or_count("minOffsetsPerTrigger", value, MAX_MIN_OFFSETS)


def check_max_delay(value) -> float:
    """maxTriggerDelay in seconds: how long a floor may hold batches back (0 / None: Spark's default, 15 minutes)."""
    if value is None:
        return 0.0
    return checked_number("maxTriggerDelay (seconds)", value, whole=False, lo=0, hi=MAX_DELAY_S,
                   what=f"a number of seconds from 0 to {MAX_DELAY_S:g} (0: Spark's default, 15 min)")


def check_partitions(value) -> int:
    """A topic's partition count (Kafka can add partitions, never remove them)."""
    return checked_number("topic partitions", value, whole=True, lo=1, hi=MAX_PARTITIONS,
                   what=f"a whole number from 1 to {MAX_PARTITIONS}")


def check_positive(name: str, value, whole: bool = False, hi: float = 86_400):
    """Any other count or duration a demo takes (burst size, duration): a number from 0 to `hi`."""
    return checked_number(name, value, whole=whole, lo=0, hi=hi, what=f"a {'whole ' if whole else ''}number from 0 to {hi:,}")


def check_burst(value) -> int:
    """A burst's size, wherever one is given (the option, a script step, burst()): a whole number up to a million."""
    return check_positive("burst size", value, whole=True, hi=1_000_000)


@dataclass
class StreamSettings:
    """The knobs a demo's query starts with (plus the producer's rate and the topic's partitions), validated.

    `cap` is maxOffsetsPerTrigger (None: no cap), `trigger_seconds` the processingTime interval (0: as fast as
    possible), `cost_ms` the simulated work per record, `min_partitions` minPartitions (0: unset)."""

    rate: int = 200
    cap: int | None = None
    trigger_seconds: float = 1.0
    cost_ms: float = 0.0
    min_partitions: int = 0
    partitions: int | None = None
    min_offsets: int = 0
    max_delay_seconds: float = 0.0

    def __post_init__(self):
        self.rate = check_rate(self.rate)
        self.cap = check_cap(self.cap)
        self.trigger_seconds = check_trigger(self.trigger_seconds)
        self.cost_ms = check_cost(self.cost_ms)
        self.min_partitions = check_min_partitions(self.min_partitions)
        self.min_offsets = check_min_offsets(self.min_offsets)
        self.max_delay_seconds = check_max_delay(self.max_delay_seconds)
        check_floor_under_cap(self.min_offsets, self.cap)
        if self.partitions is not None:
            self.partitions = check_partitions(self.partitions)

    # a dict's interface, as the demo's `settings` always was one
    def __getitem__(self, key: str):
        return getattr(self, key)

    def __setitem__(self, key: str, value) -> None:
        setattr(self, key, CHECKS[key](value) if key in CHECKS and not (key == "partitions" and value is None)
                else value)

    def get(self, key: str, default=None):
        return getattr(self, key, default)

    def as_dict(self) -> dict:
        """The settings as a plain dict (what `LiveDemo.settings` returns)."""
        return asdict(self)

    def text(self) -> str:
        """The knobs a query starts with, as Spark names them, on one line."""
        return settings_text(self.as_dict())


CHECKS: dict[str, Callable[[Any], Any]] = {
    "rate": check_rate, "cap": check_cap, "trigger_seconds": check_trigger, "cost_ms": check_cost,
    "min_partitions": check_min_partitions, "partitions": check_partitions, "min_offsets": check_min_offsets,
    "max_delay_seconds": check_max_delay}
KEYS = tuple(f.name for f in fields(StreamSettings))

# a knob's name in set() and the script → (its key in StreamSettings, its check)
KNOB_KEYS = {"rate": "rate", "cap": "cap", "trigger": "trigger_seconds", "cost": "cost_ms",
             "min_partitions": "min_partitions", "partitions": "partitions", "min_offsets": "min_offsets",
             "max_delay": "max_delay_seconds"}


def check_floor_under_cap(floor: int, cap: int | None) -> None:
    """Spark refuses minOffsetsPerTrigger above maxOffsetsPerTrigger at load(): refused here first, naming both."""
    if floor and cap and floor > cap:
        raise KnobError(f"minOffsetsPerTrigger {floor:,} is above maxOffsetsPerTrigger {cap:,}: Spark refuses that "
                        "at load(); lower the floor or raise the cap")


def check_knob(knob: str, value):
    """The value `knob` (a name of set(): rate, cap, trigger, cost, min_partitions, partitions) would take."""
    return CHECKS[KNOB_KEYS[knob]](value)


def settings_text(s: dict) -> str:
    """maxOffsetsPerTrigger, the trigger, cost and minPartitions in force, on one line."""
    cap = "no cap" if not s.get("cap") else f"maxOffsetsPerTrigger {s['cap']:,}"
    trigger = "trigger: as fast as possible" if not s.get("trigger_seconds") else f"trigger {s['trigger_seconds']:g} s"
    parts = [cap, trigger]
    if s.get("cost_ms"):
        parts.append(f"cost {s['cost_ms'] * 1000:g} µs/record")
    if s.get("min_partitions"):
        parts.append(f"minPartitions {s['min_partitions']}")
    if s.get("min_offsets"):
        delay = f"{s['max_delay_seconds']:g} s" if s.get("max_delay_seconds") else "15 min (default)"
        parts.append(f"minOffsetsPerTrigger {s['min_offsets']:,}, maxTriggerDelay {delay}")
    return " · ".join(parts)


def knob_text(key: str, value) -> str:
    """One setting, as a restart marker names it."""
    return {"cap": f"cap {value:,}" if value else "no cap",
            "trigger_seconds": f"trigger {value:g} s" if value else "trigger as fast as possible",
            "cost_ms": f"cost {value * 1000:g} µs", "min_partitions": f"minPartitions {value or 'unset'}",
            "min_offsets": f"minOffsetsPerTrigger {value or 'unset'}",
            "max_delay_seconds": f"maxTriggerDelay {value:g} s" if value else "maxTriggerDelay 15 min"}.get(
        key, f"{key} {value}")
