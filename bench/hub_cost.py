"""What a request costs through the companion hub: the median time of N GET_CONTACTS (and
GET_DEVICE_TIME) through the daemon's hub against the same request sent straight to a simulated
radio, on loopback.

    POCKETMESH_BIN=.build/debug/pocketmesh python3 bench/hub_cost.py [--count 60] [--gap S] [--repeaters N]

The simulator runs sim0 (the daemon's radio) and sim1 (asked directly) with --repeaters between
them; both advertise first, so each radio lists the other. Requests go back to back (`--gap 0`,
the default), each kind on a fresh hub client and at most 60 of them: within the hub's per-client
burst (64), so no request waits for its rate.
"""
import argparse
import os
import socket
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Tests" / "interop"))
from test_daemon_faults import Daemon, free_ports  # noqa: E402
from test_hub import frame, pm, raw_client, read_frame  # noqa: E402
from test_sim_clients import Sim  # noqa: E402


def handshake(port):
    s = socket.create_connection(("127.0.0.1", port))
    if os.environ.get("CLIENT_NODELAY"):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(frame(bytes([0x16, 3])))
    while read_frame(s)[0] != 0x0D:
        pass
    s.sendall(frame(b"\x01\x03" + b"\x00" * 6 + b"bench"))
    while read_frame(s)[0] != 0x05:
        pass
    return s


def timed(s, payload, last_code, count, gap):
    times, records = [], 0
    for _ in range(count):
        t0 = time.perf_counter()
        s.sendall(frame(payload))
        n = 0
        while True:
            f = read_frame(s, timeout=10)
            if f[0] >= 0x80:
                continue
            if f[0] == 0x03:
                n += 1
            if f[0] == last_code or f[0] == 0x01:
                break
        times.append((time.perf_counter() - t0) * 1000)
        records = n
        time.sleep(gap)
    return statistics.median(times), min(times), max(times), records


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=60)
    ap.add_argument("--repeaters", type=int, default=1)
    ap.add_argument("--gap", type=float, default=0.0, help="seconds between requests")
    args = ap.parse_args()
    sim = Sim("--repeaters", str(args.repeaters), "--seed", "5")
    port = free_ports(1)
    tmp = tempfile.mkdtemp(prefix="pm-hubcost-")
    d = Daemon(tmp, sim.port("sim0"), hook=False, extra=("--companion-listen", f"127.0.0.1:{port}"))
    try:
        d.wait_ready(timeout=60)
        # Adverts, so that the radios have contacts to list.
        for n in ("sim1", "sim0"):
            pm("--tcp", f"127.0.0.1:{sim.port(n) if n == 'sim1' else port}", "advert", "--flood")
        time.sleep(3)
        for name, payload, last in (("GET_CONTACTS", b"\x04", 0x04), ("GET_DEVICE_TIME", b"\x05", 0x09)):
            # A fresh hub client per kind: its request rate (bursts of 64) is its own.
            for where, p in (("hub", port), ("direct", sim.port("sim1"))):
                s = handshake(p)
                med, lo, hi, records = timed(s, payload, last, args.count, args.gap)
                s.close()
                extra = f", {records} contact(s)" if payload == b"\x04" else ""
                print(f"{name} {where}: median {med:.2f} ms (min {lo:.2f}, max {hi:.2f}) over {args.count}{extra}")
    finally:
        d.stop()
        sim.stop()


if __name__ == "__main__":
    main()
