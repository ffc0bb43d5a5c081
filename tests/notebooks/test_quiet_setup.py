"""Every notebook's setup cell, run in a fresh kernel as a learner's first Shift+Enter: no red stderr box."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*/*.ipynb"))
pytestmark = [pytest.mark.broker, pytest.mark.spark]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_setup_cell_writes_nothing_to_stderr(path, tmp_path, bootstrap, monkeypatch):
    from nbclient import NotebookClient

    # ipykernel leaves a child process's output alone under pytest (it checks this variable); a learner's
    # kernel forwards it into the cell, so this kernel must too.
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    nb = nbformat.read(path, as_version=4)
    setup = next(c for c in nb.cells if c.cell_type == "code")
    assert "streamlab.setup()" in setup.source, f"{path.name}: the first code cell is not the setup cell"
    # A second cell catches what the JVM writes late: ipykernel forwards a child's output to whichever cell runs.
    after = nbformat.v4.new_code_cell("import time; time.sleep(3)")
    nb.cells = [setup, after]
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    stderr = [o.get("text", "") for c in nb.cells for o in c.outputs if o.output_type == "stream" and o.name == "stderr"]
    assert not stderr, f"{path.name}: the setup cell wrote to stderr:\n{''.join(stderr)[:1500]}"
    shown = "".join(o.get("text", "") for o in setup.outputs if o.output_type == "stream")
    assert "engine    connector" in shown, f"{path.name}: the setup cell does not report the connector:\n{shown}"
