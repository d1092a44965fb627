"""The pocketmesh CLI against an openhop-core companion peer (third-party device side), over TCP
and over a pty. The peer's clock is real time: ACKs take about 1.4 s (direct) to 4.5 s (flood)."""
import time

import pytest

from conftest import free_port, wait_for

T = ["--timeout", "10"]


def contact_names(pm, link):
    r = pm(*link, "contacts", "--json", *T)
    if r.code != 0:
        return []
    return [c["name"] for c in r.json()]


@pytest.fixture(scope="session")
def introduced(peer, pm):
    """Both nodes advertised and know each other as contacts."""
    a, b = peer.nodes
    for n in (a, b):
        r = pm(*n.tcp, "advert", *T)
        assert r.code == 0, r
    assert wait_for(lambda: b.name in contact_names(pm, a.tcp)), "sim0 never listed sim1 after adverts"
    assert wait_for(lambda: a.name in contact_names(pm, b.tcp)), "sim1 never listed sim0 after adverts"
    return peer


# --- info ---------------------------------------------------------------------------------------

def test_info_tcp_json(peer, pm):
    n = peer.nodes[0]
    r = pm(*n.tcp, "info", "--json", *T)
    assert r.code == 0, r
    info = r.json()
    assert info["name"] == n.name
    assert info["public_key"] == n.pubkey
    assert info["protocol_version"] >= 3
    assert "frequency_mhz" in info


def test_info_tcp_text(peer, pm):
    n = peer.nodes[1]
    r = pm(*n.tcp, "info", *T)
    assert r.code == 0, r
    assert f"name: {n.name}" in r.out
    assert n.pubkey in r.out


def test_info_over_pty(peer, pm, pty_node):
    r = pm(*pty_node, "info", "-j", *T)
    assert r.code == 0, r
    assert r.json()["public_key"] == peer.nodes[0].pubkey


# --- contacts -----------------------------------------------------------------------------------

def test_contacts_after_adverts(introduced, pm):
    a, b = introduced.nodes
    r = pm(*a.tcp, "contacts", "--json", *T)
    assert r.code == 0, r
    listed = {c["name"]: c for c in r.json()}
    assert listed[b.name]["public_key"] == b.pubkey
    r = pm(*a.tcp, "contacts", "show", b.pubkey[:8], "--json", *T)
    assert r.code == 0, r
    assert r.json()["name"] == b.name


def test_contacts_over_pty(introduced, pm, pty_node):
    r = pm(*pty_node, "contacts", *T)
    assert r.code == 0, r
    assert introduced.nodes[1].name in r.out


# --- direct messages with ACK ---------------------------------------------------------------------

def test_send_with_ack_tcp(introduced, pm):
    a, b = introduced.nodes
    r = pm(*a.tcp, "send", b.name, "hello over tcp", "--json", "--timeout", "30", limit=120)
    assert r.code == 0, r
    res = r.json()
    assert res["status"] == "acked"
    assert res["attempts"] >= 1
    assert res["round_trip_ms"] > 0
    got = wait_for(lambda: [m for m in pm(*b.tcp, "sync", "--json", *T).json() if m["text"] == "hello over tcp"])
    assert got, "the recipient never got the message"
    assert got[0]["kind"] == "direct"
    assert got[0]["from"] == a.pubkey[:12]


def test_send_with_ack_over_pty(introduced, pm, pty_node):
    b = introduced.nodes[1]
    r = pm(*pty_node, "send", b.pubkey[:10], "hello over a pty", "--json", "--timeout", "30", limit=120)
    assert r.code == 0, r
    assert r.json()["status"] == "acked"


def test_send_no_wait(introduced, pm):
    a, b = introduced.nodes
    r = pm(*b.tcp, "send", a.name, "fire and forget", "--no-wait", "--json", *T)
    assert r.code == 0, r
    assert r.json()["status"] == "sent"


# --- channels -----------------------------------------------------------------------------------

def test_channel_send_and_receive(introduced, pm):
    a, b = introduced.nodes
    r = pm(*a.tcp, "channel", "list", "--json", *T)
    assert r.code == 0, r
    assert any(c["name"] == "Public" and c["index"] == 0 for c in r.json())
    r = pm(*a.tcp, "channel", "send", "Public", "hi everyone", *T)
    assert r.code == 0, r

    def received():
        r = pm(*b.tcp, "sync", "--json", *T)
        assert r.code == 0, r
        return [m for m in r.json() if m["kind"] == "channel" and "hi everyone" in m["text"]]
    got = wait_for(received)
    assert got, "the channel message never arrived"
    assert got[0]["channel"] == 0
    assert got[0]["text"] == f"{a.name}: hi everyone"


def test_hashtag_channel_round_trip(introduced, pm):
    a, b = introduced.nodes
    for n in (a, b):
        r = pm(*n.tcp, "channel", "set", "3", "#pmtest", "--json", *T)
        assert r.code == 0, r
        # key = SHA256("#pmtest")[0..16]
        import hashlib
        assert r.json()["secret"] == hashlib.sha256(b"#pmtest").hexdigest()[:32]
    r = pm(*a.tcp, "channel", "send", "#pmtest", "tagged", *T)
    assert r.code == 0, r
    got = wait_for(lambda: [m for m in pm(*b.tcp, "sync", "--json", *T).json()
                            if m["kind"] == "channel" and m["channel"] == 3])
    assert got and got[0]["text"].endswith(": tagged")
    for n in (a, b):
        assert pm(*n.tcp, "channel", "remove", "3", *T).code == 0


def test_sync_empty_queue(peer, pm):
    n = peer.nodes[0]
    r = pm(*n.tcp, "sync", "--json", *T)
    assert r.code == 0, r
    assert isinstance(r.json(), list)


# --- settings -----------------------------------------------------------------------------------

def test_settings_round_trip_tcp(peer, pm):
    n = peer.nodes[1]
    r = pm(*n.tcp, "set", "coords", "52.5", "13.25", *T)
    assert r.code == 0, r
    r = pm(*n.tcp, "get", "coords", "--json", *T)
    assert r.code == 0, r
    c = r.json()["coords"]
    assert abs(c["latitude"] - 52.5) < 1e-5 and abs(c["longitude"] - 13.25) < 1e-5
    r = pm(*n.tcp, "set", "name", "renamed1", *T)
    assert r.code == 0, r
    assert pm(*n.tcp, "get", "name", *T).out.strip() == "renamed1"
    assert pm(*n.tcp, "set", "name", n.name, *T).code == 0
    assert pm(*n.tcp, "info", "-j", *T).json()["name"] == n.name


def test_settings_round_trip_over_pty(peer, pm, pty_node):
    r = pm(*pty_node, "set", "tx", "14", *T)
    assert r.code == 0, r
    r = pm(*pty_node, "get", "tx", "--json", *T)
    assert r.code == 0, r
    assert r.json()["tx"] == 14


def test_time_get(peer, pm):
    r = pm(*peer.nodes[0].tcp, "time", "--json", *T)
    assert r.code == 0, r
    assert abs(r.json()["epoch"] - time.time()) < 120


# --- exit codes ---------------------------------------------------------------------------------

def test_refused_connection_exits_3(pm):
    port = free_port()
    r = pm("--tcp", f"127.0.0.1:{port}", "info", *T)
    assert r.code == 3, r
    assert "refused" in r.err
    assert r.out == ""


def test_missing_serial_device_exits_3(pm, tmp_path):
    r = pm("--serial", str(tmp_path / "nope"), "info", *T)
    assert r.code == 3, r


def test_unknown_contact_exits_6(peer, pm):
    r = pm(*peer.nodes[0].tcp, "send", "nobody-here", "hi", *T)
    assert r.code == 6, r
    assert "nobody-here" in r.err


def test_unknown_channel_exits_6(peer, pm):
    r = pm(*peer.nodes[0].tcp, "channel", "send", "no-such-channel", "hi", *T)
    assert r.code == 6, r


@pytest.mark.parametrize("args", [
    ["send"],                                   # missing arguments
    ["info", "--timeout", "-1", "--tcp", "127.0.0.1:1"],
    ["no-such-command"],
    ["info"],                                   # no link given
    ["info", "--tcp", "127.0.0.1:99999"],       # bad port
    ["factory-reset", "--tcp", "127.0.0.1:1"],  # needs the confirmation flag
])
def test_usage_errors_exit_2(pm, args):
    r = pm(*args)
    assert r.code == 2, r
    assert r.err.strip(), "usage errors explain themselves on stderr"


def test_ble_without_adapter_exits_3(pm):
    r = pm("--ble", "AA:BB:CC:DD:EE:FF", "info", *T)
    assert r.code == 3, r


def test_help_exits_0(pm):
    r = pm("--help")
    assert r.code == 0
    assert "Exit codes" in r.out


def test_silent_radio_times_out_with_exit_4(pm):
    """A TCP peer that accepts but never answers: the handshake times out (exit 4)."""
    import socket
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        port = srv.getsockname()[1]
        r = pm("--tcp", f"127.0.0.1:{port}", "info", "--timeout", "1", limit=30)
    assert r.code == 4, r
    assert "did not answer" in r.err


def test_listen_json_lines(introduced, pm, binary):
    """listen --json prints one JSON object per line and stops by itself after --for."""
    import json
    import subprocess
    a, b = introduced.nodes
    proc = subprocess.Popen([str(binary), *b.tcp, "listen", "--json", "--for", "8"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.5)
        r = pm(*a.tcp, "channel", "send", "0", "listen check", *T)
        assert r.code == 0, r
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert any(e.get("event") == "message" and e.get("text", "").endswith("listen check") for e in events), out
