"""An MCP server (the SDK's low-level Server, over stdio) that publishes the tools of a JSON
file: ``python fetching_mcp_server.py TOOLS.json``, each entry ``{"name", "inputSchema"}``.
Every call is answered ``called NAME``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

HERE = Path(__file__).resolve()


def serve(definitions: list[dict[str, Any]]) -> Server:
    tools = [
        Tool(name=d["name"], description="Looks something up.", input_schema=d["inputSchema"])
        for d in definitions
    ]

    async def list_tools(ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=f"called {params.name}")])

    return Server("fetching", on_list_tools=list_tools, on_call_tool=call_tool)


async def main(path: str) -> None:
    server = serve(json.loads(Path(path).read_text()))
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
