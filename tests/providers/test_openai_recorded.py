"""Real responses recorded from OpenAI-compatible hosts, quirks included: parsed (and, when
streamed, accumulated) into the calls the official SDKs' parsers found."""

from __future__ import annotations

from typing import Any

import pytest

from corpus import load_corpus
from toolwire import RejectedCall, Tool, ToolCall, ToolSet
from toolwire.providers import openai_chat, openai_responses, parse_calls

RECORDS = load_corpus("openai_compatible")


def toolset_for(record: dict[str, Any]) -> ToolSet:
    names = dict.fromkeys(c["name"] for c in record["expected_calls"])
    return ToolSet([Tool(name=n, input_schema={"type": "object"}) for n in names])


def response_of(record: dict[str, Any]) -> Any:
    if not record["streamed"]:
        return record["response"]
    if record["provider"] == "openai-chat":
        chat = openai_chat.ChatStreamAccumulator()
        for chunk in record["chunks"]:
            chat.add(chunk)
        return chat.response()
    stream = openai_responses.ResponsesStreamAccumulator()
    for event in record["chunks"]:
        stream.add(event)
    return stream.response()


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r["source"].split("/")[-1][-60:])
def test_recorded_responses_give_the_expected_calls(record: dict[str, Any]) -> None:
    items = parse_calls(record["provider"], response_of(record), toolset_for(record))
    expected = record["expected_calls"]
    assert len(items) == len(expected)
    for item, want in zip(items, expected, strict=True):
        if want["args"] is None and not want.get("args_raw"):
            # No arguments at all: {} for a tool that requires none (these declare none).
            assert isinstance(item, ToolCall)
            assert item.arguments == {}
            continue
        if want["args"] is None:  # not JSON: answered with an error, never run
            assert isinstance(item, RejectedCall)
            assert item.error_kind == "invalid_arguments"
            continue
        assert isinstance(item, ToolCall), getattr(item, "message", item)
        assert item.exposed_name == want["name"]
        assert item.arguments == want["args"]
        if want.get("id"):
            assert item.call_id == want["id"]
