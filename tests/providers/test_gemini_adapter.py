from __future__ import annotations

import base64
from typing import Any

import pytest

from toolwire import (
    ImageContent,
    MalformedResponse,
    RejectedCall,
    SchemaConversionError,
    TextContent,
    Tool,
    ToolCall,
    ToolResult,
    ToolSet,
    tool,
)
from toolwire.providers import gemini, get_provider, parse_calls

types = pytest.importorskip("google.genai.types")


@tool
def get_weather(city: str, days: int = 1) -> str:
    """Weather for a city.

    Args:
        city: City name.
        days: Forecast days.
    """
    return f"sunny in {city}"


@tool
def ping() -> str:
    """Health check."""
    return "pong"


hidden = Tool(name="secret_op", description="hidden", server_id="ops")
TOOLSET = ToolSet([get_weather, ping, hidden], exclude=["ops/*"])


def calls_and_errors(response: Any, toolset: ToolSet) -> tuple[list[ToolCall], list[Any]]:
    """The calls of ``response`` that resolve against ``toolset``, and the error answers of
    those that do not."""
    items = parse_calls("gemini", response, toolset)
    return (
        [item for item in items if isinstance(item, ToolCall)],
        [item.answer for item in items if isinstance(item, RejectedCall)],
    )


# -- declarations ----------------------------------------------------------------------------


def test_declarations_in_toolset_order_with_exposed_names_and_descriptions() -> None:
    declarations = gemini.function_declarations(TOOLSET)
    assert [d["name"] for d in declarations] == ["get_weather", "ping"]
    assert declarations[0] == {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parametersJsonSchema": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "city": {"type": "string", "description": "City name."},
                "days": {"type": "integer", "description": "Forecast days. (default: 1)"},
            },
            "required": ["city"],
        },
    }
    for declaration in declarations:
        types.FunctionDeclaration.model_validate(declaration)


def test_openapi_declarations_are_accepted_by_the_sdk_types() -> None:
    declarations = gemini.function_declarations(TOOLSET, schema="openapi")
    assert declarations[1] == {
        "name": "ping",
        "description": "Health check.",
        "parameters": {"type": "OBJECT", "properties": {}},
    }
    sdk_tool = types.Tool.model_validate({"functionDeclarations": declarations})
    assert sdk_tool.function_declarations is not None
    assert sdk_tool.function_declarations[0].parameters.required == ["city"]


def test_missing_descriptions_become_empty_and_descriptions_are_cleaned() -> None:
    sneaky = Tool(name="a", description="Reads\u200b files\u202e.\U000e0041")
    plain = Tool(name="b")
    declarations = gemini.function_declarations([sneaky, plain])
    assert declarations[0]["description"] == "Reads files."
    assert declarations[1]["description"] == ""


def test_declarations_are_cached_per_toolset_and_options() -> None:
    toolset = ToolSet([get_weather])
    first = gemini.function_declarations(toolset)
    again = gemini.function_declarations(toolset)
    assert again == first
    assert again[0] is first[0]
    openapi = gemini.function_declarations(toolset, schema="openapi")
    assert "parameters" in openapi[0]


def test_tools_exported_to_other_providers_only_are_not_declared() -> None:
    only_openai = Tool(name="x", providers=frozenset({"openai-chat"}))
    assert gemini.function_declarations([only_openai, ping])[0]["name"] == "ping"


def test_a_schema_that_cannot_convert_names_the_tool() -> None:
    broken = Tool(
        name="broken", input_schema={"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}}
    )
    with pytest.raises(SchemaConversionError) as info:
        gemini.function_declarations([broken])
    assert info.value.tool == "broken"
    assert info.value.path == "#/properties/a"


def test_build_tools_one_wrapper_plus_native_tools() -> None:
    declarations = gemini.function_declarations(TOOLSET)
    tools = gemini.build_tools(
        declarations,
        ["google_search", ("url_context", {}), {"codeExecution": {}}],
    )
    assert tools == [
        {"functionDeclarations": declarations},
        {"googleSearch": {}},
        {"urlContext": {}},
        {"codeExecution": {}},
    ]
    for entry in tools:
        types.Tool.model_validate(entry)
    assert gemini.build_tools([]) is None
    assert gemini.build_tools([], ["google_search"]) == [{"googleSearch": {}}]


def test_registry_declare_gives_the_request_tools() -> None:
    adapter = get_provider("gemini")
    declaration = adapter.declare(TOOLSET)
    assert declaration.tools == [{"functionDeclarations": gemini.function_declarations(TOOLSET)}]
    assert list(declaration.entries) == list(TOOLSET.exposed_names)


# -- calls ---------------------------------------------------------------------------------------


def response(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": list(parts)}}]}


def test_calls_are_parsed_from_a_response_dict_in_order() -> None:
    calls, rejected = calls_and_errors(
        response(
            {"text": "Let me check."},
            {
                "functionCall": {"id": "c1", "name": "get_weather", "args": {"city": "Lisbon"}},
                "thoughtSignature": "c2ln",
            },
            {"functionCall": {"name": "ping"}},
        ),
        TOOLSET,
    )
    assert rejected == []
    assert [(c.exposed_name, c.arguments, c.call_id, c.index) for c in calls] == [
        ("get_weather", {"city": "Lisbon"}, "c1", 0),
        ("ping", {}, None, 1),
    ]
    assert calls[0].extras == {"thoughtSignature": "c2ln"}
    assert calls[0].local_id == "c1"
    assert calls[1].local_id.startswith("tw_")


def test_calls_are_parsed_from_sdk_objects() -> None:
    sdk_response = types.GenerateContentResponse(
        candidates=[
            types.Candidate(
                content=types.Content(
                    role="model",
                    parts=[
                        types.Part(
                            function_call=types.FunctionCall(
                                name="get_weather", args={"city": "Porto", "days": 2.0}
                            ),
                            thought_signature=b"\x01\x02",
                        ),
                    ],
                )
            )
        ]
    )
    for source in (
        sdk_response,
        sdk_response.candidates[0].content,
        sdk_response.candidates[0].content.parts,
    ):
        calls, rejected = calls_and_errors(source, TOOLSET)
        assert rejected == []
        assert calls[0].arguments == {"city": "Porto", "days": 2}
        assert isinstance(calls[0].arguments["days"], int)
        assert calls[0].extras["thoughtSignature"] == base64.b64encode(b"\x01\x02").decode()


def test_unknown_and_hidden_names_are_rejected_with_an_error_answer() -> None:
    calls, rejected = calls_and_errors(
        response(
            {"functionCall": {"name": "nope", "id": "x1"}},
            {"functionCall": {"name": "ops__secret_op"}},
        ),
        TOOLSET,
    )
    assert calls == []
    assert rejected[0]["functionResponse"]["id"] == "x1"
    assert rejected[0]["functionResponse"]["name"] == "nope"
    assert "Unknown tool 'nope'" in rejected[0]["functionResponse"]["response"]["error"]
    assert "get_weather, ping" in rejected[0]["functionResponse"]["response"]["error"]
    assert "id" not in rejected[1]["functionResponse"]
    for part in rejected:
        types.Part.model_validate(part)


def test_non_object_args_are_rejected() -> None:
    items = parse_calls(
        "gemini", response({"functionCall": {"name": "ping", "args": [1, 2]}}), TOOLSET
    )
    assert len(items) == 1
    assert items[0].error_kind == "invalid_arguments"  # type: ignore[union-attr]


def test_an_empty_id_counts_as_none() -> None:
    calls, _ = calls_and_errors([{"functionCall": {"name": "ping", "id": ""}}], TOOLSET)
    assert calls[0].call_id is None


def test_identical_id_less_calls_get_distinct_stable_local_ids() -> None:
    part = {"functionCall": {"name": "get_weather", "args": {"city": "A"}}}
    first, _ = calls_and_errors([part, part], TOOLSET)
    again, _ = calls_and_errors([part, part], TOOLSET)
    assert first[0].local_id != first[1].local_id
    assert [c.local_id for c in first] == [c.local_id for c in again]


def test_whole_floats_become_ints_only_where_the_schema_wants_integers() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "list": {"type": "array", "items": {"type": "integer"}},
            "ref": {"$ref": "#/$defs/I"},
            "opt": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "$defs": {"I": {"type": "integer"}},
    }
    args = {"n": 3.0, "x": 2.0, "list": [1.0, 2.5], "ref": 4.0, "opt": 5.0}
    calls, _ = calls_and_errors(
        [{"functionCall": {"name": "t", "args": args}}], [Tool(name="t", input_schema=schema)]
    )
    assert calls[0].arguments == {"n": 3, "x": 2.0, "list": [1, 2.5], "ref": 4, "opt": 5}
    assert type(calls[0].arguments["x"]) is float
    assert type(args["n"]) is float  # the response is not mutated


def test_a_response_without_candidates_has_no_calls() -> None:
    assert calls_and_errors({"candidates": []}, TOOLSET) == ([], [])
    assert calls_and_errors({"promptFeedback": {"blockReason": "SAFETY"}}, TOOLSET) == ([], [])


def test_garbage_is_a_type_error_not_a_deep_traceback() -> None:
    with pytest.raises(MalformedResponse, match="expected a generateContent response"):
        calls_and_errors(42, TOOLSET)


# -- answers ---------------------------------------------------------------------------------


def test_text_output_goes_under_output() -> None:
    part = gemini.function_response("get_weather", "sunny", id="c1")
    assert part == {
        "functionResponse": {"name": "get_weather", "id": "c1", "response": {"output": "sunny"}}
    }
    types.Part.model_validate(part)


def test_errors_go_under_error_and_no_id_is_sent_when_the_model_sent_none() -> None:
    part = gemini.function_response("ping", ToolResult.error("failed", "boom"))
    assert part == {"functionResponse": {"name": "ping", "response": {"error": "boom"}}}


def test_structured_content_modes() -> None:
    result = ToolResult(content=(TextContent("12 degrees"),), structured_content={"temp": 12})

    def output(mode: Any) -> Any:
        return gemini.function_response("w", result, structured=mode)["functionResponse"][
            "response"
        ]["output"]

    assert output("prefer") == {"temp": 12}
    assert output("auto") == "12 degrees"
    assert output("append") == '12 degrees\n{"temp":12}'
    assert output("ignore") == "12 degrees"
    assert gemini.function_response("w", {"temp": 12}, structured="auto")["functionResponse"][
        "response"
    ] == {"output": {"temp": 12}}


def test_media_are_placeholders_or_native_parts() -> None:
    png = b"\x89PNG" + b"0" * 1020
    result = ToolResult(content=(TextContent("chart:"), ImageContent(png, "image/png")))
    placeholder = gemini.function_response("chart", result)
    assert placeholder["functionResponse"]["response"]["output"] == (
        "chart:\n[image: image/png, 1024 bytes]"
    )
    native = gemini.function_response("chart", result, media="parts")
    # Each media part is named, and the response refers to it by that name ($ref).
    assert native["functionResponse"]["response"] == {
        "output": "chart:",
        "media": [{"$ref": "image_1.png"}],
    }
    assert native["functionResponse"]["parts"] == [
        {
            "inlineData": {
                "mimeType": "image/png",
                "data": base64.b64encode(png).decode(),
                "displayName": "image_1.png",
            }
        }
    ]
    part = types.Part.model_validate(native)
    assert part.function_response.parts[0].inline_data.display_name == "image_1.png"


def test_a_tools_own_ref_keys_are_sent_as_text_never_as_part_references() -> None:
    # Gemini reads {"$ref": name} in a function response as a media part's name.
    tricky = ToolResult(structured_content={"schema": {"$ref": "#/defs/a"}, "n": 1})
    output = gemini.function_response("t", tricky)["functionResponse"]["response"]["output"]
    assert output == '{"n":1,"schema":{"$ref":"#/defs/a"}}'
    plain = ToolResult(structured_content={"schema": {"ref": "a"}})
    assert gemini.function_response("t", plain)["functionResponse"]["response"]["output"] == {
        "schema": {"ref": "a"}
    }
    listed = ToolResult(structured_content={"items": [{"$ref": "x"}]})
    assert isinstance(
        gemini.function_response("t", listed)["functionResponse"]["response"]["output"], str
    )


def test_non_string_values_are_wrapped_so_response_is_always_an_object() -> None:
    for value in ([1, 2], 3, None, True):
        response_body = gemini.function_response("t", value)["functionResponse"]["response"]
        assert isinstance(response_body, dict)
        assert set(response_body) == {"output"}


def test_registry_answer_echoes_only_the_models_id() -> None:
    adapter = get_provider("gemini")
    calls, _ = calls_and_errors(
        [{"functionCall": {"name": "ping"}}, {"functionCall": {"name": "ping", "id": "p2"}}],
        TOOLSET,
    )
    answers = [adapter.answer(c, ToolResult.from_value("pong")) for c in calls]
    assert "id" not in answers[0]["functionResponse"]
    assert answers[1]["functionResponse"]["id"] == "p2"
    content = types.Content.model_validate({"role": "user", "parts": answers})
    assert len(content.parts or []) == 2


def test_a_200_kb_tool_description_is_capped_at_4_kib() -> None:
    huge = Tool(name="huge", description="instructions " * 16_000)
    [declaration] = gemini.function_declarations([huge])
    assert len(declaration["description"].encode()) <= 4096
    assert declaration["description"].endswith("[truncated]")


def test_conversion_notes_say_what_was_dropped_per_tool() -> None:
    strict = Tool(
        name="strict",
        input_schema={
            "type": "object",
            "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}},
        },
    )
    notes = gemini.conversion_notes([strict, ping], schema="openapi")
    assert notes["ping"] == []
    assert [(n.path, n.message) for n in notes["strict"]] == []  # pattern is kept on STRING
    json_notes = gemini.conversion_notes([strict, ping])
    assert [(n.path, n.message) for n in json_notes["strict"]] == [
        ("#/properties/code", "pattern moved into the description")
    ]


def test_float_coercion_survives_a_schema_that_refers_to_itself() -> None:
    loop = Tool(
        name="loop",
        input_schema={
            "type": "object",
            "properties": {"x": {"anyOf": [{"$ref": "#/properties/x"}]}},
        },
    )
    calls, rejected = calls_and_errors(
        [{"functionCall": {"name": "loop", "args": {"x": 1.0}}}], [loop]
    )
    assert rejected == []
    assert calls[0].arguments == {"x": 1.0}
