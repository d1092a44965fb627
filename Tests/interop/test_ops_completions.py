"""The operation table's front ends: `pocketmesh ops --json` (one entry per operation with its
command path, API op name, permission class and arguments) and the shell completion scripts
(`pocketmesh completions bash|zsh|fish`), loaded into the real shells.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")


def run(*args):
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=30)


@pytest.fixture(scope="module")
def ops():
    cp = run("ops", "--json")
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout)["operations"]


def test_ops_json_has_an_entry_per_operation(ops):
    by_cli = {o["cli"]: o for o in ops}
    assert len(by_cli) == len(ops)
    remove = by_cli["contacts remove"]
    assert remove["api"] == "contacts_remove" and remove["class"] == "config"
    contact = [a for a in remove["args"] if a["kind"] == "positional"]
    assert [a["name"] for a in contact] == ["contact"] and contact[0]["required"] is True
    timeout = next(a for a in remove["args"] if a["name"] == "timeout")
    assert timeout == {"name": "timeout", "kind": "option", "type": "number", "required": False, "value_name": "seconds",
                       "default": "5.0", "repeatable": False,
                       "help": "Seconds to wait for each response (and to connect)."}
    for key in ("cli", "api", "class", "args", "help"):
        assert all(key in o for o in ops), key
    assert by_cli["config check"]["api"] is None and by_cli["config check"]["class"] is None
    assert by_cli["set"]["class"] == "config" and by_cli["key export"]["class"] == "secret"
    assert by_cli["factory-reset"]["api"] == "factory_reset" and by_cli["factory-reset"]["class"] == "admin"
    assert by_cli["contacts favourite"]["aliases"] == ["favorite"]
    assert {o["class"] for o in ops} == {"read", "message", "config", "admin", "secret", None}
    assert "daemon op-exec" not in by_cli


def test_ops_json_lists_what_only_one_door_takes():
    """The API's own ops (no command runs them) and the fields only the API takes, from the table."""
    cp = run("ops", "--json")
    assert cp.returncode == 0, cp.stderr
    table = json.loads(cp.stdout)
    api_ops = {o["api"]: o for o in table["api_ops"]}
    assert set(api_ops) == {"ping", "status", "channels", "outbox", "contacts_flush_pending", "subscribe", "tunnel"}
    assert all(o["cli"] is None and o["daemon"] is True for o in api_ops.values())
    assert api_ops["ping"]["class"] == "read" and api_ops["outbox"]["class"] == "message"
    assert [(a["api"], a["type"], a["api_only"]) for a in api_ops["subscribe"]["args"]] == [("log_rx", "bool", True)]
    send = next(o for o in table["operations"] if o["cli"] == "send")
    wait = [a for a in send["args"] if a.get("api_only")]
    assert [(a["name"], a["api"], a["type"]) for a in wait] == [("wait", "wait", "bool")]
    login = next(o for o in table["operations"] if o["cli"] == "login")
    password = next(a for a in login["args"] if a["name"] == "password")
    assert password["required"] is False and password["api_required"] is True
    # An API op name is in one of the two lists, once; `status` in both: a node's (with "name") and the daemon's.
    names = [o["api"] for o in table["operations"] if o["api"]] + [o["api"] for o in table["api_ops"]]
    assert sorted(n for n in set(names) if names.count(n) > 1) == ["status"]
    text = run("ops").stdout.splitlines()
    assert next(l for l in text if l.split()[1:] == ["ping", "read"]).split()[0] == "-"


def test_api_names_are_the_command_paths_joined(ops):
    for o in ops:
        if o["api"] and o["cli"] != "contacts list":  # the daemon's `contacts`, as it always was
            assert o["api"] == o["cli"].replace(" ", "_").replace("-", "_"), o["cli"]


def test_ops_text():
    cp = run("ops")
    assert cp.returncode == 0
    line = next(l for l in cp.stdout.splitlines() if l.startswith("contacts remove "))
    assert line.split() == ["contacts", "remove", "contacts_remove", "config"]


def complete_bash(*words, env=None):
    """COMPREPLY for the command line `words` (the last one being completed)."""
    script = f"""
source <('{BIN}' completions bash) || exit 9
complete -p pocketmesh || exit 8
COMP_WORDS=({' '.join(repr(w) if w else "''" for w in words)})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
_pocketmesh pocketmesh "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    cp = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30, env=env)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.startswith("complete -F _pocketmesh pocketmesh\n")
    return [l for l in cp.stdout.splitlines()[1:] if l]


def test_bash_completes_commands_subcommands_options_and_choices():
    assert complete_bash("pocketmesh", "con") == ["contacts", "config"]
    subs = complete_bash("pocketmesh", "contacts", "")
    assert subs[:4] == ["list", "show", "add", "remove"] and "reset-advert-time" in subs and "connected" in subs
    # Options before the command, with their values, are skipped as the grammar skips them.
    assert complete_bash("pocketmesh", "--tcp", "host:5000", "chan") == ["channel"]
    assert complete_bash("pocketmesh", "-j", "contacts", "rem") == ["remove"]
    assert complete_bash("pocketmesh", "contacts", "remove", "--j") == ["--json"]
    assert complete_bash("pocketmesh", "contacts", "add", "KEY", "bob", "--type", "r") == ["repeater", "room"]
    assert complete_bash("pocketmesh", "contacts", "favorite", "alice", "") == ["on", "off"]
    assert complete_bash("pocketmesh", "stats", "") == ["core", "radio", "packets"]
    assert complete_bash("pocketmesh", "completions", "") == ["bash", "zsh", "fish"]
    assert complete_bash("pocketmesh", "get", "radi") == ["radio"]
    assert complete_bash("pocketmesh", "contacts", "remove", "alice", "") == []


@pytest.mark.skipif(not shutil.which("zsh"), reason="needs zsh")
def test_zsh_script_parses_and_completes(tmp_path):
    script = tmp_path / "_pocketmesh"
    script.write_text(run("completions", "zsh").stdout)
    assert subprocess.run(["zsh", "-n", str(script)]).returncode == 0
    # The completion function with zsh's completion builtins stubbed: what it would offer.
    driver = f"""
autoload -U compinit; compinit -u -d {tmp_path}/zcompdump
source {script}
_describe() {{ local -a arr; arr=("${{(@P)4}}"); print -r -- ${{arr[@]%%:*}} }}
compadd() {{ shift; print -r -- "$@" }}
_files() {{ print -r -- FILES }}
t() {{ words=("$@"); CURRENT=${{#words}}; _pocketmesh }}
t pocketmesh contacts ''
t pocketmesh contacts add K n --type ''
t pocketmesh daemon --state-dir ''
"""
    cp = subprocess.run(["zsh", "-f", "-c", driver], capture_output=True, text=True, timeout=30)
    assert cp.returncode == 0, cp.stderr
    lines = cp.stdout.splitlines()
    assert lines[0].split()[:3] == ["list", "show", "add"]
    assert lines[1] == "chat repeater room sensor"
    assert lines[2] == "FILES"


@pytest.mark.skipif(not shutil.which("fish"), reason="needs fish")
def test_fish_script_parses_and_completes(tmp_path):
    script = tmp_path / "pocketmesh.fish"
    script.write_text(run("completions", "fish").stdout)
    assert subprocess.run(["fish", "-n", str(script)]).returncode == 0

    def complete(line):
        cp = subprocess.run(["fish", "--no-config", "-c", f"source {script}; complete -C {line!r}"],
                            capture_output=True, text=True, timeout=30)
        assert cp.returncode == 0, cp.stderr
        return [l.split("\t")[0] for l in cp.stdout.splitlines()]

    assert complete("pocketmesh con") == ["config", "contacts"]
    assert "remove" in complete("pocketmesh contacts ")
    assert complete("pocketmesh -t h:1 contacts add K n --type r") == ["repeater", "room"]
    assert complete("pocketmesh stats ") == ["core", "packets", "radio"]


def test_unknown_shell_is_a_usage_error():
    cp = run("completions", "tcsh")
    assert cp.returncode == 2
    assert "bash, zsh or fish" in cp.stderr


@pytest.fixture
def radios_env(tmp_path):
    """A config file with two radios, and the binary on PATH as `pocketmesh` (the scripts ask it)."""
    (tmp_path / "pocketmesh").mkdir()
    (tmp_path / "pocketmesh" / "config.toml").write_text(
        'default_radio = "home"\n[radio.home]\ntcp = "127.0.0.1:5001"\n[radio.hill]\nserial = "/dev/ttyUSB0"\n')
    return dict(os.environ, XDG_CONFIG_HOME=str(tmp_path), PATH=f"{BIN.parent}:{os.environ['PATH']}")


def test_radio_is_completed_with_the_config_files_radios(radios_env):
    cp = subprocess.run([str(BIN), "completions", "radios"], capture_output=True, text=True, timeout=30, env=radios_env)
    assert cp.returncode == 0 and cp.stdout.split() == ["home", "hill"], cp
    assert complete_bash("pocketmesh", "info", "--radio", "", env=radios_env) == ["home", "hill"]
    assert complete_bash("pocketmesh", "--radio", "h", env=radios_env) == ["home", "hill"]
    assert complete_bash("pocketmesh", "--radio", "home", "inf", env=radios_env) == ["info"]
    assert "--radio" in complete_bash("pocketmesh", "send", "--ra", env=radios_env)
    # `chats --radio` is a stored radio's key, not a name of the file.
    assert complete_bash("pocketmesh", "chats", "--radio", "", env=radios_env) == []
    # No config file: nothing, and no error.
    empty = dict(radios_env, XDG_CONFIG_HOME=str(pathlib.Path(radios_env["XDG_CONFIG_HOME"]) / "none"))
    assert complete_bash("pocketmesh", "info", "--radio", "", env=empty) == []


@pytest.mark.skipif(not shutil.which("zsh"), reason="needs zsh")
def test_zsh_completes_radio_names(tmp_path, radios_env):
    script = tmp_path / "_pocketmesh"
    script.write_text(run("completions", "zsh").stdout)
    driver = f"""
autoload -U compinit; compinit -u -d {tmp_path}/zcompdump
source {script}
compadd() {{ shift; print -r -- "$@" }}
t() {{ words=("$@"); CURRENT=${{#words}}; _pocketmesh }}
t pocketmesh info --radio ''
"""
    cp = subprocess.run(["zsh", "-f", "-c", driver], capture_output=True, text=True, timeout=30, env=radios_env)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.split() == ["home", "hill"]


@pytest.mark.skipif(not shutil.which("fish"), reason="needs fish")
def test_fish_completes_radio_names(tmp_path, radios_env):
    script = tmp_path / "pocketmesh.fish"
    script.write_text(run("completions", "fish").stdout)
    cp = subprocess.run(["fish", "--no-config", "-c", f"source {script}; complete -C 'pocketmesh info --radio '"],
                        capture_output=True, text=True, timeout=30, env=radios_env)
    assert cp.returncode == 0, cp.stderr
    assert sorted(l.split("\t")[0] for l in cp.stdout.splitlines()) == ["hill", "home"]


def test_set_completes_only_settable_settings():
    offered = complete_bash("pocketmesh", "set", "")
    assert "name" in offered and "client-repeat" in offered
    assert not {"public-key", "firmware", "model", "max-contacts", "max-channels", "repeat-freqs"} & set(offered)
    assert "public-key" in complete_bash("pocketmesh", "get", "")


def test_unknown_command_suggests_the_nearest():
    cp = run("contcts")
    assert cp.returncode == 2
    assert "unknown command 'contcts'; did you mean 'contacts'?" in cp.stderr
