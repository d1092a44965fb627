#!/usr/bin/env python3
"""Memory of the release binaries, one command: the CLI's `info` and the daemon idle and through a
storm, each warm (the binary as the release build left it in the page cache) and cold (a copy
evicted from the page cache, as after a boot), anonymous memory (RssAnon: heap, stack, written
pages of .data/.bss) apart from file-backed (RssFile: the binary's pages, shared and reclaimable).

    bash scripts/release.sh && bash scripts/release.sh --arch aarch64
    .venv-interop/bin/python bench/rss.py [--arch x86_64|aarch64|both] [--runs 5] [--storm-seconds 60]

`info` runs against an openhop-core companion peer on loopback (Tests/interop/harness), as does
meshcore-cli's `infos` (x86_64 only), 5 times each; a command's figures are read from
/proc/PID/status at its exit (ptrace's exit stop), medians printed. The daemon runs
bench/daemon/storm.py: 1,000 messages/minute for --storm-seconds with the MQTT bridge and observer
(Mosquitto) and 8 companion hub clients; the openhop-core peer pushes LOG_RX_DATA for every packet
it hears (as the firmware does; its frame server sends none by itself), so the observer uploads
each message's packet: "observer packets" is what reached the broker, next to the observer's own
count. aarch64 runs under qemu-user: those figures are qemu's
process (qemu itself, its translated code, the guest), not what a board would show.
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
VENV = Path(os.environ.get("POCKETMESH_VENV", sys.prefix))  # the interop venv this runs in
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_TRACEME, PTRACE_CONT, PTRACE_SETOPTIONS = 0, 7, 0x4200
PTRACE_O_TRACEEXIT, PTRACE_O_EXITKILL, PTRACE_EVENT_EXIT = 0x40, 0x100000, 6


def status(pid):
    out = {}
    for line in open(f"/proc/{pid}/status"):
        k, _, v = line.partition(":")
        if k in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
            out[k] = int(v.split()[0])
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


def evicted_copy(src, tmp):
    """A copy of src, written to disk and dropped from the page cache (as after a boot)."""
    dst = Path(tmp) / (Path(src).name + ".cold")
    shutil.copyfile(src, dst)
    os.chmod(dst, 0o755)
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
        for state in ("warm", "cold"):
            res = []
            for _ in range(runs):
                b = evicted_copy(binary, tmp) if state == "cold" else binary
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


def storm(binary, qemu, seconds, cold):
    cmd = [str(VENV / "bin" / "python"), str(REPO / "bench/daemon/storm.py"), "--bin", str(binary), "--rate", "1000",
           "--seconds", str(seconds), "--mqtt", "--hub-clients", "8"]
    if qemu:
        cmd += ["--qemu", qemu]
    if cold:
        cmd += ["--cold"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 300)
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if not lines:
        raise SystemExit(f"rss: storm.py failed:\n{out.stdout}\n{out.stderr}")
    return json.loads(lines[-1])


def mb(kb):
    return f"{kb / 1000:.2f}"


def table(arch, size, c, d):
    print(f"\n{arch} (`{size:,}` B stripped){' — under qemu-user: qemu’s RSS, not a board’s' if arch == 'aarch64' else ''}\n")
    print("| measurement | warm: max RSS (VmHWM) | warm: anon / file at the end | cold: max RSS (VmHWM) | cold: anon / file at the end |")
    print("|---|---|---|---|---|")
    w, k = c["warm"], c["cold"]
    print(f"| `info` (median of runs, MB) | {mb(w['VmHWM'])} | {mb(w['RssAnon'])} / {mb(w['RssFile'])} | {mb(k['VmHWM'])} | {mb(k['RssAnon'])} / {mb(k['RssFile'])} |")
    dw, dc = d["warm"], d["cold"]
    print(f"| daemon idle (MB) | {mb(dw['rss_idle_kb'])} | {mb(dw['rss_anon_idle_kb'])} / {mb(dw['rss_file_idle_kb'])} | {mb(dc['rss_idle_kb'])} | {mb(dc['rss_anon_idle_kb'])} / {mb(dc['rss_file_idle_kb'])} |")
    print(f"| daemon through the storm (MB; anon / file: the largest samples) | {mb(dw['vm_hwm_kb'])} | {mb(dw['rss_anon_max_sampled_kb'])} / {mb(dw['rss_file_max_sampled_kb'])} | {mb(dc['vm_hwm_kb'])} | {mb(dc['rss_anon_max_sampled_kb'])} / {mb(dc['rss_file_max_sampled_kb'])} |")
    for name, r in (("warm", dw), ("cold", dc)):
        print(f"\nstorm, {name}: stored {r['stored']} of {r['sent']}, hub clients got {r['hub_clients_got']}, "
              f"on the broker {r.get('mqtt_unique_ids')} unique, observer packets {r.get('mqtt_packets')} "
              f"(the observer's own count: {r.get('observer_published')} published, {r.get('observer_dropped')} dropped)", end="")
    print()
    if "meshcore-cli" in c:
        m = c["meshcore-cli"]["VmHWM"]
        print(f"\nmeshcore-cli `infos`: {mb(m)} MB max RSS; `info` warm {w['VmHWM'] / m:.3f} (1/{m / w['VmHWM']:.1f}), "
              f"cold {k['VmHWM'] / m:.3f} (1/{m / k['VmHWM']:.1f})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", choices=["x86_64", "aarch64", "both"], default="both")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--storm-seconds", type=int, default=60)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
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
        # The storm's warm run first: the cold one copies the binary and leaves dist/ as it was.
        d = {"warm": storm(binary, qemu, a.storm_seconds, False), "cold": storm(binary, qemu, a.storm_seconds, True)}
        results[arch] = {"size": binary.stat().st_size, "cli": c, "daemon": d}
        table(arch, binary.stat().st_size, c, d)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
