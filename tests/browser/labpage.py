"""What the browser tests share: JupyterLab served as `make lab` serves it, and Chromium driving its pages.

Widgets that work headless can still fail in a real browser, and live updates from a running query are fragile,
so the browser tests drive the real thing: JupyterLab on 127.0.0.1 with a token, Debian's Chromium through
Playwright, the released notebooks. Screenshots land in test-results/browser/.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest
from support import free_port

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "test-results" / "browser"
FIXTURES = ROOT / "tests" / "fixtures" / "solutions"  # small assignments the grader tests use
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

if CHROMIUM is None:
    if os.environ.get("CI") == "true":
        pytest.fail("Chromium is missing in CI: `make test` installs Debian's chromium package", pytrace=False)
    pytest.skip("Chromium is not installed (apt-get install chromium); the browser test needs it",
                allow_module_level=True)


def status_of(url: str) -> int:
    """The HTTP status of a GET on `url` (0: nothing answers yet)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code
    except (urllib.error.URLError, OSError):
        return 0  # not listening yet


@contextmanager
def served_lab(work: Path, modules):
    """JupyterLab serving copies of `modules` under `work`, on 127.0.0.1 with a random token: (base URL, token)."""
    # Laid out as the course is: `make lab` serves notebooks/ and runs in the course folder, where its terminals open.
    from grader.course import released

    for module in modules:
        # a test fixture (tests/fixtures/solutions/fx-*) is served as its freshly generated student version
        shutil.copytree(released(module, FIXTURES) if module.startswith("fx-") else ROOT / "notebooks" / module,
                        work / "notebooks" / module)
    (work / ".venv").symlink_to(ROOT / ".venv")  # the README's command runs .venv/bin/python from the course folder
    port, token = free_port(), secrets.token_hex(16)
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--ServerApp.port={port}",
           "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work / 'notebooks'}",
           "--LabApp.expose_app_in_browser=True"] + (["--allow-root"] if os.geteuid() == 0 else [])
    log = open(work / "jupyter.log", "wb")
    from streamlab.__main__ import _learner_jupyter_config
    # The learner's lab as `make lab` configures it (nbgrader's instructor panels off).
    # Its own workspace folder: the learner config keeps workspaces, and an earlier run's tabs must not reopen.
    venv_bin = str(Path(sys.executable).parent)
    # Its kernels' temporary folders (checkpoints, Spark's) in its own: a kernel ended by end_sessions() while busy
    # may not run its exit handler, and its folders in the machine's /tmp were taken, by lane 1's check that the
    # gradings leave none (test_modules), for the gradings' (a rehearsal of 9427d5b).
    (work / "tmp").mkdir(exist_ok=True)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(_learner_jupyter_config()),
               JUPYTERLAB_WORKSPACES_DIR=str(work / "workspaces"), TMPDIR=str(work / "tmp"),
               # as `make lab` gives its terminals the course's environment
               VIRTUAL_ENV=str(Path(venv_bin).parent), PATH=venv_bin + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=work)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180  # a shared 2-core machine under load can take a minute and more
    while status_of(f"{base}/api/status?token={token}") != 200:
        assert proc.poll() is None, f"JupyterLab exited: {(work / 'jupyter.log').read_text()[-2000:]}"
        assert time.monotonic() < deadline, "JupyterLab did not answer within 180 s"
        time.sleep(0.5)
    try:
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def notebook_page(base: str, token: str, module: str, failure_png: str, workspace: str | None = None):
    """Chromium on `module`'s notebook in the lab, idle; a full-page screenshot when the block fails. With a
    `workspace`, in a fresh one of that name: only this notebook open, no tab of an earlier test restored."""
    from playwright.sync_api import sync_playwright

    RESULTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            where = f"lab/workspaces/{workspace}" if workspace else "lab"
            page.goto(f"{base}/{where}/tree/{module}/{module}.ipynb?token={token}" + ("&reset" if workspace else ""))
            page.wait_for_function("window.jupyterapp && document.querySelector('.jp-Notebook')", timeout=60_000)
            # The open notebook's indicator: a tab JupyterLab restored from an earlier test has one too, hidden,
            # and waiting on the first match waited on that one (rehearsal: 03's tab before fx-basics).
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle'] >> visible=true",
                                   timeout=60_000)
            yield page
        except Exception:
            page.screenshot(path=str(RESULTS / failure_png), full_page=True)
            raise
        finally:
            browser.close()


def run_cells_through(page, last: int) -> None:
    """Run the open notebook's cells 0..last one by one, each awaited ("run all above" can fire before the kernel is
    ready and do nothing)."""
    page.evaluate("""async (last) => {
        const app = window.jupyterapp, panel = app.shell.currentWidget, nb = panel.content;
        await panel.sessionContext.ready;
        app.shell.activateById(panel.id);
        for (let i = 0; i <= last; i++) {
            nb.activeCellIndex = i;
            await app.commands.execute('notebook:run-cell');
        } }""", last)


def type_into_slider(slider, value: int) -> None:
    """Set an ipywidgets slider as a learner would: type into its readout and press Enter (one change)."""
    box = slider.locator(".widget-readout")
    box.click()
    box.press("Control+a")
    box.type(str(value))
    box.press("Enter")


def ask_kernel(page, code: str) -> str:
    """What `code` prints in the open notebook's kernel (idle by then)."""
    return page.evaluate("""async (code) => {
        const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
        const future = kernel.requestExecute({code});
        let out = '';
        future.onIOPub = msg => {
            if (msg.header.msg_type === 'stream') out += msg.content.text;
            if (msg.header.msg_type === 'error') out += msg.content.ename + ': ' + msg.content.evalue; };
        await future.done;
        return out; }""", code)


def end_sessions(base: str, token: str) -> None:
    """End every session of the test's lab, and with it its kernel and that kernel's Spark JVM."""
    with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=10) as resp:
        sessions = json.load(resp)
    for session in sessions:
        request = urllib.request.Request(f"{base}/api/sessions/{session['id']}?token={token}", method="DELETE")
        urllib.request.urlopen(request, timeout=60).close()
