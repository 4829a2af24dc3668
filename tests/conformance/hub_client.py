"""The client the conformance suite runs against its own servers: toolwire's public hub API
(``toolwire.mcp.Hub``, the executor) reaching the server at the URL given last on the command
line, doing what the scenario named by ``MCP_CONFORMANCE_SCENARIO`` asks of a client.

Exit status 0 when the hub did its part; the suite judges the rest from what it saw on the wire.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

import toolwire
from toolwire.inputs import InputRequest, accept
from toolwire.mcp import HttpServer, Hub

SERVER = "suite"
"""The hub's name for the suite's server (its tools are exposed as ``suite__tool``)."""

Scenario = Callable[[Hub], Awaitable[None]]
SCENARIOS: dict[str, Scenario] = {}


def scenario(*names: str) -> Callable[[Scenario], Scenario]:
    def register(run: Scenario) -> Scenario:
        for name in names:
            SCENARIOS[name] = run
        return run

    return register


def defaults(request: InputRequest) -> Any:
    """An elicitor that accepts a form with the defaults its schema gives (SEP-1034)."""
    properties = (request.requested_schema or {}).get("properties", {})
    return accept(
        {name: field["default"] for name, field in properties.items() if "default" in field}
    )


async def call(hub: Hub, tool: str, arguments: Mapping[str, Any]) -> toolwire.ToolResult:
    """One call of the server's ``tool`` through the governed executor."""
    toolset = hub.as_toolset()
    made = toolwire.make_call(toolset, f"{SERVER}__{tool}", dict(arguments), call_id="c1")
    (outcome,) = await toolwire.Executor(toolset).run([made])
    print(f"{tool}: {outcome.result.text}", file=sys.stderr)
    return outcome.result


@scenario("initialize")
async def listing(hub: Hub) -> None:
    print(hub.as_toolset().exposed_names, file=sys.stderr)


@scenario("tools_call", "request-metadata", "http-standard-headers")
async def add_numbers(hub: Hub) -> None:
    await call(hub, "add_numbers", {"a": 5, "b": 3})


@scenario("sse-retry")
async def reconnection(hub: Hub) -> None:
    await call(hub, "test_reconnection", {})


@scenario("elicitation-sep1034-client-defaults")
async def elicitation_defaults(hub: Hub) -> None:
    await call(hub, "test_client_elicitation_defaults", {})


@scenario("http-custom-headers")
async def custom_headers(hub: Hub) -> None:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    listed = {hub.as_toolset()[name].name for name in hub.as_toolset().exposed_names}
    for wanted in context.get("toolCalls", []):
        if wanted["name"] in listed:  # a tool the hub left out is not called
            await call(hub, wanted["name"], wanted.get("arguments") or {})


async def main(url: str, name: str) -> int:
    run = SCENARIOS.get(name)
    if run is None and name.startswith("auth/"):
        run = listing  # what an authorized client does first: connect and list
    if run is None:
        print(f"no client behaviour for scenario {name!r}", file=sys.stderr)
        return 2
    hub = Hub({SERVER: HttpServer(url=url, connect_timeout=20)}, elicitor=defaults)
    async with hub:
        if hub.status[SERVER] is not None:
            print(f"cannot reach the server: {hub.status[SERVER]}", file=sys.stderr)
            return 1
        await run(hub)
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv[-1], os.environ.get("MCP_CONFORMANCE_SCENARIO", "")))
