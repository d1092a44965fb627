#!/usr/bin/env python3
"""Writes the man page docs/pocketmesh.1 from the command tree the binary itself reports
(`pocketmesh --experimental-dump-help`, made from its operation table): every command, its
arguments and options, with the help text of the table's rows. The link options (how a command
reaches its radio, and --json) are described once, in LINK OPTIONS, not under each command that
takes them. Run after changing a command; a test checks the page is current.

    python3 scripts/gen-man.py [BINARY] > docs/pocketmesh.1
"""
import json
import subprocess
import sys


def esc(text):
    """roff-safe text: backslashes, leading dots/quotes, and dashes as \\-."""
    text = (text or "").replace("\\", "\\e").replace("-", "\\-")
    lines = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def synopsis(arg):
    kind = arg["kind"]
    if kind == "positional":
        s = f"<{arg.get('valueName', 'value')}>"
        if arg.get("isRepeating"):
            s += " ..."
        return s if not arg.get("isOptional") else f"[{s}]"
    names = arg.get("names") or []
    pref = arg.get("preferredName") or (names[0] if names else {"kind": "long", "name": "?"})
    flag = ("-" if pref["kind"] == "short" else "--") + pref["name"]
    if kind == "option":
        flag += f" <{arg.get('valueName', 'value')}>"
    return f"[{flag}]" if arg.get("isOptional", True) else flag


def option_lines(arg):
    names = arg.get("names") or []
    label = ", ".join(("-" if n["kind"] == "short" else "--") + n["name"] for n in names)
    if arg["kind"] == "option":
        label += f" <{arg.get('valueName', 'value')}>"
    if arg["kind"] == "positional":
        label = f"<{arg.get('valueName', 'value')}>"
    out = [".TP", f"\\fB{esc(label)}\\fR", esc(arg.get("abstract", ""))]
    if arg.get("defaultValue"):
        out[-1] += f" (default: {esc(arg['defaultValue'])})"
    return out


# How a command reaches its radio, and --json: described once (LINK OPTIONS), in this order.
LINK = ["serial", "tcp", "ble", "radio", "baud", "ble-min-mtu", "timeout", "json"]


def arg_name(arg):
    return (arg.get("preferredName") or {}).get("name") or next((n["name"] for n in arg.get("names") or [] if n["kind"] == "long"), "")


def link_options(root):
    """The link options as most commands have them (name and help): {name: argument}."""
    seen = {}
    def walk(cmd):
        for a in cmd.get("arguments") or []:
            if a["kind"] != "positional" and arg_name(a) in LINK:
                key = (arg_name(a), a.get("abstract", ""))
                seen[key] = seen.get(key, (0, a))
                seen[key] = (seen[key][0] + 1, a)
        for s in cmd.get("subcommands") or []:
            walk(s)
    walk(root)
    best = {}
    for (name, _), (count, a) in seen.items():
        if name not in best or count > best[name][0]:
            best[name] = (count, a)
    return {name: best[name][1] for name in LINK if name in best}


def is_link(arg, links):
    name = arg_name(arg)
    return arg["kind"] != "positional" and name in links and links[name].get("abstract") == arg.get("abstract")


EXAMPLES = [
    ("Run the scripted demo mesh (no radio needed):", "pocketmesh demo"),
    ("A simulated mesh in real time, and a command against its first companion:",
     "pocketmesh sim \\-\\-nodes 2 \\-\\-repeaters 3 &\npocketmesh \\-t 127.0.0.1:5001 info"),
    ("List the radios plugged in, then talk to the only one:", "pocketmesh scan\npocketmesh \\-s auto contacts"),
    ("Send a message (waits for the ACK, retries, then floods):", "pocketmesh \\-s auto send Alice \"on my way\""),
    ("Join a hashtag channel and post to it:",
     "pocketmesh \\-s auto channel set 1 \'#hiking\'\npocketmesh \\-s auto channel send \'#hiking\' \"summit at noon\""),
    ("Every received message as JSON Lines, until Ctrl-C:", "pocketmesh \\-s auto listen \\-\\-json"),
    ("A radio named in the config file:", "pocketmesh \\-\\-radio home info"),
    ("Run the daemon with a hook for each received message:",
     "pocketmesh daemon \\-\\-radio home \\-\\-on\\-message ~/bin/mesh\\-forward"),
    ("A cron beacon (every 30 minutes):",
     "*/30 * * * * pocketmesh \\-\\-radio home channel send \'#status\' \"up $(uptime \\-p)\""),
    ("Bridge the daemon's messages to an MQTT broker:",
     "pocketmesh daemon \\-\\-radio home \\-\\-mqtt mqtt://127.0.0.1"),
    ("This host as a repeater on a KISS modem:",
     "pocketmesh node \\-\\-role repeater \\-\\-radio kiss:/dev/ttyUSB0 \\-\\-state\\-dir /var/lib/pocketmesh\\-node"),
    ("Bash completions:", "source <(pocketmesh completions bash)"),
]


def examples():
    out = [".SH EXAMPLES"]
    for text, cmd in EXAMPLES:
        out += [".PP", esc(text), ".PP", ".nf", ".RS 4", cmd, ".RE", ".fi"]
    return out


def command(cmd, path, out, links):
    if not cmd.get("shouldDisplay", True) or cmd["commandName"] == "help":
        return
    subs = [s for s in cmd.get("subcommands") or [] if s.get("shouldDisplay", True) and s["commandName"] != "help"]
    args = [a for a in cmd.get("arguments") or [] if a.get("shouldDisplay", True)
            and not (a["kind"] == "flag" and (a.get("preferredName") or {}).get("name") in ("help", "version"))]
    linked = any(is_link(a, links) for a in args)
    args = [a for a in args if not is_link(a, links)]
    if path:
        out.append(f".SS {esc(' '.join(path))}")
        usage = " ".join((["[\\fIlink options\\fR]"] if linked else []) + [esc(synopsis(a)) for a in args])
        out.append(f"\\fBpocketmesh {esc(' '.join(path))}\\fR {usage}")
        out.append(".br")
        out.append(esc(cmd.get("abstract", "")))
        if cmd.get("discussion"):
            out.append(".PP")
            out.append(esc(cmd["discussion"]))
        if args:
            out.append(".RS")
            for a in args:
                out.extend(option_lines(a))
            out.append(".RE")
    for s in subs:
        command(s, path + [s["commandName"]], out, links)


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else ".build/debug/pocketmesh"
    tree = json.loads(subprocess.run([binary, "--experimental-dump-help"], capture_output=True, text=True, check=True).stdout)
    root = tree["command"]
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    out = [
        '.\\" Generated by scripts/gen-man.py from the command tree; do not edit.',
        f'.TH POCKETMESH 1 "" "pocketmesh {esc(version)}" "User Commands"',
        ".SH NAME",
        "pocketmesh \\- " + esc(root.get("abstract", "")),
        ".SH SYNOPSIS",
        "\\fBpocketmesh\\fR [\\fIoptions\\fR] \\fIcommand\\fR [\\fIarguments\\fR] [\\fIoptions\\fR]",
        ".SH DESCRIPTION",
        esc("A headless companion for MeshCore LoRa radios: one static binary with the command line, "
            "a daemon that owns the radio, and a simulator. Options may come before or after the "
            "command; a value that starts with - is a value where the command takes one; everything "
            "after -- is a value. Without --serial, --tcp or --ble, the radio comes from the config "
            "file ($XDG_CONFIG_HOME/pocketmesh/config.toml): --radio NAME, POCKETMESH_RADIO or its "
            "default_radio."),
        ".SH EXIT STATUS",
        esc(root.get("discussion", "")),
        ".SH LINK OPTIONS",
        esc("How a command reaches its radio (directly, or through the radio's daemon when one runs), "
            "and its output. Every command that talks to a radio takes them, before or after its "
            "name; below, such a command's synopsis says [link options]."),
    ]
    links = link_options(root)
    for a in links.values():
        out.extend(option_lines(a))
    out.append(".SH COMMANDS")
    command(root, [], out, links)
    out += examples()
    out += [
        ".SH ENVIRONMENT",
        ".TP", "\\fBPOCKETMESH_RADIO\\fR", esc("The config file's radio to use when the command line names none."),
        ".TP", "\\fBPOCKETMESH_CONFIG\\fR", esc("Another config file."),
        ".TP", "\\fBPOCKETMESH_NO_DAEMON\\fR", esc("Open the link directly even when a daemon owns the radio."),
        ".TP", "\\fBXDG_CONFIG_HOME\\fR, \\fBXDG_STATE_HOME\\fR, \\fBXDG_RUNTIME_DIR\\fR",
        esc("Where the config file, the store and the daemon's socket are."),
        ".SH FILES",
        ".TP", "\\fI$XDG_CONFIG_HOME/pocketmesh/config.toml\\fR", esc("Named radios, the default one, daemon settings."),
        ".TP", "\\fI$XDG_STATE_HOME/pocketmesh/\\fR", esc("One folder per radio: contacts, channels, messages, outbox."),
        ".SH SEE ALSO",
        "The README, docs/cli.md and the other files of docs/ in the project.",
    ]
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
