"""Resource subscriptions through the gateway: a client's subscription reaches the upstream
(once, for every client), its updates reach the clients that subscribed and only them, on
both protocol eras of the client; the upstream speaks 2026-07-28 (``subscriptions/listen``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

import mcp_types as types
from mcp import Client
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.exceptions import MCPError

from toolwire.mcp import Gateway, Hub, InProcessServer
from toolwire.policy import Policy, Rule

pytestmark = pytest.mark.anyio

BOUND = 30
WATCHED = "test://watched"
OTHER = "test://other"
HIDDEN = "test://hidden"


def upstream(bus: InMemorySubscriptionBus) -> Server[Any]:
    """Three resources; the tool ``touch`` says one of them changed."""

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[types.Resource(uri=uri, name=uri) for uri in (WATCHED, OTHER, HIDDEN)]
        )

    async def read(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        text = types.TextResourceContents(uri=params.uri, text=f"now {params.uri}")
        return types.ReadResourceResult(contents=[text])

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        schema = {"type": "object", "properties": {"uri": {"type": "string"}}}
        return types.ListToolsResult(
            tools=[types.Tool(name="touch", description="Changes one.", input_schema=schema)]
        )

    async def call(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        await bus.publish(ResourceUpdated((params.arguments or {})["uri"]))
        return types.CallToolResult(content=[types.TextContent(text="touched")])

    return Server(
        "watched",
        on_list_resources=list_resources,
        on_read_resource=read,
        on_list_tools=list_tools,
        on_call_tool=call,
        on_subscriptions_listen=ListenHandler(bus),
    )


@asynccontextmanager
async def gateway(policy: Policy | None = None) -> AsyncIterator[Gateway]:
    hub = Hub({"up": InProcessServer(server=upstream(InMemorySubscriptionBus()))})
    async with hub:
        yield Gateway(hub.as_toolset(), hub=hub, policy=policy)


async def test_a_handshake_client_is_told_of_the_resources_it_subscribed_to() -> None:
    told: list[str] = []
    second = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            told.append(message.params.uri)
            if len(told) == 2:
                second.set()

    with anyio.fail_after(BOUND):
        async with (
            gateway() as served,
            Client(served.server(), mode="legacy", message_handler=on_message) as client,
        ):
            declared = client.server_capabilities.resources
            await client.subscribe_resource(WATCHED)
            await client.call_tool("up__touch", {"uri": OTHER})  # not subscribed to
            await client.call_tool("up__touch", {"uri": WATCHED})
            await client.unsubscribe_resource(WATCHED)
            await client.subscribe_resource(OTHER)
            await client.call_tool("up__touch", {"uri": WATCHED})  # no longer
            await client.call_tool("up__touch", {"uri": OTHER})
            await second.wait()
    assert declared is not None
    assert declared.subscribe is True
    assert told == [WATCHED, OTHER]


async def test_a_2026_client_listening_is_told_of_the_resources_it_asked_for() -> None:
    with anyio.fail_after(BOUND):
        async with (
            gateway() as served,
            Client(served.server()) as client,
            client.listen(resource_subscriptions=[WATCHED]) as events,
        ):
            await client.call_tool("up__touch", {"uri": OTHER})
            await client.call_tool("up__touch", {"uri": WATCHED})
            first = await anext(aiter(events))
    assert isinstance(first, ResourceUpdated)
    assert first.uri == WATCHED


async def test_a_subscription_to_a_resource_the_policy_denies_is_refused() -> None:
    policy = Policy(Rule("deny", "up/test://hidden", kind="resource"))
    with anyio.fail_after(BOUND):
        async with gateway(policy) as served, Client(served.server(), mode="legacy") as client:
            with pytest.raises(MCPError) as refused:
                await client.subscribe_resource(HIDDEN)
            with pytest.raises(MCPError) as unknown:
                await client.subscribe_resource("test://nowhere")
            listed = {r.uri for r in (await client.list_resources()).resources}
    assert refused.value.code == types.INVALID_PARAMS
    assert unknown.value.code == types.INVALID_PARAMS
    assert listed == {WATCHED, OTHER}


async def test_a_stream_is_never_told_of_a_resource_its_principal_may_not_read() -> None:
    policy = Policy(Rule("deny", "up/test://hidden", kind="resource"))
    with anyio.fail_after(BOUND):
        async with (
            gateway(policy) as served,
            Client(served.server(), mode="legacy") as other,
            Client(served.server()) as client,
            client.listen(resource_subscriptions=[HIDDEN, WATCHED]) as events,
        ):
            await other.call_tool("up__touch", {"uri": HIDDEN})
            await client.call_tool("up__touch", {"uri": WATCHED})
            first = await anext(aiter(events))
    assert isinstance(first, ResourceUpdated)
    assert first.uri == WATCHED
