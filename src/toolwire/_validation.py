"""How a tool's arguments are validated: its schema compiled once by jsonschema-rs (formats
asserted, patterns in linear time, nothing retrieved), and the checks around it (no NaN or
infinity, plain JSON types, errors in a stable order)."""

from __future__ import annotations

import decimal
import math
from collections.abc import Mapping
from typing import Any
from urllib.parse import urldefrag

import jsonschema_rs

from toolwire._function_schema import json_path
from toolwire.errors import SchemaConversionError
from toolwire.schema import escape_pointer, for_validation, named_resources, short_text

__all__ = ["LEAVES", "compile_validator", "first_non_finite", "path_order", "plain_json"]


# Patterns run on model input, so only the `regex` crate's engine, linear in the input. A
# pattern it cannot compile (look-around, backreferences) fails the whole schema, closed: no
# engine here decides those in linear time; a backtracking one with a step limit bounds one
# match, not a call (the limit multiplies by every string the model sends), and its verdict
# on reaching the limit depends on the input's length, not on the schema. The tool's calls are
# answered with the reason and `toolwire check` reports it.
# The linear engine's time is still the compiled pattern's size times the input's, so patterns
# are capped at 256 KiB compiled (`\w{20000}`, megabytes of states, took 24 s on 40,000
# characters; every schema of the corpus in tests/data compiles within the cap), and the lazy
# DFA gets room to cache what such a pattern needs (8 MiB, grown only when used): with the
# default 2 MiB, `\w{2500}\W` fell back to the slow engine, 10 s on 200,000 characters
# instead of milliseconds.
_LINEAR_PATTERNS = jsonschema_rs.RegexOptions(size_limit=256 * 1024, dfa_size_limit=8 << 20)
# The `email` format is an address (RFC 5321), not a display name with one.
_EMAIL = jsonschema_rs.EmailOptions(allow_display_text=False)


def compile_validator(
    schema: Mapping[str, Any], resources: Mapping[str, Any] | None = None
) -> jsonschema_rs.Validator | str:
    """The jsonschema-rs validator for ``schema`` as tools validate with it (formats asserted,
    linear-time patterns, nothing retrieved; the documents ``resources`` names by URI in its
    registry, the meta-schemas built in), or why there is none."""
    named = named_resources(schema, resources) if resources else {}
    known = frozenset(urldefrag(uri).url for uri in named)
    try:
        prepared = for_validation(schema, known)
    except SchemaConversionError as exc:
        return f"{exc.path}: {exc.reason}"
    try:
        registry = jsonschema_rs.Registry(list(named.items())) if named else None
        return jsonschema_rs.validator_for(
            dict(prepared),
            validate_formats=True,
            email_options=_EMAIL,
            pattern_options=_LINEAR_PATTERNS,
            registry=registry,
            offline=True,  # nothing is ever retrieved; for_validation removed what would be
        )
    except jsonschema_rs.ValidationError as exc:  # the schema breaks JSON Schema's own rules
        where = "#" + "".join(f"/{escape_pointer(str(p))}" for p in exc.instance_path)
        reason = f"{where}: {short_text(exc.message)}"
        kind = exc.kind
        if isinstance(kind, jsonschema_rs.ValidationErrorKind.Format) and kind.format == "regex":
            reason += (
                " (patterns must compile without look-around or backreferences, to at most 256 KiB)"
            )
        return reason
    except (jsonschema_rs.ReferencingError, ValueError, TypeError, OverflowError) as exc:
        return short_text(str(exc).split("\n", 1)[0])


def path_order(path: list[str | int]) -> list[tuple[int, int, str]]:
    """A sort key for instance paths: by position, indexes numerically, names alphabetically."""
    return [(0, p, "") if isinstance(p, int) else (1, 0, p) for p in path]


LEAVES = frozenset({str, int, bool, type(None)})
"""The types a JSON value can be that hold nothing to look into."""


def first_non_finite(arguments: Mapping[str, Any]) -> tuple[str, str] | None:
    """The JSON path and message for the first ``NaN`` or infinity in ``arguments``, or None.

    Function tools may be handed Python objects by a hook, so only numbers are looked at;
    containers are visited once each (a cycle ends the walk, not the process).
    """
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(arguments, ())]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        kind = node.__class__
        if kind in LEAVES:
            continue
        if kind is float or isinstance(node, float | decimal.Decimal):
            if not (math.isfinite(node) if isinstance(node, float) else node.is_finite()):
                return json_path(path), f"{node} is not a JSON number"
        elif kind is dict or kind is list or isinstance(node, Mapping | list | tuple):
            if id(node) in seen:
                continue
            seen.add(id(node))
            items = node.items() if isinstance(node, Mapping) else enumerate(node)
            stack.extend((value, (*path, key)) for key, value in items)
    return None


def plain_json(value: Any) -> Any:
    """``value`` with Mappings as dicts, tuples as lists and str/int/float subclasses as the
    plain types (what jsonschema-rs reads). Called only on arguments ``argument_problem``
    passed, so nesting is bounded."""
    if isinstance(value, Mapping):
        return {str(k): plain_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_json(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    for kind in (str, int, float):
        if isinstance(value, kind):
            return kind(value)
    return value
