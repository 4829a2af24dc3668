"""An MCP server for the gateway to sit in front of, over stdio
(`toolwire serve stdio:'python upstream_server.py [CANCELLED]'`): when ``hang`` is cancelled,
it writes ``cancelled`` to the file CANCELLED names (a stdio server is not given the
environment of the process that starts it)."""

from __future__ import annotations

import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("upstream")


@server.tool(description="Works through its steps, reporting progress after each.")
async def steps(ctx: Context, n: int) -> str:
    for step in range(1, n + 1):
        await ctx.report_progress(step, n, f"step {step}")
    return f"done after {n} steps"


@server.tool(description="Reports that it started, then works until it is cancelled.")
async def hang(ctx: Context) -> str:
    await ctx.report_progress(0, None, "started")
    try:
        await anyio.sleep_forever()
    finally:  # cancelled: leave a mark where the test looks
        marker = sys.argv[1] if len(sys.argv) > 1 else None
        if marker:
            with open(marker, "w", encoding="utf-8") as out:
                out.write("cancelled")
    return "never"


@server.tool(description="Needs approval under the test's policy.")
def guarded(item: str) -> str:
    return f"guarded {item}"


if __name__ == "__main__":
    server.run(transport="stdio")
