"""JSON Schema lowered for Gemini function declarations.

Two targets (notes in the project's research on the Gemini API's rules):

- ``parametersJsonSchema`` ([`to_gemini_json_schema`][]): JSON Schema limited to the keywords
  Gemini documents (``$defs``, ``$ref``, ``type``, ``format``, ``description``, ``enum``,
  ``items``, ``prefixItems``, ``minItems``, ``maxItems``, ``minimum``, ``maximum``, ``anyOf``,
  ``properties``, ``additionalProperties``, ``required``, ``propertyOrdering``).
- ``parameters`` ([`to_gemini_openapi_schema`][]): the OpenAPI 3.0 subset of Gemini's
  ``Schema`` message, for the Gemini API or Vertex AI (``backend="vertex"``), which also takes
  ``additionalProperties`` and ``defs``/``ref`` but wants ``anyOf`` alone in its node.

What a target cannot express is dropped and, where it helps the model, described in the node's
description (``default``, ``pattern``, lengths, non-string enums, formats). Nothing is lost for
checking: calls are validated against the original schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolwire.errors import SchemaConversionError
from toolwire.schema._base import (
    MAX_DEPTH,
    MAX_NODES,
    ConversionNote,
    follow_pointer,
)
from toolwire.schema._gemini_common import Backend
from toolwire.schema._gemini_json import JsonLowering
from toolwire.schema._gemini_openapi import OpenApiLowering

__all__ = [
    "Backend",
    "coerce_whole_floats",
    "inline_gemini_defs",
    "to_gemini_json_schema",
    "to_gemini_openapi_schema",
]


def to_gemini_json_schema(schema: Any) -> tuple[dict[str, Any], list[ConversionNote]]:
    """Lower ``schema`` for ``FunctionDeclaration.parametersJsonSchema``.

    Returns:
        The new schema (the input is never modified) and notes on what was dropped or
        rewritten.

    Raises:
        SchemaConversionError: for a schema that is not an object, a reference that is not
            local or points to nothing, or nesting beyond the bounds.
    """
    lowering = JsonLowering(schema)
    return lowering.run(), lowering.notes


def to_gemini_openapi_schema(
    schema: Any, *, backend: Backend = "gemini"
) -> tuple[dict[str, Any], list[ConversionNote]]:
    """Lower ``schema`` for ``FunctionDeclaration.parameters`` (the OpenAPI 3.0 subset).

    References are inlined; a recursive one is inlined twice along a path and then cut, with a
    note in the description (on Vertex it becomes a ``ref`` into the root ``defs``). Type
    lists and nullable unions become ``nullable``, ``oneOf`` becomes ``anyOf``, ``allOf`` is
    merged, non-string enums are described rather than stringified, every array has ``items``
    and ``required`` names only declared properties.

    Returns:
        The new schema (the input is never modified) and notes on what was dropped or
        rewritten.

    Raises:
        SchemaConversionError: for a schema that is not an object, a local reference that
            points to nothing, or nesting beyond the bounds.
    """
    if backend not in ("gemini", "vertex"):
        raise ValueError(f"backend must be 'gemini' or 'vertex', not {backend!r}")
    lowering = OpenApiLowering(schema, backend)
    return lowering.run(), lowering.notes


def inline_gemini_defs(schema: Mapping[str, Any], *, unroll: int = 2) -> dict[str, Any]:
    """A ``parametersJsonSchema`` (from [`to_gemini_json_schema`][]) with its ``$defs``
    references inlined, for consumers that take no references (genai's AFC signatures).

    A recursive definition is inlined ``unroll`` times along a path, then replaced by an
    object with a note.

    Raises:
        SchemaConversionError: when the inlined schema would have more than ``MAX_NODES``
            nodes (definitions that each use the next several times grow exponentially) or
            be nested deeper than twice ``MAX_DEPTH``.
    """
    defs = schema.get("$defs") or {}
    made = 0

    def walk(node: Any, stack: tuple[str, ...], depth: int) -> Any:
        nonlocal made
        made += 1
        if made > MAX_NODES:
            raise SchemaConversionError(
                f"inlining the definitions would make more than {MAX_NODES} nodes"
            )
        if depth > 2 * MAX_DEPTH:
            raise SchemaConversionError(
                f"inlining the definitions would nest deeper than {2 * MAX_DEPTH} levels"
            )
        if isinstance(node, list):
            return [walk(item, stack, depth + 1) for item in node]
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref[len("#/$defs/") :]
            if stack.count(name) >= unroll or name not in defs:
                return {
                    "type": "object",
                    "description": "(recursive structure; not described further)",
                }
            return walk(defs[name], (*stack, name), depth + 1)
        return {
            key: (
                {k: walk(v, stack, depth + 1) for k, v in value.items()}
                if key == "properties" and isinstance(value, Mapping)
                else walk(value, stack, depth + 1)
            )
            for key, value in node.items()
            if key != "$defs"
        }

    return walk(schema, (), 0)  # type: ignore[no-any-return]


# -- whole-number floats ---------------------------------------------------------------------------

_COERCE_DEPTH = 32
"""Nesting levels of arguments (and of unions in the schema) the coercion looks into."""
_COERCE_BUDGET = 10_000
"""Distinct schema nodes one coercion may look at; past that, nothing is coerced."""
_REF_HOPS = 8


class _CoercionBudget(Exception):
    """The coercion looked at too much of the schema: it gives up, changing nothing."""


class _Coercion:
    """One coercion of one call's arguments. What each schema node wants, and where each
    reference leads, is decided once (memoized by identity): unions that refer back to
    themselves cost one visit each, and many arguments under one reference follow it once."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.left = _COERCE_BUDGET
        self.wants: dict[int, bool] = {}
        # id -> (the node, what it leads to); the node is kept so that its id stays its own.
        self.targets: dict[int, tuple[Any, Any]] = {}

    def deref(self, schema: Any) -> Any:
        """``schema`` with a short chain of local ``$ref``s followed (None where it dangles)."""
        if not (isinstance(schema, Mapping) and "$ref" in schema):
            return schema
        known = self.targets.get(id(schema))
        if known is not None:
            return known[1]
        target = schema
        for _ in range(_REF_HOPS):
            if not (isinstance(target, Mapping) and isinstance(target.get("$ref"), str)):
                break
            target = follow_pointer(self.root, target["$ref"], None)
        self.targets[id(schema)] = (schema, target)
        return target

    def wants_integer(self, schema: Any, depth: int = 0) -> bool:
        known = self.wants.get(id(schema))
        if known is not None:
            return known
        if depth > _COERCE_DEPTH:
            return False
        target = self.deref(schema)  # references to one node share its decision
        known = self.wants.get(id(target))
        if known is None:
            self.left -= 1
            if self.left < 0:
                raise _CoercionBudget
            # A branch that refers back to this node (a cycle) adds nothing while it is decided.
            self.wants[id(target)] = False
            known = isinstance(target, Mapping) and self._decide(target, depth)
            self.wants[id(target)] = known
        self.wants[id(schema)] = known
        return known

    def _decide(self, schema: Mapping[str, Any], depth: int) -> bool:
        types = schema.get("type")
        types = [types] if isinstance(types, str) else (types if isinstance(types, list) else [])
        types = [t.lower() for t in types if isinstance(t, str)]
        if "integer" in types and "number" not in types:
            return True
        branches = [
            b for k in ("anyOf", "oneOf") if isinstance(schema.get(k), list) for b in schema[k]
        ]
        return (
            bool(branches)
            and not any(isinstance(b, Mapping) and b.get("type") == "number" for b in branches)
            and any(self.wants_integer(b, depth + 1) for b in branches)
        )

    def subschema(self, schema: Any, key: str) -> Any:
        schema = self.deref(schema)
        return schema.get(key) if isinstance(schema, Mapping) else None

    def coerce(self, value: Any, schema: Any, depth: int) -> Any:
        if depth > _COERCE_DEPTH or schema is None:
            return value
        if isinstance(value, float):
            return int(value) if value.is_integer() and self.wants_integer(schema) else value
        if isinstance(value, dict):
            props = self.subschema(schema, "properties")
            props = props if isinstance(props, Mapping) else {}
            extra = self.subschema(schema, "additionalProperties")
            return {
                key: self.coerce(item, props.get(key, extra), depth + 1)
                if isinstance(item, (float, dict, list))
                else item
                for key, item in value.items()
            }
        if isinstance(value, list):
            items = self.subschema(schema, "items")
            if isinstance(items, Mapping):
                return [self.coerce(v, items, depth + 1) for v in value]
        return value


def coerce_whole_floats(arguments: dict[str, Any], schema: Any) -> dict[str, Any]:
    """``arguments`` with each whole-number float (``3.0``) turned into an int where ``schema``
    wants an integer: Gemini sends every number as a float (protobuf ``Struct``).

    Nothing else changes; containers are copied, never mutated. The work is bounded: each
    schema node is looked at once, at most ``_COERCE_BUDGET`` of them; past that the arguments
    are returned as they are (the validator still decides; JSON Schema counts ``3.0`` as an
    integer).
    """
    try:
        coerced: dict[str, Any] = _Coercion(schema).coerce(arguments, schema, 0)
    except _CoercionBudget:
        return arguments
    return coerced
