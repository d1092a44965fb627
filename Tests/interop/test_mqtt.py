"""The daemon's MQTT bridge against a real broker on loopback: Mosquitto (Debian's package),
started by these tests; the radio is `pocketmesh sim` (the observer also on an openhop-core node).

Checked: every received message reaches the broker (each with its store id) across broker restarts
and a SIGKILLed daemon; commands on PREFIX/command/{op} are executed and answered; status is
retained and the will fires for a killed daemon; a wrong password is one log line and retries.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh), POCKETMESH_VENV.
"""
import json
import os
import pathlib
import shutil
import socket
import subprocess
import threading
import time

import pytest

import conftest

from test_daemon_faults import Daemon, Mesh, start_sender
from test_sim_clients import Sim

paho = pytest.importorskip("paho.mqtt.client")

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))
VENV = pathlib.Path(os.environ.get("POCKETMESH_VENV", REPO / ".venv-interop"))
ENV = dict(os.environ, POCKETMESH_NO_DAEMON="1")

pytestmark = [
    pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)"),
    pytest.mark.skipif(shutil.which("mosquitto") is None, reason="needs mosquitto (scripts/setup.sh installs it)"),
]


def free_port():
    return conftest.free_ports(1)


def wait_port(port, seconds=15):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


class Mosquitto:
    """A Mosquitto broker on 127.0.0.1 with its own config; restartable on the same port."""

    def __init__(self, tmp, users=None, tls=None):
        """`tls`: (ca, cert, key) files for a second listener, on `self.tls_port`, that speaks TLS."""
        self.tmp = pathlib.Path(tmp)
        self.port = free_port()
        lines = [f"listener {self.port} 127.0.0.1", "persistence false"]
        if tls:
            self.tls_port = free_port()
            lines += [f"listener {self.tls_port} 127.0.0.1", f"cafile {tls[0]}", f"certfile {tls[1]}", f"keyfile {tls[2]}"]
        if os.geteuid() == 0:
            lines.append("user root")  # else it switches to the user "mosquitto", who cannot read the test's files
        if users:
            pw = self.tmp / "mosquitto.passwd"
            pw.write_text("")
            for user, password in users.items():
                subprocess.run(["mosquitto_passwd", "-b", str(pw), user, password], check=True, capture_output=True)
            pw.chmod(0o600)
            lines += ["allow_anonymous false", f"password_file {pw}"]
        else:
            lines.append("allow_anonymous true")
        self.conf = self.tmp / f"mosquitto-{self.port}.conf"
        self.conf.write_text("\n".join(lines) + "\n")
        self.log = open(self.tmp / "mosquitto.log", "a")
        self.proc = None
        self.start()

    def start(self):
        self.proc = subprocess.Popen(["mosquitto", "-c", str(self.conf)], stdout=self.log, stderr=self.log, start_new_session=True)
        wait_port(self.port)
        if hasattr(self, "tls_port"):
            wait_port(self.tls_port)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


class Listener:
    """A paho subscriber collecting (topic, payload, retain) tuples."""

    def __init__(self, port, topic="#", user=None, password=None):
        self.messages = []
        self.lock = threading.Lock()
        self.c = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=f"test-{time.time_ns()}")
        if user:
            self.c.username_pw_set(user, password)
        self.topic = topic
        self.c.on_connect = lambda c, u, f, rc, p=None: c.subscribe(self.topic, qos=1)
        self.c.on_message = self._message
        self.c.connect("127.0.0.1", port, keepalive=30)
        self.c.loop_start()

    def _message(self, c, u, m):
        with self.lock:
            self.messages.append((m.topic, m.payload, m.retain))

    def snapshot(self):
        with self.lock:
            return list(self.messages)

    def wait(self, predicate, seconds=30, what="the expected messages"):
        deadline = time.time() + seconds
        while time.time() < deadline:
            got = self.snapshot()
            if predicate(got):
                return got
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; got {self.snapshot()[-20:]}")

    def publish(self, topic, payload, qos=1):
        self.c.publish(topic, payload, qos=qos).wait_for_publish(10)

    def close(self):
        self.c.loop_stop()
        self.c.disconnect()


def at(sim, *args, node="sim1"):
    cp = subprocess.run([str(BIN), "-t", f"127.0.0.1:{sim.port(node)}", "--timeout", "10", *args],
                        capture_output=True, text=True, timeout=90, env=ENV)
    return cp.returncode, cp.stdout, cp.stderr


def befriend(sim):
    """sim0 and sim1 know each other (adverts exchanged)."""
    for n in ("sim0", "sim1"):
        assert at(sim, "advert", "--flood", node=n)[0] == 0
    deadline = time.time() + 20
    while time.time() < deadline:
        if "sim1" in at(sim, "contacts", node="sim0")[1] and "sim0" in at(sim, "contacts", node="sim1")[1]:
            return
        time.sleep(0.3)
    raise AssertionError("the sim nodes did not learn each other")


def messages(got, prefix="meshcore"):
    out = []
    for topic, payload, _ in got:
        if topic.startswith(prefix + "/message/"):
            out.append((topic, json.loads(payload)))
    return out


def log_text(tmp):
    return (pathlib.Path(tmp) / "daemon.log").read_text(errors="replace")


def wait_log(tmp, text, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if text in log_text(tmp):
            return
        time.sleep(0.1)
    raise AssertionError(f"{text!r} not in the daemon's log:\n{log_text(tmp)[-3000:]}")


@pytest.fixture
def sim():
    s = Sim("--seed", "5", nodes=2)
    befriend(s)
    yield s
    s.stop()


def test_bridge_publishes_messages_and_events_and_answers_commands(tmp_path, sim):
    broker = Mosquitto(tmp_path)
    watch = Listener(broker.port)
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False, extra=["--mqtt", f"mqtt://127.0.0.1:{broker.port}", "--mqtt-prefix", "pm"])
    try:
        watch.wait(lambda g: ("pm/status", b"online", False) in g or any(t == "pm/status" and p == b"online" for t, p, _ in g), what="status online")
        # A late subscriber sees the retained status.
        late = Listener(broker.port, topic="pm/status")
        late.wait(lambda g: any(p == b"online" and r for _, p, r in g), what="retained online")
        late.close()
        key0, key1 = sim.nodes["sim0"]["pubkey"], sim.nodes["sim1"]["pubkey"]
        assert at(sim, "send", "sim0", "hello over mqtt")[0] == 0
        assert at(sim, "channel", "send", "0", "channel hello")[0] == 0
        got = watch.wait(lambda g: len(messages(g, "pm")) >= 2, what="two messages")
        by_topic = dict(messages(got, "pm"))
        direct = by_topic[f"pm/message/direct/{key1[:12]}"]
        assert direct["text"] == "hello over mqtt" and direct["kind"] == "direct" and direct["event"] == "message" and direct["id"] > 0
        chan = by_topic["pm/message/channel/0"]
        assert chan["text"] == "channel hello" and chan["from"] == "sim1" and chan["id"] > direct["id"]

        # A command: send through the outbox, answered with the request's id.
        watch.publish("pm/command/send", json.dumps({"id": 41, "to": "sim1", "text": "from the broker"}))
        got = watch.wait(lambda g: any(t == "pm/command/send/result" for t, _, _ in g), what="the send result")
        res = [json.loads(p) for t, p, _ in got if t == "pm/command/send/result"][0]
        assert res["id"] == 41 and res["ok"] is True, res
        # Its delivery states follow on pm/delivery.
        watch.wait(lambda g: any(t == "pm/delivery" and json.loads(p).get("status") == "acked" for t, p, _ in g), what="delivery acked")
        # Other ops; a bad one is answered with an error, not dropped.
        watch.publish("pm/command/status", json.dumps({"id": 42}))
        watch.publish("pm/command/advert", json.dumps({"id": 44}))
        watch.publish("pm/command/nonsense", json.dumps({"id": 43}))
        watch.publish("pm/command/send", b"{not json")
        got = watch.wait(lambda g: sum(1 for t, _, _ in g if t.endswith("/result")) >= 5, what="four more results")
        results = {t: json.loads(p) for t, p, _ in got if t.endswith("/result")}
        assert results["pm/command/status/result"]["id"] == 42 and results["pm/command/status/result"]["ok"]
        # advert is a config operation: not among the bridge's default classes (read, message).
        assert results["pm/command/advert/result"]["error"]["code"] == "denied", results
        assert results["pm/command/nonsense/result"]["id"] == 43 and not results["pm/command/nonsense/result"]["ok"]
        # An advert from sim1 appears on pm/advert.
        assert at(sim, "advert", "--flood")[0] == 0
        watch.wait(lambda g: any(t == "pm/advert" and json.loads(p)["public_key"] == key1 for t, p, _ in g), what="advert")
        # The daemon's status names the bridge.
        st = d.call({"id": 1, "op": "status"})
        assert st["mqtt"][0]["connected"] is True and st["mqtt"][0]["cursor"] >= chan["id"]
        # A clean stop leaves "offline" retained.
        d.stop()
        late = Listener(broker.port, topic="pm/status")
        late.wait(lambda g: any(p == b"offline" and r for _, p, r in g), what="retained offline after a clean stop")
        late.close()
    finally:
        d.stop()
        watch.close()
        broker.stop()


def test_every_message_arrives_across_broker_restarts_and_a_killed_daemon(tmp_path, sim):
    broker = Mosquitto(tmp_path)
    url = f"mqtt://127.0.0.1:{broker.port}"
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False, extra=["--mqtt", url])
    watch = Listener(broker.port)
    sent = []

    def send(n):
        for _ in range(n):
            text = f"m{len(sent)}"
            code, out, err = at(sim, "channel", "send", "0", text)
            assert code == 0, err
            sent.append(text)

    try:
        watch.wait(lambda g: any(t == "meshcore/status" and p == b"online" for t, p, _ in g), what="online")
        send(3)
        watch.wait(lambda g: len(messages(g)) >= 3, what="the first three")
        # The broker goes away; messages keep arriving at the radio and the store.
        watch.close()
        broker.stop()
        send(4)
        time.sleep(1)
        broker.start()
        watch = Listener(broker.port)
        watch.wait(lambda g: {m["text"] for _, m in messages(g)} >= set(sent[3:]), seconds=90, what="the messages stored while the broker was away")
        # The daemon is killed; the broker publishes its will.
        d.kill()
        watch.wait(lambda g: any(t == "meshcore/status" and p == b"offline" for t, p, _ in g), seconds=120, what="the will")
        send(3)
        d = Daemon(str(tmp_path), sim.port("sim0"), hook=False, extra=["--mqtt", url])
        got = watch.wait(lambda g: {m["text"] for _, m in messages(g)} >= set(sent[7:]), seconds=60, what="the messages after the restart")
        # Every message that reached this subscriber carries a store id; ids and texts agree.
        ids = {}
        for _, m in messages(got):
            assert ids.setdefault(m["id"], m["text"]) == m["text"]
        # The cursor reaches the last one once its PUBACK is in.
        deadline = time.time() + 10
        while d.call({"id": 2, "op": "status"})["mqtt"][0]["cursor"] != max(ids) and time.time() < deadline:
            time.sleep(0.1)
        assert d.call({"id": 3, "op": "status"})["mqtt"][0]["cursor"] == max(ids), ids
    finally:
        d.stop()
        watch.close()
        broker.stop()


def test_wrong_password_is_one_log_line_and_retries(tmp_path, sim):
    broker = Mosquitto(tmp_path, users={"radio": "right-password"})
    pw = tmp_path / "mqtt.pass"
    pw.write_text("wrong-password\n")
    pw.chmod(0o600)
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False,
               extra=["--mqtt", f"mqtt://127.0.0.1:{broker.port}", "--mqtt-user", "radio", "--mqtt-password-file", str(pw)])
    try:
        wait_log(tmp_path, "refused the connection")
        time.sleep(4)  # several retries with backoff
        lines = [l for l in log_text(tmp_path).splitlines() if "refused the connection" in l]
        assert len(lines) == 1 and "password" in lines[0], log_text(tmp_path)
        assert d.proc.poll() is None
        assert "right-password" not in log_text(tmp_path) and "wrong-password" not in log_text(tmp_path)
    finally:
        d.stop()
    # The right password connects.
    pw.write_text("right-password\n")
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False,
               extra=["--mqtt", f"mqtt://127.0.0.1:{broker.port}", "--mqtt-user", "radio", "--mqtt-password-file", str(pw)])
    try:
        wait_log(tmp_path, f"mqtt: connected to mqtt://127.0.0.1:{broker.port}")
    finally:
        d.stop()
        broker.stop()
    # A password file others can read is refused at start, with exit code 2.
    pw.chmod(0o644)
    cp = subprocess.run([str(BIN), "daemon", "--tcp", f"127.0.0.1:{sim.port('sim0')}", "--state-dir", str(tmp_path / "s2"),
                         "--socket", str(tmp_path / "d2.sock"), "--mqtt", "mqtt://127.0.0.1:1", "--mqtt-user", "radio",
                         "--mqtt-password-file", str(pw)], capture_output=True, text=True, timeout=20, env=ENV)
    assert cp.returncode == 2 and "chmod 600" in cp.stderr, cp.stderr


def test_bad_arguments_are_refused(tmp_path):
    base = [str(BIN), "daemon", "--tcp", "127.0.0.1:1", "--state-dir", str(tmp_path), "--socket", str(tmp_path / "d.sock")]
    for args, text in [(["--mqtt", "http://x"], "unknown scheme"), (["--mqtt", "mqtt://u:p@x"], "password"),
                       (["--mqtt-user", "x"], "go with --mqtt"), (["--mqtt", "mqtt://x", "--mqtt-prefix", "a/#"], "prefix"),
                       (["--mqtt", "mqtts://127.0.0.1", "--mqtt-ca-file", "/nonexistent/ca.pem"], "--mqtt-ca-file"),
                       (["--mqtt-observer", "mqtt://127.0.0.1"], "--mqtt-iata"), (["--mqtt-iata", "SEA"], "go with --mqtt-observer"),
                       (["--mqtt-observer", "mqtt://127.0.0.1", "--mqtt-iata", "S/A"], "airport code")]:
        cp = subprocess.run(base + args, capture_output=True, text=True, timeout=20, env=ENV)
        assert cp.returncode == 2 and text in cp.stderr and cp.stderr.count("\n") == 1, (args, cp.stderr)


# --- the observer uploader ---------------------------------------------------------------------

ROUTE_LETTER = {0: "F", 1: "F", 2: "D", 3: "T"}


def firmware_hash(raw):
    """Packet::calculatePacketHash, written here from the firmware's description (not from pocketmesh):
    SHA-256 over the payload type, the path length as uint16 LE for TRACE only, and the payload; 8 bytes."""
    import hashlib
    header = raw[0]
    i = 5 if header & 3 in (0, 3) else 1
    plen = raw[i]
    path_bytes = (plen & 0x3F) * ((plen >> 6) + 1)
    payload = raw[i + 1 + path_bytes:]
    ptype = (header >> 2) & 0x0F
    h = hashlib.sha256(bytes([ptype]) + (bytes([plen, 0]) if ptype == 9 else b"") + payload)
    return h.hexdigest()[:16].upper()


def test_observer_uploads_packets_in_the_analyzer_format_with_a_retained_status_and_a_will(tmp_path, sim):
    from meshcoredecoder import MeshCoreDecoder
    broker = Mosquitto(tmp_path)
    watch = Listener(broker.port, topic="meshcore/#")
    key0 = sim.nodes["sim0"]["pubkey"].upper()
    root = f"meshcore/SEA/{key0}"
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False,
               extra=["--mqtt-observer", f"mqtt://127.0.0.1:{broker.port}", "--mqtt-iata", "sea"])
    try:
        got = watch.wait(lambda g: any(t == root + "/status" and json.loads(p).get("stats") for t, p, _ in g), what="status with stats")
        status = [json.loads(p) for t, p, _ in got if t == root + "/status"][-1]
        assert status["status"] == "online" and status["origin"] == "sim0" and status["origin_id"] == key0
        assert status["radio"].count(",") == 3 and "battery_mv" in status["stats"], status
        # Traffic sim0 hears: an advert, a channel message, direct messages (the later ones routed).
        assert at(sim, "advert", "--flood")[0] == 0
        assert at(sim, "channel", "send", "0", "observed")[0] == 0
        for i in range(3):
            assert at(sim, "send", "sim0", f"dm {i}")[0] == 0
        got = watch.wait(lambda g: sum(1 for t, _, _ in g if t == root + "/packets") >= 5, what="five packets")
        packets = [json.loads(p) for t, p, r in got if t == root + "/packets"]
        types = set()
        for p in packets:
            assert p["type"] == "PACKET" and p["direction"] == "rx" and p["origin_id"] == key0 and p["origin"] == "sim0"
            raw = bytes.fromhex(p["raw"])
            assert p["raw"] == p["raw"].upper() and int(p["len"]) == len(raw)
            dec = MeshCoreDecoder.decode(p["raw"])
            assert dec.is_valid, p
            assert int(p["packet_type"]) == int(dec.payload_type.value) and p["route"] == ROUTE_LETTER[int(dec.route_type.value)], (p, dec.to_dict())
            assert p["hash"] == firmware_hash(raw), p
            assert float(p["SNR"]) and int(p["RSSI"]) < 0 and 0 <= int(p["score"]) <= 1000 and int(p["duration"]) > 0
            assert len(p["time"]) == 8 and p["date"].count("/") == 2 and p["timestamp"].endswith("+00:00")
            if p["route"] == "D":
                hops = p["path"].split(",") if p["path"] else []
                assert [h.lower() for h in hops] == [x.lower() for x in (dec.to_dict().get("path") or [])], (p, dec.to_dict())
            types.add(int(p["packet_type"]))
        assert {4, 5, 2} <= types, types  # advert, group text, text message
        # A late subscriber sees the retained status; a killed daemon leaves the will (offline, retained).
        d.kill()
        watch.wait(lambda g: any(t == root + "/status" and json.loads(p)["status"] == "offline" for t, p, _ in g), seconds=120, what="the will")
        late = Listener(broker.port, topic=root + "/status")
        late.wait(lambda g: any(json.loads(p)["status"] == "offline" and r for _, p, r in g), what="retained offline")
        late.close()
    finally:
        d.stop()
        watch.close()
        broker.stop()


def test_observer_uploads_what_a_node_nobody_here_wrote_hears(tmp_path):
    """The daemon on an openhop-core companion node (companion_peer.py --log-rx: the node's LOG_RX_DATA
    pushes, as the firmware sends them, which bench/daemon/storm.py relies on): the other node's
    advert and channel messages reach the broker in the analyzers' format, with the SNR and RSSI
    the node reported."""
    from meshcoredecoder import MeshCoreDecoder
    mesh = Mesh(log_rx=True)
    broker = Mosquitto(tmp_path)
    watch = Listener(broker.port, topic="meshcore/#")
    name0, key0, port0 = mesh.nodes[0]
    root = f"meshcore/SEA/{key0.upper()}"
    d = Daemon(str(tmp_path), port0, hook=False,
               extra=["--mqtt-observer", f"mqtt://127.0.0.1:{broker.port}", "--mqtt-iata", "sea"])
    try:
        d.wait_ready()
        watch.wait(lambda g: any(t == root + "/status" for t, _, _ in g), what="the observer's status")
        sender = start_sender(tmp_path, mesh.nodes[1][2], 3, 0.3, "observed", advert=True)
        assert sender.wait(60) == 0, sender.stderr.read()
        got = watch.wait(lambda g: sum(1 for t, _, _ in g if t == root + "/packets") >= 4, what="four packets")
        packets = [json.loads(p) for t, p, _ in got if t == root + "/packets"]
        types = []
        for p in packets:
            assert p["type"] == "PACKET" and p["direction"] == "rx" and p["origin"] == name0 and p["origin_id"] == key0.upper()
            raw = bytes.fromhex(p["raw"])
            dec = MeshCoreDecoder.decode(p["raw"])
            assert dec.is_valid and int(p["len"]) == len(raw), p
            assert int(p["packet_type"]) == int(dec.payload_type.value) and p["route"] == "F", (p, dec.to_dict())
            assert p["hash"] == firmware_hash(raw), p
            assert (p["SNR"], p["RSSI"]) == ("9.5", "-60"), p  # the peer's air: SNR 9.5 dB, RSSI -60
            types.append(int(p["packet_type"]))
        assert types.count(4) >= 1 and types.count(5) >= 3, types  # the advert, three group texts
        status = d.call({"id": 9, "op": "status"})["mqtt_observer"][0]
        assert status["connected"] and status["published"] >= len(packets) and status["dropped"] == 0, status
    finally:
        d.stop()
        watch.close()
        broker.stop()
        mesh.close()


class CaptureBroker:
    """Accepts one MQTT connection on loopback and keeps its CONNECT's user name and password."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.connect = None
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        c, _ = self.sock.accept()
        c.settimeout(20)
        data = b""
        while True:
            chunk = c.recv(4096)
            if not chunk:
                return
            data += chunk
            n, mult, i = 0, 1, 1
            while i < len(data) and data[i] & 0x80:
                n += (data[i] & 0x7F) * mult
                mult *= 128
                i += 1
            if i >= len(data):
                continue
            n += data[i] * mult
            if len(data) >= i + 1 + n:
                break
        body = data[i + 1:i + 1 + n]

        def field(b, at):
            ln = int.from_bytes(b[at:at + 2], "big")
            return b[at + 2:at + 2 + ln], at + 2 + ln
        at = 10  # "MQTT", level, flags, keep-alive
        flags = body[7]
        client_id, at = field(body, at)
        if flags & 0x04:
            _, at = field(body, at)
            _, at = field(body, at)
        user, at = field(body, at) if flags & 0x80 else (None, at)
        password, at = field(body, at) if flags & 0x40 else (None, at)
        self.connect = {"client_id": client_id.decode(), "user": user and user.decode(), "password": password and password.decode()}
        c.sendall(bytes([0x20, 2, 0, 0]))
        time.sleep(1)
        c.close()


def test_observer_signs_in_with_a_jwt_made_with_the_nodes_key(tmp_path, sim):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    import base64
    code, out, err = at(sim, "key", "export", node="sim0")
    assert code == 0, err
    keyfile = tmp_path / "node.key"
    keyfile.write_text(out.strip() + "\n")
    keyfile.chmod(0o600)
    broker = CaptureBroker()
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False,
               extra=["--mqtt-observer", f"mqtt://127.0.0.1:{broker.port}", "--mqtt-iata", "ams", "--mqtt-observer-key", str(keyfile)])
    try:
        deadline = time.time() + 30
        while broker.connect is None and time.time() < deadline:
            time.sleep(0.1)
        assert broker.connect, log_text(tmp_path)
        key0 = sim.nodes["sim0"]["pubkey"].upper()
        assert broker.connect["user"] == f"v1_{key0}"
        token = broker.connect["password"]
        h, c, s = token.split(".")
        pad = lambda x: x + "=" * (-len(x) % 4)
        assert json.loads(base64.urlsafe_b64decode(pad(h))) == {"alg": "Ed25519", "typ": "JWT"}
        claims = json.loads(base64.urlsafe_b64decode(pad(c)))
        assert claims["publicKey"] == key0 and claims["aud"] == "127.0.0.1" and claims["exp"] - claims["iat"] == 86400
        assert abs(claims["iat"] - time.time()) < 120
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(key0)).verify(bytes.fromhex(s), f"{h}.{c}".encode())
        # The key never reaches the log.
        assert out.strip().lower() not in log_text(tmp_path).lower()
    finally:
        d.stop()
    # A key file others can read is refused at start.
    keyfile.chmod(0o644)
    cp = subprocess.run([str(BIN), "daemon", "--tcp", f"127.0.0.1:{sim.port('sim0')}", "--state-dir", str(tmp_path / "s2"),
                         "--socket", str(tmp_path / "d2.sock"), "--mqtt-observer", "mqtt://127.0.0.1:1", "--mqtt-iata", "ams",
                         "--mqtt-observer-key", str(keyfile)], capture_output=True, text=True, timeout=20, env=ENV)
    assert cp.returncode == 2 and "chmod 600" in cp.stderr, cp.stderr


# --- TLS and WebSocket transports ----------------------------------------------------------------

def make_ca(tmp, name, san="DNS:localhost,DNS:127.0.0.1,IP:127.0.0.1"):
    """A test CA and a server certificate for localhost and 127.0.0.1 (or `san`), made with openssl."""
    d = pathlib.Path(tmp) / name
    d.mkdir()

    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", f"/CN={name} test CA")
    run("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    (d / "ext.cnf").write_text(f"subjectAltName={san}\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.crt",
        "-days", "2", "-extfile", "ext.cnf")
    return d / "ca.crt", d / "server.crt", d / "server.key"


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
def test_tls_with_the_right_ca_publishes_and_a_wrong_ca_is_refused(tmp_path, sim):
    ca, cert, key = make_ca(tmp_path, "good")
    other, _, _ = make_ca(tmp_path, "other")
    broker = Mosquitto(tmp_path, tls=(ca, cert, key))
    watch = Listener(broker.port)
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False,
               extra=["--mqtt", f"mqtts://localhost:{broker.tls_port}", "--mqtt-ca-file", str(ca), "--mqtt-prefix", "tls"])
    try:
        watch.wait(lambda g: any(t == "tls/status" and p == b"online" for t, p, _ in g), what="online over TLS")
        assert at(sim, "channel", "send", "0", "through tls")[0] == 0
        watch.wait(lambda g: any(m["text"] == "through tls" for _, m in messages(g, "tls")), what="the message over TLS")
        # A command over TLS too.
        watch.publish("tls/command/status", json.dumps({"id": 7}))
        watch.wait(lambda g: any(t == "tls/command/status/result" and json.loads(p)["id"] == 7 for t, p, _ in g), what="result")
        # A broker restart: the connection comes back by itself.
        broker.stop()
        broker.start()
        watch.close()
        watch = Listener(broker.port)
        assert at(sim, "channel", "send", "0", "after the restart")[0] == 0
        watch.wait(lambda g: any(m["text"] == "after the restart" for _, m in messages(g, "tls")), seconds=60, what="after the restart")
    finally:
        d.stop()
    # The wrong CA: refused, said once, retried; never connected.
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    d = Daemon(str(wrong), sim.port("sim0"), hook=False,
               extra=["--mqtt", f"mqtts://localhost:{broker.tls_port}", "--mqtt-ca-file", str(other), "--mqtt-prefix", "bad"])
    try:
        wait_log(wrong, "certificate was refused")
        time.sleep(4)
        text = log_text(wrong)
        assert text.count("certificate was refused") == 1 and "mqtt: connected" not in text, text
        assert not any(t.startswith("bad/") for t, _, _ in watch.snapshot())
        assert d.proc.poll() is None
    finally:
        d.stop()
        watch.close()
        broker.stop()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
def test_tls_to_an_ip_address_checks_the_certificates_ip_addresses(tmp_path, sim):
    """mqtts://127.0.0.1: accepted when the certificate names 127.0.0.1 as an IP address
    (subjectAltName iPAddress); refused when it has the address only as text (a DNS name, the CN)."""
    ca, cert, key = make_ca(tmp_path, "ipsan", san="DNS:broker.test,IP:127.0.0.1")
    bad_ca, bad_cert, bad_key = make_ca(tmp_path, "dnsonly", san="DNS:localhost,DNS:127.0.0.1")
    good = Mosquitto(tmp_path, tls=(ca, cert, key))
    bad = Mosquitto(tmp_path, tls=(bad_ca, bad_cert, bad_key))
    # One CA file for both brokers: the two test CAs.
    bundle = tmp_path / "both.pem"
    bundle.write_text(pathlib.Path(ca).read_text() + pathlib.Path(bad_ca).read_text())
    watch = Listener(good.port)
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False,
               extra=["--mqtt", f"mqtts://127.0.0.1:{good.tls_port}", "--mqtt", f"mqtts://127.0.0.1:{bad.tls_port}",
                      "--mqtt-prefix", "ip", "--mqtt-ca-file", str(bundle)])
    try:
        watch.wait(lambda g: any(t == "ip/status" and p == b"online" for t, p, _ in g), what="online over TLS to 127.0.0.1")
        wait_log(tmp_path, f"mqtt: connected to mqtts://127.0.0.1:{good.tls_port}")
        wait_log(tmp_path, f"mqtt: mqtts://127.0.0.1:{bad.tls_port}: the broker's certificate was refused (it names no IP address 127.0.0.1")
        assert f"connected to mqtts://127.0.0.1:{bad.tls_port}" not in log_text(tmp_path)
    finally:
        d.stop()
        watch.close()
        good.stop()
        bad.stop()


def test_websocket_over_tls_with_a_broker_that_speaks_it(tmp_path, sim):
    """Debian's Mosquitto is built without WebSocket listeners; amqtt (PyPI) has them."""
    amqtt = VENV / "bin" / "amqtt"
    if not amqtt.exists():
        pytest.skip("needs amqtt in the test venv (scripts/setup.sh installs it)")
    ca, cert, key = make_ca(tmp_path, "ws")
    tcp_port, wss_port = free_port(), free_port()
    conf = tmp_path / "amqtt.yaml"
    conf.write_text(f"""listeners:
  default:
    type: tcp
    bind: 127.0.0.1:{tcp_port}
  secure:
    type: ws
    bind: 127.0.0.1:{wss_port}
    ssl: true
    certfile: {cert}
    keyfile: {key}
plugins:
  amqtt.plugins.authentication.AnonymousAuthPlugin:
    allow_anonymous: true
""")
    log = open(tmp_path / "amqtt.log", "a")
    proc = subprocess.Popen([str(amqtt), "-c", str(conf)], stdout=log, stderr=log, start_new_session=True)
    try:
        wait_port(tcp_port)
        wait_port(wss_port)
        watch = Listener(tcp_port)
        d = Daemon(str(tmp_path), sim.port("sim0"), hook=False,
                   extra=["--mqtt", f"wss://localhost:{wss_port}/mqtt", "--mqtt-ca-file", str(ca), "--mqtt-prefix", "ws"])
        try:
            watch.wait(lambda g: any(t == "ws/status" and p == b"online" for t, p, _ in g), what="online over wss")
            assert at(sim, "channel", "send", "0", "through a websocket")[0] == 0
            watch.wait(lambda g: any(m["text"] == "through a websocket" for _, m in messages(g, "ws")), what="the message over wss")
            watch.publish("ws/command/status", json.dumps({"id": 9}))
            watch.wait(lambda g: any(t == "ws/command/status/result" and json.loads(p)["id"] == 9 for t, p, _ in g), what="result over wss")
        finally:
            d.stop()
            watch.close()
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


class FakeDNS:
    """A DNS server on 127.0.0.1 over UDP, for the daemon's resolver: A records for the names in
    `zone`, no AAAA data, NXDOMAIN for other names; says nothing about the names in `silent`."""

    def __init__(self, zone):
        self.zone = {k.lower(): v for k, v in zone.items()}
        self.silent = set()
        self.queries = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stopped = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stopped:
            try:
                data, peer = self.sock.recvfrom(512)
            except socket.timeout:
                continue
            labels, at = [], 12
            while at < len(data) and data[at]:
                labels.append(data[at + 1:at + 1 + data[at]].decode())
                at += 1 + data[at]
            name, qtype = ".".join(labels).lower(), int.from_bytes(data[at + 1:at + 3], "big")
            self.queries.append((name, qtype))
            if name in self.silent:
                continue
            question = data[12:at + 5]
            answers = []
            rcode = 0
            if name not in self.zone:
                rcode = 3
            elif qtype == 1:
                answers = [b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04" + socket.inet_aton(self.zone[name])]
            head = data[:2] + (0x8180 | rcode).to_bytes(2, "big") + b"\x00\x01" + len(answers).to_bytes(2, "big") + b"\x00\x00\x00\x00"
            self.sock.sendto(head + question + b"".join(answers), peer)

    def stop(self):
        self.stopped = True
        self.thread.join(2)
        self.sock.close()


def test_broker_names_are_resolved_over_dns_without_blocking_the_daemon(tmp_path, sim):
    """Names not in the hosts file are asked of the resolv.conf servers over UDP. While the server
    is silent the daemon goes on (the radio drained, the API answering), logs the timeout once and
    retries; once it answers, the bridge connects and publishes what was stored meanwhile. An
    unknown name is one clear line; a hosts-file name needs no DNS."""
    broker = Mosquitto(tmp_path)
    dns = FakeDNS({"broker.pocketmesh.test": "127.0.0.1"})
    dns.silent = {"broker.pocketmesh.test"}
    (tmp_path / "resolv.conf").write_text("# test\nnameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
    (tmp_path / "hosts").write_text("127.0.0.1 hosts-broker.test\n")
    env = {"POCKETMESH_RESOLV_CONF": str(tmp_path / "resolv.conf"), "POCKETMESH_HOSTS": str(tmp_path / "hosts"),
           "POCKETMESH_DNS_PORT": str(dns.port)}
    watch = Listener(broker.port)
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False, env_extra=env, extra=[
        "--mqtt", f"mqtt://broker.pocketmesh.test:{broker.port}",
        "--mqtt", f"mqtt://nothere.pocketmesh.test:{broker.port}",
        "--mqtt", f"mqtt://hosts-broker.test:{broker.port}"])
    try:
        timeout_line = "mqtt: mqtt://broker.pocketmesh.test:%d: cannot resolve broker.pocketmesh.test: no answer from 127.0.0.1 within 1 s" % broker.port
        wait_log(tmp_path, timeout_line)
        wait_log(tmp_path, "cannot resolve nothere.pocketmesh.test: no such host (NXDOMAIN from 127.0.0.1)")
        wait_log(tmp_path, f"mqtt: connected to mqtt://hosts-broker.test:{broker.port}")
        assert not any(n == "hosts-broker.test" for n, _ in dns.queries)
        # The server stays silent: the daemon works on, asking again with backoff.
        assert at(sim, "send", "sim0", "sent while DNS is silent")[0] == 0
        st = d.call({"id": 1, "op": "status"})
        by_url = {m["broker"]: m for m in st["mqtt"]}
        assert by_url[f"mqtt://broker.pocketmesh.test:{broker.port}"]["connected"] is False
        deadline = time.time() + 30
        while time.time() < deadline and sum(1 for n, t in dns.queries if n == "broker.pocketmesh.test" and t == 1) < 3:
            time.sleep(0.2)
        assert sum(1 for n, t in dns.queries if n == "broker.pocketmesh.test" and t == 1) >= 3, dns.queries
        assert sum(1 for n, t in dns.queries if n == "broker.pocketmesh.test" and t == 28) >= 3, dns.queries
        assert log_text(tmp_path).count(timeout_line) == 1, log_text(tmp_path)
        # The server answers: connected, and the message stored meanwhile is published.
        dns.silent = set()
        wait_log(tmp_path, f"mqtt: connected to mqtt://broker.pocketmesh.test:{broker.port} again", seconds=90)
        got = watch.wait(lambda g: sum(1 for _, m in messages(g) if m["text"] == "sent while DNS is silent") >= 2,
                         what="the message through both reachable bridges")
        assert sum(1 for _, m in messages(got) if m["text"] == "sent while DNS is silent") == 2
        assert log_text(tmp_path).count("NXDOMAIN") == 1
    finally:
        d.stop()
        watch.close()
        broker.stop()
        dns.stop()


# --- the trust model over MQTT -----------------------------------------------------------------

def results(got, suffix="/result"):
    """Results seen by a Listener: (topic, parsed payload) in order."""
    return [(t, json.loads(p)) for t, p, _ in got if t.endswith(suffix)]


DANGEROUS = [  # (op, arguments, class): each refused with the default classes (read, message)
    ("key_export", {}, "secret"), ("key_import", {"key": "00" * 64}, "secret"), ("sign", {"data": "00"}, "secret"),
    ("set", {"setting": "name", "value": "evil"}, "config"), ("set", {"setting": "radio", "values": ["869.5", "250", "11", "5"]}, "config"),
    ("set", {"setting": "tx", "value": "1"}, "config"), ("set", {"setting": "pin", "value": "123456"}, "admin"),
    ("reboot", {}, "admin"), ("raw", {"hex": "16"}, "admin"), ("factory_reset", {"yes_erase_everything": True}, "admin"),
    ("advert", {}, "config"),
    # Arguments that do not parse: refused by the op's class before they are read.
    ("key_import", {}, "secret"), ("factory_reset", {}, "admin"), ("cmd", {"name": "x"}, "admin"),
]


def test_commands_run_only_in_the_bridges_classes_and_results_carry_no_secrets(tmp_path, sim):
    code, out, err = at(sim, "key", "export", node="sim0")
    assert code == 0, err
    private_key = out.strip().lower()
    public_channel_secret = "8b3387e9c5cdea6ac9e5edbaa115cd72"
    broker = Mosquitto(tmp_path)
    watch = Listener(broker.port, topic="pm/#")
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False, extra=["--mqtt", f"mqtt://127.0.0.1:{broker.port}", "--mqtt-prefix", "pm"])
    try:
        watch.wait(lambda g: any(t == "pm/status" and p == b"online" for t, p, _ in g), what="online")
        wait_log(tmp_path, "commands allowed: read,message")
        for i, (op, args, _) in enumerate(DANGEROUS):
            watch.publish(f"pm/command/{op}", json.dumps({"id": 100 + i, **args}))
        # Allowed reads: their results hold no secret.
        watch.publish("pm/command/contacts_export", json.dumps({"id": 200}))
        watch.publish("pm/command/channel_list", json.dumps({"id": 201}))
        watch.publish("pm/command/get", json.dumps({"id": 202}))
        watch.publish("pm/command/channel_uri", json.dumps({"id": 203, "channel": "0"}))
        got = watch.wait(lambda g: len(results(g)) >= len(DANGEROUS) + 4, seconds=60, what="every result")
        by_id = {r["id"]: (t, r) for t, r in results(got)}
        for i, (op, args, cls) in enumerate(DANGEROUS):
            topic, r = by_id[100 + i]
            assert topic == f"pm/command/{op}/result", (topic, r)
            assert r["ok"] is False and r["error"]["code"] == "denied" and cls in r["error"]["message"], (op, r)
            assert r["radio"] == sim.nodes["sim0"]["pubkey"][:12]
        log = log_text(tmp_path)
        for op in {op for op, _, _ in DANGEROUS}:
            assert f"refused {op} (" in log, (op, log[-3000:])
        assert by_id[200][1]["ok"] is True and by_id[200][1]["advert"], by_id[200]
        channels = by_id[201][1]
        assert channels["ok"] is True and channels["result"] and all("secret" not in c and c["name"] for c in channels["result"]), channels
        assert by_id[202][1]["ok"] is True and "pin" not in by_id[202][1], by_id[202]
        assert by_id[203][1]["error"]["code"] == "denied", by_id[203]
        # No payload on the broker and no log line holds the private key or a channel secret.
        for t, p, _ in watch.snapshot():
            text = p.decode(errors="replace").lower()
            assert private_key not in text and public_channel_secret not in text, (t, text)
        assert private_key not in log.lower() and public_channel_secret not in log.lower()
        # Nothing changed: the name is the same.
        info = d.call({"id": 1, "op": "status"})
        assert "evil" not in json.dumps(info)
    finally:
        d.stop()
        watch.close()
        broker.stop()


def test_mqtt_allow_widens_the_classes_and_secret_is_refused_at_start(tmp_path, sim):
    broker = Mosquitto(tmp_path)
    watch = Listener(broker.port, topic="pm/#")
    url = f"mqtt://127.0.0.1:{broker.port}"
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False, extra=["--mqtt", url, "--mqtt-prefix", "pm", "--mqtt-allow", "config"])
    try:
        watch.wait(lambda g: any(t == "pm/status" and p == b"online" for t, p, _ in g), what="online")
        wait_log(tmp_path, "commands allowed: read,message,config")
        watch.publish("pm/command/set", json.dumps({"id": 1, "setting": "name", "value": "renamed"}))
        watch.publish("pm/command/reboot", json.dumps({"id": 2}))
        got = watch.wait(lambda g: len(results(g)) >= 2, seconds=30, what="two results")
        by_id = {r["id"]: r for _, r in results(got)}
        assert by_id[1]["ok"] is True, by_id[1]
        assert by_id[2]["error"]["code"] == "denied" and "--mqtt-allow admin" in by_id[2]["error"]["message"], by_id[2]
        wait_log(tmp_path, "set (config)")
        assert "refused reboot (admin" in log_text(tmp_path)
    finally:
        d.stop()
    watch.close()
    watch = Listener(broker.port, topic="pm/#")
    admin = tmp_path / "admin"
    admin.mkdir()
    d = Daemon(str(admin), sim.port("sim0"), hook=False, extra=["--mqtt", url, "--mqtt-prefix", "pm", "--mqtt-allow", "admin"])
    try:
        wait_log(admin, "commands allowed: read,message,admin")
        watch.wait(lambda g: any(t == "pm/status" and p == b"online" for t, p, _ in g), what="online")
        watch.publish("pm/command/reboot", json.dumps({"id": 3}))
        got = watch.wait(lambda g: any(r["id"] == 3 for _, r in results(g)), seconds=30, what="the reboot result")
        r = [r for _, r in results(got) if r["id"] == 3][0]
        assert r["ok"] is True, r
        wait_log(admin, "reboot (admin)")
    finally:
        d.stop()
        watch.close()
        broker.stop()
    for allow in ("secret", "config,secret", "all"):
        cp = subprocess.run([str(BIN), "daemon", "--tcp", f"127.0.0.1:{sim.port('sim0')}", "--state-dir", str(tmp_path / "s2"),
                             "--socket", str(tmp_path / "d2.sock"), "--mqtt", url, "--mqtt-allow", allow],
                            capture_output=True, text=True, timeout=20, env=ENV)
        assert cp.returncode == 2 and "never allowed over MQTT" in cp.stderr and cp.stderr.count("\n") == 1, (allow, cp.stderr)


def test_retained_commands_never_run_and_a_command_needs_an_id(tmp_path, sim):
    broker = Mosquitto(tmp_path)
    url = f"mqtt://127.0.0.1:{broker.port}"
    pub = Listener(broker.port, topic="nothing/here")
    # A retained channel_send, as someone published it with -r: it must not go out at each start.
    pub.c.publish("pm/command/channel_send", json.dumps({"id": 5, "channel": "0", "text": "retained hello"}), qos=1, retain=True).wait_for_publish(10)
    watch = Listener(broker.port, topic="pm/#")
    for run in (1, 2):
        d = Daemon(str(tmp_path), sim.port("sim0"), hook=False, extra=["--mqtt", url, "--mqtt-prefix", "pm"])
        try:
            wait_log(tmp_path, "ignored the retained command on \"pm/command/channel_send\"")
            watch.wait(lambda g: sum(1 for t, p, _ in g if t == "pm/status" and p == b"online") >= run, what="online")
            # No id: answered with an error (id null) and not run.
            watch.publish("pm/command/channel_send", json.dumps({"channel": "0", "text": "without an id"}))
            watch.publish("pm/command/status", json.dumps({"id": 6 + run}))
            got = watch.wait(lambda g: any(r["id"] == 6 + run for _, r in results(g)), what="the status result")
            no_id = [r for t, r in results(got) if t == "pm/command/channel_send/result" and r["id"] is None]
            assert len(no_id) == run and no_id[-1]["error"]["code"] == "usage" and "id" in no_id[-1]["error"]["message"], results(got)
        finally:
            d.stop()
    text = log_text(tmp_path)
    assert text.count("ignored the retained command") == 2, text  # once per start
    assert text.count('no integer "id"') == 2, text
    assert not any(r["id"] == 5 for _, r in results(watch.snapshot()))
    # Neither the retained text nor the one without an id reached the mesh.
    code, out, _ = at(sim, "sync", node="sim1")
    assert "retained hello" not in out and "without an id" not in out, out
    pub.close()
    watch.close()
    broker.stop()


def test_two_radios_on_one_broker_have_their_own_client_ids_and_command_topics(tmp_path, sim):
    """The same --name on two hosts (or the same device path) once gave the same client id: each
    connection threw the other off. Ids now come from the radio's key; PREFIX/radio/KEY/command
    reaches one radio, PREFIX/command every radio on the prefix."""
    broker = Mosquitto(tmp_path)
    url = f"mqtt://127.0.0.1:{broker.port}"
    watch = Listener(broker.port, topic="pm/#")
    key0, key1 = sim.nodes["sim0"]["pubkey"][:12], sim.nodes["sim1"]["pubkey"][:12]
    dirs = [tmp_path / "a", tmp_path / "b"]
    for x in dirs:
        x.mkdir()
    ds = [Daemon(str(dirs[0]), sim.port("sim0"), hook=False, name="radio", extra=["--mqtt", url, "--mqtt-prefix", "pm"]),
          Daemon(str(dirs[1]), sim.port("sim1"), hook=False, name="radio", extra=["--mqtt", url, "--mqtt-prefix", "pm"])]
    try:
        for x in dirs:
            wait_log(x, f"mqtt: connected to {url}")
        assert f"client id pocketmesh-bridge-{key0}" in log_text(dirs[0])
        assert f"client id pocketmesh-bridge-{key1}" in log_text(dirs[1])
        # Both stay connected: one radio's connection does not take the other's place.
        watch.publish(f"pm/radio/{key0}/command/status", json.dumps({"id": 1}))
        watch.publish(f"pm/radio/{key1}/command/status", json.dumps({"id": 2}))
        watch.publish("pm/command/status", json.dumps({"id": 3}))
        got = watch.wait(lambda g: len(results(g)) >= 4, what="four results")
        time.sleep(1)  # any further (wrong) result would arrive meanwhile
        res = results(watch.snapshot())
        assert [(t, r["radio"]) for t, r in res if r["id"] == 1] == [(f"pm/radio/{key0}/command/status/result", key0)], res
        assert [(t, r["radio"]) for t, r in res if r["id"] == 2] == [(f"pm/radio/{key1}/command/status/result", key1)], res
        assert sorted(r["radio"] for t, r in res if r["id"] == 3 and t == "pm/command/status/result") == sorted([key0, key1]), res
        for x in dirs:
            assert "connected to " + url + " again" not in log_text(x), log_text(x)
        for i, d in enumerate(ds):
            st = d.call({"id": 9, "op": "status"})["mqtt"][0]
            assert st["connected"] is True and st["client_id"] == f"pocketmesh-bridge-{(key0, key1)[i]}", st
    finally:
        for d in ds:
            d.stop()
        watch.close()
        broker.stop()


class AcceptAndCloseBroker:
    """Answers every MQTT connection with CONNACK, then closes it: records when each came."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.times = []
        self.stopped = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.stopped:
            try:
                c, _ = self.sock.accept()
            except OSError:
                continue
            self.times.append(time.monotonic())
            c.settimeout(5)
            try:
                c.recv(4096)  # CONNECT
                c.sendall(bytes([0x20, 2, 0, 0]))
                time.sleep(0.1)
            except OSError:
                pass
            c.close()

    def stop(self):
        self.stopped = True
        self.sock.close()


def test_a_broker_that_closes_after_connack_is_retried_ever_more_slowly(tmp_path, sim):
    fake = AcceptAndCloseBroker()
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False, extra=["--mqtt", f"mqtt://127.0.0.1:{fake.port}"])
    try:
        deadline = time.time() + 40
        while len(fake.times) < 5 and time.time() < deadline:
            time.sleep(0.1)
        assert len(fake.times) >= 5, fake.times
        gaps = [b - a for a, b in zip(fake.times, fake.times[1:])]
        # 1 s, 2 s, 4 s, ... (each with up to 25 % jitter): every gap longer than the one before.
        assert all(b > a for a, b in zip(gaps, gaps[1:])), gaps
        assert gaps[3] > 6, gaps
    finally:
        d.stop()
        fake.stop()


def test_an_oversized_retained_message_is_dropped_once_without_reconnecting(tmp_path, sim):
    broker = Mosquitto(tmp_path)
    url = f"mqtt://127.0.0.1:{broker.port}"
    pub = Listener(broker.port, topic="nothing/here")
    big = json.dumps({"id": 1, "to": "sim1", "text": "x" * (300 * 1024)})
    pub.c.publish("pm/command/send", big, qos=1, retain=True).wait_for_publish(10)
    watch = Listener(broker.port, topic="pm/command/+/result")
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False, extra=["--mqtt", url, "--mqtt-prefix", "pm"])
    try:
        wait_log(tmp_path, f"mqtt: {url}: dropped a {len(big) + 2 + len('pm/command/send') + 2}-byte message on \"pm/command/send\"")
        # The session goes on: a command after it is answered on the same connection.
        watch.publish("pm/command/status", json.dumps({"id": 2}))
        watch.wait(lambda g: any(r["id"] == 2 for _, r in results(g)), what="the status result")
        st = d.call({"id": 3, "op": "status"})["mqtt"][0]
        assert st["connected"] is True and st["oversized_dropped"] == 1, st
        text = log_text(tmp_path)
        assert text.count("dropped a ") == 1 and text.count(f"mqtt: connected to {url}") == 1, text
    finally:
        d.stop()
        pub.close()
        watch.close()
        broker.stop()
