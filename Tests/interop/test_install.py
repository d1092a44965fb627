"""Installs like a tool: `scripts/install.sh PREFIX` into a temporary prefix, then the man page
(`man -l`, and the committed page is what scripts/gen-man.py makes now), the completions, the
systemd unit and udev rule, `--version`, and `pocketmesh info` with only a config file.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import pathlib
import shutil
import subprocess

import pytest

from test_sim_clients import Sim

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    p = tmp_path_factory.mktemp("prefix")
    cp = subprocess.run(["bash", str(REPO / "scripts" / "install.sh"), str(p)], capture_output=True, text=True,
                        env=dict(os.environ, POCKETMESH_BIN=str(BIN)), timeout=120)
    assert cp.returncode == 0, cp.stderr
    return p


def test_the_committed_man_page_is_current():
    made = subprocess.run(["python3", str(REPO / "scripts" / "gen-man.py"), str(BIN)], capture_output=True, text=True, check=True).stdout
    assert (REPO / "docs" / "pocketmesh.1").read_text() == made, "run: python3 scripts/gen-man.py > docs/pocketmesh.1"


def test_the_man_page_describes_the_link_options_once_and_has_examples():
    page = (REPO / "docs" / "pocketmesh.1").read_text()
    sections = [l.split(" ", 1)[1] for l in page.splitlines() if l.startswith(".SH ")]
    assert sections.index("LINK OPTIONS") < sections.index("COMMANDS") < sections.index("EXAMPLES")
    # Each link option's entry is there once (a command whose option means something else keeps its own).
    for entry in ["\\fB\\-s, \\-\\-serial <path>\\fR\nUSB serial device of the radio",
                  "\\fB\\-t, \\-\\-tcp <host[:port]>\\fR\nTCP companion radio",
                  "\\fB\\-\\-radio <name>\\fR\nA radio named in the config file",
                  "\\fB\\-\\-timeout <seconds>\\fR\nSeconds to wait for each response"]:
        assert page.count(entry) == 1, entry
    info = page.split(".SS info\n", 1)[1].split(".SS ", 1)[0]
    assert "[\\fIlink options\\fR]" in info and "serial" not in info
    examples = page.split(".SH EXAMPLES", 1)[1].split(".SH ", 1)[0]
    assert examples.count(".nf") >= 10 and "pocketmesh demo" in examples


def test_files_in_place(prefix):
    version = subprocess.run([str(prefix / "bin" / "pocketmesh"), "--version"], capture_output=True, text=True, check=True).stdout.strip()
    assert version and version[0].isdigit()
    for f in ["share/man/man1/pocketmesh.1", "share/bash-completion/completions/pocketmesh",
              "share/zsh/site-functions/_pocketmesh", "share/fish/vendor_completions.d/pocketmesh.fish",
              "lib/systemd/system/pocketmesh.service", "lib/udev/rules.d/61-pocketmesh.rules"]:
        assert (prefix / f).stat().st_size > 0, f
    unit = (prefix / "lib/systemd/system/pocketmesh.service").read_text()
    assert f"ExecStart={prefix}/bin/pocketmesh daemon" in unit
    rules = (prefix / "lib/udev/rules.d/61-pocketmesh.rules").read_text()
    assert 'SYMLINK+="meshcore-' in rules and 'GROUP="dialout"' in rules and '"10c4"' in rules


@pytest.mark.skipif(shutil.which("man") is None, reason="needs man (man-db)")
def test_man_renders(prefix):
    cp = subprocess.run(["man", "-l", str(prefix / "share/man/man1/pocketmesh.1")], capture_output=True, text=True,
                        env=dict(os.environ, MANPAGER="cat", PAGER="cat", MANWIDTH="100"), timeout=60)
    assert cp.returncode == 0, cp.stderr
    for word in ["POCKETMESH(1)", "config check", "channel send", "EXIT STATUS", "POCKETMESH_RADIO"]:
        assert word in cp.stdout, word


def test_completions_load(prefix):
    script = prefix / "share/bash-completion/completions/pocketmesh"
    cp = subprocess.run(["bash", "-c", f"source '{script}' && complete -p pocketmesh"], capture_output=True, text=True)
    assert cp.returncode == 0 and "pocketmesh" in cp.stdout, cp.stderr
    if shutil.which("zsh"):
        assert subprocess.run(["zsh", "-n", str(prefix / "share/zsh/site-functions/_pocketmesh")]).returncode == 0
    if shutil.which("fish"):
        assert subprocess.run(["fish", "-n", str(prefix / "share/fish/vendor_completions.d/pocketmesh.fish")]).returncode == 0
    assert "channel" in script.read_text() and "--tcp" in script.read_text()


def test_info_with_only_a_config_file(prefix, tmp_path):
    sim = Sim(nodes=1)
    try:
        (tmp_path / "pocketmesh").mkdir()
        (tmp_path / "pocketmesh" / "config.toml").write_text(
            f'default_radio = "home"\n[radio.home]\ntcp = "127.0.0.1:{sim.port("sim0")}"\n')
        env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path), XDG_RUNTIME_DIR=str(tmp_path), POCKETMESH_NO_DAEMON="1")
        cp = subprocess.run([str(prefix / "bin" / "pocketmesh"), "info", "--json"], capture_output=True, text=True, env=env, timeout=60)
        assert cp.returncode == 0, cp.stderr
        assert json.loads(cp.stdout)["public_key"] == sim.nodes["sim0"]["pubkey"]
    finally:
        sim.stop()
