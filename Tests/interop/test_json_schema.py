"""`--json` as a contract: every operation of the table is run with --json against `pocketmesh sim`
(a repeater, a room server, a protocol 14 radio, a daemon with its store and hooks) and its output
is validated against the JSON Schema that `pocketmesh ops --schema` generates from the table (with
the `jsonschema` package). docs/json-schema.json must be what the binary generates, and an
operation of the table that no step here runs fails the test (unless it is listed in NOT_RUN with
its reason). A failed command prints nothing on stdout, or a result of its own schema.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import pathlib
import subprocess
import tempfile
import time

import jsonschema  # scripts/setup.sh installs it into the interop venv
import pytest

from test_daemon_faults import Daemon
from test_sim_clients import Sim

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))
SHIPPED = REPO / "docs" / "json-schema.json"

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")

# Operations no step runs with --json, and why.
NOT_RUN = {
    "chat": "an interactive terminal program; it takes the link options (--json among them) but prints no JSON "
            "(test_chat.py drives it in tmux)",
    "node check": "checks a radio on a KISS port or an SX1262 and prints no JSON (format none); "
                  "test_node_radio_faults.py runs it against the simulator's KISS modem, good and faulty",
}
# Operations that run here but never succeed, so no output of theirs is validated, and why.
NOT_VALIDATED = {
    "mma": "the simulator's nodes do not answer min/max/avg requests (binary request 04): it times out, stdout empty",
}


def run(*args, env=None, limit=90, stdin=None):
    e = dict(os.environ, POCKETMESH_NO_DAEMON="1")
    e.update(env or {})
    e = {k: v for k, v in e.items() if v is not None}
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=limit, env=e,
                          stdin=subprocess.DEVNULL if stdin is None else stdin)


@pytest.fixture(scope="module")
def schema():
    cp = run("ops", "--schema")
    assert cp.returncode == 0, cp.stderr
    s = json.loads(cp.stdout)
    jsonschema.Draft202012Validator.check_schema(s)
    return s


@pytest.fixture(scope="module")
def table():
    cp = run("ops", "--json")
    assert cp.returncode == 0, cp.stderr
    return {op["cli"]: op for op in json.loads(cp.stdout)["operations"]}


class Checker:
    """Runs commands, validates their --json output, and records which operations ran."""

    def __init__(self, schema, table):
        self.schema, self.table = schema, table
        self.ran, self.validated, self.failures = set(), set(), []
        self.validators = {}
        self.dump = os.environ.get("POCKETMESH_SCHEMA_DUMP")

    def validator(self, op):
        if op not in self.validators:
            name = self.table[op]["result"]["schema"]
            doc = {"$schema": self.schema["$schema"], "$defs": self.schema["$defs"], "$ref": f"#/$defs/{name}"}
            self.validators[op] = jsonschema.Draft202012Validator(doc)
        return self.validators[op]

    def check(self, op, *args, code=0, env=None, limit=90, link=(), json_flag=True):
        """Runs `pocketmesh OP ARGS --json LINK`; the exit code must be `code` and stdout must follow
        OP's schema (a failure's stdout may also be empty). Returns the parsed output."""
        assert op in self.table, f"{op} is not an operation of the table"
        words = op.split()
        started = time.monotonic()
        cp = run(*words, *args, *(["--json"] if json_flag else []), *link, env=env, limit=limit)
        self.ran.add(op)
        if self.dump:
            with open(self.dump, "a") as f:
                f.write(json.dumps({"op": op, "args": list(map(str, args)), "code": cp.returncode,
                                    "seconds": round(time.monotonic() - started, 1),
                                    "out": cp.stdout, "err": cp.stderr}) + "\n")
        if code is not None and cp.returncode != code:
            self.failures.append(f"{op} {args}: exit {cp.returncode}, wanted {code}: {cp.stderr.strip()}")
            return None
        result = self.table[op]["result"]
        if result["format"] == "none":
            return cp.stdout
        if cp.returncode != 0 and not cp.stdout.strip():
            return None
        try:
            docs = ([json.loads(l) for l in cp.stdout.splitlines() if l.strip()] if result["format"] == "json-lines"
                    else [json.loads(cp.stdout)])
        except ValueError as e:
            self.failures.append(f"{op} {args}: not JSON ({e}): {cp.stdout[:300]!r}")
            return None
        if docs:
            self.validated.add(op)
        for d in docs:
            errors = sorted(self.validator(op).iter_errors(d), key=lambda e: list(e.absolute_path))
            for err in errors[:3]:
                self.failures.append(f"{op} {args}: {err.message} at {list(err.absolute_path)} in {json.dumps(d)[:400]}")
        return docs if result["format"] == "json-lines" else docs[0]


@pytest.fixture(scope="module")
def checker(schema, table):
    return Checker(schema, table)


@pytest.fixture(scope="module")
def mesh(tmp_path_factory):
    """sim0 - rpt0 - sim1 with a room server, adverts exchanged, every packet captured."""
    d = tmp_path_factory.mktemp("mesh")
    s = Sim("--repeaters", "1", "--rooms", "1", "--seed", "21", nodes=2, capture=d / "capture.hex", seconds=900)
    s.capture = d / "capture.hex"
    try:
        for n in ("sim0", "sim1"):
            run("advert", "--flood", "--tcp", f"127.0.0.1:{s.port(n)}")
        deadline = time.time() + 40
        while time.time() < deadline:
            got = {c["name"] for c in json.loads(run("contacts", "--json", "--tcp", f"127.0.0.1:{s.port('sim0')}").stdout or "[]")}
            back = {c["name"] for c in json.loads(run("contacts", "--json", "--tcp", f"127.0.0.1:{s.port('sim1')}").stdout or "[]")}
            if {"sim1", "rpt0", "room0"} <= got and "sim0" in back:
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"contacts not exchanged: {got}")
        yield s
    finally:
        s.stop()


def tcp(sim, node):
    return ["--tcp", f"127.0.0.1:{sim.port(node)}", "--timeout", "10"]


def test_shipped_schema_is_what_the_binary_generates(schema):
    assert SHIPPED.exists(), "docs/json-schema.json is missing: pocketmesh ops --schema > docs/json-schema.json"
    assert json.loads(SHIPPED.read_text()) == schema, \
        "docs/json-schema.json differs from `pocketmesh ops --schema`: regenerate it"
    assert SHIPPED.read_text() == run("ops", "--schema").stdout


def test_every_row_has_a_result_and_json_rows_a_schema(schema, table):
    for cli, op in table.items():
        r = op["result"]
        assert r["format"] in ("json", "json-lines", "none"), (cli, r)
        takes_json = any(a["name"] == "json" for a in op["args"])
        if r["format"] == "none":
            assert "schema" not in r and (not takes_json or cli in NOT_RUN), (cli, r)
        else:
            assert takes_json, f"{cli} has a JSON result but no --json"
            assert r["schema"] in schema["$defs"], (cli, r)


def direct_operations(c, sim):
    """Every operation that talks to the radio, straight to the simulated radios."""
    s0, s1 = tcp(sim, "sim0"), tcp(sim, "sim1")
    ops = lambda op, *a, **kw: c.check(op, *a, link=kw.pop("link", s0), **kw)  # noqa: E731
    key1 = sim.nodes["sim1"]["pubkey"]
    contacts = {x["name"]: x for x in ops("contacts list")}
    rpt = contacts["rpt0"]["public_key"][:2]
    ops("info")
    ops("contacts list", "--geojson")
    ops("contacts show", "sim1")
    ops("contacts show", key1)
    ops("contacts add", "5a" * 32, "stranger", "--type", "sensor", "--path", rpt)
    ops("contacts reset-advert-time", "stranger")
    ops("contacts favourite", "stranger", "on")
    ops("contacts favourite", "stranger", "off")
    ops("contacts remove", "stranger")
    ops("contacts reset-path", "sim1")
    ops("contacts share", "sim1")
    own = ops("contacts export")
    ops("contacts export", "sim1")
    ops("contacts uri", "sim1")
    if own:
        ops("contacts import", own["advert"], link=s1)
    uri = (ops("contacts uri", "rpt0") or {}).get("uri") or ""
    if uri:
        ops("contacts import", uri, link=s1)
    ops("contacts import", f"meshcore://contact/add?name=someone&public_key={'6b' * 32}&type=1", link=s1)
    ops("contacts path", "sim1")
    ops("contacts discover-path", "sim1", limit=120)
    ops("contacts set-path", "sim1", rpt)
    ops("contacts permissions", "sim1", "base,location")
    ops("contacts permissions", "sim1", "none")
    ops("contacts connected", "rpt0")
    ops("contacts show", "nobody", code=6)
    # Messages: acknowledged, not waited for, split, and to a channel.
    ops("send", "sim1", "hello", "there")
    ops("send", "--no-wait", "sim1", "no wait")
    ops("send", "--split", "sim1", "word " * 50)
    ops("channel list")
    ops("channel set", "2", "#schema")
    ops("channel set", "3", "private", "--secret", "00112233445566778899aabbccddeeff")
    ops("channel add", "#another")
    ch_uri = (ops("channel uri", "private") or {}).get("uri")
    if ch_uri:
        ops("channel import", ch_uri, link=s1)
    ops("channel send", "0", "hello", "channel")
    ops("channel send", "--repeats-wait", "0", "0", "no", "repeats")
    ops("channel send", "--split", "--repeats-wait", "0", "0", "word " * 50)
    ops("channel data", "0", "65280", "cafe0102")
    ops("channel rekey", "private", "--members", "sim1", limit=120)
    ops("channel remove", "#another")
    ops("sync", link=s1)
    ops("sync", link=s1)
    ops("advert")
    ops("advert", "--flood")
    ops("time get")
    ops("time set", str(int(time.time()) + 5))
    ops("time sync", code=5)  # the clock would go back: the radio refuses (nothing on stdout)
    ops("time sync", link=s1)
    everything = ops("get") or {}
    for name in everything:
        ops("get", name)
    ops("get", "client-repeat")
    ops("set", "name", "sim0")
    ops("set", "tx", "20")
    ops("set", "manual-add", "off")
    ops("set", "coords", "45.5", "-73.6")
    ops("set", "multi-acks", "0")
    ops("set", "auto-add", "chat,repeater")
    ops("set", "auto-add", "0")  # as it was: with chat in it, manual add would still add sim1 below
    ops("set", "flood-scope", "none")
    ops("battery")
    for t in ((), ("core",), ("radio",), ("packets",)):
        ops("stats", *t)
    # A repeater and a room server.
    ops("login", "rpt0", "-p", "password")
    ops("login", "room0", "-p", "hello")
    ops("status", "rpt0")
    ops("status", "room0")
    ops("regions", "rpt0")
    ops("owner", "rpt0")
    ops("clock", "rpt0")
    ops("scope", "#north")
    ops("scope", "none")
    ops("scope", "default")
    ops("telemetry")
    ops("telemetry", "rpt0")
    ops("neighbours", "rpt0", limit=120)
    ops("acl", "rpt0")
    ops("cmd", "rpt0", "ver")
    ops("cmd", "rpt0", "get", "name")
    ops("trace", rpt)
    ops("request", "rpt0", "01")
    ops("mma", "rpt0", code=None)
    ops("discover", "--for", "4", "--type", "repeater")
    ops("logout", "room0")
    ops("login", "room0", "--forget")
    ops("logout", "rpt0", "--forget")
    ops("sign", "cafe" * 100)
    key = ops("key export") or {}
    if key:
        ops("key import", key["private_key"])
    ops("raw", "16")
    ops("raw-data", "", "01020304")
    packets = [l.strip() for l in sim.capture.read_text().splitlines() if l.strip()]
    ops("raw-packet", packets[-1])
    ops("cli", "ver", code=2)  # protocol 13: refused before anything is sent (nothing on stdout)
    # sim0's position reaches sim1 with its next advert: a GeoJSON feature.
    ops("advert", "--flood")
    deadline = time.time() + 20
    while time.time() < deadline and not (ops("contacts list", "--geojson", link=s1) or {}).get("features"):
        time.sleep(0.5)


def test_every_operation_output_follows_its_schema(checker, table, mesh, tmp_path):
    c = checker
    direct_operations(c, mesh)
    assert not c.failures, "\n".join(c.failures)


def through_the_daemon(c, sim, tmp):
    """A daemon owns sim0 (its hook always fails, given up after one run): the operations the daemon
    answers itself, the store's and the hooks', and others through it."""
    env = {"XDG_RUNTIME_DIR": str(tmp), "POCKETMESH_NO_DAEMON": None}
    s0, s1 = tcp(sim, "sim0"), tcp(sim, "sim1")
    via = lambda op, *a, **kw: c.check(op, *a, link=kw.pop("link", s0), env=env, **kw)  # noqa: E731
    store = lambda op, *a, **kw: c.check(op, *a, link=s0[:2], env=env, **kw)  # noqa: E731
    direct = lambda op, *a, **kw: c.check(op, *a, link=kw.pop("link", s1), **kw)  # noqa: E731
    direct("set", "manual-add", "on", link=s0)
    rpt = {x["name"]: x for x in direct("contacts list", link=s0)}["rpt0"]["public_key"][:2]
    d = Daemon(str(tmp), sim.port("sim0"), hook=False, default_socket=True,
               extra=("--on-message", "/bin/false", "--hook-attempts", "1"))
    try:
        d.wait_ready()
        state = ["--state-dir", d.state]
        for op, args in (("info", ()), ("contacts list", ()), ("contacts show", ("sim1",)), ("get", ()), ("stats", ()),
                         ("battery", ()), ("channel list", ()), ("advert", ()), ("time get", ()),
                         ("send", ("sim1", "through", "the", "daemon")), ("send", ("--no-wait", "sim1", "x")),
                         ("channel send", ("0", "daemon", "beacon")),
                         ("channel send", ("--repeats-wait", "0", "0", "quiet")),
                         ("contacts path", ("sim1",)), ("telemetry", ()), ("get", ("name",)), ("set", ("name", "sim0")),
                         ("login", ("rpt0", "-p", "password")), ("status", ("rpt0",)), ("cmd", ("rpt0", "ver")),
                         ("trace", (rpt,)), ("contacts connected", ("rpt0",))):
            via(op, *args)
        # A message for sim0: stored, its hook fails and is given up.
        direct("send", "sim0", "hook", "me")
        deadline = time.time() + 30
        failed = []
        while time.time() < deadline and not failed:
            failed = (store("hooks failed") or {}).get("failed") or []
            time.sleep(0.5)
        via("sync")
        if failed:
            store("hooks retry", str(failed[0]["id"]))
            deadline = time.time() + 30
            while time.time() < deadline and not (store("hooks failed") or {}).get("failed"):
                time.sleep(0.5)
            store("hooks drop", str(failed[0]["id"]))
        store("hooks drop", "999999", code=6)
        store("chats", *state)
        store("history", "sim1", *state)
        store("history", "Public", *state, "--limit", "5")
        store("history", "nobody-at-all", *state, code=6)
        store("samples signal")
        store("samples battery", "--limit", "5")
        store("samples signal", *state, "--since", "0")
        # An advert of a node that is not a contact (manual add): pending, then added.
        via("contacts remove", "sim1")
        pending = []
        deadline = time.time() + 30
        while time.time() < deadline and not pending:
            direct("advert", "--flood")
            time.sleep(1)
            pending = store("contacts pending") or []
        if pending:
            store("contacts add-pending", pending[0]["public_key"][:8])
        store("contacts pending", "--clear")
        store("contacts add-pending", "ffffffff", code=6)
    finally:
        d.stop()
        direct("set", "manual-add", "off", link=s0)


def test_through_a_daemon(checker, mesh, tmp_path_factory):
    c = checker
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="pm-schema-"))
    through_the_daemon(c, mesh, tmp)
    assert not c.failures, "\n".join(c.failures)


def test_protocol_14_and_the_radio_erased(checker, tmp_path):
    """The radio's own CLI and a CLI command to a companion (protocol 14); then reboot and factory reset."""
    c = checker
    sim = Sim("--protocol", "14", "--seed", "5", nodes=2)
    try:
        s0, s1 = tcp(sim, "sim0"), tcp(sim, "sim1")
        deadline = time.time() + 30
        while time.time() < deadline:
            run("advert", "--flood", *s0)
            run("advert", "--flood", *s1)
            time.sleep(1)
            if "sim1" in run("contacts", *s0).stdout and "sim0" in run("contacts", *s1).stdout:
                break
        c.check("cli", "ver", link=s0)
        c.check("contacts permissions", "sim0", "cli", link=s1)
        c.check("cmd", "sim1", "ver", link=s0)
        c.check("cmd", "sim0", "ver", link=s1, code=4, limit=120)  # no permission there: no reply, its messages
        c.check("reboot", link=s1)
        c.check("factory-reset", "--yes-erase-everything", link=s0)
    finally:
        sim.stop()
    assert not c.failures, "\n".join(c.failures)


def test_local_commands(checker, tmp_path):
    """The commands that only run on this host."""
    c = checker
    cfg = tmp_path / "config.toml"
    cfg.write_text('default_radio = "home"\n[radio.home]\ntcp = "127.0.0.1:9"\ntimeout = 7\n'
                   '[radio.home.daemon]\nname = "home"\nhook-attempts = 3\n[radio.spare]\nserial = "/dev/ttyUSB9"\n')
    env = {"POCKETMESH_CONFIG": str(cfg)}
    c.check("config show", env=env)
    c.check("config path", env=env, json_flag=False)
    c.check("config check", env=env, json_flag=False)
    c.check("ops")
    c.check("completions", "bash", json_flag=False)
    c.check("help", "send", json_flag=False)
    c.check("demo", "--seed", "3", json_flag=False)
    c.check("scan", code=None)
    # `sim` and `daemon` ran as the other tests' fixtures, `node run` and `node cli` run in
    # test_node*.py; none of them prints JSON, and --json is refused (exit 2).
    for op in ("sim", "daemon", "node run"):
        c.check(op, code=2)
    c.check("node cli", "get name", code=2)
    assert not c.failures, "\n".join(c.failures)


def test_listen(checker, mesh):
    """JSON Lines: a message, an advert and the packets heard, one event per line."""
    import threading
    c = checker
    s0 = tcp(mesh, "sim0")
    later = threading.Timer(2, lambda: (run("send", "--no-wait", "sim1", "listen", "to", "this", *s0),
                                          run("channel", "send", "--repeats-wait", "0", "0", "and this", *s0),
                                          run("advert", "--flood", *s0)))
    later.start()
    lines = c.check("listen", "--for", "10", "--log-rx", link=tcp(mesh, "sim1"), limit=60) or []
    later.join()
    events = {e.get("event") for e in lines}
    assert {"message", "log_rx_data"} <= events, events
    assert not c.failures, "\n".join(c.failures)


def test_the_schema_rejects_what_it_does_not_describe(checker):
    """The schema is strict: an extra field, a wrong type or a missing field fails validation."""
    contact = {"name": "a", "public_key": "00" * 32, "type": "chat", "flags": 0, "path_length": -1, "path": "",
               "last_advert": 0, "latitude": 0, "longitude": 0.5, "lastmod": 0}
    v = checker.validator("contacts show")
    assert v.is_valid(contact)
    assert not v.is_valid(dict(contact, extra=1))
    assert not v.is_valid(dict(contact, flags="0"))
    assert not v.is_valid(dict(contact, public_key="XYZ"))
    assert not v.is_valid({k: x for k, x in contact.items() if k != "name"})
    assert not checker.validator("contacts list").is_valid([dict(contact, type="toaster")])
    assert not checker.validator("send").is_valid({"status": "maybe", "to": "a", "attempts": 1, "flood": False})
    message = {"kind": "channel", "channel": 0, "timestamp": 1, "hops": None, "snr": 8, "text": "hi"}
    assert checker.validator("sync").is_valid([message])
    assert not checker.validator("sync").is_valid([dict(message, kind="direct")])  # a direct message has from, no channel
    assert not checker.validator("sync").is_valid([{k: x for k, x in message.items() if k != "channel"}])
    # A channel datagram's frame has no timestamp, so neither has its JSON.
    data = {"kind": "channel_data", "channel": 0, "data_type": 65280, "hops": 0, "snr": 8, "data": "cafe"}
    assert checker.validator("sync").is_valid([data])
    assert not checker.validator("sync").is_valid([dict(data, timestamp=0)])
    command = {"kind": "cli_command", "from": "00" * 6, "timestamp": 1, "hops": None, "snr": None, "text": "ver"}
    assert checker.validator("sync").is_valid([command])
    # One name for a message's kind: `kind`, as in the hooks' and the store's JSON; never `type`.
    assert not checker.validator("sync").is_valid([dict((("type" if k == "kind" else k), x) for k, x in command.items())])


def test_no_schema_accepts_an_empty_object(schema, checker):
    """Every object schema with properties requires some (or at least one, for the results that
    print what was asked for: get, stats), so `{}` never validates as a result."""
    loose = []

    def walk(o, path):
        if isinstance(o, dict):
            if o.get("type") == "object" and o.get("properties") and not o.get("required") and not o.get("minProperties"):
                loose.append(path)
            for k, v in o.items():
                walk(v, f"{path}/{k}")
        elif isinstance(o, list):
            for i, v in enumerate(o):
                walk(v, f"{path}/{i}")

    walk(schema, "")
    assert not loose, f"object schemas that accept {{}}: {loose}"
    for op in ("get", "stats"):
        assert not checker.validator(op).is_valid({}), op
    assert checker.validator("get").is_valid({"tx": 20})


def test_coverage(checker, table):
    """Runs last (pytest keeps the file's order): every operation ran, and every one with JSON output
    printed some that was validated."""
    missing = sorted(set(table) - checker.ran - set(NOT_RUN))
    assert not missing, f"operations of the table that no step runs with --json: {missing}"
    json_ops = {cli for cli, op in table.items() if op["result"]["format"] != "none"}
    unchecked = sorted(json_ops - checker.validated - set(NOT_VALIDATED))
    assert not unchecked, f"operations whose --json output no step validated: {unchecked}"
