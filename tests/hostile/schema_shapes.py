"""Schemas shaped to make a walk do exponential or quadratic work, and every walk over them.

``python schema_shapes.py`` runs each operation on each shape and prints one JSON line per
pair: ``{"shape", "operation", "outcome", "size"}``, ``outcome`` ``"ok"`` or the toolwire
error's class name, ``size`` the characters of the output as JSON (-1 on an error). Anything
else raised ends the run with a traceback. ``--short`` builds the shapes smaller (the README's
run; the deep run takes them whole): the formerly quadratic ones a quarter as large, the
exponential ones half as deep (10^15 paths, not 10^30).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import toolwire
from toolwire import Tool, ToolwireError, compat
from toolwire.schema._rewrite import declared_object, external_references, for_validation
from toolwire.schema.checks import gemini_violations, openai_strict_violations, property_paths
from toolwire.schema.gemini import (
    inline_gemini_defs,
    to_gemini_json_schema,
    to_gemini_openapi_schema,
)
from toolwire.schema.openai import strict_schema

WIDTH, LEVELS, MANY, LARGE = 10, 30, 40_000, 8_000


def fan_out(*, described: bool = False, width: int = WIDTH, levels: int = LEVELS) -> Any:
    """``d0`` has ``width`` properties each referring to ``d1``, which has ``width`` referring
    to ``d2``, ...: ``width ** levels`` paths if references were inlined blindly."""
    defs = {}
    for level in range(levels):
        ref: dict[str, Any] = {"$ref": f"#/$defs/d{level + 1}"}
        if described:
            ref["description"] = f"level {level}"
        props = {f"p{i}": dict(ref) for i in range(width)}
        defs[f"d{level}"] = {"type": "object", "properties": props, "required": list(props)}
    defs[f"d{levels}"] = {"type": "integer"}
    return {"type": "object", "properties": {"root": {"$ref": "#/$defs/d0"}}, "$defs": defs}


def self_referencing_union(branches: int = 2) -> Any:
    """A definition whose union refers back to itself ``branches`` times."""
    union = [{"$ref": "#/$defs/n"}] * branches + [{"type": "integer"}]
    return {
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/n"}},
        "$defs": {"n": {"anyOf": union}},
    }


def union_chain(levels: int = 40) -> Any:
    """``u0`` is a union of two references to ``u1``, ... down to an integer."""
    defs: dict[str, Any] = {
        f"u{i}": {"anyOf": [{"$ref": f"#/$defs/u{i + 1}"}, {"$ref": f"#/$defs/u{i + 1}"}]}
        for i in range(levels)
    }
    defs[f"u{levels}"] = {"type": "integer"}
    return {"type": "object", "properties": {"n": {"$ref": "#/$defs/u0"}}, "$defs": defs}


SHAPES: dict[str, Callable[[], Any]] = {
    "fan-out": lambda: fan_out(levels=LEVELS),
    "fan-out with descriptions": lambda: fan_out(described=True, levels=LEVELS),
    "self-referencing union": self_referencing_union,
    "self-referencing union, many branches": lambda: self_referencing_union(1000),
    "union chain": lambda: union_chain(LEVELS + 10),
    "allOf of many members": lambda: {
        "type": "object",
        "allOf": [
            {"properties": {f"p{i}": {"type": "string"}}, "required": [f"p{i}"]}
            for i in range(MANY)
        ],
    },
    "union of many variants of one property": lambda: {
        "type": "object",
        "anyOf": [
            {"type": "object", "properties": {"x": {"type": "string", "description": str(i)}}}
            for i in range(MANY)
        ],
    },
    "many references ending alike": lambda: {
        "type": "object",
        "properties": {f"p{i}": {"$ref": f"#/$defs/a{i}/x"} for i in range(MANY)},
        "$defs": {f"a{i}": {"x": {"type": "string"}} for i in range(MANY)},
    },
    # The members are one definition of LARGE properties, met through LARGE references:
    # merging read LARGE x LARGE properties (6 s at 8,000).
    "allOf of many references to one large definition": lambda: {
        "type": "object",
        "$defs": {"P": {"properties": {f"p{i}": {} for i in range(LARGE)}}},
        "allOf": [{"$ref": "#/$defs/P"} for _ in range(LARGE)],
    },
    "many references with siblings to one large definition": lambda: {
        "type": "object",
        "$defs": {"P": {"properties": {f"p{i}": {} for i in range(LARGE)}}},
        "properties": {f"q{i}": {"$ref": "#/$defs/P", "type": "object"} for i in range(LARGE)},
    },
    "allOf requiring many values that are not names": lambda: {
        "type": "object",
        "properties": {},
        "allOf": [{"required": list(range(MANY))}, {"required": list(range(MANY))}],
    },
    "many positional items": lambda: {
        "type": "object",
        "properties": {
            "a": {
                "type": "array",
                "prefixItems": [{"type": "string", "description": str(i)} for i in range(MANY)],
            }
        },
    },
}


def _tools(schema: Any, provider: str, **options: Any) -> Any:
    return toolwire.tools([Tool(name="t", input_schema=schema)], provider, **options).tools


def _validate(schema: Any) -> Any:
    subject = Tool(name="t", input_schema=schema)
    subject.check_schema()
    return "compiled"


OPERATIONS: dict[str, Callable[[Any], Any]] = {
    "gemini json": lambda s: to_gemini_json_schema(s)[0],
    "gemini openapi": lambda s: to_gemini_openapi_schema(s)[0],
    "vertex openapi": lambda s: to_gemini_openapi_schema(s, backend="vertex")[0],
    "openai strict": lambda s: strict_schema(s)[0],
    "declared object": lambda s: declared_object(s)[0],
    "for validation": for_validation,
    "external references": lambda s: [n.message for n in external_references(s)],
    "validator": _validate,
    "inline gemini defs": lambda s: inline_gemini_defs(to_gemini_json_schema(s)[0]),
    "gemini violations": lambda s: len(gemini_violations(to_gemini_json_schema(s)[0])),
    "strict violations": lambda s: len(openai_strict_violations(s)),
    "property paths": lambda s: len(property_paths(s)),
    "check": lambda s: [
        v.status for r in compat.check([Tool(name="t", input_schema=s)]) for v in r.verdicts
    ],
    **{
        f"tools {p}": (lambda s, p=p: _tools(s, p))
        for p in ("gemini", "anthropic", "openai-chat", "openai-responses")
    },
}


# Shapes that were quadratic in one lowering step (minutes at this size), with the steps.
QUADRATIC = {
    "allOf of many members": ("gemini json", "gemini openapi", "declared object"),
    "union of many variants of one property": ("gemini json", "gemini openapi", "openai strict"),
    "many references ending alike": ("gemini json", "vertex openapi"),
    "many positional items": ("gemini openapi", "vertex openapi"),
    "allOf of many references to one large definition": (
        "gemini json", "gemini openapi", "openai strict", "declared object", "tools anthropic",
    ),
    "many references with siblings to one large definition": (
        "gemini json", "gemini openapi", "openai strict", "declared object",
    ),
    "allOf requiring many values that are not names": (
        "gemini json", "gemini openapi", "openai strict", "declared object",
    ),
}  # fmt: skip


def pairs() -> list[tuple[str, str]]:
    """The (shape, operation) pairs the run covers: every operation on the exponential
    shapes, the formerly quadratic steps on the others."""
    return [
        (shape, operation)
        for shape in SHAPES
        for operation in OPERATIONS
        if shape not in QUADRATIC or operation in QUADRATIC[shape]
    ]


def main() -> None:
    for shape, operation in pairs():
        try:
            output = OPERATIONS[operation](SHAPES[shape]())
        except ToolwireError as exc:
            outcome, size = type(exc).__name__, -1
        else:
            outcome, size = "ok", len(json.dumps(output, default=str))
        line = {"shape": shape, "operation": operation, "outcome": outcome, "size": size}
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    sys.setrecursionlimit(1000)  # the default: a walk that recursed without bound fails here
    if "--short" in sys.argv[1:]:
        MANY, LARGE, LEVELS = MANY // 4, LARGE // 4, LEVELS // 2
    main()
