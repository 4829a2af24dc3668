"""Fine-grained tool streaming on the Messages API (``eager_input_streaming``): the tools it
names declared so, in the SDK's own type; a selection that is not one refused; and arguments
streamed whole-JSON-unchecked that end up invalid answered, never run."""

from __future__ import annotations

from typing import Any

import pytest

import toolwire
from toolwire import ConfigurationError, RejectedCall, ToolCall, ToolSet, ToolwireWarning
from toolwire.providers import anthropic
from toolwire.providers.anthropic import AnthropicOptions

pydantic = pytest.importorskip("pydantic")
anthropic_types = pytest.importorskip("anthropic.types")
TOOL_PARAMS = pydantic.TypeAdapter(list[anthropic_types.ToolParam])
EVENTS = pydantic.TypeAdapter(anthropic_types.RawMessageStreamEvent)


@toolwire.tool
def write_file(path: str, content: str) -> str:
    """Write a file."""
    return f"wrote {len(content)} characters to {path}"


@toolwire.tool
def count(n: int) -> int:
    """Count to n."""
    return n


def declared(**options: Any) -> list[dict[str, Any]]:
    tools = toolwire.tools([write_file, count], "anthropic", **options).tools
    TOOL_PARAMS.validate_python(tools)  # the SDK's own type takes them
    assert all(set(tool) <= set(anthropic_types.ToolParam.__annotations__) for tool in tools)
    return list(tools)


def test_the_named_tools_stream_eagerly_and_the_others_do_not() -> None:
    chosen = declared(eager_input_streaming=["write_file"])
    assert [tool.get("eager_input_streaming") for tool in chosen] == [True, None]
    assert [tool.get("eager_input_streaming") for tool in declared(eager_input_streaming=True)] == [
        True,
        True,
    ]
    assert all("eager_input_streaming" not in tool for tool in declared())
    # With the other options, each kept.
    both = declared(eager_input_streaming=True, strict=True, cache_control="last")
    assert both[-1]["cache_control"] == {"type": "ephemeral"}
    assert both[-1]["eager_input_streaming"] is True


def test_a_selection_that_is_not_one_is_refused_and_an_unknown_name_warned_about() -> None:
    with pytest.raises(ConfigurationError, match="eager_input_streaming"):
        declared(eager_input_streaming="write_file")
    with pytest.warns(ToolwireWarning, match="which no tool has"):
        chosen = declared(eager_input_streaming=["write_fiel"])
    assert all("eager_input_streaming" not in tool for tool in chosen)


def test_arguments_streamed_unchecked_that_end_up_invalid_are_answered_not_run() -> None:
    """Streamed eagerly, a tool's arguments are not buffered until they are valid JSON: a
    stream can end with them cut (here at max_tokens), and that call is answered an error."""
    start = {
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
    }
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {}}
    events = [
        start,
        {"type": "content_block_start", "index": 0, "content_block": tool_use},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"path": "a.txt", "conte'},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "max_tokens", "stop_sequence": None},
            "usage": {"output_tokens": 4096},
        },
        {"type": "message_stop"},
    ]
    stream = anthropic.AnthropicStreamAccumulator()
    for event in events:
        stream.add(EVENTS.validate_python(event))
    declaration = anthropic.declare(
        ToolSet.of([write_file, count]), AnthropicOptions(eager_input_streaming=("write_file",))
    )
    (item,) = anthropic.parse(stream.message(), declaration)
    assert not isinstance(item, ToolCall)
    assert isinstance(item, RejectedCall)
    assert item.answer["tool_use_id"] == "toolu_1"
    assert item.answer["is_error"] is True
