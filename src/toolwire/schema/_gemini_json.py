"""JSON Schema lowered for ``parametersJsonSchema``: the keywords Gemini documents, with
``$defs`` hoisted and ``$ref`` alone in its node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolwire._text import clean_description
from toolwire.errors import SchemaConversionError
from toolwire.schema._base import (
    ANNOTATIONS,
    ANNOUNCED_DROPS,
    JSON_TYPES,
    MAX_DEPTH,
    MAX_NODES,
    MAX_WORK,
    Lowering,
    escape_pointer,
    is_count,
    is_number,
    json_type_of,
    short_json,
    shown,
)
from toolwire.schema._gemini_common import (
    DESCRIBED,
    INLINE_BUDGET,
    enum_hint,
    is_extension,
)

__all__ = ["JsonLowering"]


class JsonLowering(Lowering):
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
        if ref in self._inlining or self._copied > INLINE_BUDGET:
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
                if not is_extension(key):
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
            # The node's own required names and those a one-branch anyOf brought (see _any_of),
            # pruned to the properties as they now stand.
            required = self.required_within(node.get("required"), out["properties"], path)
            merged = self.required_within(out.pop("required", None), out["properties"], path)
            if merged:
                required = list(dict.fromkeys([*(required or ()), *merged]))
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
        hints.append(enum_hint(values))
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
            # One branch is one more set of constraints beside the node's own (allOf): its
            # properties and required names join the node's, which win where both speak.
            for key, sub in branches[0].items():
                mine = out.get(key)
                if key == "properties" and isinstance(mine, dict) and isinstance(sub, dict):
                    out[key] = {**sub, **mine}
                elif key == "required" and isinstance(mine, list) and isinstance(sub, list):
                    out[key] = list(dict.fromkeys([*mine, *sub]))
                else:
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
    **dict.fromkeys(DESCRIBED, _DESCRIBE),
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
