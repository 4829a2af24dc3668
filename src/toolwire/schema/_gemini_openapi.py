"""JSON Schema lowered for ``parameters``: the OpenAPI 3.0 subset of Gemini's ``Schema``
message, with references inlined (or, on Vertex AI, cut into ``defs``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolwire.errors import SchemaConversionError
from toolwire.schema._base import (
    ANNOTATIONS,
    ANNOUNCED_DROPS,
    COUNT_KEYWORDS,
    Lowering,
    UniqueValues,
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
    Backend,
    enum_hint,
    is_extension,
)

__all__ = ["OpenApiLowering"]

_STRING_ENUM_FORMATS = frozenset({"enum", "date-time"})
_OPENAPI_FORMATS: Mapping[str, frozenset[str]] = {
    "STRING": _STRING_ENUM_FORMATS,
    "NUMBER": frozenset({"float", "double"}),
    "INTEGER": frozenset({"int32", "int64"}),
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


class OpenApiLowering(Lowering):
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
                self._out_nodes > INLINE_BUDGET
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
                elif key in allowed or key in DESCRIBED:
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
            elif key in DESCRIBED:
                self.describe_constraint(key, value, path, hints)
            elif key in ANNOUNCED_DROPS:
                self.note(path, f"{key} dropped (not supported by Gemini)")
            elif key in ANNOTATIONS or key in _OPENAPI_IGNORED or is_extension(key):
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
        hints.append(enum_hint(values))
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
