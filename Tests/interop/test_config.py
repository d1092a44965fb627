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
