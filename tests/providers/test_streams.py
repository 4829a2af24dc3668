"""Streaming accumulators give the same calls as the non-streamed response."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from toolwire import RejectedCall, Tool, ToolCall, ToolSet
from toolwire.providers import anthropic, openai_chat, openai_responses

anthropic_types = pytest.importorskip("anthropic.types")

TOOLSET = ToolSet(
    [
        Tool(
            name="get_weather",
            input_schema={
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        )
    ]
)


def calls_and_errors(items: list[ToolCall | RejectedCall]) -> tuple[list[ToolCall], list[Any]]:
    """The calls that resolved, and the error answers of those that did not."""
    return (
        [item for item in items if isinstance(item, ToolCall)],
        [item.answer for item in items if isinstance(item, RejectedCall)],
    )


def test_anthropic_input_json_deltas_add_up_to_the_tool_use() -> None:
    events = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 5, "output_tokens": 1},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Checking"},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {},
            },
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"ci'},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": 'ty": "Oslo"}'},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_2",
                "name": "get_weather",
                "input": {},
            },
        },
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": '{"city": '},
        },
        {"type": "content_block_stop", "index": 2},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 20},
        },
        {"type": "message_stop"},
    ]
    stream = anthropic.AnthropicStreamAccumulator()
    as_sdk_event = pydantic.TypeAdapter(anthropic_types.RawMessageStreamEvent)
    for event in events:
        stream.add(as_sdk_event.validate_python(event))  # the SDK's own event objects
    message = stream.message()
    assert message["stop_reason"] == "tool_use"
    assert message["content"][0] == {"type": "text", "text": "Checking"}
    calls, rejected = calls_and_errors(anthropic.parse(message, anthropic.declare(TOOLSET)))
    assert [(c.call_id, c.arguments) for c in calls] == [("toolu_1", {"city": "Oslo"})]
    assert rejected[0]["tool_use_id"] == "toolu_2"  # truncated JSON: answered, never run
    assert rejected[0]["is_error"] is True


def test_chat_deltas_by_index_and_a_server_that_never_increments_it() -> None:
    def chunk(**delta: object) -> dict:
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}

    stream = openai_chat.ChatStreamAccumulator()
    for piece in [
        chunk(role="assistant", content=""),
        chunk(
            tool_calls=[
                {"index": 0, "id": "a", "function": {"name": "get_weather", "arguments": ""}}
            ]
        ),
        chunk(tool_calls=[{"index": 0, "function": {"arguments": '{"city":'}}]),
        chunk(tool_calls=[{"index": 0, "function": {"arguments": ' "Rome"}'}}]),
        # the next call reuses index 0 with a new id
        chunk(
            tool_calls=[
                {
                    "index": 0,
                    "id": "b",
                    "function": {"name": "get_weather", "arguments": '{"city": "Lima"}'},
                }
            ]
        ),
    ]:
        stream.add(piece)
    declaration = openai_chat.declare(TOOLSET)
    calls, rejected = calls_and_errors(openai_chat.parse(stream.response(), declaration))
    assert rejected == []
    assert [(c.call_id, c.arguments["city"]) for c in calls] == [("a", "Rome"), ("b", "Lima")]


def test_responses_argument_deltas_and_completion() -> None:
    stream = openai_responses.ResponsesStreamAccumulator()
    stream.add(
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": "",
            },
        }
    )
    stream.add(
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_1",
            "output_index": 0,
            "delta": '{"city":',
        }
    )
    stream.add(
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_1",
            "output_index": 0,
            "delta": ' "Kyiv"}',
        }
    )
    declaration = openai_responses.declare(TOOLSET)
    calls, _ = calls_and_errors(openai_responses.parse(stream.response(), declaration))
    assert [(c.call_id, c.arguments) for c in calls] == [("call_1", {"city": "Kyiv"})]
    stream.add(
        {
            "type": "response.completed",
            "response": {
                "output": [
                    {
                        "type": "function_call",
                        "call_id": "call_1",
                        "name": "get_weather",
                        "arguments": '{"city": "Kyiv"}',
                    }
                ]
            },
        }
    )
    (call,) = openai_responses.parse(stream.response(), declaration)
    assert isinstance(call, ToolCall)
    assert call.arguments == {"city": "Kyiv"}
