"""What a live demo's loop and its controls share, in one object.

The loop (`loop.py`: producers, query, restarts, the polling thread) and the controls (`controls.py`: sliders,
buttons, the script's moves) both read and change the demo's knobs, its timeline and marks, its producers and query,
and the queue of knobs waiting for a restart. They used to keep all of it as attributes of the demo, each side
reading the other's; a change to shared state had to be checked in three files. `DemoState` lists that state, once,
with what each field means: the loop and the controls read and write `demo.state`, and nothing else of each other's
data. (Each side's own plumbing, such as the loop's thread and the controls' widgets, stays with it.)

The demo keeps its old names (`demo.timeline`, `demo._t0`, `demo._settings`, …) as properties onto the state
(`ALIASES`), so notebooks, module configurations and tests that read or set them work unchanged.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from streamlab.demo.settings import StreamSettings


@dataclass
class DemoState:
    """The state a demo's loop and controls share: the knobs in force, what happened when, the running clients, the
    knobs waiting for a restart, and how the demo ended."""

    # the knobs in force (validated on every change)
    stream: StreamSettings = field(default_factory=StreamSettings)
    # what the demo saw and did, in seconds since start
    history: list = field(default_factory=list)  # one plain dict per batch (the rows of `batches`)
    events: list = field(default_factory=list)  # every progress event, across restarts
    samples: list = field(default_factory=list)  # the broker-measured lag at each poll: {"t", "lag", "partitions"}
    restarts: list = field(default_factory=list)  # (seconds since start, what changed)
    marks: list = field(default_factory=list)  # bursts, script steps, a person's moves
    applied: list = field(default_factory=list)  # (seconds since start, script step) as the script applied them
    timeline: list = field(default_factory=list)  # (seconds since start, settings in force from then)
    live_from: float | None = None  # seconds from start to the first batch with data
    # the clock: monotonic and wall time at start (0: not started)
    t0: float = 0.0
    wall0: float = 0.0
    # the running clients
    query: object = None  # the query running now (a restart replaces it)
    producer: object = None  # the main topic's producer
    producers: dict = field(default_factory=dict)  # the `sources`' producers, by topic
    # moves: the controls queue them, the loop applies them
    pending_restart: list = field(default_factory=list)  # knobs moved that need a restart
    wanted: dict = field(default_factory=dict)  # restarting knobs' new values, applied by the next restart
    restarting: dict = field(default_factory=dict)  # the knobs a restart under way applies (the readout names them)
    pending_script: list = field(default_factory=list)  # the script's steps not played yet, by time
    auto: bool = False  # True while the script or a controller moves a knob, so its move is not taken for a person's
    touched: bool = False  # a person moved a knob (a script's stop_after_script then no longer ends the demo)
    person_moved: bool = False  # since the last restart, a person moved a knob (a restart for a person is prompt)
    extra_s: float = 0.0  # seconds added by "+30 s"
    # the end
    ended: bool = False
    error: str | None = None
    lost: str | None = None  # the line that says the broker stopped answering, if it did
    # the threads' plumbing
    lock: threading.RLock = field(default_factory=threading.RLock)
    wake: threading.Event = field(default_factory=threading.Event)  # the poller looks now (a move, a burst)
    done: threading.Event = field(default_factory=threading.Event)  # the demo is asked to end

    def now(self) -> float:
        """Seconds since start, to the hundredth (0 before start): every demo's `now()`."""
        return round(time.monotonic() - self.t0, 2) if self.t0 else 0.0


# the demo's name of each field (private ones are the names tests and configurations have always used)
ALIASES = {"_settings": "stream", "history": "history", "events": "events", "samples": "samples",
           "restarts": "restarts", "marks": "marks", "applied": "applied", "timeline": "timeline",
           "live_from": "live_from", "_t0": "t0", "_wall0": "wall0", "_query": "query", "_producer": "producer",
           "_producers": "producers", "_pending_restart": "pending_restart", "_wanted": "wanted",
           "_restarting": "restarting", "_pending_script": "pending_script", "_auto": "auto", "_touched": "touched",
           "_person_moved": "person_moved", "_extra_s": "extra_s", "ended": "ended", "error": "error",
           "lost": "lost", "_lock": "lock", "_wake": "wake", "_done": "done"}


def state_of(demo) -> DemoState:
    """The demo's state, made on first use (a demo made without __init__, as a test does, gets a fresh one)."""
    try:
        return demo.__dict__["state"]
    except KeyError:
        return demo.__dict__.setdefault("state", DemoState())


def alias(name: str) -> property:
    """A property of the demo that reads and writes the state's field `name`."""
    return property(lambda demo: getattr(state_of(demo), name),
                    lambda demo, value: setattr(state_of(demo), name, value),
                    doc=f"The demo's `state.{name}` (see DemoState).")


def add_aliases(cls) -> type:
    """Give `cls` (a demo class) `state` (made on first use) and every name of ALIASES as a property onto it;
    returns `cls`."""
    cls.state = property(state_of, doc="What the demo's loop and controls share (a DemoState).")
    for old, name in ALIASES.items():
        setattr(cls, old, alias(name))
    return cls
