"""What a request costs through the companion hub, on loopback, against a simulated radio holding
--contacts contacts (default 150):

- GET_CONTACTS straight to the radio, then through the hub while the daemon's copy of the table is
  current (answered by the daemon) and while it is not (a contact was just added: the listing goes
  to the radio, frame by frame): the first frame's latency and the whole listing's, medians;
- meshcore_py's get_contacts() straight and through the hub (it parses as frames arrive);
- --clients raw clients (default 8) listing at once: the time until the last has its listing;
- one client alone sending --batch GET_DEVICE_TIME (default 200) in one write, past the hub's
  per-client burst (64): the time of the first 64 and per request after them.

    POCKETMESH_BIN=.build/debug/pocketmesh python3 bench/hub_cost.py [--count 30] [--contacts 150]
"""
import argparse
import asyncio
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "Tests" / "interop"
sys.path.insert(0, str(HERE))
from test_daemon_faults import Daemon, free_ports  # noqa: E402
from test_hub import answer, frame, raw_client, read_frame  # noqa: E402
from test_hub_contacts import contact_frame, listing  # noqa: E402
from test_sim_clients import PY, Sim  # noqa: E402


def med(xs):
    return statistics.median(xs) * 1000


def listings(s, count, before=None):
    firsts, totals = [], []
    for i in range(count):
        if before:
            before(i)
        _, first, total = listing(s)
        firsts.append(first)
        totals.append(total)
    return med(firsts), med(totals)


async def py_listing(port, count):
    from meshcore import MeshCore
    mc = await MeshCore.create_tcp("127.0.0.1", port)
    times = []
    try:
        for _ in range(count):
            t0 = time.perf_counter()
            r = await mc.commands.get_contacts(timeout=10)
            times.append(time.perf_counter() - t0)
            assert len(r.payload) > 0
    finally:
        await mc.disconnect()
    return statistics.median(times) * 1000


def py_ms(port, count):
    code = f"import asyncio, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import hub_cost; print(asyncio.run(hub_cost.py_listing({port}, {count})))"
    r = subprocess.run([str(PY), "-c", code], capture_output=True, text=True, timeout=300, cwd=str(HERE))
    if r.returncode != 0:
        return float("nan")
    return float(r.stdout.strip().splitlines()[-1])


def concurrent(port, n, rounds):
    clients = [raw_client(port, f"many{i}".encode()) for i in range(n)]
    times = []
    for _ in range(rounds):
        done = [None] * n
        threads = [threading.Thread(target=lambda i=i: done.__setitem__(i, listing(clients[i]))) for i in range(n)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        times.append(time.perf_counter() - t0)
        assert all(d is not None for d in done)
    for c in clients:
        c.close()
    return med(times)


def batch(port, n):
    c = raw_client(port, b"batcher")
    t0 = time.perf_counter()
    c.sendall(frame(b"\x05") * n)
    at64 = None
    for i in range(n):
        assert answer(c, timeout=30)[0] == 0x09
        if i == 63:
            at64 = time.perf_counter()
    end = time.perf_counter()
    c.close()
    return (at64 - t0) * 1000, (end - at64) * 1000 / max(1, n - 64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=30)
    ap.add_argument("--contacts", type=int, default=150)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--batch", type=int, default=200)
    args = ap.parse_args()
    sim = Sim("--seed", "9", "--max-contacts", str(args.contacts + args.count + 50), nodes=1)
    d = None
    try:
        s = raw_client(sim.port("sim0"), b"seed")
        s.sendall(b"".join(frame(contact_frame(i)) for i in range(args.contacts)))
        for _ in range(args.contacts):
            while read_frame(s)[0] >= 0x80:
                pass
        first, total = listings(s, args.count)
        print(f"GET_CONTACTS direct: first frame {first:.2f} ms, listing {total:.2f} ms ({args.contacts} contacts)")
        s.close()
        print(f"meshcore_py get_contacts direct: {py_ms(sim.port('sim0'), args.count):.2f} ms")
        port = free_ports(1)
        tmp = __import__("tempfile").mkdtemp(prefix="pm-hubcost-")
        d = Daemon(tmp, sim.port("sim0"), hook=False,
                   extra=("--companion-listen", f"127.0.0.1:{port}", "--companion-max-clients", str(args.clients + 4)))
        d.wait_ready(timeout=60)
        time.sleep(1)
        c = raw_client(port, b"lister")
        first, total = listings(c, args.count)
        print(f"GET_CONTACTS hub: first frame {first:.2f} ms, listing {total:.2f} ms")
        added = [args.contacts]

        def add(_):
            c.sendall(frame(contact_frame(added[0])))
            added[0] += 1
            assert answer(c)[0] == 0x00
        first, total = listings(c, args.count, before=add)
        print(f"GET_CONTACTS hub after a change (at the radio): first frame {first:.2f} ms, listing {total:.2f} ms")
        c.close()
        time.sleep(1)
        print(f"meshcore_py get_contacts hub: {py_ms(port, args.count):.2f} ms")
        print(f"{args.clients} clients listing at once: {concurrent(port, args.clients, 5):.1f} ms until the last has its listing")
        head, per = batch(port, args.batch)
        print(f"one client, {args.batch} GET_DEVICE_TIME in one write: first 64 in {head:.1f} ms, then {per:.2f} ms each")
    finally:
        if d:
            d.stop()
        sim.stop()


if __name__ == "__main__":
    main()
