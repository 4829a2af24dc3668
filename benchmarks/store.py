"""What a durable run store costs per call, against the in-memory one.

For each store, turns of a trivial async tool run with a fresh ``run_id`` each (so every call
is claimed, run and its answer stored: one read and two compare-and-swap writes), then the same
turns again (a resume: every call answered from the store, one read each). Turns of 1 and of
10 calls. The stores take turns block by block and medians are reported, so a busy moment of
the machine lands on all of them alike.

    python benchmarks/store.py [--turns 200] [--blocks 7] [--redis-url redis://...]

Without ``--redis-url`` a ``redis-server`` on the PATH is started on a free loopback port (and
stopped); without either, Redis is left out.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio

from toolwire import Executor, MemoryStore, RunStore, SQLiteStore, ToolSet, make_call, tool


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TOOLS = ToolSet([add])


@contextmanager
def redis_server(url: str | None) -> Iterator[str | None]:
    if url is not None:
        yield url
        return
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as workdir:
        server = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", workdir],
            stdout=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.05)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            server.terminate()
            server.wait()


async def timed_turns(
    executor: Executor, turns: int, size: int, tag: str, *, with_run: bool
) -> tuple[float, float]:
    """Seconds per call for fresh runs, then for resuming the same runs."""
    batches = [
        [make_call(TOOLS, "add", {"a": t, "b": i}, call_id=f"c{i}") for i in range(size)]
        for t in range(turns)
    ]
    run_ids = [f"{tag}-{t}" if with_run else None for t in range(turns)]
    start = time.perf_counter()
    for calls, run_id in zip(batches, run_ids, strict=True):
        await executor.run(calls, run_id=run_id)
    fresh = (time.perf_counter() - start) / (turns * size)
    start = time.perf_counter()
    for calls, run_id in zip(batches, run_ids, strict=True):
        await executor.run(calls, run_id=run_id)
    resumed = (time.perf_counter() - start) / (turns * size)
    return fresh, resumed


async def main(turns: int, blocks: int, redis_url: str | None, workdir: Path) -> None:
    stores: dict[str, RunStore | None] = {
        "no run_id (no store)": None,
        "MemoryStore": MemoryStore(max_runs=100_000),
        "SQLiteStore (synchronous=FULL)": SQLiteStore(workdir / "full.db", synchronous="FULL"),
        "SQLiteStore (synchronous=NORMAL)": SQLiteStore(
            workdir / "normal.db", synchronous="NORMAL"
        ),
    }
    if redis_url is not None:
        from toolwire.store.redis import RedisStore

        stores["RedisStore (loopback)"] = RedisStore(redis_url, prefix="bench:")
    executors = {
        name: Executor(TOOLS, store=store if store is not None else MemoryStore())
        for name, store in stores.items()
    }
    samples: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for block in range(blocks):
        for size in (1, 10):
            for name, executor in executors.items():
                result = await timed_turns(
                    executor,
                    turns,
                    size,
                    f"b{block}-s{size}",
                    with_run=stores[name] is not None,
                )
                samples.setdefault((name, size), []).append(result)

    def median_us(name: str, size: int, which: int) -> float:
        return statistics.median(s[which] for s in samples[(name, size)]) * 1e6

    print(f"{turns} turns per block, {blocks} blocks, medians; µs per call\n")
    for size in (1, 10):
        base = median_us("MemoryStore", size, 0)
        bare = median_us("no run_id (no store)", size, 0)
        print(f"turns of {size} call{'s' if size > 1 else ''}")
        header = f"  {'store':34} {'new run':>9} {'vs memory':>10} {'added':>9} {'resume':>9}"
        print(header)
        for name in stores:
            fresh = median_us(name, size, 0)
            resumed = median_us(name, size, 1)
            ratio = fresh / base
            added = fresh - bare
            print(
                f"  {name:34} {fresh:9.1f} {ratio:9.2f}x {added:+9.1f} "
                f"{resumed if stores[name] is not None else float('nan'):9.1f}"
            )
        print()
    for store in stores.values():
        if isinstance(store, SQLiteStore):
            store.close()
        elif store is not None and hasattr(store, "aclose"):
            await store.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--blocks", type=int, default=7)
    parser.add_argument("--redis-url")
    options = parser.parse_args()
    with redis_server(options.redis_url) as url, tempfile.TemporaryDirectory() as tmp:
        anyio.run(main, options.turns, options.blocks, url, Path(tmp))
