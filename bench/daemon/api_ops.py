#!/usr/bin/env python3
"""API op latency and the daemon's memory while API clients run operations.

    python3 bench/daemon/api_ops.py [BIN ...]        # default: dist/pocketmesh

For each binary: a `pocketmesh sim` (two companions, one repeater) on loopback, then
- the radio's own round trip: 1,000 GET_BATT_AND_STORAGE frames straight to the simulated radio
  over TCP (no daemon), median and p99;
- `ping` (the daemon answers itself) and `battery` (an operation that needs the radio) over one
  API connection, 1,000 each, median and p99;
- a one-shot CLI call through the daemon (`pocketmesh battery --json`), 30 runs, median;
- the daemon's anonymous memory (RssAnon) idle, and its peak while 8 API clients each run 250
  `battery` ops at once (sampled every 5 ms), and the processes the daemon waited for meanwhile
  (/proc's cminflt: a worker process per op shows there).
Latencies are wall clock from a Python client (its own overhead included, the same for every row).
"""
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def start_sim(bin_):
    base = 47000 + os.getpid() % 1000 * 8
    p = subprocess.Popen([bin_, "sim", "--nodes", "2", "--repeaters", "1", "--seed", "11", "--tcp-base", str(base),
                          "--for", "600"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    ports = {}
    while len(ports) < 2:
        line = p.stdout.readline()
        m = re.match(r"node (\S+) pubkey=[0-9a-f]{64} tcp=127\.0\.0\.1:(\d+)", line)
        if m:
            ports[m[1]] = int(m[2])
    return p, ports["sim0"]


def frame(payload):
    return b"<" + len(payload).to_bytes(2, "little") + payload


def read_frame(s, buf):
    while True:
        if len(buf) >= 3 and buf[0] == ord(">"):
            n = int.from_bytes(buf[1:3], "little")
            if len(buf) >= 3 + n:
                return buf[3:3 + n], buf[3 + n:]
        chunk = s.recv(4096)
        if not chunk:
            raise EOFError
        buf += chunk


def radio_round_trip(port, n=1000):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    s.sendall(frame(b"\x16\x03"))  # DEVICE_QUERY
    f, buf = read_frame(s, buf)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        s.sendall(frame(b"\x14"))  # GET_BATT_AND_STORAGE
        while True:
            f, buf = read_frame(s, buf)
            if f[0] == 0x0C:
                break
        times.append(time.perf_counter() - t)
    s.close()
    return times


class API:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(60)
        self.s.connect(path)
        self.buf = b""
        self.n = 0

    def call(self, req, check=True):
        self.n += 1
        req = dict(req, id=self.n)
        self.s.sendall((json.dumps(req) + "\n").encode())
        while b"\n" not in self.buf:
            self.buf += self.s.recv(65536)
        line, self.buf = self.buf.split(b"\n", 1)
        r = json.loads(line)
        if check:
            assert r.get("ok"), r
        return r


def timed(api, req, n=1000):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        api.call(req)
        times.append(time.perf_counter() - t)
    return times


def status(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def children_faults(pid):
    text = open(f"/proc/{pid}/stat").read()
    f = text[text.rindex(")") + 2:].split()
    return int(f[11 - 3]) + int(f[13 - 3])


def ms(times, q):
    times = sorted(times)
    if q == 50:
        return statistics.median(times) * 1000
    return times[min(len(times) - 1, int(len(times) * q / 100))] * 1000


def run(bin_):
    sim, port = start_sim(bin_)
    tmp = tempfile.mkdtemp(prefix="pm-api-bench-")
    out = {}
    try:
        rt = radio_round_trip(port)
        out["radio"] = (ms(rt, 50), ms(rt, 99))
        # The default socket, so that the one-shot command line finds the daemon (and does not take
        # the simulated radio's one TCP connection from it).
        sock = os.path.join(tmp, "pocketmesh", f"tcp-127.0.0.1-{port}.sock")
        env = dict(os.environ, XDG_RUNTIME_DIR=tmp)
        d = subprocess.Popen([bin_, "daemon", "--tcp", f"127.0.0.1:{port}", "--state-dir", os.path.join(tmp, "state")],
                             stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "daemon.log"), "w"),
                             env=env)
        deadline = time.time() + 30
        while True:
            try:
                if API(sock).call({"op": "status"}).get("state") == "ready":
                    break
            except (OSError, AssertionError):
                pass
            if time.time() > deadline:
                raise RuntimeError("daemon not ready")
            time.sleep(0.1)
        api = API(sock)
        out["idle_anon_kb"] = status(d.pid, "RssAnon")
        out["ping"] = tuple(ms(timed(api, {"op": "ping"}), q) for q in (50, 99))
        out["battery"] = tuple(ms(timed(api, {"op": "battery"}), q) for q in (50, 99))
        cli = []
        for _ in range(30):
            t = time.perf_counter()
            subprocess.run([bin_, "battery", "--json", "--tcp", f"127.0.0.1:{port}"], env=env, check=True,
                           capture_output=True)
            cli.append(time.perf_counter() - t)
        out["cli"] = ms(cli, 50)
        faults = children_faults(d.pid)
        peak = [0]
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], status(d.pid, "RssAnon"))
                time.sleep(0.005)

        errors = {}

        def client():
            a = API(sock)
            for _ in range(250):
                r = a.call({"op": "battery"}, check=False)
                if not r.get("ok"):
                    code = r["error"]["code"]
                    errors[code] = errors.get(code, 0) + 1

        sampler = threading.Thread(target=sample)
        sampler.start()
        t = time.perf_counter()
        clients = [threading.Thread(target=client) for _ in range(8)]
        for c in clients:
            c.start()
        for c in clients:
            c.join()
        out["eight_clients_s"] = time.perf_counter() - t
        stop.set()
        sampler.join()
        out["peak_anon_kb"] = peak[0]
        out["children_faults"] = children_faults(d.pid) - faults
        out["errors"] = errors
        d.send_signal(signal.SIGTERM)
        d.wait(10)
    finally:
        sim.send_signal(signal.SIGTERM)
        sim.wait(10)
    return out


def main():
    bins = sys.argv[1:] or ["dist/pocketmesh"]
    for b in bins:
        r = run(b)
        print(f"== {b}")
        print(f"radio round trip (GET_BATT, direct TCP)   median {r['radio'][0]:.3f} ms  p99 {r['radio'][1]:.3f} ms")
        print(f"API ping (daemon answers itself)         median {r['ping'][0]:.3f} ms  p99 {r['ping'][1]:.3f} ms")
        print(f"API battery (operation, needs the radio) median {r['battery'][0]:.3f} ms  p99 {r['battery'][1]:.3f} ms")
        print(f"one-shot CLI `battery` through the daemon median {r['cli']:.1f} ms")
        print(f"8 clients x 250 battery ops: {r['eight_clients_s']:.2f} s; daemon RssAnon idle {r['idle_anon_kb']} kB, "
              f"peak {r['peak_anon_kb']} kB; page faults of waited-for children {r['children_faults']}; "
              f"refused: {r['errors'] or 'none'}")


if __name__ == "__main__":
    main()
