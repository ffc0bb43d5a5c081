"""Going back after cleanup(): a cell reading a deleted topic or folder says one line and runs nothing (issue 16.2).

These run cells in a real IPython shell (no broker, no Spark): what is checked is which cells are stopped, what the
line says, and that cells which make their names again run as written."""
from __future__ import annotations

import os

import pytest
from IPython.core.interactiveshell import InteractiveShell

from streamlab.errors import install_notebook_handler
from streamlab.lab import reentry


@pytest.fixture
def shell(tmp_path, monkeypatch):
    """An IPython shell after a cleanup() that deleted the topic 'orders-x1' and the folder tmp/ck."""
    monkeypatch.setattr(reentry, "_gone_topics", set())
    monkeypatch.setattr(reentry, "_gone_folders", [])
    monkeypatch.setattr(reentry, "_installed", [])
    ip = InteractiveShell.instance()
    before = list(ip.ast_transformers)
    install_notebook_handler()
    folder = tmp_path / "ck"
    ip.user_ns.update(orders="orders-x1", other="payments-x2", work=folder, first={"checkpoint": str(folder / "a")})
    ip.run_cell("def checkpoint(name):\n    return str(work / name)\n"
                "def run(topic=None):\n    return topic or orders\n")
    reentry.forget(["orders-x1"], [str(folder)])
    yield ip, folder
    ip.ast_transformers[:] = before
    InteractiveShell.clear_instance()


def _run(ip, source, capsys):
    result = ip.run_cell(source)
    return result, capsys.readouterr().out


@pytest.mark.parametrize("source, name", [
    ("print(orders)", "`orders` is the topic orders-x1"),
    ("x = checkpoint('first-0')", "`checkpoint` uses `work`, which is the checkpoint folder ck"),
    ("run()", "`run` uses `orders`, which is the topic orders-x1"),
    ("events = first['checkpoint']", "`first` holds the checkpoint folder ck"),
    ("[orders for _ in range(2)]", "`orders` is the topic orders-x1"),
])
def test_a_cell_reading_what_cleanup_deleted_says_one_line_and_runs_nothing(shell, capsys, source, name):
    ip, _ = shell
    ip.user_ns.pop("x", None)
    result, out = _run(ip, source, capsys)
    assert name in out and "deleted by the last cleanup(): run the cells from the one that makes" in out, out
    assert "down to this one again" in out and out.count("\n") == 1, out  # one line, no traceback
    assert "x" not in ip.user_ns and "events" not in ip.user_ns, "the stopped cell ran"


def test_cells_that_make_their_names_again_run_as_written(shell, capsys):
    ip, folder = shell
    result, out = _run(ip, "orders = 'orders-x3'\nprint('made', orders)", capsys)
    assert result.success and "made orders-x3" in out
    result, out = _run(ip, "def later():\n    return orders\nprint(other)", capsys)  # a definition runs nothing
    assert result.success and "payments-x2" in out
    result, out = _run(ip, "from pathlib import Path; work = Path('elsewhere')\nprint(checkpoint('b'))", capsys)
    assert result.success and "elsewhere/b" in out


def test_a_folder_spark_made_again_is_deleted_by_the_next_cleanup(shell):
    _, folder = shell
    (folder / "first-0" / "offsets").mkdir(parents=True)  # what a query writing under a deleted folder does
    assert reentry.remove_recreated() == 1 and not folder.exists()


def test_nothing_is_guarded_before_a_cleanup(monkeypatch):
    monkeypatch.setattr(reentry, "_gone_topics", set())
    monkeypatch.setattr(reentry, "_gone_folders", [])
    import ast

    assert reentry.reason(ast.parse("print(orders)"), {"orders": "orders-x1"}) is None
    assert os.sep  # the module imports cleanly without IPython state


def test_a_choice_table_button_after_cleanup_names_the_cells_to_run(shell):
    """02's buttons run a trial on the deleted checkpoint: the widget says which cells make it again."""
    ip, _ = shell
    from streamlab.observe.replay import ChoiceTable

    ran = []
    ip.run_cell("def restart(choice):\n    return {'choice': choice, 'folder': checkpoint('x')}\n")
    table = ChoiceTable("restart with", ["earliest", "latest"], ip.user_ns["restart"])
    table.trial = ip.user_ns["restart"]
    table._picked({"new": "earliest"})
    assert "cannot run" in table.status.value and "`restart` uses `work`" in table.status.value
    assert "deleted by the last cleanup()" in table.status.value and not table.rows, table.status.value
    assert not ran
