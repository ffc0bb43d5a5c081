"""The browser tests' JupyterLab: one per test file, serving the notebooks its NOTEBOOKS names."""
from __future__ import annotations

import pytest

from labpage import served_lab


@pytest.fixture(scope="module")
def lab(request, tmp_path_factory, bootstrap):
    """JupyterLab serving copies of the test file's NOTEBOOKS, on 127.0.0.1 with a random token: (base, token)."""
    with served_lab(tmp_path_factory.mktemp("lab"), request.module.NOTEBOOKS) as served:
        yield served
