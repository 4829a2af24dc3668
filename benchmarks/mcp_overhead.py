"""MCP hub overhead: the same calls through ``toolwire.execute_tool_calls`` on a hub and on a
bare ``mcp.Client``, in process and over stdio.

- latency: one call at a time (the hub path includes parsing a Gemini response, validation,
  policy and building the answer);
- throughput: 50 calls at once (one response with 50 calls for the hub; a task group of 50
  ``call_tool`` for the bare client).

    python benchmarks/mcp_overhead.py [--calls 200]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp

import toolwire
from toolwire.mcp import Hub, InProcessServer, StdioServer

sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "mcp_hub"))
from mcp_servers import catalogue

SERVERS = Path(__file__).parent.parent / "tests" / "mcp_hub" / "mcp_servers.py"
BATCH = 50


def response(n: int) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {
                    "parts": [
                        {"functionCall": {"name": "s__add", "args": {"a": i, "b": 1}}}
                        for i in range(n)
                    ]
                }
            }
        ]
    }


async def bare(target: Any, calls: int) -> tuple[float, float]:
    async with mcp.Client(target, mode="legacy", cache=None) as client:
        await client.call_tool("add", {"a": 0, "b": 1})  # warm up
        start = time.perf_counter()
        for i in range(calls):
            await client.call_tool("add", {"a": i, "b": 1})
        latency = (time.perf_counter() - start) / calls
        start = time.perf_counter()
        async with anyio.create_task_group() as tasks:
            for i in range(BATCH):
                tasks.start_soon(client.call_tool, "add", {"a": i, "b": 1})
        throughput = BATCH / (time.perf_counter() - start)
    return latency, throughput


async def hub(spec: Any, calls: int) -> tuple[float, float]:
    async with Hub({"s": spec}) as h:
        one, many = response(1), response(BATCH)
        executor = toolwire.Executor(h.as_toolset(), max_concurrency=BATCH)
        await toolwire.execute_tool_calls(h, "gemini", one, executor=executor)
        start = time.perf_counter()
        for _ in range(calls):
            await toolwire.execute_tool_calls(h, "gemini", one, executor=executor)
        latency = (time.perf_counter() - start) / calls
        start = time.perf_counter()
        await toolwire.execute_tool_calls(h, "gemini", many, executor=executor)
        throughput = BATCH / (time.perf_counter() - start)
    return latency, throughput


async def main_async(calls: int, rounds: int) -> None:
    stdio_target = mcp.StdioServerParameters(
        command=sys.executable, args=[str(SERVERS), "catalogue"]
    )
    cases = [
        (
            "in process",
            lambda: bare(catalogue(), calls),
            lambda: hub(InProcessServer(server=catalogue(), max_concurrency=BATCH), calls),
        ),
        (
            "stdio",
            lambda: bare(stdio_target, calls),
            lambda: hub(
                StdioServer(
                    command=sys.executable, args=[str(SERVERS), "catalogue"], max_concurrency=BATCH
                ),
                calls,
            ),
        ),
    ]
    print(f"{calls} sequential calls, then {BATCH} at once; best of {rounds} rounds\n")
    for name, run_bare, run_hub in cases:
        best_bare = best_hub = (float("inf"), 0.0)
        for _ in range(rounds):  # alternate so both see the same machine
            b, h = await run_bare(), await run_hub()
            best_bare = (min(best_bare[0], b[0]), max(best_bare[1], b[1]))
            best_hub = (min(best_hub[0], h[0]), max(best_hub[1], h[1]))
        print(f"{name}:")
        print(
            f"  bare mcp.Client   {best_bare[0] * 1e6:9.1f} us/call   {best_bare[1]:8.0f} calls/s"
        )
        print(f"  toolwire hub      {best_hub[0] * 1e6:9.1f} us/call   {best_hub[1]:8.0f} calls/s")
        print(
            f"  latency added: {(best_hub[0] / best_bare[0] - 1):+.1%}, "
            f"throughput: {(best_hub[1] / best_bare[1] - 1):+.1%}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    anyio.run(main_async, args.calls, args.rounds)


if __name__ == "__main__":
    main()
