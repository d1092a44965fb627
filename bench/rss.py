#!/usr/bin/env python3
"""Memory (and CPU) of the release binary as installed, one command: the CLI's `info` against
meshcore-cli's `infos`, and the daemon idle and through the storm, each from an **installed** copy
(`install -m 755` of the release binary into a fresh folder: what a package install leaves, just
written to the page cache) and a **cold** one (that copy written to disk and dropped from the page
cache, as after a boot); anonymous memory (RssAnon: heap, stack, written pages of .data/.bss) apart
from file-backed (RssFile: the binary's pages, shared and reclaimable).

    bash scripts/release.sh && bash scripts/release.sh --arch aarch64
    .venv-interop/bin/python bench/rss.py [--arch x86_64|aarch64|both] [--runs 5] [--storm-runs 1] [--web]

`info` runs against an openhop-core companion peer on loopback (Tests/interop/harness), as does
meshcore-cli's `infos` (x86_64 only), and `send` (a direct message, waiting for the ACK) against
meshcore-cli's `msg … wait_ack` on `pocketmesh sim`, --runs times each; a command's figures are read from
/proc/PID/status at its exit (ptrace's exit stop), with its CPU time from its CPU-time clock (ns,
bench/procstat.py); medians printed. The daemon runs bench/stack/storm.py's pocketmesh side:
1,000 channel messages at 1,000/minute on `pocketmesh sim` with the MQTT bridge and observer
(Mosquitto) and 8 meshcore_py hub clients, every message delivered everywhere (the same storm the
Python stack runs there); with --web the daemon also serves its web console and headless Chromium
keeps the page open through the storm (storm.py --web). aarch64 runs under qemu-user: those figures are qemu's process (qemu
itself, its translated code, the guest), not what a board would show.
Prints a Markdown table per architecture and the JSON of every run (to --json, if given).
"""
import argparse
import ctypes
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import procstat  # noqa: E402
LINK = "serial"  # the daemon's link in the storm (--daemon-link)
WEB = False  # the web console open in a browser through the storm (--web)
VENV = Path(os.environ.get("POCKETMESH_VENV", sys.prefix))  # the interop venv this runs in
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_TRACEME, PTRACE_CONT, PTRACE_SETOPTIONS = 0, 7, 0x4200
PTRACE_O_TRACEEXIT, PTRACE_O_EXITKILL, PTRACE_EVENT_EXIT = 0x40, 0x100000, 6


def status(pid):
    out = procstat.status(pid)
    out["cpu_us"] = procstat.cpu_ns(pid) // 1000
    return out


def at_exit(cmd):
    """Runs cmd to its end and returns its /proc status (kB) at its exit stop."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         preexec_fn=lambda: libc.ptrace(PTRACE_TRACEME, 0, None, None))
    pid, st = os.waitpid(p.pid, 0)          # stopped at exec
    libc.ptrace(PTRACE_SETOPTIONS, pid, None, ctypes.c_void_p(PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL))
    libc.ptrace(PTRACE_CONT, pid, None, None)
    result = None
    while True:
        _, st = os.waitpid(pid, 0)
        if os.WIFEXITED(st) or os.WIFSIGNALED(st):
            p.returncode = 0
            return result
        sig = os.WSTOPSIG(st)
        if sig == signal.SIGTRAP and (st >> 16) == PTRACE_EVENT_EXIT:
            result = status(pid)
            sig = 0
        elif sig == signal.SIGTRAP:
            sig = 0
        libc.ptrace(PTRACE_CONT, pid, None, ctypes.c_void_p(sig))


def installed_copy(src, tmp, cold=False):
    """src installed into a fresh folder (`install -m 755`, as a package install writes it); cold:
    then written to disk and dropped from the page cache (as after a boot)."""
    d = Path(tempfile.mkdtemp(dir=tmp))
    dst = d / Path(src).name
    subprocess.run(["install", "-m", "755", str(src), str(dst)], check=True)
    if cold:
        evict(dst)
    return dst


def evict(path):
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def median_status(runs):
    return {k: int(statistics.median(r[k] for r in runs)) for k in runs[0]}


def cli(arch, binary, qemu, runs, tmp):
    port = free_port()
    log = open(Path(tmp) / "peer.log", "w+")
    peer = subprocess.Popen([str(VENV / "bin" / "python"), str(REPO / "Tests/interop/harness/companion_peer.py"),
                             "--nodes", "1", "--base-port", str(port)], stdout=log, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            log.seek(0)
            if any(l.startswith("node ") for l in log):
                break
            time.sleep(0.1)
        time.sleep(0.5)
        prefix = [qemu] if qemu else []
        out = {}
        for state in ("installed", "cold"):
            res = []
            for _ in range(runs):
                b = installed_copy(binary, tmp, cold=state == "cold")
                res.append(at_exit(prefix + [str(b), "--tcp", f"127.0.0.1:{port}", "info"]))
                time.sleep(0.2)  # the peer takes one client at a time
            out[state] = median_status(res)
        if arch == "x86_64" and (VENV / "bin" / "meshcore-cli").exists():
            res = []
            for _ in range(runs):
                res.append(at_exit([str(VENV / "bin" / "meshcore-cli"), "-q", "-t", "127.0.0.1", "-p", str(port), "infos"]))
                time.sleep(0.2)
            out["meshcore-cli"] = median_status(res)
        return out
    finally:
        peer.terminate()
        peer.wait(10)


def cli_send(binary, qemu, runs, tmp):
    """`send sim1 TEXT` (a direct message, waiting for its ACK) from sim0 of `pocketmesh sim`, against
    meshcore-cli's `msg sim1 TEXT wait_ack` on the same node; the two nodes know each other (adverts)."""
    port = free_port()
    sim_bin = REPO / "dist" / "pocketmesh"
    sim = subprocess.Popen([str(sim_bin), "sim", "--nodes", "2", "--tcp-base", str(port), "--for", "3600"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        for _ in range(2):
            if not sim.stdout.readline().startswith("node "):
                raise SystemExit("rss: the simulator did not start")
        for p in (port + 1, port):
            subprocess.run([str(sim_bin), "--tcp", f"127.0.0.1:{p}", "advert"], check=True, stdout=subprocess.DEVNULL, timeout=60)
        time.sleep(3)
        prefix = [qemu] if qemu else []
        out = {}
        for state in ("installed", "cold"):
            res = []
            for i in range(runs):
                b = installed_copy(binary, tmp, cold=state == "cold")
                res.append(at_exit(prefix + [str(b), "--tcp", f"127.0.0.1:{port}", "send", "sim1", f"bench {state} {i}"]))
                time.sleep(0.2)
            out[state] = median_status(res)
        if not qemu and (VENV / "bin" / "meshcore-cli").exists():
            res = []
            for i in range(runs):
                res.append(at_exit([str(VENV / "bin" / "meshcore-cli"), "-q", "-t", "127.0.0.1", "-p", str(port),
                                    "msg", "sim1", f"bench mc {i}", "wait_ack"]))
                time.sleep(0.2)
            out["meshcore-cli"] = median_status(res)
        return out
    finally:
        sim.terminate()
        sim.wait(10)


def storm(binary, qemu, runs, cold):
    """bench/stack/storm.py's pocketmesh side (the daemon from an installed copy); its JSON."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [str(VENV / "bin" / "python"), str(REPO / "bench/stack/storm.py"), "--bin", str(binary),
               "--sim-bin", str(REPO / "dist" / "pocketmesh"), "--side", "pocketmesh", "--runs", str(runs), "--json", out.name,
               "--daemon-link", LINK]
        if qemu:
            cmd += ["--qemu", qemu]
        if cold:
            cmd += ["--cold"]
        if WEB:
            cmd += ["--web"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=runs * 900)
        if r.returncode != 0:
            raise SystemExit(f"rss: stack/storm.py failed:\n{r.stdout}\n{r.stderr}")
        runs_ = json.loads(Path(out.name).read_text())["pocketmesh"]
    d = [x["service"][0] for x in runs_]
    med = lambda k: int(statistics.median(x[k] for x in d))
    return {"rss_idle_kb": med("ready_rss_kb"), "rss_anon_idle_kb": med("ready_rss_anon_kb"),
            "rss_file_idle_kb": med("ready_rss_file_kb"), "vm_hwm_kb": med("vm_hwm_kb"),
            "rss_anon_end_kb": med("rss_anon_kb"), "rss_file_end_kb": med("rss_file_kb"),
            "storm_cpu_ms": statistics.median(x["storm_cpu_ns"] for x in d) / 1e6,
            "runs": runs_}


def mb(kb):
    return f"{kb / 1000:.2f}"


def table(arch, size, c, d):
    print(f"\n{arch} (`{size:,}` B stripped){' — under qemu-user: qemu’s RSS, not a board’s' if arch == 'aarch64' else ''}\n")
    print("| measurement | installed: max RSS (VmHWM) | installed: anon / file at the end | cold: max RSS (VmHWM) | cold: anon / file at the end |")
    print("|---|---|---|---|---|")
    w, k = c["installed"], c["cold"]
    print(f"| `info` (median of runs, MB) | {mb(w['VmHWM'])} | {mb(w['RssAnon'])} / {mb(w['RssFile'])} | {mb(k['VmHWM'])} | {mb(k['RssAnon'])} / {mb(k['RssFile'])} |")
    dw, dc = d["installed"], d["cold"]
    print(f"| daemon idle, at ready (MB) | {mb(dw['rss_idle_kb'])} | {mb(dw['rss_anon_idle_kb'])} / {mb(dw['rss_file_idle_kb'])} | {mb(dc['rss_idle_kb'])} | {mb(dc['rss_anon_idle_kb'])} / {mb(dc['rss_file_idle_kb'])} |")
    print(f"| daemon through the storm{', web console open' if WEB else ''} (MB) | {mb(dw['vm_hwm_kb'])} | {mb(dw['rss_anon_end_kb'])} / {mb(dw['rss_file_end_kb'])} | {mb(dc['vm_hwm_kb'])} | {mb(dc['rss_anon_end_kb'])} / {mb(dc['rss_file_end_kb'])} |")
    print(f"\n`info` CPU (median): installed {w['cpu_us'] / 1000:.2f} ms, cold {k['cpu_us'] / 1000:.2f} ms; "
          f"daemon CPU through the storm: installed {dw['storm_cpu_ms']:.0f} ms, cold {dc['storm_cpu_ms']:.0f} ms")
    for name, r in (("installed", dw), ("cold", dc)):
        for x in r["runs"]:
            print(f"storm, {name}: complete={x['complete']} stored {x.get('daemon_stored')} of {x['messages']}, clients got "
                  f"{[g['unique'] for g in x['clients_got']]}, bridge {x['bridge_unique']} unique, observer packets {x['observer_packets']}"
                  + (f", web page got {x['page_got']}" if "page_got" in x else ""))
    snd = c["send"]
    si, sc = snd["installed"], snd["cold"]
    print(f"\n`send` (direct message, waits for the ACK): installed {mb(si['VmHWM'])} MB ({mb(si['RssAnon'])} / {mb(si['RssFile'])}), "
          f"{si['cpu_us'] / 1000:.2f} ms CPU; cold {mb(sc['VmHWM'])} MB ({mb(sc['RssAnon'])} / {mb(sc['RssFile'])})")
    if "meshcore-cli" in snd:
        m = snd["meshcore-cli"]
        print(f"meshcore-cli `msg … wait_ack`: {mb(m['VmHWM'])} MB max RSS, {m['cpu_us'] / 1000:.1f} ms CPU; `send` installed "
              f"{si['VmHWM'] / m['VmHWM']:.3f} (1/{m['VmHWM'] / si['VmHWM']:.2f}) of its memory, 1/{m['cpu_us'] / max(si['cpu_us'], 1):.0f} of its CPU; "
              f"cold {sc['VmHWM'] / m['VmHWM']:.3f} (1/{m['VmHWM'] / sc['VmHWM']:.2f})")
    if "meshcore-cli" in c:
        m = c["meshcore-cli"]
        print(f"\nmeshcore-cli `infos`: {mb(m['VmHWM'])} MB max RSS, {m['cpu_us'] / 1000:.1f} ms CPU; `info` installed "
              f"{w['VmHWM'] / m['VmHWM']:.3f} (1/{m['VmHWM'] / w['VmHWM']:.2f}) of its memory, 1/{m['cpu_us'] / max(w['cpu_us'], 1):.0f} of its CPU; "
              f"cold {k['VmHWM'] / m['VmHWM']:.3f} (1/{m['VmHWM'] / k['VmHWM']:.2f})")


def main():
    os.environ["POCKETMESH_NO_DAEMON"] = "1"  # the commands talk to the radio, not to a daemon
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", choices=["x86_64", "aarch64", "both"], default="both")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--storm-runs", type=int, default=1, help="storms per state (installed, cold); medians")
    ap.add_argument("--daemon-link", choices=["serial", "tcp"], default="serial",
                    help="the daemon's link to the simulated radio in the storm: its serial port (a pty) or TCP")
    ap.add_argument("--web", action="store_true", help="the daemon's web console open in headless Chromium through the storm")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    global LINK, WEB
    LINK, WEB = a.daemon_link, a.web
    archs = ["x86_64", "aarch64"] if a.arch == "both" else [a.arch]
    results = {}
    for arch in archs:
        binary = REPO / "dist" / ("pocketmesh" if arch == "x86_64" else "pocketmesh-aarch64")
        if not binary.exists():
            raise SystemExit(f"rss: {binary} missing: run scripts/release.sh{' --arch aarch64' if arch == 'aarch64' else ''} first.")
        qemu = "" if arch == "x86_64" else (shutil.which("qemu-aarch64-static") or shutil.which("qemu-aarch64") or "")
        if arch == "aarch64" and not qemu:
            raise SystemExit("rss: qemu-aarch64-static missing (apt-get install qemu-user-static).")
        with tempfile.TemporaryDirectory() as tmp:
            c = cli(arch, binary, qemu, a.runs, tmp)
            c["send"] = cli_send(binary, qemu, a.runs, tmp)
        d = {"installed": storm(binary, qemu, a.storm_runs, False), "cold": storm(binary, qemu, a.storm_runs, True)}
        results[arch] = {"size": binary.stat().st_size, "cli": c, "daemon": d}
        table(arch, binary.stat().st_size, c, d)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
