#!/usr/bin/env python3
"""Feeds the frames of bench/frames.txt to meshcore_py's receive path (MessageReader.handle_rx:
parse, then event dispatch to a subscriber) and reports the time per frame, with the statistic
bench/decode (PocketMesh's side) uses: a run is ROUNDS passes over the frames, the time per frame is
the run's time / frames; printed is the median of RUNS runs (and min and max), on the monotonic
clock (wall) and the process's CPU-time clock.

    python py_reader_bench.py [--runs 15] [--rounds 300]      (needs the meshcore package)

Every event reaches the subscriber inside the timed part (the dispatcher's queue is joined after
each pass). Payloads as on both sides: code byte first, no transport framing.
"""
import argparse
import asyncio
import logging
import os
import statistics
import time
from collections import Counter

from meshcore.events import EventDispatcher
from meshcore.reader import MessageReader


def load_frames():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "frames.txt")
    frames = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            label, hexdata = line.split()
            frames.append((label, bytes.fromhex(hexdata)))
    return frames


async def run(runs: int, rounds: int):
    logging.getLogger("meshcore").setLevel(logging.WARNING)
    dispatcher = EventDispatcher()
    await dispatcher.start()
    received = Counter()
    dispatcher.subscribe(None, lambda event: received.update([event.type.name]))
    reader = MessageReader(dispatcher)
    frames = load_frames()

    async def feed(batch, n):
        w0, c0 = time.perf_counter_ns(), time.process_time_ns()
        for _ in range(n):
            for _, data in batch:
                await reader.handle_rx(bytearray(data))
            await dispatcher.queue.join()  # every event reached its subscribers
        w1, c1 = time.perf_counter_ns(), time.process_time_ns()
        k = n * len(batch)
        return (w1 - w0) / k, (c1 - c0) / k

    await feed(frames, max(1, rounds // 10))  # warm up
    for label, data in frames:
        rs = [await feed([(label, data)], rounds) for _ in range(runs)]
        print(f"{label:16s} {len(data):4d} B  median {statistics.median(r[0] for r in rs):9.1f} ns/frame "
              f"(cpu {statistics.median(r[1] for r in rs):.1f})")
    received.clear()
    rs = [await feed(frames, rounds) for _ in range(runs)]
    walls, cpus = [r[0] for r in rs], [r[1] for r in rs]
    print(f"events delivered to the subscriber in the mix runs: {dict(received)}")
    print(f"mix_runs={runs} rounds={rounds} frames_per_run={rounds * len(frames)}")
    print(f"mix_ns_per_frame={statistics.median(walls):.1f} min={min(walls):.1f} max={max(walls):.1f}")
    print(f"mix_cpu_ns_per_frame={statistics.median(cpus):.1f} min={min(cpus):.1f} max={max(cpus):.1f}")
    await dispatcher.stop()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--rounds", type=int, default=300)
    a = p.parse_args()
    asyncio.run(run(a.runs, a.rounds))
