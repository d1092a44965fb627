"""The config file: named radios and the default one, `--radio` and `POCKETMESH_RADIO` (command
line > environment > file), the daemon's settings from the file, `config path|show|check`, and
bad files (one sentence naming the line, exit 2, nothing touched).

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import pathlib
import signal
import subprocess
import tempfile
import time

import pytest

from test_sim_clients import Sim

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")


@pytest.fixture(scope="module")
def sim():
    s = Sim(nodes=2)
    yield s
    s.stop()


@pytest.fixture
def home(tmp_path):
    cfg = tmp_path / "config"
    (cfg / "pocketmesh").mkdir(parents=True)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    env = dict(os.environ, XDG_CONFIG_HOME=str(cfg), XDG_RUNTIME_DIR=str(run_dir), XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("POCKETMESH_RADIO", None)
    env.pop("POCKETMESH_CONFIG", None)
    return tmp_path, cfg / "pocketmesh" / "config.toml", env


def run(env, *args, extra_env=None, timeout=60):
    e = dict(env, **(extra_env or {}))
    cp = subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=timeout, env=e)
    return cp.returncode, cp.stdout, cp.stderr


def write(path, text):
    path.write_text(text)


def key_of(env, *args, **kw):
    code, out, err = run(env, *args, "--json", "info", **kw)
    assert code == 0, err
    return json.loads(out)["public_key"]


def test_named_radios_and_precedence(sim, home):
    _, path, env = home
    env = dict(env, POCKETMESH_NO_DAEMON="1")
    write(path, f'default_radio = "home"\n[radio.home]\ntcp = "127.0.0.1:{sim.port("sim0")}"\n'
                f'[radio.other]\ntcp = "127.0.0.1:{sim.port("sim1")}"  # the second node\ntimeout = 7\n')
    k0, k1 = sim.nodes["sim0"]["pubkey"], sim.nodes["sim1"]["pubkey"]
    assert key_of(env) == k0                                   # the file's default
    assert key_of(env, "--radio", "other") == k1               # the command line
    assert key_of(env, extra_env={"POCKETMESH_RADIO": "other"}) == k1   # the environment over the file
    assert key_of(env, "--radio", "home", extra_env={"POCKETMESH_RADIO": "other"}) == k0  # the command line over it
    assert key_of(env, "--tcp", f"127.0.0.1:{sim.port('sim1')}") == k1  # a link option over the default
    code, out, err = run(env, "info", "--radio", "nope")
    assert code == 2 and "no radio named" in err and err.count("\n") == 1
    code, out, err = run(env, "info", extra_env={"POCKETMESH_RADIO": "nope"})
    assert code == 2 and "POCKETMESH_RADIO" in err
    code, out, err = run(env, "config", "path")
    assert code == 0 and out.strip() == str(path)
    code, out, err = run(env, "config", "show", "--json")
    shown = json.loads(out)
    assert shown["default_radio"] == "home" and [r["name"] for r in shown["radios"]] == ["home", "other"]
    assert run(env, "config", "check")[0] == 0


@pytest.mark.parametrize("text,line", [
    ('default_radio = "x"\n', 1),
    ('default_radio = home\n', 1),
    ('[radio.a]\ntcp = "127.0.0.1:9"\nserial = "/dev/null"\n', 1),
    ('[radio.a]\ntcp = "127.0.0.1:9\n', 2),
    ('\n[radio.a]\ntcp = "127.0.0.1:9"\ncolour = "red"\n', 4),
    ('[radio.a]\ntcp = "127.0.0.1:9"\n[radio.a.daemon]\nno-such-option = 1\n', 4),
    ('[radio.a]\ntcp = "127.0.0.1:9"\ntimeout = inf\n', 3),
    ('[radio.a]\ntcp = "127.0.0.1:9"\n[radio.a]\n', 3),
])
def test_bad_files_name_the_line_and_touch_nothing(sim, home, text, line):
    _, path, env = home
    env = dict(env, POCKETMESH_NO_DAEMON="1")
    write(path, text)
    code, out, err = run(env, "config", "check")
    assert code == 2, (code, out, err)
    assert f"line {line}:" in err and err.count("\n") == 1, err
    # A command that would use the file refuses the same way, before opening any link.
    code, out, err = run(env, "set", "name", "changed", extra_env={"POCKETMESH_RADIO": "a"})
    assert code == 2 and f"line {line}:" in err, err
    # A command given its link on the command line does not need the file.
    code, out, err = run(env, "--tcp", f"127.0.0.1:{sim.port('sim0')}", "get", "name")
    assert code == 0 and out.strip() != "changed", err


def test_the_daemon_from_the_file_and_commands_through_it(sim, home):
    tmp, path, env = home
    write(path, f'default_radio = "home"\n[radio.home]\ntcp = "127.0.0.1:{sim.port("sim0")}"\n'
                f'[radio.home.daemon]\nname = "cfgd"\nstate-dir = "{tmp / "dstate"}"\ndrain-interval = 2\n')
    log = open(tmp / "daemon.log", "w")
    d = subprocess.Popen([str(BIN), "daemon"], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        sock = tmp / "run" / "pocketmesh" / "cfgd.sock"
        deadline = time.time() + 20
        while not sock.exists() and time.time() < deadline:
            time.sleep(0.1)
        assert sock.exists(), (tmp / "daemon.log").read_text()
        time.sleep(1)
        # No link option anywhere: the default radio, carried through its daemon (a direct
        # connection would evict the daemon's, which the sim allows one of).
        assert key_of(env) == sim.nodes["sim0"]["pubkey"]
        code, out, err = run(env, "--json", "contacts")
        assert code == 0, err
        time.sleep(0.5)
        text = (tmp / "daemon.log").read_text()
        assert "(attempt 2)" not in text and "lost" not in text, text
        assert (tmp / "dstate").is_dir()
    finally:
        d.send_signal(signal.SIGTERM)
        d.wait(timeout=20)
        log.close()


HOSTILE = [
    # A value nested 200,000 arrays deep, and a table header with 100,000 dotted parts: these
    # overflowed the stack (SIGSEGV) in every command that read the file.
    ("x = " + "[" * 200_000 + "\n", 1, "nested more than 64 levels"),
    ('default_radio = "a"\n[' + ".".join(["a"] * 100_000) + "]\n", 2, "more than 64 dotted parts"),
    (".".join(["k"] * 100_000) + " = 1\n", 1, "more than 64 dotted parts"),
]


@pytest.mark.parametrize("text,line,says", HOSTILE, ids=["nested-arrays", "dotted-header", "dotted-key"])
def test_hostile_files_are_errors_not_crashes(home, text, line, says):
    _, path, env = home
    env = dict(env, POCKETMESH_NO_DAEMON="1", SWIFT_BACKTRACE="enable=no")
    write(path, text)
    for args in (["config", "check"], ["info"], ["daemon"]):
        code, out, err = run(env, *args)
        assert code == 2, (args, code, err[:300])
        assert f"line {line}: " in err and says in err and err.count("\n") == 1, err[:300]


def test_a_file_over_the_size_limit_is_refused_not_cut_short(home):
    _, path, env = home
    env = dict(env, POCKETMESH_NO_DAEMON="1")
    head = '[radio.a]\ntcp = "127.0.0.1:9"\n'
    # Good for its first MiB; a setting past it used to be dropped without a word.
    write(path, head + "#" * ((1 << 20) - len(head) - 1) + "\n" + 'colour = "red"\n')
    code, out, err = run(env, "config", "check")
    assert code == 2 and "larger than 1024 KiB" in err and err.count("\n") == 1, (code, out, err)
    write(path, head + "#" * ((1 << 20) - len(head) - 1) + "\n")
    assert run(env, "config", "check")[0] == 0
    path.write_bytes(b'[radio.a]\ntcp = "127.0.0.1:\xff"\n')
    code, out, err = run(env, "config", "check")
    assert code == 2 and "line 2: the text is not UTF-8" in err, err


RADIO = '[radio.h]\ntcp = "127.0.0.1:9"\n'
DAEMON_SETTINGS = [
    # The radio's link in its daemon table: the daemon talked to 127.0.0.1:9 instead.
    (RADIO + '[radio.h.daemon]\ntcp = "127.0.0.1:5001"\n', 4, "setting of the radio's link"),
    (RADIO + '[radio.h.daemon]\nname = "x"\ntimeout = 3\n', 5, "setting of the radio's link"),
    # Not settings: the daemon printed its help (or version) and exited 0.
    (RADIO + '[radio.h.daemon]\nhelp = true\n', 4, "not a daemon setting"),
    (RADIO + '[radio.h.daemon]\nversion = true\n', 4, "not a daemon setting"),
    # Values are checked with the command line's ranges.
    (RADIO + '[radio.h.daemon]\nname = "x"\ndrain-interval = -5\n', 5, "--drain-interval must be at least 1"),
    (RADIO + '[radio.h.daemon]\nhook-concurrency = 0\n', 4, "--hook-concurrency must be 1 to 64"),
    (RADIO + '[radio.h.daemon]\nhook-concurrency = "many"\n', 4, "'many' is invalid for '--hook-concurrency"),
    (RADIO + '[radio.h.daemon]\nbattery-every = 1e300\n', 4, "not a usable number"),
    (RADIO + '[radio.h.daemon]\non-message = "/nonexistent-pm/hook"\n', 4, "cannot run the hook"),
    (RADIO + '[radio.h.daemon]\nmqtt-user = "u"\n', 4, "go with --mqtt URL"),
    (RADIO + '[radio.h.daemon]\ncompanion-listen = "nowhere"\n', 4, "give HOST:PORT"),
    # A list for an option that takes one value: all but one would be ignored.
    (RADIO + '[radio.h.daemon]\ndrain-interval = [30, 60]\n', 4, "takes one value, not a list"),
    # The link itself, as the daemon would parse it.
    ('[radio.h]\ntcp = "127.0.0.1:99999"\n', 2, "the port must be a number"),
    # [daemon] counts too: its values, and its keys also when no radio uses them.
    ('[daemon]\ndrain-interval = -5\n' + RADIO + '[radio.h.daemon]\ndrain-interval = 30\n', 2, "--drain-interval must be"),
    (RADIO + '[daemon]\nno-such-option = 1\n', 4, "no option --no-such-option"),
]


@pytest.mark.parametrize("text,line,says", DAEMON_SETTINGS, ids=[f"line{l}-{s[:24]}" for _, l, s in DAEMON_SETTINGS])
def test_config_check_and_the_daemon_refuse_the_same_settings(home, text, line, says):
    """Nothing `config check` accepts is later ignored or misused by the daemon: both refuse the
    same settings with exit 2 and one sentence naming the line, and the daemon opens no link."""
    _, path, env = home
    write(path, text)
    code, out, err = run(env, "config", "check")
    assert code == 2, (code, out, err)
    assert f"line {line}: " in err and says in err and err.count("\n") == 1, err
    code, out, err = run(env, "daemon", "--radio", "h", timeout=20)
    assert code == 2, (code, out, err)
    assert f"line {line}: " in err and says in err and err.count("\n") == 1, err
    assert "connecting" not in err and "daemon: pid" not in err


def test_unknown_keys_are_errors_everywhere(home):
    _, path, env = home
    for text, line in [('colour = "red"\n', 1), (RADIO + 'colour = "red"\n', 3),
                       (RADIO + '[radio.h.daemon]\ncolour = "red"\n', 4), ('[daemon]\ncolour = "red"\n', 2)]:
        write(path, text)
        code, out, err = run(env, "config", "check")
        assert code == 2 and f"line {line}: " in err and "colour" in err, (text, err)


def test_values_that_look_like_options_stay_values(home, tmp_path):
    """A value from the file is passed to the daemon as --option=value: "--help" is a name, not
    the daemon's help."""
    _, path, env = home
    write(path, RADIO + '[radio.h.daemon]\nname = "--help"\n')
    assert run(env, "config", "check")[0] == 0
    d = subprocess.Popen([str(BIN), "daemon", "--radio", "h"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        sock = tmp_path / "run" / "pocketmesh" / "--help.sock"
        deadline = time.time() + 20
        while not sock.exists() and time.time() < deadline and d.poll() is None:
            time.sleep(0.1)
        assert sock.exists(), d.communicate(timeout=5)[0] if d.poll() is not None else "no socket"
    finally:
        d.send_signal(signal.SIGTERM)
        out = d.communicate(timeout=20)[0]
    assert "USAGE" not in out, out
