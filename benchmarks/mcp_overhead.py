"""MCP hub overhead: the same calls on a bare ``mcp.Client``, through the hub's own tool (its
handler: per-server limit, error and result mapping), and through the whole governed pipeline
(``toolwire.execute_tool_calls`` on the hub: parsing a Gemini response, validation, policy, the
executor with the per-server timeout, building the answer), in process and over stdio.

- latency: one call at a time;
- client CPU: this process's CPU time per call (over stdio the server's own work is not in
  it, so this is what the hub costs on the client's side);
- throughput: 50 calls at once (one response with 50 calls for the hub; a task group of 50
  ``call_tool`` for the bare client).

Then the gateway (``toolwire.mcp.serve``): the same server's ``add`` called by a bare
``mcp.Client`` directly, and through a toolwire gateway in front of it (hub + governed
executor + MCP server), in process and over stdio (``toolwire serve stdio:...``): latency
one call at a time, throughput 50 calls at once.

    python benchmarks/mcp_overhead.py [--calls 1000] [--gateway-only] [--json FILE]

With ``--json FILE`` the figures are also written to FILE as JSON.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
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
BLOCK = 20
# Figures by comparison name, for --json: {kind: {"us_per_call", "calls_per_s", ...}}.
FIGURES: dict[str, dict[str, dict[str, float]]] = {}


def response(n: int, first: int = 0) -> dict[str, Any]:
    parts = [
        {"functionCall": {"name": "s__add", "args": {"a": first + i, "b": 1}}} for i in range(n)
    ]
    return {"candidates": [{"content": {"parts": parts}}]}


async def bare_call(client: Any, i: int) -> None:
    await client.call_tool("add", {"a": i, "b": 1})


async def bare_batch(client: Any) -> None:
    async with anyio.create_task_group() as tasks:
        for i in range(BATCH):
            tasks.start_soon(client.call_tool, "add", {"a": i, "b": 1})


async def hub_tool_call(tool: toolwire.Tool, i: int) -> None:
    assert tool.handler is not None
    await tool.handler(a=i, b=1)


async def hub_tool_batch(tool: toolwire.Tool) -> None:
    async with anyio.create_task_group() as tasks:
        for i in range(BATCH):
            tasks.start_soon(hub_tool_call, tool, i)


async def hub_call(h: Hub, executor: toolwire.Executor, i: int) -> None:
    await toolwire.execute_tool_calls(h, "gemini", response(1, i), executor=executor)


async def hub_batch(h: Hub, executor: toolwire.Executor) -> None:
    outcome = await toolwire.execute_tool_calls(h, "gemini", response(BATCH), executor=executor)
    assert not any(call.result.is_error for call in outcome.calls)


async def timed(run: Any) -> tuple[float, float]:
    """Wall-clock seconds, and CPU seconds of this process (the client's side alone)."""
    start, cpu = time.perf_counter(), time.process_time()
    await run
    return time.perf_counter() - start, time.process_time() - cpu


async def compare(name: str, target: Any, spec: Any, calls: int) -> None:
    """Both connections stay open and the measurements alternate in short blocks, so the
    machine's drift hits both alike; medians over the blocks. (Blocks, not single calls: an
    in-process server finishes some work after its answer, which lands in the next call.)"""
    latency: dict[str, list[float]] = {"bare": [], "tool": [], "hub": []}
    cpu: dict[str, list[float]] = {"bare": [], "tool": [], "hub": []}
    batch: dict[str, list[float]] = {"bare": [], "tool": [], "hub": []}
    async with mcp.Client(target, mode="legacy", cache=None) as client, Hub({"s": spec}) as h:
        executor = toolwire.Executor(h.as_toolset(), max_concurrency=BATCH)
        tool = h.as_toolset()["s__add"]

        async def bare_block() -> None:
            for i in range(BLOCK):
                await bare_call(client, i)

        async def tool_block() -> None:
            for i in range(BLOCK):
                await hub_tool_call(tool, i)

        async def hub_block() -> None:
            for i in range(BLOCK):
                await hub_call(h, executor, i)

        for _ in range(max(1, calls // BLOCK)):
            for kind, block in (("bare", bare_block), ("tool", tool_block), ("hub", hub_block)):
                wall, busy = await timed(block())
                latency[kind].append(wall / BLOCK)
                cpu[kind].append(busy / BLOCK)
        for _ in range(max(5, calls // 100)):
            batch["bare"].append((await timed(bare_batch(client)))[0])
            batch["tool"].append((await timed(hub_tool_batch(tool)))[0])
            batch["hub"].append((await timed(hub_batch(h, executor)))[0])
    bare_latency, tool_latency, hub_latency = (
        statistics.median(latency[k]) for k in ("bare", "tool", "hub")
    )
    bare_cpu, tool_cpu, hub_cpu = (statistics.median(cpu[k]) for k in ("bare", "tool", "hub"))
    bare_rate, tool_rate, hub_rate = (
        BATCH / statistics.median(batch[k]) for k in ("bare", "tool", "hub")
    )
    print(f"{name}:")
    print(
        f"  bare mcp.Client   {bare_latency * 1e6:9.1f} us/call   {bare_rate:8.0f} calls/s   "
        f"client CPU {bare_cpu * 1e6:7.1f} us/call"
    )
    print(
        f"  hub tool          {tool_latency * 1e6:9.1f} us/call   {tool_rate:8.0f} calls/s   "
        f"client CPU {tool_cpu * 1e6:7.1f} us/call"
    )
    print(
        f"  hub + pipeline    {hub_latency * 1e6:9.1f} us/call   {hub_rate:8.0f} calls/s   "
        f"client CPU {hub_cpu * 1e6:7.1f} us/call"
    )
    print(
        f"  added by the hub: latency {tool_latency / bare_latency - 1:+.1%} "
        f"({(tool_latency - bare_latency) * 1e6:+.1f} us/call), throughput "
        f"{tool_rate / bare_rate - 1:+.1%}\n"
        f"  added by the hub and the governed pipeline: latency "
        f"{hub_latency / bare_latency - 1:+.1%} ({(hub_latency - bare_latency) * 1e6:+.1f} "
        f"us/call), throughput {hub_rate / bare_rate - 1:+.1%}"
    )
    FIGURES[name] = {
        "bare mcp.Client": {
            "us_per_call": bare_latency * 1e6,
            "calls_per_s": bare_rate,
            "client_cpu_us_per_call": bare_cpu * 1e6,
        },
        "hub tool": {
            "us_per_call": tool_latency * 1e6,
            "calls_per_s": tool_rate,
            "client_cpu_us_per_call": tool_cpu * 1e6,
        },
        "hub + pipeline": {
            "us_per_call": hub_latency * 1e6,
            "calls_per_s": hub_rate,
            "client_cpu_us_per_call": hub_cpu * 1e6,
        },
    }


async def _add_name(client: Any) -> str:
    listing = await client.list_tools()
    return next(t.name for t in listing.tools if t.name.endswith("add"))


async def compare_gateway(name: str, direct: Any, gateway: Any, calls: int) -> None:
    """A bare client of the server against a bare client of a gateway in front of it; both
    open at once, alternating blocks, medians (as [`compare`][])."""
    latency: dict[str, list[float]] = {"direct": [], "gateway": []}
    batch: dict[str, list[float]] = {"direct": [], "gateway": []}
    async with (
        mcp.Client(direct, mode="legacy", cache=None) as bare,
        mcp.Client(gateway, mode="legacy", cache=None) as governed,
    ):
        clients = {"direct": (bare, await _add_name(bare))}
        clients["gateway"] = (governed, await _add_name(governed))

        async def block(kind: str) -> None:
            client, tool = clients[kind]
            for i in range(BLOCK):
                result = await client.call_tool(tool, {"a": i, "b": 1})
                assert not result.is_error, result

        async def burst(kind: str) -> None:
            client, tool = clients[kind]
            async with anyio.create_task_group() as tasks:
                for i in range(BATCH):
                    tasks.start_soon(client.call_tool, tool, {"a": i, "b": 1})

        for _ in range(max(1, calls // BLOCK)):
            for kind in latency:
                latency[kind].append((await timed(block(kind)))[0] / BLOCK)
        for _ in range(max(5, calls // 100)):
            for kind in batch:
                batch[kind].append((await timed(burst(kind)))[0])
    direct_latency, gateway_latency = (statistics.median(latency[k]) for k in latency)
    direct_rate, gateway_rate = (BATCH / statistics.median(batch[k]) for k in batch)
    print(f"gateway, {name}:")
    for label, took, rate in (
        ("direct mcp.Client", direct_latency, direct_rate),
        ("through gateway", gateway_latency, gateway_rate),
    ):
        print(f"  {label:<18} {took * 1e6:9.1f} us/call   {rate:8.0f} calls/s")
    print(
        f"  added by the gateway: latency {gateway_latency / direct_latency - 1:+.1%} "
        f"({(gateway_latency - direct_latency) * 1e6:+.1f} us/call), throughput "
        f"{gateway_rate / direct_rate - 1:+.1%}\n"
    )
    FIGURES[f"gateway, {name}"] = {
        "direct mcp.Client": {"us_per_call": direct_latency * 1e6, "calls_per_s": direct_rate},
        "through gateway": {"us_per_call": gateway_latency * 1e6, "calls_per_s": gateway_rate},
    }


async def gateway_async(calls: int) -> None:
    from toolwire.mcp import Gateway

    @toolwire.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    # One MCP hop each: the SDK's own server against the gateway serving the same function.
    python_tools = Gateway(toolwire.ToolSet([add]), max_concurrency=BATCH).server()
    await compare_gateway("in process, a Python tool", catalogue(), python_tools, calls)
    # Two hops through the gateway: its server, then its hub's client of the server.
    async with Hub({"s": InProcessServer(server=catalogue(), max_concurrency=BATCH)}) as h:
        gateway = Gateway(h.as_toolset(), max_concurrency=BATCH)
        in_front = gateway.server()
        await compare_gateway("in process, in front of the server", catalogue(), in_front, calls)
    stdio = [sys.executable, str(SERVERS), "catalogue"]
    served = [sys.executable, "-m", "toolwire.cli", "serve", "stdio:" + shlex.join(stdio)]
    await compare_gateway(
        "stdio, in front of the server (toolwire serve stdio:...)",
        mcp.StdioServerParameters(command=stdio[0], args=stdio[1:]),
        mcp.StdioServerParameters(command=served[0], args=served[1:]),
        calls,
    )


async def main_async(calls: int, gateway_only: bool = False) -> None:
    stdio = [sys.executable, str(SERVERS), "catalogue"]
    print(f"{calls} calls one at a time (blocks of {BLOCK}), then batches of {BATCH}; medians\n")
    if gateway_only:
        await gateway_async(calls)
        return
    await compare(
        "in process",
        catalogue(),
        InProcessServer(server=catalogue(), max_concurrency=BATCH),
        calls,
    )
    await compare(
        "stdio",
        mcp.StdioServerParameters(command=stdio[0], args=stdio[1:]),
        StdioServer(command=stdio[0], args=stdio[1:], max_concurrency=BATCH),
        calls,
    )
    await gateway_async(calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--gateway-only", action="store_true", help="only the gateway figures")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    args = parser.parse_args()
    anyio.run(main_async, args.calls, args.gateway_only)
    if args.json is not None:
        figures = {"calls": args.calls, "block": BLOCK, "batch": BATCH, "comparisons": FIGURES}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
