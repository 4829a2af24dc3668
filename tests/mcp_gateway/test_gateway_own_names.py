"""The gateway serving one upstream server's tools under their own names (``own_names``,
``toolwire serve --own-names``): a client sees the server it expects behind the gateway."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters
from mcp.server.mcpserver import MCPServer

import toolwire
from toolwire.errors import ConfigurationError
from toolwire.mcp import Gateway, Hub, InProcessServer

pytestmark = pytest.mark.anyio

BOUND = 30


def upstream() -> MCPServer:
    server = MCPServer("up")

    @server.tool(description="Finds things.")
    def search(query: str) -> str:
        return f"found {query}"

    @server.tool(name="files.read", description="Reads a file (pretends to).")
    def read(path: str) -> str:
        return f"read {path}"

    @server.tool(description="Deletes a file (pretends to).")
    def delete(path: str) -> str:
        return f"deleted {path}"

    return server


async def test_own_names_serve_the_servers_tools_as_it_names_them() -> None:
    hub = Hub({"up": InProcessServer(server=upstream())})
    with anyio.fail_after(BOUND):
        async with hub, Client(Gateway(hub.as_toolset(), hub=hub, own_names=True).server()) as c:
            listed = [tool.name for tool in (await c.list_tools()).tools]
            found = await c.call_tool("search", {"query": "boots"})
            read = await c.call_tool("files.read", {"path": "a.txt"})
            prefixed = await c.call_tool("up__search", {"query": "boots"})
    assert listed == ["search", "files.read", "delete"]
    assert (found.is_error, found.content[0].text) == (False, "found boots")
    assert (read.is_error, read.content[0].text) == (False, "read a.txt")
    assert prefixed.is_error is True
    assert prefixed.content[0].text == "Unknown tool 'up__search'."


async def test_policies_still_name_the_tools_server_slash_tool_under_own_names() -> None:
    policy = toolwire.Policy(toolwire.Rule("deny", "up/delete"))
    hub = Hub({"up": InProcessServer(server=upstream())})
    with anyio.fail_after(BOUND):
        async with hub:
            gateway = Gateway(hub.as_toolset(), hub=hub, own_names=True, policy=policy)
            async with Client(gateway.server()) as client:
                listed = [tool.name for tool in (await client.list_tools()).tools]
                denied = await client.call_tool("delete", {"path": "a.txt"})
    assert listed == ["search", "files.read"]
    assert denied.content[0].text == "Unknown tool 'delete'."


async def test_without_own_names_the_tools_keep_their_server_prefix() -> None:
    hub = Hub({"up": InProcessServer(server=upstream())})
    with anyio.fail_after(BOUND):
        async with hub, Client(Gateway(hub.as_toolset(), hub=hub).server()) as client:
            listed = [tool.name for tool in (await client.list_tools()).tools]
            unknown = await client.call_tool("search", {"query": "boots"})
    assert listed == ["up__search", "up__files_read", "up__delete"]
    assert unknown.content[0].text == "Unknown tool 'search'."


async def test_own_names_are_refused_for_the_tools_of_several_servers() -> None:
    hub = Hub({"a": InProcessServer(server=upstream()), "b": InProcessServer(server=upstream())})
    with anyio.fail_after(BOUND):
        async with hub:
            with pytest.raises(ConfigurationError, match=r"one server.*\(a, b\)"):
                Gateway(hub.as_toolset(), hub=hub, own_names=True)
            with pytest.raises(ConfigurationError, match="one server"):
                Gateway(hub.as_toolset(), own_names=True)  # the toolset alone says so too


async def test_the_cli_serves_own_names_with_the_flag() -> None:
    script = Path(__file__).parent / "upstream_server.py"
    source = "stdio:" + shlex.join([sys.executable, str(script)])
    argv = [sys.executable, "-m", "toolwire.cli", "serve", source, "--own-names"]
    with anyio.fail_after(BOUND):
        server = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
        async with Client(server) as client:
            listed = [tool.name for tool in (await client.list_tools()).tools]
            result = await client.call_tool("steps", {"n": 2})
    assert listed == ["steps", "hang", "guarded"]
    assert result.content[0].text == "done after 2 steps"


async def test_the_gateways_own_texts_name_the_tools_as_the_client_was_shown_them() -> None:
    policy = toolwire.Policy(toolwire.Rule("ask", "up/delete"))
    hub = Hub({"up": InProcessServer(server=upstream())})
    with anyio.fail_after(BOUND):
        async with hub:
            gateway = Gateway(hub.as_toolset(), hub=hub, own_names=True, policy=policy)
            async with Client(gateway.server()) as client:
                invalid = await client.call_tool("files.read", {"path": 3})
                waiting = await client.call_tool("delete", {"path": "a.txt"})
    invalid_text, waiting_text = invalid.content[0].text, waiting.content[0].text  # type: ignore[union-attr]
    assert invalid_text.startswith("Invalid arguments for 'files.read': ")
    assert waiting_text.startswith("The call delete waits for approval")
    assert "up__" not in invalid_text + waiting_text
