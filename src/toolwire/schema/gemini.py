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
from typing import Any, Literal

from toolwire._text import clean_description
from toolwire.errors import SchemaConversionError
from toolwire.schema._base import (
    ANNOTATIONS,
    ANNOUNCED_DROPS,
    COUNT_KEYWORDS,
    JSON_TYPES,
    MAX_DEPTH,
    MAX_NODES,
    MAX_WORK,
    ConversionNote,
    Lowering,
    UniqueValues,
    escape_pointer,
    follow_pointer,
    is_count,
    is_number,
    json_type_of,
    short_json,
    shown,
)

__all__ = [
    "Backend",
    "coerce_whole_floats",
    "inline_gemini_defs",
    "to_gemini_json_schema",
    "to_gemini_openapi_schema",
]

Backend = Literal["gemini", "vertex"]

# Constraints the JSON target does not keep (the OpenAPI target keeps some per type):
# described for the model, still checked by the validator against the original schema.
_DESCRIBED = frozenset(
    {
        "pattern",
        "minLength",
        "maxLength",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minProperties",
        "maxProperties",
        "uniqueItems",
    }
)

_STRING_ENUM_FORMATS = frozenset({"enum", "date-time"})
_OPENAPI_FORMATS: Mapping[str, frozenset[str]] = {
    "STRING": _STRING_ENUM_FORMATS,
    "NUMBER": frozenset({"float", "double"}),
    "INTEGER": frozenset({"int32", "int64"}),
}


def _is_extension(key: Any) -> bool:
    """An ``x-`` keyword: a vendor's, dropped without a note."""
    return key.__class__ is str and key.startswith("x-")


def _enum_hint(values: list[Any]) -> str:
    return (
        "allowed values: "
        + ", ".join(short_json(v) for v in values[:50])
        + (", ..." if len(values) > 50 else "")
    )


class _JsonLowering(Lowering):
    """JSON Schema → the subset ``parametersJsonSchema`` documents."""

    def __init__(self, root: Any) -> None:
        super().__init__(root)
        self.defs: dict[str, Any] = {}
        self._pending: list[tuple[str, str]] = []
        self._inlined: dict[str, Any] = {}
        self._inlining: set[str] = set()
        self._copied = 0
        self._sizes: dict[str, int] = {}

    def run(self) -> dict[str, Any]:
        out: dict[str, Any] = self.lower(self.object_root(), "#", 0)
        while self._pending:  # definitions, lowered once each, outside the recursion
            pointer, name = self._pending.pop()
            target = self.resolve(pointer, pointer)
            self.defs[name] = self.lower(target, pointer, 1) or {}
        if self.defs:
            out["$defs"] = {name: self.defs[name] for name in sorted(self.defs)}
        return out

    def def_ref(self, ref: str, path: str) -> dict[str, Any]:
        """``{"$ref": "#/$defs/<name>"}`` for any local reference, hoisting its target."""
        self.resolve(ref, path)  # fail at the referring node when it is malformed or dangles
        name, new = self.def_name(ref)
        if new:
            self._pending.append((ref, name))
        return {"$ref": f"#/$defs/{name}"}

    def _inline_with_description(
        self, node: Mapping[str, Any], path: str, depth: int
    ) -> dict[str, Any] | None:
        """``{"$ref": X, "description": d}`` as the lowered target with ``d`` as description.

        The commonest sibling; the target is lowered once and copied shallowly wherever it is
        used this way. None when the target is itself a bare reference (the caller merges).
        """
        ref = node["$ref"]
        lowered = self._inlined.get(ref)
        if lowered is not None:
            # Each use is a copy in the JSON sent, and a target may inline others in turn:
            # past a budget of copied nodes, the rest refer to the definition instead.
            self._copied += self._sizes[ref]
        if ref in self._inlining or self._copied > _INLINE_BUDGET:
            return {
                "anyOf": [self.def_ref(ref, path)],
                "description": self.describe(node["description"], []),
            }
        if lowered is None:
            # Its size as sent: the nodes lowered for it, and the copies it made in turn.
            before = self._nodes + self._copied
            self._inlining.add(ref)
            try:
                target = self.merge_ref_siblings({"$ref": ref}, path, depth)
                lowered = self.lower(target, path, depth + 1)
            finally:
                self._inlining.discard(ref)
            self._inlined[ref] = lowered
            self._sizes[ref] = self._nodes + self._copied - before
        if not isinstance(lowered, dict) or "$ref" in lowered:
            return None
        out = dict(lowered)
        description = self.describe(node["description"], [])
        if description:
            out["description"] = description
        return out

    def lower(self, node: Any, path: str, depth: int) -> Any:
        """The lowered node, or None for a schema nothing satisfies (``false``)."""
        # The hot path of every conversion: plain dicts with a single type, no references.
        # (Lowering.visit, inlined.)
        self._nodes += 1
        if depth > MAX_DEPTH or self._nodes > MAX_NODES:
            self.visit(path, depth)  # raises the right error
        if type(node) is not dict:
            if node is True:
                return {}
            if node is False:
                return None
            if isinstance(node, str) and node.lower() in JSON_TYPES:
                return {"type": node.lower()}  # shorthand some servers publish
            if not isinstance(node, Mapping):
                raise SchemaConversionError(
                    f"a schema must be an object or a boolean, not {type(node).__name__}",
                    path=path,
                )
            node = dict(node)

        if node.keys() <= _LEAF_KEYS:  # the commonest node: a typed, described leaf
            t = node.get("type")
            if t.__class__ is str and t in JSON_TYPES:
                leaf: dict[str, Any] = {"type": t}
                text = node.get("description")
                if text.__class__ is str and text:
                    if not (len(text) < 1024 and text.isascii() and text.isprintable()):
                        text = clean_description(text)
                    if text:
                        leaf["description"] = text
                return leaf

        if "$ref" in node:
            return self._lower_ref(node, path, depth)
        if "allOf" in node:
            return self.lower(self.merge_all_of(node, path, depth), path, depth + 1)

        out: dict[str, Any] = {}
        t = node.get("type")
        if not (t.__class__ is str and t in JSON_TYPES) or "nullable" in node:
            types = self.normalize_types(t, path)
            if node.get("nullable") is True and types:  # OpenAPI spelling
                types.append("null")
            if types and len(types) > 1:
                return self.lower(self.split_type_list(node, types), path, depth + 1)
            t = types[0] if types else None
        if t is not None:
            out["type"] = t

        # A node inlined under many references is read every time (MAX_WORK, inlined).
        self._work += len(node)
        if self._work > MAX_WORK:
            self.spend(0, path)  # raises the right error
        hints: list[str] = []
        for key, value in node.items():
            action = _JSON_ACTIONS.get(key)
            if action is None:
                if not _is_extension(key):
                    self.note(path, f"unknown keyword {shown(key)} dropped")
            elif action == _SKIP:
                continue
            elif action == _PROPERTIES:
                self._properties(out, value, path, depth)
            elif action == _ITEMS:
                if isinstance(value, list):  # draft-4 tuple form
                    out["prefixItems"] = self._each(value, f"{path}/items", depth)
                else:
                    lowered = self.lower(value, f"{path}/items", depth + 1)
                    if lowered is None:
                        out["maxItems"] = 0
                    else:
                        out["items"] = lowered
            elif action == _PREFIX_ITEMS:
                if isinstance(value, list):
                    out["prefixItems"] = self._each(value, f"{path}/prefixItems", depth)
            elif action == _ADDITIONAL_ITEMS:
                if isinstance(node.get("items"), list) or "prefixItems" in node:
                    lowered = self.lower(value, f"{path}/additionalItems", depth + 1)
                    if lowered is not None:
                        out["items"] = lowered
            elif action == _ADDITIONAL_PROPERTIES:
                if isinstance(value, bool):
                    out["additionalProperties"] = value
                else:
                    lowered = self.lower(value, f"{path}/additionalProperties", depth + 1)
                    out["additionalProperties"] = False if lowered is None else lowered
            elif action == _ANY_OF:
                self._any_of(out, value, f"{path}/{key}", depth)
            elif action == _COUNT:
                if is_count(value):
                    out[key] = value
                else:
                    self.note(path, f"{key} {shown(value)} is not a non-negative integer; dropped")
            elif action == _BOUND:
                if is_number(value):
                    out[key] = value
                else:
                    self.note(path, f"{key} {shown(value)} is not a number; dropped")
            elif action == _FORMAT:
                if isinstance(value, str):
                    out["format"] = value
            elif action == _ORDERING:
                if isinstance(value, list):
                    self.spend(len(value), path)
                    if all(isinstance(v, str) for v in value):
                        out["propertyOrdering"] = value
            elif action == _DEFAULT:
                if value is not None:  # "default: null" tells the model nothing
                    hints.append(f"default: {short_json(value)}")
            elif action == _DESCRIBE:
                self.describe_constraint(key, value, path, hints)
            else:  # _DROP
                self.note(path, f"{key} dropped (not supported by Gemini)")

        nullable = ("enum" in node or "const" in node) and self._enum(out, node, path, hints)
        if "properties" in out:
            required = self.required_within(node.get("required"), out["properties"], path)
            if required:
                out["required"] = required
        if nullable:
            out = {"anyOf": [out, {"type": "null"}]}
        description = node.get("description")
        if hints:
            description = self.describe(description, hints)
        elif description.__class__ is not str:
            description = None
        elif not (len(description) < 1024 and description.isascii() and description.isprintable()):
            description = clean_description(description)  # else nothing to clean or cap
        if description:
            out["description"] = description
        return out

    def _lower_ref(self, node: dict[str, Any], path: str, depth: int) -> Any:
        if self.is_external(node["$ref"], path):
            node = {k: v for k, v in node.items() if k != "$ref"}
            return self.lower(node, path, depth + 1)
        siblings = [
            k for k in node if not ((k.__class__ is str and k.startswith("$")) or k in ANNOTATIONS)
        ]
        if not siblings:
            return self.def_ref(node["$ref"], path)
        if siblings == ["description"]:
            inlined = self._inline_with_description(node, path, depth)
            if inlined is not None:
                return inlined
        # Gemini allows nothing beside $ref: inline the target under its siblings.
        return self.lower(self.merge_ref_siblings(node, path, depth), path, depth + 1)

    def _properties(self, out: dict[str, Any], value: Any, path: str, depth: int) -> None:
        if not isinstance(value, Mapping):
            self.note(path, "properties is not an object; dropped")
            return
        props = {}
        base = path + "/properties/"
        for name, sub in value.items():
            name = str(name)
            segment = escape_pointer(name) if "~" in name or "/" in name else name
            lowered = self.lower(sub, base + segment, depth + 1)
            if lowered is None:
                self.note(path, f"property {name!r} accepts no value; dropped")
                continue
            props[name] = lowered
        out["properties"] = props

    def _each(self, values: list[Any], path: str, depth: int) -> list[Any]:
        return [self.lower(v, f"{path}/{i}", depth + 1) or {} for i, v in enumerate(values)]

    def _enum(
        self, out: dict[str, Any], node: Mapping[str, Any], path: str, hints: list[str]
    ) -> bool:
        """``enum``/``const`` as Gemini takes them: strings or numbers, typed. Returns True
        when the enum allowed null, which the caller turns into an ``anyOf`` with null."""
        if "const" in node:
            values = [node["const"]]
        elif "enum" in node:
            values = node["enum"]
            if not isinstance(values, list) or not values:
                self.note(path, "enum is not a non-empty list; dropped")
                return False
        else:
            return False
        self.spend(len(values), path)
        if all(v.__class__ is str for v in values):  # the common case
            out["enum"] = list(dict.fromkeys(values))
            if "type" not in out and "anyOf" not in out:
                out["type"] = "string"
            return False
        kinds = {json_type_of(v) for v in values}
        nullable = "null" in kinds and len(kinds) > 1
        if nullable:
            values = [v for v in values if v is not None]
            kinds.discard("null")
        if kinds == {"string"} or kinds <= {"integer", "number"}:
            out["enum"] = list(dict.fromkeys(values))
            if "type" not in out and "anyOf" not in out:
                out["type"] = (
                    "string"
                    if kinds == {"string"}
                    else ("integer" if kinds == {"integer"} else "number")
                )
            return nullable
        if kinds == {"null"}:
            out["type"] = "null"
            return False
        if kinds == {"boolean"}:
            out.setdefault("type", "boolean")
        hints.append(_enum_hint(values))
        self.note(path, "enum of booleans, mixed or non-scalar values moved into the description")
        return nullable

    def _any_of(self, out: dict[str, Any], value: Any, path: str, depth: int) -> None:
        if not isinstance(value, list):
            self.note(path, "not a list; dropped")
            return
        branches = [self.lower(b, f"{path}/{i}", depth + 1) for i, b in enumerate(value)]
        branches = [b for b in branches if b is not None]
        if not branches:
            return
        if "anyOf" in out:  # both anyOf and oneOf: keep the first, the validator has both
            self.note(path, "dropped: the node already has anyOf")
            return
        if len(branches) == 1 and "$ref" not in branches[0]:
            for key, sub in branches[0].items():
                out.setdefault(key, sub)
            return
        out["anyOf"] = branches


# What the JSON lowering does with a keyword. Plain ints: this dispatch runs for every keyword
# of every node, and module-level ints are the cheapest thing to compare against.
(
    _SKIP,
    _PROPERTIES,
    _ITEMS,
    _PREFIX_ITEMS,
    _ADDITIONAL_ITEMS,
    _ADDITIONAL_PROPERTIES,
    _ANY_OF,
    _COUNT,
    _BOUND,
    _FORMAT,
    _ORDERING,
    _DEFAULT,
    _DESCRIBE,
    _DROP,
) = range(14)


# Annotations only: a node with these keys and a single type lowers to type + description.
_LEAF_KEYS = frozenset({"type", "description", "title", "examples", "$comment", "deprecated"})

# One lookup per keyword; keywords read outside the loop (type, enum, required, ...) skip.
_JSON_ACTIONS: dict[str, int] = {
    **dict.fromkeys(ANNOTATIONS, _SKIP),
    **dict.fromkeys(
        (
            "type",
            "nullable",
            "enum",
            "const",
            "description",
            "required",
            "$ref",
            "allOf",
            "$defs",
            "definitions",
        ),
        _SKIP,
    ),
    **dict.fromkeys(ANNOUNCED_DROPS, _DROP),
    **dict.fromkeys(_DESCRIBED, _DESCRIBE),
    "properties": _PROPERTIES,
    "items": _ITEMS,
    "prefixItems": _PREFIX_ITEMS,
    "additionalItems": _ADDITIONAL_ITEMS,
    "additionalProperties": _ADDITIONAL_PROPERTIES,
    "anyOf": _ANY_OF,
    "oneOf": _ANY_OF,
    "minItems": _COUNT,
    "maxItems": _COUNT,
    "minimum": _BOUND,
    "maximum": _BOUND,
    "format": _FORMAT,
    "propertyOrdering": _ORDERING,
    "default": _DEFAULT,
}


_OPENAPI_TYPE = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "object": "OBJECT",
    "array": "ARRAY",
    "null": "NULL",
}
# Which OpenAPI keywords each type may carry; the API rejects the others on that type.
_OPENAPI_TYPE_KEYWORDS: Mapping[str, frozenset[str]] = {
    "STRING": frozenset({"enum", "format", "minLength", "maxLength", "pattern"}),
    "NUMBER": frozenset({"format", "minimum", "maximum"}),
    "INTEGER": frozenset({"format", "minimum", "maximum"}),
    "BOOLEAN": frozenset(),
    "NULL": frozenset(),
    "ARRAY": frozenset({"items", "minItems", "maxItems"}),
    "OBJECT": frozenset(
        {
            "properties",
            "required",
            "propertyOrdering",
            "minProperties",
            "maxProperties",
            "additionalProperties",
        }
    ),
}
_RECURSION_UNROLL = 2
"""How many times a recursive definition is inlined along one path before it is cut."""
_INLINE_BUDGET = 5_000
"""Output nodes after which further references are cut rather than inlined."""


class _OpenApiLowering(Lowering):
    """JSON Schema → the OpenAPI 3.0 subset of Gemini's ``Schema`` (``parameters``)."""

    def __init__(self, root: Any, backend: Backend) -> None:
        super().__init__(root)
        self.vertex = backend == "vertex"
        self.defs: dict[str, Any] = {}
        self._out_nodes = 0

    def run(self) -> dict[str, Any]:
        out: dict[str, Any] = self.lower(self.object_root(), "#", 0, ())
        out.setdefault("properties", {})
        if self.defs:
            out["defs"] = {name: self.defs[name] for name in sorted(self.defs)}
        return out

    def lower(self, node: Any, path: str, depth: int, refs: tuple[str, ...] = ()) -> Any:
        """The lowered node, or None for a schema nothing satisfies. ``refs`` holds the
        references being inlined along this path, to cut recursion."""
        self.visit(path, depth)
        self._out_nodes += 1
        if node is True or (isinstance(node, Mapping) and not node):
            return {"type": "STRING", "description": "any value"}
        if node is False:
            return None
        if isinstance(node, str) and node.lower() in _OPENAPI_TYPE:
            return {"type": _OPENAPI_TYPE[node.lower()]}
        if not isinstance(node, Mapping):
            raise SchemaConversionError(
                f"a schema must be an object or a boolean, not {type(node).__name__}", path=path
            )
        # Inlined references read a node's keywords every time; checked at the next visit.
        self._work += len(node)

        if "$ref" in node:
            ref = node["$ref"]
            if self.is_external(ref, path):
                rest = {k: v for k, v in node.items() if k != "$ref"}
                return self.lower(rest, path, depth + 1, refs)
            if refs.count(ref) >= (1 if self.vertex else _RECURSION_UNROLL) or (
                self._out_nodes > _INLINE_BUDGET
            ):
                return self._cut(node, ref, path, refs)
            merged = self.merge_ref_siblings(node, path, depth)
            return self.lower(merged, path, depth + 1, (*refs, ref))
        if "allOf" in node:
            return self.lower(self.merge_all_of(node, path, depth), path, depth + 1, refs)

        types = self.normalize_types(node.get("type"), path)
        nullable = node.get("nullable") is True
        if types and "null" in types and len(types) > 1:
            types.remove("null")
            nullable = True
        if types and len(types) > 1:
            split = self.split_type_list(node, types)
            if nullable:
                split["nullable"] = True
            return self.lower(split, path, depth + 1, refs)

        union_key = next((k for k in ("anyOf", "oneOf") if isinstance(node.get(k), list)), None)
        union = [node[union_key]] if union_key else []
        if (
            union_key
            and "properties" in node
            and any(isinstance(b, Mapping) and ("properties" in b or "$ref" in b) for b in union[0])
        ):
            # Variants that add properties to this object: one object with all of them.
            flattened = self.flatten_union(node, union_key, path, depth)
            return self.lower(flattened, path, depth + 1, refs)
        if union and (
            "properties" in node
            or not any(isinstance(b, Mapping) and (set(b) & _SHAPE_KEYWORDS) for b in union[0])
        ):
            # A union that only adds constraints to this node's own shape (e.g. "one of these
            # properties is required"): the shape is declared, the validator checks the rest.
            self.note(path, "anyOf/oneOf of constraints beside the node's own shape dropped")
            node = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
            union = []
        if union:
            return self._union(node, union[0], path, depth, refs, nullable)

        out: dict[str, Any] = {}
        hints: list[str] = []
        t = _OPENAPI_TYPE[types[0]] if types else self._infer_type(node)
        out["type"] = t
        allowed = _OPENAPI_TYPE_KEYWORDS[t]
        for key, value in node.items():
            if key in _OPENAPI_HANDLED:
                continue
            if key in COUNT_KEYWORDS:
                if key in allowed and is_count(value):
                    out[key] = value
                elif key in allowed or key in _DESCRIBED:
                    hints.append(f"{key} {short_json(value)}")
            elif key in ("minimum", "maximum"):
                if key in allowed and is_number(value):
                    out[key] = value
            elif key == "pattern":
                if key in allowed and isinstance(value, str):
                    out[key] = value
            elif key == "format":
                self._format(out, t, value, hints)
            elif key == "default":
                if json_type_of(value) is not None:
                    out["default"] = value
            elif key in _DESCRIBED:
                self.describe_constraint(key, value, path, hints)
            elif key in ANNOUNCED_DROPS:
                self.note(path, f"{key} dropped (not supported by Gemini)")
            elif key in ANNOTATIONS or key in _OPENAPI_IGNORED or _is_extension(key):
                continue
            else:
                self.note(path, f"unknown keyword {shown(key)} dropped")

        if t == "OBJECT":
            self._object(out, node, path, depth, refs, hints)
        elif t == "ARRAY":
            self._array(out, node, path, depth, refs)
        nullable = self._enum(out, node, path, hints) or nullable
        if nullable and t != "NULL":
            out["nullable"] = True
        description = self.describe(node.get("description"), hints)
        if description:
            out["description"] = description
        return out

    def _infer_type(self, node: Mapping[str, Any]) -> str:
        if "properties" in node or "additionalProperties" in node or "required" in node:
            return "OBJECT"
        if "items" in node or "prefixItems" in node:
            return "ARRAY"
        values = [node["const"]] if "const" in node else node.get("enum")
        if isinstance(values, list) and values:
            kinds = {json_type_of(v) for v in values} - {"null"}
            if len(kinds) == 1:
                return _OPENAPI_TYPE.get(next(iter(kinds)) or "string", "STRING")
        if any(k in node for k in ("minimum", "maximum", "multipleOf", "exclusiveMinimum")):
            return "NUMBER"
        return "STRING"

    def _format(self, out: dict[str, Any], t: str, value: Any, hints: list[str]) -> None:
        if not isinstance(value, str):
            return
        if value in _OPENAPI_FORMATS.get(t, ()):
            if value != "enum":  # set by _enum only when the enum is non-empty
                out["format"] = value
        else:
            hints.append(f"format: {value}")

    def _cut(
        self, node: Mapping[str, Any], ref: str, path: str, refs: tuple[str, ...]
    ) -> dict[str, Any]:
        """Where a recursive reference stops being inlined."""
        if self.vertex:
            name = self._vertex_def(ref, path, refs)
            out: dict[str, Any] = {"ref": f"#/defs/{name}"}
            if isinstance(node.get("description"), str):
                out["description"] = self.describe(node["description"], [])
            return out
        target = self.resolve(ref, path)
        types = (
            self.normalize_types(target.get("type"), path) if isinstance(target, Mapping) else None
        )
        t = _OPENAPI_TYPE[types[0]] if types and types[0] != "null" else "OBJECT"
        reason = "recursive" if ref in refs else "too large to inline"
        self.note(path, f"$ref {ref!r} cut: {reason}")
        description = node.get("description") or (
            target.get("description") if isinstance(target, Mapping) else None
        )
        out = {
            "type": t,
            "description": self.describe(
                description, [f"{reason} structure; deeper levels are not described"]
            ),
        }
        if t == "ARRAY":
            out["items"] = {"type": "STRING", "description": "any value"}
        return out

    def _vertex_def(self, ref: str, path: str, refs: tuple[str, ...]) -> str:
        name, new = self.def_name(ref)
        if new:
            target = self.resolve(ref, path)
            self.defs[name] = self.lower(target, ref, 1, (ref,)) or {"type": "OBJECT"}
        return name

    def _union(
        self,
        node: Mapping[str, Any],
        branches_in: list[Any],
        path: str,
        depth: int,
        refs: tuple[str, ...],
        nullable: bool,
    ) -> dict[str, Any]:
        key = "anyOf" if isinstance(node.get("anyOf"), list) else "oneOf"
        branches = []
        for i, branch in enumerate(branches_in):
            lowered = self.lower(branch, f"{path}/{key}/{i}", depth + 1, refs)
            if lowered is None:
                continue
            if lowered.get("type") == "NULL":
                nullable = True
                continue
            if lowered.pop("nullable", False):
                nullable = True
            branches.append(lowered)
        description = node.get("description")
        # The node's own keywords (minus the union) describe every branch.
        rest = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
        if not branches:
            out = {"type": "NULL"} if nullable else self.lower(rest or True, path, depth + 1, refs)
            return out or {"type": "STRING"}
        if len(branches) == 1 and not (set(rest) - {"description", "default", "title"}):
            out = dict(branches[0])
            if isinstance(description, str):
                out["description"] = self.describe(description, [])
        elif all(
            set(b) <= {"type", "enum", "description", "format"}
            and b.get("type") == "STRING"
            and b.get("enum")
            for b in branches
        ):
            values = [v for b in branches for v in b["enum"]]
            out = {"type": "STRING", "enum": list(dict.fromkeys(values)), "format": "enum"}
            if isinstance(description, str):
                out["description"] = self.describe(description, [])
        else:
            if nullable:
                for b in branches:
                    b["nullable"] = True
                nullable = False
            out = {"anyOf": branches}
            text = self.describe(description, [])
            if self.vertex:  # Vertex: anyOf must be alone in its node
                if text:
                    for b in branches:
                        b["description"] = self.describe(
                            f"{text} {b['description']}" if b.get("description") else text, []
                        )
            elif text:
                out["description"] = text
            dropped = set(rest) - {"description", "title", "type", "nullable", "default"}
            if dropped - ANNOTATIONS:
                names = ", ".join(sorted(map(str, dropped - ANNOTATIONS)))
                self.note(path, f"{names} beside {key} dropped")
        if nullable and "anyOf" not in out:
            out["nullable"] = True
        return out

    def _object(
        self,
        out: dict[str, Any],
        node: Mapping[str, Any],
        path: str,
        depth: int,
        refs: tuple[str, ...],
        hints: list[str],
    ) -> None:
        props = node.get("properties")
        if isinstance(props, Mapping) and props:
            lowered_props = {}
            for name, sub in props.items():
                lowered = self.lower(
                    sub, f"{path}/properties/{escape_pointer(str(name))}", depth + 1, refs
                )
                if lowered is None:
                    self.note(path, f"property {name!r} accepts no value; dropped")
                    continue
                lowered_props[str(name)] = lowered
            out["properties"] = lowered_props
            required = self.required_within(node.get("required"), lowered_props, path)
            if required:
                out["required"] = required
            ordering = node.get("propertyOrdering")
            if isinstance(ordering, list):
                self.spend(len(ordering), path)
                if all(o.__class__ is str and o in lowered_props for o in ordering):
                    out["propertyOrdering"] = list(ordering)
        additional = node.get("additionalProperties")
        if additional is None or additional is False:
            return
        if self.vertex:
            if additional is True:
                out["additionalProperties"] = True
            else:
                lowered = self.lower(additional, f"{path}/additionalProperties", depth + 1, refs)
                out["additionalProperties"] = lowered if lowered is not None else False
        else:
            hints.append("an object with free-form keys")
            self.note(path, "additionalProperties dropped (not supported by the Gemini API)")

    def _array(
        self,
        out: dict[str, Any],
        node: Mapping[str, Any],
        path: str,
        depth: int,
        refs: tuple[str, ...],
    ) -> None:
        items = node.get("items")
        positional = node.get("prefixItems", items if isinstance(items, list) else None)
        if isinstance(positional, list) and positional:
            lowered = [
                self.lower(p, f"{path}/prefixItems/{i}", depth + 1, refs)
                for i, p in enumerate(positional)
            ]
            unique = UniqueValues(self, f"{path}/prefixItems")
            for p in lowered:
                if p is not None:
                    unique.add(p)
            values = unique.values
            out["items"] = values[0] if len(values) == 1 else {"anyOf": values}
            self.note(path, "positional items merged into one item schema")
            return
        item = self.lower(items if items is not None else True, f"{path}/items", depth + 1, refs)
        if item is None:
            out["maxItems"] = 0
            item = {"type": "STRING"}
        out["items"] = item

    def _enum(
        self, out: dict[str, Any], node: Mapping[str, Any], path: str, hints: list[str]
    ) -> bool:
        """String enums stay; any other enum is described, never stringified (the validator
        would then reject what the model sends). Returns True when null was allowed."""
        if "const" in node:
            values = [node["const"]]
        elif isinstance(node.get("enum"), list) and node["enum"]:
            values = node["enum"]
        else:
            if "enum" in node:
                self.note(path, "enum is not a non-empty list; dropped")
            return False
        self.spend(len(values), path)
        nullable = None in values
        values = [v for v in values if v is not None]
        if not values:
            return nullable
        if out["type"] == "STRING" and all(isinstance(v, str) for v in values):
            out["enum"] = list(dict.fromkeys(values))
            out["format"] = "enum"
            return nullable
        hints.append(_enum_hint(values))
        self.note(path, "non-string enum moved into the description")
        return nullable


# Read elsewhere in `lower`.
_OPENAPI_HANDLED = frozenset(
    {
        "type",
        "nullable",
        "enum",
        "const",
        "description",
        "required",
        "properties",
        "additionalProperties",
        "items",
        "prefixItems",
        "propertyOrdering",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
    }
)
_OPENAPI_IGNORED = frozenset({"additionalItems"})
# Keywords that give a union branch a shape of its own, rather than just constraining.
_SHAPE_KEYWORDS = frozenset(
    {
        "type",
        "$ref",
        "properties",
        "items",
        "enum",
        "const",
        "anyOf",
        "oneOf",
        "allOf",
        "prefixItems",
    }
)


def to_gemini_json_schema(schema: Any) -> tuple[dict[str, Any], list[ConversionNote]]:
    """Lower ``schema`` for ``FunctionDeclaration.parametersJsonSchema``.

    Returns:
        The new schema (the input is never modified) and notes on what was dropped or
        rewritten.

    Raises:
        SchemaConversionError: for a schema that is not an object, a reference that is not
            local or points to nothing, or nesting beyond the bounds.
    """
    lowering = _JsonLowering(schema)
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
    lowering = _OpenApiLowering(schema, backend)
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
