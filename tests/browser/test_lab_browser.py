"""JupyterLab in headless Chromium: the token, and the checks.

"Check my work" and the README's terminal command grade a notebook. The two checks grade the small fixture
assignment (tests/fixtures/solutions/fx-basics, seconds to grade): what they prove is the plumbing (the button saves
the open notebook, the terminal runs the course's Python from the course folder); every module's own checks are
graded once, in tests/notebooks/test_modules.py. Served and driven as `labpage` says. The controls of every live
demo, moved while the kernel is busy under Run All (and for modules 3 and 4 also while it is idle between cells),
are test_learner_loop.py's.
"""
from __future__ import annotations

import re

import pytest
from labpage import FIXTURES, RESULTS, ROOT, notebook_page, status_of

# A check grades the fixture in a kernel of its own: seconds alone, minutes when two other lanes load the machine.
pytestmark = pytest.mark.timeout(900)

CHECKED = "fx-basics"  # the in-notebook check and the terminal command are tried on the grader's fixture
NOTEBOOKS = [CHECKED]


def test_lab_requires_its_token(lab):
    """Without the token the server refuses API calls."""
    base, token = lab
    assert status_of(f"{base}/api/contents") == 403, "JupyterLab answered without its token"
    assert status_of(f"{base}/api/contents?token={token}") == 200


def test_check_button_saves_and_grades_the_open_notebook(lab):
    """Answer an exercise without saving, click "Check my work": the notebook is saved and the score counts it."""
    base, token = lab
    with notebook_page(base, token, CHECKED, "check-failure.png") as page:
        # JupyterLab restores the earlier test's tabs too: find this notebook's panel by its path.
        find = f"""() => Array.from(window.jupyterapp.shell.widgets('main')).find(
            w => w.context && w.context.path.endsWith('{CHECKED}.ipynb'))"""
        page.wait_for_function(f"() => {{ const p = ({find})(); return p && p.content.widgets.length > 10; }}",
                               timeout=60_000)
        # The answer goes into the open notebook only (no save); then only the button's cell runs.
        page.evaluate(f"""async () => {{
            const app = window.jupyterapp, panel = ({find})(), nb = panel.content;
            await panel.sessionContext.ready;
            const answer = nb.widgets.find(c => /^q2 = None/.test(c.model.sharedModel.getSource()));
            answer.model.sharedModel.setSource('q2 = 250');
            app.shell.activateById(panel.id);
            // the cell that shows the button
            nb.activeCellIndex = nb.widgets.findIndex(c => /check_button\\(/.test(c.model.sharedModel.getSource()));
            await app.commands.execute('notebook:run-cell');
        }}""")
        page.get_by_role("button", name="Check my work").click(timeout=60_000)
        page.wait_for_function("() => /score: \\S+ \\/ \\S+/.test(document.body.innerText)", timeout=300_000)
        page.screenshot(path=str(RESULTS / "check-button.png"))
        text = page.evaluate("() => document.body.innerText")
    assert f"Saved {CHECKED}.ipynb" in text, "the check did not save the open notebook"
    assert "score: 1 / 6" in text, f"the unsaved answer was not graded: {text[-1500:]}"
    assert "q2_cap_split" in text and "✓ passed" in text


def test_readme_check_command_in_jupyterlab_terminal(lab):
    """The README's command for JupyterLab's terminal (which opens in the course folder) grades a notebook there."""
    base, token = lab
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    told = ".venv/bin/python -m grader check notebooks/00-setup/00-setup.ipynb"
    assert told in readme, "the README no longer gives the terminal command this test runs"
    # the README's command, on the fixture: `--source` names the fixture's course (its hidden tests)
    command = told.replace("grader check", f"grader --source {FIXTURES} check").replace("00-setup", CHECKED)
    with notebook_page(base, token, CHECKED, "terminal-failure.png") as page:
        # Activated explicitly: the notebook opened by the URL can finish loading after the terminal and take focus.
        page.evaluate("""async () => { const app = window.jupyterapp;
            const term = await app.commands.execute('terminal:create-new'); app.shell.activateById(term.id);
            window.__courseTerminal = term; }""")
        # the notebook can still take focus after this: the terminal is activated again until its xterm is there
        page.wait_for_function("""() => { const term = window.__courseTerminal;
            window.jupyterapp.shell.activateById(term.id);
            return !!term.node.querySelector('.xterm-helper-textarea'); }""", timeout=60_000)
        # Typed into the terminal's own connection, as its keyboard does: focus can move to the notebook when it
        # finishes loading late (on a loaded machine the keys then went into notebook cells).
        page.wait_for_function("() => window.__courseTerminal.content.session.connectionStatus === 'connected'",
                               timeout=60_000)
        page.evaluate("(line) => window.__courseTerminal.content.session.send({type: 'stdin', content: [line]})",
                      command + "\r")
        # xterm draws on a canvas: read its buffer (the terminal widget's xterm instance) instead of the DOM.
        screen = """() => {
            for (const w of window.jupyterapp.shell.widgets('main')) {
                const term = Object.values(w.content || {}).find(v => v && v.buffer && v.buffer.active);
                if (!term) continue;
                const b = term.buffer.active, lines = [];
                for (let i = 0; i < b.length; i++) lines.push(b.getLine(i).translateToString(true));
                return lines.join('\\n');
            }
            return ''; }"""
        page.wait_for_function(f"() => /score: \\S+ \\/ \\S+|error:/.test(({screen})())", timeout=240_000)
        page.screenshot(path=str(RESULTS / "terminal-check.png"))
        text = page.evaluate(screen)
    assert "No module named" not in text and "error:" not in text, text[-1500:]
    # 0, or 1 where the button's test saved its answer first: the table of the notebook as saved
    assert "ex1_total_lag" in text and re.search(r"score: [01] / 6", text), text[-1500:]
