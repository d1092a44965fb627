#!/usr/bin/env python3
"""The storm, like with like: the same workload through pocketmesh's daemon and through the Python
stack, against the same simulated radio, in one run.

    bench/.venv-stack/bin/python bench/stack/storm.py [--bin dist/pocketmesh] [--runs 3]
        [--messages 1000] [--rate 1000] [--clients 8] [--side both|pocketmesh|python] [--json FILE]
        [--daemon-link serial|tcp] [--web]

(bench/stack/setup.sh makes bench/.venv-stack.) Each run starts `pocketmesh sim` (two companions,
500 kHz SF5 so that the storm fits on the air, offline queue 1,024), a Mosquitto broker on
loopback, then one side on sim0's serial port (the simulator's pseudo-terminal):

  pocketmesh   `pocketmesh daemon` from an installed copy of --bin (`install -m 755`, as a package
               install writes it), with its MQTT bridge and observer uploader on the broker and its
               companion hub: one listener per client (`app=benchN`, each its own message cursor);
  python       meshcore-proxy 0.5.0 sharing the radio among TCP clients, meshcore-mqtt (the bridge,
               QoS 1 like the daemon's) and meshcore-packet-capture (the observer uploader) as two
               of those clients;

and in both cases CLIENTS meshcore_py apps (bench/stack/client.py, one process each, fetching on
every MSG_WAITING). Once everything is up and has been idle for 3 s, meshcore_py on sim1 sends
MESSAGES channel messages at RATE per minute; the run ends when every client has every message, the
broker has every message from the bridge and at least MESSAGES observer packets (or after a bound).
With --web (pocketmesh side) the daemon also serves its web console (`--web 127.0.0.1:PORT`) and
headless Chromium (Tests/interop/harness/cdp.py) has the page open from before the storm to the end:
loaded, connected, subscribed (it shows the radio's name); the run also waits until the page has
received every message as a live event (counted in the page, over its WebSocket).

Measured per process, at the end (before anything is stopped):
  - CPU: the process's CPU-time clock (ns, all threads; bench/procstat.py), at "ready" and at the end:
    "start" is up to ready, "storm" is the difference (the work of MESSAGES messages);
  - memory: VmHWM (peak RSS), Pss at the end (shared pages divided among the processes: a sum over
    several Python processes counts libpython and the shared libraries once), RssAnon.
"service" is the daemon, or proxy + bridge + capture; the clients are the same program on both
sides and are reported apart (their CPU differs: through the proxy every client gets every reply the
radio sends to any client). Not counted on either side: the simulator, the broker, the sender and
this script. Each side runs --runs times, alternating; the tables give medians.
"""
import argparse
import asyncio
import json
import os
import re
import queue
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
import procstat  # noqa: E402

FAST_RADIO = ["869.525", "500", "5", "5"]
STORM = re.compile(rb"storm-(\d+)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def readline(proc, timeout):
    """The next line of proc's stdout within timeout seconds, or None (a thread reads it, so that
    lines already buffered are not missed)."""
    if not hasattr(proc, "lines"):
        proc.lines = queue.Queue()

        def pump():
            for line in proc.stdout:
                proc.lines.put(line)
            proc.lines.put(None)
        threading.Thread(target=pump, daemon=True).start()
    try:
        return proc.lines.get(timeout=timeout)
    except queue.Empty:
        return None


class Broker:
    """Mosquitto on loopback and a subscriber that counts what the uploaders publish."""

    def __init__(self, tmp):
        import paho.mqtt.client as mqtt
        self.port = free_port()
        conf = Path(tmp) / "mosquitto.conf"
        conf.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        self.proc = subprocess.Popen(["mosquitto", "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_port(self.port, 10):
            raise SystemExit("storm: mosquitto did not start")
        self.lock = threading.Lock()
        self.messages, self.unique, self.packets, self.status_topics = 0, set(), 0, set()
        self.c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="bench-counter")
        self.c.on_connect = lambda c, u, f, rc, p=None: c.subscribe("#", qos=1)
        self.c.on_message = self.on_message
        self.c.connect("127.0.0.1", self.port)
        self.c.loop_start()

    def on_message(self, c, u, m):
        with self.lock:
            if "/message/" in m.topic:
                found = STORM.search(m.payload)
                if found:
                    self.messages += 1
                    self.unique.add(found.group(1))
            elif m.topic.endswith("/packets"):
                self.packets += 1
            elif m.topic.endswith("status"):
                self.status_topics.add(m.topic)

    def stop(self):
        self.c.loop_stop()
        self.c.disconnect()
        self.proc.terminate()
        self.proc.wait(10)


async def send_storm(port, n, rate):
    from meshcore import MeshCore
    mc = await MeshCore.create_tcp("127.0.0.1", port)
    if mc is None:
        raise SystemExit("storm: the sender could not connect to sim1")
    gap = 60.0 / rate
    start = time.time()
    for i in range(n):
        await mc.commands.send_chan_msg(0, f"storm-{i}")
        delay = start + (i + 1) * gap - time.time()
        if delay > 0:
            await asyncio.sleep(delay)
    await mc.disconnect()


def daemon_call(sock, req, timeout=10):
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(sock)
        s.sendall((json.dumps(req) + "\n").encode())
        buf = b""
        while b"\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        return json.loads(buf.split(b"\n")[0])


def maps_rss(pid):
    """The process's resident kB per mapping (/proc/PID/smaps), summed by name and permissions
    ("[heap]", "pocketmesh r-xp", "anon rw-p" …): where the memory is."""
    out, key = {}, None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0] and len(parts) >= 5 and ":" not in parts[0]:
                key = f"{Path(parts[5]).name if len(parts) > 5 else 'anon'} {parts[1]}"
            elif parts[0] == "Rss:":
                out[key] = out.get(key, 0) + int(parts[1])
    return {k: v for k, v in sorted(out.items(), key=lambda kv: -kv[1]) if v}


class Run:
    def __init__(self, a, side):
        self.a, self.side = a, side
        self.tmp = tempfile.mkdtemp(prefix=f"pm-stack-{side}-")
        self.procs = []      # everything started, stopped at the end in reverse order
        self.service = []    # (name, Popen) measured as the service
        self.clients = []    # (name, Popen, count file)
        self.broker = None
        self.browser = None

    def start(self, cmd, **kw):
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", open(Path(self.tmp) / f"p{len(self.procs)}.log", "w"))
        p = subprocess.Popen(cmd, **kw)
        self.procs.append(p)
        return p

    def log(self, p):
        return Path(self.tmp, f"p{self.procs.index(p)}.log").read_text()[-2000:]

    def sim(self):
        a = self.a
        base = free_port()
        os.mkdir(f"{self.tmp}/pty")
        sim = self.start([a.sim_bin, "sim", "--nodes", "2", "--tcp-base", str(base), "--pty", f"{self.tmp}/pty",
                          "--offline-queue", "1024", "--for", str(a.messages * 60 // a.rate + 900)],
                         stdout=subprocess.PIPE, text=True)
        nodes = {}
        while len(nodes) < 2:
            line = readline(sim, 30)
            if not line:
                raise SystemExit(f"storm: the simulator did not start: {self.log(sim)}")
            m = re.match(r"node (\S+) pubkey=\S+ tcp=127\.0\.0\.1:(\d+)(?: pty=(\S+))?", line)
            if m:
                nodes[m.group(1)] = (int(m.group(2)), m.group(3))
        for name in ("sim0", "sim1"):
            subprocess.run([a.sim_bin, "set", "radio", *FAST_RADIO, "--tcp", f"127.0.0.1:{nodes[name][0]}"],
                           check=True, stdout=subprocess.DEVNULL, timeout=60)
        self.pty = nodes["sim0"][1]
        self.sim0_port = nodes["sim0"][0]
        self.sender_port = nodes["sim1"][0]
        if not self.pty:
            raise SystemExit("storm: the simulator gave sim0 no pty")

    def pocketmesh(self):
        a = self.a
        installed = Path(self.tmp) / "bin" / "pocketmesh"
        installed.parent.mkdir()
        subprocess.run(["install", "-m", "755", a.bin, str(installed)], check=True)
        if a.cold:
            # As after a reboot: the installed file written to disk and dropped from the page cache.
            fd = os.open(installed, os.O_RDONLY)
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        sock = f"{self.tmp}/d.sock"
        url = f"mqtt://127.0.0.1:{self.broker.port}"
        self.client_ports = [free_port() for _ in range(a.clients)]
        link = ["--serial", self.pty] if a.daemon_link == "serial" else ["--tcp", f"127.0.0.1:{self.sim0_port}"]
        cmd = ([a.qemu] if a.qemu else []) + [str(installed), "daemon", *link, "--state-dir", f"{self.tmp}/state", "--socket", sock,
               "--mqtt", url, "--mqtt-observer", url, "--mqtt-iata", "BCH"]
        if a.clients:
            cmd += ["--companion-max-clients", str(a.clients)]
        for i, p in enumerate(self.client_ports):
            cmd += ["--companion-listen", f"127.0.0.1:{p},app=bench{i}"]
        if a.web:
            self.web_port = free_port()
            cmd += ["--web", f"127.0.0.1:{self.web_port}"]
        d = self.start(cmd)
        self.service.append(("pocketmesh daemon", d))
        end = time.time() + (300 if a.qemu else 60)
        while time.time() < end:
            try:
                if daemon_call(sock, {"id": 1, "op": "status"}).get("state") == "ready":
                    break
            except (OSError, ValueError):
                pass
            if d.poll() is not None:
                raise SystemExit(f"storm: the daemon exited: {self.log(d)}")
            time.sleep(0.1)
        else:
            raise SystemExit("storm: the daemon did not get ready")
        self.sock = sock

    def python(self):
        a = self.a
        py = sys.executable
        venv_bin = Path(py).parent
        port = free_port()
        proxy = self.start([py, str(HERE / "proxy_on_pty.py"), "--serial", self.pty, "--host", "127.0.0.1",
                            "--port", str(port), "--log-level", "warning"])
        self.service.append(("meshcore-proxy", proxy))
        if not wait_port(port, 30):
            raise SystemExit("storm: meshcore-proxy did not listen")
        time.sleep(1)  # its radio link (the server listens first)
        bridge = self.start([str(venv_bin / "meshcore-mqtt"), "--mqtt-broker", "127.0.0.1", "--mqtt-port", str(self.broker.port),
                             "--mqtt-qos", "1", "--meshcore-connection", "tcp", "--meshcore-address", "127.0.0.1",
                             "--meshcore-port", str(port), "--log-level", "WARNING"])
        self.service.append(("meshcore-mqtt", bridge))
        env = dict(os.environ, PACKETCAPTURE_CONNECTION_TYPE="tcp", PACKETCAPTURE_TCP_HOST="127.0.0.1",
                   PACKETCAPTURE_TCP_PORT=str(port), PACKETCAPTURE_IATA="BCH", PACKETCAPTURE_MQTT1_ENABLED="true",
                   PACKETCAPTURE_MQTT1_SERVER="127.0.0.1", PACKETCAPTURE_MQTT1_PORT=str(self.broker.port),
                   PACKETCAPTURE_ADVERT_INTERVAL_HOURS="0", PACKETCAPTURE_DATA_DIR=f"{self.tmp}/capture",
                   PACKETCAPTURE_LOG_LEVEL="WARNING")
        capture = self.start([py, "-m", "meshcore_packet_capture"], env=env, cwd=self.tmp)
        self.service.append(("meshcore-packet-capture", capture))
        # Ready: both uploaders said so on the broker (their status topics).
        end = time.time() + 90
        while time.time() < end:
            with self.broker.lock:
                topics = set(self.broker.status_topics)
            if any(t.count("/") >= 3 for t in topics) and "meshcore/status" in topics:
                break
            for name, p in self.service:
                if p.poll() is not None:
                    raise SystemExit(f"storm: {name} exited: {self.log(p)}")
            time.sleep(0.2)
        else:
            raise SystemExit(f"storm: the uploaders did not announce themselves (status topics: {topics})")
        self.client_ports = [port] * a.clients

    def open_page(self):
        """The web console in headless Chromium, until it shows the radio and has subscribed; then a
        counter of the storm's messages that arrive over its WebSocket as `message` events."""
        sys.path.insert(0, str(REPO / "Tests" / "interop" / "harness"))
        from cdp import Chromium
        before = daemon_call(self.sock, {"id": 3, "op": "status"})["subscribers"]  # the page's subscription comes on top
        os.mkdir(f"{self.tmp}/chromium")
        self.browser = Chromium(f"{self.tmp}/chromium")
        self.page = self.browser.page()
        self.page.goto(f"http://127.0.0.1:{self.web_port}/", timeout=60)
        self.page.wait_js("document.getElementById('radio-name').textContent !== '' && S.up", timeout=60)
        self.page.wait_js(f"call('status').then(st => st.subscribers > {before})", timeout=30)
        self.page.js("window.storm = new Set(), S.ws.addEventListener('message', ev => { const m = JSON.parse(ev.data); "
                     "const t = m.event === 'message' && (m.message.text || '').match(/storm-(\\d+)/); if (t) window.storm.add(t[1]); }), true")

    def page_got(self):
        """How many of the storm's messages the page has had (None: no page; -1: it did not answer)."""
        if not self.browser:
            return None
        from cdp import CDPError
        try:
            return self.page.js("window.storm.size", timeout=10)
        except CDPError:
            self.page_silent = getattr(self, "page_silent", 0) + 1
            return -1

    def start_clients(self):
        for i, port in enumerate(self.client_ports):
            out = f"{self.tmp}/client{i}.json"
            p = self.start([sys.executable, str(HERE / "client.py"), "127.0.0.1", str(port), out, self.a.client_fetch],
                           stdout=subprocess.PIPE, text=True)
            if (readline(p, 60) or "").strip() != "ready":
                raise SystemExit(f"storm: client {i} did not connect")
            self.clients.append((f"client{i}", p, out))

    def counts(self):
        got = []
        for _, _, out in self.clients:
            try:
                got.append(json.loads(Path(out).read_text()))
            except (OSError, ValueError):
                got.append({"got": 0, "unique": 0})
        return got

    def delivered(self, since=None):
        """Everything everywhere; with `since`, notes (in self.done_at) when each part got there."""
        n = self.a.messages
        with self.broker.lock:
            parts = {"bridge": len(self.broker.unique) >= n, "observer": self.broker.packets >= n}
        parts.update({f"client{i}": c["unique"] >= n for i, c in enumerate(self.counts())})
        if self.browser:
            parts["page"] = self.page_got() >= n
        if since is not None:
            for k, ok in parts.items():
                if ok and k not in self.done_at:
                    self.done_at[k] = round(time.time() - since, 1)
        return all(parts.values())

    def measure(self, procs):
        out = []
        for name, p, *_ in procs:
            pids = procstat.descendants(p.pid)
            cpu = sum(procstat.cpu_ns(q) or 0 for q in pids)
            st = [procstat.status(q) for q in pids]
            out.append({"name": name, "pids": len(pids), "cpu_ns": cpu,
                        "vm_hwm_kb": sum(s.get("VmHWM", 0) for s in st),
                        "rss_kb": sum(s.get("VmRSS", 0) for s in st),
                        "rss_anon_kb": sum(s.get("RssAnon", 0) for s in st),
                        "rss_file_kb": sum(s.get("RssFile", 0) for s in st),
                        "pss_kb": sum(procstat.pss_kb(q) or 0 for q in pids)})
        return out

    def go(self):
        a = self.a
        try:
            self.broker = Broker(self.tmp)
            self.sim()
            getattr(self, self.side)()
            self.start_clients()
            if self.side == "pocketmesh" and a.web:
                self.open_page()
            time.sleep(3)
            ready_service, ready_clients = self.measure(self.service), self.measure(self.clients)
            t0 = time.time()
            asyncio.run(send_storm(self.sender_port, a.messages, a.rate))
            sent_at = time.time()
            end = sent_at + a.drain_timeout
            self.done_at = {}
            while time.time() < end and not self.delivered(since=sent_at):
                time.sleep(0.2)
            drained_s = time.time() - sent_at
            end_service, end_clients = self.measure(self.service), self.measure(self.clients)
            with self.broker.lock:
                broker = {"bridge_messages": self.broker.messages, "bridge_unique": len(self.broker.unique),
                          "observer_packets": self.broker.packets}
            result = {"side": self.side, "daemon_link": a.daemon_link if self.side == "pocketmesh" else "serial",
                      "messages": a.messages, "storm_s": round(sent_at - t0, 1),
                      "drain_after_last_send_s": round(drained_s, 1), "complete": self.delivered(),
                      "clients_got": self.counts(), "complete_after_last_send_s": self.done_at, **broker}
            if self.side == "pocketmesh":
                result["daemon_maps_kb"] = maps_rss(self.service[0][1].pid)
                st = daemon_call(self.sock, {"id": 2, "op": "status"})
                result["daemon_stored"] = st.get("messages")
                if self.browser:
                    result["page_got"] = self.page_got()
                    result["page_chat_messages"] = self.page.js("Math.max(0, ...S.chats.map(c => c.messages))")
                    result["page_errors"] = self.page.errors(ignore=("tile.openstreetmap.org",))
            for kind, ready, final in (("service", ready_service, end_service), ("clients", ready_clients, end_clients)):
                result[kind] = [{**f, "start_cpu_ns": r["cpu_ns"], "storm_cpu_ns": f["cpu_ns"] - r["cpu_ns"],
                                 "ready_vm_hwm_kb": r["vm_hwm_kb"], "ready_rss_kb": r["rss_kb"],
                                 "ready_rss_anon_kb": r["rss_anon_kb"], "ready_rss_file_kb": r["rss_file_kb"]}
                                for r, f in zip(ready, final)]
            return result
        finally:
            self.stop()

    def stop(self):
        if self.browser:
            self.browser.close()
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        if self.broker:
            self.broker.stop()
        if not self.a.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)


def summary(r):
    s = {}
    for kind in ("service", "clients"):
        rows = r[kind]
        s[kind] = {"storm_cpu_ms": sum(x["storm_cpu_ns"] for x in rows) / 1e6,
                   "start_cpu_ms": sum(x["start_cpu_ns"] for x in rows) / 1e6,
                   "vm_hwm_kb": sum(x["vm_hwm_kb"] for x in rows),
                   "pss_kb": sum(x["pss_kb"] for x in rows),
                   "rss_anon_kb": sum(x["rss_anon_kb"] for x in rows)}
    return s


def med(runs, kind, key):
    return statistics.median(summary(r)[kind][key] for r in runs)


def report(results, a):
    sides = [s for s in ("pocketmesh", "python") if results.get(s)]
    n = a.messages
    print(f"\n{n:,} channel messages at {a.rate}/min, {a.clients} meshcore_py clients; medians of "
          f"{', '.join(f'{len(results[s])} {s}' for s in sides)} runs; machine: {os.uname().machine}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at the end\n")
    for s in sides:
        for r in results[s]:
            print(f"  {s}: complete={r['complete']} bridge {r['bridge_unique']}/{n} observer packets {r['observer_packets']} "
                  f"clients {[c['unique'] for c in r['clients_got']]} drain {r['drain_after_last_send_s']} s"
                  + (f" stored {r.get('daemon_stored')}" if s == "pocketmesh" else "")
                  + (f" page got {r['page_got']} (chat {r['page_chat_messages']}, errors {r['page_errors']})" if "page_got" in r else ""))
    rows = [("service: CPU through the storm (ms)", "service", "storm_cpu_ms", 1),
            ("service: CPU per message (µs)", "service", "storm_cpu_ms", 1000 / n),
            ("service: CPU to start (ms)", "service", "start_cpu_ms", 1),
            ("service: peak RSS, VmHWM summed (kB)", "service", "vm_hwm_kb", 1),
            ("service: Pss at the end, summed (kB)", "service", "pss_kb", 1),
            ("service: own memory, RssAnon summed (kB)", "service", "rss_anon_kb", 1),
            ("clients: CPU through the storm (ms)", "clients", "storm_cpu_ms", 1),
            ("clients: peak RSS, VmHWM summed (kB)", "clients", "vm_hwm_kb", 1),
            ("clients: Pss at the end, summed (kB)", "clients", "pss_kb", 1)]
    print("\n| | " + " | ".join(sides) + (" | pocketmesh / python |" if len(sides) == 2 else " |"))
    print("|---|" + "---|" * (len(sides) + (1 if len(sides) == 2 else 0)))
    for label, kind, key, scale in rows:
        vals = [med(results[s], kind, key) * scale for s in sides]
        cells = [f"{v:,.0f}" if v >= 100 else f"{v:,.1f}" for v in vals]
        ratio = ""
        if len(vals) == 2 and vals[1]:
            ratio = f" | {vals[0] / vals[1]:.3f} (1/{vals[1] / vals[0]:.1f})" if vals[0] else " | 0"
        print(f"| {label} | " + " | ".join(cells) + ratio + " |")
    for s in sides:
        per = {}
        for r in results[s]:
            for x in r["service"]:
                per.setdefault(x["name"], []).append(x)
        print(f"\n{s}, per service process (medians): " + "; ".join(
            f"{name}: storm CPU {statistics.median(x['storm_cpu_ns'] for x in xs) / 1e6:,.0f} ms, "
            f"VmHWM {statistics.median(x['vm_hwm_kb'] for x in xs):,.0f} kB, "
            f"Pss {statistics.median(x['pss_kb'] for x in xs):,.0f} kB"
            for name, xs in per.items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=str(REPO / "dist" / "pocketmesh"))
    ap.add_argument("--sim-bin", default="", help="the pocketmesh that runs the simulator (default: --bin)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--messages", type=int, default=1000)
    ap.add_argument("--rate", type=int, default=1000, help="messages per minute")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--client-fetch", choices=["auto", "nopause"], default="auto",
                    help="auto: meshcore_py's start_auto_message_fetching (waits 0.1 s after each message); "
                         "nopause: the client's own GET_MSG loop without that wait")
    ap.add_argument("--side", choices=["both", "pocketmesh", "python"], default="both")
    ap.add_argument("--drain-timeout", type=float, default=120, help="seconds after the last send to wait for delivery")
    ap.add_argument("--json", default="")
    ap.add_argument("--keep", action="store_true", help="keep each run's folder (logs) in /tmp")
    ap.add_argument("--cold", action="store_true",
                    help="the daemon's installed copy dropped from the page cache before it starts (as after a reboot)")
    ap.add_argument("--daemon-link", choices=["serial", "tcp"], default="serial",
                    help="the daemon's link to sim0: its serial port (a pty, as meshcore-proxy's; default) or its TCP port")
    ap.add_argument("--web", action="store_true",
                    help="pocketmesh side: the daemon serves its web console, open in headless Chromium through the storm")
    ap.add_argument("--qemu", default="", help="run the daemon under this qemu-user (an aarch64 --bin on x86_64)")
    a = ap.parse_args()
    a.bin = str(Path(a.bin).resolve())
    a.sim_bin = str(Path(a.sim_bin).resolve()) if a.sim_bin else a.bin
    if not os.access(a.bin, os.X_OK):
        raise SystemExit(f"storm: {a.bin} missing: bash scripts/release.sh first (or --bin)")
    try:
        import meshcore_proxy, meshcore_mqtt, meshcore_packet_capture  # noqa: F401
    except ImportError as e:
        if a.side != "pocketmesh":
            raise SystemExit(f"storm: {e.name} missing: run this with bench/.venv-stack/bin/python (bench/stack/setup.sh)")
    if a.web:
        sys.path.insert(0, str(REPO / "Tests" / "interop" / "harness"))
        from cdp import chromium_path
        if not chromium_path():
            raise SystemExit("storm: --web needs Chromium (apt-get install chromium)")
    sides = ["pocketmesh", "python"] if a.side == "both" else [a.side]
    results = {s: [] for s in sides}
    for i in range(a.runs):
        for s in sides:
            print(f"run {i + 1}/{a.runs}: {s} (load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
            results[s].append(Run(a, s).go())
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    report(results, a)


if __name__ == "__main__":
    main()
