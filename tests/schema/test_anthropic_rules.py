"""Anthropic's rules for a tool's ``input_schema`` and the lowering that meets them.

The checker (:func:`anthropic_violations`) is judged on hand-written schemas, one rule each; the
lowering (:func:`to_anthropic_schema`) on the real corpus, on one behaviour at a time as
full-object snapshots, on random schemas and on shapes built to blow up.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from corpus import ALL_SCHEMAS, STRESS, TOOLS, corpus_id
from metaschema import check_schema
from toolwire import ConfigurationError, SchemaConversionError, Tool, ToolSet, ToolwireError
from toolwire.schema._base import ConversionNote
from toolwire.schema.anthropic import to_anthropic_schema
from toolwire.schema.checks import (
    anthropic_name_violations,
    anthropic_violations,
    property_paths,
)

sys.path.insert(0, str(Path(__file__).parent.parent / "hostile"))
from schema_shapes import SHAPES

CASES = [pytest.param(record, id=corpus_id(record)) for record in ALL_SCHEMAS]


def lowered(schema: Any) -> dict[str, Any]:
    """The lowering's output, checked against the rules and draft 2020-12."""
    before = copy.deepcopy(schema)
    out, _ = to_anthropic_schema(schema)
    assert schema == before, "the input was mutated"
    assert anthropic_violations(out) == []
    check_schema(out)
    return out


def messages(notes: list[ConversionNote]) -> list[str]:
    return [n.message for n in notes]


# -- the corpus -----------------------------------------------------------------------------------


@pytest.mark.parametrize("record", CASES)
def test_every_corpus_schema_is_lowered_to_fit_the_rules_or_refused_with_a_reason(
    record: dict[str, Any],
) -> None:
    original = record["inputSchema"]
    before = copy.deepcopy(original)
    refusal: SchemaConversionError | None = None
    try:
        out, _ = to_anthropic_schema(original)
    except SchemaConversionError as exc:
        refusal = exc
    assert original == before, "the input was mutated"
    if refusal is not None:
        assert refusal.reason
        assert refusal.path.startswith("#")
        return
    assert anthropic_violations(out) == []
    check_schema(out)
    assert property_paths(original) <= property_paths(out)


def test_every_corpus_tool_is_lowered_and_one_stress_schema_is_refused() -> None:
    refused = {}
    for record in ALL_SCHEMAS:
        try:
            to_anthropic_schema(record["inputSchema"])
        except SchemaConversionError as exc:
            refused[record["name"]] = exc.reason
    assert len(TOOLS) == 810
    assert len(STRESS) == 75
    # A pattern the regex meta-format rejects: refused today by every declaration, and by the
    # validator.
    assert list(refused) == ["Github_hard/o65826"]
    assert refused["Github_hard/o65826"].startswith("not valid JSON Schema")


def _validator_refusal(schema: Any) -> str | None:
    try:
        Tool(name="t", input_schema=schema).check_schema()
    except ConfigurationError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("record", CASES)
def test_a_schema_the_validator_finds_invalid_is_never_declared(record: dict[str, Any]) -> None:
    refusal = _validator_refusal(record["inputSchema"])
    if refusal is not None and "patterns must compile" not in refusal:
        with pytest.raises(SchemaConversionError):
            to_anthropic_schema(record["inputSchema"])


def test_a_pattern_only_the_linear_engine_refuses_is_declared_as_json_schema_allows_it() -> None:
    # Valid JSON Schema (look-around): declared, as every provider is sent it; the validator
    # answers each call with the reason (its own policy, see toolwire.tool).
    declared, refused = [], []
    for record in ALL_SCHEMAS:
        refusal = _validator_refusal(record["inputSchema"])
        if refusal is not None and "patterns must compile" in refusal:
            try:
                to_anthropic_schema(record["inputSchema"])
                declared.append(record["name"])
            except SchemaConversionError:
                refused.append(record["name"])  # no valid regex at all: refused by both
    assert declared == ["register", "JsonSchemaStore/gradle-enterprise-config-schema-7"]
    assert refused == ["Github_hard/o65826"]


def test_the_corpus_top_level_unions_are_merged_and_described() -> None:
    merged = 0
    for record in TOOLS:
        out, notes = to_anthropic_schema(record["inputSchema"])
        if any("merged into one object" in m for m in messages(notes)):
            merged += 1
            assert "Provide " in out["description"]
            assert out.keys().isdisjoint({"anyOf", "oneOf", "allOf"})
    assert merged == 12  # find_resource and eleven calculate_area variants


def test_declarations_fit_the_sdks_tool_param() -> None:
    pydantic = pytest.importorskip("pydantic")
    anthropic_types = pytest.importorskip("anthropic.types")
    adapter = pydantic.TypeAdapter(anthropic_types.ToolParam)
    toolset = ToolSet(
        [
            Tool(name=f"{r['name']}_{i}", description=r.get("description"), input_schema=s)
            for i, r in enumerate(TOOLS)
            for s in [r["inputSchema"]]
        ]
    )
    for tool in toolset:
        name = toolset.exposed_name(tool)
        assert anthropic_name_violations(name) == []
        param = {"name": name, "input_schema": to_anthropic_schema(tool.input_schema)[0]}
        assert adapter.validate_python(param)["input_schema"]["type"] == "object"


# -- lowering the top level, one behaviour at a time ----------------------------------------------


def test_a_plain_object_root_is_declared_as_it_is() -> None:
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
        "not": {"required": ["q", "r"]},  # accepted at the top level
    }
    out, notes = to_anthropic_schema(schema)
    assert out == schema
    assert out is not schema
    assert notes == []


def test_a_top_level_anyof_of_required_names_becomes_one_object_described() -> None:
    # The "at least one of these fields" pattern (dearlordylord/huly-mcp#66).
    schema = {
        "type": "object",
        "description": "Update an issue",
        "properties": {"id": {"type": "string"}, "title": {}, "body": {}},
        "required": ["id"],
        "anyOf": [{"required": ["title"]}, {"required": ["body"]}],
    }
    assert lowered(schema) == {
        "type": "object",
        "description": "Update an issue. Provide at least one of: (1) title; (2) body.",
        "properties": {"id": {"type": "string"}, "title": {}, "body": {}},
        "required": ["id"],
    }


def test_a_top_level_oneof_of_objects_unites_properties_and_keeps_common_requirements() -> None:
    schema = {
        "oneOf": [
            {
                "type": "object",
                "properties": {"shape": {"const": "circle"}, "radius": {"type": "number"}},
                "required": ["shape", "radius"],
            },
            {
                "type": "object",
                "properties": {"shape": {"const": "square"}, "side": {"type": "number"}},
                "required": ["shape", "side"],
                "additionalProperties": False,
            },
        ]
    }
    out, notes = to_anthropic_schema(schema)
    assert out == {
        "type": "object",
        "description": (
            'Provide exactly one of: (1) shape="circle", radius; (2) shape="square", side.'
        ),
        "properties": {
            "shape": {"anyOf": [{"const": "circle"}, {"const": "square"}]},
            "radius": {"type": "number"},
            "side": {"type": "number"},
        },
        "required": ["shape"],
    }
    assert messages(notes) == [
        'type "object" added at the root (Anthropic requires it)',
        "oneOf of 2 object schemas merged into one object",
    ]


def test_alternatives_that_are_local_references_are_resolved() -> None:
    schema = {
        "$defs": {
            "ById": {"type": "object", "properties": {"id": {"$ref": "#/$defs/Id"}}},
            "ByName": {"properties": {"name": {"type": "string"}}, "required": ["name"]},
            "Id": {"type": "integer"},
        },
        "type": "object",
        "oneOf": [{"$ref": "#/$defs/ById"}, {"$ref": "#/$defs/ByName"}],
    }
    out = lowered(schema)
    assert out["properties"] == {"id": {"$ref": "#/$defs/Id"}, "name": {"type": "string"}}
    assert "required" not in out
    assert out["$defs"] == schema["$defs"]  # what the properties refer to
    assert out["description"] == "Provide exactly one of: (1) id (none required); (2) name."


def test_a_top_level_allof_merges_members_and_keeps_conflicts_at_the_property() -> None:
    schema = {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"a": {"maxLength": 3}, "b": {"type": "integer"}}, "required": ["b"]},
            {"properties": {"a": {"type": "string"}}, "required": ["a"]},  # the same again
        ]
    }
    assert lowered(schema) == {
        "type": "object",
        "properties": {
            "a": {"allOf": [{"type": "string"}, {"maxLength": 3}]},
            "b": {"type": "integer"},
        },
        "required": ["a", "b"],
    }


def test_the_roots_own_keywords_are_kept_beside_merged_members() -> None:
    schema = {
        "type": "object",
        "description": "Search.",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
        "additionalProperties": False,
        "allOf": [{"properties": {"limit": {"type": "integer"}}, "description": "ignored"}],
        "oneOf": [{"required": ["limit"]}, {"properties": {"page": {"type": "integer"}}}],
    }
    assert lowered(schema) == {
        "type": "object",
        "description": "Search. Provide exactly one of: (1) limit; (2) page (none required).",
        "properties": {
            "q": {"type": "string"},
            "limit": {"type": "integer"},
            "page": {"type": "integer"},
        },
        "required": ["q"],
        "additionalProperties": False,
    }


def test_unions_inside_top_level_allof_members_are_merged_too() -> None:
    schema = {
        "type": "object",
        "allOf": [
            {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
            {"oneOf": [{"required": ["c"]}, {"required": ["d"]}]},
        ],
        "properties": {"a": {}, "b": {}, "c": {}, "d": {}},
    }
    out = lowered(schema)
    assert out["description"] == (
        "Provide at least one of: (1) a; (2) b. Provide exactly one of: (1) c; (2) d."
    )


def test_negations_and_conditions_stay_at_the_top_level_folded_into_one_not() -> None:
    a_needs_c = {"if": {"required": ["a"]}, "then": {"required": ["c"]}}
    b_needs_d = {"if": {"required": ["b"]}, "then": {"required": ["d"]}}
    schema = {
        "type": "object",
        "properties": {"a": {}, "b": {}, "c": {}, "d": {}},
        "allOf": [{"not": {"required": ["a", "b"]}}, a_needs_c, b_needs_d],
    }
    out, notes = to_anthropic_schema(schema)
    assert out == {
        "type": "object",
        "properties": {"a": {}, "b": {}, "c": {}, "d": {}},
        "not": {"anyOf": [{"required": ["a", "b"]}, {"not": b_needs_d}]},
        **a_needs_c,
    }
    assert "2 negations and conditions folded into one not" in messages(notes)
    validator = Draft202012Validator(out)  # means what allOf meant
    assert validator.is_valid({"a": 1, "c": 1})
    assert not validator.is_valid({"a": 1})
    assert not validator.is_valid({"b": 1})
    assert not validator.is_valid({"a": 1, "b": 1, "c": 1, "d": 1})


@pytest.mark.parametrize(
    ("schema", "path", "reason"),
    [
        (
            {"anyOf": [{"type": "string"}, {"type": "object"}]},
            "#/anyOf/0",
            "alternative 1 of anyOf is not an object schema (type 'string')",
        ),
        (
            {"type": "object", "oneOf": [{"required": ["a"]}, {"not": {"required": ["a"]}}]},
            "#/oneOf/1",
            "alternative 2 of oneOf holds not",
        ),
        (
            {"oneOf": [{"if": {"required": ["a"]}, "then": {"required": ["b"]}}, {}]},
            "#/oneOf/0",
            "alternative 1 of oneOf holds if",
        ),
        ({"anyOf": [{"const": {"a": 1}}, {}]}, "#/anyOf/0", "is a fixed value (const)"),
        ({"type": "array"}, "#", "the input schema is not an object schema"),
        ({"anyOf": [False, {}]}, "#/anyOf/0", "alternative 1 of anyOf accepts nothing"),
        (
            {"$defs": {"A": {"anyOf": [{"$ref": "#/$defs/A"}, {}]}}, "$ref": "#/$defs/A"},
            "#/$defs/A/anyOf/0",
            "leads back to the alternatives it stands in",
        ),
    ],
)
def test_alternatives_no_object_can_stand_for_are_refused_with_the_reason(
    schema: dict[str, Any], path: str, reason: str
) -> None:
    with pytest.raises(SchemaConversionError) as info:
        to_anthropic_schema(schema)
    assert info.value.path == path
    assert reason in info.value.reason


def test_the_root_type_list_is_narrowed_and_fixed_values_dropped() -> None:
    schema = {"type": ["object", "null"], "properties": {"a": {}}, "enum": [{"a": 1}]}
    out, notes = to_anthropic_schema(schema)
    assert out == {"type": "object", "properties": {"a": {}}}
    assert messages(notes) == [
        """type ["object","null"] narrowed to object""",
        "enum on the root dropped (arguments are an object)",
    ]


def test_an_openapi_nullable_alternative_is_read_as_its_object() -> None:
    schema = {"oneOf": [{"type": "object", "nullable": True, "required": ["a"]}, {}]}
    out, notes = to_anthropic_schema(schema)
    assert out["description"] == "Provide exactly one of: (1) a; (2) no property required."
    assert "nullable dropped (arguments are an object)" in messages(notes)


def test_a_long_description_is_cut_before_the_sentence_on_alternatives() -> None:
    schema = {"description": "x" * 10_000, "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}
    out = lowered(schema)
    assert out["description"].endswith("[truncated] Provide at least one of: (1) a; (2) b.")
    assert len(out["description"].encode()) <= 4096


def test_many_alternatives_are_counted_past_a_dozen() -> None:
    schema = {"oneOf": [{"required": [f"p{i}"]} for i in range(30)]}
    out = lowered(schema)
    assert out["description"].endswith("(12) p11; and 18 more.")


# -- type names ---------------------------------------------------------------------------------


def test_type_names_are_lowered_at_every_depth_and_only_in_keyword_positions() -> None:
    schema = {
        "type": "OBJECT",
        "properties": {
            "type": {"type": "String", "enum": ["STRING", "OBJECT"], "default": "STRING"},
            "tags": {"type": "ARRAY", "items": {"type": ["STRING", "NULL"]}},
            "pair": {"type": "array", "prefixItems": [{"type": "INTEGER"}]},
            "either": {"anyOf": [{"$ref": "#/$defs/Num"}, {"type": "BOOLEAN"}]},
            "fixed": {"const": {"type": "OBJECT"}, "examples": [{"type": "ARRAY"}]},
        },
        "$defs": {"Num": {"type": "Number"}},
    }
    out, notes = to_anthropic_schema(schema)
    assert out == {
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": ["STRING", "OBJECT"], "default": "STRING"},
            "tags": {"type": "array", "items": {"type": ["string", "null"]}},
            "pair": {"type": "array", "prefixItems": [{"type": "integer"}]},
            "either": {"anyOf": [{"$ref": "#/$defs/Num"}, {"type": "boolean"}]},
            "fixed": {"const": {"type": "OBJECT"}, "examples": [{"type": "ARRAY"}]},
        },
        "$defs": {"Num": {"type": "number"}},
    }
    assert sorted(n.path for n in notes) == [
        "#",
        "#/$defs/Num",
        "#/properties/either/anyOf/1",
        "#/properties/pair/prefixItems/0",
        "#/properties/tags",
        "#/properties/tags/items",
        "#/properties/type",
    ]
    assert anthropic_violations(out) == []


@pytest.mark.parametrize(
    ("bad", "shown"),
    [("strin", "'strin'"), ("any", "'any'"), ("int", "'int'"), (5, "5"), (["string", "x"], "'x'")],
)
def test_an_unknown_type_name_is_refused_as_the_validator_refuses_it(bad: Any, shown: str) -> None:
    schema = {"type": "object", "properties": {"a": {"type": bad}}}
    with pytest.raises(ConfigurationError):
        Tool(name="t", input_schema=schema).check_schema()
    with pytest.raises(SchemaConversionError) as info:
        to_anthropic_schema(schema)
    assert info.value.path == "#/properties/a/type"
    assert info.value.reason.startswith(f"type {shown} is not a JSON Schema type")


def test_a_type_list_naming_a_type_twice_once_lowered_is_refused() -> None:
    with pytest.raises(SchemaConversionError, match="names a type twice"):
        to_anthropic_schema({"type": "object", "properties": {"a": {"type": ["STRING", "string"]}}})


def test_an_older_dialect_is_declared_in_its_2020_12_spelling() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {
            "n": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
            "pair": {"type": "array", "items": [{"type": "string"}], "additionalItems": False},
        },
    }
    out = lowered(schema)
    assert out == {
        "type": "object",
        "properties": {
            "n": {"type": "number", "exclusiveMinimum": 0},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}], "items": False},
        },
    }


# -- random and hostile input --------------------------------------------------------------------

type_names = st.sampled_from(["object", "OBJECT", "Object", "string", "STRING", "Integer", "NULL"])
leaf = st.builds(lambda t: {"type": t}, st.sampled_from(["STRING", "integer", "Number", "null"]))
nested = st.recursive(
    leaf,
    lambda inner: (
        st.builds(
            lambda p: {"type": "OBJECT", "properties": p},
            st.dictionaries(st.text(max_size=3), inner, max_size=3),
        )
        | st.builds(lambda i: {"type": "Array", "items": i}, inner)
        | st.builds(lambda b: {"anyOf": b}, st.lists(inner, min_size=1, max_size=3))
    ),
    max_leaves=12,
)
names = st.sampled_from(["a", "b", "c", "type", "shape"])
object_branch = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["object", "OBJECT", ["object", "null"]]),
        "properties": st.dictionaries(names, nested, max_size=3),
        "required": st.lists(names, max_size=2, unique=True),
        "description": st.text(max_size=8),
        "additionalProperties": st.booleans(),
    },
)


def _combine(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    combinator = st.sampled_from(["anyOf", "oneOf", "allOf"])
    return st.builds(
        lambda key, branches, own: {**own, key: branches},
        combinator,
        st.lists(children, min_size=1, max_size=3),
        object_branch,
    )


object_tree = st.recursive(object_branch, _combine, max_leaves=8)
non_object = st.sampled_from([{"type": "string"}, {"type": "ARRAY"}, {"not": {}}, {"const": 1}])


@settings(max_examples=200, deadline=None)
@given(object_tree)
def test_any_mix_of_object_alternatives_and_type_name_cases_is_lowered_to_fit(
    schema: dict[str, Any],
) -> None:
    out = lowered(schema)
    assert out["type"] == "object"
    text = json.dumps(out)
    assert all(f'"type": "{t}"' not in text for t in ("OBJECT", "Object", "STRING", "NULL"))


@settings(max_examples=200, deadline=None)
@given(object_tree, non_object, st.sampled_from(["anyOf", "oneOf"]))
def test_an_alternative_that_is_not_an_object_is_always_refused(
    schema: dict[str, Any], odd: dict[str, Any], key: str
) -> None:
    with pytest.raises(SchemaConversionError) as info:
        to_anthropic_schema({key: [schema, odd]})
    assert info.value.path == f"#/{key}/1"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["type", "properties", "items", "anyOf", "oneOf", "allOf", "$ref", "enum",
                 "required", "not", "if", "then", "$defs", "description", "const"]
            )
            | st.text(max_size=3),
            children,
            max_size=5,
        )
    ),
    max_leaves=30,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(json_values | type_names)
def test_arbitrary_input_is_lowered_to_fit_or_refused_and_the_checker_never_raises(
    schema: Any,
) -> None:
    assert all(isinstance(n, ConversionNote) for n in anthropic_violations(schema))
    before = copy.deepcopy(schema)
    try:
        out, _ = to_anthropic_schema(schema)
    except SchemaConversionError:
        return
    finally:
        assert schema == before
    assert anthropic_violations(out) == []


@pytest.mark.parametrize("shape", list(SHAPES))
def test_shapes_built_to_blow_up_are_lowered_to_fit_or_refused(shape: str) -> None:
    schema = SHAPES[shape]()
    try:
        out, _ = to_anthropic_schema(schema)
    except ToolwireError:
        return
    assert anthropic_violations(out) == []


def test_a_schema_ten_thousand_levels_deep_is_refused_and_judged_without_crashing() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(10_000):
        deep = {"type": "object", "properties": {"a": deep}}
    with pytest.raises(SchemaConversionError, match="deeper than"):
        to_anthropic_schema(deep)
    # jsonschema-rs recurses natively: handed this, it would crash the process.
    assert anthropic_violations(deep) == [
        ConversionNote("#", "schema too deep or too large to check")
    ]


# -- the checker, one rule at a time ------------------------------------------------------------


def test_a_plain_object_schema_has_no_violations() -> None:
    assert anthropic_violations({"type": "object"}) == []
    assert anthropic_violations({"type": "object", "properties": {"a": {"anyOf": [{}]}}}) == []


@pytest.mark.parametrize("key", ["anyOf", "oneOf", "allOf"])
def test_a_top_level_combinator_is_a_violation(key: str) -> None:
    schema = {"type": "object", key: [{"required": ["a"]}]}
    assert anthropic_violations(schema) == [
        ConversionNote("#", f"{key} is not allowed at the top level")
    ]


def test_not_and_conditions_are_allowed_at_the_top_level() -> None:
    schema = {"type": "object", "not": {"required": ["a"]}, "if": {}, "then": {}}
    assert anthropic_violations(schema) == []


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"properties": {}}, 'the root must have "type": "object" (it has none)'),
        ({"type": "array"}, """the root must have "type": "object" (not 'array')"""),
        ({"type": ["object"]}, 'the root must have "type": "object" (not ["object"])'),
    ],
)
def test_the_root_must_say_it_is_an_object(schema: dict[str, Any], message: str) -> None:
    assert anthropic_violations(schema)[0] == ConversionNote("#", message)


def test_an_upper_case_root_type_breaks_both_rules() -> None:
    assert messages(anthropic_violations({"type": "OBJECT"})) == [
        """the root must have "type": "object" (not 'OBJECT')""",
        'not valid JSON Schema draft 2020-12: "OBJECT" is not valid under any of the schemas '
        "listed in the 'anyOf' keyword",
    ]


def test_meta_schema_errors_are_reported_at_their_paths_each_once() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "strin"}, "b": {"minLength": -1}, "c": {"items": 5}},
        "required": "a",
    }
    assert [n.path for n in anthropic_violations(schema)] == [
        "#/properties/a/type",
        "#/properties/b/minLength",
        "#/properties/c/items",
        "#/required",
    ]


def test_a_shorthand_type_name_for_a_schema_is_a_violation() -> None:
    # anthropics/anthropic-sdk-java#241: "properties": {"x": "number"} was refused.
    schema = {"type": "object", "properties": {"x": "number"}}
    assert [n.path for n in anthropic_violations(schema)] == ["#/properties/x"]
    assert lowered(schema)["properties"] == {"x": {"type": "number"}}


@pytest.mark.parametrize("value", [None, [], "object", 3])
def test_a_root_that_is_not_an_object_is_one_violation(value: Any) -> None:
    (note,) = anthropic_violations(value)
    assert note.path == "#"
    assert note.message.startswith("the schema must be a JSON object")


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("get_weather", []),
        ("a-b_C9", []),
        ("x" * 64, []),
        ("x" * 65, ["the name has 65 characters; 1 to 64"]),
        ("", ["the name has 0 characters; 1 to 64"]),
        (
            "server/tool.v2",
            ["the name may hold only a-z, A-Z, 0-9, '_' and '-', not [\".\",\"/\"]"],
        ),
        ("é", ["the name may hold only a-z, A-Z, 0-9, '_' and '-', not [\"é\"]"]),
        (7, ["a tool name must be a string, not 7"]),
    ],
)
def test_tool_names_follow_the_documented_rule(name: Any, found: list[str]) -> None:
    assert messages(anthropic_name_violations(name)) == found


def test_the_first_party_api_takes_names_up_to_128_characters() -> None:
    assert anthropic_name_violations("x" * 100, max_length=128) == []
    assert anthropic_name_violations("x" * 129, max_length=128) != []
