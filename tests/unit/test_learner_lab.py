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
