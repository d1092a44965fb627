#!/usr/bin/env python3
"""Feeds the frames of bench/frames.txt to meshcore_py's receive path
(MessageReader.handle_rx: parse + event dispatch) and reports the time per frame.

    python py_reader_bench.py [--rounds N]      (needs the meshcore package)

Prints one line per frame type and `mix_ns_per_frame=<ns>`, the best of five runs over the mix.
"""
import argparse
import asyncio
import logging
import os
import time

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


async def run(rounds: int):
    logging.getLogger("meshcore").setLevel(logging.WARNING)
    dispatcher = EventDispatcher()
    await dispatcher.start()
    received = []
    dispatcher.subscribe(None, lambda event: received.append(event.type))
    reader = MessageReader(dispatcher)
    frames = load_frames()

    async def feed(batch, n):
        start = time.perf_counter_ns()
        for _ in range(n):
            for _, data in batch:
                await reader.handle_rx(bytearray(data))
            await dispatcher.queue.join()  # every event reached its subscribers
        return (time.perf_counter_ns() - start) / (n * len(batch))

    await feed(frames, max(1, rounds // 10))  # warm up
    for label, data in frames:
        ns = await feed([(label, data)], rounds)
        print(f"{label:16s} {len(data):4d} B  {ns / 1000:9.1f} us/frame")
    # Best of five (the timeit convention): the least disturbed by other load on the machine.
    ns = min([await feed(frames, rounds) for _ in range(5)])
    print(f"mix_ns_per_frame={ns:.0f}")
    print(f"frames_per_second={1e9 / ns:.0f}")
    await dispatcher.stop()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=300)
    asyncio.run(run(p.parse_args().rounds))
