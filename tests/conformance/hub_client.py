"""The client the conformance suite runs against its own servers: toolwire's public hub API
(``toolwire.mcp.Hub``, the executor) reaching the server at the URL given last on the command
line, doing what the scenario named by ``MCP_CONFORMANCE_SCENARIO`` asks of a client.

A server behind OAuth is configured as an application would: ``OAuth`` with a Client ID
Metadata Document URL, or the client registered beforehand, or ``ClientCredentials`` with a
secret or a private key, from what the suite hands over in ``MCP_CONFORMANCE_CONTEXT`` (its
scenario's context, as JSON). The person who would authorize in a browser is played by
``headless``: the suite's authorization server answers at once with a redirect.

Exit status 0 when the hub did its part; the suite judges the rest from what it saw on the wire.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import httpx2

import toolwire
from toolwire.inputs import InputRequest, accept
from toolwire.mcp import ClientCredentials, HttpServer, Hub, MemoryTokenStore, OAuth

SERVER = "suite"
"""The hub's name for the suite's server (its tools are exposed as ``suite__tool``)."""
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
"""This client's metadata document (a Client ID Metadata Document), the one the suite's
authorization servers know: its client id where they support them."""

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


async def authorized(hub: Hub) -> None:
    """What an authorized client does: list the server's tools and call each (the suite's
    authorization servers' one tool takes no arguments; calling it may ask for more scopes)."""
    toolset = hub.as_toolset()
    for name in toolset.exposed_names:
        await call(hub, toolset[name].name, {})


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
    context = scenario_context()
    listed = {hub.as_toolset()[name].name for name in hub.as_toolset().exposed_names}
    for wanted in context.get("toolCalls", []):
        if wanted["name"] in listed:  # a tool the hub left out is not called
            await call(hub, wanted["name"], wanted.get("arguments") or {})


def scenario_context() -> dict[str, Any]:
    """What the suite hands the client for its scenario (credentials, tool calls), if anything."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    return context if isinstance(context, dict) else {}


async def headless(url: str) -> str:
    """The person at the browser: opens the authorization URL and returns where the
    authorization server sent them back (its redirect, not followed)."""
    async with httpx2.AsyncClient(follow_redirects=False, timeout=20) as client:
        answer = await client.get(url)
    location = answer.headers.get("location")
    if not answer.is_redirect or location is None:
        raise RuntimeError(f"the authorization page answered {answer.status_code}, no redirect")
    return str(answer.url.join(location))


def authorization(name: str, context: Mapping[str, Any]) -> OAuth | ClientCredentials:
    """How the hub is authorized with the server of scenario ``name``, from its context: a
    service's client credentials (a private key or a secret) in the client-credentials
    scenarios; else the authorization code grant, with the client registered beforehand when
    the context gives one."""
    store = MemoryTokenStore()
    if name.startswith("auth/client-credentials"):
        return ClientCredentials(
            client_id=context["client_id"],
            client_secret=context.get("client_secret"),
            private_key=context.get("private_key_pem"),
            signing_algorithm=context.get("signing_algorithm", "RS256"),
            store=store,
        )
    return OAuth(
        client_id=context.get("client_id"),
        client_secret=context.get("client_secret"),
        issuer=context.get("issuer"),
        client_metadata_url=CLIENT_METADATA_URL,
        authorize=headless,
        store=store,
    )


async def main(url: str, name: str) -> int:
    run = SCENARIOS.get(name)
    auth: OAuth | ClientCredentials | None = None
    if name.startswith("auth/"):
        run = run or authorized
        auth = authorization(name, scenario_context())
    if run is None:
        print(f"no client behaviour for scenario {name!r}", file=sys.stderr)
        return 2
    hub = Hub({SERVER: HttpServer(url=url, connect_timeout=20, auth=auth)}, elicitor=defaults)
    async with hub:
        if hub.status[SERVER] is not None:
            print(f"cannot reach the server: {hub.status[SERVER]}", file=sys.stderr)
            return 1
        await run(hub)
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv[-1], os.environ.get("MCP_CONFORMANCE_SCENARIO", "")))
