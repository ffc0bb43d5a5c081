"""The dev container's first step, on the host (devcontainer.json's initializeCommand): a JupyterLab token.

docker-compose.yml refuses to start the lab without JUPYTER_TOKEN (no token, no lab); a dev container cannot be
given one on its command line, so this writes a fresh random one into `.env` beside docker-compose.yml, which
docker compose reads (`.env` is git-ignored), once: a token already there is kept. On Linux it also writes LAB_UID,
so that the lab's user can write the mounted working tree (start-lab.sh says so when it cannot).
"""
from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

ENV = Path(__file__).resolve().parent.parent / ".env"


def main(env: Path = ENV) -> int:
    """Add JUPYTER_TOKEN (and LAB_UID on Linux) to `env` where missing; print where the token is."""
    lines = env.read_text().splitlines() if env.is_file() else []
    names = {line.split("=", 1)[0].strip() for line in lines if "=" in line and not line.lstrip().startswith("#")}
    added = []
    if "JUPYTER_TOKEN" not in names:
        added.append(f"JUPYTER_TOKEN={secrets.token_hex(16)}")
    if "LAB_UID" not in names and sys.platform.startswith("linux") and hasattr(os, "getuid") and os.getuid() != 0:
        added.append(f"LAB_UID={os.getuid()}")
    if added:
        env.write_text("\n".join(lines + added) + "\n")
        env.chmod(0o600)
    print(f"dev container: JupyterLab's token is in {env} (JUPYTER_TOKEN)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
