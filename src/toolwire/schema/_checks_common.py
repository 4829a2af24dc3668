"""What every provider's check shares: its bounds, JSON Schema's own rules (the draft 2020-12
meta-schema, an object root), and the rule for a tool's name."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Mapping
from typing import Any

import jsonschema_rs

from toolwire.schema._base import MAX_DEPTH, ConversionNote, escape_pointer, shown

__all__ = [
    "STRICT_NOTES",
    "WALK_BUDGET",
    "draft_2020_12_violations",
    "name_violations",
    "root_violations",
    "type_list",
]

WALK_BUDGET = 200_000
"""Schema nodes one check may queue."""

STRICT_NOTES = 100
"""Notes the strict-mode check lists; the rest are counted."""


# -- JSON Schema's own rules ---------------------------------------------------------------------

_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_META_NOTES = 5
"""Meta-schema errors one check reports: the first distinct ones."""
_META_READ = 200
"""Meta-schema errors one check reads looking for distinct ones (one bad value often fails
several branches of the meta-schema, each an error at the same place)."""
_CONTAINER_DEPTH = 4 * MAX_DEPTH
"""Nesting of objects and lists a value may have to be handed to jsonschema-rs, which
recurses natively: a schema ten thousand levels deep crashes the process, not the check."""
_MESSAGE_LIMIT = 300
_EVERY_ERROR = 20_000
"""Entries a schema may have for every meta-schema error to be looked for (jsonschema-rs
finds them all before returning the first: 80,000 bad values take seconds)."""


@functools.cache
def _draft_2020_12() -> jsonschema_rs.Validator:
    """Draft 2020-12's meta-schema as a validator (built in to jsonschema-rs, never fetched)."""
    return jsonschema_rs.Draft202012Validator({"$ref": _DRAFT_2020_12}, offline=True)


def _size(value: Any) -> int | None:
    """The entries of every object and list in ``value``, or None past
    [`_CONTAINER_DEPTH`][] levels or a million entries (counted without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    size = 0
    while stack:
        node, depth = stack.pop()
        if depth > _CONTAINER_DEPTH:
            return None
        if isinstance(node, Mapping):
            children: Any = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        size += len(children)
        if size > WALK_BUDGET * 5:
            return None
        stack.extend((child, depth + 1) for child in children)
    return size


def draft_2020_12_violations(schema: Any, *, limit: int = _META_NOTES) -> list[ConversionNote]:
    """Where ``schema`` breaks the meta-schema of JSON Schema draft 2020-12, whatever its
    ``$schema`` says: the first ``limit`` distinct errors, each at a JSON pointer into
    ``schema``. Empty when it is valid."""
    size = _size(schema)
    if size is None:
        return [ConversionNote("#", "schema too deep or too large to check")]
    found: list[ConversionNote] = []
    validator = _draft_2020_12()
    try:
        if validator.is_valid(schema):
            return []
        # Every error is found before the first is returned: a large schema gets the first
        # one alone, which costs no more than validating it.
        if size > _EVERY_ERROR or limit == 1:
            try:
                validator.validate(schema)
            except jsonschema_rs.ValidationError as exc:
                errors: Any = [exc]
        else:
            errors = itertools.islice(validator.iter_errors(schema), _META_READ)
        for error in errors:
            where = "#" + "".join(f"/{escape_pointer(str(p))}" for p in error.instance_path)
            message = error.message
            if len(message) > _MESSAGE_LIMIT:  # jsonschema-rs quotes the failing value
                message = message[: _MESSAGE_LIMIT - 3] + "..."
            note = ConversionNote(where, f"not valid JSON Schema draft 2020-12: {message}")
            if note not in found:
                found.append(note)
                if len(found) >= limit:
                    break
    except (ValueError, TypeError, OverflowError) as exc:  # not JSON (a set, a NaN, ...)
        return [ConversionNote("#", f"not JSON: {str(exc).split(chr(10), 1)[0][:200]}")]
    return found


def root_violations(schema: Any, refused: tuple[str, ...]) -> list[ConversionNote]:
    """The root is a JSON object with ``"type": "object"`` and none of ``refused``."""
    if not isinstance(schema, Mapping):
        return [ConversionNote("#", f"the schema must be a JSON object, not {shown(schema)}")]
    found = []
    t = schema.get("type")
    if t != "object":
        had = f"not {shown(t)}" if "type" in schema else "it has none"
        found.append(ConversionNote("#", f'the root must have "type": "object" ({had})'))
    found.extend(
        ConversionNote("#", f"{key} is not allowed at the top level")
        for key in refused
        if key in schema
    )
    return found


def type_list(node: Mapping[str, Any]) -> list[Any]:
    """The node's ``type`` as a list (empty without one)."""
    t = node.get("type")
    return t if isinstance(t, list) else [t] if t is not None else []


# -- tool names ----------------------------------------------------------------------------------


def name_violations(name: Any, max_length: int) -> list[ConversionNote]:
    """Where a tool name breaks ``^[a-zA-Z0-9_-]{1,max_length}$`` (path ``"name"``)."""
    if not isinstance(name, str):
        return [ConversionNote("name", f"a tool name must be a string, not {shown(name)}")]
    found = []
    if not 1 <= len(name) <= max_length:
        found.append(
            ConversionNote("name", f"the name has {len(name)} characters; 1 to {max_length}")
        )
    if name and not _NAME_CHARACTERS.fullmatch(name):
        odd = sorted({c for c in name if not _NAME_CHARACTERS.fullmatch(c)})[:10]
        found.append(
            ConversionNote(
                "name", f"the name may hold only a-z, A-Z, 0-9, '_' and '-', not {shown(odd)}"
            )
        )
    return found


_NAME_CHARACTERS = re.compile(r"[a-zA-Z0-9_-]+")
