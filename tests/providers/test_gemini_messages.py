from __future__ import annotations

import base64
from typing import Any

import pytest

from toolwire import ConfigurationError, ToolResult
from toolwire.messages import MediaPart, Message, ToolCallPart, ToolResultPart
from toolwire.providers import gemini_messages as gm

types = pytest.importorskip("google.genai.types")


def test_to_format_seed_example() -> None:
    assert gm.to_format([Message.system("Be helpful"), Message.user("Hello")]) == (
        "Be helpful",
        [{"role": "user", "parts": [{"text": "Hello"}]}],
    )


def test_from_response_seed_example() -> None:
    response = {"candidates": [{"content": {"parts": [{"text": "Hello"}]}}]}
    message = gm.from_response(response)
    assert message.role == "assistant"
    assert message.content == "Hello"


def test_model_contents_replay_unchanged_with_their_signatures() -> None:
    content = {
        "role": "model",
        "parts": [
            {"text": "thinking...", "thought": True, "thoughtSignature": "dGhvdWdodA=="},
            {"functionCall": {"name": "a", "args": {}}, "thoughtSignature": "c2ln"},
            {"functionCall": {"name": "b", "args": {"x": 1}}},
        ],
    }
    [message] = gm.from_messages([content])
    assert message.thoughts == "thinking..."
    assert [c.name for c in message.tool_calls] == ["a", "b"]
    assert message.tool_calls[0].extras == {"thoughtSignature": "c2ln"}
    _, contents = gm.to_format([Message.user("hi"), message])
    assert contents[1] == content


def test_foreign_history_gets_the_sentinel_on_the_first_call_of_each_step() -> None:
    step = Message.assistant(
        tool_calls=(
            ToolCallPart(name="a", arguments={"q": 1}, call_id="x"),
            ToolCallPart(name="b"),
        )
    )
    _, contents = gm.to_format([Message.user("go"), step, step])
    for model in (contents[1], contents[2]):
        assert model["parts"][0]["thoughtSignature"] == gm.SKIP_THOUGHT_SIGNATURE
        assert "thoughtSignature" not in model["parts"][1]
    assert contents[1]["parts"][0]["functionCall"] == {"name": "a", "args": {"q": 1}, "id": "x"}
    _, plain = gm.to_format([step], signature_sentinel=False)
    assert "thoughtSignature" not in plain[0]["parts"][0]
    types.Content.model_validate(contents[1])


def test_tool_results_share_one_user_content_with_nothing_else() -> None:
    messages = [
        Message.assistant(tool_calls=(ToolCallPart(name="a"), ToolCallPart(name="b"))),
        Message.results(ToolResultPart(name="a", result=ToolResult.from_value("A"))),
        Message(
            role="user",
            content="and now?",
            tool_results=(
                ToolResultPart(name="b", call_id="i2", result=ToolResult.error("failed", "B")),
            ),
        ),
    ]
    _, contents = gm.to_format(messages, signature_sentinel=False)
    assert contents[1:] == [
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "a", "response": {"output": "A"}}},
                {"functionResponse": {"name": "b", "id": "i2", "response": {"error": "B"}}},
            ],
        },
        {"role": "user", "parts": [{"text": "and now?"}]},
    ]


def test_media_round_trips() -> None:
    png = b"\x89PNG..."
    message = Message.user(
        "look",
        media=(
            MediaPart(mime_type="image/png", data=png),
            MediaPart(mime_type="video/mp4", uri="gs://b/v.mp4"),
        ),
    )
    _, contents = gm.to_format([message])
    assert contents[0]["parts"][1] == {
        "inlineData": {"mimeType": "image/png", "data": base64.b64encode(png).decode()}
    }
    [back] = gm.from_messages(contents)
    assert back.media == message.media
    assert back.content == "look"


def test_from_messages_reads_function_responses() -> None:
    [message] = gm.from_messages(
        [
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "a",
                            "id": "1",
                            "response": {"output": {"t": 1}},
                        }
                    },
                    {"functionResponse": {"name": "b", "response": {"error": "nope"}}},
                ],
            }
        ]
    )
    first, second = message.tool_results
    assert first.result.structured_content == {"t": 1}
    assert second.result.is_error
    assert second.result.text == "nope"


def test_from_response_without_candidates_and_with_sdk_objects() -> None:
    blocked = gm.from_response(
        {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 3}}
    )
    assert blocked.content == ""
    assert blocked.usage is not None
    assert blocked.usage.input_tokens == 3
    sdk = types.GenerateContentResponse(
        candidates=[
            types.Candidate(content=types.Content(role="model", parts=[types.Part(text="Hi")]))
        ]
    )
    assert gm.from_response(sdk).content == "Hi"


def test_parse_usage_in_every_spelling() -> None:
    usage = gm.parse_usage(
        {
            "promptTokenCount": 10,
            "candidatesTokenCount": 4,
            "thoughtsTokenCount": 6,
            "cachedContentTokenCount": 2,
            "totalTokenCount": 20,
        }
    )
    assert (
        usage.input_tokens,
        usage.output_tokens,
        usage.reasoning_tokens,
        usage.cached_tokens,
        usage.total_tokens,
    ) == (10, 4, 6, 2, 20)
    assert gm.parse_usage({"prompt_token_count": 1, "candidates_token_count": 2}).total_tokens == 3
    assert gm.parse_usage(None).total_tokens == 0


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"functionCallingConfig": {"mode": "AUTO"}}),
        ("any", {"functionCallingConfig": {"mode": "ANY"}}),
        ("required", {"functionCallingConfig": {"mode": "ANY"}}),
        ("none", {"functionCallingConfig": {"mode": "NONE"}}),
        ("validated", {"functionCallingConfig": {"mode": "VALIDATED"}}),
        (
            ("any", ["a", "b"]),
            {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["a", "b"]}},
        ),
        (
            {"functionCallingConfig": {"mode": "AUTO"}, "x": 1},
            {"functionCallingConfig": {"mode": "AUTO"}, "x": 1},
        ),
        (None, None),
    ],
)
def test_tool_choice_shapes(choice: Any, expected: Any) -> None:
    config = gm.normalize_tool_choice(choice)
    assert config == expected
    if config is not None and "x" not in config:
        types.ToolConfig.model_validate(config)


def test_no_function_calling_config_without_declarations() -> None:
    assert gm.normalize_tool_choice("any", has_declarations=False) is None
    assert gm.normalize_tool_choice(
        {"functionCallingConfig": {"mode": "ANY"}, "includeServerSideToolInvocations": True},
        has_declarations=False,
    ) == {"includeServerSideToolInvocations": True}


def test_bad_tool_choices_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError):
        gm.normalize_tool_choice("sometimes")
    with pytest.raises(ConfigurationError):
        gm.normalize_tool_choice(("auto", ["a"]))


def test_thinking_safety_and_json_settings() -> None:
    assert gm.normalize_thinking_config(
        {"thinking_budget": 1024, "include_thoughts": True, "newField": 1}
    ) == {"thinkingBudget": 1024, "includeThoughts": True, "newField": 1}
    assert gm.normalize_thinking_config({"thinkingBudget": 0}) == {"thinkingBudget": 0}
    assert gm.normalize_thinking_config(None) is None
    assert gm.normalize_safety_settings(
        [{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_NONE", "method": "SEVERITY"}]
    ) == [
        {"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_NONE", "method": "SEVERITY"}
    ]
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    expected = {"responseMimeType": "application/json", "responseJsonSchema": schema}
    assert gm.json_config_for_settings({"json_schema": schema}) == expected
    assert (
        gm.json_config_for_settings(
            {"response_format": {"type": "json_schema", "json_schema": {"schema": schema}}}
        )
        == expected
    )
    assert gm.json_config_for_settings({"response_format": {"type": "json_object"}}) == {
        "responseMimeType": "application/json"
    }
    assert gm.json_config_for_settings({"json_response": True}) == {
        "responseMimeType": "application/json"
    }
    assert gm.json_config_for_settings({}) == {}
    types.GenerationConfig.model_validate(expected)
