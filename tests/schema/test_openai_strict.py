"""OpenAI strict conversion over the corpus, and its null-path contract."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from corpus import ALL_SCHEMAS, TOOLS, corpus_id
from metaschema import check_schema
from toolwire.calls import strip_nulls
from toolwire.schema.checks import openai_strict_violations
from toolwire.schema.openai import StrictLimits, StrictSchemaError, strict_schema

CASES = [pytest.param(record, id=corpus_id(record)) for record in ALL_SCHEMAS]


@pytest.mark.parametrize("record", CASES)
def test_every_schema_is_strict_or_refused_with_a_reason(record: dict[str, Any]) -> None:
    original = record["inputSchema"]
    before = copy.deepcopy(original)
    refusal: StrictSchemaError | None = None
    try:
        strict, null_paths = strict_schema(original)
    except StrictSchemaError as exc:
        refusal = exc
    assert original == before, "the input was mutated"
    if refusal is not None:
        assert refusal.reason
        assert refusal.path.startswith("#")
        return
    assert openai_strict_violations(strict) == []
    check_schema(strict)
    assert all(isinstance(p, tuple) and p for p in null_paths)


def test_most_of_the_corpus_can_be_strict() -> None:
    strict = 0
    for record in TOOLS:
        try:
            strict_schema(record["inputSchema"])
            strict += 1
        except StrictSchemaError:
            pass
    assert strict / len(TOOLS) > 0.85


def test_optional_properties_become_nullable_and_their_paths_are_recorded() -> None:
    schema = {
        "type": "object",
        "properties": {
            "q": {"type": "string"},
            "limit": {"type": "integer", "default": 10},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "filters": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "field": {"type": "string"},
                        "op": {"anyOf": [{"type": "string"}]},
                    },
                    "required": ["field"],
                },
            },
            "cursor": {"type": ["string", "null"]},
            "ref": {"$ref": "#/$defs/R"},
        },
        "required": ["q"],
        "$defs": {"R": {"type": "object", "properties": {"id": {"type": "integer"}}}},
    }
    strict, null_paths = strict_schema(schema)
    props = strict["properties"]
    assert props["limit"] == {"type": ["integer", "null"], "description": "(default: 10)"}
    assert props["mode"] == {"type": ["string", "null"], "enum": ["a", "b", None]}
    assert props["cursor"] == {"type": ["string", "null"]}
    assert props["filters"]["type"] == ["array", "null"]
    assert props["ref"]["type"] == ["object", "null"]
    item = props["filters"]["items"]
    assert item["properties"]["op"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert strict["required"] == list(props)
    assert null_paths == [
        ("limit",),
        ("mode",),
        ("filters", "*", "op"),
        ("filters",),
        ("ref", "id"),
        ("ref",),
    ]


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        (
            {
                "type": "object",
                "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}},
            },
            "open map",
        ),
        ({"type": "object", "properties": {"a": {"not": {"type": "string"}}}}, "not"),
        ({"type": "object", "properties": {"a": {}}}, "any type"),
        ({"type": "object", "properties": {"a": {"type": "array"}}}, "items"),
        ({"type": "object", "properties": {"n": {"$ref": "#"}}}, "recursive"),
        ({"type": "object", "properties": {"a": {"$ref": "https://x/y.json"}}}, "non-local"),
    ],
)
def test_refusals_say_why(schema: dict[str, Any], reason: str) -> None:
    with pytest.raises(StrictSchemaError, match=reason):
        strict_schema(schema)


def test_documented_limits_are_enforced() -> None:
    wide = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string"} for i in range(20)},
        "required": [f"p{i}" for i in range(20)],
    }
    with pytest.raises(StrictSchemaError, match="more than 10 properties"):
        strict_schema(wide, limits=StrictLimits(properties=10))
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(12):
        deep = {"type": "object", "properties": {"x": deep}, "required": ["x"]}
    with pytest.raises(StrictSchemaError, match="nested deeper than 10"):
        strict_schema(deep)
    many = {
        "type": "object",
        "properties": {"e": {"type": "string", "enum": [str(i) for i in range(1001)]}},
        "required": ["e"],
    }
    with pytest.raises(StrictSchemaError, match="enum values"):
        strict_schema(many)


# -- the null-path contract, on generated instances ----------------------------------------------


def fill_nulls(instance: Any, paths: list[tuple[str, ...]]) -> Any:
    """What the model must send under the strict schema: null for every left-out optional."""

    def fill(node: Any, path: tuple[str, ...]) -> Any:
        head, rest = path[0], path[1:]
        if head == "*":
            return [fill(item, rest) for item in node] if isinstance(node, list) and rest else node
        if not isinstance(node, dict):
            return node
        if not rest:
            return node if head in node else {**node, head: None}
        return {**node, head: fill(node[head], rest)} if head in node else node

    # Deepest first, so an absent parent ends up null rather than an object of nulls.
    for path in sorted(paths, key=len, reverse=True):
        instance = fill(instance, path)
    return instance


def instances(schema: Any) -> st.SearchStrategy[Any]:
    """Values valid under the simple schemas picked below (types, enums, arrays, objects).

    hypothesis-jsonschema would do this in general, but its last release fails with current
    Hypothesis (``'many' object has no attribute 'more'``).
    """
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if {"pattern", "format", "anyOf", "oneOf", "allOf", "$ref", "not"} & set(schema):
        raise ValueError("not a simple schema")
    kind = schema.get("type")
    if kind == "string":
        low = schema.get("minLength", 0)
        return st.text(min_size=low, max_size=schema.get("maxLength", low + 8))
    if kind == "integer":
        return st.integers(min_value=schema.get("minimum"), max_value=schema.get("maximum"))
    if kind == "number":
        return st.floats(
            allow_nan=False,
            allow_infinity=False,
            min_value=schema.get("minimum"),
            max_value=schema.get("maximum"),
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        low = schema.get("minItems", 0)
        return st.lists(
            instances(schema.get("items", {"type": "string"})),
            min_size=low,
            max_size=schema.get("maxItems", low + 3),
        )
    if kind == "object":
        props = schema.get("properties", {})
        required = set(schema.get("required", ()))
        return st.fixed_dictionaries(
            {k: instances(v) for k, v in props.items() if k in required},
            optional={k: instances(v) for k, v in props.items() if k not in required},
        )
    raise ValueError(f"not a simple schema: {schema}")


def _simple(schema: Any) -> bool:
    try:
        instances(schema)
    except (ValueError, TypeError):
        return False
    return True


def _accepts_null_anywhere(schema: Any) -> bool:
    return '"null"' in str(schema).replace("'", '"') or "None" in str(schema)


SIMPLE = [
    r["inputSchema"]
    for r in TOOLS
    if r["source"].startswith("github/github-mcp-server")
    and not _accepts_null_anywhere(r["inputSchema"])
    and _simple(r["inputSchema"])
][:25]


@pytest.mark.parametrize(
    "schema", SIMPLE, ids=lambda s: ",".join(sorted(s.get("properties", {})))[:40]
)
def test_filling_nulls_is_strict_valid_and_stripping_them_gives_the_original(
    schema: dict[str, Any], examples: Callable[[int], int]
) -> None:
    strict, null_paths = strict_schema(schema)
    original_validator = Draft202012Validator(schema)
    strict_validator = Draft202012Validator(strict)
    paths = tuple(null_paths)

    @settings(
        max_examples=examples(25),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(instances(schema))
    def check(instance: dict[str, Any]) -> None:
        assert original_validator.is_valid(instance)
        filled = fill_nulls(instance, list(null_paths))
        assert strict_validator.is_valid(filled), list(strict_validator.iter_errors(filled))[:1]
        assert strip_nulls(filled, paths) == instance

    check()
