"""What the benches read about a process, from the kernel's own counters.

CPU time comes from the process's CPU-time clock (`clock_getcpuclockid` + `clock_gettime`): the
scheduler's runtime in nanoseconds, summed over every thread the process has had, dead ones
included. (`/proc/PID/stat`'s utime/stime are in clock ticks, 10 ms here; `/proc/PID/schedstat` is
nanoseconds but per thread.) Memory comes from `/proc/PID/status` (VmHWM, VmRSS, RssAnon, RssFile)
and `/proc/PID/smaps_rollup` (Pss: shared pages divided among the processes that map them, so a sum
over processes counts a shared library once).
"""
import ctypes
import os

_libc = ctypes.CDLL(None, use_errno=True)


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


_libc.clock_getcpuclockid.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
_libc.clock_gettime.argtypes = [ctypes.c_int, ctypes.POINTER(_Timespec)]


def cpu_ns(pid):
    """CPU time (user + system) the process has used so far, in ns; None if it is gone."""
    clock = ctypes.c_int()
    if _libc.clock_getcpuclockid(pid, ctypes.byref(clock)) != 0:
        return None
    ts = _Timespec()
    if _libc.clock_gettime(clock.value, ctypes.byref(ts)) != 0:
        return None
    return ts.tv_sec * 1_000_000_000 + ts.tv_nsec


def status(pid, keys=("VmHWM", "VmRSS", "RssAnon", "RssFile")):
    """The given fields of /proc/PID/status, in kB (KiB, as /proc gives them)."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in keys:
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def pss_kb(pid):
    """Proportional set size (kB) from /proc/PID/smaps_rollup, or None."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def descendants(pid):
    """pid and every live process below it."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out
