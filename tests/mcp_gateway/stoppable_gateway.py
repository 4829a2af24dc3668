"""`toolwire.mcp.serve` over HTTP in a task of this process, cancelled when a line reaches
stdin: prints the URL once it listens, then `stopped` once the cancelled serve returned (run
by test_serve_stop.py, which reads this process's stderr)."""

from __future__ import annotations

import sys

import anyio
from stop_tools import tools

import toolwire.mcp


async def main() -> None:
    async with anyio.create_task_group() as tasks:
        serving = anyio.CancelScope()

        async def serve() -> None:
            with serving:
                await toolwire.mcp.serve(
                    tools, transport="http", port=0, on_listening=lambda url: print(url, flush=True)
                )

        tasks.start_soon(serve)
        await anyio.to_thread.run_sync(sys.stdin.readline)
        serving.cancel()
    print("stopped", flush=True)


anyio.run(main)
