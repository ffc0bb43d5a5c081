"""The offline engine's name, and whether a format() names it: its own name, or "kafka" once routed to it.

Why a module of its own: the package's register/install (streamlab.offline), the source's load() hook and the
sink's writer hooks all ask it; with it here they import it and not each other.
"""
from __future__ import annotations

OFFLINE_NAME = "streamlab_kafka"


def serves(name) -> bool:
    """Whether format(`name`) is the offline engine: its own name, or "kafka" once `install` routed it."""
    name = name.strip().lower() if isinstance(name, str) else ""
    if name == OFFLINE_NAME:
        return True
    from streamlab import patches

    return name == "kafka" and patches.installed("offline-kafka-format")


def kafka_format_hooks(cls, originals: dict) -> dict:
    """The patch "offline-kafka-format" (streamlab.patches): `cls.format("kafka")` names the offline engine."""
    original = originals["format"]

    def routed(self, source, _original=original):
        if isinstance(source, str) and source.strip().lower() == "kafka":
            source = OFFLINE_NAME
        return _original(self, source)

    routed.__doc__ = original.__doc__
    return {"format": routed}
