"""nbgrader's Execute preprocessor, remembering which cell runs (to name it when the kernel dies)."""
from __future__ import annotations

from nbgrader.preprocessors import Execute


class TrackingExecute(Execute):
    """Execute that records the index and source of the cell it is running in `TrackingExecute.current`."""

    current: tuple[int, object] | None = None

    def preprocess_cell(self, cell, resources, index):
        """Record the cell, then run it as nbgrader would."""
        TrackingExecute.current = (index, cell)
        return super().preprocess_cell(cell, resources, index)
