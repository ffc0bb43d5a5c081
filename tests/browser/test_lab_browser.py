"""JupyterLab in headless Chromium: module 3's producer-rate slider moves the lag chart and readout.

Widgets that work headless can still fail in a real browser, and live updates from a running query are
fragile, so this drives the real thing: JupyterLab on 127.0.0.1 with a token, Debian's Chromium through
Playwright, the released module 3 notebook. Screenshots land in test-results/browser/.
"""
from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULE = "03-consumer-lag"
RESULTS = ROOT / "test-results" / "browser"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

if CHROMIUM is None:
    if os.environ.get("CI") == "true":
        pytest.fail("Chromium is missing in CI: `make test` installs Debian's chromium package", pytrace=False)
    pytest.skip("Chromium is not installed (apt-get install chromium); the browser test needs it",
                allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


@pytest.fixture(scope="module")
def lab(tmp_path_factory, bootstrap):
    """JupyterLab serving a copy of module 3, on 127.0.0.1 with a random token."""
    work = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "notebooks" / MODULE, work / MODULE)
    port, token = _free_port(), secrets.token_hex(16)
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--ServerApp.port={port}",
           "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
           "--LabApp.expose_app_in_browser=True"]
    log = open(work / "jupyter.log", "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy())
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while _get(f"{base}/api/status?token={token}") != 200:
        assert proc.poll() is None, f"JupyterLab exited: {(work / 'jupyter.log').read_text()[-2000:]}"
        assert time.monotonic() < deadline, "JupyterLab did not answer within 60 s"
        time.sleep(0.5)
    yield base, token
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_lab_requires_its_token(lab):
    """Without the token the server refuses API calls."""
    base, token = lab
    assert _get(f"{base}/api/contents") == 403, "JupyterLab answered without its token"
    assert _get(f"{base}/api/contents?token={token}") == 200


def test_producer_slider_moves_lag_chart_and_readout(lab):
    """Moving the producer-rate slider while the demo runs changes the readout and redraws the chart."""
    from playwright.sync_api import sync_playwright

    base, token = lab
    RESULTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(f"{base}/lab/tree/{MODULE}/{MODULE}.ipynb?token={token}")
            page.wait_for_function("window.jupyterapp && document.querySelector('.jp-Notebook')", timeout=60_000)
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            readout = page.locator("[data-testid='streamlab-readout'], .widget-html-content code").first
            readout.wait_for(timeout=120_000)
            page.wait_for_function(
                "() => [...document.querySelectorAll('.widget-html-content code')]"
                ".some(e => /batches [1-9]/.test(e.textContent))", timeout=120_000)
            chart = page.locator(".widget-image").first
            before_src = chart.get_attribute("src")
            before_text = readout.text_content()
            page.screenshot(path=str(RESULTS / "before-slider.png"))
            rate = page.locator(".widget-slider", has_text="producer rate").first
            value = rate.locator(".widget-readout")
            value.click()
            value.press("Control+a")
            value.type("4000")
            value.press("Enter")
            page.wait_for_function(
                "() => [...document.querySelectorAll('.widget-html-content code')]"
                ".some(e => e.textContent.includes('producer 4000 rec/s'))", timeout=30_000)
            time.sleep(3)
            after_src = chart.get_attribute("src")
            after_text = readout.text_content()
            page.screenshot(path=str(RESULTS / "after-slider.png"))
        finally:
            browser.close()
    assert "producer 4000 rec/s" in after_text, f"the readout did not follow the slider: {after_text!r}"
    assert after_text != before_text
    assert after_src != before_src, "the lag chart was not redrawn after the slider moved"
