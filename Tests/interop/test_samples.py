"""The daemon's signal and battery samples (for the web console's plots), against `pocketmesh sim`:
after some traffic the API ops `samples_signal` and `samples_battery` and the commands `samples
signal|battery` (through the daemon, and from the radio's folder without one) return them; the
daemon panel's data (hub clients, hooks, uptime) is in the API's `status`."""
import json
import os
import socket
import subprocess
import time

from conftest import free_port
from test_daemon_faults import BIN, Daemon, tmpdir_short, wait_for  # noqa: F401
from test_sim_clients import Sim


def run(tmp, *args, no_daemon=False, timeout=60):
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp))
    env.pop("POCKETMESH_NO_DAEMON", None)
    if no_daemon:
        env["POCKETMESH_NO_DAEMON"] = "1"
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env,
                          stdin=subprocess.DEVNULL)


def test_samples_after_traffic(tmpdir_short):
    tmp = tmpdir_short
    sim = Sim("--seed", "5")
    hub = free_port()
    d = Daemon(tmp, sim.port("sim0"), hook=False, default_socket=True,
               extra=("--companion-listen", f"127.0.0.1:{hub}"))
    try:
        d.wait_ready()
        s0 = ["--tcp", f"127.0.0.1:{sim.port('sim0')}"]
        s1 = ["--tcp", f"127.0.0.1:{sim.port('sim1')}", "--timeout", "10"]
        # The battery is read when the link is up, without --low-battery.
        assert wait_for(lambda: d.call({"id": 1, "op": "samples_battery"}).get("samples"), 20), d.call({"id": 2, "op": "status"})
        bat = d.call({"id": 3, "op": "samples_battery"})
        assert bat["ok"] is True and bat["capacity"] == 2048, bat
        assert bat["samples"][0]["millivolts"] > 0 and bat["samples"][0]["time"] > 1_700_000_000, bat

        # Traffic from sim1: a flood advert and a channel message, heard by sim0.
        start = int(time.time())
        for args in (("advert", "--flood"), ("channel", "send", "0", "plot", "me")):
            cp = run(tmp, *s1, *args)
            assert cp.returncode == 0, cp.stderr

        def packets():
            r = d.call({"id": 4, "op": "samples_signal", "since": start - 1})
            return [s for s in r.get("samples", []) if s["kind"] == "packet"]
        assert wait_for(lambda: len(packets()) >= 2, 30), d.call({"id": 5, "op": "samples_signal"})
        sig = d.call({"id": 6, "op": "samples_signal", "since": start - 1})
        assert sig["ok"] is True and sig["capacity"] == 4096
        advert = [s for s in sig["samples"] if s.get("payload_type") == 4]
        assert advert and advert[0]["route"] == "flood" and isinstance(advert[0]["rssi"], int), sig
        assert advert[0]["from"] == sim.nodes["sim1"]["pubkey"][:8], sig
        assert any(s.get("payload_type") == 5 for s in sig["samples"]), sig
        assert all(s["time"] >= start - 1 for s in sig["samples"])
        # limit: the newest; a bad field is refused as for every op.
        assert len(d.call({"id": 7, "op": "samples_signal", "limit": 1})["samples"]) == 1
        bad = d.call({"id": 8, "op": "samples_signal", "limit": 0})
        assert bad["ok"] is False and bad["error"]["code"] == "usage", bad

        # The command line, through the daemon: the same samples.
        cp = run(tmp, "samples", "signal", *s0, "--since", start - 1, "--json")
        assert cp.returncode == 0, cp.stderr
        via_cli = json.loads(cp.stdout)
        assert via_cli["samples"][:len(sig["samples"])] == sig["samples"], (via_cli, sig)
        cp = run(tmp, "samples", "battery", *s0)
        assert cp.returncode == 0 and " mV" in cp.stdout, cp.stdout + cp.stderr
        cp = run(tmp, "samples", "signal", *s0, "--limit", "2")
        assert cp.returncode == 0 and len(cp.stdout.splitlines()) == 2 and "SNR" in cp.stdout, cp.stdout + cp.stderr
        cp = run(tmp, "samples", "signal", *s0, "--since", start - 1)
        assert cp.returncode == 0 and " flood advert 0 hop(s) from " in cp.stdout, cp.stdout + cp.stderr
        cp = run(tmp, "samples", "signal", *s0, "--limit", "0")
        assert cp.returncode == 2, cp.stderr

        # The daemon panel: hub clients, hooks, uptime, in `status`.
        with socket.create_connection(("127.0.0.1", hub), timeout=5):
            assert wait_for(lambda: len(d.call({"id": 9, "op": "status"}).get("hub_clients", [])) == 1, 10)
            st = d.call({"id": 10, "op": "status"})
            assert st["uptime_s"] >= 0 and st["radio_connected"] is True and "hub_contacts" in st, st
    finally:
        d.stop()
        sim.stop()

    # No daemon: read from the radio's folder, the same samples (the daemon synced them when it stopped).
    cp = run(tmp, "samples", "signal", "--state-dir", d.state, "--json", no_daemon=True)
    assert cp.returncode == 0, cp.stderr
    stored = json.loads(cp.stdout)
    assert [s for s in stored["samples"] if s["time"] >= start - 1][:len(sig["samples"])] == sig["samples"]
    cp = run(tmp, "samples", "battery", "--state-dir", d.state, "--json", no_daemon=True)
    assert cp.returncode == 0 and json.loads(cp.stdout)["samples"], cp.stderr
    # A damaged file: the reader says which and what to do; the daemon starts it anew.
    radio = os.path.join(d.state, sim.nodes["sim0"]["pubkey"])
    with open(os.path.join(radio, "signal"), "r+b") as f:
        f.write(b"XXXX")
    cp = run(tmp, "samples", "signal", "--state-dir", d.state, no_daemon=True)
    assert cp.returncode == 7 and "signal is damaged: it is not a sample file" in cp.stderr, cp.stderr
