"""Anthropic's strict tool use: the rules checker (``anthropic_violations(strict=True)`` and the
request's budgets) judged on hand-written schemas, one rule each; the strict lowering
(``to_anthropic_strict_schema``) on the real corpus, on one behaviour at a time as full-object
snapshots, on generated schemas and instances, and on shapes built to blow up."""

from __future__ import annotations

import contextlib
import copy
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from corpus import ALL_SCHEMAS, TOOLS, corpus_id
from metaschema import check_schema
from toolwire import SchemaConversionError
from toolwire.calls import strip_nulls
from toolwire.schema._base import ConversionNote
from toolwire.schema.anthropic import (
    STRICT_BUDGET,
    StrictBudget,
    StrictCost,
    strict_cost,
    to_anthropic_schema,
    to_anthropic_strict_schema,
)
from toolwire.schema.checks import (
    anthropic_pattern_problem,
    anthropic_strict_budget_violations,
    anthropic_violations,
    property_paths,
)
from toolwire.schema.openai import StrictSchemaError

sys.path.insert(0, str(Path(__file__).parent.parent / "hostile"))
from schema_shapes import SHAPES

CASES = [pytest.param(record, id=corpus_id(record)) for record in ALL_SCHEMAS]


def messages(notes: list[ConversionNote]) -> list[str]:
    return [n.message for n in notes]


def strict(schema: Any, *, nullable: bool = False) -> dict[str, Any]:
    """The strict form, checked against the rules and draft 2020-12, the input unchanged; past
    a request's budget alone exactly when its cost says so (the declaration then sends it
    without strict)."""
    before = copy.deepcopy(schema)
    form = to_anthropic_strict_schema(schema, nullable=nullable)
    assert schema == before, "the input was mutated"
    found = messages(anthropic_violations(form.schema, strict=True))
    over = [m for m in found if m.endswith("per request")]
    assert found == over
    assert bool(over) is not STRICT_BUDGET.fits(form.cost)
    check_schema(form.schema)
    assert form.cost == strict_cost(form.schema)
    return form.schema


def obj(required: tuple[str, ...] = (), **properties: Any) -> dict[str, Any]:
    """An object schema as a tool declares it (open, some properties required)."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


# -- the corpus -----------------------------------------------------------------------------------


@pytest.mark.parametrize("record", CASES)
def test_every_corpus_schema_is_made_strict_to_fit_the_rules_or_refused_with_a_reason(
    record: dict[str, Any],
) -> None:
    try:
        plain, _ = to_anthropic_schema(record["inputSchema"])
    except SchemaConversionError:
        return  # not declarable at all (test_anthropic_rules covers it)
    for nullable in (False, True):
        refusal: StrictSchemaError | None = None
        try:
            out = strict(plain, nullable=nullable)
        except StrictSchemaError as exc:
            refusal = exc
        if refusal is not None:
            assert refusal.reason
            assert refusal.path.startswith("#")
        else:
            assert property_paths(plain) <= property_paths(out)


def test_most_of_the_corpus_can_be_strict_and_the_refusals_say_why() -> None:
    reasons: dict[str, int] = {}
    for record in TOOLS:
        plain, _ = to_anthropic_schema(record["inputSchema"])
        try:
            to_anthropic_strict_schema(plain)
        except StrictSchemaError as exc:
            reason = exc.reason.split(" '", 1)[0]
            reasons[reason] = reasons.get(reason, 0) + 1
    assert sum(reasons.values()) / len(TOOLS) < 0.12
    assert max(reasons, key=reasons.__getitem__) == "an untyped value cannot be strict"


# -- one behaviour at a time ---------------------------------------------------------------------


def test_objects_are_closed_and_optional_properties_stay_optional() -> None:
    schema = obj(
        ("q",),
        q={"type": "string", "title": "Q", "description": "What to look for."},
        limit={"type": "integer", "default": 10},
        filter=obj(("field",), field={"type": "string"}, op={"enum": ["eq", "ne"]}),
        tags={"type": "array", "items": {"type": "string"}},
    )
    assert strict(schema) == {
        "type": "object",
        "properties": {
            "q": {"type": "string", "title": "Q", "description": "What to look for."},
            "limit": {"type": "integer", "default": 10},
            "filter": {
                "type": "object",
                "properties": {"field": {"type": "string"}, "op": {"enum": ["eq", "ne"]}},
                "required": ["field"],
                "additionalProperties": False,
            },
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["q"],
        "additionalProperties": False,
    }
    form = to_anthropic_strict_schema(schema)
    assert form.null_paths == ()
    assert form.cost == StrictCost(optional=4, unions=0)


def test_what_the_grammar_cannot_carry_is_described_and_minitems_kept_where_it_can() -> None:
    schema = obj(
        n={"type": "integer", "minimum": 1, "maximum": 9, "description": "A digit."},
        s={"type": "string", "minLength": 2, "maxLength": 8, "format": "uri"},
        d={"type": "string", "format": "date-time"},
        h={"type": "string", "format": "color"},
        some={"type": "array", "items": {"type": "string"}, "minItems": 1},
        many={"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 5},
        unique={"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
    )
    assert strict(schema)["properties"] == {
        "n": {"type": "integer", "description": "A digit. (minimum: 1; maximum: 9)"},
        "s": {"type": "string", "format": "uri", "description": "(minLength: 2; maxLength: 8)"},
        "d": {"type": "string", "format": "date-time"},
        "h": {"type": "string", "description": "(format: color)"},
        "some": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "many": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "description": "(minItems: 3; maxItems: 5)",
        },
        "unique": {
            "type": "array",
            "items": {"type": "integer"},
            "description": "(uniqueItems: true)",
        },
    }


@pytest.mark.parametrize(
    ("pattern", "kept"),
    [
        ("^[a-z0-9-]{1,39}$", True),
        (r"^\d{4}-\d{2}-\d{2}$", True),
        ("^(?:foo|bar)+$", True),
        (r"^[\w.]+@[\w.]+$", True),
        (r"^(a)\1$", False),
        ("^(?=.*[A-Z]).+$", False),
        ("^(?<!x)y$", False),
        (r"\bword\b", False),
        ("^(?P<year>[0-9]{4})$", False),
        ("^(?i)abc$", False),
        (r"^\p{L}+$", False),
        ("^.{1,5000}$", False),
    ],
)
def test_a_pattern_is_kept_only_when_it_is_a_simple_regular_expression(
    pattern: str, kept: bool
) -> None:
    out = strict(obj(p={"type": "string", "pattern": pattern}))["properties"]["p"]
    assert ("pattern" in out) is kept
    assert (anthropic_pattern_problem(pattern) is None) is kept
    if not kept:
        assert pattern[:20] in out["description"]


def test_a_null_default_optional_loses_its_null_rather_than_spend_a_union() -> None:
    schema = obj(
        tag={"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Tag"},
        kind={"type": ["string", "null"], "enum": ["a", "b", None], "default": None},
        many={
            "anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}],
            "default": None,
        },
        kept={"anyOf": [{"type": "string"}, {"type": "null"}]},  # null may mean something else
        clear={"type": ["string", "null"], "default": "x"},
    )
    assert strict(schema)["properties"] == {
        "tag": {"type": "string", "title": "Tag"},
        "kind": {"type": "string", "enum": ["a", "b"]},
        "many": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "kept": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "clear": {"type": ["string", "null"], "default": "x"},
    }
    assert to_anthropic_strict_schema(schema).cost == StrictCost(optional=5, unions=3)


def test_nullable_makes_optional_properties_required_and_records_their_paths() -> None:
    schema = obj(
        ("q",),
        q={"type": "string"},
        limit={"type": "integer", "default": 10},
        filters={
            "type": "array",
            "items": obj(("field",), field={"type": "string"}, op={"enum": ["eq", "ne"]}),
        },
        cursor={"type": ["string", "null"]},
    )
    out = strict(schema, nullable=True)
    assert out == {
        "type": "object",
        "properties": {
            "q": {"type": "string"},
            "limit": {"type": ["integer", "null"], "default": 10},
            "filters": {
                "type": ["array", "null"],
                "items": {
                    "type": "object",
                    "properties": {
                        "field": {"type": "string"},
                        "op": {"anyOf": [{"enum": ["eq", "ne"]}, {"type": "null"}]},
                    },
                    "required": ["field", "op"],
                    "additionalProperties": False,
                },
            },
            "cursor": {"type": ["string", "null"]},
        },
        "required": ["q", "limit", "filters", "cursor"],
        "additionalProperties": False,
    }
    form = to_anthropic_strict_schema(schema, nullable=True)
    assert form.null_paths == (("limit",), ("filters", "*", "op"), ("filters",))
    assert form.cost == StrictCost(optional=0, unions=4)


def test_references_are_inlined_and_an_object_of_object_alternatives_is_left_to_them() -> None:
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "oneOf": [{"$ref": "#/$defs/ById"}, {"$ref": "#/$defs/ByName"}],
                },
            }
        },
        "$defs": {
            "ById": obj(("id",), id={"type": "integer"}),
            "ByName": obj(("name",), name={"type": "string"}),
        },
    }
    assert strict(schema)["properties"]["items"]["items"] == {
        "anyOf": [
            {
                "type": "object",
                "properties": {"id": {"type": "integer"}},
                "required": ["id"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
                "additionalProperties": False,
            },
        ]
    }


def test_a_root_without_properties_declares_no_arguments() -> None:
    assert strict({"type": "object"}) == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    ("sub", "reason"),
    [
        ({"type": "object", "additionalProperties": {"type": "string"}}, "open map"),
        ({"type": "object"}, "an object of any keys"),
        ({"type": "object", "properties": {}}, "an object of any keys"),
        ({"not": {"type": "string"}}, "not is not supported"),
        ({}, "any type"),
        ({"description": "anything"}, "an untyped value"),
        ({"type": "array"}, "a single items schema"),
        ({"$ref": "#"}, "recursive"),
        ({"$ref": "https://example.com/s.json"}, "non-local"),
        ({"const": {"a": 1}}, "const must be"),
        ({"enum": [[1], [2]]}, "primitive"),
        ({"type": "object", "patternProperties": {"^x": {}}}, "patternProperties"),
        ({"type": "array", "prefixItems": [{"type": "string"}]}, "prefixItems"),
        ({"if": {"type": "string"}, "then": {"minLength": 1}}, "if/then/else"),
    ],
)
def test_what_strict_tool_use_cannot_express_is_refused_with_the_reason(
    sub: dict[str, Any], reason: str
) -> None:
    with pytest.raises(StrictSchemaError, match=reason) as info:
        to_anthropic_strict_schema(obj(a=sub))
    assert info.value.path.startswith("#/properties/a")


def test_the_budget_is_spent_tool_by_tool() -> None:
    left = STRICT_BUDGET.after(StrictCost(optional=20, unions=10))
    assert left == StrictBudget(tools=19, optional=4, unions=6)
    assert left.fits(StrictCost(optional=4, unions=6))
    assert not left.fits(StrictCost(optional=5, unions=0))
    assert not left.fits(StrictCost(optional=0, unions=7))
    assert not StrictBudget(tools=0).fits(StrictCost(0, 0))


# -- the checker, one rule at a time ---------------------------------------------------------------


def closed(**properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    ("sub", "message"),
    [
        ({"type": "integer", "minimum": 0}, "unsupported keywords ['minimum']"),
        ({"type": "string", "maxLength": 5}, "unsupported keywords ['maxLength']"),
        ({"type": "array", "items": {"type": "string"}, "maxItems": 2}, "['maxItems']"),
        ({"oneOf": [{"type": "string"}]}, "unsupported keywords ['oneOf']"),
        ({"type": "object", "properties": {}}, "additionalProperties: false"),
        (
            {"type": "object", "properties": {}, "additionalProperties": True},
            "additionalProperties: false",
        ),
        ({"type": "string", "format": "color"}, "format 'color' is not supported"),
        ({"type": "array", "items": {"type": "string"}, "minItems": 2}, "only 0 or 1"),
        ({"type": "string", "pattern": "(?=x)"}, "lookahead"),
        ({"description": "anything"}, "the value has no type"),
        ({"enum": [{"a": 1}]}, "enum values must be"),
        ({"const": [1]}, "const must be"),
        ({"type": "strings"}, "type must name JSON types"),
        ({"$ref": "#/$defs/nope"}, "does not point into this schema"),
        ({"$ref": "https://example.com/x"}, "is not a local reference"),
        ({"allOf": [{"$ref": "#/$defs/S"}]}, "allOf with $ref is not supported"),
        (
            {"type": "object", "properties": {}, "required": ["x"], "additionalProperties": False},
            'required names ["x"], not properties',
        ),
    ],
)
def test_the_checker_finds_each_broken_rule(sub: dict[str, Any], message: str) -> None:
    schema = {**closed(a=sub), "$defs": {"S": {"type": "string"}}}
    found = anthropic_violations(schema, strict=True)
    assert any(message in m for m in messages(found)), messages(found)
    assert anthropic_violations(schema) == [n for n in found if "draft 2020-12" in n.message]


def test_the_checker_accepts_what_the_docs_support() -> None:
    schema = {
        **closed(
            s={"type": "string", "format": "email", "pattern": "^[a-z]+@x$", "default": "a@x"},
            n={"type": ["number", "null"], "description": "A number.", "title": "N"},
            e={"enum": ["a", 1, True, None]},
            c={"const": "fixed"},
            a={"type": "array", "items": {"$ref": "#/$defs/Item"}, "minItems": 1},
            u={"anyOf": [{"type": "string"}, {"type": "integer"}]},
            m={"allOf": [closed(x={"type": "string"})]},
        ),
        "$defs": {"Item": closed(id={"type": "integer"})},
    }
    assert anthropic_violations(schema, strict=True) == []


def test_a_recursive_schema_is_found_however_it_recurs() -> None:
    direct = {
        **closed(n={"$ref": "#/$defs/Node"}),
        "$defs": {"Node": closed(next={"$ref": "#/$defs/Node"})},
    }
    mutual = {
        **closed(a={"$ref": "#/$defs/A"}),
        "$defs": {"A": closed(b={"$ref": "#/$defs/B"}), "B": closed(a={"$ref": "#/$defs/A"})},
    }
    to_root = closed(again={"$ref": "#"})
    for schema in (direct, mutual, to_root):
        assert any("recursion" in m for m in messages(anthropic_violations(schema, strict=True)))


def test_one_schema_past_a_request_budget_breaks_the_rules() -> None:
    optional = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string"} for i in range(25)},
        "additionalProperties": False,
    }
    assert messages(anthropic_violations(optional, strict=True)) == [
        "25 optional parameters; strict tool use allows 24 per request"
    ]
    unions = closed(**{f"p{i}": {"type": ["string", "null"]} for i in range(17)})
    assert messages(anthropic_violations(unions, strict=True)) == [
        "17 parameters with union types; strict tool use allows 16 per request"
    ]


def test_the_request_budgets_count_strict_tools_only() -> None:
    def tool(i: int, schema: dict[str, Any], *, strict: bool = True) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": f"t{i}", "input_schema": schema}
        if strict:
            entry["strict"] = True
        return entry

    plain = closed(q={"type": "string"})
    assert anthropic_strict_budget_violations([tool(i, plain) for i in range(20)]) == []
    assert messages(anthropic_strict_budget_violations([tool(i, plain) for i in range(21)])) == [
        "21 strict tools; strict tool use allows 20 per request"
    ]
    five = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string"} for i in range(5)},
        "additionalProperties": False,
    }
    found = anthropic_strict_budget_violations([tool(i, five) for i in range(5)])
    assert messages(found) == ["25 optional parameters; strict tool use allows 24 per request"]
    assert found[0].path == "tools"
    one = closed(u={"anyOf": [{"type": "string"}, {"type": "integer"}]})
    assert messages(anthropic_strict_budget_violations([tool(i, one) for i in range(17)])) == [
        "17 parameters with union types; strict tool use allows 16 per request"
    ]
    loose = [tool(i, one, strict=False) for i in range(40)]
    assert anthropic_strict_budget_violations(loose) == []


# -- generated schemas ---------------------------------------------------------------------------

LEAVES = [
    {"type": "string"},
    {"type": "integer", "minimum": 0, "maximum": 50},
    {"type": "string", "maxLength": 5, "minLength": 1},
    {"enum": ["a", "b"]},
    {"type": "boolean", "default": True},
    {"type": "string", "pattern": "^[a-z]{1,4}$"},
    {"type": "string", "format": "uri"},
    {"type": "string", "format": "color"},
]
NULLABLE_LEAVES = [
    {"type": ["number", "null"]},
    {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
    {"type": ["integer", "null"], "default": None, "minimum": 3},
]


def object_schemas(
    leaves: list[dict[str, Any]], *, unions: bool = True
) -> st.SearchStrategy[dict[str, Any]]:
    """Object roots of up to three properties, built of ``leaves`` in objects (some
    properties required), arrays (minItems 0 to 2) and, with ``unions``, anyOf."""

    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        built = st.builds(
            lambda p, r: {"type": "object", "properties": p, "required": [n for n in p if r(n)]},
            st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, min_size=1, max_size=3),
            st.sampled_from([lambda n: True, lambda n: False, lambda n: n == "a"]),
        ) | st.builds(
            lambda i, n: {"type": "array", "items": i, "minItems": n}, inner, st.integers(0, 2)
        )
        if unions:
            built |= st.builds(lambda b: {"anyOf": b}, st.lists(inner, min_size=1, max_size=3))
        return built

    schemas = st.recursive(st.sampled_from(leaves), extend, max_leaves=12)
    return st.dictionaries(st.sampled_from(["q", "r", "s"]), schemas, max_size=3).map(
        lambda p: {"type": "object", "properties": p, "required": sorted(p)[:1]}
    )


roots = object_schemas(LEAVES + NULLABLE_LEAVES)
# Null paths name no anyOf branch (the contract OpenAI's strict mode shares): the nulls the
# model sends are drawn here for schemas where each path means one place.
roots_without_null = object_schemas(LEAVES, unions=False)


def values(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid under the generated schemas (no extra keys: strict objects are closed)."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "anyOf" in schema:
        return st.one_of([values(b) for b in schema["anyOf"]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([values({**schema, "type": k}) for k in kind])
    if kind == "null":
        return st.none()
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True)
        if schema.get("format") == "uri":
            return st.sampled_from(["https://example.com/a", "urn:isbn:0451450523"])
        return st.text(min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 6))
    if kind == "integer":
        return st.integers(schema.get("minimum", -100), schema.get("maximum", 100))
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False, width=32)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        low = schema.get("minItems", 0)
        return st.lists(values(schema["items"]), min_size=low, max_size=low + 2)
    props, required = schema["properties"], set(schema.get("required", ()))
    return st.fixed_dictionaries(
        {k: values(v) for k, v in props.items() if k in required},
        optional={k: left_out_or(v) for k, v in props.items() if k not in required},
    )


def left_out_or(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """An optional property's values: never null when its default is null (leaving it out
    says that)."""
    if "default" in schema and schema["default"] is None:
        return values(schema).filter(lambda v: v is not None)
    return values(schema)


def fill_nulls(instance: Any, paths: tuple[tuple[str, ...], ...]) -> Any:
    """What the model must send under a nullable strict schema: null for each left-out
    optional at a recorded path (deepest first, so an absent parent ends up null)."""

    def fill(node: Any, path: tuple[str, ...]) -> Any:
        head, rest = path[0], path[1:]
        if head == "*":
            return [fill(item, rest) for item in node] if isinstance(node, list) and rest else node
        if not isinstance(node, dict):
            return node
        if not rest:
            return node if head in node else {**node, head: None}
        return {**node, head: fill(node[head], rest)} if head in node else node

    for path in sorted(paths, key=len, reverse=True):
        instance = fill(instance, path)
    return instance


@settings(max_examples=300, deadline=None)
@given(roots)
def test_generated_schemas_made_strict_fit_the_rules_and_draft_2020_12(
    schema: dict[str, Any],
) -> None:
    for nullable in (False, True):
        with contextlib.suppress(StrictSchemaError):  # the corpus test checks reasons
            strict(schema, nullable=nullable)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), roots)
def test_what_the_original_accepts_the_strict_form_accepts(
    data: st.DataObject, schema: dict[str, Any]
) -> None:
    try:
        native = to_anthropic_strict_schema(schema)
    except StrictSchemaError:
        return
    instance = data.draw(values(schema))
    assert Draft202012Validator(schema).is_valid(instance)
    assert Draft202012Validator(native.schema).is_valid(instance)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), roots_without_null)
def test_made_nullable_the_nulls_sent_for_what_is_left_out_are_stripped_back(
    data: st.DataObject, schema: dict[str, Any]
) -> None:
    try:
        nullable = to_anthropic_strict_schema(schema, nullable=True)
    except StrictSchemaError:
        return
    instance = data.draw(values(schema))
    filled = fill_nulls(instance, nullable.null_paths)
    assert Draft202012Validator(nullable.schema).is_valid(filled)
    assert strip_nulls(filled, nullable.null_paths) == instance


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["type", "properties", "items", "anyOf", "allOf", "$ref", "enum", "const",
                 "required", "additionalProperties", "format", "$defs", "pattern", "minItems"]
            )
            | st.text(max_size=3),
            children,
            max_size=5,
        )
    ),
    max_leaves=30,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_the_checkers_judge_any_input_without_raising(value: Any) -> None:
    assert all(isinstance(n, ConversionNote) for n in anthropic_violations(value, strict=True))
    tools = [{"name": "t", "strict": True, "input_schema": value}]
    assert all(isinstance(n, ConversionNote) for n in anthropic_strict_budget_violations(tools))
    assert isinstance(anthropic_pattern_problem(value), str | None)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["q", "r"]), json_values, max_size=2),
    st.lists(st.sampled_from(["q", "r", "s"]), unique=True),
)
def test_any_declarable_input_is_made_strict_or_refused_with_a_strict_schema_error(
    properties: dict[str, Any], required: list[str]
) -> None:
    schema = {"type": "object", "properties": properties, "required": required}
    try:
        plain, _ = to_anthropic_schema(schema)
    except SchemaConversionError:
        return
    for nullable in (False, True):
        with contextlib.suppress(StrictSchemaError):  # nothing else may escape
            to_anthropic_strict_schema(plain, nullable=nullable)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_shapes_built_to_blow_up_are_made_strict_or_refused(shape: str) -> None:
    schema = SHAPES[shape]()
    refusal: SchemaConversionError | None = None
    try:
        plain, _ = to_anthropic_schema(schema)
        form = to_anthropic_strict_schema(plain)
    except SchemaConversionError as exc:
        refusal = exc
    if refusal is not None:
        assert refusal.reason
    else:
        assert isinstance(anthropic_violations(form.schema, strict=True), list)
