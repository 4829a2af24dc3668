"""Schemas of any shape give toolwire errors, never a foreign exception.

Reproduction (issue 15, the schema part): ``Tool(input_schema=[])`` accepted any arguments;
non-MCP schemas with ``properties: [...]``, ``$schema: [...]`` or a string schema raised
``AttributeError``/``TypeError`` deep inside. Now a tool's input schema must be a mapping;
declaring gives ``SchemaConversionError`` (or a note), validating ``ConfigurationError`` (a
broken schema) or ``InvalidArguments``, and ``toolwire check`` a verdict.
"""

from __future__ import annotations

import types
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_turns import (
    DECLARATIONS,
    PROVIDERS,
    answer_text,
    is_error_answer,
    parse,
    response_for,
)

import toolwire
from toolwire import (
    ConfigurationError,
    InvalidArguments,
    SchemaConversionError,
    Tool,
    ToolCall,
    ToolSet,
    compat,
)


@pytest.mark.parametrize(
    "schema", [[], ["type", "object"], "object", 5, None, True, False, ("a",), {1, 2}]
)
def test_an_input_schema_that_is_not_a_mapping_is_refused_at_construction(schema: Any) -> None:
    with pytest.raises(ConfigurationError, match="must be a JSON object"):
        Tool(name="t", input_schema=schema)


def test_any_mapping_is_a_schema() -> None:
    schema = types.MappingProxyType({"type": "object", "properties": {"a": {"type": "integer"}}})
    subject = Tool(name="t", input_schema=schema)
    assert subject.validate_arguments({"a": 1}) == {"a": 1}
    with pytest.raises(InvalidArguments):
        subject.validate_arguments({"a": "one"})


def exercise(schema: Any, arguments: list[Any]) -> list[str]:
    """Every entry point a schema reaches; returns what each said (only toolwire errors may
    be raised, anything else fails the test)."""
    said = []
    refused = None
    try:
        subject = Tool(name="t", input_schema=schema)
    except ConfigurationError as exc:
        refused = str(exc)
    if refused is not None:
        # Made, a tool is refused only for naming another document (which would fail open).
        assert "another document, which is never fetched" in refused
        return ["refused: it names another document"]
    for value in arguments:
        try:
            subject.validate_arguments(value)
            said.append("valid")
        except InvalidArguments:
            said.append("invalid")
        except ConfigurationError:
            said.append("broken")
    for provider, options in DECLARATIONS:
        try:
            toolwire.tools(ToolSet([subject]), provider, **options)
            said.append(f"{provider} declared")
        except SchemaConversionError:
            said.append(f"{provider} refused")
    for report in compat.check([subject]):
        for verdict in report.verdicts:
            said.append(f"{verdict.provider} {verdict.status}")
            if verdict.status != "accepted":
                assert verdict.notes
    return said


ODD = {
    "properties is a list": {"type": "object", "properties": ["a", "b"]},
    "$schema is a list": {"$schema": ["x"], "type": "object", "properties": {}},
    "$schema is a number": {"$schema": 7, "type": "object"},
    "a type name as a property": {"type": "object", "properties": {"a": "string"}},
    "a string as a property": {"type": "object", "properties": {"a": "nonsense"}},
    "required is a string": {"type": "object", "properties": {"x": {}}, "required": "x"},
    "required names numbers": {"type": "object", "required": [1, None, ["x"]]},
    "items is a number": {"type": "object", "properties": {"a": {"type": "array", "items": 5}}},
    "type is a number": {"type": 5},
    "type list of junk": {"type": [None, {"a": 1}, "object"]},
    "enum is a string": {"type": "object", "properties": {"a": {"enum": "abc"}}},
    "enum of objects": {"type": "object", "properties": {"a": {"enum": [{}, [], None]}}},
    "anyOf is an object": {"type": "object", "anyOf": {"a": 1}},
    "allOf of junk": {"type": "object", "allOf": [1, "x", None, [], {"$ref": 5}]},
    "$ref is a number": {"type": "object", "properties": {"a": {"$ref": 5}}},
    "$ref is empty": {"type": "object", "properties": {"a": {"$ref": ""}}},
    "$ref to itself": {"$ref": "#"},
    "$ref loop": {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/x"}},
        "$defs": {"x": {"$ref": "#/$defs/y"}, "y": {"$ref": "#/$defs/x"}},
    },
    "$defs is a list": {"type": "object", "$defs": [1], "properties": {"a": {"$ref": "#/$defs/0"}}},
    "minimum is text": {"type": "object", "properties": {"a": {"minimum": "3"}}},
    "maxLength is negative": {"type": "object", "properties": {"a": {"maxLength": -1}}},
    "pattern is a number": {"type": "object", "properties": {"a": {"pattern": 5}}},
    "pattern is invalid": {"type": "object", "properties": {"a": {"pattern": "(["}}},
    "format is an object": {"type": "object", "properties": {"a": {"format": {}}}},
    "description is a list": {"type": "object", "description": ["a"], "properties": {}},
    "additionalProperties is a string": {"type": "object", "additionalProperties": "no"},
    "boolean subschemas": {"type": "object", "properties": {"a": True, "b": False}},
    "a non-string key": {"type": "object", "properties": {1: {"type": "string"}}},
    "a set as enum": {"type": "object", "properties": {"a": {"enum": {1, 2}}}},
    "a tuple type": {"type": "object", "properties": {"a": {"type": ("string", "null")}}},
    "a huge integer bound": {"type": "object", "properties": {"a": {"maximum": 10**5000}}},
    "a NaN bound": {"type": "object", "properties": {"a": {"minimum": float("nan")}}},
    "OpenAPI nullable": {
        "type": "OBJECT",
        "properties": {"a": {"type": "STRING", "nullable": True}},
    },
    "empty": {},
    "$ref to itself beside a type": {"$ref": "#", "type": "object"},
    "$ref to itself beside a type, in allOf": {"type": "object", "allOf": [{"$ref": "#"}]},
    # References into an unknown keyword reach values no walk expected: lists in lists.
    "propertyOrdering of lists, through a $ref": {
        "type": "object",
        "x-hide": {"type": "object", "properties": {"a": {}}, "propertyOrdering": [["a"]]},
        "properties": {"p": {"$ref": "#/x-hide"}},
    },
    "required of lists, through a $ref": {
        "type": "object",
        "x-hide": {"type": "object", "properties": {"a": {}}, "required": [["a"]]},
        "allOf": [{"$ref": "#/x-hide"}],
    },
    "a non-string keyword, through a $ref": {
        "type": "object",
        "x-hide": {"type": "object", 1: "x", "format": ["date"]},
        "properties": {"p": {"$ref": "#/x-hide", "description": "d"}},
    },
    "nested 200 deep": {"type": "object", "properties": {"a": {}}},  # filled in below
}
_deep: dict[str, Any] = ODD["nested 200 deep"]["properties"]["a"]
for _ in range(200):
    _deep["properties"] = {"a": {}}
    _deep = _deep["properties"]["a"]


def _nested_list(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = [value]
    return value


# Data values (enum, default, examples) as deep as JSON text can make them, and deeper (built in
# Python): messages quote them, which once recursed until RecursionError.
for _where in ("enum", "default", "examples", "const"):
    for _levels in (990, 5000):
        _value = (
            [_nested_list(_levels)] if _where in ("enum", "examples") else _nested_list(_levels)
        )
        ODD[f"{_where} {_levels} deep"] = {
            "type": "object",
            "properties": {"a": {"type": "integer", _where: _value}},
        }


@pytest.mark.parametrize("name", list(ODD))
def test_each_odd_schema_gives_only_toolwire_errors(name: str) -> None:
    said = exercise(ODD[name], [{}, {"a": 1}, {"a": "x", "b": [None]}, {"x": {"y": 1.5}}])
    assert said  # every entry point answered


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_tool_that_cannot_be_declared_does_not_break_calls_to_its_neighbours(
    provider: str,
) -> None:
    # OpenAI parsing once declared the whole toolset to find one tool's strict nulls: one
    # neighbour's schema cycle made every call fail with its error.
    broken = Tool(name="broken", input_schema={"$ref": "#", "type": "object"}, handler=lambda: "")
    fine = Tool(
        name="fine",
        input_schema={"type": "object", "properties": {"a": {"type": "string"}}},
        handler=lambda a: f"ran with {a}",
    )
    toolset = ToolSet([broken, fine])
    with pytest.raises(SchemaConversionError, match="leads back to itself"):
        toolwire.tools(toolset, provider)
    response = response_for(provider, [("fine", {"a": "x"}, "c1")])
    (call,) = parse(provider, response, toolset)
    assert isinstance(call, ToolCall)
    assert call.arguments == {"a": "x"}
    (answer,) = anyio.run(toolwire.execute_tool_calls, toolset, provider, response).results
    assert "ran with x" in answer_text(answer)
    assert not is_error_answer(answer)


def test_a_broken_schema_is_rejected_by_check_for_every_provider() -> None:
    (report,) = compat.check([Tool(name="t", input_schema=ODD["required is a string"])])
    assert {v.status for v in report.verdicts} == {"rejected"}
    assert all(v.notes for v in report.verdicts)


def test_a_type_name_standing_for_a_schema_is_read_as_that_schema() -> None:
    subject = Tool(name="t", input_schema=ODD["a type name as a property"])
    assert subject.validate_arguments({"a": "text"}) == {"a": "text"}
    with pytest.raises(InvalidArguments) as info:
        subject.validate_arguments({"a": 5})
    assert info.value.errors[0][0] == "$.a"
    (entry,) = toolwire.tools([subject], "anthropic").tools
    assert entry["input_schema"]["properties"] == {"a": {"type": "string"}}


KEYWORDS = [
    "type", "properties", "items", "prefixItems", "required", "enum", "const", "anyOf",
    "allOf", "oneOf", "not", "if", "then", "else", "$ref", "$defs", "definitions",
    "additionalProperties", "patternProperties", "propertyNames", "dependentSchemas",
    "dependencies", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "multipleOf", "minLength", "maxItems", "uniqueItems", "contains", "$schema", "$id",
    "$anchor", "$dynamicRef", "description", "title", "default", "nullable", "x-extra",
    "unevaluatedProperties", "propertyOrdering",
]  # fmt: skip
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=False, allow_infinity=False, width=16)
    | st.sampled_from(
        [
            "string", "STRING", "object", "array", "integer", "null", "number", "Number", "x",
            "#", "#/properties/a", "#/$defs/a", "#/definitions/a", "#/nowhere", "other.json",
            "^a+$", "(", "date-time", "email", "a", "b", "",
        ]
    )
)  # fmt: skip
ODD_SCHEMAS = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(KEYWORDS), inner, max_size=4)
        | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)
    ),
    max_leaves=20,
)
ROOTS = st.dictionaries(st.sampled_from(KEYWORDS), ODD_SCHEMAS, max_size=5)
ARGUMENTS = st.dictionaries(
    st.sampled_from(["a", "b", "c"]),
    st.recursive(
        SCALARS,
        lambda inner: (
            st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from("ab"), inner, max_size=2)
        ),
        max_leaves=5,
    ),
    max_size=3,
)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ROOTS, ARGUMENTS)
def test_structurally_random_schemas_give_only_toolwire_errors(
    schema: dict[str, Any], arguments: dict[str, Any]
) -> None:
    exercise(schema, [arguments, {}])


@settings(max_examples=300, deadline=None)
@given(ODD_SCHEMAS.filter(lambda s: not isinstance(s, dict)))
def test_anything_but_a_mapping_is_refused_as_an_input_schema(schema: Any) -> None:
    with pytest.raises(ConfigurationError):
        Tool(name="t", input_schema=schema)
