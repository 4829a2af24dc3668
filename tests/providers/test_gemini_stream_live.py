from __future__ import annotations

import pytest

from toolwire import MalformedResponse, Tool, ToolCall, ToolResult, ToolSet
from toolwire.providers import gemini

types = pytest.importorskip("google.genai.types")

TOOLSET = ToolSet([Tool(name="weather"), Tool(name="search")])


def chunk(*parts: dict, **candidate: object) -> dict:
    return {"candidates": [{"content": {"role": "model", "parts": list(parts)}, **candidate}]}


def test_chunks_add_up_to_the_response_with_every_part_and_signature() -> None:
    stream = gemini.StreamAccumulator()
    stream.add(chunk({"text": "Let me", "thought": True, "thoughtSignature": "dA=="}))
    stream.add(chunk({"text": " check."}))
    stream.add(
        chunk(
            {
                "functionCall": {"id": "a", "name": "weather", "args": {"city": "X"}},
                "thoughtSignature": "c2ln",
            }
        )
    )
    stream.add(
        chunk(
            {"functionCall": {"id": "b", "name": "search", "args": {"q": "y"}}}, finishReason="STOP"
        )
        | {"usageMetadata": {"totalTokenCount": 9}}
    )
    response = stream.response()
    assert response["usageMetadata"] == {"totalTokenCount": 9}
    assert response["candidates"][0]["finishReason"] == "STOP"
    assert response["candidates"][0]["content"]["parts"] == [
        {"text": "Let me", "thought": True, "thoughtSignature": "dA=="},
        {"text": " check."},
        {
            "functionCall": {"id": "a", "name": "weather", "args": {"city": "X"}},
            "thoughtSignature": "c2ln",
        },
        {"functionCall": {"id": "b", "name": "search", "args": {"q": "y"}}},
    ]
    calls = gemini.parse(response, gemini.declare(TOOLSET))
    assert all(isinstance(c, ToolCall) for c in calls)
    assert [c.call_id for c in calls] == ["a", "b"]
    assert calls[0].extras == {"thoughtSignature": "c2ln"}
    types.GenerateContentResponse.model_validate(response)


def test_vertex_streamed_arguments_are_assembled() -> None:
    stream = gemini.StreamAccumulator()
    stream.add(
        chunk(
            {
                "functionCall": {
                    "name": "weather",
                    "partialArgs": [
                        {"jsonPath": "$.location.city", "stringValue": "New ", "willContinue": True}
                    ],
                    "willContinue": True,
                },
                "thoughtSignature": "c2ln",
            }
        )
    )
    stream.add(
        chunk(
            {
                "functionCall": {
                    "partialArgs": [
                        {"jsonPath": "$.location.city", "stringValue": "York"},
                        {"jsonPath": "$.days", "numberValue": 3},
                        {"jsonPath": "$.tags[0]", "stringValue": "rain"},
                        {"jsonPath": "$.metric", "boolValue": True},
                        {"jsonPath": "$.note", "nullValue": "NULL_VALUE"},
                    ],
                    "willContinue": True,
                }
            }
        )
    )
    stream.add(chunk({"functionCall": {"willContinue": False}}))
    [part] = stream.response()["candidates"][0]["content"]["parts"]
    assert part == {
        "thoughtSignature": "c2ln",
        "functionCall": {
            "name": "weather",
            "args": {
                "location": {"city": "New York"},
                "days": 3,
                "tags": ["rain"],
                "metric": True,
                "note": None,
            },
        },
    }


def test_sdk_chunks_are_accepted() -> None:
    stream = gemini.StreamAccumulator()
    stream.add(
        types.GenerateContentResponse(
            candidates=[
                types.Candidate(
                    content=types.Content(
                        role="model",
                        parts=[
                            types.Part(
                                function_call=types.FunctionCall(name="weather", args={"city": "Z"})
                            )
                        ],
                    )
                )
            ]
        )
    )
    (call,) = gemini.parse(stream.response(), gemini.declare(TOOLSET))
    assert isinstance(call, ToolCall)
    assert call.arguments == {"city": "Z"}


def test_a_broken_chunk_is_a_malformed_response() -> None:
    with pytest.raises(MalformedResponse):
        gemini.StreamAccumulator().add({"candidates": "nope"})


def test_live_tool_calls_and_tool_response() -> None:
    message = {
        "toolCall": {
            "functionCalls": [
                {"id": "f1", "name": "weather", "args": {"city": "A"}},
                {"id": "f2", "name": "ghost", "args": {}},
            ]
        }
    }
    calls, rejected = gemini.live_function_calls(message, TOOLSET)
    answers = [gemini.answer(c, ToolResult.from_value("sunny")) for c in calls]
    reply = gemini.live_tool_response([*answers, *rejected])
    assert reply == {
        "toolResponse": {
            "functionResponses": [
                {"name": "weather", "id": "f1", "response": {"output": "sunny"}},
                {
                    "name": "ghost",
                    "id": "f2",
                    "response": {
                        "error": "Unknown tool 'ghost'. Available tools: weather, search."
                    },
                },
            ]
        }
    }
    types.LiveClientToolResponse.model_validate(reply["toolResponse"])
    sdk_message = types.LiveServerMessage(
        tool_call=types.LiveServerToolCall(
            function_calls=[types.FunctionCall(id="f3", name="search", args={"q": "x"})]
        )
    )
    calls, _ = gemini.live_function_calls(sdk_message, TOOLSET)
    assert calls[0].call_id == "f3"
    assert gemini.live_function_calls({"serverContent": {}}, TOOLSET) == ([], [])
