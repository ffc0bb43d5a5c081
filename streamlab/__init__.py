"""streamlab: the runtime every notebook of the course imports."""
from __future__ import annotations

from streamlab.lab.broker import broker_status, ensure_broker, stop_broker
from streamlab.errors import LabError, install_notebook_handler
from streamlab.lab.lifecycle import cleanup, new_checkpoint, new_topic, setup
from streamlab.lab.session import engine, java_version, spark
from streamlab.course.variants import new_variant, variant

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
