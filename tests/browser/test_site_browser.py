"""The static site in Chromium with JavaScript off, as a reader without a lab opens it: the home's module map leads
to a module, its figure and (when the suite's lab runs saved their notebooks) a run's chart are drawn, and the
previous/next links lead on. Served by Python's http.server on 127.0.0.1, stopped at the end; screenshots in
test-results/browser/site-*.png.
"""
from __future__ import annotations

import functools
import threading
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from grader.course import RELEASE, ROOT, assignments
from grader.site import build
from labpage import CHROMIUM, FLAGS, RESULTS

EXECUTED = ROOT / "test-results" / "executed"  # where tests/notebooks/test_modules.py saves its lab runs


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # one line per request would bury the test's output
        pass


@contextmanager
def served(folder: Path):
    """http.server serving `folder` on 127.0.0.1 at a free port: its base URL; shut down and closed after."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def drawn(page, selector: str) -> dict:
    """The first element matching `selector`, scrolled into view: whether it loaded (naturalWidth) and its box."""
    image = page.locator(selector).first
    image.scroll_into_view_if_needed()
    return image.evaluate("img => ({natural: img.naturalWidth, width: img.getBoundingClientRect().width, "
                          "complete: img.complete, src: img.getAttribute('src').slice(0, 40)})")


@pytest.mark.timeout(600)
def test_the_site_reads_in_chromium_without_javascript(tmp_path):
    from playwright.sync_api import sync_playwright

    executed = EXECUTED if any(EXECUTED.glob("*.ipynb")) else None
    site = build(tmp_path / "site", RELEASE, executed)
    first, second = assignments(RELEASE)[:2]
    RESULTS.mkdir(parents=True, exist_ok=True)
    with served(site.out) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 900})
        page = context.new_page()
        try:
            assert page.goto(f"{base}/index.html").status == 200
            page.screenshot(path=str(RESULTS / "site-home.png"))
            module_map = page.locator(f'table a[href="{first}/{first}.html"]').first
            module_map.scroll_into_view_if_needed()
            page.screenshot(path=str(RESULTS / "site-module-map.png"))
            module_map.click()
            page.wait_for_url(f"**/{first}/{first}.html")
            figure = drawn(page, 'img[src^="figures/"]')
            page.screenshot(path=str(RESULTS / "site-module-figure.png"))
            assert figure["complete"] and figure["natural"] > 0 and figure["width"] > 100, figure
            broken = page.evaluate("[...document.images].filter(i => !(i.complete && i.naturalWidth > 0))"
                                   ".map(i => i.getAttribute('src').slice(0, 60))")
            assert not broken, f"images on {first}'s page that do not load: {broken}"
            page.locator('nav.site a', has_text="·").last.click()  # the top bar's Next link
            page.wait_for_url(f"**/{second}/{second}.html")
            broken = page.evaluate("[...document.images].filter(i => !(i.complete && i.naturalWidth > 0))"
                                   ".map(i => i.getAttribute('src').slice(0, 60))")
            assert not broken, f"images on {second}'s page that do not load: {broken}"
            ran = next((aid for aid in site.executed
                        if (site.out / aid / f"{aid}.html").read_text().count('src="data:image/png') > 0), None)
            if ran is None:
                print(f"\nno module with a run's chart in this build (executed: {site.executed}): "
                      "only the figures were checked")
            else:
                page.goto(f"{base}/{ran}/{ran}.html")
                chart = drawn(page, '.jp-OutputArea-output img[src^="data:image/png"]')
                page.screenshot(path=str(RESULTS / "site-run-chart.png"))
                assert chart["complete"] and chart["natural"] > 0 and chart["width"] > 100, chart
                print(f"\n{ran}: a run's chart drawn, {chart}")
        except Exception:
            page.screenshot(path=str(RESULTS / "site-failure.png"), full_page=False)
            raise
        finally:
            browser.close()
