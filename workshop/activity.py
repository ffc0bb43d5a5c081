"""A Jupyter server extension: a kernel that is busy counts as the learner's activity, for the hub's idle culler.

The culler (jupyterhub-idle-culler) ends a server whose last activity, as the server reports it to the hub, is
older than its timeout. Jupyter Server counts a kernel's messages as activity, but a kernel that sits in one long
cell — a live demo's `wait()`, `awaitTermination()` on a query the learner is watching — sends none, so the
culler would end the server in the middle of the lesson. Every 30 s this extension stamps
`streamlab_busy_kernel_last_activity` (Jupyter Server's hook: every `*_last_activity` setting counts, see
`ServerApp.last_activity`) while any kernel's execution state is "busy"; the server reports it to the hub every
$JUPYTERHUB_ACTIVITY_INTERVAL seconds. So a server is culled only after its kernels have all been idle, and
nobody has used it, for the culler's whole timeout.
"""
from __future__ import annotations

from datetime import datetime, timezone

INTERVAL_MS = 30_000
SETTING = "streamlab_busy_kernel_last_activity"


def _jupyter_server_extension_points():
    return [{"module": "workshop.activity"}]


def busy(kernel_manager) -> bool:
    """Whether any of the server's kernels is running a cell now."""
    return any(getattr(kernel_manager.get_kernel(k), "execution_state", "") == "busy"
               for k in kernel_manager.list_kernel_ids())


def _load_jupyter_server_extension(serverapp) -> None:
    from tornado.ioloop import PeriodicCallback

    settings = serverapp.web_app.settings

    def stamp():
        if busy(serverapp.kernel_manager):
            settings[SETTING] = datetime.now(timezone.utc)

    PeriodicCallback(stamp, INTERVAL_MS).start()
    serverapp.log.info("streamlab: busy kernels count as activity for the hub's idle culler")
