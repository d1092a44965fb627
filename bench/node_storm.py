#!/usr/bin/env python3
"""A relaying node under a storm on the simulated air: `pocketmesh node --role repeater` against
openhop-core (PyPI) relaying in the same place (its companion node with client repeat on, through
Tests/interop/harness/air_peer.py). The topology is a star: COMPANIONS simulated companions that
hear only the node under test (the topology's external node "relay"). Measured from /proc:

- idle wake-ups per second: voluntary + involuntary context switches over IDLE seconds with
  nothing on the air (after the node's boot advert has settled);
- CPU per relayed packet: the process's CPU time over the storm (each companion sends MESSAGES
  channel messages, flooded), from its CPU-time clock (nanoseconds, every thread; bench/procstat.py),
  divided by the packets the node relayed (the capture's floods with a hop in their path: only the
  node under test adds one);
- RSS: VmHWM (the peak resident set), and VmRSS and RssAnon (the process's own memory) after the
  storm.

pocketmesh's node runs from an installed copy of --bin (`install -m 755` into a fresh folder, as a
package install writes it), not from the file the release build wrote. With --runs N each node runs
N times, alternating, and the medians are printed last.

    bench/node_storm.py [--bin dist/pocketmesh] [--companions 6] [--messages 40] [--idle 60] [--runs 1]

Environment: POCKETMESH_VENV (openhop-core; default .venv-interop).
"""
import argparse
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import procstat  # noqa: E402
VENV = pathlib.Path(os.environ.get("POCKETMESH_VENV", REPO / ".venv-interop"))
PEER = REPO / "Tests" / "interop" / "harness" / "air_peer.py"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status(pid):
    out = {}
    for line in open(f"/proc/{pid}/status"):
        k, v = line.split(":", 1)
        out[k] = v.strip()
    return out


def switches(pid):
    s = proc_status(pid)
    return int(s["voluntary_ctxt_switches"]) + int(s["nonvoluntary_ctxt_switches"])


def cpu_seconds(pid):
    return procstat.cpu_ns(pid) / 1e9


def relayed(capture):
    """Flood packets on the air with at least one hop in their path (only the relay adds hops)."""
    n = 0
    for line in open(capture):
        b = bytes.fromhex(line.strip())
        if len(b) < 2:
            continue
        route = b[0] & 0x03
        if route not in (0, 1):  # transport flood, flood
            continue
        i = 5 if route == 0 else 1
        if i < len(b) and b[i] & 0x3F > 0:
            n += 1
    return n


def run(binary, which, companions, messages, idle, workdir):
    topo = workdir / f"{which}.json"
    names = [f"c{i}" for i in range(companions)]
    topo.write_text(json.dumps({
        "nodes": [{"name": n, "role": "companion"} for n in names] + [{"name": "relay", "role": "external"}],
        "links": [{"a": n, "b": "relay", "snr": 8} for n in names],
    }))
    base = free_port()
    air = free_port()
    while base <= air < base + companions:  # the companions listen on base, base + 1, ...
        air = free_port()
    capture = workdir / f"{which}.hex"
    sim = subprocess.Popen([str(binary), "sim", "--topology", str(topo), "--air-port", str(air), "--tcp-base", str(base),
                            "--capture", str(capture), "--for", "3600"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in names:
        assert sim.stdout.readline().startswith("node "), sim.stderr.read()
    if which == "pocketmesh":
        installed = workdir / "bin" / "pocketmesh"
        installed.parent.mkdir()
        subprocess.run(["install", "-m", "755", str(binary), str(installed)], check=True)
        node = subprocess.Popen([str(installed), "node", "--role", "repeater", "--radio", f"air:127.0.0.1:{air}/relay",
                                 "--state-dir", str(workdir / "state"), "--name", "relay"], stdout=subprocess.PIPE, text=True)
    else:
        py = VENV / "bin" / "python"
        node = subprocess.Popen([str(py), str(PEER), "--air", f"127.0.0.1:{air}", "--name", "relay", "--port", str(free_port()),
                                 "--repeat"], stdout=subprocess.PIPE, text=True)
    node.stdout.readline()
    env = dict(os.environ, POCKETMESH_NO_DAEMON="1")
    try:
        time.sleep(15)  # boot adverts and start-up settle
        s0, t0 = switches(node.pid), time.monotonic()
        time.sleep(idle)
        wakeups = (switches(node.pid) - s0) / (time.monotonic() - t0)
        before_relayed, c0, w0 = relayed(capture), cpu_seconds(node.pid), time.monotonic()
        for m in range(messages):
            for i, n in enumerate(names):
                subprocess.run([str(binary), "-t", f"127.0.0.1:{base + i}", "channel", "send", "0", f"storm {m}"],
                               capture_output=True, env=env, timeout=60)
        time.sleep(20)  # the last relays go out
        cpu = cpu_seconds(node.pid) - c0
        n = relayed(capture) - before_relayed
        st = proc_status(node.pid)
        return {"node": which, "idle_wakeups_per_s": round(wakeups, 3), "relayed": n, "sent": messages * companions,
                "cpu_ms_per_relayed": round(1000 * cpu / max(n, 1), 3), "storm_s": round(time.monotonic() - w0, 1),
                "max_rss_kb": int(st["VmHWM"].split()[0]), "rss_kb": int(st["VmRSS"].split()[0]),
                "rss_anon_kb": int(st["RssAnon"].split()[0])}
    finally:
        node.terminate()
        node.wait(timeout=10)
        sim.terminate()
        sim.wait(timeout=10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=str(REPO / "dist" / "pocketmesh"))
    ap.add_argument("--companions", type=int, default=6)
    ap.add_argument("--messages", type=int, default=40)
    ap.add_argument("--idle", type=int, default=60)
    ap.add_argument("--only", choices=["pocketmesh", "openhop"])
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    import tempfile
    results = {}
    for _ in range(args.runs):
        for which in ["pocketmesh", "openhop"]:
            if args.only and which != args.only:
                continue
            with tempfile.TemporaryDirectory(prefix="pm-storm-") as d:
                r = run(pathlib.Path(args.bin).resolve(), which, args.companions, args.messages, args.idle, pathlib.Path(d))
            results.setdefault(which, []).append(r)
            print(json.dumps(r), flush=True)
    if args.runs > 1:
        for which, rs in results.items():
            print(json.dumps({"node": which, "runs": len(rs), "median": {
                k: statistics.median(r[k] for r in rs) for k in rs[0] if isinstance(rs[0][k], (int, float))}}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
