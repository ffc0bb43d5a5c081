"""Each learner's server on a network of its own: it sees its own sockets only, and reaches the room's few services.

Why: on a shared network a learner's kernel saw every listening port of the machine in `/proc/net/tcp` (or `ss`):
the hub's, its proxy's, every other learner's Jupyter server and Spark driver (red team P15), and could then knock
on each (P14's attack on another learner's Spark driver started so). Spark's RPC now asks for a secret, but a port
one cannot see or reach is better than a port that refuses. So the walls (walls.py) put the server in a network
namespace of its own (`unshare --net`): a loopback of its own, where Jupyter, its kernels and Spark talk as before.
Three kinds of traffic cross it, each through a relay of ours, and nothing else does:
- **in**: the hub's proxy reaches the server at 127.0.0.1:PORT of the machine. `OUTSIDE` binds that port on the
  machine's loopback and hands the listening socket (a file descriptor, which keeps the namespace it was made in)
  to `INSIDE`, which accepts the proxy's connections and pipes each to 127.0.0.1:PORT inside, where Jupyter listens;
- **out**: the room's Kafka, the hub's API and its partitions service. `INSIDE` listens on their ports on the
  namespace's loopback (so `127.0.0.1:19292` means the same inside and out), and for each connection asks `OUTSIDE`
  for a socket connected to the same port of the machine; `OUTSIDE` connects and passes the socket back over a Unix
  socket pair (SCM_RIGHTS), and `INSIDE` pipes the two;
- nothing else: any other port of the machine is simply not there (connection refused).

`OUTSIDE` is the process the hub starts. It binds the port as root, then becomes the learner's account, so every
connection it opens to the room's Kafka is hers (`meta skuid` in the room's per-learner cap, connections.py, counts
it as before). It asks only for the ports it was given, and ends with the walls (or takes them down, if it is
killed: the kernel sends SIGKILL to `unshare` when its parent dies). `INSIDE` runs in the learner's pid namespace,
as her account once its ports are bound, and ends with it. Both are self-contained Python (`python -I -S -c`): they
run before and beside the server, where nothing of the course is imported.
"""
from __future__ import annotations

import json
import sys

from grader.relay import LOOPBACK_UP, TO_BACKGROUND

IN_FD, CONTROL_FD = 3, 4  # where INSIDE finds the machine's listening socket and its end of the socket pair

# argv: CONFIG(json: uid, gid, inbound, outbound) -- COMMAND... Run as root by the hub (with its pre-exec step done).
OUTSIDE = r"""
import ctypes, fcntl, json, os, signal, socket, struct, sys, threading
config = json.loads(sys.argv[1]); command = sys.argv[3:]
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    listener.bind(("127.0.0.1", config["inbound"]))
except OSError as exc:
    sys.exit(f"network: the server's port 127.0.0.1:{config['inbound']} is taken ({exc.strerror})")
listener.listen(128)
mine, theirs = socket.socketpair()
child = os.fork()
if child == 0:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: the walls end with us
    if os.getppid() == 1:
        os._exit(1)
    mine.close()
    high = [fcntl.fcntl(end.fileno(), fcntl.F_DUPFD_CLOEXEC, 10) for end in (listener, theirs)]
    for fd, where in zip(high, (%(IN_FD)d, %(CONTROL_FD)d)):  # (either may be 3 or 4 already)
        os.dup2(fd, where)
        os.set_inheritable(where, True)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"network: cannot run {command[0]}: {exc}", file=sys.stderr, flush=True)
    os._exit(127)
listener.close()
theirs.close()
"127.0.0.1".encode("idna")  # the codec a connection's address needs, loaded while the Python is ours to read:
os.setgroups([])  # as the learner, outside the walls, its folder may be closed (pyenv under /root)
os.setgid(config["gid"])
os.setuid(config["uid"])  # every connection from here on is the learner's own (connections.py counts it)
allowed = set(config["outbound"])
def serve():
    while True:
        try:
            asked = mine.recv(2)
        except OSError:
            return
        if len(asked) < 2:
            return
        port = struct.unpack("!H", asked)[0]
        out = None
        if port in allowed:
            try:
                out = socket.socket()
                out.settimeout(10)
                out.connect(("127.0.0.1", port))
                out.settimeout(None)
            except OSError:
                out.close()
                out = None
        try:
            if out is None:
                mine.sendall(b"\0")
            else:
                mine.sendmsg([b"\1"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", out.fileno()))])
        except OSError:
            return
        finally:
            if out is not None:
                out.close()
threading.Thread(target=serve, daemon=True).start()
_, status = os.waitpid(child, 0)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
""" % {"IN_FD": IN_FD, "CONTROL_FD": CONTROL_FD}

# argv: CONFIG(json: uid, gid, inbound, outbound). Run as root in the new namespace by the walls' script, with the
# machine's listening socket on fd IN_FD and the socket pair on CONTROL_FD; returns once every port listens.
INSIDE = (r"""
import asyncio, fcntl, json, os, socket, struct, sys, threading
import concurrent.futures.thread  # loaded now, as root: what asks for sockets later runs as the learner
config = json.loads(sys.argv[1])
""" + LOOPBACK_UP + r"""incoming = socket.socket(fileno=%(IN_FD)d)
control = socket.socket(fileno=%(CONTROL_FD)d)
outgoing = []
for port in config["outbound"]:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(128)
    outgoing.append((server, port))
os.setgroups([])
os.setgid(config["gid"])
os.setuid(config["uid"])
""" + TO_BACKGROUND + r"""asking = threading.Lock()
def ask(port):
    with asking:
        control.sendall(struct.pack("!H", port))
        data, ancillary, _flags, _address = control.recvmsg(1, socket.CMSG_SPACE(4))
        if data != b"\1":
            if not data:
                os._exit(0)  # OUTSIDE is gone: so are the walls, soon
            raise ConnectionRefusedError(port)
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                return socket.socket(fileno=struct.unpack("i", payload[:4])[0])
        raise ConnectionRefusedError(port)
async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        writer.write_eof()
    except (OSError, RuntimeError):
        pass
async def bridge(reader, writer, opened):
    try:
        other_reader, other_writer = await opened
    except Exception:  # refused, or the relay to the machine is gone: the client sees its connection closed
        writer.close()
        return
    await asyncio.gather(pipe(reader, other_writer), pipe(other_reader, writer))
    writer.close()
    other_writer.close()
async def main():
    loop = asyncio.get_running_loop()
    inside = config["inbound"]
    servers = [await asyncio.start_server(
        lambda r, w: bridge(r, w, asyncio.open_connection("127.0.0.1", inside)), sock=incoming)]
    for server, port in outgoing:
        async def out(port=port):
            sock = await loop.run_in_executor(None, ask, port)
            return await asyncio.open_connection(sock=sock)
        servers.append(await asyncio.start_server(lambda r, w, out=out: bridge(r, w, out()), sock=server))
    await asyncio.gather(*(server.serve_forever() for server in servers))
asyncio.run(main())
""") % {"IN_FD": IN_FD, "CONTROL_FD": CONTROL_FD}


def config(*, uid: int, gid: int, inbound: int, outbound: list[int]) -> str:
    """The relays' shared configuration: the learner's account, the server's port, the machine's ports it reaches."""
    return json.dumps({"uid": uid, "gid": gid, "inbound": inbound, "outbound": sorted(set(outbound))})


def outside(cmd: list[str], settings: str) -> list[str]:
    """`cmd` (the walls' `unshare ...`) started by OUTSIDE with `settings` (config())."""
    return [sys.executable, "-I", "-S", "-c", OUTSIDE, settings, "--", *cmd]


def inside(settings: str) -> list[str]:
    """INSIDE's command line, for the walls' script (run as root in the new namespace)."""
    return [sys.executable, "-I", "-S", "-c", INSIDE, settings]


def ports(*urls: str) -> list[int]:
    """The ports of `urls` ("http://127.0.0.1:18002/hub/api", "127.0.0.1:19292,127.0.0.1:19293")."""
    from urllib.parse import urlsplit

    found = []
    for url in urls:
        for part in filter(None, (p.strip() for p in url.split(","))):
            port = urlsplit(part if "//" in part else f"//{part}").port
            if port:
                found.append(port)
    return found
