"""One exception type for problems a learner can fix, shown as one line instead of a traceback."""
from __future__ import annotations


class LabError(RuntimeError):
    """A problem with the lab's environment, whose message says how to fix it."""


def _show_short(shell, etype, value, tb, tb_offset=None):
    print(f"⚠️  {value}")
    return None


def install_notebook_handler() -> None:
    """In IPython, print LabError as its one-line message rather than a stack trace."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        shell.set_custom_exc((LabError,), _show_short)
