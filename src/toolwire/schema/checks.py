"""Checks on schemas: does one fit Gemini's rules, and which property paths does it describe.

The Gemini checks are written from the API's documented rules, independently of the
converters, so they can judge any converter's output (ours in the tests, peers' in the
benchmarks) and say whether a raw declaration is accepted as is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from toolwire.schema._base import (
    COUNT_KEYWORDS,
    MAX_DEPTH,
    ConversionNote,
    escape_pointer,
    follow_pointer,
    is_count,
    is_number,
    shown,
)

__all__ = ["gemini_violations", "openai_strict_violations", "property_paths"]

_WALK_BUDGET = 200_000
"""Schema nodes one check may queue."""
_REF_CHAIN = 32
"""References :func:`property_paths` follows along one path."""

_JSON_KEYWORDS = frozenset(
    {
        "$ref",
        "type",
        "format",
        "description",
        "enum",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "anyOf",
        "oneOf",
        "properties",
        "additionalProperties",
        "required",
        "propertyOrdering",
    }
)
_JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})

_OPENAPI_KEYWORDS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "items",
        "minItems",
        "maxItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "anyOf",
        "propertyOrdering",
        "default",
        "example",
    }
)
_VERTEX_EXTRA = frozenset({"additionalProperties", "ref"})
_OPENAPI_TYPES = frozenset({"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"})
_ONLY_FOR = {
    "items": "ARRAY",
    "minItems": "ARRAY",
    "maxItems": "ARRAY",
    "properties": "OBJECT",
    "required": "OBJECT",
    "minProperties": "OBJECT",
    "maxProperties": "OBJECT",
    "propertyOrdering": "OBJECT",
    "additionalProperties": "OBJECT",
    "minLength": "STRING",
    "maxLength": "STRING",
    "pattern": "STRING",
    "enum": "STRING",
}
_FORMATS = {
    "STRING": frozenset({"enum", "date-time"}),
    "NUMBER": frozenset({"float", "double"}),
    "INTEGER": frozenset({"int32", "int64"}),
}


def gemini_violations(
    schema: Any,
    *,
    mode: Literal["json", "openapi"] = "json",
    backend: Literal["gemini", "vertex"] = "gemini",
) -> list[ConversionNote]:
    """Where ``schema`` breaks Gemini's rules for ``parametersJsonSchema`` (``mode="json"``)
    or ``parameters`` (``mode="openapi"``, per ``backend``). Empty when it fits."""
    checker = _Checker(schema, mode, backend)
    checker.root()
    return checker.found


class _Checker:
    def __init__(self, root: Any, mode: str, backend: str) -> None:
        self.root_schema = root
        self.json = mode == "json"
        self.vertex = backend == "vertex"
        self.found: list[ConversionNote] = []
        self.nodes = 0
        self.stopped = False

    def bad(self, path: str, message: str) -> None:
        self.found.append(ConversionNote(path, message))

    def root(self) -> None:
        root = self.root_schema
        if not isinstance(root, Mapping):
            self.bad("#", "the parameters schema must be an object")
            return
        want = "object" if self.json else "OBJECT"
        t = root.get("type")
        if not (t == want or (not self.json and isinstance(t, str) and t.upper() == want)):
            self.bad("#", f"the root must have type {want}")
        defs_key = "$defs" if self.json else "defs"
        defs = root.get(defs_key)
        if defs is not None:
            if self.json or self.vertex:
                if not isinstance(defs, Mapping):
                    self.bad(f"#/{defs_key}", "definitions must be an object")
                else:
                    for name, sub in defs.items():
                        self.node(sub, f"#/{defs_key}/{escape_pointer(str(name))}", 1)
            else:
                self.bad("#/defs", "defs is not supported by the Gemini API")
        self.node({k: v for k, v in root.items() if k != defs_key}, "#", 0)

    def node(self, node: Any, path: str, depth: int) -> None:
        if self.stopped:
            return
        self.nodes += 1
        if depth > MAX_DEPTH or self.nodes > _WALK_BUDGET:
            self.bad(path, "schema too deep or too large to check")
            self.stopped = True  # one note, and no more work
            return
        if self.json and isinstance(node, bool):
            return
        if not isinstance(node, Mapping):
            self.bad(path, f"a schema must be an object, not {type(node).__name__}")
            return
        if self.json:
            self.json_node(node, path)
        else:
            self.openapi_node(node, path)
        for key in ("properties",):
            props = node.get(key)
            if isinstance(props, Mapping):
                for name, sub in props.items():
                    self.node(sub, f"{path}/properties/{escape_pointer(str(name))}", depth + 1)
        for key in ("anyOf", "oneOf", "prefixItems"):
            branches = node.get(key)
            if isinstance(branches, list):
                for i, sub in enumerate(branches):
                    self.node(sub, f"{path}/{key}/{i}", depth + 1)
        for key in ("items", "additionalProperties"):
            sub = node.get(key)
            if isinstance(sub, Mapping):
                self.node(sub, f"{path}/{key}", depth + 1)

    def common(self, node: Mapping[str, Any], path: str) -> None:
        for key in sorted(COUNT_KEYWORDS):
            if key in node and not is_count(node[key]):
                self.bad(path, f"{key} must be a non-negative integer")
        for key in ("minimum", "maximum"):
            if key in node and not is_number(node[key]):
                self.bad(path, f"{key} must be a number")
        props = node.get("properties")
        if "properties" in node and not isinstance(props, Mapping):
            self.bad(path, "properties must be an object")
        required = node.get("required")
        if required is not None:
            if not isinstance(required, list):
                self.bad(path, "required must be a list")
            else:
                names = props if isinstance(props, Mapping) else {}
                for r in required:
                    if not isinstance(r, str) or r not in names:
                        self.bad(path, f"required names {shown(r)}, which is not a property")
        if "description" in node and not isinstance(node["description"], str):
            self.bad(path, "description must be a string")

    def json_node(self, node: Mapping[str, Any], path: str) -> None:
        for key in node:
            if key not in _JSON_KEYWORDS:
                self.bad(path, f"keyword {shown(key)} is not supported")
        if "$ref" in node:
            ref = node["$ref"]
            others = [k for k in node if not k.startswith("$")]
            if others:
                self.bad(path, f"$ref has sibling keywords {others}")
            defs = self.root_schema.get("$defs") if isinstance(self.root_schema, Mapping) else None
            target = (
                ref[len("#/$defs/") :]
                if isinstance(ref, str) and ref.startswith("#/$defs/")
                else None
            )
            if (
                target is None
                or not isinstance(defs, Mapping)
                or (target.replace("~1", "/").replace("~0", "~") not in defs)
            ):
                self.bad(path, f"$ref {shown(ref)} does not point into the root $defs")
        t = node.get("type")
        if t is not None and not (isinstance(t, str) and t in _JSON_TYPES):
            self.bad(path, f"type must be one JSON type name, not {shown(t)}")
        enum = node.get("enum")
        if enum is not None and (
            not isinstance(enum, list)
            or not enum
            or not all(isinstance(v, str) or is_number(v) for v in enum)
        ):
            self.bad(path, "enum must be a non-empty list of strings or numbers")
        additional = node.get("additionalProperties")
        if additional is not None and not isinstance(additional, bool | Mapping):
            self.bad(path, "additionalProperties must be a boolean or a schema")
        self.common(node, path)

    def openapi_node(self, node: Mapping[str, Any], path: str) -> None:
        allowed = _OPENAPI_KEYWORDS | (_VERTEX_EXTRA if self.vertex else frozenset())
        for key in node:
            if key not in allowed:
                self.bad(path, f"keyword {shown(key)} is not supported")
        if "ref" in node:
            others = set(node) - {"ref", "description", "default"}
            if others:
                self.bad(path, f"ref has sibling keywords {sorted(map(str, others))}")
            return
        t = node.get("type")
        if "anyOf" in node:
            if self.vertex and len(node) > 1:
                self.bad(path, "with anyOf, no other field may be set (Vertex)")
            if not isinstance(node["anyOf"], list) or not node["anyOf"]:
                self.bad(path, "anyOf must be a non-empty list")
        elif t is None:
            self.bad(path, "type must be specified when not using anyOf")
        t_upper = t.upper() if isinstance(t, str) else None
        if t is not None and t_upper not in _OPENAPI_TYPES:
            self.bad(path, f"type must be one of {sorted(_OPENAPI_TYPES)}, not {shown(t)}")
        for key, only in _ONLY_FOR.items():
            if key in node and t_upper is not None and t_upper != only:
                self.bad(path, f"{key} is only allowed for {only}")
        if t_upper == "ARRAY" and not isinstance(node.get("items"), Mapping):
            self.bad(path, "an ARRAY needs items")
        enum = node.get("enum")
        if enum is not None and (
            not isinstance(enum, list) or not enum or not all(isinstance(v, str) for v in enum)
        ):
            self.bad(path, "enum must be a non-empty list of strings")
        fmt = node.get("format")
        if fmt is not None and not (
            isinstance(fmt, str) and fmt in _FORMATS.get(t_upper or "", ())
        ):
            self.bad(path, f"format {shown(fmt)} is not supported for {shown(t)}")
        if fmt == "enum" and not enum:
            self.bad(path, "format enum needs a non-empty enum")
        additional = node.get("additionalProperties")
        if additional is not None and not isinstance(additional, bool | Mapping):
            self.bad(path, "additionalProperties must be a boolean or a schema")
        self.common(node, path)


def property_paths(schema: Any, *, max_depth: int = 10) -> set[str]:
    """Every named property path the schema describes, like ``"filter.tags[].name"``.

    ``anyOf``/``oneOf``/``allOf`` branches add no segment, array items add ``[]``; local
    references (``$ref``, and Vertex's ``ref``) are followed, each at most once along a path
    and at most 32 along one; paths stop at ``max_depth`` segments. The walk queues at most
    200,000 nodes (a larger schema's paths are reported as far as it got).
    Used to measure what a conversion lost.
    """
    paths: set[str] = set()
    stack: list[tuple[Any, str, tuple[str, ...], int]] = [(schema, "", (), 0)]
    # Every entry pushed counts (not only those popped): a node with many branches reached
    # through many references would otherwise fill the stack long before the budget runs out.
    budget = _WALK_BUDGET

    def push(entries: list[tuple[Any, str, tuple[str, ...], int]]) -> None:
        nonlocal budget
        budget -= len(entries)
        if budget >= 0:
            stack.extend(entries)

    while stack and budget > 0:
        node, prefix, seen, depth = stack.pop()
        if not isinstance(node, Mapping) or depth > max_depth:
            continue
        for ref_key in ("$ref", "ref"):
            ref = node.get(ref_key)
            if (
                isinstance(ref, str)
                and ref.startswith("#")
                and len(seen) < _REF_CHAIN
                and ref not in seen
            ):
                push([(follow_pointer(schema, ref, None), prefix, (*seen, ref), depth)])
        props = node.get("properties")
        if isinstance(props, Mapping):
            entries = []
            for name, sub in props.items():
                path = f"{prefix}.{name}" if prefix else str(name)
                paths.add(path)
                entries.append((sub, path, seen, depth + 1))
            push(entries)
        for key in ("anyOf", "oneOf", "allOf"):
            branches = node.get(key)
            if isinstance(branches, list):
                push([(b, prefix, seen, depth) for b in branches])
        items = node.get("items")
        if isinstance(items, list):
            push([(b, prefix + "[]", seen, depth + 1) for b in items])
        elif items is not None:
            push([(items, prefix + "[]", seen, depth + 1)])
        prefix_items = node.get("prefixItems")
        if isinstance(prefix_items, list):
            push([(b, prefix + "[]", seen, depth + 1) for b in prefix_items])
    return paths


_OPENAI_STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "description",
        "title",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
        "$defs",
        "definitions",
        "$ref",
    }
)


def _all_required(required: Any, properties: Any) -> bool:
    """``required`` names every property and nothing else (any value may stand in either)."""
    names = properties.keys() if isinstance(properties, Mapping) else ()
    listed = required if isinstance(required, list) else ()
    if not all(r.__class__ is str for r in listed):
        return False
    return set(listed) == set(names)


def openai_strict_violations(schema: Any) -> list[ConversionNote]:
    """Where ``schema`` breaks OpenAI's strict-mode rules: an object root; every object closed
    (``additionalProperties: false``) with every property required; supported keywords only;
    every value typed. Empty when it fits. (Limits are checked by the conversion itself.)"""
    found: list[ConversionNote] = []
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return [ConversionNote("#", "the root must be an object")]
    stack: list[tuple[Any, str]] = [(schema, "#")]
    budget = _WALK_BUDGET  # entries pushed, as in property_paths
    while stack:
        node, path = stack.pop()
        if not isinstance(node, Mapping):
            found.append(ConversionNote(path, "a schema must be an object"))
            continue
        if extra := sorted(map(str, set(node) - _OPENAI_STRICT_KEYWORDS)):
            found.append(ConversionNote(path, f"unsupported keywords {extra}"))
        if "properties" in node or node.get("type") == "object":
            if node.get("additionalProperties") is not False:
                found.append(ConversionNote(path, "an object must set additionalProperties: false"))
            if not _all_required(node.get("required"), node.get("properties")):
                found.append(ConversionNote(path, "every property must be required"))
        if not {"type", "anyOf", "enum", "const", "$ref"} & set(node):
            found.append(ConversionNote(path, "the value has no type"))
        children: list[tuple[Any, str]] = []
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), Mapping):
                children.append((node[key], f"{path}/{key}"))
        for key in ("properties", "$defs", "definitions"):
            if isinstance(node.get(key), Mapping):
                children.extend(
                    (sub, f"{path}/{key}/{escape_pointer(str(name))}")
                    for name, sub in node[key].items()
                )
        if isinstance(node.get("anyOf"), list):
            children.extend((sub, f"{path}/anyOf/{i}") for i, sub in enumerate(node["anyOf"]))
        budget -= len(children)
        if budget < 0:
            found.append(ConversionNote(path, "schema too large to check"))
            break
        stack.extend(children)
    return found
