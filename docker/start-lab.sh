#!/usr/bin/env bash
# The lab container's command: JupyterLab on the container's 0.0.0.0:8888 (docker-compose.yml publishes it on
# the host's 127.0.0.1 only), protected by the token in $JUPYTER_TOKEN. No token, no lab.
set -euo pipefail

if [ -z "${JUPYTER_TOKEN:-}" ]; then
  echo "start-lab: JUPYTER_TOKEN is not set, so JupyterLab will not start without a password." >&2
  echo "  Start it with a token, for example:" >&2
  echo "  JUPYTER_TOKEN=\$(python3 -c 'import secrets;print(secrets.token_hex(16))') docker compose up --build" >&2
  exit 64
fi

root="${STREAMLAB_NOTEBOOKS:-$PWD/notebooks}"
[ -d "$root" ] || root="$PWD"
echo "start-lab: JupyterLab on port 8888, notebooks in $root; open http://127.0.0.1:8888/lab?token=<your JUPYTER_TOKEN>"

# jupyter_server reads the token from $JUPYTER_TOKEN itself, so it never appears on a command line.
exec jupyter lab --no-browser --ServerApp.ip=0.0.0.0 --ServerApp.port=8888 \
  --ServerApp.root_dir="$root" --ServerApp.open_browser=False
