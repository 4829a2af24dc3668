"""The gateway in front of a server of the handshake era (``legacy_upstream.py``, the `mcp`
SDK's low-level server speaking only the ``initialize`` handshake, over stdio), whose requests
within a call (elicitation, sampling, roots) go to the client that made the call, and to no
one else:

- a server that keeps its client's roots for its session answers each client (each session,
  each principal) with that client's roots, never another's;
- a 2026-07-28 client, asked only in the answer to its call, gets the server's request as an
  ``InputRequiredResult``, and its retry with the answer continues the server's call;
- a client that cannot be asked (it did not declare the capability) is never said to have
  answered: the call fails saying why.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

import mcp_types as types
from auth_support import client, served
from mcp import Client

from toolwire.mcp import Authentication, Gateway, Hub, Identity, StaticTokens, StdioServer

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

BOUND = 60
UPSTREAM = Path(__file__).with_name("legacy_upstream.py")
ERAS = ["legacy", "auto"]  # the handshake revisions, and 2026-07-28
TOKENS = {"alice": "a" * 43, "bob": "b" * 43}


def legacy_hub() -> Hub:
    return Hub({"up": StdioServer(command=sys.executable, args=[str(UPSTREAM)])})


@asynccontextmanager
async def gateway() -> AsyncIterator[Gateway]:
    """A gateway in front of the handshake-era upstream, its clients in this process."""
    async with legacy_hub() as hub:
        assert hub.protocol_version("up") == "2025-11-25"
        yield Gateway(hub.as_toolset(), hub=hub, own_names=True)


def roots_of(who: str) -> Any:
    async def answer(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=f"file:///home/{who}")])

    return answer


async def answer_name(context: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def answer_sampling(context: Any, params: Any) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(text="Paris"), model="test"
    )


def text(result: types.CallToolResult) -> str:
    return "\n".join(part.text for part in result.content if isinstance(part, types.TextContent))


@pytest.mark.parametrize("mode", ERAS)
async def test_an_upstream_keeping_roots_answers_each_session_with_its_own(mode: str) -> None:
    """Two sessions of one principal, each with its roots: the upstream, which asks once per
    session and keeps them, never answers one's call with the other's roots."""
    seen: list[tuple[str, str]] = []
    with anyio.fail_after(BOUND):
        async with gateway() as served_gateway:
            server = served_gateway.server
            async with (
                Client(server(), mode=mode, list_roots_callback=roots_of("alice")) as first,
                Client(server(), mode=mode, list_roots_callback=roots_of("bob")) as second,
            ):
                for name, session in [("first", first), ("second", second), ("first", first)]:
                    seen.append((name, text(await session.call_tool("where", {}))))
    assert seen == [
        ("first", "file:///home/alice"),
        ("second", "file:///home/bob"),
        ("first", "file:///home/alice"),
    ]


@pytest.mark.parametrize("mode", ERAS)
async def test_an_upstream_keeping_roots_answers_each_principal_with_its_own(mode: str) -> None:
    """Two principals over HTTP, each with its roots (a 2026-07-28 client is asked in the
    answer to its call, a handshake-era one within it)."""
    auth = Authentication(
        StaticTokens({StaticTokens.digest(token): Identity(who) for who, token in TOKENS.items()})
    )
    seen: list[tuple[str, str]] = []
    with anyio.fail_after(BOUND * 2):
        async with served(legacy_hub(), auth=auth, own_names=True) as url:
            for who in ("alice", "bob", "alice", "bob"):
                async with client(
                    url, TOKENS[who], mode=mode, list_roots_callback=roots_of(who)
                ) as connected:
                    seen.append((who, text(await connected.call_tool("where", {}))))
    assert seen == [(who, f"file:///home/{who}") for who in ("alice", "bob", "alice", "bob")]


@pytest.mark.parametrize(
    ("tool", "callbacks", "said"),
    [
        ("greet", {"elicitation_callback": answer_name}, "Hello, Ada!"),
        ("capital", {"sampling_callback": answer_sampling}, "The model said Paris"),
        ("roots_now", {"list_roots_callback": roots_of("ada")}, "file:///home/ada"),
    ],
    ids=["elicitation", "sampling", "roots"],
)
async def test_a_2026_client_answers_a_handshake_era_servers_request_within_its_call(
    tool: str, callbacks: dict[str, Any], said: str
) -> None:
    """The client is asked in the answer to its call (the SDK's client answers the
    ``InputRequiredResult`` and retries), and the server's call goes on with its answer."""
    with anyio.fail_after(BOUND):
        async with (
            gateway() as served_gateway,
            Client(served_gateway.server(), mode="auto", **callbacks) as connected,
        ):
            result = await connected.call_tool(tool, {})
    assert (result.is_error, text(result)) == (False, said)


async def test_a_2026_client_is_handed_the_request_and_its_retry_continues_the_call() -> None:
    """Step by step, as the wire has it: the call is answered with the server's request; the
    retry with the answer and the state gets the call's answer."""
    with anyio.fail_after(BOUND):
        async with (
            gateway() as served_gateway,
            Client(
                served_gateway.server(), mode="auto", elicitation_callback=answer_name
            ) as connected,
        ):
            asked = await connected.session.call_tool("greet", {}, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult)
            ((key, request),) = (asked.input_requests or {}).items()
            assert isinstance(request, types.ElicitRequest)
            assert request.params.message == "What is your name?"
            answer = types.ElicitResult(action="accept", content={"name": "Grace"})
            done = await connected.session.call_tool(
                "greet",
                {},
                allow_input_required=True,
                input_responses={key: answer},
                request_state=asked.request_state,
            )
    assert isinstance(done, types.CallToolResult)
    assert (done.is_error, text(done)) == (False, "Hello, Grace!")


@pytest.mark.parametrize("mode", ERAS)
async def test_a_client_that_cannot_be_asked_is_never_said_to_have_declined(mode: str) -> None:
    """The client declared no elicitation: the server's question fails the call, saying why;
    the server never hears a "decline" nobody gave."""
    with anyio.fail_after(BOUND):
        async with (
            gateway() as served_gateway,
            Client(served_gateway.server(), mode=mode) as connected,
        ):
            result = await connected.call_tool("greet", {})
    assert result.is_error is True
    assert "the user said" not in text(result)
    assert "its server asked for input (elicitation)" in text(result)
    assert "did not declare the elicitation capability" in text(result)
