"""`make bench`'s container section: the compose lab on podman (tests/docker/engine.py), measured side by side.

- the lab image's size;
- a cold build (`docker-compose build --no-cache`: every layer, downloads included) against a warm one (after a
  notebook edit: only the course layer);
- `docker-compose up -d` until both services are healthy;
- module 4's Restart & Run All in the lab container (against the Kafka container) against the same run natively,
  which bench/ measured before.

Printed as figures and ratios, never asserted: the machines are shared. Runs only where the engine can be had
(Debian, root); otherwise it says why it measured nothing.
"""
from __future__ import annotations

import json
import secrets
import shutil
import tempfile
import time
from pathlib import Path

import engine
from test_compose_lab import LAB_IMAGE, PORTS, RUN_NOTEBOOKS

MODULE = "notebooks/04-backpressure/04-backpressure.ipynb"


def _timed(fn, *args, **kw) -> float:
    started = time.monotonic()
    fn(*args, **kw)
    return time.monotonic() - started


def run(native_run_all: dict[str, float]) -> None:
    """Measure and print; `native_run_all` maps a notebook path to its native Restart & Run All seconds."""
    try:
        engine.ensure_packages()
        engine.check_engine()
    except engine.Unavailable as exc:
        print(f"containers: not measured ({exc})")
        return
    folder = Path(tempfile.mkdtemp(prefix="streamlab-bench-compose-"))
    try:
        with engine.docker_api() as host:
            base = engine.base_image()
            engine.kafka_image(base)
            engine.course_copy(folder)
            stack = engine.Stack(folder, host, project="streamlab-bench",
                                 env={**PORTS, "JUPYTER_TOKEN": secrets.token_hex(16), "PYTHON_IMAGE": base})
            stack.down()
            try:
                cold = _timed(stack.compose, "build", "--no-cache", "lab", timeout=3600)
                size = engine.image_size(LAB_IMAGE)
                path = folder / "notebooks" / "00-setup" / "00-setup.ipynb"
                nb = json.loads(path.read_text())
                nb["cells"][0]["source"] = "".join(nb["cells"][0]["source"]) + "\n<!-- bench edit -->"
                path.write_text(json.dumps(nb, indent=1))
                warm = _timed(stack.compose, "build", "lab", timeout=1200)
                up = stack.up()
                done = stack.exec("lab", "python", "-c", RUN_NOTEBOOKS, MODULE, timeout=1800)
                report = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else {}
                down = _timed(stack.down)
            finally:
                stack.down()
                engine.stop_exec_leftovers("streamlab-bench")
                # --no-cache leaves the replaced layers of earlier builds as dangling images.
                engine.podman("image", "prune", "-f", check=False)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"lab image {LAB_IMAGE}: {size / 1e6:,.0f} MB; build cold (--no-cache) {cold:.0f} s, warm (after a "
          f"notebook edit) {warm:.1f} s")
    print(f"  warm / cold build time: {warm / cold:.3f}")
    print(f"compose up -d to both healthy: {up:.1f} s; down -v {down:.1f} s")
    inside = report.get(MODULE, {})
    native = native_run_all.get(MODULE)
    if inside.get("errors") or not inside:
        print(f"04-backpressure in the container: failed {inside.get('errors') or done.stderr[-500:]}")
    elif native:
        print(f"04-backpressure Restart & Run All: in the container {inside['seconds']:.0f} s, natively {native:.0f} s")
        print(f"  container / native run time: {inside['seconds'] / native:.2f}")
    else:
        print(f"04-backpressure Restart & Run All in the container: {inside['seconds']:.0f} s")


if __name__ == "__main__":
    run({})
