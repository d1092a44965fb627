"""The observer uploader's sign-in as meshcore-packet-capture 2.x does it: the user `v1_{KEY}` and a
JWT whose signature the radio makes (SIGN_START/DATA/FINISH: no private key leaves it), with the
`client`, `owner` and `email` claims; the same observer in `pocketmesh node`, signed with the node's
key; and the IATA codes the public brokers refuse, refused at start.

TokenBroker is a broker stand-in on loopback: it takes a CONNECT only if its token verifies (Ed25519)
against the public key the test gives it (the radio's or the node's), and records what is then
published. Real Mosquitto carries the node's packets; meshcore_py signs the same input on the same
radio (the way packet-capture signs) and must get the same signature; meshcore-cli makes traffic.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh), POCKETMESH_VENV.
"""
import base64
import json
import shutil
import socket
import subprocess
import threading
import time

import pytest

from test_daemon_faults import Daemon
from test_mqtt import BIN, ENV, Listener, Mosquitto, at, befriend, free_port, log_text
from test_sim_clients import CLI, PY, Sim, cli

pytestmark = [
    pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)"),
    pytest.mark.skipif(shutil.which("mosquitto") is None, reason="needs mosquitto (scripts/setup.sh installs it)"),
]

OWNER = "c0ffee" * 10 + "abcd"
CLAIM_ORDER = ["publicKey", "iat", "exp", "aud", "owner", "email", "client"]


def b64(part):
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def check_token(user, token, key, audience, verify_key=None):
    """None if `token` is a valid sign-in for `key` (64 hex), its signature made by `verify_key`
    (default: `key`), else why not."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    key = key.upper()
    if user != "v1_" + key:
        return f"user {user!r}"
    try:
        h, c, s = token.split(".")
        header = json.loads(b64(h))
        claims = json.loads(b64(c), object_pairs_hook=lambda pairs: pairs)
    except ValueError as e:
        return f"malformed token: {e}"
    if header != {"alg": "Ed25519", "typ": "JWT"}:
        return f"header {header}"
    d = dict(claims)
    if d.get("publicKey") != key or d.get("aud") != audience or not d["iat"] - 120 < time.time() < d["exp"]:
        return f"claims {d}"
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(verify_key or key)).verify(bytes.fromhex(s), f"{h}.{c}".encode())
    except (InvalidSignature, ValueError):
        return "signature"
    return None


class TokenBroker:
    """MQTT 3.1.1 on 127.0.0.1 that lets a client in only with a token signed by `key`."""

    def __init__(self, key, audience="127.0.0.1", verify_key=None):
        self.key, self.audience, self.verify_key = key, audience, verify_key
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.accepted, self.refused, self.published = [], [], []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    @staticmethod
    def _read(c, n):
        out = b""
        while len(out) < n:
            chunk = c.recv(n - len(out))
            if not chunk:
                raise EOFError
            out += chunk
        return out

    def _packet(self, c):
        first = self._read(c, 1)[0]
        n, mult = 0, 1
        while True:
            b = self._read(c, 1)[0]
            n += (b & 0x7F) * mult
            mult *= 128
            if not b & 0x80:
                break
        return first, self._read(c, n)

    def _serve(self, c):
        c.settimeout(120)
        try:
            kind, body = self._packet(c)
            assert kind == 0x10
            flags, at = body[7], 10

            def field(at):
                ln = int.from_bytes(body[at:at + 2], "big")
                return body[at + 2:at + 2 + ln], at + 2 + ln
            client_id, at = field(at)
            if flags & 0x04:
                _, at = field(at)
                _, at = field(at)
            user, at = field(at) if flags & 0x80 else (b"", at)
            password, at = field(at) if flags & 0x40 else (b"", at)
            connect = {"client_id": client_id.decode(), "user": user.decode(), "password": password.decode()}
            why = check_token(connect["user"], connect["password"], self.key, self.audience, self.verify_key)
            with self.lock:
                (self.refused if why else self.accepted).append(dict(connect, why=why))
            if why:
                c.sendall(bytes([0x20, 2, 0, 5]))  # not authorized
                return
            c.sendall(bytes([0x20, 2, 0, 0]))
            while True:
                kind, body = self._packet(c)
                if kind >> 4 == 3:
                    ln = int.from_bytes(body[:2], "big")
                    topic = body[2:2 + ln].decode()
                    at = 2 + ln
                    if (kind >> 1) & 3:
                        c.sendall(bytes([0x40, 2]) + body[at:at + 2])
                        at += 2
                    with self.lock:
                        self.published.append((topic, body[at:].decode(), bool(kind & 1)))
                elif kind == 0xC0:
                    c.sendall(bytes([0xD0, 0]))
                elif kind == 0xE0:
                    return
        except (EOFError, OSError, AssertionError):
            pass
        finally:
            c.close()

    def wait(self, predicate, seconds=60, what="it"):
        deadline = time.time() + seconds
        while time.time() < deadline:
            with self.lock:
                if predicate(self):
                    return
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}: accepted {self.accepted}, refused {self.refused}")

    def close(self):
        self.sock.close()


def meshcore_py_sign(port, data):
    """The radio's signature of `data`, as meshcore_py (packet-capture's library) asks for it."""
    script = f"""
import asyncio
from meshcore import MeshCore, EventType
async def main():
    mc = await MeshCore.create_tcp("127.0.0.1", {port})
    ev = await mc.commands.sign({data!r})
    assert ev.type == EventType.SIGNATURE, ev
    print(ev.payload["signature"].hex() if isinstance(ev.payload["signature"], (bytes, bytearray)) else ev.payload["signature"])
    await mc.disconnect()
asyncio.run(main())
"""
    cp = subprocess.run([str(PY), "-c", script], capture_output=True, text=True, timeout=90)
    assert cp.returncode == 0, cp.stderr
    return cp.stdout.strip().splitlines()[-1]


@pytest.fixture
def sim():
    s = Sim("--seed", "5", nodes=2)
    befriend(s)
    yield s
    s.stop()


@pytest.mark.skipif(not PY.exists(), reason="needs meshcore_py in the interop venv")
def test_the_daemon_signs_in_with_a_token_the_radio_signs(tmp_path, sim):
    key0, key1 = sim.nodes["sim0"]["pubkey"].upper(), sim.nodes["sim1"]["pubkey"].upper()
    good = TokenBroker(key0)
    wrong = TokenBroker(key0, verify_key=key1)  # checks the signature with another radio's key: must refuse
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False,
               extra=["--mqtt-observer", f"mqtt://127.0.0.1:{good.port}", "--mqtt-observer", f"mqtt://127.0.0.1:{wrong.port}",
                      "--mqtt-iata", "sea", "--mqtt-observer-owner", OWNER, "--mqtt-observer-email", "Ops@Example.ORG",
                      "--mqtt-observer-decode", "public"])
    root = f"meshcore/SEA/{key0}"
    try:
        good.wait(lambda b: any(t == root + "/status" for t, _, _ in b.published), what="the status through the stand-in")
        wrong.wait(lambda b: b.refused, what="the refusal of the wrong key")
        assert wrong.refused[0]["why"] == "signature" and not wrong.accepted
        connect = good.accepted[0]
        assert connect["client_id"].startswith("pocketmesh-observer-" + key0[:12].lower())
        h, c, s = connect["password"].split(".")
        claims = json.loads(b64(c), object_pairs_hook=lambda pairs: pairs)
        assert [k for k, _ in claims] == CLAIM_ORDER, claims
        claims = dict(claims)
        assert claims["owner"] == OWNER.upper() and claims["email"] == "ops@example.org"
        assert claims["client"].startswith("pocketmesh/") and claims["exp"] - claims["iat"] == 86400
        # Compact json.dumps, as packet-capture writes the claims.
        assert b64(c).decode() == json.dumps(claims, separators=(",", ":"))
        # Packets the radio hears go out through the signed-in connection.
        assert at(sim, "channel", "send", "0", "through the stand-in")[0] == 0
        good.wait(lambda b: any(t == root + "/packets" and json.loads(p)["packet_type"] == "5" for t, p, _ in b.published),
                  what="the channel message")
        # --mqtt-observer-decode: the channel message decrypted, as packet-capture's decoded object has it.
        packet = next(json.loads(p) for t, p, _ in good.published if t == root + "/packets" and json.loads(p)["packet_type"] == "5")
        dec = packet["decoded"]
        assert list(packet)[-3:] == ["decoded", "score", "duration"], packet
        assert (dec["kind"], dec["decrypted"], dec["channel"], dec["sender"], dec["text"]) == ("GRP_TXT", True, "public", "sim1", "through the stand-in"), dec
        assert dec["msg_timestamp"].endswith("Z") and dec["ciphertext_len"] % 16 == 0
        assert "signed in with a token the radio signs" in log_text(tmp_path)
    finally:
        d.stop()
        good.close()
        wrong.close()
    # meshcore_py, asking the same radio to sign the same input, gets the same signature
    # (Ed25519 is deterministic): the token is the one packet-capture would send for these claims.
    assert meshcore_py_sign(sim.port("sim0"), f"{h}.{c}".encode()) == s


@pytest.fixture
def air(tmp_path):
    topo = tmp_path / "t.json"
    topo.write_text(json.dumps({
        "nodes": [{"name": "sim0", "role": "companion"}, {"name": "lin", "role": "external"}],
        "links": [{"a": "sim0", "b": "lin", "snr": 8}],
    }))
    port = free_port()
    s = Sim("--topology", str(topo), "--air-port", str(port), nodes=1)
    yield s, port
    s.stop()


@pytest.mark.parametrize("role", ["repeater", "companion"])
@pytest.mark.skipif(not CLI.exists(), reason="needs meshcore-cli in the interop venv")
def test_the_node_uploads_what_it_hears_signed_with_its_key(tmp_path, air, role):
    sim, port = air
    broker = Mosquitto(tmp_path)
    watch = Listener(broker.port, topic="meshcore/#")
    state = tmp_path / "state"
    p = subprocess.Popen([str(BIN), "node", "--role", role, "--radio", f"air:127.0.0.1:{port}/lin", "--state-dir", str(state),
                          "--name", "ObsNode", "--for", "120"]
                         + ["--mqtt-observer", f"mqtt://127.0.0.1:{broker.port}", "--mqtt-iata", "ams"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    stand_in = None
    try:
        line = p.stdout.readline()
        assert line.startswith(role + " ObsNode "), line + p.stderr.read()
        key = line.split("pubkey=")[1].split()[0].upper()
        root = f"meshcore/AMS/{key}"
        got = watch.wait(lambda g: any(t == root + "/status" for t, _, _ in g), what="the node's status")
        status = json.loads([pl for t, pl, _ in got if t == root + "/status"][-1])
        assert status["status"] == "online" and status["origin"] == "ObsNode" and status["origin_id"] == key, status
        assert status["model"] == "Linux (pocketmesh)" and status["firmware_version"].startswith("v")
        assert status["radio"] == "869.618,62.5,8,5" and status["client_version"].startswith("pocketmesh/"), status
        # meshcore-cli on the simulated companion: an advert and a channel message the node hears.
        cli(sim, "sim0", "floodadv")
        cli(sim, "sim0", "public", "heard by the node")
        got = watch.wait(lambda g: sum(1 for t, _, _ in g if t == root + "/packets") >= 2, what="two packets")
        packets = [json.loads(pl) for t, pl, _ in got if t == root + "/packets"]
        assert {int(x["packet_type"]) for x in packets} >= {4, 5}, packets
        for x in packets:
            assert x["type"] == "PACKET" and x["direction"] == "rx" and x["origin"] == "ObsNode" and x["origin_id"] == key
            assert x["SNR"] == "8.0" and int(x["RSSI"]) < 0, x  # the link's SNR, as the air socket reports it
            assert x["route"] == "F" and int(x["len"]) == len(bytes.fromhex(x["raw"]))
        # The token the node signs with its key gets past a broker that checks it.
        p.terminate()
        assert p.wait(15) == 0, p.stderr.read()
        watch.wait(lambda g: json.loads([pl for t, pl, _ in g if t == root + "/status"][-1])["status"] == "offline",
                   what="the clean stop's offline status")
        stand_in = TokenBroker(key)
        p = subprocess.Popen([str(BIN), "node", "--role", role, "--radio", f"air:127.0.0.1:{port}/lin", "--state-dir", str(state),
                              "--for", "60", "--mqtt-observer", f"mqtt://127.0.0.1:{stand_in.port}", "--mqtt-iata", "ams",
                              "--mqtt-observer-email", "node@example.net"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
        stand_in.wait(lambda b: any(t == root + "/status" for t, _, _ in b.published), what="the status through the stand-in")
        claims = dict(json.loads(b64(stand_in.accepted[0]["password"].split(".")[1])))
        assert claims["email"] == "node@example.net" and "owner" not in claims and claims["client"].startswith("pocketmesh/")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        watch.close()
        broker.stop()
        if stand_in:
            stand_in.close()


@pytest.mark.parametrize("code", ["XXX", "POCK", "loc", "S3A", "AB"])
def test_iata_codes_the_public_brokers_refuse_are_refused_at_start(tmp_path, code):
    daemon = [str(BIN), "daemon", "--tcp", "127.0.0.1:1", "--state-dir", str(tmp_path / "d"), "--socket", str(tmp_path / "d.sock")]
    node = [str(BIN), "node", "--radio", "air:127.0.0.1:1/x", "--state-dir", str(tmp_path / "n")]
    for argv in (daemon, node):
        cp = subprocess.run(argv + ["--mqtt-observer", "mqtt://127.0.0.1:1", "--mqtt-iata", code],
                            capture_output=True, text=True, timeout=20, env=ENV)
        assert cp.returncode == 2 and f'--mqtt-iata "{code}"' in cp.stderr and "airport code" in cp.stderr, (argv[1], cp.stderr)
        assert cp.stderr.count("\n") == 1, cp.stderr
    # Bad claims are refused the same way.
    for extra, text in ((["--mqtt-observer-owner", "abc"], "64 hex digits"), (["--mqtt-observer-email", "a@b"], "not an email")):
        cp = subprocess.run(node + ["--mqtt-observer", "mqtt://127.0.0.1:1", "--mqtt-iata", "SEA"] + extra,
                            capture_output=True, text=True, timeout=20, env=ENV)
        assert cp.returncode == 2 and text in cp.stderr and cp.stderr.count("\n") == 1, cp.stderr


def test_a_node_on_the_modems_key_has_the_modem_sign_its_token(tmp_path):
    """`--identity modem`: the token's signature is the KISS modem's (SignData over the serial
    link, while the node's loop goes on), and what the node hears goes out under the modem's key."""
    from test_node_modem import modem_sim, start_node, stop
    sim, modem_key, pty = modem_sim(tmp_path, 1)
    broker = TokenBroker(modem_key)
    node = None
    try:
        node, line = start_node(pty, tmp_path / "st", "repeater", "--name", "ModemObs",
                                "--mqtt-observer", f"mqtt://127.0.0.1:{broker.port}", "--mqtt-iata", "lhr")
        assert line.startswith("repeater ModemObs pubkey=" + modem_key), line + node.stderr.read()
        root = f"meshcore/LHR/{modem_key.upper()}"
        broker.wait(lambda b: any(t == root + "/status" for t, _, _ in b.published), what="the status through the stand-in")
        assert subprocess.run([str(BIN), "-t", f"127.0.0.1:{sim.port('sim0')}", "--timeout", "15", "advert", "--flood"],
                              capture_output=True, text=True, timeout=60, env=ENV).returncode == 0
        broker.wait(lambda b: any(t == root + "/packets" and json.loads(pl)["packet_type"] == "4" for t, pl, _ in b.published),
                    what="the advert the node heard")
        assert not broker.refused
    finally:
        stop(node)
        broker.close()
        sim.stop()


def test_the_daemon_publishes_the_neighbours_snapshot(tmp_path):
    """`--mqtt-observer-neighbors`: the repeater next to the radio answers the zero-hop discovery and
    its regions request; the snapshot (not retained) has packet-capture's keys and values."""
    s = Sim("--repeaters", "1", "--seed", "3", nodes=2)
    broker = Mosquitto(tmp_path)
    watch = Listener(broker.port, topic="meshcore/#")
    key0 = s.nodes["sim0"]["pubkey"].upper()
    root = f"meshcore/SEA/{key0}"
    d = Daemon(str(tmp_path), s.port("sim0"), hook=False, env_extra={"POCKETMESH_NEIGHBORS_WINDOW": "5"},
               extra=["--mqtt-observer", f"mqtt://127.0.0.1:{broker.port}", "--mqtt-iata", "sea", "--mqtt-observer-neighbors", "24"])
    try:
        got = watch.wait(lambda g: any(t == root + "/neighbors" for t, _, _ in g), seconds=90, what="the neighbours snapshot")
        topic, payload, retained = next(m for m in got if m[0] == root + "/neighbors")
        m = json.loads(payload, object_pairs_hook=lambda pairs: pairs)
        assert [k for k, _ in m] == ["timestamp", "origin", "origin_id", "total_neighbors", "queried_neighbors", "truncated", "self", "neighbors"]
        m = json.loads(payload)
        assert json.dumps(m) == payload.decode() and not retained
        assert m["origin"] == "sim0" and m["origin_id"] == key0 and m["total_neighbors"] == m["queried_neighbors"] == 1 and not m["truncated"]
        (n,) = m["neighbors"]
        assert [k for k in n] == ["pubkey", "snr", "heard_secs_ago", "scopes", "status"]
        assert n["pubkey"] == n["pubkey"].upper() and len(n["pubkey"]) == 64 and n["pubkey"] != key0
        # The simulated repeater lets every region through ("*"); it answered though no contact of the radio.
        assert isinstance(n["snr"], float) and 0 <= n["heard_secs_ago"] < 60 and (n["scopes"], n["status"]) == ("*", "responded"), n
        assert m["self"] == {"scopes": ""}
        assert "neighbours: published 1 of 1 (1 with scopes)" in log_text(tmp_path)
    finally:
        d.stop()
        watch.close()
        broker.stop()
        s.stop()
