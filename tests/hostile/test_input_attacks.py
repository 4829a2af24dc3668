"""Hostile servers asking for input (MCP elicitation) during a call: questions the hub does not
offer, endless rounds, huge messages, requested schemas built to hang a validator or make it
fetch, odd keys; and hostile answers. Every call ends with one answer of its own; nothing is
fetched, nothing hangs, nothing escapes as a foreign exception.

The servers are the ``mcp`` SDK's low-level ``Server`` (2026-07-28: their questions come in an
``InputRequiredResult``), run in process.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from toolwire.inputs import InputAnswer, InputRequest, accept, checked_answer

pytest.importorskip("mcp")

import mcp_types as types
from mcp.server.lowlevel import Server

from toolwire.mcp import Hub, InProcessServer

pytestmark = pytest.mark.anyio

Ask = Callable[
    [types.CallToolRequestParams, int], "types.CallToolResult | types.InputRequiredResult"
]


def asking_server(ask: Ask) -> Server[Any]:
    """A server with one tool, ``ask``, whose every round ``ask(params, round)`` answers."""
    rounds = [0]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tool = types.Tool(name="ask", input_schema={"type": "object", "properties": {}})
        return types.ListToolsResult(tools=[tool])

    async def call_tool(
        ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        rounds[0] += 1
        return ask(params, rounds[0])

    return Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool)


def form(message: str, schema: dict[str, Any]) -> types.ElicitRequest:
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
    )


def done(params: types.CallToolRequestParams) -> types.CallToolResult:
    answers = {
        key: answer.model_dump(exclude_none=True) if hasattr(answer, "model_dump") else answer
        for key, answer in (params.input_responses or {}).items()
    }
    return types.CallToolResult(content=[types.TextContent(text=f"got {answers}")])


async def call_once(server: Server[Any], elicitor: Any) -> toolwire.ToolResult:
    with anyio.fail_after(30):
        async with Hub({"h": InProcessServer(server=server)}, elicitor=elicitor) as hub:
            toolset = hub.as_toolset()
            call = toolwire.make_call(toolset, "h__ask", {}, call_id="c1")
            (outcome,) = await toolwire.Executor(toolset).run([call])
    return outcome.result


FLAT = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}


async def test_a_sampling_request_is_not_offered_and_the_call_says_so() -> None:
    def ask(params: types.CallToolRequestParams, round: int) -> Any:
        sampling = types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(messages=[], max_tokens=10)
        )
        return types.InputRequiredResult(input_requests={"s": sampling}, request_state="x")

    result = await call_once(asking_server(ask), lambda request: {"word": "hi"})
    assert result.error_kind == "failed"
    assert "asked for 'sampling/createMessage', which the hub does not offer" in result.text


@pytest.mark.parametrize("with_questions", [False, True])
async def test_endless_rounds_end_after_ten(with_questions: bool) -> None:
    def ask(params: types.CallToolRequestParams, round: int) -> Any:
        if with_questions:
            return types.InputRequiredResult(
                input_requests={f"q{round}": form("again?", FLAT)}, request_state=str(round)
            )
        return types.InputRequiredResult(request_state=str(round))  # "busy", forever

    asked: list[str] = []
    result = await call_once(
        asking_server(ask), lambda request: asked.append(request.key) or {"word": "y"}
    )
    assert result.error_kind == "failed"
    assert "asked for input more than 10 times in one call" in result.text
    assert len(asked) == (10 if with_questions else 0)


async def test_a_huge_message_is_cut_before_anyone_sees_it() -> None:
    def ask(params: types.CallToolRequestParams, round: int) -> Any:
        if params.input_responses:
            return done(params)
        return types.InputRequiredResult(input_requests={"k": form("x" * 1_000_000, FLAT)})

    seen: list[InputRequest] = []
    result = await call_once(asking_server(ask), lambda r: seen.append(r) or {"word": "ok"})
    assert not result.is_error
    assert len(seen[0].message) == 4000


async def test_a_catastrophic_pattern_in_the_requested_schema_is_checked_in_linear_time() -> None:
    schema = {
        "type": "object",
        "properties": {"word": {"type": "string", "pattern": "^(a+)+$"}},
        "required": ["word"],
    }

    def ask(params: types.CallToolRequestParams, round: int) -> Any:
        if params.input_responses:
            return done(params)
        return types.InputRequiredResult(input_requests={"k": form("word?", schema)})

    result = await call_once(asking_server(ask), lambda request: {"word": "a" * 5000 + "b"})
    assert result.error_kind == "failed"
    assert "does not fit what it asked for" in result.text


class _Listener:
    """A TCP port on 127.0.0.1 that records whether anyone connected."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen()
        self.socket.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}/schema.json"
        self.connected = False
        self.stop = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stop:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                continue
            self.connected = True
            connection.close()

    def close(self) -> None:
        self.stop = True
        self.thread.join()
        self.socket.close()


@pytest.mark.parametrize("where", ["$ref", "$schema", "$id"])
async def test_a_requested_schema_never_makes_the_hub_fetch(where: str) -> None:
    listener = _Listener()
    try:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {"word": {"type": "string"}},
            "required": ["word"],
        }
        if where == "$ref":
            schema["properties"]["word"] = {"$ref": listener.url}
        else:
            schema[where] = listener.url

        def ask(params: types.CallToolRequestParams, round: int) -> Any:
            if params.input_responses:
                return done(params)
            return types.InputRequiredResult(input_requests={"k": form("word?", schema)})

        def elicitor(request: InputRequest) -> dict[str, Any]:
            return {"word": "hi"}

        result = await call_once(asking_server(ask), elicitor)
    finally:
        listener.close()
    assert not listener.connected
    assert result.error_kind in (None, "failed")  # answered, or refused as unusable


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"w": {"type": "string", "minLength": "two"}}},
        {"type": "object", "properties": {"w": {"pattern": "(?<=a)b"}}},
        {"type": "object", "properties": {"w": {"type": "strung"}}},
    ],
    ids=["bad-keyword-value", "look-behind", "unknown-type"],
)
async def test_an_unusable_requested_schema_fails_the_call_not_the_hub(
    schema: dict[str, Any],
) -> None:
    def ask(params: types.CallToolRequestParams, round: int) -> Any:
        if params.input_responses:
            return done(params)
        return types.InputRequiredResult(input_requests={"k": form("w?", schema)})

    result = await call_once(asking_server(ask), lambda request: {"w": "x"})
    assert result.error_kind == "failed"
    assert "does not fit what it asked for" in result.text


async def test_a_url_question_is_shown_never_fetched_and_accepting_it_sends_no_content() -> None:
    listener = _Listener()
    try:
        url_question = types.ElicitRequest(
            params=types.ElicitRequestURLParams(message="Sign in", url=listener.url)
        )

        def ask(params: types.CallToolRequestParams, round: int) -> Any:
            if params.input_responses:
                return done(params)
            return types.InputRequiredResult(input_requests={"login": url_question})

        seen: list[InputRequest] = []
        result = await call_once(asking_server(ask), lambda r: seen.append(r) or accept())
        smuggled = await call_once(asking_server(ask), lambda r: accept({"token": "x"}))
    finally:
        listener.close()
    assert not listener.connected
    assert (seen[0].mode, seen[0].url, seen[0].requested_schema) == ("url", listener.url, None)
    assert result.text == "got {'login': {'action': 'accept'}}"
    assert smuggled.error_kind == "failed"
    assert "carries no content" in smuggled.text


@pytest.mark.parametrize("key", ["\x00", "\ud800", "k" * 10_000, ""])
async def test_odd_question_keys_pause_the_call_or_answer_it_never_crash(key: str) -> None:
    def ask(params: types.CallToolRequestParams, round: int) -> Any:
        if params.input_responses:
            return done(params)
        return types.InputRequiredResult(input_requests={key: form("w?", FLAT)}, request_state="s")

    store = toolwire.MemoryStore()
    with anyio.fail_after(30):
        async with Hub(
            {"h": InProcessServer(server=asking_server(ask))}, elicitor=lambda r: None
        ) as hub:
            toolset = hub.as_toolset()
            call = toolwire.make_call(toolset, "h__ask", {}, call_id="c1")
            executor = toolwire.Executor(toolset, store=store)
            try:
                (outcome,) = await executor.run([call], run_id="r1")
            except toolwire.ApprovalPending as waiting:
                (question,) = waiting.pending[0].input  # (a lone surrogate arrives replaced)
                await toolwire.respond("r1", "c1", {"word": "w"}, key=question.key, store=store)
                (outcome,) = await executor.run([call], run_id="r1")
                assert outcome.result.text.startswith("got {")
            else:
                assert outcome.result.error_kind in ("failed", "unavailable")


@settings(max_examples=200, deadline=None)
@given(
    content=st.dictionaries(
        st.text(max_size=8),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.floats(),
            st.text(max_size=20),
            st.lists(st.text(max_size=5), max_size=3),
            st.lists(st.integers(), min_size=1, max_size=2),
            st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
        ),
        max_size=6,
    ),
    action=st.sampled_from(["accept", "decline", "cancel"]),
)
def test_an_answer_is_either_sent_as_given_or_refused_with_a_typed_error(
    content: dict[str, Any], action: str
) -> None:
    question = InputRequest(
        key="k",
        message="?",
        requested_schema={
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 0}, "s": {"type": "string"}},
        },
    )
    try:
        sent = checked_answer(question, InputAnswer(action, content), label="answer")  # type: ignore[arg-type]
    except toolwire.InvalidArguments:
        return
    assert sent.action == action
    if action == "accept":
        assert sent.content == content
    else:
        assert sent.content is None
        assert not content
