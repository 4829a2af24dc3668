"""An MCP server for the gateway to sit in front of, over stdio
(`toolwire serve stdio:'python upstream_server.py'`)."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("upstream")


@server.tool(description="Works through its steps, reporting progress after each.")
async def steps(ctx: Context, n: int) -> str:
    for step in range(1, n + 1):
        await ctx.report_progress(step, n, f"step {step}")
    return f"done after {n} steps"


if __name__ == "__main__":
    server.run(transport="stdio")
