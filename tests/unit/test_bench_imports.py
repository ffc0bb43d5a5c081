"""`make bench` runs sections that live with the tests they measure (tests/docker/measure.py): they must import the
way the bench imports them, from a plain interpreter, not only under pytest (a run once died there on `labrun`)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_bench_imports_its_container_section_outside_pytest():
    done = subprocess.run([sys.executable, "-c", "from bench import container_measure; "
                           "print(callable(container_measure().run))"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr[-1500:]
