"""The real failures collected in the project's research on Gemini (cases A, B, C and the name
cases), each as a test named after its case. "OpenAPI path" is ``parameters``, "JSON path" is
``parametersJsonSchema``."""

from __future__ import annotations

from typing import Any

import pytest

from toolwire import Tool, ToolCall, ToolSet
from toolwire.providers import gemini
from toolwire.schema.checks import gemini_violations


def declare(schema: Any, mode: Any = "openapi", backend: Any = "gemini", name: str = "t") -> Any:
    [declaration] = gemini.function_declarations(
        ToolSet([Tool(name=name, input_schema=schema)]), schema=mode, backend=backend
    )
    key = "parameters" if mode == "openapi" else "parametersJsonSchema"
    assert gemini_violations(declaration[key], mode=mode, backend=backend) == []
    return declaration[key]


def walk(node: Any) -> list[dict[str, Any]]:
    found = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            found.append(current)
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return found


def keys_anywhere(node: Any) -> set[str]:
    return {k for d in walk(node) for k in d}


def prop(name: str, schema: dict[str, Any], required: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": {name: schema}}
    if required:
        out["required"] = [name]
    return out


# -- A. unknown keywords on the OpenAPI path ---------------------------------------------------


def test_case_01_additional_properties_at_the_root() -> None:
    schema = {
        "type": "object",
        "properties": {"location": {"type": "string"}},
        "required": ["location"],
        "additionalProperties": False,
    }
    assert "additionalProperties" not in declare(schema)
    assert declare(schema, "json")["additionalProperties"] is False


def test_case_02_additional_properties_inside_array_items() -> None:
    schema = prop(
        "edits",
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"oldText": {"type": "string"}},
                "additionalProperties": False,
            },
        },
    )
    assert "additionalProperties" not in keys_anywhere(declare(schema))


def test_case_03_snake_case_additional_properties_is_not_passed_through() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "additional_properties": False,
    }
    assert "additional_properties" not in keys_anywhere(declare(schema))
    assert "additional_properties" not in keys_anywhere(declare(schema, "json"))


def test_case_04_defs_and_refs_from_nested_pydantic_models() -> None:
    schema = {
        "type": "object",
        "properties": {"address": {"$ref": "#/$defs/Address"}},
        "$defs": {
            "Address": {
                "type": "object",
                "properties": {"street": {"type": "string"}},
                "title": "Address",
            }
        },
    }
    out = declare(schema)
    assert not keys_anywhere(out) & {"$defs", "$ref", "title"}
    assert out["properties"]["address"]["properties"]["street"] == {"type": "STRING"}


def test_case_05_schema_keyword_at_the_root() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {},
    }
    assert "$schema" not in declare(schema)
    assert "$schema" not in declare(schema, "json")


def test_case_06_default_is_kept_where_accepted_and_described_on_the_json_path() -> None:
    schema = prop("limit", {"type": "integer", "default": 10})
    assert declare(schema)["properties"]["limit"] == {"type": "INTEGER", "default": 10}
    assert declare(schema, "json")["properties"]["limit"] == {
        "type": "integer",
        "description": "(default: 10)",
    }


def test_case_07_title_and_examples_are_removed() -> None:
    schema = prop("q", {"type": "string", "title": "Q", "examples": ["x"]})
    for mode in ("openapi", "json"):
        assert not keys_anywhere(declare(schema, mode)) & {"title", "examples"}


def test_case_08_exclusive_minimum_is_described_not_sent() -> None:
    schema = prop("n", {"type": "number", "exclusiveMinimum": 0})
    for mode in ("openapi", "json"):
        node = declare(schema, mode)["properties"]["n"]
        assert "exclusiveMinimum" not in node
        assert "exclusiveMinimum 0" in node["description"]


def test_case_09_const_inside_anyof_becomes_one_string_enum() -> None:
    schema = prop("freshness", {"anyOf": [{"const": "pd"}, {"const": "pw"}, {"const": "pm"}]})
    assert declare(schema)["properties"]["freshness"] == {
        "type": "STRING",
        "enum": ["pd", "pw", "pm"],
        "format": "enum",
    }
    assert "const" not in keys_anywhere(declare(schema, "json"))


@pytest.mark.parametrize(
    ("case", "keyword", "value"),
    [
        ("10", "multipleOf", 5),
        ("11", "uniqueItems", True),
        ("12", "propertyNames", {"pattern": "^a"}),
        ("13", "x-mcp-header", "X-Trace"),
        ("11", "contains", {"type": "string"}),
        ("11", "unevaluatedProperties", False),
    ],
)
def test_cases_10_to_13_unsupported_keywords_never_reach_gemini(
    case: str, keyword: str, value: Any
) -> None:
    schema = prop("p", {"type": "array", "items": {"type": "string"}, keyword: value})
    for mode in ("openapi", "json"):
        assert keyword not in keys_anywhere(declare(schema, mode)), case


def test_case_14_made_up_enum_type_with_values() -> None:
    schema = prop("color", {"type": "enum", "values": ["red", "green"]})
    out = declare(schema)["properties"]["color"]
    assert out["type"] == "STRING"
    assert "values" not in out


# -- B. type and value shapes on the OpenAPI path ----------------------------------------------


def test_case_15_type_arrays_for_nullables() -> None:
    schema = prop("name", {"type": ["string", "null"]})
    assert declare(schema)["properties"]["name"] == {"type": "STRING", "nullable": True}
    json_node = declare(schema, "json")["properties"]["name"]
    assert json_node == {"anyOf": [{"type": "string"}, {"type": "null"}]}


def test_case_16_never_an_empty_or_unknown_type_string() -> None:
    schema = prop("a", {"anyOf": [{"type": ""}, {"type": "null"}, {"type": "bogus"}]})
    types = [d.get("type") for d in walk(declare(schema))]
    assert "" not in types
    assert "bogus" not in types


def test_case_17_integer_enum_is_described_on_openapi_and_kept_on_json() -> None:
    schema = prop("mode", {"type": "integer", "enum": [0, 1, 3]})
    node = declare(schema)["properties"]["mode"]
    assert node["type"] == "INTEGER"
    assert "enum" not in node
    assert "0, 1, 3" in node["description"]
    assert declare(schema, "json")["properties"]["mode"] == {"type": "integer", "enum": [0, 1, 3]}


def test_case_18_enum_on_a_non_string_type_and_enum_without_type() -> None:
    out = declare(
        {
            "type": "object",
            "properties": {
                "max_depth": {"type": "number", "enum": [1, 2]},
                "mode": {"enum": ["a", "b"]},
            },
        }
    )
    assert "enum" not in out["properties"]["max_depth"]
    assert out["properties"]["mode"] == {"type": "STRING", "enum": ["a", "b"], "format": "enum"}


def test_case_19_format_enum_only_with_a_non_empty_enum() -> None:
    out = declare(prop("x", {"type": "string", "format": "enum", "enum": []}))
    assert out["properties"]["x"] == {"type": "STRING"}


def test_case_20_unsupported_string_formats_move_to_the_description() -> None:
    out = declare(
        prop("links", {"type": "array", "items": prop("url", {"type": "string", "format": "uri"})})
    )
    url = out["properties"]["links"]["items"]["properties"]["url"]
    assert url == {"type": "STRING", "description": "(format: uri)"}


def test_case_21_items_on_a_non_array_is_dropped() -> None:
    out = declare(prop("value", {"type": "string", "items": {"type": "string"}}))
    assert out["properties"]["value"] == {"type": "STRING"}


def test_case_22_properties_on_nullable_objects_stay_on_the_object() -> None:
    out = declare(
        prop("data", {"type": ["object", "null"], "properties": {"id": {"type": "string"}}})
    )
    assert out["properties"]["data"] == {
        "type": "OBJECT",
        "properties": {"id": {"type": "STRING"}},
        "nullable": True,
    }


def test_case_23_array_without_items_gets_items() -> None:
    out = declare(prop("key_developments", {"type": "array"}))
    assert out["properties"]["key_developments"]["items"]["type"] == "STRING"


def test_case_24_nested_lists_of_anything() -> None:
    out = declare(prop("rows", {"type": "array", "items": {"type": "array"}}))
    inner = out["properties"]["rows"]["items"]
    assert inner["type"] == "ARRAY"
    assert "items" in inner


def test_case_25_missing_type_is_inferred() -> None:
    out = declare(
        {
            "type": "object",
            "properties": {
                "choice": {"enum": ["a"]},
                "union": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                "obj": {"properties": {"x": {"type": "string"}}},
                "arr": {"items": {"type": "string"}},
            },
        }
    )
    props = out["properties"]
    assert props["choice"]["type"] == "STRING"
    assert "anyOf" in props["union"]
    assert props["obj"]["type"] == "OBJECT"
    assert props["arr"]["type"] == "ARRAY"


def test_cases_26_27_40_a_tool_without_parameters_still_has_an_object_schema() -> None:
    for schema in ({}, {"type": "object"}, {"type": "object", "properties": {}, "required": []}):
        assert declare(schema) == {"type": "OBJECT", "properties": {}}
        assert declare(schema, "json") == {"type": "object", "properties": {}}


def test_case_28_required_names_a_missing_property() -> None:
    schema = {
        "type": "object",
        "properties": {"element": {"type": "string"}},
        "required": ["element", "ref"],
    }
    assert declare(schema)["required"] == ["element"]
    assert declare(schema, "json")["required"] == ["element"]


def test_case_29_a_property_named_like_a_keyword_is_not_removed() -> None:
    schema = {
        "type": "object",
        "properties": {"format": {"type": "string"}, "title": {"type": "string"}},
        "required": ["format", "title"],
    }
    for mode in ("openapi", "json"):
        out = declare(schema, mode)
        assert set(out["properties"]) == {"format", "title"}
        assert out["required"] == ["format", "title"]


def test_case_30_nested_empty_object_is_kept() -> None:
    schema = {
        "type": "object",
        "properties": {"launchOptions": {"type": "object"}},
        "required": ["launchOptions"],
    }
    out = declare(schema)
    assert out["properties"]["launchOptions"] == {"type": "OBJECT"}
    assert out["required"] == ["launchOptions"]


# -- C. Vertex-specific rules -------------------------------------------------------------------


def test_case_31_vertex_anyof_alone_in_its_node() -> None:
    schema = prop(
        "base_branch",
        {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "default": None,
            "title": "Base Branch",
            "description": "The base branch.",
        },
    )
    node = declare(schema, backend="vertex")["properties"]["base_branch"]
    assert node == {"type": "STRING", "nullable": True, "description": "The base branch."}
    two = prop("x", {"anyOf": [{"type": "string"}, {"type": "integer"}], "description": "d"})
    assert set(declare(two, backend="vertex")["properties"]["x"]) == {"anyOf"}


def test_case_32_missing_nested_type_on_vertex() -> None:
    schema = prop(
        "data",
        {
            "type": "object",
            "properties": {
                "meta": {"type": "object", "properties": {"width": {"description": "Width"}}}
            },
        },
    )
    width = declare(schema, backend="vertex")["properties"]["data"]["properties"]["meta"][
        "properties"
    ]["width"]
    assert width["type"] == "STRING"


def test_case_33_root_not_an_object() -> None:
    union = {
        "anyOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}},
            {"type": "object", "properties": {"b": {"type": "string"}}},
        ]
    }
    for backend in ("gemini", "vertex"):
        out = declare(union, backend=backend)
        assert out["type"] == "OBJECT"
        assert set(out["properties"]) == {"a", "b"}
    assert declare({"type": "string"}, backend="vertex") == {"type": "OBJECT", "properties": {}}


def test_case_34_ref_with_siblings_is_inlined() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A", "description": "the a"}},
        "$defs": {"A": {"type": "string"}},
    }
    assert declare(schema, "json")["properties"]["a"] == {"type": "string", "description": "the a"}
    assert declare(schema, backend="vertex")["properties"]["a"] == {
        "type": "STRING",
        "description": "the a",
    }


def test_case_36_title_inside_defs_is_stripped_but_properties_named_title_stay() -> None:
    schema = {
        "type": "object",
        "properties": {"pages": {"type": "array", "items": {"$ref": "#/$defs/MiddleModel"}}},
        "$defs": {
            "MiddleModel": {
                "title": "MiddleModel",
                "type": "object",
                "properties": {"title": {"type": "string", "title": "Title"}},
            }
        },
    }
    out = declare(schema, "json")
    assert out["$defs"]["MiddleModel"] == {
        "type": "object",
        "properties": {"title": {"type": "string"}},
    }


def test_case_37_oneof_union_is_not_reduced_to_an_empty_node() -> None:
    schema = prop(
        "shape",
        {
            "oneOf": [prop("radius", {"type": "number"}), prop("side", {"type": "number"})],
            "discriminator": {"propertyName": "kind"},
        },
    )
    for mode in ("openapi", "json"):
        node = declare(schema, mode)["properties"]["shape"]
        assert len(node["anyOf"]) == 2
        assert "discriminator" not in node


def test_case_38_refs_are_inlined_never_dropped() -> None:
    schema = {
        "type": "object",
        "properties": {"q": {"$ref": "#/definitions/Query"}},
        "required": ["q"],
        "definitions": {"Query": prop("text", {"type": "string"})},
    }
    assert declare(schema)["properties"]["q"]["properties"]["text"] == {"type": "STRING"}


# -- F. names ----------------------------------------------------------------------------------


def test_case_46_invalid_function_names_are_sanitized_and_map_back() -> None:
    tools = [
        Tool(name="server/tool"),
        Tool(name="my tool"),
        Tool(name="9lives"),
        Tool(name="x" * 80),
    ]
    ts = ToolSet(tools)
    names = [d["name"] for d in gemini.function_declarations(ts)]
    assert names[:3] == ["server_tool", "my_tool", "_9lives"]
    assert len(names[3]) == 64
    for tool, name in zip(tools, names, strict=True):
        assert ts.get(name) is tool


def test_case_55_namespaced_call_names_resolve_by_suffix() -> None:
    ts = ToolSet([Tool(name="analyzeEmail")])
    (call,) = gemini.parse(
        [{"functionCall": {"name": "default_api.analyzeEmail", "args": {}}}], gemini.declare(ts)
    )
    assert isinstance(call, ToolCall)
    assert call.exposed_name == "analyzeEmail"
