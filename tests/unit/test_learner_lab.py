"""The learner's JupyterLab (`make lab`): nbgrader's instructor panels are switched off, the rest stays on."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from streamlab.__main__ import _learner_jupyter_config


def _listing(what: str, config: Path) -> str:
    jupyter = Path(sys.executable).parent / "jupyter"
    done = subprocess.run([str(jupyter), *what.split(), "list"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "JUPYTER_CONFIG_DIR": str(config)})
    return re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)


def test_nbgrader_panels_are_off_in_the_learner_lab():
    config = _learner_jupyter_config()
    server = _listing("server extension", config)
    for name in ("formgrader", "assignment_list", "course_list", "validate_assignment"):
        assert re.search(rf"nbgrader\.server_extensions\.{name} disabled", server), server
    assert re.search(r"jupyterlab enabled", server) and re.search(r"jupyter_server_terminals enabled", server)
    lab = _listing("labextension", config)
    assert re.search(r"@jupyter/nbgrader v\S+ disabled", lab), lab
    assert re.search(r"@jupyter-widgets/jupyterlab-manager v\S+ enabled", lab), "widgets must stay on"


def test_each_make_lab_starts_from_empty_workspaces_so_no_old_tab_starts_a_kernel(tmp_path, monkeypatch):
    """JupyterLab reopens the last session's tabs, each starting a kernel; `make lab` empties its workspaces first
    (tried in Chromium: a second `make lab` opened START-HERE alone, one session, where the first had two)."""
    from streamlab.__main__ import _fresh_workspaces

    monkeypatch.setenv("STREAMLAB_HOME", str(tmp_path))
    first = _fresh_workspaces()
    (first / "default-37a8.jupyterlab-workspace").write_text('{"data": {"notebook:01.ipynb": {}}}')
    again = _fresh_workspaces()
    assert again == first and again.is_dir() and list(again.iterdir()) == []
