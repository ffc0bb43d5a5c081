"""`grader check` warns when the notebook open in JupyterLab ran cells after its file was saved."""
from __future__ import annotations

import json
import os
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from grader.notebook import unsaved_warning


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """A stand-in for a running jupyter_server that lists one session; yields a setter for its last activity."""
    state = {"active": None}
    notebook = tmp_path / "03-consumer-lag.ipynb"
    notebook.write_text("{}")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server API
            assert "token=secret" in self.path
            body = json.dumps([{"path": notebook.name, "kernel": {"last_activity": state["active"]}}]).encode()
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    info = {"url": f"http://127.0.0.1:{server.server_port}/", "token": "secret", "root_dir": str(tmp_path)}
    monkeypatch.setattr("jupyter_server.serverapp.list_running_servers", lambda *a, **k: iter([info]))
    yield notebook, state
    server.shutdown()


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def test_warns_only_when_cells_ran_after_the_save(lab):
    notebook, state = lab
    saved = time.time() - 120
    os.utime(notebook, (saved, saved))
    state["active"] = _iso(saved + 60)
    warning = unsaved_warning(notebook)
    assert warning and "save it (Ctrl-S)" in warning and notebook.name in warning
    state["active"] = _iso(saved - 30)
    assert unsaved_warning(notebook) is None, "a notebook saved after its last run needs no warning"


def test_no_server_no_warning(tmp_path, monkeypatch):
    path = tmp_path / "x.ipynb"
    path.write_text("{}")
    monkeypatch.setattr("jupyter_server.serverapp.list_running_servers", lambda *a, **k: iter([]))
    assert unsaved_warning(path) is None
