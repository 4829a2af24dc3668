"""What a transparent gateway passes between an upstream server and its client, attacked from
both sides: an upstream's oversized errors and log messages are bounded, and a client cannot
slip the upstream an answer of a kind the policy refuses."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

import mcp_types as types
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

import toolwire
from toolwire.mcp import Gateway, Hub, InProcessServer
from toolwire.policy import RequestRule

pytestmark = [
    pytest.mark.anyio,
    # The upstream logs on purpose: log messages are what the 2026-07-28 revision deprecates,
    # and handshake-era servers still send.
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

BOUND = 30


def loud_server(seen: list[Any]) -> MCPServer:
    server = MCPServer("up")

    @server.tool(description="Fails with a huge protocol error.")
    def huge_error() -> str:
        raise MCPError(code=-32602, message="x" * 100_000, data={"blob": "y" * 200_000})

    @server.tool(description="Logs a huge message.")
    async def huge_log(ctx: Context) -> str:
        await ctx.info("z" * 200_000)
        return "logged"

    @server.tool(description="Records the input responses it is sent.")
    async def record(ctx: Context) -> str:
        seen.append(dict(ctx.input_responses or {}))
        return "recorded"

    return server


async def test_an_upstreams_huge_protocol_error_reaches_the_client_bounded() -> None:
    hub = Hub({"up": InProcessServer(server=loud_server([]))})
    with anyio.fail_after(BOUND):
        async with hub, Client(Gateway(hub.as_toolset(), hub=hub, own_names=True).server()) as c:
            with pytest.raises(MCPError) as raised:
                await c.call_tool("huge_error", {})
    assert raised.value.code == -32602
    assert len(raised.value.message) <= 1000
    assert raised.value.data is None


async def test_an_upstreams_huge_log_message_is_not_passed_on_whole() -> None:
    received: list[Any] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        received.append(params.data)

    hub = Hub({"up": InProcessServer(server=loud_server([]))})
    with anyio.fail_after(BOUND):
        async with hub:
            gateway = Gateway(hub.as_toolset(), hub=hub, own_names=True)
            async with Client(gateway.server(), mode="legacy", logging_callback=on_log) as c:
                await c.call_tool("huge_log", {})
                while not received:
                    await anyio.sleep(0.01)
    assert received == ["(a log message too long to pass on)"]


async def test_a_client_cannot_send_the_upstream_an_answer_of_a_refused_kind() -> None:
    seen: list[Any] = []
    policy = toolwire.Policy(requests=[RequestRule("deny", "up/sampling")])
    hub = Hub({"up": InProcessServer(server=loud_server(seen))})
    sampled = types.CreateMessageResult(
        role="assistant", content=types.TextContent(text="injected"), model="m"
    )
    answered = types.ElicitResult(action="accept", content={"name": "Ada"})
    with anyio.fail_after(BOUND):
        async with hub:
            gateway = Gateway(hub.as_toolset(), hub=hub, own_names=True, policy=policy)
            async with Client(
                gateway.server(),
                sampling_callback=lambda c, p: sampled,
                elicitation_callback=lambda c, p: answered,
            ) as client:
                await client.session.call_tool(
                    "record", {}, input_responses={"sample": sampled, "ask": answered}
                )
    assert len(seen) == 1
    assert set(seen[0]) == {"ask"}
