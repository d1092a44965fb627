"""One grammar for every command, checked over the whole command tree (read from the binary's own
`--experimental-dump-help`): the common options mean the same before the command, between the
words of its path and after it; a value that starts with "-" is a value; numbers like inf, nan
and 1e300 are refused with exit 2, never a crash. Then the examples against `pocketmesh sim`.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import pathlib
import subprocess

import pytest

from test_sim_clients import Sim

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")

ENV = dict(os.environ, POCKETMESH_NO_DAEMON="1", XDG_STATE_HOME="/nonexistent-pm-state", XDG_RUNTIME_DIR="/nonexistent-pm-run")
# A loopback port nothing listens on: commands fail at the link, the same way whatever the order.
CLOSED = "127.0.0.1:9"
NUMBER_OPTIONS = {"timeout", "for", "hook-timeout", "drain-interval", "loss", "snr", "response-timeout", "seconds"}


def run(*args, timeout=30):
    cp = subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=timeout, env=ENV)
    return cp.returncode, cp.stdout, cp.stderr


def leaves():
    """(path, option names, positional count) of every command a user runs."""
    tree = json.loads(subprocess.run([str(BIN), "--experimental-dump-help"], capture_output=True, text=True, check=True).stdout)
    out = []

    def walk(c, path):
        subs = [s for s in c.get("subcommands") or [] if s["commandName"] != "help"]
        if path and (not subs or c.get("defaultSubcommand")) and c.get("shouldDisplay", True):
            args = c.get("arguments") or []
            names = {n["name"] for a in args if a["kind"] != "positional" for n in a.get("names") or []}
            positionals = [a for a in args if a["kind"] == "positional" and not a.get("isOptional", False)]
            out.append((path, names, len(positionals), args))
        for s in subs:
            walk(s, path + [s["commandName"]])

    walk(tree["command"], [])
    return out


LEAVES = leaves()
LINKED = [(p, n) for p, names, n, _ in LEAVES if "tcp" in names and "json" in names and "timeout" in names]


def test_the_tree_is_read():
    paths = [" ".join(p) for p, _ in LINKED]
    for expected in ["info", "contacts list", "set", "channel send", "send", "status"]:
        assert expected in paths


@pytest.mark.parametrize("path,positionals", LINKED, ids=[" ".join(p) for p, _ in LINKED])
def test_common_options_anywhere(path, positionals):
    values = ["x"] * positionals
    opts = ["--tcp", CLOSED, "--timeout", "2", "--json"]
    orders = [opts + path + values, path + opts + values, path + values + opts]
    if len(path) > 1:
        orders.append(path[:1] + opts + path[1:] + values)  # between the words of the path
    results = [run(*o) for o in orders]
    first = results[0]
    assert first[0] in (2, 3, 6), first  # a link failure, or a usage/not-found sentence
    assert "Unknown option" not in first[2] and "Unexpected argument" not in first[2], first
    for r in results[1:]:
        assert r == first, (orders, results)


NUMBERED = [(p, opt, "tcp" in names, n) for p, names, n, _ in LEAVES for opt in sorted(names & NUMBER_OPTIONS)]


@pytest.mark.parametrize("path,option,linked,positionals", NUMBERED, ids=[" ".join(p) + " --" + o for p, o, _, _ in NUMBERED])
@pytest.mark.parametrize("value", ["inf", "nan", "1e300", "-inf"])
def test_numbers_that_are_not_usable_are_refused(path, option, linked, positionals, value):
    # The other options and values are right, so only the number can be refused.
    args = [*path, *(["x"] * positionals), f"--{option}", value] + (["--tcp", CLOSED] if linked else [])
    code, out, err = run(*args)
    assert code == 2, (args, code, out, err)
    assert err.strip().count("\n") <= 4 and "Fatal error" not in err


@pytest.fixture(scope="module")
def sim():
    s = Sim(nodes=2)
    yield s
    s.stop()


def pm(sim, *args):
    return run("-t", f"127.0.0.1:{sim.port('sim0')}", "--timeout", "10", *args, timeout=60)


def test_negative_values_are_values(sim):
    assert pm(sim, "set", "coords", "45.42", "-75.70")[0] == 0
    code, out, err = pm(sim, "--json", "get", "coords")
    assert code == 0, err
    got = json.loads(out)["coords"]
    assert abs(got["latitude"] - 45.42) < 1e-6 and abs(got["longitude"] + 75.70) < 1e-6
    # options after the values, and a negative value right after an option's own value
    code, out, err = run("set", "coords", "-33.86", "-151.2", "-t", f"127.0.0.1:{sim.port('sim0')}")
    assert code == 0, err
    assert pm(sim, "set", "tx", "-0")[0] == 0


def test_text_starting_with_a_dash_is_sent(sim):
    code, out, err = pm(sim, "channel", "send", "0", "-3 C outside")
    assert code == 0, err
    code, out, err = run("channel", "send", "0", "-12.5", "--tcp", f"127.0.0.1:{sim.port('sim0')}", "--json")
    assert code == 0, err
    assert json.loads(out)


def test_bad_numbers_in_settings_change_nothing(sim):
    before = pm(sim, "--json", "get", "radio")
    for values in (["inf", "250", "11", "5"], ["1e300", "250", "11", "5"], ["nan", "250", "11", "5"], ["869.525", "250", "13", "5"]):
        code, out, err = pm(sim, "set", "radio", *values)
        assert code == 2 and err.startswith("pocketmesh: "), (values, code, err)
    assert pm(sim, "--json", "get", "radio") == before


def test_contacts_as_geojson():
    s = Sim(nodes=3)
    try:
        def at(node, *args):
            return run("-t", f"127.0.0.1:{s.port(node)}", "--timeout", "10", *args, timeout=60)
        assert at("sim1", "set", "coords", "45.5", "-73.6")[0] == 0
        assert at("sim1", "set", "advert-loc-policy", "1")[0] == 0  # share the position in adverts
        assert at("sim1", "advert", "--flood")[0] == 0
        assert at("sim2", "advert", "--flood")[0] == 0  # no position: left out of the map
        import time
        deadline = time.time() + 20
        while time.time() < deadline:
            code, out, err = at("sim0", "contacts", "--json")
            names = {c["name"] for c in json.loads(out)} if code == 0 else set()
            if {"sim1", "sim2"} <= names:
                break
            time.sleep(0.5)
        code, out, err = at("sim0", "contacts", "--geojson")
        assert code == 0, err
        fc = json.loads(out)
        assert fc["type"] == "FeatureCollection"
        assert [f["properties"]["name"] for f in fc["features"]] == ["sim1"]
        f = fc["features"][0]
        assert f["geometry"] == {"type": "Point", "coordinates": [-73.6, 45.5]}
        p = f["properties"]
        assert p["type"] == "chat" and p["key_prefix"] == s.nodes["sim1"]["pubkey"][:12]
        assert p["last_heard"] > 0 and p["last_heard_utc"].endswith("Z") and "path_length" in p
    finally:
        s.stop()
