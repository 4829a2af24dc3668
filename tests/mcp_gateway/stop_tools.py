"""The tools of the stop tests (test_serve_stop.py): ``wait`` says on stdout that it started,
then waits until the gateway stops."""

from __future__ import annotations

import anyio

from toolwire import tool


@tool(annotations={"readOnlyHint": True})
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(annotations={"readOnlyHint": True})
async def wait() -> str:
    """Wait until the gateway stops."""
    print("waiting", flush=True)
    await anyio.sleep_forever()
    return "never"  # pragma: no cover


tools = [add, wait]
