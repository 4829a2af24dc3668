"""Hypothesis over the whole pipeline (parse → validate → govern → run → store → answer) for all
four providers: hostile arguments (lone surrogates, huge integers, NaN, deep nesting), duplicate
and colliding ids, odd results and failing tools, structurally random responses and streams.

What must hold for every example: only toolwire's exceptions reach the caller; every call item
of the response gets exactly one answer, in order; an answer that says a call ran carries that
call's own tag, never another call's; no call runs twice."""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_turns import PROVIDERS, answer_text, answered_id, response_for

from toolwire import (
    ApprovalPending,
    DeferredApproval,
    Executor,
    MemoryStore,
    Policy,
    Rule,
    SQLiteStore,
    Tool,
    ToolSet,
    ToolwireError,
    allow,
    deny,
    execute_tool_calls,
)
from toolwire.providers import anthropic, gemini, openai_chat, openai_responses

RUNS: Counter[str] = Counter()
"""How many times each tag ran."""


async def _echo(tag: str, value: Any = None) -> Any:
    RUNS[tag] += 1
    return {"tag": tag, "value": value}


def _echo_sync(tag: str, value: Any = None) -> Any:
    RUNS[tag] += 1
    return f"tag {tag}"


async def _odd(tag: str, value: Any = None) -> Any:
    RUNS[tag] += 1
    odd = [float("nan"), {1: tag}, {"b": b"\xff", "tag": tag}, {"s": {tag}}, f"{tag}\ud800"]
    return odd[len(tag) % len(odd)]


async def _fails(tag: str, value: Any = None) -> Any:
    RUNS[tag] += 1
    if len(tag) % 2:
        raise asyncio.CancelledError  # on its own: a failure, not a cancellation
    raise RuntimeError(f"failed {tag}")


_SCHEMA = {
    "type": "object",
    "properties": {"tag": {"type": "string", "pattern": "^T[0-9]+Q7$"}, "value": {}},
    "required": ["tag"],
}
TOOLS = ToolSet(
    [
        Tool(name="echo", handler=_echo, input_schema=_SCHEMA),
        Tool(name="echo_sync", handler=_echo_sync, input_schema=_SCHEMA),
        Tool(name="odd", handler=_odd, input_schema=_SCHEMA),
        Tool(name="fails", handler=_fails, input_schema=_SCHEMA),
        Tool(name="asks", handler=_echo, input_schema=_SCHEMA),
    ]
)
POLICY = Policy(Rule("ask", "asks"))

_NAMES = st.sampled_from(
    ["echo", "echo_sync", "odd", "fails", "asks", "missing", "", "default_api.echo", "echo\u200b"]
)
_HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([4400, 5000, 19]).map(lambda digits: -(10**digits)),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.characters(exclude_categories=()), max_size=8),
    st.sampled_from(["\ud800", "x\udfffy", "\U000e0041hidden"]),
)
_VALUES = st.recursive(
    _HOSTILE,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)
_IDS = st.one_of(st.none(), st.sampled_from(["a", "b", "a", "toolu_missing_1", "call_1", ""]))


@st.composite
def _calls(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Call items: a name, arguments holding the call's own tag (or hostile ones), an id."""
    calls = []
    for index in range(draw(st.integers(min_value=0, max_value=6))):
        arguments: Any = {"tag": f"T{index}Q7"}  # a tag no random text will spell
        if draw(st.booleans()):
            arguments["value"] = draw(_VALUES)
        if draw(st.integers(0, 9)) == 0:
            arguments = draw(_VALUES)  # not even an object, sometimes
        calls.append({"name": draw(_NAMES), "arguments": arguments, "id": draw(_IDS)})
    return calls


def _openai_arguments(draw: st.DrawFn, arguments: Any) -> Any:
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return draw(st.sampled_from(['{"tag": NaN}', '{"tag": "t0"', "[1]", "", "nul", "1" * 5000]))
    if choice == 1:
        return arguments  # an object where a string belongs (some compatible hosts)
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # so the model's JSON text can hold a 5,000-digit integer
    try:
        return json.dumps(arguments, allow_nan=True)  # NaN / Infinity literals included
    finally:
        sys.set_int_max_str_digits(limit)


@st.composite
def _responses(draw: st.DrawFn) -> tuple[str, Any, list[dict[str, Any]]]:
    provider = draw(st.sampled_from(PROVIDERS))
    calls = draw(_calls())
    if provider == "gemini":
        parts: list[Any] = []
        for c in calls:
            body: dict[str, Any] = {"name": c["name"], "args": c["arguments"]}
            if c["id"] is not None:
                body["id"] = c["id"]
            parts.append({"functionCall": body})
            if draw(st.booleans()):
                parts.append({"text": "thinking"})
        response: Any = {"candidates": [{"content": {"role": "model", "parts": parts}}]}
    elif provider == "anthropic":
        blocks: list[Any] = []
        for c in calls:
            block = {"type": "tool_use", "name": c["name"], "input": c["arguments"]}
            if c["id"] is not None:
                block["id"] = c["id"]
            blocks.append(block)
            if draw(st.booleans()):
                blocks.append({"type": "server_tool_use", "id": "srv", "name": "web_search"})
        response = {"role": "assistant", "content": blocks}
    elif provider == "openai-chat":
        tool_calls = [
            {
                **({"id": c["id"]} if c["id"] is not None else {}),
                "type": "function",
                "function": {
                    "name": c["name"],
                    "arguments": _openai_arguments(draw, c["arguments"]),
                },
            }
            for c in calls
        ]
        response = {"choices": [{"message": {"role": "assistant", "tool_calls": tool_calls}}]}
    else:
        items: list[Any] = []
        for c in calls:
            items.append(
                {
                    "type": "function_call",
                    **({"call_id": c["id"]} if c["id"] is not None else {}),
                    "name": c["name"],
                    "arguments": _openai_arguments(draw, c["arguments"]),
                }
            )
            if draw(st.booleans()):
                items.append({"type": "web_search_call", "id": "ws"})
        response = {"output": items}
    return provider, response, calls


def _tag_of(call: dict[str, Any]) -> str | None:
    arguments = call["arguments"]
    return arguments.get("tag") if isinstance(arguments, dict) else None


def _check_turn(provider: str, calls: list[dict[str, Any]], outcome: Any) -> None:
    assert len(outcome.results) == len(calls), "one answer per call item"
    assert len(outcome.calls) == len(calls)
    tags = {_tag_of(c) for c in calls} - {None}
    for call, answer, settled in zip(calls, outcome.results, outcome.calls, strict=True):
        text = answer_text(answer)
        json.dumps(answer, allow_nan=False).encode("utf-8")  # what the SDKs send
        own = _tag_of(call)
        for tag in tags - {own}:
            assert f'"{tag}"' not in text, "another call's answer"
            assert f"tag {tag}" not in text, "another call's answer"
        if provider != "gemini" and call["id"]:
            assert answered_id(answer) == call["id"]
        if settled.result.error_kind is None and own is not None:
            assert own in text
    assert all(n == 1 for n in RUNS.values()), f"a call ran twice: {RUNS}"


async def _turn(provider: str, response: Any, run_id: str | None, store: Any) -> Any:
    try:
        return await execute_tool_calls(
            TOOLS,
            provider,
            response,
            run_id=run_id,
            store=store,
            policy=POLICY,
            approver=DeferredApproval(),
            timeout=5,
        )
    except ApprovalPending as pending:
        for request in pending.pending:  # decide, then resume: the rest come from the store
            decision = allow() if len(request.call_id) % 2 else deny("no")
            await Executor((), store=store).decide(pending.run_id, request.call_id, decision)
        return await execute_tool_calls(
            TOOLS,
            provider,
            response,
            run_id=pending.run_id,
            store=store,
            policy=POLICY,
            approver=DeferredApproval(),
            timeout=5,
        )


@settings(
    max_examples=1200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=_responses(), named=st.booleans())
def test_the_pipeline_answers_every_call_once_with_its_own_answer(
    case: tuple[str, Any, list[dict[str, Any]]], named: bool
) -> None:
    provider, response, calls = case
    RUNS.clear()
    store = MemoryStore()
    # No exception at all: these responses are well formed, only their calls are hostile.
    outcome = anyio.run(_turn, provider, response, "run" if named else None, store)
    _check_turn(provider, calls, outcome)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_responses())
def test_a_resumed_durable_run_gives_the_same_answers_and_runs_nothing_again(
    case: tuple[str, Any, list[dict[str, Any]]],
) -> None:
    provider, response, calls = case
    RUNS.clear()
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "runs.db")
        try:
            first = anyio.run(_turn, provider, response, "run", store)
            again = anyio.run(_turn, provider, response, "run", store)
        finally:
            store.close()
    _check_turn(provider, calls, first)
    _check_turn(provider, calls, again)
    for before, after in zip(first.calls, again.calls, strict=True):
        if before.result.error_kind not in ("cancelled", "interrupted", "unavailable"):
            assert after.result == before.result


# -- structurally random responses and streams ---------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "candidates",
                    "content",
                    "parts",
                    "functionCall",
                    "function_call",
                    "name",
                    "args",
                    "id",
                    "type",
                    "tool_use",
                    "input",
                    "choices",
                    "message",
                    "tool_calls",
                    "function",
                    "arguments",
                    "output",
                    "function_call_output",
                    "call_id",
                    "custom_tool_call",
                    "text",
                    "role",
                    "partialArgs",
                    "willContinue",
                    "jsonPath",
                    "stringValue",
                    "index",
                    "delta",
                    "partial_json",
                    "item",
                    "output_index",
                    "content_block",
                    "response",
                ]
            )
            | st.text(max_size=4),
            inner,
            max_size=5,
        )
    ),
    max_leaves=25,
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(provider=st.sampled_from(PROVIDERS), response=_JSON)
def test_a_structurally_random_response_raises_nothing_but_toolwire_errors(
    provider: str, response: Any
) -> None:
    RUNS.clear()
    try:
        outcome = anyio.run(_turn, provider, response, None, MemoryStore())
    except ToolwireError:
        return
    assert len(outcome.results) == len(outcome.calls)
    json.dumps(outcome.results, allow_nan=False).encode("utf-8")
    assert all(n == 1 for n in RUNS.values())


_ACCUMULATORS = {
    "gemini": (gemini.StreamAccumulator, "response"),
    "anthropic": (anthropic.AnthropicStreamAccumulator, "message"),
    "openai-chat": (openai_chat.ChatStreamAccumulator, "response"),
    "openai-responses": (openai_responses.ResponsesStreamAccumulator, "response"),
}


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(provider=st.sampled_from(PROVIDERS), events=st.lists(_JSON, max_size=8))
def test_random_stream_events_then_the_turn_raise_nothing_but_toolwire_errors(
    provider: str, events: list[Any]
) -> None:
    make, finish = _ACCUMULATORS[provider]
    stream = make()
    RUNS.clear()
    try:
        for event in events:
            stream.add(event)
        outcome = anyio.run(_turn, provider, getattr(stream, finish)(), None, MemoryStore())
    except ToolwireError:
        return
    assert len(outcome.results) == len(outcome.calls)
    json.dumps(outcome.results, allow_nan=False).encode("utf-8")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_checks_above_do_find_a_cross_answer(provider: str) -> None:
    """The oracle itself: an answer holding another call's tag is caught."""
    calls = [
        {"name": "echo", "arguments": {"tag": "T0Q7"}, "id": "a"},
        {"name": "echo", "arguments": {"tag": "T1Q7"}, "id": "b"},
    ]

    response = response_for(provider, [(c["name"], c["arguments"], c["id"]) for c in calls])
    RUNS.clear()
    outcome = anyio.run(_turn, provider, response, None, MemoryStore())
    _check_turn(provider, calls, outcome)
    swapped = type(outcome)(
        results=outcome.results[::-1], halted=False, calls=outcome.calls[::-1], run_id=None
    )
    with pytest.raises(AssertionError):
        _check_turn(provider, calls, swapped)
