"""What a client changes or asks through the daemon is what every later reader sees: the daemon
answers the handshake from the radio's current state, forwards every push, and completes commands
the way the firmware answers them. Against `pocketmesh sim`, with the command line going through a
running daemon (the simulated radio takes one TCP client, so a direct connection would evict it)."""
import json
import os
import subprocess
import time

import pytest

from test_daemon_faults import BIN, Daemon, tmpdir_short, wait_for  # noqa: F401
from test_sim_clients import Sim


def pm(tmp, *args, timeout=60, env=None):
    e = dict(os.environ, XDG_RUNTIME_DIR=str(tmp))
    e.pop("POCKETMESH_NO_DAEMON", None)
    e.update(env or {})
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, env=e, timeout=timeout)


@pytest.fixture
def hub(tmpdir_short):
    """sim0 - rpt0 - sim1, a daemon owning sim0, and the command line's link options for sim0.
    The daemon waits 30 s for a radio response, so a command it wrongly holds is plain to see."""
    sim = Sim("--repeaters", "1", "--seed", "11")
    port = sim.port("sim0")
    d = Daemon(tmpdir_short, port, hook=False, default_socket=True, extra=("--timeout", "30"))
    try:
        d.wait_ready()
        yield sim, d, ["--tcp", f"127.0.0.1:{port}"], tmpdir_short
    finally:
        d.stop()
        sim.stop()


def get(tmp, tcp, key):
    r = pm(tmp, "get", key, *tcp, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)[key]


def test_settings_changed_through_the_daemon_are_what_the_next_command_reads(hub):
    sim, d, tcp, tmp = hub
    for name in ("first-name", "second name"):
        assert pm(tmp, "set", "name", name, *tcp).returncode == 0
        assert get(tmp, tcp, "name") == name
        assert json.loads(pm(tmp, "info", *tcp, "--json").stdout)["name"] == name
        assert d.call({"id": 1, "op": "info"})["name"] == name
    # SET_OTHER_PARAMS carries four settings: changing one keeps the others as the radio has them.
    assert pm(tmp, "set", "manual-add", "on", *tcp).returncode == 0
    assert pm(tmp, "set", "multi-acks", "1", *tcp).returncode == 0
    assert pm(tmp, "set", "advert-loc-policy", "1", *tcp).returncode == 0
    assert get(tmp, tcp, "manual-add") is True
    assert get(tmp, tcp, "multi-acks") == 1
    assert pm(tmp, "set", "telemetry", "allow", "flags", "deny", *tcp).returncode == 0
    assert get(tmp, tcp, "manual-add") is True
    assert get(tmp, tcp, "advert-loc-policy") == 1
    assert get(tmp, tcp, "telemetry") == {"base": "allow", "location": "flags", "environment": "deny"}
    assert pm(tmp, "set", "manual-add", "off", *tcp).returncode == 0
    assert get(tmp, tcp, "multi-acks") == 1
    assert get(tmp, tcp, "manual-add") is False
    # Position, TX power and radio parameters too.
    assert pm(tmp, "set", "coords", "45.5", "7.25", *tcp).returncode == 0
    assert pm(tmp, "set", "tx", "5", *tcp).returncode == 0
    info = json.loads(pm(tmp, "info", *tcp, "--json").stdout)
    assert (info["latitude"], info["longitude"], info["tx_power_dbm"]) == (45.5, 7.25, 5)
    # The radio itself agrees (a new connection reads SELF_INFO afresh).
    d.stop()
    direct = pm(tmp, "info", *tcp, "--json", env={"POCKETMESH_NO_DAEMON": "1"})
    assert direct.returncode == 0, direct.stderr
    assert json.loads(direct.stdout)["name"] == "second name"


def test_info_op_has_the_fields_of_info_json(hub):
    sim, d, tcp, tmp = hub
    cli = json.loads(pm(tmp, "info", *tcp, "--json").stdout)
    op = d.call({"id": 7, "op": "info"})
    assert op["id"] == 7 and op["ok"] is True
    for k, v in cli.items():
        assert op.get(k) == v, k
    for k in ("frequency_mhz", "bandwidth_khz", "tx_power_dbm"):
        assert k in op
    for k in ("frequency_khz", "bandwidth_hz", "tx_power"):
        assert k not in op


def test_self_telemetry_through_the_daemon_does_not_hold_the_next_command(hub):
    sim, d, tcp, tmp = hub
    r = pm(tmp, "telemetry", *tcp, "--json", "--timeout", "4")
    assert r.returncode == 0, r.stderr
    # The next commands that need the radio (tuning, battery) must not wait behind it: the
    # daemon's queue would otherwise hold until its own command timeout (30 s here).
    r2 = pm(tmp, "get", "tuning", *tcp, "--json", "--timeout", "10")
    assert r2.returncode == 0, "the self-telemetry reply did not complete the daemon's command: " + r2.stderr
    r3 = pm(tmp, "battery", *tcp, "--json", "--timeout", "10")
    assert r3.returncode == 0, r3.stderr


def test_listen_log_rx_through_the_daemon_hears_packets(hub):
    sim, d, tcp, tmp = hub
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp))
    env.pop("POCKETMESH_NO_DAEMON", None)
    listen = subprocess.Popen([str(BIN), "listen", *tcp, "--log-rx", "--for", "8", "--json"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(1.5)
    # sim1 (no daemon) floods an advert: the repeater relays it and sim0 hears it.
    other = ["--tcp", f"127.0.0.1:{sim.port('sim1')}"]
    assert pm(tmp, "advert", "--flood", *other, env={"POCKETMESH_NO_DAEMON": "1"}).returncode == 0
    out, err = listen.communicate(timeout=30)
    events = [json.loads(l) for l in out.splitlines() if l.strip()]
    heard = [e for e in events if e.get("event") == "log_rx_data"]
    assert heard, f"no log_rx_data event through the daemon: {out!r} {err!r}"
    assert all(len(e["packet"]) > 4 for e in heard)
    # Without --log-rx nothing of the kind shows.
    quiet = pm(tmp, "listen", *tcp, "--for", "3", "--json")
    assert "log_rx_data" not in quiet.stdout


def test_contacts_op_has_the_fields_of_contacts_json(hub):
    sim, d, tcp, tmp = hub
    other = ["--tcp", f"127.0.0.1:{sim.port('sim1')}"]
    assert pm(tmp, "advert", "--flood", *other, env={"POCKETMESH_NO_DAEMON": "1"}).returncode == 0

    def listed():
        r = pm(tmp, "contacts", *tcp, "--json")
        return json.loads(r.stdout) if r.returncode == 0 else None

    # The command prints the list; the op's result holds the same list under "contacts".
    assert wait_for(lambda: any(c["name"] == "sim1" for c in (listed() or [])), 30)
    # The daemon resyncs its store on the advert push: wait until it has the contact too.
    assert wait_for(lambda: any(c["name"] == "sim1" for c in d.call({"id": 2, "op": "contacts"})["contacts"]), 30)
    cli = {c["public_key"]: c for c in listed()}
    api = {c["public_key"]: c for c in d.call({"id": 3, "op": "contacts"})["contacts"]}
    assert set(api) <= set(cli)
    for key, c in api.items():
        assert c == cli[key], key


@pytest.mark.parametrize("op,fields,argv", [
    ("get", {"setting": "name"}, ["get", "name"]),
    ("get", {}, ["get"]),
    ("battery", {}, ["battery"]),
    ("stats", {"type": "packets"}, ["stats", "packets"]),
    ("channel_list", {}, ["channel", "list"]),
    ("telemetry", {}, ["telemetry"]),
])
def test_every_command_is_an_api_op_with_the_fields_of_its_json(hub, op, fields, argv):
    sim, d, tcp, tmp = hub
    cli = pm(tmp, *argv, *tcp, "--json")
    assert cli.returncode == 0, cli.stderr
    expected = json.loads(cli.stdout)
    r = d.call({"id": 41, "op": op, **fields}, timeout=30)
    assert r["id"] == 41 and r["ok"] is True, r
    got = {k: v for k, v in r.items() if k not in ("id", "ok")}
    if not isinstance(expected, dict):
        got = got["result"]
    if op == "stats":  # counters move between the two reads
        assert set(got[fields["type"]]) == set(expected[fields["type"]])
    else:
        assert got == expected


def test_api_ops_change_what_the_command_line_reads_and_fail_like_it(hub):
    sim, d, tcp, tmp = hub
    r = d.call({"id": 1, "op": "set", "setting": "name", "values": ["via-api"]}, timeout=30)
    assert r["ok"] is True, r
    assert get(tmp, tcp, "name") == "via-api"
    r = d.call({"id": 2, "op": "set", "setting": "coords", "values": [45.5, -75.7]}, timeout=30)
    assert r["ok"] is True, r
    info = json.loads(pm(tmp, "info", *tcp, "--json").stdout)
    assert (info["latitude"], info["longitude"]) == (45.5, -75.7)
    # Errors carry the command line's exit code for the same failure.
    for req, argv in [({"op": "contacts_remove", "name": "nobody-here"}, ["contacts", "remove", "nobody-here"]),
                      ({"op": "get", "setting": "bogus"}, ["get", "bogus"]),
                      ({"op": "status", "name": "nobody-here"}, ["status", "nobody-here"])]:
        r = d.call({"id": 3, **req}, timeout=30)
        c = pm(tmp, *argv, *tcp)
        assert r["ok"] is False and r["error"]["exit"] == c.returncode != 0, (req, r, c.stderr)
    # Bad requests: one sentence, exit 2, nothing sent.
    r = d.call({"id": 4, "op": "factory_reset"}, timeout=30)
    assert r["error"]["exit"] == 2 and "yes_erase_everything" in r["error"]["message"]
    r = d.call({"id": 5, "op": "contacts_add", "name": "x"}, timeout=30)
    assert r["error"]["exit"] == 2 and "public_key" in r["error"]["message"]
    assert get(tmp, tcp, "name") == "via-api"
    # The daemon's own status op is still there.
    assert d.call({"id": 6, "op": "status"})["state"] == "ready"
