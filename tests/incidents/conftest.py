"""The incident round's and the on-call night's tests keep the learner's history (interview.json) in a temporary
folder: a test's answers must not land in the history of whoever runs the suite."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _own_history(tmp_path, monkeypatch):
    from streamlab.course import mock

    path = tmp_path / "interview.json"
    monkeypatch.setattr(mock, "history_file", lambda: path)
    return path
