#!/usr/bin/env python3
"""Idle wake-ups of `pocketmesh daemon` and `pocketmesh node`: how often each process wakes when
there is nothing to do, from the kernel's count of its voluntary context switches
(/proc/PID/status, no strace) over a window, and for the daemon also its loop's own count of poll
returns (`loop_wakeups` in the API's `status`).

    python3 bench/idle-wakeups.py [SECONDS] [BIN]     # default 60 s, .build/debug/pocketmesh

The daemon runs against a simulated companion (`pocketmesh sim`) with the default 60 s
safety-net drain (the keepalive), the node as a repeater on the simulator's air socket.
"""
import json
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
BIN = sys.argv[2] if len(sys.argv) > 2 else str(REPO / ".build" / "debug" / "pocketmesh")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def switches(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("voluntary_ctxt_switches"):
            return int(line.split()[1])
    return 0


def call(sock, op):
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(sock)
        s.sendall((json.dumps({"id": 1, "op": op}) + "\n").encode())
        buf = b""
        while b"\n" not in buf:
            buf += s.recv(65536)
        return json.loads(buf.split(b"\n")[0])


def main():
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="pm-idle-"))
    topo = tmp / "t.json"
    topo.write_text(json.dumps({"nodes": [{"name": "sim0", "role": "companion"}, {"name": "lin", "role": "external"}],
                                "links": [{"a": "sim0", "b": "lin", "snr": 8}]}))
    base, air = free_port(), free_port()
    env = dict(os.environ, POCKETMESH_NO_DAEMON="1")
    env.pop("NOTIFY_SOCKET", None)
    sim = subprocess.Popen([BIN, "sim", "--topology", str(topo), "--nodes", "1", "--tcp-base", str(base), "--air-port", str(air)],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    sim.stdout.readline()
    sock = str(tmp / "d.sock")
    daemon = subprocess.Popen([BIN, "daemon", "--tcp", f"127.0.0.1:{base}", "--socket", sock, "--state-dir", str(tmp / "state")],
                              stderr=subprocess.DEVNULL, env=env)
    node = subprocess.Popen([BIN, "node", "--role", "repeater", "--radio", f"air:127.0.0.1:{air}/lin", "--state-dir", str(tmp / "node")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                if call(sock, "status").get("state") == "ready":
                    break
            except OSError:
                pass
            time.sleep(0.2)
        time.sleep(3)  # the handshake's and the node's start-up work done
        w0 = call(sock, "status").get("loop_wakeups")
        d0, n0, t0 = switches(daemon.pid), switches(node.pid), time.time()
        time.sleep(SECONDS)
        d1, n1, t1 = switches(daemon.pid), switches(node.pid), time.time()
        w1 = call(sock, "status").get("loop_wakeups")
        span = t1 - t0
        print(f"window {span:.1f} s")
        print(f"daemon: {d1 - d0} voluntary context switches ({(d1 - d0) / span:.3f}/s)"
              + (f", loop wake-ups {w1 - w0} (of which about 3 for the second status call)" if w0 is not None else ""))
        print(f"node:   {n1 - n0} voluntary context switches ({(n1 - n0) / span:.3f}/s)")
    finally:
        for p in (node, daemon, sim):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.run(["rm", "-rf", str(tmp)])


if __name__ == "__main__":
    main()
