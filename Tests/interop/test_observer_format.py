"""The observer uploader (`daemon --mqtt-observer`) against meshcore-packet-capture, the uploader the
community analyzers are built on: the same simulated air, and the same messages out.

fixtures/observer-meshcore-packet-capture.json holds what meshcore-packet-capture itself published
(recorded here once, with the setup in its `setup` and `recorded` keys; see `recorded.how`) for the
packets in its `air` list, heard by one simulated companion radio (`pocketmesh sim`, fixed seed and
topology) from two external nodes on the simulated air. This test puts the same packets on the
same air in the same order, runs PocketMesh's observer on the same radio, and compares every
message: topic, QoS, retain flag, and the JSON text byte for byte after setting aside only

  - `timestamp`, `time`, `date`: the wall clock when each message was made;
  - the status's `client_version`: names the uploader ("meshcore-packet-capture/dev-36d10df" against
    "pocketmesh/VERSION"), so it must differ;
  - the status's `stats.uptime_secs`: the simulated radio's seconds since it started, which
    depends on when each run connected;

and PocketMesh's own packet keys (`score`, `duration`: names the uploader does not use) after the
uploader's keys. How often a status goes out is not compared: the uploader publishes its first
`online` twice (at connect, then from its stats task 5 s later) and its clean stop's `offline`
twice (from its signal handler and from its main task); PocketMesh each once. The first of each
kind is compared.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh), POCKETMESH_VENV.
"""
import json
import os
import pathlib
import shutil
import socket
import struct
import subprocess
import threading
import time

import pytest

from test_daemon_faults import Daemon
from test_mqtt import free_port, wait_port
from test_sim_clients import Sim

paho = pytest.importorskip("paho.mqtt.client")

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))
FIXTURE = pathlib.Path(__file__).resolve().parent / "fixtures" / "observer-meshcore-packet-capture.json"
ENV = dict(os.environ, POCKETMESH_NO_DAEMON="1")

pytestmark = [
    pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)"),
    pytest.mark.skipif(shutil.which("mosquitto") is None, reason="needs mosquitto (scripts/setup.sh installs it)"),
]

CLOCK = ("timestamp", "time", "date")
OURS_ONLY = ("score", "duration")


def until(predicate, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        v = predicate()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


# --- the setup both recordings share ----------------------------------------------------------------

class Broker:
    """Mosquitto on 127.0.0.1, anonymous."""

    def __init__(self, tmp):
        self.port = free_port()
        conf = pathlib.Path(tmp) / f"mosquitto-{self.port}.conf"
        lines = [f"listener {self.port} 127.0.0.1", "persistence false", "allow_anonymous true"]
        if os.geteuid() == 0:
            lines.append("user root")
        conf.write_text("\n".join(lines) + "\n")
        self.log = open(pathlib.Path(tmp) / "mosquitto.log", "a")
        self.proc = subprocess.Popen(["mosquitto", "-c", str(conf)], stdout=self.log, stderr=self.log, start_new_session=True)
        wait_port(self.port)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


class Recorder:
    """Every message under meshcore/#, as published: an MQTT 5 subscription at QoS 2 with
    retain-as-published, so each message keeps its publisher's QoS and retain flag (a will too)."""

    def __init__(self, port):
        from paho.mqtt.subscribeoptions import SubscribeOptions
        self.messages = []
        self.lock = threading.Lock()
        self.c = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=f"recorder-{time.time_ns()}", protocol=paho.MQTTv5)
        opts = SubscribeOptions(qos=2, retainAsPublished=True)
        self.c.on_connect = lambda c, u, f, rc, p=None: c.subscribe("meshcore/#", options=opts)
        self.c.on_message = self._message
        self.subscribed = threading.Event()
        self.c.on_subscribe = lambda *a: self.subscribed.set()
        self.c.connect("127.0.0.1", port, keepalive=30)
        self.c.loop_start()
        assert self.subscribed.wait(10), "the recorder did not subscribe"

    def _message(self, c, u, m):
        with self.lock:
            self.messages.append({"topic": m.topic, "qos": m.qos, "retain": bool(m.retain), "payload": m.payload.decode()})

    def snapshot(self):
        with self.lock:
            return list(self.messages)

    def wait(self, predicate, seconds, what):
        return until(lambda: predicate(self.snapshot()) and self.snapshot(), seconds, what)

    def close(self):
        self.c.loop_stop()
        self.c.disconnect()


class AirNode:
    """An external node on the simulated air (`sim --air-port`): what it sends, the radio hears."""

    def __init__(self, port, name):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.s.sendall(self.frame(0x01, name.encode()))
        threading.Thread(target=self._drain, daemon=True).start()

    @staticmethod
    def frame(kind, body):
        return struct.pack("<H", len(body) + 1) + bytes([kind]) + body

    def _drain(self):
        try:
            while self.s.recv(4096):
                pass
        except OSError:
            pass

    def send(self, raw):
        self.s.sendall(self.frame(0x02, raw))

    def close(self):
        self.s.close()


def stats(port):
    cp = subprocess.run([str(BIN), "-t", f"127.0.0.1:{port}", "--timeout", "10", "--json", "stats"],
                        capture_output=True, text=True, timeout=60, env=ENV)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout)


class Air:
    """The simulated air of the fixture's setup: one companion radio, two external nodes."""

    def __init__(self, tmp, setup):
        tmp = pathlib.Path(tmp)
        topo = tmp / "observer-topology.json"
        topo.write_text(json.dumps(setup["topology"]))
        air_port = free_port()
        self.sim = Sim("--topology", str(topo), "--seed", str(setup["seed"]), "--air-port", str(air_port), nodes=1)
        self.name = setup["topology"]["nodes"][0]["name"]
        self.port = self.sim.port(self.name)
        self.key = self.sim.nodes[self.name]["pubkey"].upper()
        externals = [n["name"] for n in setup["topology"]["nodes"] if n["role"] == "external"]
        self.nodes = {n: AirNode(air_port, n) for n in externals}

    def warm_up(self, packets):
        """Before any observer: the radio hears these and floods its own advert, so that the
        stats in the first status are not all zero."""
        for p in packets:
            self.nodes[p["from"]].send(bytes.fromhex(p["raw"]))
        until(lambda: stats(self.port)["packets"]["received"] == len(packets), 60, "the warm-up packets")
        cp = subprocess.run([str(BIN), "-t", f"127.0.0.1:{self.port}", "--timeout", "10", "advert", "--flood"],
                            capture_output=True, text=True, timeout=60, env=ENV)
        assert cp.returncode == 0, cp.stderr
        until(lambda: stats(self.port)["packets"]["sent"] == 1, 60, "the radio's advert on the air")

    def play(self, packets, recorder, root):
        """Each packet in turn, once the one before it was published."""
        def published(msgs):
            return sum(1 for m in msgs if m["topic"] == root + "/packets")
        for i, p in enumerate(packets):
            self.nodes[p["from"]].send(bytes.fromhex(p["raw"]))
            recorder.wait(lambda g: published(g) >= i + 1, 60, f"packet {i} ({p.get('note', p['raw'][:16])}) published")

    def close(self):
        for n in self.nodes.values():
            n.close()
        self.sim.stop()


def record(tmp, setup, air_packets, warmup, start, stop_clean, stop_killed):
    """One run: warm up, start the observer (`start(air, broker_port)` → handle), wait for its
    first status, play the packets, stop it cleanly; then start it again and kill it for the will.
    Returns the messages recorded, in order."""
    broker = Broker(tmp)
    rec = Recorder(broker.port)
    air = Air(tmp, setup)
    root = f"meshcore/{setup['iata'].upper()}/{air.key}"
    try:
        air.warm_up(warmup)
        h = start(air, broker.port)
        rec.wait(lambda g: any(m["topic"] == root + "/status" and json.loads(m["payload"])["status"] == "online" for m in g),
                 60, "the first status")
        air.play(air_packets, rec, root)
        n = len(rec.snapshot())
        stop_clean(h)
        rec.wait(lambda g: any(json.loads(m["payload"])["status"] == "offline" for m in g[n:] if m["topic"] == root + "/status"),
                 30, "the offline status")
        n = len(rec.snapshot())
        h = start(air, broker.port)
        rec.wait(lambda g: any(m["topic"] == root + "/status" for m in g[n:]), 60, "the status of the second start")
        n = len(rec.snapshot())
        stop_killed(h)
        rec.wait(lambda g: any(m["topic"] == root + "/status" for m in g[n:]), 60, "the will")
        return rec.snapshot(), root, air.key
    finally:
        rec.close()
        air.close()
        broker.stop()


def runs(messages, root):
    """The messages of a recording by kind: the first online status, the packets in order, the
    clean stop's offline status, and the will (the last status, after the second start)."""
    status = [m for m in messages if m["topic"] == root + "/status"]
    packets = [m for m in messages if m["topic"] == root + "/packets"]
    others = [m for m in messages if m["topic"] not in (root + "/status", root + "/packets")]
    online = next(m for m in status if json.loads(m["payload"])["status"] == "online")
    offline = next(m for m in status if json.loads(m["payload"])["status"] == "offline")
    return {"online": online, "packets": packets, "offline": offline, "will": status[-1], "others": others}


# --- the comparison ----------------------------------------------------------------------------------

def ordered(text):
    return json.loads(text, object_pairs_hook=lambda pairs: pairs)


def set_aside(pairs, theirs, path=""):
    """`pairs` (ours) with the values that must differ taken from `theirs`, and our own keys
    dropped: then the uploader's text must come out of json.dumps byte for byte."""
    theirs = dict(theirs)
    out = []
    for k, v in pairs:
        where = f"{path}.{k}" if path else k
        if where in OURS_ONLY:
            continue
        if where in CLOCK or where in ("client_version", "stats.uptime_secs"):
            v = theirs.get(k, v)
        elif isinstance(v, list) and isinstance(theirs.get(k), list):
            v = dict(set_aside(v, theirs[k], where))
        out.append((k, v))
    return out


def same(ours, theirs, what):
    assert ours["topic"] == theirs["topic"], what
    assert (ours["qos"], ours["retain"]) == (theirs["qos"], theirs["retain"]), f"{what}: QoS and retain"
    # Our text is exactly what json.dumps writes for it (separators, escapes, number forms)...
    o = ordered(ours["payload"])
    assert json.dumps(json.loads(ours["payload"])) == ours["payload"], f"{what}: not json.dumps text"
    # ...our own keys come after all of the uploader's...
    keys = [k for k, _ in o]
    extra = [k for k in keys if k not in dict(ordered(theirs["payload"]))]
    assert set(extra) <= set(OURS_ONLY) and keys[len(keys) - len(extra):] == extra, f"{what}: extra keys {extra}"
    # ...and with the values that must differ set aside, it is the uploader's text.
    mine = json.dumps(dict(set_aside(o, ordered(theirs["payload"]))))
    assert mine == theirs["payload"], f"{what}:\n ours   {mine}\n theirs {theirs['payload']}"


@pytest.fixture(scope="module")
def fixture():
    return json.loads(FIXTURE.read_text())


def test_the_fixture_is_a_recording_of_the_uploader(fixture):
    rec = fixture["recorded"]
    assert rec["uploader"]["repository"] == "https://github.com/agessaman/meshcore-packet-capture"
    assert len(rec["uploader"]["commit"]) == 40 and rec["meshcore_py"] == "2.3.17"
    theirs = runs(fixture["messages"], fixture["root"])
    assert len(theirs["packets"]) == len(fixture["air"]) and not theirs["others"]
    assert json.loads(theirs["online"]["payload"])["client_version"].startswith("meshcore-packet-capture/")


def test_the_observer_publishes_what_meshcore_packet_capture_publishes(tmp_path, fixture):
    setup = fixture["setup"]

    def start(air, port):
        d = Daemon(str(tmp_path), air.port, hook=False,
                   extra=["--mqtt-observer", f"mqtt://127.0.0.1:{port}", "--mqtt-iata", setup["iata"]])
        return d

    def stop_clean(d):
        d.stop()

    def stop_killed(d):
        d.kill()

    messages, root, key = record(tmp_path, setup, fixture["air"], fixture["warmup"], start, stop_clean, stop_killed)
    assert root == fixture["root"]
    ours, theirs = runs(messages, root), runs(fixture["messages"], fixture["root"])
    assert not ours["others"], ours["others"]
    assert len(ours["packets"]) == len(theirs["packets"])
    for i, (o, t) in enumerate(zip(ours["packets"], theirs["packets"])):
        same(o, t, f"packet {i} ({fixture['air'][i].get('note', '')})")
    for kind in ("online", "offline", "will"):
        same(ours[kind], theirs[kind], kind)
    # What was set aside is there, in the same form.
    on = json.loads(ours["online"]["payload"])
    assert isinstance(on["stats"]["uptime_secs"], int) and on["client_version"].startswith("pocketmesh/")
