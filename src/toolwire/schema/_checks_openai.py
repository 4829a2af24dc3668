"""OpenAI's rules for a function tool's ``parameters`` and name, with or without strict mode."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from toolwire.schema._base import ConversionNote, escape_pointer, follow_pointer, shown
from toolwire.schema._checks_common import (
    STRICT_NOTES,
    WALK_BUDGET,
    draft_2020_12_violations,
    name_violations,
    root_violations,
    type_list,
)
from toolwire.schema.openai import StrictLimits

__all__ = ["openai_name_violations", "openai_strict_violations", "openai_violations"]

# 400 "Invalid schema for function 'x': schema must have type 'object' and not have
# 'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level" (nspady/google-calendar-mcp#39,
# langchain-ai/langchainjs#9804), with or without strict mode; a root without the type gets
# "schema must be a JSON Schema of 'type: \"object\"', got 'type: \"None\"'"
# (browserbase/stagehand#1159).
_OPENAI_TOP_LEVEL_REFUSED = ("anyOf", "oneOf", "allOf", "enum", "not")

# Strict mode (the Structured Outputs guide, "Supported schemas", read in stored copies; the
# limits as its current text gives them, also in jsonschemaprofiles.unitvectorylabs.com's
# February 2026 profile): types string, number, boolean, integer, object, array, null; enum;
# anyOf (not at the root); $defs and $ref (recursion allowed); string pattern and format (the
# formats below); number multipleOf, maximum, exclusiveMaximum, minimum, exclusiveMinimum;
# array minItems, maxItems. minLength and maxLength are listed for no model. Every object sets
# additionalProperties: false and requires every property. Limits ([`StrictLimits`][]):
# 5,000 properties in all, 10 levels of nested objects, 1,000 enum values in all, 120,000
# characters of property names, definition names, enum and const values, and 15,000 characters
# for one string enum of more than 250 values.
_STRICT_KEYWORDS = frozenset(
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
_STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)


def openai_violations(parameters: Any, *, strict: bool) -> list[ConversionNote]:
    """Where ``parameters`` breaks OpenAI's rules for a function tool (Chat Completions and
    Responses alike). Empty when it fits.

    Always: the root is a JSON object with ``"type": "object"`` and no ``anyOf``, ``oneOf``,
    ``allOf``, ``enum`` or ``not`` at the top level; the schema is valid JSON Schema (the API
    answers meta-schema errors such as "None is not of type 'array'", yomo/yomo#860, and
    "[] is not of type 'object', 'boolean'", FoundationAgents/OpenManus#1162; checked against
    draft 2020-12).

    With ``strict``, also strict mode's rules (see the comment above ``_STRICT_KEYWORDS``):
    supported keywords and formats only, every value typed, every object closed with every
    property required, local references that resolve, and the documented limits.
    """
    found = root_violations(parameters, _OPENAI_TOP_LEVEL_REFUSED)
    if not isinstance(parameters, Mapping):
        return found
    found += draft_2020_12_violations(parameters)
    if strict:
        found += _StrictCheck(parameters, StrictLimits()).run()
    return found


def openai_strict_violations(schema: Any) -> list[ConversionNote]:
    """Where ``schema`` breaks strict mode's own rules: an object root, then what
    [`openai_violations`][] checks with ``strict=True`` beyond the rules of every function
    (the top-level keywords and the meta-schema), as this check always has."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return [ConversionNote("#", "the root must be an object")]
    return _StrictCheck(schema, StrictLimits()).run()


def openai_name_violations(name: Any) -> list[ConversionNote]:
    """Where a function name breaks OpenAI's rule (path ``"name"``): "Must be a-z, A-Z, 0-9,
    or contain underscores and dashes, with a maximum length of 64" (``FunctionDefinition.
    name`` in openai-python)."""
    return name_violations(name, 64)


class _StrictCheck:
    """One walk over a schema for OpenAI's strict-mode rules and limits. References are not
    followed (recursion is allowed): definitions are checked where they stand, their nesting
    counted from their own root."""

    def __init__(self, root: Mapping[str, Any], limits: StrictLimits) -> None:
        self.root = root
        self.limits = limits
        self.found: list[ConversionNote] = []
        self.properties = 0
        self.enum_values = 0
        self.characters = 0
        self.too_deep = False
        self.unlisted = 0

    def bad(self, path: str, message: str) -> None:
        if len(self.found) < STRICT_NOTES:
            self.found.append(ConversionNote(path, message))
        else:
            self.unlisted += 1

    def run(self) -> list[ConversionNote]:
        stack: list[tuple[Any, str, int]] = [(self.root, "#", 0)]
        budget = WALK_BUDGET  # entries pushed, as in property_paths
        while stack:
            node, path, objects = stack.pop()
            children = list(self.node(node, path, objects))
            budget -= len(children)
            if budget < 0:
                self.found.append(ConversionNote(path, "schema too large to check"))
                break
            stack.extend(children)
        if self.unlisted:
            self.found.append(ConversionNote("#", f"and {self.unlisted} more violations"))
        limits = self.limits  # the totals, always listed
        totals = [
            (self.properties, limits.properties, "properties"),
            (self.enum_values, limits.enum_values, "enum values"),
            (self.characters, limits.string_budget, "characters of names, enum and const values"),
        ]
        self.found.extend(
            ConversionNote("#", f"{count} {what}; strict mode allows {limit}")
            for count, limit, what in totals
            if count > limit
        )
        return self.found

    def node(self, node: Any, path: str, objects: int) -> Iterator[tuple[Any, str, int]]:
        """Check one node; yield its subschemas with the objects nested above them."""
        if not isinstance(node, Mapping):
            self.bad(path, f"a schema must be an object, not {shown(node)}")
            return
        if extra := sorted(map(str, set(node) - _STRICT_KEYWORDS)):
            self.bad(path, f"unsupported keywords {extra}")
        if not {"type", "anyOf", "enum", "const", "$ref"} & set(node):
            self.bad(path, "the value has no type")
        types = type_list(node)
        if "object" in types or "properties" in node:
            objects += 1
            self.object(node, path, objects)
        ref = node.get("$ref")
        if ref is not None and not (
            isinstance(ref, str) and ref.startswith("#") and follow_pointer(self.root, ref, None)
        ):
            self.bad(path, f"$ref {shown(ref)} does not point into this schema")
        fmt = node.get("format")
        if fmt is not None and not (fmt.__class__ is str and fmt in _STRICT_FORMATS):
            self.bad(path, f"format {shown(fmt)} is not supported")
        self.values(node, path)
        if "items" in node:
            yield node["items"], f"{path}/items", objects
        if isinstance(node.get("additionalProperties"), Mapping):  # false: checked above
            yield node["additionalProperties"], f"{path}/additionalProperties", objects
        props = node.get("properties")
        if isinstance(props, Mapping):
            for name, sub in props.items():
                yield sub, f"{path}/properties/{escape_pointer(str(name))}", objects
        for key in ("$defs", "definitions"):
            defs = node.get(key)
            if isinstance(defs, Mapping):
                for name, sub in defs.items():
                    self.characters += len(str(name))
                    yield sub, f"{path}/{key}/{escape_pointer(str(name))}", 0
        branches = node.get("anyOf")
        if isinstance(branches, list):
            yield from ((sub, f"{path}/anyOf/{i}", objects) for i, sub in enumerate(branches))

    def object(self, node: Mapping[str, Any], path: str, objects: int) -> None:
        if objects == self.limits.nesting + 1 and not self.too_deep:
            self.too_deep = True  # one note
            self.bad(path, f"objects nested deeper than {self.limits.nesting} levels (strict mode)")
        if node.get("additionalProperties") is not False:
            self.bad(path, "an object must set additionalProperties: false")
        props = node.get("properties")
        names = list(props) if isinstance(props, Mapping) else []
        required = node.get("required")
        listed = required if isinstance(required, list) else []
        if not all(r.__class__ is str for r in listed) or set(listed) != set(names):
            self.bad(path, "every property must be required")
        self.properties += len(names)
        self.characters += sum(len(str(n)) for n in names)

    def values(self, node: Mapping[str, Any], path: str) -> None:
        """Count enum and const values against the limits."""
        const = node.get("const")
        if isinstance(const, str):
            self.characters += len(const)
        enum = node.get("enum")
        if not isinstance(enum, list):
            return
        self.enum_values += len(enum)
        strings = [v for v in enum if isinstance(v, str)]
        length = sum(map(len, strings))
        self.characters += length
        limits = self.limits
        if len(strings) > limits.large_enum and length > limits.large_enum_budget:
            self.bad(
                path,
                f"{len(strings)} string enum values of {length} characters; strict mode allows "
                f"{limits.large_enum_budget} characters past {limits.large_enum} values",
            )
