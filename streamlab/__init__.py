"""streamlab: the runtime every notebook of the course imports."""
from __future__ import annotations

from .broker import broker_status, ensure_broker, stop_broker
from .errors import LabError, install_notebook_handler
from .lab import cleanup, new_checkpoint, new_topic, setup
from .session import engine, java_version, spark
from .variants import new_variant, variant

__all__ = [
    "LabError",
    "broker_status",
    "cleanup",
    "engine",
    "ensure_broker",
    "java_version",
    "new_checkpoint",
    "new_topic",
    "new_variant",
    "setup",
    "spark",
    "stop_broker",
    "variant",
]

install_notebook_handler()
