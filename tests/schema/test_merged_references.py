"""References into what a lowering rebuilds, and the property every declaration keeps.

Anthropic and both OpenAI APIs take an object root without top-level ``anyOf``/``oneOf``/
``allOf``, so the top level is merged into one object (``toolwire.schema.anthropic``). A
``$ref`` into what the merge rebuilds (``#``, an alternative, or a property the alternatives
define too) is pointed at a copy of its original target under ``$defs``: the reference means
what it meant, and the tool is declared. The real case is VS Code's mssql extension's
``mssql_schema_designer`` (tests/data/mssql_schema_designer.json): its ``apply_edits``
alternative refers to the root's own ``payload.edits.items``, and the merge makes ``payload``
the ``allOf`` of the root's and the alternatives' definitions of it.

The property: a schema is declared to every provider in every mode, or refused with a
[`SchemaConversionError`][toolwire.SchemaConversionError] whose reason ``toolwire check``
reports for that provider; a declaration fits its SDK's types and its provider's rules, and
every local reference in it points somewhere. It is judged on schemas hypothesis-jsonschema
generates (roots, members and alternatives with ``$defs``, ``$ref``, ``allOf``, ``anyOf``,
``oneOf``; see [`schema_of_schemas`][]) and on the real corpus, where any refusal is a bug.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import types
from collections.abc import Callable, Iterator
from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import toolwire
from corpus import DATA, TOOLS, corpus_id
from metaschema import check_schema
from toolwire import SchemaConversionError, Tool
from toolwire.compat import check
from toolwire.providers import get_provider, provider_names
from toolwire.schema._base import NOWHERE, follow_pointer
from toolwire.schema.anthropic import to_anthropic_schema
from toolwire.schema.checks import anthropic_violations, openai_violations

hypothesis_jsonschema = pytest.importorskip("hypothesis_jsonschema")
anthropic_types = pytest.importorskip("anthropic.types")
chat_types = pytest.importorskip("openai.types.chat")
responses_types = pytest.importorskip("openai.types.responses")
genai_types = pytest.importorskip("google.genai.types")
interactions_types = pytest.importorskip("google.genai.interactions")

MSSQL = json.loads((DATA / "mssql_schema_designer.json").read_text(encoding="utf-8"))


def _modes(provider: str) -> list[dict[str, Any]]:
    """The options a provider is declared with here: strict and not, where it has the choice."""
    fields = {f.name for f in dataclasses.fields(get_provider(provider).Options)}
    return [{"strict": True}, {"strict": False}] if "strict" in fields else [{}]


MODES = [(provider, options) for provider in provider_names() for options in _modes(provider)]
MODE_IDS = [f"{p}-{'/'.join(f'{k}={v}' for k, v in o.items()) or 'default'}" for p, o in MODES]

_FILES_ALLOWED = pydantic.ConfigDict(arbitrary_types_allowed=True)
SDK_TOOLS: dict[str, pydantic.TypeAdapter[Any]] = {
    "anthropic": pydantic.TypeAdapter(list[anthropic_types.ToolParam]),
    "openai-chat": pydantic.TypeAdapter(list[chat_types.ChatCompletionFunctionToolParam]),
    "openai-responses": pydantic.TypeAdapter(list[responses_types.FunctionToolParam]),
    "gemini": pydantic.TypeAdapter(list[genai_types.Tool]),
    "gemini-interactions": pydantic.TypeAdapter(
        list[interactions_types.ToolParam], config=_FILES_ALLOWED
    ),
}
"""What each provider's SDK calls the request's tools."""

_SCHEMA_OF: dict[str, Callable[[Any], Any]] = {
    "anthropic": lambda entry: entry["input_schema"],
    "openai-chat": lambda entry: entry["function"]["parameters"],
    "openai-responses": lambda entry: entry["parameters"],
}
"""Where the declared JSON Schema is in a tool entry, for the providers that take it as is."""


def _strict(provider: str, entry: Any) -> bool:
    return bool((entry["function"] if provider == "openai-chat" else entry).get("strict"))


def _local_refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            yield ref
        for key, value in node.items():
            if key not in ("enum", "const", "default", "examples"):
                yield from _local_refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _local_refs(value)


def declared(tool: Tool, provider: str, options: dict[str, Any]) -> Any:
    """The tool as ``provider`` is sent it, checked against its SDK's types and, where the
    provider takes JSON Schema as it is, its rules; every local reference resolves."""
    listing = toolwire.tools([tool], provider, **options)
    SDK_TOOLS[provider].validate_python(listing.tools)
    if provider not in _SCHEMA_OF:
        return listing.tools[0]
    (entry,) = listing.tools
    schema = _SCHEMA_OF[provider](entry)
    if provider == "anthropic":
        assert anthropic_violations(schema, strict=_strict(provider, entry)) == []
    else:
        assert openai_violations(schema, strict=_strict(provider, entry)) == []
    check_schema(schema)
    for ref in _local_refs(schema):
        assert follow_pointer(schema, ref) is not NOWHERE, ref
    return schema


def declared_or_explained(tool: Tool, provider: str, options: dict[str, Any]) -> str | None:
    """Declare ``tool``; None when it is declared, else the reason, which ``toolwire check``
    must report for the same provider and options."""
    refusal = None
    try:
        declared(tool, provider, options)
    except SchemaConversionError as exc:
        refusal = exc
    (report,) = check([tool], [provider], options={provider: options} if options else None)
    (verdict,) = report.verdicts
    if refusal is not None:
        assert verdict.status == "rejected", verdict
        assert str(refusal) in verdict.notes, (str(refusal), verdict)
        return refusal.reason
    # Declared: check may still reject a schema the validator cannot compile (each call would
    # fail), never the declaration itself.
    if verdict.status == "rejected":
        assert any("cannot validate arguments" in note for note in verdict.notes), verdict
    return None


# -- the real case: mssql_schema_designer --------------------------------------------------------


def _mssql() -> Tool:
    return Tool(
        name=MSSQL["name"], description=MSSQL["description"], input_schema=MSSQL["inputSchema"]
    )


REF = "#/properties/payload/properties/edits/items"


def test_the_reference_stands_inside_an_alternative_the_merge_dissolves() -> None:
    schema = MSSQL["inputSchema"]
    fourth = schema["oneOf"][3]["properties"]["payload"]["properties"]["edits"]
    assert fourth["items"] == {"$ref": REF}
    assert follow_pointer(schema, REF)["oneOf"]  # the edits, one shape each


@pytest.mark.parametrize(("provider", "options"), MODES, ids=MODE_IDS)
def test_the_mssql_schema_designer_is_declared_to_every_provider(
    provider: str, options: dict[str, Any]
) -> None:
    tool = _mssql()
    before = copy.deepcopy(MSSQL["inputSchema"])
    assert declared_or_explained(tool, provider, options) is None
    assert tool.input_schema == before, "the input was mutated"
    (report,) = check([tool], [provider], options={provider: options} if options else None)
    assert report.verdicts[0].status == "converted"


def test_the_merged_schema_points_the_reference_at_a_copy_of_its_target() -> None:
    schema = MSSQL["inputSchema"]
    out, notes = to_anthropic_schema(schema)
    assert out["$defs"] == {"items": follow_pointer(schema, REF)}
    # payload: the root's definition, and the alternatives' (get_table's, apply_edits')
    root_payload, alternatives = out["properties"]["payload"]["allOf"]
    assert root_payload == schema["properties"]["payload"]  # nothing in it moved
    edits = alternatives["anyOf"][1]["properties"]["edits"]
    assert edits["items"] == {"$ref": "#/$defs/items"}
    assert {k: v for k, v in edits.items() if k != "items"} == {
        k: v
        for k, v in schema["oneOf"][3]["properties"]["payload"]["properties"]["edits"].items()
        if k != "items"
    }
    note = f"$ref {REF!r} pointed at a copy of its target, #/$defs/items: the merge rebuilt what"
    assert f"{note} it pointed to" in [n.message for n in notes]


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat", "openai-responses"])
def test_strict_mode_falls_back_for_its_own_reason_not_the_reference(provider: str) -> None:
    declaration = toolwire.tools([_mssql()], provider, strict=True).declaration
    (entry,) = declaration.entries.values()
    assert entry.strict is False
    assert entry.not_strict_because is not None
    assert "an untyped value cannot be strict" in entry.not_strict_because  # anyOf of required
    assert "$ref" not in entry.not_strict_because


ADD_TABLE = {"op": "add_table", "table": {"schema": "dbo", "name": "t"}}
VALID = [
    {"operation": "show", "connectionId": "c1"},
    {"operation": "get_overview"},
    {"operation": "get_table", "payload": {"table": {"schema": "dbo", "name": "t"}}},
    {"operation": "apply_edits", "payload": {"expectedVersion": "v1", "edits": [ADD_TABLE]}},
]
INVALID = [
    # not an edit: its op names no edit (each item is one of the edits' shapes)
    {"operation": "apply_edits", "payload": {"expectedVersion": "v1", "edits": [{"op": "x"}]}},
    # an edit of the right op with an unknown field (the edit shapes are closed)
    {
        "operation": "apply_edits",
        "payload": {"expectedVersion": "v1", "edits": [{**ADD_TABLE, "extra": 1}]},
    },
    {"operation": "apply_edits", "payload": {"expectedVersion": "v1", "edits": ["add_table"]}},
    {"operation": "drop_everything"},
    {"payload": {}},
]


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat", "openai-responses"])
def test_the_declared_schema_takes_what_the_tool_takes_and_refuses_bad_edits(
    provider: str,
) -> None:
    tool = _mssql()
    schema = declared(tool, provider, {"strict": False})
    validator = Draft202012Validator(schema)
    for arguments in VALID:
        assert tool.validate_arguments(arguments) == arguments
        assert validator.is_valid(arguments), arguments
    for arguments in INVALID:
        with pytest.raises(toolwire.InvalidArguments):
            tool.validate_arguments(arguments)
        assert not validator.is_valid(arguments), arguments


# -- one behaviour at a time ----------------------------------------------------------------------


def test_a_reference_into_another_alternative_is_kept() -> None:
    schema = {
        "oneOf": [
            {"properties": {"a": {"type": "string"}}},
            {"properties": {"b": {"$ref": "#/oneOf/0/properties/a"}}},
        ]
    }
    out, _ = to_anthropic_schema(schema)
    assert out["properties"] == {"a": {"type": "string"}, "b": {"$ref": "#/$defs/a"}}
    assert out["$defs"] == {"a": {"type": "string"}}
    validator = Draft202012Validator(out)
    assert validator.is_valid({"b": "x"})
    assert not validator.is_valid({"b": 1})  # as the original: b is a string


def test_a_reference_to_the_root_keeps_the_original_root_recursive() -> None:
    node = {
        "properties": {
            "kind": {"const": "node"},
            "children": {"type": "array", "items": {"$ref": "#"}},
        },
        "required": ["kind", "children"],
        "additionalProperties": False,
    }
    leaf = {
        "properties": {"kind": {"const": "leaf"}},
        "required": ["kind"],
        "additionalProperties": False,
    }
    schema = {"$defs": {"unused": {"type": "string"}}, "type": "object", "oneOf": [leaf, node]}
    out, _ = to_anthropic_schema(schema)
    root = out["$defs"]["root"]
    assert root["oneOf"][1]["properties"]["children"]["items"] == {"$ref": "#/$defs/root"}
    assert "$defs" not in root  # the definitions stay at the root
    assert out["$defs"]["unused"] == {"type": "string"}
    assert out["properties"]["children"]["items"] == {"$ref": "#/$defs/root"}
    original, merged = Draft202012Validator(schema), Draft202012Validator(out)
    tree = {"kind": "node", "children": [{"kind": "leaf"}, {"kind": "node", "children": []}]}
    assert original.is_valid(tree)
    assert merged.is_valid(tree)
    # A child is checked against the original root, not the merged (looser) one.
    bad_child = {"kind": "node", "children": [{"kind": "leaf", "children": []}]}
    assert not original.is_valid(bad_child)
    assert not merged.is_valid(bad_child)
    # OpenAI's strict mode takes no recursion: the tool is declared without it, and says why.
    tool = Tool(name="tree", input_schema=schema)
    (entry,) = toolwire.tools([tool], "openai-chat").declaration.entries.values()
    assert entry.strict is False
    assert "recursive $ref '#/$defs/root'" in (entry.not_strict_because or "")


def test_a_copy_takes_a_name_the_definitions_do_not_use() -> None:
    schema = {
        "$defs": {"a": {"type": "integer"}},
        "anyOf": [
            {"properties": {"a": {"type": "string"}, "n": {"$ref": "#/$defs/a"}}},
            {"properties": {"b": {"$ref": "#/anyOf/0/properties/a"}}},
        ],
    }
    out, _ = to_anthropic_schema(schema)
    assert out["$defs"] == {"a": {"type": "integer"}, "a_2": {"type": "string"}}
    assert out["properties"]["b"] == {"$ref": "#/$defs/a_2"}
    assert out["properties"]["n"] == {"$ref": "#/$defs/a"}  # untouched by the merge: as it was


def test_references_the_merge_leaves_alone_stay_as_they_are() -> None:
    shared = {"type": "string", "minLength": 1}
    schema = {
        "$defs": {"Name": shared},
        "properties": {"id": {"type": "integer"}, "name": {"$ref": "#/$defs/Name"}},
        "anyOf": [
            {"properties": {"alias": {"$ref": "#/properties/id"}}, "required": ["alias"]},
            {"required": ["name"]},
        ],
    }
    out, notes = to_anthropic_schema(schema)
    assert out["properties"]["alias"] == {"$ref": "#/properties/id"}
    assert out["$defs"] == {"Name": shared}
    assert not any("copy of its target" in n.message for n in notes)


def test_a_member_met_again_inside_alternatives_is_merged_there_too() -> None:
    # Found by the generated schemas: A merged as a member, then met again in an alternative
    # beside it, was refused as a cycle ("leads back to the alternatives it stands in").
    a = {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "integer"}}}
    schema = {
        "$defs": {"A": a},
        "allOf": [
            {"$ref": "#/$defs/A"},
            {"anyOf": [{"$ref": "#/$defs/A", "required": ["x"]}, {"required": ["y"]}]},
        ],
    }
    out, notes = to_anthropic_schema(schema)
    assert out["properties"] == a["properties"]
    assert "required" not in out  # x or y: neither alone
    assert "anyOf of 2 object schemas merged into one object" in [n.message for n in notes]
    original, merged = Draft202012Validator(schema), Draft202012Validator(out)
    for arguments in ({"x": "a"}, {"y": 1}, {"x": "a", "y": 2}):
        assert original.is_valid(arguments)
        assert merged.is_valid(arguments)
    assert not original.is_valid({"x": 1})
    assert not merged.is_valid({"x": 1})


@pytest.mark.parametrize(
    "schema",
    [
        {"oneOf": [{"$ref": "#"}]},
        {"$defs": {"A": {"anyOf": [{"$ref": "#/$defs/A"}, {}]}}, "$ref": "#/$defs/A"},
    ],
)
def test_a_reference_back_around_its_own_alternatives_is_still_a_cycle(
    schema: dict[str, Any],
) -> None:
    with pytest.raises(SchemaConversionError, match="leads back to the alternatives it stands in"):
        to_anthropic_schema(schema)


def test_a_reference_that_pointed_nowhere_is_refused_as_the_validator_refuses_it() -> None:
    schema = {"anyOf": [{"properties": {"a": {"$ref": "#/$defs/missing"}}}, {"required": ["b"]}]}
    with pytest.raises(SchemaConversionError) as info:
        to_anthropic_schema(schema)
    assert info.value.reason == "$ref '#/$defs/missing' points to nothing"
    assert info.value.path == "#/properties/a"
    with pytest.raises(toolwire.ConfigurationError, match="does not exist"):
        Tool(name="t", input_schema=schema).check_schema()


def test_a_reference_into_draft_7_tuple_items_follows_them_to_prefix_items() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "pair": {
                "type": "array",
                "items": [{"type": "string"}, {"type": "integer"}],
                "additionalItems": {"type": "boolean"},
            },
            "first": {"$ref": "#/properties/pair/items/0"},
            "rest": {"$ref": "#/properties/pair/additionalItems"},
        },
    }
    out, notes = to_anthropic_schema(schema)
    assert out["properties"]["first"] == {"$ref": "#/properties/pair/prefixItems/0"}
    assert out["properties"]["rest"] == {"$ref": "#/properties/pair/items"}
    assert (
        "$ref '#/properties/pair/items/0' written as '#/properties/pair/prefixItems/0', "
        "where it points"
    ) in [n.message for n in notes]
    validator = Draft202012Validator(out)
    assert validator.is_valid({"first": "x", "rest": True, "pair": ["a", 1, False]})
    assert not validator.is_valid({"first": 1})
    assert not validator.is_valid({"rest": "x"})
    tool = Tool(name="t", input_schema=schema)
    for provider, options in MODES:
        assert declared_or_explained(tool, provider, options) is None


@pytest.mark.parametrize("provider", ["gemini", "gemini-interactions"])
def test_gemini_declares_a_one_branch_root_union_beside_root_properties_within_its_rules(
    provider: str,
) -> None:
    # Found by the generated schemas below: it was declared as
    # {"type": "object", "properties": {}, "required": ["a"]}, which Gemini's rules refuse.
    schema = {"properties": {}, "anyOf": [{"properties": {"a": {}}, "required": ["a"]}]}
    (report,) = check([Tool(name="t", input_schema=schema)], [provider])
    assert report.verdicts[0].status != "rejected", report.verdicts[0]


# -- the property, on generated schemas ---------------------------------------------------------


def _compatible_many() -> None:
    """hypothesis-jsonschema 0.23.1 (the latest release) draws an object's properties with
    ``many(...).more()``, which Hypothesis replaced by iterating over ``many`` in a ``with``
    block: give it the old interface over the new one, while it needs it."""
    from hypothesis.internal.conjecture import utils as conjecture_utils
    from hypothesis_jsonschema import _from_schema

    if hasattr(conjecture_utils.many, "more") or ".more()" not in inspect.getsource(_from_schema):
        return
    end = object()

    class Many:
        def __init__(self, data: Any, **sizes: Any) -> None:
            self._many = conjecture_utils.many(data, **sizes)
            self._elements: Iterator[None] | None = None

        def more(self) -> bool:
            if self._elements is None:
                self._many.__enter__()
                self._elements = iter(self._many)
            if next(self._elements, end) is end:
                self._many.__exit__(None, None, None)
                return False
            return True

        def reject(self, why: str | None = None) -> None:
            self._many.reject(why)

    _from_schema.cu = types.SimpleNamespace(many=Many)  # type: ignore[attr-defined]


_compatible_many()

NAMES = ["a", "b", "c"]
DEFINITIONS = ["A", "B"]
TYPES = ["object", "string", "integer", "array", "null"]
PLACEHOLDER = "?"
"""A ``$ref`` generated as this points, once the schema is drawn, to one of its own places."""


def _named(values: dict[str, Any], names: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "propertyNames": {"enum": names},
        "additionalProperties": values,
        "maxProperties": 2,
    }


def _some(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items, "minItems": 1, "maxItems": 3}


def _keywords(maximum: int, **keywords: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": keywords,
        "additionalProperties": False,
        "maxProperties": maximum,
    }


_COMMON = {
    "$ref": {"const": PLACEHOLDER},
    "required": {"type": "array", "items": {"enum": NAMES}, "uniqueItems": True, "maxItems": 2},
    "description": {"const": "d"},
    "additionalProperties": {"const": False},
}


def _values(depth: int) -> dict[str, Any]:
    """Schemas of values: properties, items, definitions."""
    keywords = dict(_COMMON)
    keywords["type"] = {"anyOf": [{"enum": TYPES}, {"const": ["string", "null"]}]}
    keywords["enum"] = {"const": ["x", 1]}
    if depth:
        inner = _values(depth - 1)
        keywords.update(properties=_named(inner, NAMES), items=inner, anyOf=_some(inner))
    return _keywords(3, **keywords)


def _objects(depth: int, values: dict[str, Any]) -> dict[str, Any]:
    """Schemas of objects: the root, its members and its alternatives."""
    keywords = dict(_COMMON)
    keywords["type"] = {"const": "object"}
    keywords["properties"] = _named(values, NAMES)
    if depth:
        inner = _objects(depth - 1, values)
        keywords.update(allOf=_some(inner), anyOf=_some(inner), oneOf=_some(inner))
    return _keywords(4, **keywords)


def schema_of_schemas(depth: int = 2) -> dict[str, Any]:
    """The JSON Schema of the input schemas generated here: an object root with properties,
    ``$defs``, and members and alternatives (``allOf``, ``anyOf``, ``oneOf``) nested
    ``depth`` levels, themselves objects with properties; a ``$ref`` anywhere. Not recursive
    (hypothesis-jsonschema resolves no recursive reference, so JSON Schema's own
    meta-schemas are out of its reach): each level is spelled out."""
    values = _values(depth - 1)
    root = _objects(depth, values)
    root["properties"]["$defs"] = _named(values, DEFINITIONS)
    root["maxProperties"] = 5
    return root


_IN_NAMES = ("properties", "$defs")
_IN_ONE = ("items",)
_IN_MANY = ("allOf", "anyOf", "oneOf")


def _children(node: dict[str, Any], path: str) -> Iterator[tuple[Any, str]]:
    for key in _IN_NAMES:
        for name, sub in (node.get(key) or {}).items():
            yield sub, f"{path}/{key}/{name}"
    for key in _IN_ONE:
        if key in node:
            yield node[key], f"{path}/{key}"
    for key in _IN_MANY:
        for i, sub in enumerate(node.get(key) or ()):
            yield sub, f"{path}/{key}/{i}"


def _places(node: Any, path: str = "#") -> Iterator[str]:
    """The JSON pointer of every schema in ``node``."""
    if isinstance(node, dict):
        yield path
        for sub, sub_path in _children(node, path):
            yield from _places(sub, sub_path)


def _progresses(target: str, place: str) -> bool:
    """Whether a reference at ``place`` to ``target`` moves into the instance: a target
    that is not around the reference, or one whose way down to it passes a property or an
    item (recursion, as a tree's children). A schema that is only its own alternative or
    member again (``{"anyOf": [{"$ref": "#"}]}``) means nothing: it is not generated."""
    if place != target and not place.startswith(f"{target}/"):
        return True
    below = place[len(target) :]
    return "/properties/" in below or "/items" in below


def _pointed(node: Any, path: str, places: list[str], draw: st.DrawFn) -> Any:
    """``node`` with each placeholder ``$ref`` pointed at a place drawn among ``places``
    (dropped where none fits)."""
    if not isinstance(node, dict):
        return node
    out = dict(node)
    for key in _IN_NAMES:
        if key in out:
            out[key] = {
                name: _pointed(sub, f"{path}/{key}/{name}", places, draw)
                for name, sub in out[key].items()
            }
    for key in _IN_ONE:
        if key in out:
            out[key] = _pointed(out[key], f"{path}/{key}", places, draw)
    for key in _IN_MANY:
        if key in out:
            out[key] = [
                _pointed(sub, f"{path}/{key}/{i}", places, draw) for i, sub in enumerate(out[key])
            ]
    if out.get("$ref") == PLACEHOLDER:
        fits = [target for target in places if _progresses(target, path)]
        if fits:
            out["$ref"] = draw(st.sampled_from(fits))
        else:
            del out["$ref"]
    return out


_SKELETONS = hypothesis_jsonschema.from_schema(schema_of_schemas())


@st.composite
def input_schemas(draw: st.DrawFn) -> dict[str, Any]:
    """A generated input schema whose references each point to one of its own schemas (the
    root, a definition, a member, an alternative, a property at any depth)."""
    skeleton = draw(_SKELETONS)
    schema: dict[str, Any] = _pointed(skeleton, "#", list(_places(skeleton)), draw)
    return schema


def test_the_generator_makes_schemas_of_every_kind_the_merge_meets() -> None:
    assert hypothesis_jsonschema.from_schema(schema_of_schemas(1)) is not None
    keys = set(schema_of_schemas()["properties"])
    assert {"$defs", "$ref", "allOf", "anyOf", "oneOf", "properties", "required"} <= keys


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(input_schemas())
def test_any_generated_schema_is_declared_or_refused_as_check_reports(schema: Any) -> None:
    tool = Tool(name="generated", input_schema=schema)
    before = copy.deepcopy(schema)
    for provider, options in MODES:
        declared_or_explained(tool, provider, options)
    assert schema == before, "the input was mutated"


# -- the property, on the real corpus -------------------------------------------------------------

CORPUS = [pytest.param(r, id=corpus_id(r)) for r in [*TOOLS, MSSQL]]


@pytest.mark.parametrize("record", CORPUS)
def test_every_corpus_tool_is_declared_to_every_provider_in_every_mode(
    record: dict[str, Any],
) -> None:
    tool = Tool(name="corpus_tool", input_schema=record["inputSchema"])
    refused = {
        f"{provider} {options}": reason
        for provider, options in MODES
        if (reason := declared_or_explained(tool, provider, options)) is not None
    }
    assert refused == {}  # a real tool every provider must take
