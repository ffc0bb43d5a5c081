"""Module 9 after a kernel restart mid-demo, and its live table after many batches (issue 29, item 7), without
the cluster: a section's first cell says in one line which cell to run instead of a NameError traceback, and the
batch an executor or a leader was killed under stays in the demo's table however many batches follow."""
from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell

from streamlab.delivery.failover import FailoverDemo, shown_batches
from streamlab.errors import install_notebook_handler


@pytest.fixture
def shell():
    ip = InteractiveShell.instance()
    install_notebook_handler()
    yield ip
    InteractiveShell.clear_instance()


def test_after_a_kernel_restart_the_demo_s_next_cell_says_in_one_line_to_run_from_setup(shell, capsys):
    shell.user_ns.pop("spark", None)
    shell.user_ns.pop("demo", None)  # a fresh kernel: Setup and the demo's cell have not run
    result = shell.run_cell("from streamlab.lab.reentry import needs_setup\nneeds_setup('demo')\n"
                            "result = demo.wait()")
    out = capsys.readouterr().out
    assert "`spark`, `demo` are not defined: the kernel was restarted" in out, out
    assert "Run the cells from “Setup” down to this one again" in out and out.count("\n") == 1, out
    assert "NameError" not in out and "Traceback" not in out and "result" not in shell.user_ns


def test_with_setup_run_the_cell_runs_as_written(shell, capsys):
    shell.user_ns.update(spark=object(), demo=type("Demo", (), {"wait": lambda self: {"batches": 3}})())
    result = shell.run_cell("from streamlab.lab.reentry import needs_setup\nneeds_setup('demo')\n"
                            "result = demo.wait()")
    assert result.success and shell.user_ns["result"] == {"batches": 3}, capsys.readouterr().out


def _batch(i, attempt=0):
    return {"batch": i, "seconds": 1.0, "at": float(i), "preferred": {0: "1"},
            "tasks": [{"partition": 0, "executor": "1", "attempt": attempt, "status": "SUCCESS", "records": 10,
                       "locality": "PROCESS_LOCAL"}]}


def test_the_kill_s_batch_stays_in_the_table_after_many_more_batches():
    demo = FailoverDemo(None, "127.0.0.1:1", partitions=1, show=False)
    demo.batches = [_batch(i, attempt=1 if i == 6 else 0) for i in range(30)]
    demo.kills = {5: "executor 2 killed", 14: "broker 2 (leader of p0) killed"}
    rows = shown_batches(demo.batches, demo.kills)
    ids = [None if b is None else b["batch"] for b in rows]
    assert ids == [None, 5, 6, None, 14, None, *range(22, 30)], ids
    html = demo.html()
    assert "⚡ executor 2 killed" in html and "⚡ broker 2 (leader of p0) killed" in html
    assert html.count("<tr>") == 1 + len(rows), "a header, then one row per batch shown or gap"
    few = [None if b is None else b["batch"] for b in shown_batches(demo.batches[:4], {})]
    assert few == [0, 1, 2, 3], "a short run shows every batch"


def test_the_frozen_frame_draws_the_table_s_rows_and_the_counts():
    """What a saved notebook, the site and `make seen` show of the demo once it ended: its table as a PNG, the same
    rows as the live one (the kills' batches kept), and the sinks' counts."""
    demo = FailoverDemo(None, "127.0.0.1:1", partitions=1, show=False)
    demo.batches = [_batch(i, attempt=1 if i == 6 else 0) for i in range(30)]
    demo.kills = {5: "executor 2 killed"}
    demo.sent, demo.acked = 300, set(range(290))
    demo.result = {"sqlite": {"once": 290, "duplicates": 0, "lost": 0},
                   "transactions": {"once": 289, "duplicates": 1, "lost": 1}}
    fig = demo.figure()
    table = fig.axes[0].tables[0]
    drawn = [table[row, 0].get_text().get_text() for row in range(1, len(shown_batches(demo.batches, demo.kills)) + 1)]
    assert drawn == ["⋯", "5\n⚡ executor 2 killed", "6", "⋯", *map(str, range(22, 30))], drawn
    assert table[3, 3].get_text().get_text() == "exec 1\n10 rec, try 2", "a retried task's attempt is shown"
    title = fig.axes[0].get_title(loc="left")
    assert "acknowledged 290" in title and "transactions: 289 once, 1 duplicates, 1 lost" in title, title
    from streamlab.demo.widgets import png

    assert png(fig)[:8] == b"\x89PNG\r\n\x1a\n"
