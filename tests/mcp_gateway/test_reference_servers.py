"""What a client sees of the official reference servers (npm ``@modelcontextprotocol/server-
everything``, ``-filesystem``, ``-memory``, pinned) directly and through the gateway, side by
side: their tools, resources, templates and prompts as listed (every field: titles,
annotations, ``_meta``, schemas, ``execution``), and what a read, a get and calls answer
(content, its annotations, structured content) are the same, but for what a policy takes out.

Both clients speak the same revision (the servers' handshake era) and declare the same
capabilities (elicitation, sampling, roots: what the hub declares to relay its clients'
answers), since a server lists some tools only to a client that can answer them. A listing
the server has no capability for is compared as empty: the gateway in front of a hub serves
resources and prompts, listing none where its servers offer none. The table on
``docs/gateway.md`` is the one this test makes.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

import mcp_types as types
from mcp import Client, StdioServerParameters

from shared_files import npm_package, unavailable
from toolwire.mcp import Gateway, Hub, StdioServer
from toolwire.policy import Policy, Rule

pytestmark = pytest.mark.anyio

BOUND = 60
VERSION = "2026.8.31"
"""The servers' release, pinned (their tools' names change between releases)."""
KINDS = ("tools", "resources", "resourceTemplates", "prompts")
DOCS = Path(__file__).parents[2] / "docs" / "gateway.md"
HEADER = "| server | what | directly | through the gateway |"


def command(package: str, *args: str) -> list[str]:
    script = npm_package(f"@modelcontextprotocol/{package}@{VERSION}") / "dist" / "index.js"
    if not script.is_file():
        unavailable(f"npm installed {package}, but without dist/index.js")
    return [str(shutil.which("node")), str(script), *args]


@pytest.fixture(scope="module")
def servers(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Each server's command and environment."""
    work = tmp_path_factory.mktemp("reference")
    (work / "notes.txt").write_text("a note\n")
    return {
        "everything": (command("server-everything", "stdio"), {}),
        "filesystem": (command("server-filesystem", str(work)), {}),
        "memory": (command("server-memory"), {"MEMORY_FILE_PATH": str(work / "memory.jsonl")}),
    }


async def _answers(*_: Any) -> Any:
    """A client's answer to a server's question: none is asked in these runs."""
    return types.ErrorData(code=types.INVALID_REQUEST, message="not in this test")


ANSWERING: dict[str, Any] = {
    "sampling_callback": _answers,
    "elicitation_callback": _answers,
    "list_roots_callback": _answers,
}


@asynccontextmanager
async def directly(argv: list[str], env: dict[str, str]) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=argv[0], args=argv[1:], env={**os.environ, **env})
    async with Client(params, mode="legacy", **ANSWERING) as client:
        yield client


@asynccontextmanager
async def through(
    name: str, argv: list[str], env: dict[str, str], policy: Policy | None = None
) -> AsyncIterator[Client]:
    hub = Hub({name: StdioServer(command=argv[0], args=argv[1:], env=env)})
    async with hub:
        gateway = Gateway(hub.as_toolset(), hub=hub, own_names=True, policy=policy)
        async with Client(gateway.server(), mode="legacy", **ANSWERING) as client:
            yield client


def dumped(value: Any) -> Any:
    return value.model_dump(mode="json", by_alias=True, exclude_none=True)


async def every_page(list_page: Callable[..., Awaitable[Any]], key: str) -> list[Any]:
    entries, cursor = [], None
    while True:
        page = dumped(await list_page(cursor=cursor))
        entries += page[key]
        cursor = page.get("nextCursor")
        if cursor is None:
            return entries


async def seen(client: Client) -> dict[str, list[Any]]:
    """What ``client`` is listed, by kind (empty where the server has no such capability)."""
    capabilities = client.server_capabilities
    listings = {"tools": client.list_tools}
    if capabilities is not None and capabilities.resources is not None:
        listings["resources"] = client.list_resources
        listings["resourceTemplates"] = client.list_resource_templates
    if capabilities is not None and capabilities.prompts is not None:
        listings["prompts"] = client.list_prompts
    found = {kind: await every_page(listings[kind], kind) for kind in listings}
    return {kind: found.get(kind, []) for kind in KINDS}


def row(server: str, kind: str, direct: list[Any], gateway: list[Any]) -> str:
    same = "the same" if gateway == direct else "**DIFFERENT**"
    return f"| {server} | {kind} | {len(direct)} | {len(gateway)}, {same} |"


async def test_each_reference_server_is_seen_the_same_directly_and_through_the_gateway(
    servers: dict[str, tuple[list[str], dict[str, str]]],
) -> None:
    rows = [HEADER, "|---|---|---|---|"]
    differences = []
    for name, (argv, env) in servers.items():
        with anyio.fail_after(BOUND):
            async with directly(argv, env) as client:
                direct = await seen(client)
            async with through(name, argv, env) as client:
                gateway = await seen(client)
        for kind in KINDS:
            rows.append(row(name, kind, direct[kind], gateway[kind]))
            differences += [
                (name, kind, d, g)
                for d, g in zip(direct[kind], gateway[kind], strict=False)
                if d != g
            ]
    table = "\n".join(rows)
    print("\n" + table)
    assert differences == []
    assert "**DIFFERENT**" not in table
    documented = DOCS.read_text(encoding="utf-8").splitlines()
    start = documented.index(HEADER)
    assert "\n".join(documented[start : start + len(rows)]) == table, (
        "docs/gateway.md's reference servers table is not this run's: put the table above in it"
    )


ASKED = [  # (what its dynamic resources hold says when they were made: not compared)
    ("call", "echo", {"message": "through"}),
    ("call", "get-annotated-message", {"messageType": "error", "includeImage": True}),
    ("call", "get-resource-links", {"count": 2}),
    ("call", "get-structured-content", {"location": "New York"}),
    ("read", "demo://resource/static/document/architecture.md", None),
    ("read", "demo://resource/static/document/features.md", None),
    ("get", "args-prompt", {"city": "Oslo", "state": "Norway"}),
    ("get", "simple-prompt", {}),
]


async def ask(client: Client, how: str, name: str, arguments: Any) -> Any:
    if how == "call":
        return dumped(await client.call_tool(name, arguments))
    if how == "read":
        return dumped(await client.read_resource(name))
    return dumped(await client.get_prompt(name, arguments))


async def test_calls_reads_and_gets_of_the_everything_server_answer_the_same(
    servers: dict[str, tuple[list[str], dict[str, str]]],
) -> None:
    argv, env = servers["everything"]
    with anyio.fail_after(BOUND):
        async with directly(argv, env) as client:
            direct = [await ask(client, *asked) for asked in ASKED]
        async with through("everything", argv, env) as client:
            gateway = [await ask(client, *asked) for asked in ASKED]
    for asked, answer, passed_on in zip(ASKED, direct, gateway, strict=True):
        assert passed_on == answer, asked
    annotated = direct[1]["content"]
    assert any("annotations" in part for part in annotated)  # what is compared holds them


async def test_the_only_difference_is_the_policys(
    servers: dict[str, tuple[list[str], dict[str, str]]],
) -> None:
    policy = Policy(
        Rule("deny", "memory/delete_*"),
        Rule("deny", "memory/*", kind="resource"),
    )
    argv, env = servers["memory"]
    with anyio.fail_after(BOUND):
        async with directly(argv, env) as client:
            direct = await seen(client)
        async with through("memory", argv, env, policy) as client:
            gateway = await seen(client)
    kept = [tool for tool in direct["tools"] if not tool["name"].startswith("delete_")]
    assert gateway["tools"] == kept
    assert len(kept) < len(direct["tools"])
    assert direct["resources"]
    assert gateway["resources"] == []
