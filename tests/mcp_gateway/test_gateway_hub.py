"""The gateway in front of a Hub (in process, and `toolwire serve stdio:...`): an upstream
server's progress reaches the client that made the call, and a call the client cancels is
cancelled upstream."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters
from mcp.server.mcpserver import Context, MCPServer

from toolwire.mcp import Gateway, Hub, InProcessServer

pytestmark = pytest.mark.anyio

BOUND = 30


def upstream(started: anyio.Event, cancelled: anyio.Event) -> MCPServer:
    server = MCPServer("up")

    @server.tool(description="Works through its steps, reporting progress after each.")
    async def steps(ctx: Context, n: int) -> str:
        for step in range(1, n + 1):
            await ctx.report_progress(step, n, f"step {step}")
        return f"done after {n} steps"

    @server.tool(description="Works until it is cancelled.")
    async def forever() -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"  # pragma: no cover

    return server


async def test_upstream_progress_is_forwarded_to_the_calling_client() -> None:
    reports: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    hooked: list[float] = []
    server = upstream(anyio.Event(), anyio.Event())
    hub = Hub(
        {"up": InProcessServer(server=server)}, on_progress=lambda c, p, t, m: hooked.append(p)
    )
    with anyio.fail_after(BOUND):
        async with hub, Client(Gateway(hub.as_toolset(), hub=hub).server()) as client:
            result = await client.call_tool("up__steps", {"n": 3}, progress_callback=on_progress)
            # The SDK may deliver a callback after its request returned: wait for the three.
            while len(reports) < 3:
                await anyio.sleep(0)
    assert result.is_error is False
    assert sorted(reports) == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert sorted(hooked) == [1, 2, 3]  # the hub's own hook still hears them


async def test_a_call_the_client_cancels_is_cancelled_upstream() -> None:
    started, cancelled = anyio.Event(), anyio.Event()
    hub = Hub({"up": InProcessServer(server=upstream(started, cancelled))})
    outcome: list[Any] = []
    with anyio.fail_after(BOUND):
        async with hub, Client(Gateway(hub.as_toolset(), hub=hub).server()) as client:
            async with anyio.create_task_group() as tasks:

                async def call() -> None:
                    outcome.append(await client.call_tool("up__forever", {}))

                tasks.start_soon(call)
                await started.wait()
                tasks.cancel_scope.cancel()
            await cancelled.wait()
    assert outcome == []


async def test_progress_reaches_the_client_through_the_cli_gateway() -> None:
    """`toolwire serve stdio:'python upstream_server.py'`: the hub the CLI opens forwards the
    server's progress, every report before the call's answer (the SDK runs each
    notification's callback in a task of its own: the hub waits for them)."""
    upstream = shlex.join([sys.executable, str(Path(__file__).parent / "upstream_server.py")])
    argv = [sys.executable, "-m", "toolwire.cli", "serve", f"stdio:{upstream}"]
    reports: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    with anyio.fail_after(BOUND):
        server = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
        async with Client(server) as client:
            name = "upstream_server__steps"
            assert name in [tool.name for tool in (await client.list_tools()).tools]
            result = await client.call_tool(name, {"n": 5}, progress_callback=on_progress)
    assert result.is_error is False
    assert reports == [(step, 5, f"step {step}") for step in range(1, 6)]


async def test_the_gateway_serves_the_hubs_current_tools_and_keeps_a_filtered_toolset() -> None:
    hub = Hub({"up": InProcessServer(server=upstream(anyio.Event(), anyio.Event()))})
    async with hub:
        following = Gateway(hub.as_toolset(), hub=hub)
        filtered = Gateway(hub.as_toolset().without(["up__forever"]), hub=hub)
        hub.approve_definition("up__steps")  # the hub rebuilds its toolset
        assert [tool.name for tool in following.list_tools()] == ["up__steps", "up__forever"]
        assert following.toolset is hub.as_toolset()
        assert [tool.name for tool in filtered.list_tools()] == ["up__steps"]
