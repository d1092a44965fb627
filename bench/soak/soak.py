#!/usr/bin/env python3
"""Soak test: a daemon on the built-in simulator, a message storm and random faults.

`pocketmesh sim` runs two companions (sim0, sim1) one hop apart. `pocketmesh daemon` owns sim0
through a TCP proxy (so the link can be cut), with a hook on every message. meshcore_py on sim1
sends RATE channel messages per minute for MINUTES, each with a unique text. Every FAULT_EVERY
seconds (jittered) one fault, chosen at random (seeded):
  link_cut   the proxy drops the daemon's connection and refuses it for a few seconds
  reboot     the radio reboots (the API op `reboot`; its RAM queue is lost, as on a real radio)
  sigkill    the daemon is killed with SIGKILL and started again
  sigterm    the daemon is stopped with SIGTERM and started again
  disk_full  the state folder's file system fills up for a few seconds (a small tmpfs; skipped
             when tmpfs cannot be mounted)
At the end it waits for the daemon to drain, then checks the store and the hook's log: each text
once, and which texts are missing, split into those sent while the radio was rebooting (the
firmware loses those) and any other (should be none; at most one per SIGKILL may be the frame in
flight). It samples the daemon's RSS every second and prints a JSON summary.

    python bench/soak/soak.py --bin dist/pocketmesh --minutes 30 --rate 1000
"""
import argparse
import asyncio
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "daemon"))
from storm import status_kb  # noqa: E402  (the storm benchmark's /proc reader)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CuttableProxy:
    """Loopback TCP proxy: `cut(seconds)` drops every connection and refuses new ones for a while."""

    def __init__(self, target_port):
        self.target = target_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.port = self.listener.getsockname()[1]
        self.refuse_until = 0.0
        self.pairs = []
        self.lock = threading.Lock()
        self.stopped = False
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while not self.stopped:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return
            if time.time() < self.refuse_until:
                c.close()
                continue
            try:
                u = socket.create_connection(("127.0.0.1", self.target), timeout=5)
            except OSError:
                c.close()
                continue
            with self.lock:
                self.pairs.append((c, u))
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self.pump, args=(a, b), daemon=True).start()

    @staticmethod
    def pump(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self, seconds):
        self.refuse_until = time.time() + seconds
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for c, u in pairs:
            for s in (c, u):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                    s.close()
                except OSError:
                    pass

    def stop(self):
        self.stopped = True
        self.listener.close()
        self.cut(0)


class Daemon:
    def __init__(self, bin, tmp, port, state):
        self.bin, self.tmp, self.port, self.state = bin, tmp, port, state
        self.sock = f"{tmp}/d.sock"
        self.hook_out = f"{tmp}/hook.txt"
        self.hook = f"{tmp}/hook.sh"
        Path(self.hook).write_text('#!/bin/sh\nread -r json\nprintf "%s|%s\\n" "$POCKETMESH_ID" "$POCKETMESH_TEXT" >> "$HOOK_OUT"\n')
        os.chmod(self.hook, 0o755)
        self.log = open(f"{tmp}/daemon.log", "a")
        self.proc = None
        self.starts = 0

    def start(self):
        env = dict(os.environ, HOOK_OUT=self.hook_out, XDG_RUNTIME_DIR=self.tmp)
        env.pop("NOTIFY_SOCKET", None)
        self.proc = subprocess.Popen([self.bin, "daemon", "--tcp", f"127.0.0.1:{self.port}", "--state-dir", self.state,
                                      "--socket", self.sock, "--on-message", self.hook, "--drain-interval", "5"],
                                     stdout=self.log, stderr=self.log, env=env)
        self.starts += 1

    def call(self, req, timeout=10):
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(timeout)
            s.connect(self.sock)
            s.sendall((json.dumps(req) + "\n").encode())
            buf = b""
            while b"\n" not in buf:
                d = s.recv(65536)
                if not d:
                    break
                buf += d
            return json.loads(buf.split(b"\n")[0])

    def ready(self, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            try:
                if self.call({"id": 1, "op": "status"}, timeout=2).get("state") == "ready":
                    return True
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        return False

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


async def storm(port, rate, seconds, sent, stop):
    from meshcore import MeshCore
    mc = None
    gap = 60.0 / rate
    start = time.time()
    i = 0
    while time.time() - start < seconds and not stop.is_set():
        try:
            if mc is None:
                mc = await MeshCore.create_tcp("127.0.0.1", port)
            text = f"soak-{i}"
            r = await mc.commands.send_chan_msg(0, text)
            if r is not None and getattr(r, "type", None) is not None and "ERROR" not in str(r.type):
                sent.append((text, time.time()))
            i += 1
        except Exception:
            mc = None
            await asyncio.sleep(1)
        delay = start + i * gap - time.time()
        if delay > 0:
            await asyncio.sleep(delay)
    if mc is not None:
        await mc.disconnect()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(REPO / "dist" / "pocketmesh"))
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--rate", type=int, default=1000, help="messages per minute")
    ap.add_argument("--fault-every", type=float, default=30, help="seconds between faults (jittered)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    tmp = tempfile.mkdtemp(prefix="pm-soak-")
    state = f"{tmp}/state"
    os.makedirs(state)
    tmpfs = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", state], capture_output=True).returncode == 0
    base = free_port()
    sim = subprocess.Popen([a.bin, "sim", "--nodes", "2", "--repeaters", "0", "--tcp-base", str(base), "--offline-queue", "1024",
                            "--for", str(int(a.minutes * 60 + 600))], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    ports = {}
    while len(ports) < 2:
        m = re.match(r"node (\S+) pubkey=\S+ tcp=127\.0\.0\.1:(\d+)", sim.stdout.readline())
        if m:
            ports[m[1]] = int(m[2])
    proxy = CuttableProxy(ports["sim0"])
    d = Daemon(a.bin, tmp, proxy.port, state)
    d.start()
    assert d.ready(), Path(f"{tmp}/daemon.log").read_text()[-2000:]
    # The default LoRa settings carry a few messages a second; the storm needs the fastest
    # (500 kHz, SF5) on both radios so that RATE messages per minute fit on the air.
    fast = ["869.525", "500", "5", "5"]
    subprocess.run([a.bin, "set", "radio", *fast, "--tcp", f"127.0.0.1:{ports['sim1']}"],
                   env=dict(os.environ, POCKETMESH_NO_DAEMON="1"), check=True, capture_output=True)
    r = d.call({"id": 3, "op": "set", "setting": "radio", "values": fast}, timeout=30)
    assert r.get("ok"), r
    sent, stop = [], threading.Event()
    seconds = a.minutes * 60
    sender = threading.Thread(target=lambda: asyncio.run(storm(ports["sim1"], a.rate, seconds, sent, stop)), daemon=True)
    sender.start()
    faults = {"link_cut": 0, "reboot": 0, "sigkill": 0, "sigterm": 0, "disk_full": 0}
    radio_down = []  # (from, to) windows in which the radio was off
    fault_log = []
    rss = []
    kinds = list(faults) if tmpfs else [k for k in faults if k != "disk_full"]
    t0 = time.time()
    next_fault = t0 + a.fault_every * rng.uniform(0.5, 1.5)
    while time.time() - t0 < seconds:
        time.sleep(1)
        if d.proc.poll() is None:
            v = status_kb(d.proc.pid, "VmRSS")
            if v:
                rss.append((round(time.time() - t0), v, d.starts))
        if time.time() < next_fault:
            continue
        kind = rng.choice(kinds)
        faults[kind] += 1
        fault_log.append((round(time.time() - t0, 1), kind))
        if kind == "link_cut":
            proxy.cut(rng.uniform(1, 5))
        elif kind == "reboot":
            start = time.time()
            try:
                d.call({"id": 9, "op": "reboot"}, timeout=20)
            except (OSError, ValueError):
                pass
            d.ready(60)
            radio_down.append((start - 1, time.time() + 2))
        elif kind in ("sigkill", "sigterm"):
            d.stop(signal.SIGKILL if kind == "sigkill" else signal.SIGTERM)
            time.sleep(rng.uniform(0.2, 2))
            d.start()
            d.ready(60)
        elif kind == "disk_full":
            filler = f"{state}/filler"
            subprocess.run(["fallocate", "-l", "64M", filler], capture_output=True)
            subprocess.run(["dd", "if=/dev/zero", f"of={filler}.2", "bs=64k"], capture_output=True)
            time.sleep(rng.uniform(2, 6))
            for f in (filler, filler + ".2"):
                try:
                    os.unlink(f)
                except OSError:
                    pass
        next_fault = time.time() + a.fault_every * rng.uniform(0.5, 1.5)
    stop.set()
    sender.join(60)
    # Let the daemon drain and the hooks catch up.
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            st = d.call({"id": 2, "op": "status"})
            if st.get("hooks_running", 0) == 0 and st.get("hook_cursor", 0) >= st.get("messages", 0) - 0:
                break
        except (OSError, ValueError):
            pass
        time.sleep(2)
    time.sleep(5)
    hist = subprocess.run([a.bin, "history", "Public", "--state-dir", state, "--json", "--limit", "100000"],
                          capture_output=True, text=True)
    stored = [m["text"].split(": ", 1)[-1] for m in json.loads(hist.stdout)["messages"] if m.get("direction", "in") != "out"]
    hooked = [l.split("|", 1)[1].split(": ", 1)[-1] for l in Path(d.hook_out).read_text().splitlines()] if Path(d.hook_out).exists() else []
    d.stop()
    proxy.stop()
    sim.send_signal(signal.SIGTERM)
    sim.wait(10)
    if tmpfs:
        for _ in range(10):
            if subprocess.run(["umount", state], capture_output=True).returncode == 0:
                break
            time.sleep(1)
    sent_texts = {t: at for t, at in sent}
    stored_set = set(stored)
    missing = [t for t in sent_texts if t not in stored_set]
    in_reboot = [t for t in missing if any(a_ <= sent_texts[t] <= b for a_, b in radio_down)]
    first = [v for s, v, n in rss if s < 300]
    last = [v for s, v, n in rss if s > seconds - 300]
    med = lambda xs: sorted(xs)[len(xs) // 2] if xs else None
    print(json.dumps({
        "minutes": a.minutes, "rate_per_min": a.rate, "seed": a.seed, "faults": faults, "daemon_starts": d.starts,
        "disk_full_tested": tmpfs,
        "sent": len(sent_texts), "stored": len(stored), "stored_unique": len(stored_set),
        "stored_twice": len(stored) - len(stored_set),
        "missing": len(missing), "missing_sent_while_radio_rebooting": len(in_reboot),
        "missing_other": len(missing) - len(in_reboot),
        "hook_runs": len(hooked), "hook_runs_unique": len(set(hooked)), "hook_runs_twice": len(hooked) - len(set(hooked)),
        "stored_without_hook": len(stored_set - set(hooked)),
        "rss_kb_median_first_5min": med(first), "rss_kb_median_last_5min": med(last), "rss_kb_max": max((v for _, v, _ in rss), default=None),
        "fault_log": fault_log,
        "missing_texts": [(t, round(sent_texts[t] - t0, 1)) for t in missing[:20]],
        "work": tmp,
    }, indent=1))


if __name__ == "__main__":
    main()
