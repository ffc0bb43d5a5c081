"""Going back after cleanup(): a cell that uses what cleanup() deleted says so in one line, and runs nothing.

Every notebook ends with `streamlab.cleanup()`, which deletes its topics and checkpoint folders. Learners then go
back: they re-run a section, a demo, a check. Without help, that cell meets a deleted topic in the middle of a
Spark job (`UnknownTopicOrPartitionException`, a producer's "Unrecognized partition", a `KeyError` on a topic
name) or writes into a deleted folder, which Spark quietly creates again and nobody deletes. So, once cleanup()
has deleted something, each cell is looked at before it runs: when it reads a name whose value is a deleted topic
or checkpoint (directly, inside a list or dict, as an attribute of a lab object, or through a function of the
notebook that reads such a global), the cell is replaced by one line naming the name and the fix — run the cells
from the one that makes it. Cells that make their names again run as written.

A kernel restart is the other way back: the notebook's names are gone, and a later cell would raise a
`NameError` traceback. `needs_setup(*names)`, the first line of a section's first cell, says instead in one line
which names are missing and to run the cells from Setup down to this one again.

Nothing here runs in the grader (it never calls cleanup() before the end, and runs every cell in order) or outside
IPython.
"""
from __future__ import annotations

import ast
import os
import shutil
import types

_gone_topics: set[str] = set()
_gone_folders: list[str] = []
_installed: list[object] = []


def forget(topics, folders) -> None:
    """Remember what cleanup() deleted, and guard the notebook's next cells against it."""
    _gone_topics.update(topics)
    _gone_folders.extend(str(f) for f in folders if str(f) not in _gone_folders)
    if _gone_topics or _gone_folders:
        _install()


def needs_setup(*names: str, section: str = "Setup") -> None:
    """Stop a cell, with one line, when the notebook's `names` (and `spark`) are not defined in this kernel: it was
    restarted, or the cells above have not run. Nothing to do when they are (Run All, the grader)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None:
        return None
    missing = [name for name in dict.fromkeys(("spark", *names)) if name not in shell.user_ns]
    if not missing:
        return None
    from streamlab.errors import LabError, install_notebook_handler

    install_notebook_handler()  # a fresh kernel: the line is shown without a traceback
    listed = ", ".join(f"`{name}`" for name in missing)
    raise LabError(f"{listed} {'is' if len(missing) == 1 else 'are'} not defined: the kernel was restarted, or the "
                   f"cells above have not run. Run the cells from “{section}” down to this one again "
                   "(Run ▸ Run All Above Selected Cell, then this one).")


def remove_recreated() -> int:
    """Delete the deleted folders that came back (Spark makes a checkpoint's parents); return how many."""
    back = [f for f in _gone_folders if os.path.isdir(f)]
    for folder in back:
        shutil.rmtree(folder, ignore_errors=True)
    return len(back)


def _install() -> None:
    if _installed:
        return
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        guard = _Guard(shell)
        shell.ast_transformers.append(guard)
        _installed.append(guard)


class _Guard:
    """An IPython AST transformer: a cell that reads a deleted topic or folder becomes `raise LabError(line)`."""

    def __init__(self, shell) -> None:
        self.shell = shell

    def visit(self, module: ast.Module) -> ast.Module:
        line = reason(module, self.shell.user_ns)
        if line is None:
            return module
        return ast.parse(f"raise __import__('streamlab.errors', fromlist=['LabError']).LabError({line!r})")


def reason(module: ast.Module, namespace: dict) -> str | None:
    """The one line that stops a cell reading something cleanup() deleted, or None when it may run."""
    if not (_gone_topics or _gone_folders):
        return None
    loads, stores = _names(module)
    for name in loads:
        if name in stores or name not in namespace:
            continue
        line = stale(name, namespace[name], stores)
        if line:
            return line
    return None


def stale(name: str, value, rebound=frozenset()) -> str | None:
    """The one line for a value (named `name`) that leads to a topic or folder cleanup() deleted, else None."""
    found = _uses(value, rebound) if (_gone_topics or _gone_folders) else None
    if found is None:
        return None
    through, what, held = found
    via = f"`{name}` uses `{through}`, which is" if through else f"`{name}` holds" if held else f"`{name}` is"
    return (f"{via} {what}, deleted by the last cleanup(): run the cells from the one that makes "
            f"`{through or name}` down to this one again")


def _names(module: ast.Module) -> tuple[list[str], set[str]]:
    """The names a cell reads when it runs (in order; not those inside function bodies), and those it binds."""
    loads: list[str] = []
    stores: set[str] = set()

    def walk(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stores.add(node.name)
            for part in node.decorator_list + getattr(getattr(node, "args", None), "defaults", []):
                walk(part)
            return
        if isinstance(node, ast.Lambda):
            for part in node.args.defaults:
                walk(part)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            stores.update((a.asname or a.name).split(".")[0] for a in node.names)
            return
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                if node.id not in loads:
                    loads.append(node.id)
            else:
                stores.add(node.id)
            return
        for child in ast.iter_child_nodes(node):
            walk(child)

    walk(module)
    return loads, stores


def _deleted(value) -> str | None:
    """'the topic T' or 'the checkpoint folder F' when `value` names one that cleanup() deleted."""
    if isinstance(value, os.PathLike) or (isinstance(value, str) and len(value) < 4096):
        text = os.fspath(value) if isinstance(value, os.PathLike) else value
        if text in _gone_topics:
            return f"the topic {text}"
        for folder in _gone_folders:
            if text == folder or text.startswith(folder + os.sep):
                return f"the checkpoint folder {os.path.basename(folder)}"
    return None


def _uses(value, rebound=frozenset()) -> tuple[str, str, bool] | None:
    """(the global it goes through or '', what was deleted, whether it is held inside) when a value leads to a
    deleted topic or folder (`rebound`: the globals the cell binds again before a function of it reads them)."""
    what = _deleted(value)
    if what:
        return "", what, False
    if isinstance(value, dict) and len(value) < 1000:
        what = next(filter(None, map(_deleted, [*value.keys(), *value.values()])), None)
    elif isinstance(value, (list, tuple, set, frozenset)) and len(value) < 1000:
        what = next(filter(None, map(_deleted, value)), None)
    elif isinstance(value, types.FunctionType) and value.__module__ == "__main__":
        return _read_by(value, rebound, {id(value)})
    elif type(value).__module__.startswith(("streamlab", "__main__")) and hasattr(value, "__dict__"):
        what = _shallow(value)
    return ("", what, True) if what else None


def _read_by(fn: types.FunctionType, rebound, seen: set[int]) -> tuple[str, str, bool] | None:
    """(global, what, False) for a deleted topic or folder that a notebook function reads, itself or through the
    notebook's other functions it calls."""
    for name in _globals_read(fn.__code__):
        if name in rebound:
            continue
        inner = fn.__globals__.get(name)
        if isinstance(inner, types.FunctionType):
            if inner.__module__ == "__main__" and id(inner) not in seen and len(seen) < 50:
                seen.add(id(inner))
                found = _read_by(inner, rebound, seen)
                if found:
                    return found
            continue
        what = _deleted(inner) or _shallow(inner)
        if what:
            return name, what, False
    return None


def _shallow(value) -> str | None:
    """A deleted topic or folder among a lab object's attributes, or a container's items (one level)."""
    if isinstance(value, dict) and len(value) < 1000:
        return next(filter(None, map(_deleted, [*value.keys(), *value.values()])), None)
    if isinstance(value, (list, tuple)) and len(value) < 1000:
        return next(filter(None, map(_deleted, value)), None)
    if type(value).__module__.startswith(("streamlab", "__main__")) and hasattr(value, "__dict__"):
        return next(filter(None, map(_deleted, vars(value).values())), None)
    return None


def _globals_read(code: types.CodeType) -> list[str]:
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += _globals_read(const)
    return names
