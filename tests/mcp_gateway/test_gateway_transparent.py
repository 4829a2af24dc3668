"""The gateway in front of a hub is transparent where the protocol needs it to be: an upstream
server's questions (elicitation, sampling, roots) reach the gateway's client when it can answer
them and the policy lets them through, on both protocol eras; its log messages are passed on
(``logging/setLevel`` is served); its protocol errors stay protocol errors; and clients are told
when the hub lists the tools again. Driven by the `mcp` SDK's own client, in memory."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio
import pytest

pytest.importorskip("mcp")

import httpx2
import mcp_types as types
from auth_support import INITIALIZE, MCP_HEADERS, served, served_app
from mcp import Client
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

import toolwire
from toolwire.mcp import Gateway, HttpServer, Hub, InProcessServer
from toolwire.policy import RequestRule

pytestmark = [
    pytest.mark.anyio,
    # Log messages and logging/setLevel are what the 2026-07-28 revision deprecates: these
    # tests use them on purpose, as handshake-era servers and clients still do.
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

BOUND = 30
ERAS = ["legacy", "auto"]  # the handshake revisions, and 2026-07-28


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def sample_capital() -> Sample:
    question = types.SamplingMessage(role="user", content=types.TextContent(text="Capital?"))
    return Sample([question], max_tokens=20)


def list_roots() -> ListRoots:
    return ListRoots()


def upstream() -> MCPServer:
    server = MCPServer("up")

    @server.tool(description="Greets the user by the name they give.")
    def greet(answer: Annotated[Name, Resolve(ask_name)]) -> str:
        return f"Hello, {answer.name}!"

    @server.tool(description="Asks the client's model.")
    def capital(said: Annotated[types.CreateMessageResult, Resolve(sample_capital)]) -> str:
        text = said.content.text if isinstance(said.content, types.TextContent) else "?"
        return f"The model said {text}"

    @server.tool(description="Counts the client's roots.")
    def roots(found: Annotated[types.ListRootsResult, Resolve(list_roots)]) -> str:
        return f"{len(found.roots)} root(s): " + ", ".join(str(r.uri) for r in found.roots)

    @server.tool(description="Logs three lines at info and one at debug.")
    async def chatty(ctx: Context) -> str:
        for line in ("one", "two", "three"):
            await ctx.info(line)
        await ctx.debug("detail")
        return "logged"

    @server.tool(description="Needs the client's sampling capability, as a protocol error.")
    async def needs_sampling(ctx: Context) -> str:
        capabilities = ctx.session.client_capabilities
        if capabilities is None or capabilities.sampling is None:
            raise MCPError(
                code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                message="sampling is needed",
                data={"requiredCapabilities": {"sampling": {}}},
            )
        return "sampled"

    @server.tool(description="Fails as a tool.")
    def broken() -> str:
        raise ValueError("the tool broke")

    @server.tool(description="Adds a tool to the server and says so.")
    async def grow(ctx: Context) -> str:
        @server.tool(name="extra", description="Appears later.")
        def extra() -> str:
            return "extra"

        await ctx.notify_tools_changed()
        await ctx.session.send_tool_list_changed()
        return "grown"

    return server


async def answer_name(context: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def answer_sampling(context: Any, params: Any) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(text="Paris"), model="test"
    )


async def answer_roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///srv/app")])


@asynccontextmanager
async def gateway_client(
    mode: Any, policy: toolwire.Policy | None = None, **callbacks: Any
) -> AsyncIterator[Client]:
    hub = Hub({"up": InProcessServer(server=upstream())}, trust_new_tools=True)
    async with hub:
        gateway = Gateway(hub.as_toolset(), hub=hub, policy=policy, own_names=True)
        async with Client(gateway.server(), mode=mode, **callbacks) as client:
            yield client


@pytest.mark.parametrize("mode", ERAS)
async def test_an_upstream_elicitation_is_answered_by_the_gateways_client(mode: str) -> None:
    with anyio.fail_after(BOUND):
        async with gateway_client(mode, elicitation_callback=answer_name) as client:
            result = await client.call_tool("greet", {})
    assert (result.is_error, result.content[0].text) == (False, "Hello, Ada!")


@pytest.mark.parametrize("mode", ERAS)
async def test_an_upstream_sampling_request_is_answered_by_the_gateways_client(mode: str) -> None:
    with anyio.fail_after(BOUND):
        async with gateway_client(mode, sampling_callback=answer_sampling) as client:
            result = await client.call_tool("capital", {})
    assert (result.is_error, result.content[0].text) == (False, "The model said Paris")


@pytest.mark.parametrize("mode", ERAS)
async def test_an_upstream_roots_request_is_answered_by_the_gateways_client(mode: str) -> None:
    with anyio.fail_after(BOUND):
        async with gateway_client(mode, list_roots_callback=answer_roots) as client:
            result = await client.call_tool("roots", {})
    assert result.content[0].text == "1 root(s): file:///srv/app"


@pytest.mark.parametrize("mode", ERAS)
async def test_a_policy_rule_refuses_sampling_from_a_server(mode: str) -> None:
    """The upstream is told the client cannot sample: its own protocol error reaches the
    client, and the client is never asked."""
    asked: list[Any] = []

    async def sampling(context: Any, params: Any) -> types.CreateMessageResult:
        asked.append(params)
        return await answer_sampling(context, params)

    policy = toolwire.Policy(requests=[RequestRule("deny", "up/sampling", reason="no sampling")])
    with anyio.fail_after(BOUND):
        async with gateway_client(
            mode, policy, sampling_callback=sampling, elicitation_callback=answer_name
        ) as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool("capital", {})
            with pytest.raises(MCPError) as checked:
                await client.call_tool("needs_sampling", {})
            greeted = await client.call_tool("greet", {})
    assert raised.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert checked.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert asked == []
    # The rule names sampling: the server's other requests still reach the client.
    assert greeted.content[0].text == "Hello, Ada!"


@pytest.mark.parametrize("mode", ERAS)
async def test_an_upstreams_capability_error_stays_a_protocol_error(mode: str) -> None:
    with anyio.fail_after(BOUND):
        async with gateway_client(mode) as client:  # declares no sampling
            with pytest.raises(MCPError) as raised:
                await client.call_tool("needs_sampling", {})
            failed = await client.call_tool("broken", {})
    assert raised.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert raised.value.data == {"requiredCapabilities": {"sampling": {}}}
    # A tool's own failure is still a result, isError.
    assert failed.is_error is True
    assert "broken" in failed.content[0].text


async def test_a_client_that_declares_sampling_gets_the_tool_run() -> None:
    with anyio.fail_after(BOUND):
        async with gateway_client("auto", sampling_callback=answer_sampling) as client:
            result = await client.call_tool("needs_sampling", {})
    assert result.content[0].text == "sampled"


async def test_log_messages_reach_a_handshake_client_at_the_level_it_set() -> None:
    received: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        received.append(params)

    with anyio.fail_after(BOUND):
        async with gateway_client("legacy", logging_callback=on_log) as client:
            await client.set_logging_level("info")
            await client.call_tool("chatty", {})
            while len(received) < 3:
                await anyio.sleep(0.01)
            await client.set_logging_level("error")
            await client.call_tool("chatty", {})
    assert [(p.level, p.data) for p in received] == [
        ("info", "one"),
        ("info", "two"),
        ("info", "three"),
    ]


@pytest.mark.parametrize("level", ["debug", None])
async def test_log_messages_reach_a_2026_client_only_when_its_request_asks(
    level: str | None,
) -> None:
    received: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        received.append(params)

    with anyio.fail_after(BOUND):
        async with gateway_client("auto", logging_callback=on_log, log_level=level) as client:
            result = await client.call_tool("chatty", {})
            if level is not None:
                while len(received) < 4:
                    await anyio.sleep(0.01)
    assert result.content[0].text == "logged"
    expected = ["one", "two", "three", "detail"] if level is not None else []
    assert [p.data for p in received] == expected


async def test_a_handshake_client_is_told_when_the_hub_lists_the_tools_again() -> None:
    told = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            told.set()

    with anyio.fail_after(BOUND):
        async with gateway_client("legacy", message_handler=on_message) as client:
            declared = client.server_capabilities.tools
            await client.call_tool("grow", {})
            await told.wait()
            listed = [tool.name for tool in (await client.list_tools()).tools]
    assert declared is not None
    assert declared.list_changed is True
    assert "extra" in listed


async def test_a_2026_client_listening_is_told_when_the_hub_lists_the_tools_again() -> None:
    with anyio.fail_after(BOUND):
        async with (
            gateway_client("auto") as client,
            client.listen(tools_list_changed=True) as events,
        ):
            await client.call_tool("grow", {})
            async for _ in events:
                break
            listed = [tool.name for tool in (await client.list_tools()).tools]
    assert "extra" in listed


def test_a_policy_file_refuses_sampling_from_a_server(tmp_path: Any) -> None:
    from toolwire.policy_file import load_policy

    path = tmp_path / "policy.toml"
    path.write_text(
        '[[requests]]\nrequest = "up/sampling"\naction = "deny"\nreason = "not our models"\n'
    )
    policy = load_policy(path)
    assert policy.refuses_request("up", "sampling") == "not our models"
    assert policy.refuses_request("up", "elicitation") is None
    assert policy.refuses_request("other", "sampling") is None
    both = toolwire.Policy.all_of(toolwire.Policy(), policy)
    assert both.refuses_request("up", "sampling") == "not our models"


def test_a_request_rule_with_an_unknown_key_is_refused(tmp_path: Any) -> None:
    from toolwire.errors import ConfigurationError
    from toolwire.policy_file import load_policy

    path = tmp_path / "policy.toml"
    path.write_text('[[requests]]\nrequest = "*/sampling"\naction = "deny"\nkind = "x"\n')
    with pytest.raises(ConfigurationError, match=r"requests\[0\]: unknown key 'kind'"):
        load_policy(path)


async def test_progress_reaches_only_the_client_whose_call_it_is() -> None:
    """Two clients make the same call at once: each hears its own call's three reports (the
    hub knows which call a report is for), not the other's."""
    started: list[anyio.Event] = [anyio.Event(), anyio.Event()]
    server = MCPServer("up")

    @server.tool(description="Reports three steps once both calls run.")
    async def steps(ctx: Context) -> str:
        started[0 if not started[0].is_set() else 1].set()
        await started[1].wait()
        for step in (1, 2, 3):
            await ctx.report_progress(step, 3, f"step {step}")
        return "done"

    heard: dict[int, list[float]] = {0: [], 1: []}
    hub = Hub({"up": InProcessServer(server=server)})
    with anyio.fail_after(BOUND):
        async with hub:
            gateway = Gateway(hub.as_toolset(), hub=hub)
            async with (
                Client(gateway.server()) as first,
                Client(gateway.server()) as second,
                anyio.create_task_group() as calls,
            ):
                for index, client in enumerate((first, second)):

                    async def call(client: Client = client, index: int = index) -> None:
                        async def on_progress(p: float, t: float | None, m: str | None) -> None:
                            heard[index].append(p)

                        await client.call_tool("up__steps", {}, progress_callback=on_progress)

                    calls.start_soon(call)
            while len(heard[0]) < 3 or len(heard[1]) < 3:
                await anyio.sleep(0.01)
    assert heard == {0: [1, 2, 3], 1: [1, 2, 3]}


async def test_each_calls_log_messages_reach_its_own_client_before_its_answer() -> None:
    """Two clients call one tool of one upstream at once, both hops over streamable HTTP:
    each call's log messages reach the client that made it, on its call's stream, before its
    answer (a stream ends with its answer: a message passed on after it is lost). Read off
    the raw streams, many times.

    The upstream sends a call's log messages on that call's own stream, and the SDK runs the
    hub's handler of each in the context of the task that sent the call, which names it; the
    handler may still be running when the upstream's answer arrives, and the answer waits."""
    with served_app(upstream().streamable_http_app()) as upstream_url:
        hub = Hub({"up": HttpServer(url=upstream_url)}, trust_new_tools=True)
        with anyio.fail_after(BOUND * 4):
            async with (
                served(hub, own_names=True) as url,
                httpx2.AsyncClient(timeout=BOUND) as http,
            ):
                orders: list[list[str]] = []

                async def client_calls(calls: int) -> None:
                    post = functools.partial(http.post, url)
                    opened = await post(json=INITIALIZE, headers=MCP_HEADERS)
                    headers = {
                        **MCP_HEADERS,
                        "mcp-session-id": opened.headers["mcp-session-id"],
                        "mcp-protocol-version": INITIALIZE["params"]["protocolVersion"],
                    }
                    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                    await post(json=initialized, headers=headers)
                    level = _request(2, "logging/setLevel", {"level": "info"})
                    await post(json=level, headers=headers)
                    for number in range(3, 3 + calls):
                        called = _request(number, "tools/call", {"name": "chatty", "arguments": {}})
                        answered = await post(json=called, headers=headers)
                        orders.append([_said(event) for event in _events(answered.text)])

                async with anyio.create_task_group() as clients:
                    for _ in range(3):
                        clients.start_soon(client_calls, 15)
    assert orders == [["one", "two", "three", "answer"]] * 45


def _request(number: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": number, "method": method, "params": params}


def _events(stream: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a server-sent-events body, in order."""
    return [json.loads(line[5:]) for line in stream.splitlines() if line.startswith("data:")]


def _said(message: dict[str, Any]) -> str:
    """A log message's text; ``answer`` for the call's answer."""
    if message.get("method") == "notifications/message":
        return str(message["params"]["data"])
    return "answer" if "result" in message else json.dumps(message)
