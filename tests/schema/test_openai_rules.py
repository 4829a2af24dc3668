"""OpenAI's rules for a function tool's ``parameters``, with and without strict mode, judged on
hand-written schemas (one rule each), on what toolwire declares for the real corpus, on random
schemas and on shapes built to blow up."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpus import ALL_SCHEMAS, TOOLS, corpus_id
from toolwire import SchemaConversionError, Tool, ToolSet
from toolwire.providers import openai_chat
from toolwire.schema._base import ConversionNote
from toolwire.schema.checks import (
    openai_name_violations,
    openai_strict_violations,
    openai_violations,
)
from toolwire.schema.openai import StrictSchemaError, strict_schema

sys.path.insert(0, str(Path(__file__).parent.parent / "hostile"))
from schema_shapes import SHAPES

_TOP_LEVEL = {"anyOf", "oneOf", "allOf", "enum", "not"}


def _case(record: dict[str, Any]) -> Any:
    return pytest.param(record, id=corpus_id(record))


CASES = [_case(record) for record in ALL_SCHEMAS]


def _declared(tools: Iterable[Tool], strict: bool) -> list[dict[str, Any]]:
    """The Chat Completions ``tools`` declared for ``tools`` (``[]`` when there are none)."""
    declaration = openai_chat.declare(ToolSet.of(tools), openai_chat.Options(strict=strict))
    return declaration.tools or []


def messages(notes: list[ConversionNote]) -> list[str]:
    return [n.message for n in notes]


def closed(**properties: Any) -> dict[str, Any]:
    """A strict object: closed, every property required."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


# -- what toolwire declares for the corpus -------------------------------------------------------


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "plain"])
@pytest.mark.parametrize("record", CASES)
def test_every_corpus_declaration_fits_openais_rules(record: dict[str, Any], strict: bool) -> None:
    tool = Tool(name=record["name"], input_schema=record["inputSchema"])
    try:
        (declaration,) = _declared([tool], strict)
    except SchemaConversionError:
        return  # not valid JSON Schema: refused, for every provider (and by the validator)
    function = declaration["function"]
    assert openai_name_violations(function["name"]) == []
    if not strict:
        assert function["strict"] is False
    assert openai_violations(function["parameters"], strict=function["strict"]) == []


def test_a_root_one_of_beside_root_properties_is_merged_for_openai_too() -> None:
    merged = [r for r in TOOLS if "oneOf" in r["inputSchema"] and "properties" in r["inputSchema"]]
    assert len(merged) >= 10
    for record in merged:
        for strict in (True, False):
            (entry,) = _declared([Tool(name="t", input_schema=record["inputSchema"])], strict)
            assert _TOP_LEVEL.isdisjoint(entry["function"]["parameters"])


def test_most_of_the_corpus_is_declared_strict() -> None:
    toolset = ToolSet(
        Tool(name=f"t{i}", input_schema=r["inputSchema"]) for i, r in enumerate(TOOLS)
    )
    declarations = _declared(toolset, True)
    assert sum(d["function"]["strict"] for d in declarations) > 0.85 * len(TOOLS)


@pytest.mark.parametrize(
    "record", [r for r in CASES if _TOP_LEVEL.isdisjoint(r.values[0]["inputSchema"])]
)
def test_strict_conversions_fit_the_strict_rules_or_are_refused(record: Any) -> None:
    # A schema with a top-level union is merged before strict mode sees it (tested above).
    try:
        strict, _ = strict_schema(record["inputSchema"])
    except StrictSchemaError:
        return
    assert openai_violations(strict, strict=True) == []


# -- the rules of every function -----------------------------------------------------------------


def test_a_plain_object_fits_with_or_without_strict_mode() -> None:
    assert openai_violations({"type": "object", "properties": {}}, strict=False) == []
    assert openai_violations(closed(a={"type": "string"}), strict=True) == []


@pytest.mark.parametrize("key", sorted(_TOP_LEVEL))
@pytest.mark.parametrize("strict", [True, False])
def test_a_top_level_combinator_enum_or_not_is_refused(key: str, strict: bool) -> None:
    schema = {**closed(a={"type": "string"}), key: [{"required": ["a"]}]}
    if key == "not":
        schema[key] = {"required": ["a"]}
    if key == "enum":
        schema[key] = [{"a": "x"}]
    found = openai_violations(schema, strict=strict)
    assert ConversionNote("#", f"{key} is not allowed at the top level") in found


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"properties": {}}, 'the root must have "type": "object" (it has none)'),
        ({"type": "array", "items": {}}, """the root must have "type": "object" (not 'array')"""),
        ({"type": ["object"]}, 'the root must have "type": "object" (not ["object"])'),
    ],
)
def test_the_root_must_be_typed_object(schema: dict[str, Any], message: str) -> None:
    assert openai_violations(schema, strict=False)[0] == ConversionNote("#", message)


def test_a_schema_breaking_json_schemas_rules_is_refused_at_the_path() -> None:
    # Like "Invalid schema for function 'ai-sfn': None is not of type 'array'" (yomo/yomo#860).
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": None}
    assert [(n.path, n.message) for n in openai_violations(schema, strict=False)] == [
        ("#/required", 'not valid JSON Schema draft 2020-12: null is not of type "array"')
    ]


@pytest.mark.parametrize("value", [None, [], "object"])
def test_parameters_that_are_not_an_object_are_one_violation(value: Any) -> None:
    (note,) = openai_violations(value, strict=True)
    assert note.message.startswith("the schema must be a JSON object")


# -- strict mode ---------------------------------------------------------------------------------


def test_an_object_must_be_closed_and_require_every_property() -> None:
    schema = {
        **closed(a={"type": "string"}),
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
    }
    del schema["additionalProperties"]
    assert openai_violations(schema, strict=True) == [
        ConversionNote("#", "an object must set additionalProperties: false"),
        ConversionNote("#", "every property must be required"),
    ]
    assert openai_violations(schema, strict=False) == []  # fine without strict mode


def test_a_nested_object_and_an_open_map_break_the_same_rule() -> None:
    schema = closed(
        inner={"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
        tags={"type": "object", "additionalProperties": {"type": "string"}},
    )
    found = openai_violations(schema, strict=True)
    open_objects = [n.path for n in found if n.message.startswith("an object must set")]
    assert open_objects == ["#/properties/tags", "#/properties/inner"]


@pytest.mark.parametrize(
    ("sub", "message"),
    [
        ({"type": "string", "minLength": 1}, "unsupported keywords ['minLength']"),
        ({"type": "string", "maxLength": 9}, "unsupported keywords ['maxLength']"),
        ({"allOf": [{"type": "string"}]}, "unsupported keywords ['allOf']"),
        ({"type": "integer", "default": 3}, "unsupported keywords ['default']"),
        ({"description": "anything"}, "the value has no type"),
        ({"type": "string", "format": "uri"}, "format 'uri' is not supported"),
        ({"$ref": "#/$defs/missing"}, "$ref '#/$defs/missing' does not point into this schema"),
        ({"$ref": "https://x.test/s"}, "$ref 'https://x.test/s' does not point into this schema"),
        ({"type": "array", "items": True}, "a schema must be an object, not True"),
    ],
)
def test_strict_mode_refuses_what_it_does_not_support(sub: dict[str, Any], message: str) -> None:
    found = openai_violations(closed(a=sub), strict=True)
    assert message in messages(found), found


def test_supported_keywords_formats_and_recursion_fit() -> None:
    node = closed(
        when={"type": "string", "format": "date-time", "pattern": "^2"},
        n={"type": ["integer", "null"], "minimum": 0, "exclusiveMaximum": 9, "multipleOf": 3},
        tags={"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 3},
        kind={"const": "x", "description": "d", "title": "t"},
        either={"anyOf": [{"type": "string"}, {"type": "null"}]},
        child={"$ref": "#"},  # recursion is documented as supported
        tree={"$ref": "#/$defs/Tree"},
    )
    node["$defs"] = {"Tree": closed(children={"type": "array", "items": {"$ref": "#/$defs/Tree"}})}
    assert openai_violations(node, strict=True) == []


def nested_objects(levels: int) -> dict[str, Any]:
    schema = closed(leaf={"type": "string"})
    for _ in range(levels - 1):
        schema = closed(child=schema)
    return schema


def test_objects_may_nest_ten_levels_and_no_more() -> None:
    assert openai_violations(nested_objects(10), strict=True) == []
    (note,) = openai_violations(nested_objects(11), strict=True)
    assert note.message == "objects nested deeper than 10 levels (strict mode)"
    assert note.path == "#" + "/properties/child" * 10


def test_definitions_count_their_nesting_from_their_own_root() -> None:
    schema = closed(a={"$ref": "#/$defs/Deep"})
    schema["$defs"] = {"Deep": nested_objects(10)}
    assert openai_violations(schema, strict=True) == []


def test_the_total_property_limit() -> None:
    wide = closed(**{f"p{i}": {"type": "string"} for i in range(5_001)})
    assert messages(openai_violations(wide, strict=True)) == [
        "5001 properties; strict mode allows 5000"
    ]
    fits = closed(**{f"p{i}": {"type": "string"} for i in range(5_000)})
    assert openai_violations(fits, strict=True) == []


def test_the_enum_value_limits() -> None:
    many = closed(
        a={"type": "integer", "enum": list(range(600))},
        b={"type": "integer", "enum": list(range(401))},
    )
    assert messages(openai_violations(many, strict=True)) == [
        "1001 enum values; strict mode allows 1000"
    ]
    long = closed(a={"type": "string", "enum": [f"{i:060d}" for i in range(251)]})  # 15,060
    assert messages(openai_violations(long, strict=True)) == [
        "251 string enum values of 15060 characters; strict mode allows 15000 characters past "
        "250 values"
    ]
    short = closed(a={"type": "string", "enum": [f"{i:059d}" for i in range(250)]})
    assert openai_violations(short, strict=True) == []


def test_the_limit_on_names_and_values_in_characters() -> None:
    schema = closed(**{"p" * 1_000 + str(i): {"const": "v" * 500} for i in range(80)})
    assert messages(openai_violations(schema, strict=True)) == [
        "120150 characters of names, enum and const values; strict mode allows 120000"
    ]


def test_many_violations_are_listed_up_to_a_hundred_and_counted() -> None:
    schema = closed(**{f"p{i}": {"description": "untyped"} for i in range(500)})
    found = openai_violations(schema, strict=True)
    assert len(found) == 101
    assert found[-1] == ConversionNote("#", "and 400 more violations")


def test_the_strict_check_alone_keeps_its_callers_contract() -> None:
    # openai_strict_violations judges strict mode's own rules, as before (the benchmarks and
    # test_openai_strict use it); openai_violations adds the rules of every function.
    assert openai_strict_violations({"type": "array"}) == [
        ConversionNote("#", "the root must be an object")
    ]
    schema = {**closed(a={"type": "string"}), "anyOf": [closed(a={"type": "string"})]}
    assert openai_strict_violations(schema) == []
    assert messages(openai_violations(schema, strict=True)) == [
        "anyOf is not allowed at the top level"
    ]


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("get_weather", []),
        ("x" * 64, []),
        ("x" * 65, ["the name has 65 characters; 1 to 64"]),
        ("a.b", ["the name may hold only a-z, A-Z, 0-9, '_' and '-', not [\".\"]"]),
        (None, ["a tool name must be a string, not None"]),
    ],
)
def test_function_names_follow_the_documented_rule(name: Any, found: list[str]) -> None:
    assert messages(openai_name_violations(name)) == found


# -- random and hostile input --------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["type", "properties", "items", "anyOf", "allOf", "$ref", "enum", "const",
                 "required", "additionalProperties", "format", "$defs", "minLength", "not"]
            )
            | st.text(max_size=3),
            children,
            max_size=5,
        )
    ),
    max_leaves=30,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(json_values, st.booleans())
def test_the_checker_judges_any_input_without_raising(schema: Any, strict: bool) -> None:
    assert all(isinstance(n, ConversionNote) for n in openai_violations(schema, strict=strict))


leaf = st.sampled_from(
    [{"type": "string"}, {"type": "integer", "minimum": 0}, {"type": "string", "maxLength": 5},
     {"enum": ["a", "b"]}, {"type": ["number", "null"]}, {"type": "boolean", "default": True}]
)  # fmt: skip
objects = st.recursive(
    leaf,
    lambda inner: (
        st.builds(
            lambda p, r: {"type": "object", "properties": p, "required": [n for n in p if r]},
            st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
            st.booleans(),
        )
        | st.builds(lambda i: {"type": "array", "items": i}, inner)
        | st.builds(lambda b: {"anyOf": b}, st.lists(inner, min_size=1, max_size=3))
    ),
    max_leaves=15,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["q", "r", "s"]), objects, max_size=3))
def test_random_object_schemas_made_strict_fit_the_strict_rules(props: dict[str, Any]) -> None:
    try:
        strict, _ = strict_schema({"type": "object", "properties": props})
    except StrictSchemaError:
        return
    assert openai_violations(strict, strict=True) == []


@pytest.mark.parametrize("shape", list(SHAPES))
def test_shapes_built_to_blow_up_are_judged(shape: str) -> None:
    schema = SHAPES[shape]()
    for strict in (True, False):
        assert isinstance(openai_violations(schema, strict=strict), list)


def test_a_schema_ten_thousand_levels_deep_is_judged_without_crashing() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(10_000):
        deep = closed(a=deep)
    found = openai_violations(deep, strict=True)
    assert ConversionNote("#", "schema too deep or too large to check") in found
    assert "objects nested deeper than 10 levels (strict mode)" in messages(found)
