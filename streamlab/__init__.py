"""streamlab: the runtime every notebook of the course imports."""
from __future__ import annotations

from .broker import broker_status, ensure_broker, stop_broker
from .errors import LabError, install_notebook_handler
from .session import engine, java_version, spark

__all__ = [
    "LabError",
    "broker_status",
    "engine",
    "ensure_broker",
    "java_version",
    "spark",
    "stop_broker",
]

install_notebook_handler()
