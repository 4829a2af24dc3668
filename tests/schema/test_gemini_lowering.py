"""Transformations, one behaviour at a time, as full-object snapshots."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from toolwire import SchemaConversionError
from toolwire.schema import to_gemini_json_schema, to_gemini_openapi_schema
from toolwire.schema.checks import gemini_violations


def json_mode(schema: Any) -> dict[str, Any]:
    out, _ = to_gemini_json_schema(schema)
    assert gemini_violations(out, mode="json") == []
    return out


def openapi(schema: Any, backend: Any = "gemini") -> dict[str, Any]:
    out, _ = to_gemini_openapi_schema(schema, backend=backend)
    assert gemini_violations(out, mode="openapi", backend=backend) == []
    return out


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


# -- JSON mode ---------------------------------------------------------------------------------


def test_json_mode_removes_annotations_and_vendor_keys() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:x",
        "title": "Args",
        "type": "object",
        "properties": {"q": {"type": "string", "title": "Q", "examples": ["a"], "x-ui": 1}},
    }
    assert json_mode(schema) == obj(q={"type": "string"})


def test_json_mode_turns_const_into_a_typed_enum() -> None:
    assert json_mode(obj(a={"const": "x"}, b={"const": 3}, c={"const": True})) == obj(
        a={"type": "string", "enum": ["x"]},
        b={"type": "integer", "enum": [3]},
        c={"type": "boolean", "description": "(allowed values: true)"},
    )


def test_json_mode_turns_type_lists_into_anyof() -> None:
    schema = obj(a={"type": ["string", "null"], "maxLength": 3, "description": "d"})
    assert json_mode(schema) == obj(
        a={
            "anyOf": [{"type": "string", "description": "(maxLength 3)"}, {"type": "null"}],
            "description": "d",
        }
    )


def test_json_mode_rewrites_definitions_and_pointer_refs_into_defs() -> None:
    schema = {
        "type": "object",
        "definitions": {"Tag": {"type": "string"}},
        "properties": {
            "tag": {"$ref": "#/definitions/Tag"},
            "again": {"$ref": "#/properties/tag"},
        },
    }
    assert json_mode(schema) == {
        "type": "object",
        "properties": {"tag": {"$ref": "#/$defs/Tag"}, "again": {"$ref": "#/$defs/tag"}},
        "$defs": {"Tag": {"type": "string"}, "tag": {"$ref": "#/$defs/Tag"}},
    }


def test_json_mode_keeps_recursive_refs() -> None:
    schema = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {
                "type": "object",
                "title": "Node",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            }
        },
    }
    assert json_mode(schema) == {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": obj(children={"type": "array", "items": {"$ref": "#/$defs/Node"}}),
        },
    }


def test_json_mode_merges_ref_siblings_into_the_target() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A", "description": "the a"}},
        "$defs": {"A": {"type": "object", "properties": {"x": {"type": "integer"}}}},
    }
    assert json_mode(schema) == obj(
        a={"type": "object", "properties": {"x": {"type": "integer"}}, "description": "the a"}
    )


def test_json_mode_merges_allof() -> None:
    schema = obj(
        a={
            "allOf": [
                {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
                {"properties": {"y": {"type": "integer"}}, "required": ["y"]},
            ]
        }
    )
    assert json_mode(schema) == obj(
        a={
            "type": "object",
            "properties": {"x": {"type": "string"}, "y": {"type": "integer"}},
            "required": ["x", "y"],
        }
    )


@pytest.mark.parametrize(
    ("root", "expected"),
    [
        ({}, {"type": "object", "properties": {}}),
        (True, {"type": "object", "properties": {}}),
        ({"type": "string"}, {"type": "object", "properties": {}}),
        ({"type": ["object", "null"]}, {"type": "object", "properties": {}}),
        (
            {"$ref": "#/$defs/A", "$defs": {"A": obj(x={"type": "string"})}},
            obj(x={"type": "string"}),
        ),
    ],
)
def test_json_mode_root_is_always_a_plain_object(root: Any, expected: dict[str, Any]) -> None:
    assert json_mode(root) == expected


def test_json_mode_flattens_a_top_level_union_of_objects() -> None:
    schema = {
        "anyOf": [
            {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
            {
                "type": "object",
                "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
                "required": ["id", "name"],
            },
        ]
    }
    assert json_mode(schema) == {
        "type": "object",
        "properties": {
            "id": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "name": {"type": "string"},
        },
        "required": ["id"],
    }


def test_json_mode_describes_what_it_drops() -> None:
    out, notes = to_gemini_json_schema(
        obj(a={"type": "string", "pattern": "^a", "default": "ab", "description": "A."})
    )
    assert out == obj(a={"type": "string", "description": 'A. (pattern "^a"; default: "ab")'})
    assert [(n.path, n.message) for n in notes] == [
        ("#/properties/a", "pattern moved into the description")
    ]


def test_property_names_are_names_not_keywords() -> None:
    names = ["type", "format", "title", "default", "$ref", "enum", "properties", "items"]
    schema = {
        "type": "object",
        "properties": {n: {"type": "string"} for n in names},
        "required": names,
    }
    expected = {
        "type": "object",
        "properties": {n: {"type": "string"} for n in names},
        "required": names,
    }
    assert json_mode(schema) == expected
    lowered = openapi(schema)
    assert list(lowered["properties"]) == names
    assert lowered["required"] == names


def test_json_mode_keeps_the_required_names_of_a_one_branch_anyof_within_the_properties() -> None:
    # A one-branch anyOf joins the node's own constraints: its required names join the node's
    # (they were lost when the node had some of its own).
    branch = {"properties": {"b": {}}, "required": ["b"]}
    merged = json_mode({**obj(a={}), "required": ["a"], "anyOf": [branch]})
    assert merged["required"] == ["a", "b"]
    # Found by test_merged_references: a reference the merge dissolves leaves a branch's
    # required name without its property; like the node's own, it is pruned (Gemini refuses
    # a required name that is not a property). json_mode checks Gemini's rules.
    json_mode(
        {
            "type": "object",
            "additionalProperties": False,
            "anyOf": [
                {
                    "allOf": [
                        {"type": "object", "additionalProperties": False},
                        {"$ref": "#/allOf/0", "properties": {"b": {}, "c": {}}},
                    ],
                    "required": ["a", "c"],
                }
            ],
            "allOf": [
                {
                    "anyOf": [{"type": "object"}, {"$ref": "#/allOf/0/anyOf/0", "required": ["c"]}],
                    "oneOf": [{"properties": {}}],
                    "type": "object",
                    "additionalProperties": False,
                }
            ],
            "$ref": "#/allOf/0/oneOf/0",
        }
    )


# -- OpenAPI mode ------------------------------------------------------------------------------


def test_openapi_mode_uses_upper_case_types_and_nullable() -> None:
    schema = obj(
        a={"type": ["string", "null"]},
        b={"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        c={"type": ["string", "integer"]},
    )
    assert openapi(schema) == {
        "type": "OBJECT",
        "properties": {
            "a": {"type": "STRING", "nullable": True},
            "b": {"type": "INTEGER", "nullable": True},
            "c": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]},
        },
    }


def test_openapi_mode_inlines_refs_and_cuts_recursion_with_a_note() -> None:
    schema = {
        "type": "object",
        "properties": {"node": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": obj(next={"$ref": "#/$defs/Node"}, value={"type": "string"})},
    }
    out = openapi(schema)
    level2 = out["properties"]["node"]["properties"]["next"]
    cut = level2["properties"]["next"]
    assert cut["type"] == "OBJECT"
    assert "recursive" in cut["description"]
    assert "properties" not in cut


def test_openapi_mode_vertex_keeps_recursion_as_defs_and_ref() -> None:
    schema = {
        "type": "object",
        "properties": {"node": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": obj(next={"$ref": "#/$defs/Node"}, value={"type": "string"})},
    }
    assert openapi(schema, backend="vertex") == {
        "type": "OBJECT",
        "properties": {
            "node": {
                "type": "OBJECT",
                "properties": {"next": {"ref": "#/defs/Node"}, "value": {"type": "STRING"}},
            }
        },
        "defs": {
            "Node": {
                "type": "OBJECT",
                "properties": {"next": {"ref": "#/defs/Node"}, "value": {"type": "STRING"}},
            }
        },
    }


def test_openapi_mode_oneof_becomes_anyof_and_allof_is_merged() -> None:
    schema = obj(
        a={"oneOf": [{"type": "string"}, {"type": "integer"}]},
        b={"allOf": [obj(x={"type": "string"}), obj(y={"type": "string"})]},
    )
    assert openapi(schema) == {
        "type": "OBJECT",
        "properties": {
            "a": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]},
            "b": {
                "type": "OBJECT",
                "properties": {"x": {"type": "STRING"}, "y": {"type": "STRING"}},
            },
        },
    }


def test_openapi_mode_describes_non_string_enums_instead_of_stringifying() -> None:
    out = openapi(obj(level={"type": "integer", "enum": [0, 1, 3], "description": "Level."}))
    assert out["properties"]["level"] == {
        "type": "INTEGER",
        "description": "Level. (allowed values: 0, 1, 3)",
    }


def test_openapi_mode_arrays_always_have_items_and_required_is_pruned() -> None:
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "array"}},
        "required": ["tags", "ghost"],
    }
    assert openapi(schema) == {
        "type": "OBJECT",
        "properties": {
            "tags": {"type": "ARRAY", "items": {"type": "STRING", "description": "any value"}}
        },
        "required": ["tags"],
    }


def test_openapi_mode_moves_unsupported_formats_into_the_description() -> None:
    out = openapi(
        obj(u={"type": "string", "format": "uri"}, t={"type": "string", "format": "date-time"})
    )
    assert out["properties"] == {
        "u": {"type": "STRING", "description": "(format: uri)"},
        "t": {"type": "STRING", "format": "date-time"},
    }


def test_openapi_mode_additional_properties_by_backend() -> None:
    schema = obj(m={"type": "object", "additionalProperties": {"type": "integer"}})
    assert openapi(schema)["properties"]["m"] == {
        "type": "OBJECT",
        "description": "(an object with free-form keys)",
    }
    assert openapi(schema, backend="vertex")["properties"]["m"] == {
        "type": "OBJECT",
        "additionalProperties": {"type": "INTEGER"},
    }


def test_vertex_anyof_is_alone_in_its_node() -> None:
    schema = obj(
        a={
            "anyOf": [{"type": "string"}, {"type": "integer"}],
            "description": "A.",
            "title": "A",
            "default": "x",
        }
    )
    assert openapi(schema, backend="vertex")["properties"]["a"] == {
        "anyOf": [
            {"type": "STRING", "description": "A."},
            {"type": "INTEGER", "description": "A."},
        ]
    }


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("convert", [to_gemini_json_schema, to_gemini_openapi_schema])
def test_a_schema_that_is_not_an_object_is_a_clear_error(convert: Any) -> None:
    with pytest.raises(SchemaConversionError) as info:
        convert(["not", "a", "schema"])
    assert info.value.path == "#"


@pytest.mark.parametrize("convert", [to_gemini_json_schema, to_gemini_openapi_schema])
def test_a_ref_to_nowhere_names_the_path(convert: Any) -> None:
    with pytest.raises(SchemaConversionError) as info:
        convert(obj(a={"$ref": "#/$defs/Missing"}))
    assert info.value.path == "#/properties/a"
    assert "points to nothing" in info.value.reason


@pytest.mark.parametrize("convert", [to_gemini_json_schema, to_gemini_openapi_schema])
def test_a_ref_cycle_without_content_is_a_clear_error(convert: Any) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A", "description": "d"}},
        "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}},
    }
    with pytest.raises(SchemaConversionError):
        convert(schema)


@pytest.mark.parametrize("convert", [to_gemini_json_schema, to_gemini_openapi_schema])
def test_ten_thousand_levels_of_nesting_is_a_clear_error_not_a_recursion_error(
    convert: Any,
) -> None:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(10_000):
        node = {"type": "object", "properties": {"x": node}}
    with pytest.raises(SchemaConversionError) as info:
        convert(node)
    assert "deeper than" in info.value.reason
    assert info.value.path.startswith("#/properties/x/properties/x")


def test_a_200_kb_description_is_capped() -> None:
    out = json_mode(obj(a={"type": "string", "description": "word " * 40_000}))
    description = out["properties"]["a"]["description"]
    assert len(description.encode()) <= 4096
    assert description.endswith("[truncated]")


def test_external_refs_are_never_fetched() -> None:
    out, notes = to_gemini_json_schema(obj(a={"$ref": "https://example.com/s.json"}))
    assert out == obj(a={})
    assert "not followed" in notes[0].message


def test_a_python_level_self_containing_dict_is_bounded() -> None:
    node: dict[str, Any] = {"type": "object", "properties": {}}
    node["properties"]["self"] = node
    with pytest.raises(SchemaConversionError):
        to_gemini_json_schema(node)
    with pytest.raises(SchemaConversionError):
        to_gemini_openapi_schema(node)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "properties",
                    "items",
                    "anyOf",
                    "oneOf",
                    "allOf",
                    "$ref",
                    "enum",
                    "const",
                    "required",
                    "additionalProperties",
                    "default",
                    "format",
                    "minimum",
                    "maxItems",
                    "prefixItems",
                    "nullable",
                    "description",
                    "$defs",
                    "definitions",
                    "x",
                    "not",
                ]
            )
            | st.text(max_size=4),
            children,
            max_size=5,
        )
    ),
    max_leaves=30,
)
schema_like = st.one_of(
    json_values,
    st.sampled_from(["#", "#/$defs/A", "#/properties/a", "#/definitions/B"]).map(
        lambda ref: {
            "type": "object",
            "properties": {"a": {"$ref": ref}},
            "$defs": {"A": {"type": "string"}},
        }
    ),
)


@settings(max_examples=300, deadline=None)
@given(schema_like)
@example({"items": {"$ref": []}})  # a non-string $ref once reached a dict lookup
@example({"anyOf": [], "enum": [None]})  # a flattened root union kept the root's enum
def test_arbitrary_input_gives_a_conforming_schema_or_a_conversion_error(schema: Any) -> None:
    before = json.dumps(schema, sort_keys=True)
    for mode, convert in (("json", to_gemini_json_schema), ("openapi", to_gemini_openapi_schema)):
        try:
            out, _ = convert(schema)
        except SchemaConversionError:
            continue
        assert gemini_violations(out, mode=mode) == [], out
    assert json.dumps(schema, sort_keys=True) == before


@settings(max_examples=300, deadline=None)
@given(schema_like)
def test_the_rule_checker_judges_any_input_without_raising(schema: Any) -> None:
    for mode in ("json", "openapi"):
        for backend in ("gemini", "vertex"):
            assert isinstance(gemini_violations(schema, mode=mode, backend=backend), list)
