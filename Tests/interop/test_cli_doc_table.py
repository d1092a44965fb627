"""docs/cli.md's meshcore-cli table against meshcore-cli 1.6.6 itself: every meshcore-cli command it
names is one (its own command switch), what it maps them to does the same thing, and each
pocketmesh command it names exists. Its reference part is what scripts/gen-cli-doc.py makes from
the operation table, every command and option in it.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh), POCKETMESH_VENV (the interop venv).
"""
import os
import pathlib
import re
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))
VENV = pathlib.Path(os.environ.get("POCKETMESH_VENV", REPO / ".venv-interop"))


def meshcore_cli_source():
    found = sorted(VENV.glob("lib/python3*/site-packages/meshcore_cli/meshcore_cli.py"))
    if not found:
        pytest.skip(f"meshcore-cli is not installed in {VENV}")
    return found[0].read_text()


def table():
    text = (REPO / "docs" / "cli.md").read_text()
    section = text.split("## meshcore-cli and pocketmesh", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) == 2 and not set(cells[0]) <= set("-") and cells[0] != "meshcore-cli":
            rows.append(cells)
    return rows


def test_every_meshcore_cli_name_is_a_meshcore_cli_command():
    src = meshcore_cli_source()
    commands = set()
    for m in re.finditer(r'^\s*case\s+((?:"[^"]+"\s*\|?\s*)+)', src, re.M):
        commands.update(re.findall(r'"([^"]+)"', m[1]))
    rows = table()
    assert rows, "no table"
    for left, _ in rows:
        for name in re.findall(r"`([^`]+)`", left):
            words = name.split()
            if "*" in name or words[0] in ("get", "set"):
                continue  # alias*, handler*; get X / set X (settings)
            assert words[0] in commands, f"{words[0]} is not a meshcore-cli 1.6.6 command (docs/cli.md)"


def test_the_mappings_that_were_wrong():
    rows = {left: right for left, right in table()}
    def row(name):
        hits = [(l, r) for l, r in rows.items() if f"`{name}`" in l]
        assert len(hits) == 1, f"{name}: {hits}"
        return hits[0][1]
    assert "`raw-packet HEX`" in row("send_raw")  # SEND_RAW_PACKET, not a companion frame
    assert row("cli").startswith("`cli TEXT`")      # the radio's own CLI, not a remote command
    assert "no equivalent" in row("upload_card") and row("upload_card") == row("upload_contact")
    assert "`contacts reset-advert-time C`" in row("reset_advert_time")
    assert "`key export`" in row("get private_key") and "`key import`" in row("get private_key")
    assert not any("`private_key`" in l or "`import_private_key`" in l for l in rows)


@pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")
def test_every_pocketmesh_command_named_exists():
    names = set()
    for _, right in table():
        for cmd in re.findall(r"`([a-z][a-z-]*(?: [a-z][a-z-]*)?)[ `]", right + " "):
            names.add(cmd)
    for cmd in sorted(names):
        words = cmd.split()
        cp = subprocess.run([str(BIN), *words, "--help"], capture_output=True, text=True, timeout=30)
        if cp.returncode != 0 and len(words) == 2:
            cp = subprocess.run([str(BIN), words[0], "--help"], capture_output=True, text=True, timeout=30)
        assert cp.returncode == 0, f"pocketmesh {cmd}: {cp.stderr}"


@pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")
def test_the_reference_is_what_the_generator_gives():
    cp = subprocess.run(["python3", str(REPO / "scripts" / "gen-cli-doc.py"), "--check", str(BIN)],
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    # Every command and every command-line option of the table has its line.
    import json
    table = json.loads(subprocess.run([str(BIN), "ops", "--json"], capture_output=True, text=True, check=True).stdout)
    doc = (REPO / "docs" / "cli.md").read_text().split("## Reference: every command", 1)[1]
    for o in table["operations"]:
        assert f"### `{o['cli']}`" in doc, o["cli"]
        section = doc.split(f"### `{o['cli']}`\n", 1)[1].split("\n### ", 1)[0]
        for a in o["args"]:
            if a["kind"] != "positional" and not a.get("api_only"):
                assert f"--{a['name']}" in section or "*link*" in section, (o["cli"], a["name"])
