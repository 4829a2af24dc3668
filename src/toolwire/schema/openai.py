"""JSON Schema made strict for OpenAI (Structured Outputs / ``strict: true`` tools).

OpenAI's strict mode wants every object closed (``additionalProperties: false``) and every
property required. An optional property is therefore made nullable and its instance path is
recorded in ``null_paths``: the null the model must now send is stripped before the call,
so the tool sees its argument left out, as its author meant. Only properties whose original
schema does not accept null are widened, so a null the author allowed is never stripped.

What strict mode cannot express (``not``, ``if``/``then``/``else``, open maps, arrays without
``items``, untyped values, recursion, ...) makes the conversion fail with a
[`StrictSchemaError`][] naming the reason; the tool is then declared with
``strict: false`` and its original schema.

The walker is shared: [`toolwire.schema.anthropic`][] subclasses it for Anthropic's strict tool
use, which keeps and describes other keywords and may leave optional properties optional.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolwire.errors import SchemaConversionError
from toolwire.schema._base import (
    Lowering,
    escape_pointer,
    json_type_of,
    short_json,
    shown,
)

__all__ = [
    "STRICT_DESCRIBED",
    "NullPath",
    "StrictLimits",
    "StrictLowering",
    "StrictSchemaError",
    "accepts_null",
    "strict_schema",
]

NullPath = tuple[str, ...]
"""An instance path: property names, ``"*"`` for every item of an array."""

_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
_REFUSED = {
    "not": "not",
    "if": "if/then/else",
    "then": "if/then/else",
    "else": "if/then/else",
    "dependentRequired": "dependentRequired",
    "dependentSchemas": "dependentSchemas",
    "dependencies": "dependencies",
    "patternProperties": "patternProperties",
    "unevaluatedProperties": "unevaluatedProperties",
    "unevaluatedItems": "unevaluatedItems",
    "propertyNames": "propertyNames",
    "prefixItems": "prefixItems",
    "contains": "contains",
    "minContains": "contains",
    "maxContains": "contains",
    "$dynamicRef": "$dynamicRef",
    "$recursiveRef": "$recursiveRef",
}
# Kept as they are (validated by the API in strict mode).
_KEPT = frozenset(
    {
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
        "title",
        "description",
    }
)
# Dropped into the description: they only narrow, and our validator still enforces them.
STRICT_DESCRIBED = frozenset(
    {
        "minLength",
        "maxLength",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "default",
        "examples",
        "contentMediaType",
        "contentEncoding",
    }
)


class StrictSchemaError(SchemaConversionError):
    """A schema a strict mode (OpenAI's, Anthropic's) cannot express; ``reason`` says why."""


@dataclass(frozen=True, slots=True)
class StrictLimits:
    """Limits on strict schemas; the defaults are OpenAI's documented ones."""

    properties: int = 5_000
    nesting: int = 10
    enum_values: int = 1_000
    string_budget: int = 120_000
    """Characters of property names, definition names, enum and const values."""
    large_enum: int = 250
    large_enum_budget: int = 15_000
    """Characters of one string enum's values when it has more than ``large_enum`` values."""
    nodes: int = 25_000
    """Schema nodes the conversion visits, references inlined (ours, not OpenAI's: a schema
    within OpenAI's limits has far fewer; references used many times over, level after level,
    would otherwise cost a hundred thousand visits per tool before being refused)."""


def accepts_null(schema: Mapping[str, Any]) -> bool:
    types = schema.get("type")
    if types == "null" or (isinstance(types, list) and "null" in types):
        return True
    if isinstance(schema.get("enum"), list) and None in schema["enum"]:
        return True
    if "const" in schema and schema["const"] is None:
        return True
    branches = schema.get("anyOf")
    return isinstance(branches, list) and any(
        isinstance(b, Mapping) and accepts_null(b) for b in branches
    )


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` widened to also accept null."""
    types = schema.get("type")
    if isinstance(types, str) and "anyOf" not in schema and "const" not in schema:
        widened = dict(schema, type=[types, "null"])
        if isinstance(schema.get("enum"), list):
            widened["enum"] = [*schema["enum"], None]
        return widened
    if isinstance(schema.get("anyOf"), list) and set(schema) <= {"anyOf", "description", "title"}:
        return dict(schema, anyOf=[*schema["anyOf"], {"type": "null"}])
    description = schema.get("description")
    wrapped: dict[str, Any] = {"anyOf": [schema, {"type": "null"}]}
    if isinstance(description, str):
        wrapped["description"] = description
    return wrapped


class StrictLowering(Lowering):
    """The strict lowering: OpenAI's rules here, a provider's own in a subclass (the keywords
    it keeps, describes and the formats it takes; ``keyword``, ``optional`` and ``required``
    for what depends on values)."""

    KEPT: frozenset[str] = _KEPT
    DESCRIBED: frozenset[str] = STRICT_DESCRIBED
    FORMATS: frozenset[str] = _FORMATS

    def __init__(self, root: Any, limits: StrictLimits) -> None:
        super().__init__(root)
        self.limits = limits
        self.null_paths: list[NullPath] = []
        self.properties = 0
        self.enum_values = 0
        self.budget = 0

    def refuse(self, reason: str, path: str) -> StrictSchemaError:
        return StrictSchemaError(reason, path=path)

    def run(self) -> dict[str, Any]:
        root = self.object_root()
        out: dict[str, Any] = self.convert(root, "#", (), 0, 0, ())
        if out.get("type") != "object":
            raise self.refuse("the root must be an object", "#")
        return out

    def spend_text(self, text: str) -> None:
        self.budget += len(text)
        if self.budget > self.limits.string_budget:
            raise self.refuse(
                f"names and enum values exceed {self.limits.string_budget} characters", "#"
            )

    def convert(
        self,
        node: Any,
        path: str,
        instance: NullPath,
        depth: int,
        objects: int,
        refs: tuple[str, ...],
    ) -> dict[str, Any]:
        self.visit(path, depth)
        if self._nodes > self.limits.nodes:
            raise self.refuse(
                f"more than {self.limits.nodes} schema nodes once references are inlined", path
            )
        if node is True or node == {}:
            raise self.refuse("a value of any type cannot be strict", path)
        if node is False:
            raise self.refuse("a schema that accepts nothing cannot be strict", path)
        if not isinstance(node, Mapping):
            raise self.refuse(f"a schema must be an object, not {type(node).__name__}", path)
        # Inlined references read a node's keywords every time; checked at the next visit.
        self._work += len(node)
        if "$ref" in node:
            ref = node["$ref"]
            if not isinstance(ref, str) or not ref.startswith("#"):
                raise self.refuse(f"non-local $ref {shown(ref)}", path)
            if ref in refs:
                raise self.refuse(f"recursive $ref {ref!r}", path)
            merged = self.merge_ref_siblings(node, path, depth)
            return self.convert(merged, path, instance, depth + 1, objects, (*refs, ref))
        if "allOf" in node:
            return self.convert(
                self.merge_all_of(node, path, depth), path, instance, depth + 1, objects, refs
            )
        for key in node:
            if key in _REFUSED:
                raise self.refuse(f"{_REFUSED[key]} is not supported in strict mode", path)

        types = self.normalize_types(node.get("type"), path)
        if types and len([t for t in types if t != "null"]) > 1:
            split = self.split_type_list(node, [t for t in types if t != "null"])
            if "null" in types:
                split["anyOf"] = [*split["anyOf"], {"type": "null"}]
            return self.convert(split, path, instance, depth + 1, objects, refs)

        out: dict[str, Any] = {}
        hints: list[str] = []
        if types:
            out["type"] = types[0] if len(types) == 1 else types
        union = node.get("anyOf", node.get("oneOf"))
        if union is not None:
            if not isinstance(union, list) or not union:
                raise self.refuse("anyOf must be a non-empty list", path)
            key = "anyOf" if "anyOf" in node else "oneOf"
            out["anyOf"] = [
                self.convert(branch, f"{path}/{key}/{i}", instance, depth + 1, objects, refs)
                for i, branch in enumerate(union)
            ]
        for key, value in node.items():
            self.keyword(key, value, out, hints)
        self._enum(node, out, path)
        kind = types[0] if types else None
        if kind == "object" or (kind is None and "properties" in node):
            self._object(node, out, path, instance, depth, objects + 1, refs)
        elif kind == "array" or (kind is None and "items" in node):
            self._array(node, out, path, instance, depth, objects, refs)
        elif not types and "anyOf" not in out and "enum" not in out and "const" not in out:
            raise self.refuse("an untyped value cannot be strict", path)
        if hints:
            out["description"] = self.describe(out.get("description"), hints)
        return out

    def keyword(self, key: str, value: Any, out: dict[str, Any], hints: list[str]) -> None:
        """Keep one keyword in ``out``, or describe it in ``hints`` (or leave it out)."""
        if key in self.KEPT:
            out[key] = value
        elif key == "format":
            if value.__class__ is str and value in self.FORMATS:
                out[key] = value
            else:
                shown_format = value if isinstance(value, str) else short_json(value)
                hints.append(f"format: {shown_format}")
        elif key in self.DESCRIBED and not (key == "default" and value is None):
            hints.append(f"{key}: {short_json(value)}")

    def optional(self, schema: dict[str, Any], instance: NullPath) -> dict[str, Any]:
        """An optional property's converted schema as declared: made nullable (its path
        recorded) unless it accepts null already, as every property is required."""
        if accepts_null(schema):
            return schema
        self.null_paths.append(instance)
        return _nullable(schema)

    def required(self, converted: Mapping[str, Any], required: set[str]) -> list[str]:
        """The object's ``required`` as declared: every property."""
        return list(converted)

    def _enum(self, node: Mapping[str, Any], out: dict[str, Any], path: str) -> None:
        if "enum" in node:
            values = node["enum"]
            if not isinstance(values, list) or not values:
                raise self.refuse("enum must be a non-empty list", path)
            if not all(
                json_type_of(v) in ("string", "integer", "number", "boolean", "null")
                for v in values
            ):
                raise self.refuse("enum values must be primitive", path)
            self.spend(len(values), path)
            self.enum_values += len(values)
            if self.enum_values > self.limits.enum_values:
                raise self.refuse(f"more than {self.limits.enum_values} enum values", path)
            strings = [v for v in values if isinstance(v, str)]
            length = sum(len(v) for v in strings)
            if len(strings) > self.limits.large_enum and length > self.limits.large_enum_budget:
                raise self.refuse(
                    f"an enum of {len(strings)} strings longer than "
                    f"{self.limits.large_enum_budget} characters",
                    path,
                )
            self.spend_text("".join(strings))
            out["enum"] = list(values)
        if "const" in node:
            if isinstance(node["const"], str):
                self.spend_text(node["const"])
            out["const"] = node["const"]

    def _object(
        self,
        node: Mapping[str, Any],
        out: dict[str, Any],
        path: str,
        instance: NullPath,
        depth: int,
        objects: int,
        refs: tuple[str, ...],
    ) -> None:
        if objects > self.limits.nesting:
            raise self.refuse(f"objects nested deeper than {self.limits.nesting} levels", path)
        additional = node.get("additionalProperties")
        if additional not in (None, False):
            raise self.refuse("an open map (additionalProperties) cannot be strict", path)
        props = node.get("properties") or {}
        if not isinstance(props, Mapping):
            raise self.refuse("properties must be an object", path)
        required = node.get("required")
        if isinstance(required, list):
            self.spend(len(required), path)
            required = {r for r in required if r.__class__ is str}  # other entries name nothing
        else:
            required = set()
        converted: dict[str, Any] = {}
        for name, sub in props.items():
            name = str(name)
            self.properties += 1
            if self.properties > self.limits.properties:
                raise self.refuse(f"more than {self.limits.properties} properties", path)
            self.spend_text(name)
            prop_path = f"{path}/properties/{escape_pointer(name)}"
            schema = self.convert(sub, prop_path, (*instance, name), depth + 1, objects, refs)
            if name not in required:
                schema = self.optional(schema, (*instance, name))
            converted[name] = schema
        out.update(
            type="object",
            properties=converted,
            required=self.required(converted, required),
            additionalProperties=False,
        )

    def _array(
        self,
        node: Mapping[str, Any],
        out: dict[str, Any],
        path: str,
        instance: NullPath,
        depth: int,
        objects: int,
        refs: tuple[str, ...],
    ) -> None:
        items = node.get("items")
        if items is None or isinstance(items, list):
            raise self.refuse("an array needs a single items schema", path)
        out["type"] = out.get("type", "array")
        out["items"] = self.convert(
            items, f"{path}/items", (*instance, "*"), depth + 1, objects, refs
        )


def strict_schema(
    schema: Any, *, limits: StrictLimits | None = None
) -> tuple[dict[str, Any], list[NullPath]]:
    """``schema`` made strict for OpenAI, and the paths where nulls must be stripped.

    Returns:
        The strict schema (the input is never modified) and the instance paths of the
        optional properties made nullable.

    Raises:
        StrictSchemaError: why the schema cannot be strict (send it with ``strict: false``).
    """
    conversion = StrictLowering(schema, limits or StrictLimits())
    try:
        strict = conversion.run()
    except StrictSchemaError:
        raise
    except SchemaConversionError as exc:
        raise StrictSchemaError(exc.reason, path=exc.path) from None
    return strict, conversion.null_paths
