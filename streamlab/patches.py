"""Every change streamlab makes to a third-party class: listed here, installed once by name, and removable.

PySpark has no hook for what the lab adds around a query (a workshop's Kafka options, the offline engine's routing
and its connector-shaped checks, the broker watch's one-line errors), so the lab wraps a few methods of PySpark's
reader, writer and query classes, and sets kafka-python's client defaults in a workshop. This module is the only
place that assigns to those classes (tests/unit/test_patches.py greps the package for any other). Each patch is
one row of PATCHES: the classes and attributes it replaces and the function, kept beside the behaviour it serves,
that builds the replacements from the originals. `install(name)` applies a patch once (a second call does nothing);
`uninstall()` puts every original back, for tests that need a clean PySpark. `adopt_gateway` is the one change
that is not undone: the lab's own JVM set as SparkContext's gateway.

Patches stack in the order they are installed: a wrapper wraps whatever the attribute was then (format("kafka")
can pass through the workshop's defaults, the offline routing and the sink's option recording, in that order of
installation). `uninstall(name)` removes one patch and re-installs, on the originals, those installed after it.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

_READERS = (("pyspark.sql.readwriter", "DataFrameReader"), ("pyspark.sql.streaming.readwriter", "DataStreamReader"))
_WRITERS = (("pyspark.sql.readwriter", "DataFrameWriter"), ("pyspark.sql.streaming.readwriter", "DataStreamWriter"))
_RECORDED = ("format", "option", "options")


@dataclass(frozen=True)
class Patch:
    """One named change to third-party classes: `targets` are (module, class, attributes); `build` names a
    function `(cls, originals, **given) -> {attribute: replacement}` as "module:function"."""

    name: str
    why: str
    targets: tuple[tuple[str, str, tuple[str, ...]], ...]
    build: str


PATCHES: dict[str, Patch] = {p.name: p for p in (
    Patch("workshop-kafka-defaults",
          "every format('kafka') reader and writer starts with a workshop's kafka.* options and group prefix",
          tuple((m, c, ("format",)) for m, c in _READERS + _WRITERS),
          "streamlab.lab.access:format_defaults"),
    Patch("workshop-client-defaults",
          "every kafka-python client starts with a workshop's SASL credentials",
          tuple(("kafka", c, ("DEFAULT_CONFIG",)) for c in ("KafkaAdminClient", "KafkaConsumer", "KafkaProducer")),
          "streamlab.lab.access:client_defaults"),
    Patch("offline-reads",
          "an offline Kafka read is checked at load() as the connector does; a stream gets its source id",
          tuple((m, c, _RECORDED + ("schema", "load")) for m, c in _READERS),
          "streamlab.offline.source:read_hooks"),
    Patch("offline-save-modes",
          "a batch Kafka write keeps the connector's save modes and driver-side checks",
          (("pyspark.sql.readwriter", "DataFrameWriter", ("mode",) + _RECORDED + ("save",)),),
          "streamlab.offline.sink:save_mode_hooks"),
    Patch("offline-stream-writes",
          "an Update-mode Kafka stream runs through foreachBatch; every start announces its checkpoint",
          (("pyspark.sql.streaming.readwriter", "DataStreamWriter", ("outputMode",) + _RECORDED + ("queryName",
                                                                                                   "start")),),
          "streamlab.offline.sink:stream_write_hooks"),
    Patch("offline-kafka-format",
          "format('kafka') means the offline engine, in a session without Spark's connector",
          tuple((m, c, ("format",)) for m, c in _READERS + _WRITERS),
          "streamlab.offline:kafka_format_hooks"),
    Patch("query-guard",
          "a query the broker watch stopped returns at once with the watch's line; failures get one line",
          (("pyspark.sql.streaming.query", "StreamingQuery", ("awaitTermination", "processAllAvailable", "stop")),
           ("pyspark.sql.streaming.readwriter", "DataStreamWriter", ("start",))),
          "streamlab.lab.guard:query_guard"),
)}

_MISSING = object()
# What is installed, oldest first: (name, the keywords it was built with, [(class, attribute, what was there)]).
_installed: list[tuple[str, dict, list[tuple[type, str, object]]]] = []


def _class(module: str, name: str) -> type:
    return getattr(importlib.import_module(module), name)


def install(name: str, **given) -> bool:
    """Apply the patch `name` (once: False when it was installed already); `given` goes to its builder."""
    if installed(name):
        return False
    patch = PATCHES[name]
    module, function = patch.build.split(":")
    build = getattr(importlib.import_module(module), function)
    replaced = []
    for module_name, class_name, attributes in patch.targets:
        cls = _class(module_name, class_name)
        originals = {attr: getattr(cls, attr) for attr in attributes}
        replacements = build(cls, originals, **given)
        if set(replacements) != set(attributes):
            raise RuntimeError(f"patch {name}: {patch.build} replaced {sorted(replacements)} on {class_name}, "
                               f"the table lists {sorted(attributes)}")
        for attr, new in replacements.items():
            replaced.append((cls, attr, cls.__dict__.get(attr, _MISSING)))
            setattr(cls, attr, new)
    _installed.append((name, given, replaced))
    return True


def installed(name: str | None = None) -> bool | list[str]:
    """Whether the patch `name` is installed; without a name, the installed patches' names, oldest first."""
    if name is None:
        return [entry[0] for entry in _installed]
    return any(entry[0] == name for entry in _installed)


def uninstall(*names: str) -> None:
    """Put back what the patches `names` (all, when none is given) replaced; patches installed after the first of
    them are taken off too and installed again on top of the originals, in their order."""
    unknown = [n for n in names if n not in PATCHES]
    if unknown:
        raise KeyError(f"no such patch: {', '.join(unknown)} (known: {', '.join(PATCHES)})")
    wanted = set(names) if names else set(PATCHES)
    positions = [i for i, entry in enumerate(_installed) if entry[0] in wanted]
    if not positions:
        return
    taken = _installed[positions[0]:]
    del _installed[positions[0]:]
    for _name, _given, replaced in reversed(taken):
        for cls, attr, before in reversed(replaced):
            if before is _MISSING:
                delattr(cls, attr)
            else:
                setattr(cls, attr, before)
    for name, given, _replaced in taken:
        if name not in wanted:
            install(name, **given)



def adopt_gateway(gateway) -> None:
    """Make PySpark use `gateway`, a JVM the lab launched itself (with its output sent to a log file), as the one
    its SparkContext would have launched: the two class attributes SparkContext._ensure_initialized reads. Not a
    patch to undo: the JVM is this process's for as long as it lives."""
    from pyspark import SparkContext

    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm
