"""Gemini's rules for a function's ``parametersJsonSchema`` or (OpenAPI 3.0 subset)
``parameters``, on the Gemini API or Vertex AI."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from toolwire.schema._base import (
    COUNT_KEYWORDS,
    JSON_TYPES,
    MAX_DEPTH,
    ConversionNote,
    escape_pointer,
    is_count,
    is_number,
    shown,
)
from toolwire.schema._checks_common import WALK_BUDGET

__all__ = ["gemini_violations"]

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
        if depth > MAX_DEPTH or self.nodes > WALK_BUDGET:
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
        if t is not None and not (isinstance(t, str) and t in JSON_TYPES):
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
