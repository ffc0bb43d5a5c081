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

# The course folder is the working tree mounted from the host: notebooks and checkpoints are saved there, so the
# lab's user must be able to write it. A read-only mount, or a tree owned by another user id, would lose work.
course="$PWD"
probe="$course/.start-lab-write-test.$$"
if ! (: > "$probe") 2>/dev/null; then
  owner="$(stat -c %u "$course" 2>/dev/null || echo '?')"
  echo "start-lab: the course folder $course cannot be written by the lab's user (uid $(id -u)); it is owned by" >&2
  echo "  uid $owner$(grep -q " $course [^ ]* ro[,\ ]" /proc/mounts 2>/dev/null && echo ' and mounted read-only')." >&2
  echo "  Your notebooks could not be saved. On Linux, build the lab with your own user id:" >&2
  echo "    LAB_UID=\$(id -u) docker compose up --build" >&2
  echo "  and do not mount the working tree read-only (no :ro in docker-compose.yml)." >&2
  exit 65
fi
rm -f "$probe"

# docker-compose.yml starts the lab once Kafka is healthy; an engine that ignores that condition (podman-compose
# 1.0) or a broker that went away still gets a lab, after a wait that says what it waits for.
if [ -n "${KAFKA_BOOTSTRAP:-}" ]; then
  wait_s="${STREAMLAB_KAFKA_WAIT:-60}"
  if ! python -c "
import socket, sys, time
host, _, port = sys.argv[1].split(',')[0].rpartition(':')
deadline, said = time.monotonic() + float(sys.argv[2]), False
while True:
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
        sys.exit(0)
    except OSError:
        if time.monotonic() > deadline:
            sys.exit(1)
        if not said:
            print(f'start-lab: waiting for Kafka at {sys.argv[1]} (up to {sys.argv[2]} s) ...', file=sys.stderr, flush=True)
            said = True
        time.sleep(1)
" "$KAFKA_BOOTSTRAP" "$wait_s"; then
    echo "start-lab: Kafka at $KAFKA_BOOTSTRAP is not answering after ${wait_s} s; JupyterLab starts anyway, and" >&2
    echo "  each notebook's setup cell will say so until it answers (docker compose ps; docker compose logs kafka)." >&2
  fi
fi

root="${STREAMLAB_NOTEBOOKS:-$PWD/notebooks}"
[ -d "$root" ] || root="$PWD"
echo "start-lab: JupyterLab on port 8888, notebooks in $root; open http://127.0.0.1:${LAB_PORT:-8888}/lab?token=<your JUPYTER_TOKEN>"

# The lab opens on the course's home notebook, as make lab and the hub do.
home=""
[ -f "$root/START-HERE.ipynb" ] && home="--LabApp.default_url=/lab/tree/START-HERE.ipynb"
# jupyter_server reads the token from $JUPYTER_TOKEN itself, so it never appears on a command line.
exec jupyter lab --no-browser --ServerApp.ip=0.0.0.0 --ServerApp.port=8888 \
  --ServerApp.root_dir="$root" --ServerApp.open_browser=False ${home:+"$home"}
