"""An MCP server of the handshake era for the gateway to sit in front of, over stdio
(`python legacy_upstream.py`): the `mcp` SDK's low-level ``Server`` served in loop mode, which
speaks only the ``initialize`` handshake (2025-11-25 and before). Its tools ask their client
within the call, as such servers do:

- ``greet`` asks the user's name (``elicitation/create``);
- ``capital`` asks the client's model (``sampling/createMessage``);
- ``where`` asks the client's roots once per session and keeps them (as servers that work in
  the client's folders do), until the client says they changed
  (``notifications/roots/list_changed``);
- ``roots_now`` asks the roots on every call.
"""

from __future__ import annotations

import warnings
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPDeprecationWarning

warnings.simplefilter("ignore", MCPDeprecationWarning)  # roots are what this server is about

OBJECT = {"type": "object"}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
TOOLS = [
    types.Tool(name="greet", description="Greets the user by name.", input_schema=OBJECT),
    types.Tool(name="capital", description="Asks the client's model.", input_schema=OBJECT),
    types.Tool(name="where", description="The client's roots, kept.", input_schema=OBJECT),
    types.Tool(name="roots_now", description="The client's roots, asked.", input_schema=OBJECT),
]

kept: list[str] | None = None
"""The roots this session's client gave, once asked."""


def _text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=value)])


async def _roots(ctx: Any) -> list[str]:
    return [str(root.uri) for root in (await ctx.session.list_roots()).roots]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    global kept
    if params.name == "greet":
        answer = await ctx.session.elicit_form("What is your name?", NAME)
        if answer.action != "accept" or not answer.content:
            return _text(f"no name: the user said {answer.action}")
        return _text(f"Hello, {answer.content['name']}!")
    if params.name == "capital":
        question = types.SamplingMessage(role="user", content=types.TextContent(text="Capital?"))
        said = await ctx.session.create_message([question], max_tokens=20)
        text = said.content.text if isinstance(said.content, types.TextContent) else "?"
        return _text(f"The model said {text}")
    if params.name == "where":
        if kept is None:
            kept = await _roots(ctx)
        return _text(" ".join(kept) or "(no roots)")
    return _text(" ".join(await _roots(ctx)) or "(no roots)")


async def roots_changed(ctx: Any, params: Any) -> None:
    global kept
    kept = None


server = Server(
    "legacy-upstream",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_roots_list_changed=roots_changed,
)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        options = server.create_initialization_options()
        await serve_loop(server, read_stream, write_stream, lifespan_state={}, init_options=options)


if __name__ == "__main__":
    anyio.run(main)
