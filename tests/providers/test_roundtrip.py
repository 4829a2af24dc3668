"""One table over the four providers: the same ToolSet declared, a response in each
provider's shape built with its official SDK's types, executed, and the answers checked against
the SDK's own request param types."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import pydantic
import pytest

import toolwire
from toolwire import ImageContent, TextContent, ToolResult

anthropic_types = pytest.importorskip("anthropic.types")
openai_chat_types = pytest.importorskip("openai.types.chat")
openai_responses_types = pytest.importorskip("openai.types.responses")
genai_types = pytest.importorskip("google.genai.types")
from openai.types.responses.response_input_param import FunctionCallOutput  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n" + b"0" * 64


@toolwire.tool
def search(query: str, limit: int = 5) -> dict[str, Any]:
    """Search the catalogue.

    Args:
        query: What to look for.
        limit: How many results.
    """
    return {"query": query, "results": [f"item {i}" for i in range(limit)]}


@toolwire.tool
def chart(title: str) -> ToolResult:
    """Draw a chart."""
    return ToolResult(content=(TextContent(f"chart: {title}"), ImageContent(PNG, "image/png")))


TOOLSET = toolwire.ToolSet([search, chart])


@dataclass
class Provider:
    name: str
    response: Any  # an SDK object
    validate_tools: Any
    validate_answer: Any


def _adapter(kind: Any) -> Any:
    return pydantic.TypeAdapter(kind)


def providers() -> list[Provider]:
    anthropic_response = anthropic_types.Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "content": [
                {"type": "text", "text": "Looking."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "search",
                    "input": {"query": "lamps", "limit": 2},
                },
                {"type": "tool_use", "id": "toolu_2", "name": "chart", "input": {"title": "sales"}},
                {"type": "tool_use", "id": "toolu_3", "name": "nope", "input": {}},
                {"type": "tool_use", "id": "toolu_4", "name": "search", "input": {"limit": "x"}},
            ],
        }
    )
    chat_response = openai_chat_types.ChatCompletion.model_validate(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-test",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {
                                    "name": "search",
                                    "arguments": '{"query": "lamps", "limit": 2}',
                                },
                            },
                            {
                                "id": "call_2",
                                "type": "function",
                                "function": {"name": "chart", "arguments": '{"title": "sales"}'},
                            },
                            {
                                "id": "call_3",
                                "type": "function",
                                "function": {"name": "nope", "arguments": "{}"},
                            },
                            {
                                "id": "call_4",
                                "type": "function",
                                "function": {"name": "search", "arguments": '{"limit": "x"'},
                            },
                        ],
                    },
                }
            ],
        }
    )
    responses_response = openai_responses_types.Response.model_validate(
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 0,
            "model": "gpt-test",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "output": [
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_1",
                    "name": "search",
                    "arguments": '{"query": "lamps", "limit": 2}',
                    "status": "completed",
                },
                {
                    "type": "function_call",
                    "id": "fc_2",
                    "call_id": "call_2",
                    "name": "chart",
                    "arguments": '{"title": "sales"}',
                    "status": "completed",
                },
                {
                    "type": "function_call",
                    "id": "fc_3",
                    "call_id": "call_3",
                    "name": "nope",
                    "arguments": "{}",
                    "status": "completed",
                },
                {
                    "type": "function_call",
                    "id": "fc_4",
                    "call_id": "call_4",
                    "name": "search",
                    "arguments": "[1, 2]",
                    "status": "completed",
                },
            ],
        }
    )
    gemini_response = genai_types.GenerateContentResponse.model_validate(
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {
                                "functionCall": {
                                    "id": "g1",
                                    "name": "search",
                                    "args": {"query": "lamps", "limit": 2.0},
                                }
                            },
                            {
                                "functionCall": {
                                    "id": "g2",
                                    "name": "chart",
                                    "args": {"title": "sales"},
                                }
                            },
                            {"functionCall": {"id": "g3", "name": "nope", "args": {}}},
                            {
                                "functionCall": {
                                    "id": "g4",
                                    "name": "search",
                                    "args": {"limit": "x"},
                                }
                            },
                        ],
                    }
                }
            ],
        }
    )
    return [
        Provider(
            "anthropic",
            anthropic_response,
            _adapter(list[anthropic_types.ToolParam]),
            _adapter(anthropic_types.ToolResultBlockParam),
        ),
        Provider(
            "openai-chat",
            chat_response,
            _adapter(list[openai_chat_types.ChatCompletionFunctionToolParam]),
            _adapter(openai_chat_types.ChatCompletionToolMessageParam),
        ),
        Provider(
            "openai-responses",
            responses_response,
            _adapter(list[openai_responses_types.FunctionToolParam]),
            _adapter(FunctionCallOutput),
        ),
        Provider(
            "gemini", gemini_response, _adapter(list[genai_types.Tool]), _adapter(genai_types.Part)
        ),
    ]


PROVIDERS = providers()


def answer_text(provider: str, answer: dict[str, Any]) -> tuple[str, bool]:
    """What the answer says, and whether it is marked as an error."""
    if provider == "anthropic":
        content = answer["content"]
        text = (
            content
            if isinstance(content, str)
            else " ".join(b.get("text", "[image]") for b in content)
        )
        return text, answer.get("is_error", False)
    if provider == "openai-chat":
        return answer["content"], answer["content"].startswith("Error: ")
    if provider == "openai-responses":
        output = answer["output"]
        text = (
            output
            if isinstance(output, str)
            else " ".join(p.get("text", "[image]") for p in output)
        )
        return text, text.startswith("Error")
    body = answer["functionResponse"]["response"]
    return str(body.get("output", body.get("error"))), "error" in body


@pytest.mark.parametrize("provider", PROVIDERS, ids=lambda p: p.name)
def test_declare_execute_answer_round_trip(provider: Provider) -> None:
    listing = toolwire.tools(TOOLSET, provider.name)
    provider.validate_tools.validate_python(listing.tools)
    outcome = toolwire.execute_tool_calls_sync(listing.toolset, provider.name, provider.response)
    assert len(outcome.results) == 4
    for answer in outcome.results:
        provider.validate_answer.validate_python(answer)
    texts = [answer_text(provider.name, a) for a in outcome.results]
    assert [is_error for _, is_error in texts] == [False, False, True, True]
    assert "item 1" in texts[0][0]
    assert "Unknown tool 'nope'" in texts[2][0]
    assert [c.result.error_kind for c in outcome.calls] == [
        None,
        None,
        "not_found",
        "invalid_arguments",
    ]


@pytest.mark.parametrize("provider", PROVIDERS, ids=lambda p: p.name)
def test_answers_are_keyed_by_the_providers_call_ids(provider: Provider) -> None:
    outcome = toolwire.execute_tool_calls_sync(TOOLSET, provider.name, provider.response)
    ids = {
        "anthropic": lambda a: a["tool_use_id"],
        "openai-chat": lambda a: a["tool_call_id"],
        "openai-responses": lambda a: a["call_id"],
        "gemini": lambda a: a["functionResponse"]["id"],
    }[provider.name]
    assert [ids(a) for a in outcome.results] == [c.call_id for c in outcome.calls]


def test_images_are_native_where_the_provider_takes_them() -> None:
    by_name = {p.name: p for p in PROVIDERS}
    anthropic = toolwire.execute_tool_calls_sync(
        TOOLSET, "anthropic", by_name["anthropic"].response
    )
    blocks = anthropic.results[1]["content"]
    assert blocks[1] == {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": "image/png",
            "data": base64.b64encode(PNG).decode(),
        },
    }
    responses = toolwire.execute_tool_calls_sync(
        TOOLSET, "openai-responses", by_name["openai-responses"].response
    )
    output = responses.results[1]["output"]
    assert output[1]["image_url"].startswith("data:image/png;base64,")
    chat = toolwire.execute_tool_calls_sync(TOOLSET, "openai-chat", by_name["openai-chat"].response)
    assert chat.results[1]["content"] == "chart: sales\n[image: image/png, 72 bytes]"


def test_anthropic_cache_control_marks_the_last_tool_and_no_tool_choice_is_forced() -> None:
    listing = toolwire.tools(TOOLSET, "anthropic", cache_control="last")
    assert "cache_control" not in listing.tools[0]
    assert listing.tools[-1]["cache_control"] == {"type": "ephemeral"}
    assert all("tool_choice" not in t for t in listing.tools)


def test_strict_is_always_sent_and_nulls_are_stripped_only_where_added() -> None:
    @toolwire.tool
    def find(q: str, limit: int = 3, cursor: str | None = None) -> dict[str, Any]:
        """Find."""
        return {"q": q, "limit": limit, "cursor": cursor}

    for provider in ("openai-chat", "openai-responses"):
        listing = toolwire.tools([find], provider)
        declared = listing.tools[0].get("function", listing.tools[0])
        assert declared["strict"] is True
        assert listing.null_paths == {"find": (("limit",),)}
    response = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {
                                "name": "find",
                                "arguments": '{"q": "", "limit": null, "cursor": null}',
                            },
                        }
                    ],
                }
            }
        ]
    }
    outcome = toolwire.execute_tool_calls_sync([find], "openai-chat", response)
    assert outcome.results[0]["content"] == '{"cursor":null,"limit":3,"q":""}'


def test_a_schema_that_cannot_be_strict_is_sent_with_strict_false() -> None:
    free = toolwire.Tool(
        name="free",
        input_schema={
            "type": "object",
            "properties": {"meta": {"type": "object", "additionalProperties": True}},
        },
    )
    [declared] = toolwire.tools([free], "openai-responses").tools
    assert declared["strict"] is False
    for provider in ("openai-chat", "openai-responses"):
        assert toolwire.tools([free], provider).declaration.not_strict == {
            "free": "#/properties/meta: an open map (additionalProperties) cannot be strict"
        }
    assert declared["parameters"]["properties"]["meta"]["additionalProperties"] is True
