#!/usr/bin/env python3
"""Daemon footprint under a message storm.

Starts a two-node openhop-core companion peer on loopback (third_party_mesh.py; or, with
--peer sim, two nodes of `pocketmesh sim`), runs
`pocketmesh daemon` on node 0 (optionally under `prlimit --as=BYTES`), sends RATE channel
messages per minute from node 1 for SECONDS, and samples the daemon's RSS from /proc.

    bench/daemon/storm.py --bin dist/pocketmesh --rate 1000 --seconds 120 [--as-limit 33554432] [--hook]
    bench/daemon/storm.py ... --hub-clients 8 [--latency 200]
    bench/daemon/storm.py ... --mqtt [--peer sim] [--cold]
    bench/daemon/storm.py --bin dist/pocketmesh-aarch64 --qemu qemu-aarch64-static ...

With --mqtt a Mosquitto broker is started on loopback and the daemon runs the MQTT bridge and the
observer uploader against it; a subscriber counts what arrives (each message once, by store id;
the observer's packets on meshcore/BCH/KEY/packets), and the result carries the daemon's median
delay from "stored" to "published" (PUBACK) and the observer's own count of packets published.
The openhop-core peer then pushes LOG_RX_DATA for every packet node 0 hears (companion_peer.py
--log-rx; its frame server sends none by itself), as the firmware does.

With --hub-clients N the daemon also serves the companion hub and N raw companion clients drain
every message through it (each must get every message once); --latency K then times K
GET_DEVICE_TIME round trips through the hub (node 0) and K straight to node 1, after the storm.

This is the daemon's own probe (raw-socket hub clients, the daemon only). The comparison with the
Python stack (meshcore_py clients, meshcore-proxy, an MQTT bridge, packet capture) on the same
workload, CPU and memory of both sides, is bench/stack/storm.py. The daemon's CPU time here comes
from its CPU-time clock (ns; bench/procstat.py): `cpu_storm_ms` from just before the storm to the end.
"""
import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import statistics
import struct
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import procstat  # noqa: E402


def free_base():
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            b = s.getsockname()[1]
        try:
            with socket.socket() as a, socket.socket() as c:
                a.bind(("127.0.0.1", b))
                c.bind(("127.0.0.1", b + 1))
            return b
        except OSError:
            pass
    raise SystemExit("no free ports")


def status_kb(pid, key):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        return None


def call(sock, req):
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(sock)
        s.sendall((json.dumps(req) + "\n").encode())
        buf = b""
        while b"\n" not in buf:
            buf += s.recv(65536)
        return json.loads(buf.split(b"\n")[0])


async def storm(port, rate, seconds):
    from meshcore import MeshCore
    mc = await MeshCore.create_tcp("127.0.0.1", port)
    gap = 60.0 / rate
    n = int(rate * seconds / 60)
    start = time.time()
    for i in range(n):
        await mc.commands.send_chan_msg(0, f"storm-{i}")
        delay = start + (i + 1) * gap - time.time()
        if delay > 0:
            await asyncio.sleep(delay)
    await mc.disconnect()
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(REPO / "dist" / "pocketmesh"))
    ap.add_argument("--rate", type=int, default=1000, help="messages per minute")
    ap.add_argument("--seconds", type=int, default=120)
    ap.add_argument("--as-limit", type=int, default=0, help="prlimit --as for the daemon (bytes)")
    ap.add_argument("--hook", action="store_true", help="also run an --on-message hook for every message")
    ap.add_argument("--hub-clients", type=int, default=0, help="companion hub clients draining every message")
    ap.add_argument("--latency", type=int, default=0, help="round trips timed through the hub and direct")
    ap.add_argument("--mqtt", action="store_true", help="bridge and observer to a Mosquitto broker on loopback")
    ap.add_argument("--qemu", default="", help="run the daemon under this qemu-user (an aarch64 binary on x86_64)")
    ap.add_argument("--smaps", action="store_true",
                    help="also report the daemon's RSS per mapping at the end (/proc/PID/smaps: code, read-only data, data, heap, stacks)")
    ap.add_argument("--cold", action="store_true",
                    help="run the daemon from a copy of --bin dropped from the page cache, as after a reboot")
    ap.add_argument("--peer", choices=["openhop", "sim"], default="openhop",
                    help="the radios: openhop-core's companion (default; with --mqtt it pushes LOG_RX_DATA, as the "
                         "firmware does, so the observer uploads every packet) or pocketmesh's simulator (which carries "
                         "only what its air time allows)")
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="pmbench-")
    base = free_base()
    if a.peer == "sim":
        peer_cmd = [a.bin, "sim", "--nodes", "2", "--tcp-base", str(base), "--for", str(a.seconds + 600)]
    else:
        peer_cmd = [sys.executable, str(REPO / "Tests" / "interop" / "harness" / "companion_peer.py"), "--nodes", "2",
                    "--base-port", str(base)]
        if a.mqtt:
            # openhop-core's frame server sends no LOG_RX_DATA of its own: without it the observer
            # would have nothing to upload (the firmware pushes one for every packet it hears).
            peer_cmd += ["--log-rx"]
    peer = subprocess.Popen(peer_cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    seen = 0
    while seen < 2:
        if peer.stdout.readline().startswith("node "):
            seen += 1
    sock = f"{tmp}/d.sock"
    daemon_bin = a.bin
    if a.cold:
        # The kernel maps a program's pages in blocks as large as the page cache holds them: a
        # binary just written (by strip, cp) sits there in large folios, one read back from disk
        # after a boot in small ones. A copy, synced and dropped from the cache, starts like the latter.
        daemon_bin = f"{tmp}/pocketmesh"
        shutil.copyfile(a.bin, daemon_bin)
        os.chmod(daemon_bin, 0o755)
        fd = os.open(daemon_bin, os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    cmd = ([a.qemu] if a.qemu else []) + [daemon_bin, "daemon", "--tcp", f"127.0.0.1:{base}", "--state-dir", f"{tmp}/state", "--socket", sock]
    if a.hook:
        Path(f"{tmp}/hook.sh").write_text("#!/bin/sh\ncat >/dev/null\n")
        os.chmod(f"{tmp}/hook.sh", 0o755)
        cmd += ["--on-message", f"{tmp}/hook.sh"]
    a.hub_port = free_base() if a.hub_clients else 0
    if a.hub_clients:
        cmd += ["--companion-listen", f"127.0.0.1:{a.hub_port}", "--companion-max-clients", str(a.hub_clients)]
    a.broker = None
    if a.mqtt:
        mport = free_base()
        Path(f"{tmp}/mosquitto.conf").write_text(f"listener {mport} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        a.broker = subprocess.Popen(["mosquitto", "-c", f"{tmp}/mosquitto.conf"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        a.mqtt_port = mport
        time.sleep(0.5)
        cmd += ["--mqtt", f"mqtt://127.0.0.1:{mport}", "--mqtt-observer", f"mqtt://127.0.0.1:{mport}", "--mqtt-iata", "BCH"]
    if a.as_limit:
        cmd = ["prlimit", f"--as={a.as_limit}", "--"] + cmd
    log = open(f"{tmp}/daemon.log", "w")
    d = subprocess.Popen(cmd, stdout=log, stderr=log)
    try:
        run(a, d, sock, base, tmp)
    finally:
        if d.poll() is None:
            d.send_signal(signal.SIGTERM)
            d.wait(10)
        peer.terminate()
        peer.wait(10)
        if a.broker:
            a.broker.terminate()
            a.broker.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


def run(a, d, sock, base, tmp):
    for _ in range(200):
        try:
            if call(sock, {"id": 1, "op": "status"})["state"] == "ready":
                break
        except OSError:
            pass
        time.sleep(0.1)
    samples = []
    stop = threading.Event()

    anon, file_backed = [], []

    def sample():
        while not stop.is_set():
            v = status_kb(d.pid, "VmRSS")
            if v:
                samples.append(v)
                anon.append(status_kb(d.pid, "RssAnon") or 0)
                file_backed.append(status_kb(d.pid, "RssFile") or 0)
            time.sleep(0.5)
    threading.Thread(target=sample, daemon=True).start()
    sub = MQTTCounter(a.mqtt_port) if a.mqtt else None
    hub = [HubClient(a.hub_port, f"bench{i}") for i in range(a.hub_clients)]
    for h in hub:
        threading.Thread(target=h.run, daemon=True).start()
    rss_idle = status_kb(d.pid, "VmRSS")
    idle_anon, idle_file = status_kb(d.pid, "RssAnon"), status_kb(d.pid, "RssFile")
    t0 = time.time()
    cpu0 = procstat.cpu_ns(d.pid)
    sent = asyncio.run(storm(base + 1, a.rate, a.seconds))
    time.sleep(3)
    call(sock, {"id": 2, "op": "sync"})
    time.sleep(3)
    for h in hub:
        h.wake()
    time.sleep(3)
    latency = {}
    if a.latency and hub:
        hs = hub[0].sock_for_rtt()
        via = [rtt(hs, b"\x05") for _ in range(a.latency)]
        direct_sock = open_direct(base + 1)
        direct = [rtt(direct_sock, b"\x05") for _ in range(a.latency)]
        latency = {"hub_median_ms": round(statistics.median(via) * 1000, 3),
                   "direct_median_ms": round(statistics.median(direct) * 1000, 3),
                   "ratio": round(statistics.median(via) / statistics.median(direct), 3),
                   "added_ms": round((statistics.median(via) - statistics.median(direct)) * 1000, 3)}
    st = call(sock, {"id": 3, "op": "status"})
    cpu1 = procstat.cpu_ns(d.pid)
    stop.set()
    hwm = status_kb(d.pid, "VmHWM")
    mappings = smaps(d.pid) if a.smaps else None
    vsz = status_kb(d.pid, "VmPeak")
    alive = d.poll() is None
    result = {
        "sent": sent, "stored": st.get("messages"), "seconds": round(time.time() - t0, 1), "rate_per_min": a.rate,
        "as_limit": a.as_limit, "hook": a.hook, "cold": a.cold, "peer": a.peer, "alive_at_end": alive,
        "rss_idle_kb": rss_idle, "rss_max_sampled_kb": max(samples) if samples else None, "vm_hwm_kb": hwm,
        "vm_peak_kb": vsz, "hook_cursor": st.get("hook_cursor"),
        "rss_anon_idle_kb": idle_anon, "rss_file_idle_kb": idle_file,
        "rss_anon_max_sampled_kb": max(anon) if anon else None, "rss_file_max_sampled_kb": max(file_backed) if file_backed else None,
        "cpu_start_ms": round(cpu0 / 1e6, 1), "cpu_storm_ms": round((cpu1 - cpu0) / 1e6, 1),
        "hub_clients_got": [len(h.texts) for h in hub], "hub_clients_unique": [len(set(h.texts)) for h in hub],
        **latency,
    }
    if mappings is not None:
        result["rss_by_mapping_kb"] = mappings
    if sub:
        bridge = (st.get("mqtt") or [{}])[0]
        observer = (st.get("mqtt_observer") or [{}])[0]
        result.update({"mqtt_messages": sub.messages, "mqtt_unique_ids": len(sub.ids), "mqtt_packets": sub.packets,
                       "mqtt_cursor": bridge.get("cursor"), "stored_to_published_median_ms": bridge.get("stored_to_published_ms"),
                       # The observer's own count (packets it was handed and published, QoS 0) and
                       # what it dropped: tells "none heard" from "lost on the way".
                       "observer_published": observer.get("published"), "observer_dropped": observer.get("dropped"),
                       "observer_connected": observer.get("connected")})
    print(json.dumps(result))


def smaps(pid):
    """RSS (kB) of each mapping of the process, named by path and permissions (the binary's code is
    its r-xp mapping, constant data r--p, .data/.bss rw-p), and of the anonymous ones by kind."""
    out, key = {}, None
    try:
        for line in open(f"/proc/{pid}/smaps"):
            first = line.split()
            if "-" in first[0] and len(first) >= 5 and ":" not in first[0]:
                name = first[5] if len(first) > 5 else "[anon]"
                key = f"{os.path.basename(name)} {first[1]}"
            elif first[0] == "Rss:" and key:
                out[key] = out.get(key, 0) + int(first[1])
    except OSError:
        return {}
    return {k: v for k, v in sorted(out.items(), key=lambda kv: -kv[1]) if v}


class MQTTCounter:
    """Counts bridge messages (and their distinct store ids) and observer packets on the broker."""

    def __init__(self, port):
        import paho.mqtt.client as mqtt
        self.messages, self.packets, self.ids = 0, 0, set()
        self.c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="storm-counter")
        self.c.on_connect = lambda c, u, f, rc, p=None: c.subscribe("meshcore/#", qos=1)
        self.c.on_message = self.on_message
        self.c.connect("127.0.0.1", port)
        self.c.loop_start()

    def on_message(self, c, u, m):
        if m.topic.startswith("meshcore/message/"):
            self.messages += 1
            self.ids.add(json.loads(m.payload)["id"])
        elif m.topic.endswith("/packets"):
            self.packets += 1


def frame(p):
    return b"<" + struct.pack("<H", len(p)) + p


def read_frame(s):
    hdr = b""
    while len(hdr) < 3:
        c = s.recv(3 - len(hdr))
        if not c:
            return None
        hdr += c
    n = struct.unpack("<H", hdr[1:3])[0]
    body = b""
    while len(body) < n:
        c = s.recv(n - len(body))
        if not c:
            return None
        body += c
    return body


def rtt(s, cmd):
    t = time.perf_counter()
    s.sendall(frame(cmd))
    while True:
        f = read_frame(s)
        if f is None or f[0] < 0x80:
            return time.perf_counter() - t


def open_direct(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(frame(b"\x16\x03"))
    read_frame(s)
    s.sendall(frame(b"\x01\x03" + b"\x00" * 6 + b"bench-direct"))
    read_frame(s)
    return s


class HubClient:
    """A raw companion client of the hub: drains on MSG_WAITING, keeps what it got."""

    def __init__(self, port, app):
        self.port, self.app, self.texts = port, app.encode(), []
        self.lock = threading.Lock()
        self.s = None
        self.idle = threading.Event()

    def run(self):
        self.s = socket.create_connection(("127.0.0.1", self.port))
        with self.lock:
            self.s.sendall(frame(b"\x16\x03"))
            read_frame(self.s)
            self.s.sendall(frame(b"\x01\x03" + b"\x00" * 6 + self.app))
            read_frame(self.s)
        while True:
            with self.lock:
                self.idle.clear()
                self.s.settimeout(0.5)
                try:
                    f = read_frame(self.s)
                except (socket.timeout, TimeoutError):
                    f = b""
                if f is None:
                    return
                if f == b"\x83" or f == b"":
                    self.drain()
            self.idle.set()
            time.sleep(0.01)

    def drain(self):
        self.s.settimeout(10)
        while True:
            self.s.sendall(frame(b"\x0a"))
            while True:
                f = read_frame(self.s)
                if f[0] < 0x80:
                    break
            if f[0] == 0x0A:
                return
            if b"storm-" in f:
                self.texts.append(f.split(b"storm-", 1)[1].decode())

    def wake(self):
        self.idle.wait(5)

    def sock_for_rtt(self):
        self.lock.acquire()  # the drain loop stops for the timing
        self.s.settimeout(10)
        return self.s


if __name__ == "__main__":
    main()
