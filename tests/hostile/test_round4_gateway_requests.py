"""An outsider's attacks on the requests a server sends within a call behind the gateway
(elicitation, sampling, roots): who gets them, who may answer them, and what is said when
nobody can.

The upstreams are a handshake-era server built on the `mcp` SDK's low-level ``Server``
(``tests/mcp_gateway/legacy_upstream.py``) and a hand-written stdio server that asks one
question once two calls are in flight (``input_outsider_legacy.py``), both over stdio; the
clients are the SDK's own, in process or over HTTP with bearer tokens.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp_gateway"))

import mcp_types as types
from auth_support import client, served
from mcp import Client
from mcp.shared.exceptions import MCPError

import toolwire
from toolwire.inputs import InputRequest
from toolwire.mcp import Authentication, Gateway, Hub, Identity, StaticTokens, StdioServer

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

BOUND = 60
UPSTREAM = Path(__file__).resolve().parents[1] / "mcp_gateway" / "legacy_upstream.py"
PAIR = Path(__file__).with_name("input_outsider_legacy.py")
TOKENS = {"alice": "a" * 43, "bob": "b" * 43}
AUTH = Authentication(
    StaticTokens({StaticTokens.digest(token): Identity(who) for who, token in TOKENS.items()})
)


def legacy_hub() -> Hub:
    return Hub({"up": StdioServer(command=sys.executable, args=[str(UPSTREAM)])})


@asynccontextmanager
async def gateway(hub: Hub) -> AsyncIterator[Gateway]:
    async with hub:
        yield Gateway(hub.as_toolset(), hub=hub, own_names=True)


def roots_of(who: str) -> Any:
    async def answer(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=f"file:///home/{who}")])

    return answer


def text(result: Any) -> str:
    return "\n".join(part.text for part in result.content if isinstance(part, types.TextContent))


def messages(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return " ".join(messages(inner) for inner in exc.exceptions)
    return str(exc)


async def never_asked(context: Any, params: Any) -> types.ElicitResult:
    raise AssertionError("this client is never asked")


# -- roots are one client's ------------------------------------------------------------------------


async def test_clients_calling_at_once_never_get_each_others_kept_roots() -> None:
    """Sessions call at once, again and again, a server that keeps the roots it is given: each
    answer holds the caller's roots, or is a refusal (a roots request that came while another
    client's call was in flight), never another client's roots."""
    who = ["ann", "ben", "cat"]
    answers: dict[str, list[str]] = {name: [] for name in who}
    with anyio.fail_after(BOUND * 2):
        async with gateway(legacy_hub()) as served_gateway:
            clients = [
                Client(served_gateway.server(), mode="legacy", list_roots_callback=roots_of(name))
                for name in who
            ]
            async with clients[0] as a, clients[1] as b, clients[2] as c:

                async def calls(name: str, session: Client) -> None:
                    for _ in range(4):
                        try:
                            result = await session.call_tool("where", {})
                        except MCPError as refused:  # the server's error for refused roots
                            answers[name].append(f"refused: {refused}")
                        else:
                            answers[name].append(text(result))

                async with anyio.create_task_group() as tasks:
                    for name, session in zip(who, (a, b, c), strict=True):
                        tasks.start_soon(calls, name, session)
                for name, session in zip(who, (a, b, c), strict=True):
                    answers[name].append(text(await session.call_tool("where", {})))
    for name in who:
        got = answers[name]
        assert all(a == f"file:///home/{name}" or a.startswith("refused") for a in got), got
        assert got[-1] == f"file:///home/{name}"  # once alone, its own roots


async def test_a_question_no_call_can_be_named_for_is_never_sent_to_a_client() -> None:
    """Two clients' calls are in flight on a stdio server that asks one question naming no
    call: neither client is asked (it could be the other's question), the server is refused,
    and each call is told why rather than answered as if nothing was asked."""
    hub = Hub({"old": StdioServer(command=sys.executable, args=[str(PAIR), "pair"])})
    results: dict[str, str] = {}
    with anyio.fail_after(BOUND):
        async with gateway(hub) as served_gateway:
            first = Client(served_gateway.server(), mode="legacy", elicitation_callback=never_asked)
            second = Client(
                served_gateway.server(), mode="legacy", elicitation_callback=never_asked
            )
            async with first as one, second as two, anyio.create_task_group() as tasks:

                async def call(name: str, session: Client) -> None:
                    result = await session.call_tool("ask", {"path": f"/{name}"})
                    results[name] = text(result) if result.is_error else "not failed"

                tasks.start_soon(call, "one", one)
                tasks.start_soon(call, "two", two)
    assert set(results) == {"one", "two"}
    for said in results.values():
        assert "its server asked for input (elicitation)" in said
        assert "calls of several clients" in said


# -- a 2026-07-28 client's answer to a handshake-era server's request -----------------------------


async def _asked(url: str, who: str, tool: str = "greet") -> types.InputRequiredResult:
    async with client(url, TOKENS[who], mode="auto", elicitation_callback=never_asked) as alice:
        asked = await alice.session.call_tool(tool, {}, allow_input_required=True)
    assert isinstance(asked, types.InputRequiredResult)
    return asked


async def _retry(
    url: str, who: str, asked: types.InputRequiredResult, answer: Any, tool: str = "greet"
) -> Any:
    ((key, _),) = (asked.input_requests or {}).items()
    async with client(url, TOKENS[who], mode="auto") as connected:
        return await connected.session.call_tool(
            tool,
            {},
            allow_input_required=True,
            input_responses={key: answer},
            request_state=asked.request_state,
        )


NAMED = types.ElicitResult(action="accept", content={"name": "Alice"})


async def test_another_principal_cannot_answer_a_kept_calls_request() -> None:
    """Bob, given alice's kept call's state, answers it: refused (the state is bound to the
    principal it was given to), and alice's answer still continues her call."""
    with anyio.fail_after(BOUND):
        async with served(legacy_hub(), auth=AUTH, own_names=True) as url:
            asked = await _asked(url, "alice")
            with pytest.raises(Exception) as refused:  # noqa: PT011  the SDK's error, in a group
                await _retry(url, "bob", asked, NAMED)
            done = await _retry(url, "alice", asked, NAMED)
    assert "Invalid or expired requestState" in messages(refused.value)
    assert isinstance(done, types.CallToolResult)
    assert (done.is_error, text(done)) == (False, "Hello, Alice!")


async def test_a_kept_calls_state_continues_only_the_call_it_was_given_for() -> None:
    """Alice's state brought to another tool's call is refused; her own call goes on."""
    with anyio.fail_after(BOUND):
        async with served(legacy_hub(), auth=AUTH, own_names=True) as url:
            asked = await _asked(url, "alice")
            with pytest.raises(Exception) as refused:  # noqa: PT011  the SDK's error, in a group
                await _retry(url, "alice", asked, NAMED, tool="capital")
            done = await _retry(url, "alice", asked, NAMED)
    assert "Invalid or expired requestState" in messages(refused.value)
    assert (done.is_error, text(done)) == (False, "Hello, Alice!")


async def test_a_kept_calls_answer_replayed_runs_nothing_again() -> None:
    """The retry that answered the call, sent again: the kept call is gone (it was answered
    once), so the replay is refused rather than run the server's call again."""
    with anyio.fail_after(BOUND):
        async with served(legacy_hub(), auth=AUTH, own_names=True) as url:
            asked = await _asked(url, "alice")
            done = await _retry(url, "alice", asked, NAMED)
            replayed = await _retry(url, "alice", asked, NAMED)
    assert (done.is_error, text(done)) == (False, "Hello, Alice!")
    assert replayed.is_error is True
    assert "keeps no such call" in text(replayed)


async def test_one_answer_sent_twice_at_once_continues_the_call_once() -> None:
    """The same retry, sent twice at once: one continues the call; the other finds nothing
    to continue (never a second answer handed to the server, nor the call run twice)."""
    answers: list[Any] = []
    with anyio.fail_after(BOUND):
        async with served(legacy_hub(), auth=AUTH, own_names=True) as url:
            asked = await _asked(url, "alice")

            async def retry() -> None:
                answers.append(await _retry(url, "alice", asked, NAMED))

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(retry)
                tasks.start_soon(retry)
    said = sorted(text(answer) for answer in answers)
    assert said[0] == "Hello, Alice!"
    assert "keeps no such call" in said[1]


async def test_a_request_left_unanswered_ends_the_call_and_a_late_answer_continues_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import toolwire.mcp._bridge

    monkeypatch.setattr(toolwire.mcp._bridge, "QUESTION_SECONDS", 0)
    with anyio.fail_after(BOUND):
        async with served(legacy_hub(), auth=AUTH, own_names=True) as url:
            async with client(
                url, TOKENS["alice"], mode="auto", elicitation_callback=never_asked
            ) as alice:
                first = await alice.session.call_tool("greet", {}, allow_input_required=True)
            if isinstance(first, types.InputRequiredResult):  # handed before it ran out
                first = await _retry(url, "alice", first, NAMED)
    assert isinstance(first, types.CallToolResult)
    assert first.is_error is True
    assert "Hello" not in text(first)
    assert "did not answer within 0 s" in text(first) or "keeps no such call" in text(first)


@pytest.mark.parametrize(
    "answer",
    [
        types.ListRootsResult(roots=[types.Root(uri="file:///etc")]),
        types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="yes"), model="m"
        ),
    ],
    ids=["roots", "sampling"],
)
async def test_an_answer_of_another_kind_is_never_passed_off_as_the_users(answer: Any) -> None:
    """The retry answers the server's question (elicitation) with a roots list, or a sampled
    message: the server is not handed it as the user's answer, and the call fails saying so."""
    with anyio.fail_after(BOUND):
        async with served(legacy_hub(), auth=AUTH, own_names=True) as url:
            asked = await _asked(url, "alice")
            done = await _retry(url, "alice", asked, answer)
    assert isinstance(done, types.CallToolResult)
    assert done.is_error is True
    assert "carried no elicitation answer" in text(done)
    assert "Hello" not in text(done)


async def test_a_request_the_policy_refuses_is_not_bridged_to_a_2026_client() -> None:
    asked: list[Any] = []

    async def sampling(context: Any, params: Any) -> types.CreateMessageResult:
        asked.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="Paris"), model="m"
        )

    policy = toolwire.Policy(requests=[toolwire.policy.RequestRule("deny", "up/sampling")])
    with anyio.fail_after(BOUND):
        async with legacy_hub() as hub:
            served_gateway = Gateway(hub.as_toolset(), hub=hub, own_names=True, policy=policy)
            async with Client(served_gateway.server(), sampling_callback=sampling) as connected:
                with pytest.raises(MCPError) as refused:  # the server's own error, passed on
                    await connected.call_tool("capital", {})
    assert asked == []
    assert "sampling is not available" in str(refused.value)


# -- the hub's own calls (an application's elicitor) --------------------------------------------


async def test_an_elicitor_failing_with_two_calls_in_flight_fails_each_saying_why() -> None:
    def broken(request: InputRequest) -> Any:
        raise RuntimeError("the approval screen is down")

    hub = Hub(
        {"old": StdioServer(command=sys.executable, args=[str(PAIR), "pair"])}, elicitor=broken
    )
    with anyio.fail_after(BOUND):
        async with hub:
            toolset = hub.as_toolset()
            calls = [
                toolwire.make_call(toolset, "old__ask", {"path": path}, call_id=call_id)
                for call_id, path in (("c1", "/first"), ("c2", "/second"))
            ]
            outcomes = await toolwire.Executor(toolset).run(calls)
    for outcome in outcomes:
        assert outcome.result.error_kind == "failed"
        assert "the elicitor failed: RuntimeError: the approval screen is down" in (
            outcome.result.text
        )
        assert "does not say which one asked" in outcome.result.text
