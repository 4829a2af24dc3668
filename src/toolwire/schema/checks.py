"""Checks on schemas: does one fit a provider's rules, and which property paths does it describe.

The checks are written from each API's documented rules (and the errors it is seen to answer),
independently of the converters, so they can judge any converter's output (ours in the tests,
peers' in the benchmarks) and say whether a raw declaration is accepted as is:

- [`gemini_violations`][]: ``parametersJsonSchema`` or ``parameters`` of a Gemini function.
- [`anthropic_violations`][]: a Messages API tool's ``input_schema``, with or without strict
  tool use; [`anthropic_strict_budget_violations`][]: a request's strict tools together.
- [`openai_violations`][]: a function tool's ``parameters``, with or without strict mode.
- [`anthropic_name_violations`][], [`openai_name_violations`][]: a tool's name.

Every check takes any value, never raises for what it is given, and is bounded: a schema too
deep or too large to judge gets one note saying so.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal

import jsonschema_rs

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
from toolwire.schema.openai import StrictLimits

__all__ = [
    "anthropic_name_violations",
    "anthropic_pattern_problem",
    "anthropic_strict_budget_violations",
    "anthropic_violations",
    "draft_2020_12_violations",
    "gemini_violations",
    "openai_name_violations",
    "openai_strict_violations",
    "openai_violations",
    "property_paths",
]

_WALK_BUDGET = 200_000
"""Schema nodes one check may queue."""
_REF_CHAIN = 32
"""References [`property_paths`][] follows along one path."""

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
_STRICT_NOTES = 100
"""Notes the strict-mode check lists; the rest are counted."""


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
        if size > _WALK_BUDGET * 5:
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


def _root_violations(schema: Any, refused: tuple[str, ...]) -> list[ConversionNote]:
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


# -- Anthropic -----------------------------------------------------------------------------------

# 400 "tools.N.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the
# top level" (anthropics/claude-code#5319, #5973; mobile-next/mobile-mcp#344): a rule of the API
# that no documentation page states. Other keywords are accepted there: kenn-io/kata PR #365
# moved its top-level rules into `not` and `if`/`then`/`else` for that reason.
_ANTHROPIC_TOP_LEVEL_REFUSED = ("anyOf", "oneOf", "allOf")


def anthropic_violations(input_schema: Any, *, strict: bool = False) -> list[ConversionNote]:
    """Where ``input_schema`` breaks the Messages API's rules for a tool's input. Empty when
    it fits.

    - The root is a JSON object with ``"type": "object"``: the SDK's ``InputSchema`` types it
      ``Literal["object"]`` and the API answers ``input_schema.type: Field required`` without
      it (Kilo-Org/kilocode#12238).
    - No ``anyOf``, ``oneOf`` or ``allOf`` at the top level (see above).
    - Valid against draft 2020-12's meta-schema, which the API checks the whole schema against
      ("JSON schema is invalid. It must match JSON Schema draft 2020-12", anthropics/
      claude-code#63673, anthropics/anthropic-sdk-java#241).

    With ``strict`` (a tool sent ``strict: true``), also strict tool use's rules (see the
    comment above ``_ANTHROPIC_STRICT_KEYWORDS``): supported keywords, formats and patterns
    only, every value typed, every object closed, local references that resolve and never
    recur, and the request's budgets, which one schema alone must fit.
    """
    found = _root_violations(input_schema, _ANTHROPIC_TOP_LEVEL_REFUSED)
    if not isinstance(input_schema, Mapping):
        return found
    found += draft_2020_12_violations(input_schema)
    if strict:
        check = _AnthropicStrictCheck(input_schema)
        found += check.run()
        found += check.budget_notes(1, check.optional, check.unions, "#")
    return found


def anthropic_strict_budget_violations(tools: Any) -> list[ConversionNote]:
    """Where a request's ``tools`` (as the Messages API takes them) pass the budgets of strict
    tool use, which apply to all strict tools of one request together: at most 20 of them,
    24 optional parameters and 16 parameters with union types among their schemas (counted
    as [`anthropic_violations`][] counts them; path ``"tools"``). Empty when they fit."""
    if not isinstance(tools, list | tuple):
        return [ConversionNote("tools", f"tools must be a list, not {shown(tools)}")]
    strict = 0
    optional = unions = 0
    for tool in tools:
        if not isinstance(tool, Mapping) or tool.get("strict") is not True:
            continue
        strict += 1
        check = _AnthropicStrictCheck(tool.get("input_schema"))
        check.run()
        optional += check.optional
        unions += check.unions
    return _AnthropicStrictCheck.budget_notes(strict, optional, unions, "tools")


def anthropic_name_violations(name: Any, *, max_length: int = 64) -> list[ConversionNote]:
    """Where a tool name breaks ``^[a-zA-Z0-9_-]{1,64}$``, the rule Anthropic's tool-use
    documentation gives (path ``"name"``).

    The Messages API itself has taken up to 128 characters since about 2025-08 (``tools.N.
    custom.name: String should have at most 128 characters``, anthropics/claude-code#96152;
    at most 64 before, #5132), but Bedrock's Converse API (aws/aws-sdk-js-v3#7287) and
    ``tool_reference`` blocks (claude-code#21492) still stop at 64: pass ``max_length=128`` to
    judge for the first-party API alone.
    """
    return _name_violations(name, max_length)


# Strict tool use (https://platform.claude.com/docs/en/agents-and-tools/tool-use/strict-tool-use),
# whose schemas follow the structured outputs rules ("JSON Schema limitations",
# https://platform.claude.com/docs/en/build-with-claude/structured-outputs#json-schema-limitations,
# read in stored copies of the page): the basic types; enum of strings, numbers, booleans or
# nulls; const; anyOf; allOf, but not with $ref; local $ref, $defs and definitions; default;
# required; additionalProperties, false on every object; the string formats below; array
# minItems of 0 or 1; pattern with simple regular expressions. Not supported: recursive schemas,
# external $ref, numeric constraints (minimum, maximum, multipleOf), string lengths, array
# constraints beyond minItems 0 or 1, additionalProperties other than false; an unsupported
# feature is a 400. Title and description annotate (the SDK's transform_schema keeps both),
# and a value with neither type, union, enum, const nor reference is one the SDK's
# transform_schema refuses to send. The budgets ("Schema complexity limits", same page) are
# [`anthropic_strict_budget_violations`][]'s.
_ANTHROPIC_STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "allOf",
        "$ref",
        "$defs",
        "definitions",
        "default",
        "description",
        "title",
        "format",
        "minItems",
        "pattern",
    }
)
_ANTHROPIC_STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
_ANTHROPIC_STRICT_TOOLS = 20
_ANTHROPIC_OPTIONAL = 24
"""Parameters not listed in their object's ``required``, across a request's strict schemas."""
_ANTHROPIC_UNIONS = 16
"""Parameters that use ``anyOf`` or a type list, across a request's strict schemas."""
_PRIMITIVES = (str, int, float, bool, type(None))

# Patterns: "Supported regex features: full matching (^...$) and partial matching; quantifiers
# *, +, ?, simple {n,m} cases; character classes [], ., \d, \w, \s; groups (...). NOT
# supported: backreferences to groups (\1, \2), lookahead/lookbehind assertions, word
# boundaries \b, \B, complex {n,m} quantifiers with large ranges" (same page). Other group
# syntax ((?i), named groups) and Unicode property escapes are not listed, so not relied on.
# The docs give no figure for a large range: a bound above this one is taken as one.
_PATTERN_BOUND = 256
_QUANTIFIER = re.compile(r"\{(\d*)(?:,(\d*))?\}")


def anthropic_pattern_problem(pattern: Any) -> str | None:
    """Why strict tool use cannot take ``pattern`` (see the comment above), or None when it is
    a simple regular expression it documents."""
    if not isinstance(pattern, str):
        return f"pattern must be a string, not {shown(pattern)}"
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            escaped = pattern[i + 1 : i + 2]
            if escaped.isdigit() and escaped != "0" and not in_class:
                return "a backreference (\\1, ...) is not supported in a pattern"
            if escaped == "k" and not in_class:
                return "a named backreference is not supported in a pattern"
            if escaped in ("b", "B") and not in_class:
                return "a word boundary (\\b, \\B) is not supported in a pattern"
            if escaped in ("p", "P"):
                return "a Unicode property escape (\\p) is not supported in a pattern"
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":  # a literal ] first in a class
                i += 1
        elif c == "(" and pattern[i + 1 : i + 2] == "?":
            if pattern[i + 2 : i + 3] in ("=", "!") or pattern[i + 2 : i + 4] in ("<=", "<!"):
                return "a lookahead or lookbehind is not supported in a pattern"
            if pattern[i + 2 : i + 3] != ":":
                return "a group of the form (?...) is not supported in a pattern"
        elif c == "{":
            quantifier = _QUANTIFIER.match(pattern, i)
            if quantifier is not None:
                bounds = [int(b) for b in quantifier.groups() if b]
                if any(b > _PATTERN_BOUND for b in bounds):
                    return (
                        f"a quantifier {quantifier.group()} with a large range is not supported "
                        f"in a pattern (above {_PATTERN_BOUND})"
                    )
        i += 1
    return _pattern_syntax(pattern)


def _pattern_syntax(pattern: str) -> str | None:
    """Why ``pattern`` is no regular expression at all (an unclosed group or class, a reversed
    range, a dangling backslash), or None."""
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        return f"the pattern is not a regular expression ({exc})"
    return None


class _AnthropicStrictCheck:
    """One walk over a schema for strict tool use's rules, counting its optional and
    union-typed parameters as written (a definition where it stands, once)."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.found: list[ConversionNote] = []
        self.unlisted = 0
        self.optional = 0
        self.unions = 0
        self.references: dict[str, set[str]] = {}
        """Per reference met, the references its target holds (to find recursion)."""
        self.budget = _WALK_BUDGET
        """Entries every walk together may queue (targets are walked again for their
        references)."""

    def bad(self, path: str, message: str) -> None:
        if len(self.found) < _STRICT_NOTES:
            self.found.append(ConversionNote(path, message))
        else:
            self.unlisted += 1

    def run(self) -> list[ConversionNote]:
        if not isinstance(self.root, Mapping):
            return [
                ConversionNote("#", f"the schema must be a JSON object, not {shown(self.root)}")
            ]
        if not self._walk(self.root, "#", None):
            return self.found
        self._recursion()
        if self.unlisted:
            self.found.append(ConversionNote("#", f"and {self.unlisted} more violations"))
        return self.found

    def _walk(self, start: Any, path: str, refs: set[str] | None) -> bool:
        """Check every node under ``start`` (collecting the references met in ``refs`` when
        given, without judging again); False when it is too large or deep to check."""
        stack: list[tuple[Any, str, int]] = [(start, path, 0)]
        while stack:
            node, where, depth = stack.pop()
            if depth > MAX_DEPTH:
                self.found.append(ConversionNote(where, "schema too deep or too large to check"))
                return False
            if refs is not None:
                if isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
                    refs.add(node["$ref"])
            else:
                self.node(node, where)
            children = list(_subschemas(node, where))
            self.budget -= len(children)
            if self.budget < 0:
                self.found.append(ConversionNote(where, "schema too deep or too large to check"))
                return False
            stack.extend((sub, sub_path, depth + 1) for sub, sub_path in children)
        return True

    def node(self, node: Any, path: str) -> None:
        if not isinstance(node, Mapping):
            self.bad(path, f"a schema must be an object, not {shown(node)}")
            return
        if extra := sorted(map(str, set(node) - _ANTHROPIC_STRICT_KEYWORDS)):
            self.bad(path, f"unsupported keywords {extra}")
        if not {"type", "anyOf", "allOf", "enum", "const", "$ref"} & set(node):
            self.bad(path, "the value has no type")
        types = _types(node)
        if any(not (isinstance(t, str) and t in _JSON_TYPES) for t in types):
            self.bad(path, f"type must name JSON types, not {shown(node.get('type'))}")
        if isinstance(node.get("anyOf"), list) or isinstance(node.get("type"), list):
            self.unions += 1
        if "object" in types or "properties" in node:
            self.object(node, path)
        if "enum" in node:
            enum = node["enum"]
            if not isinstance(enum, list) or not all(isinstance(v, _PRIMITIVES) for v in enum):
                self.bad(path, "enum values must be strings, numbers, booleans or nulls")
        if "const" in node and not isinstance(node["const"], _PRIMITIVES):
            self.bad(path, "const must be a string, a number, a boolean or null")
        fmt = node.get("format")
        if fmt is not None and not (fmt.__class__ is str and fmt in _ANTHROPIC_STRICT_FORMATS):
            self.bad(path, f"format {shown(fmt)} is not supported")
        if "minItems" in node and not (is_count(node["minItems"]) and node["minItems"] <= 1):
            self.bad(path, f"minItems {shown(node['minItems'])} is not supported (only 0 or 1)")
        if "pattern" in node:
            problem = anthropic_pattern_problem(node["pattern"])
            if problem is not None:
                self.bad(path, problem)
        members = node.get("allOf")
        if isinstance(members, list) and any(
            isinstance(m, Mapping) and "$ref" in m for m in members
        ):
            self.bad(path, "allOf with $ref is not supported")
        if "$ref" in node:
            self.reference(node["$ref"], path)

    def object(self, node: Mapping[str, Any], path: str) -> None:
        if node.get("additionalProperties") is not False:
            self.bad(path, "an object must set additionalProperties: false")
        props = node.get("properties")
        names = set(map(str, props)) if isinstance(props, Mapping) else set()
        required = node.get("required")
        listed = (
            set(required)
            if isinstance(required, list) and all(r.__class__ is str for r in required)
            else set()
        )
        if listed - names:
            self.bad(path, f"required names {shown(sorted(listed - names))}, not properties")
        self.optional += len(names - listed)

    def reference(self, ref: Any, path: str) -> None:
        if not (isinstance(ref, str) and ref.startswith("#")):
            self.bad(path, f"$ref {shown(ref)} is not a local reference")
            return
        target = follow_pointer(self.root, ref, None)
        if target is None:
            self.bad(path, f"$ref {shown(ref)} does not point into this schema")
        elif ref not in self.references:
            held: set[str] = set()
            self.references[ref] = held
            self._walk(target, ref, held)

    def _recursion(self) -> None:
        """A note for each reference that leads back to itself (a recursive schema)."""
        graph = self.references
        for start in sorted(graph):
            seen: set[str] = set()
            stack = list(graph[start])
            while stack:
                ref = stack.pop()
                if ref == start:
                    self.bad(start, f"$ref {shown(start)} leads back to itself (recursion)")
                    break
                if ref not in seen:
                    seen.add(ref)
                    stack.extend(graph.get(ref, ()))

    @staticmethod
    def budget_notes(tools: int, optional: int, unions: int, path: str) -> list[ConversionNote]:
        counts = [
            (tools, _ANTHROPIC_STRICT_TOOLS, "strict tools"),
            (optional, _ANTHROPIC_OPTIONAL, "optional parameters"),
            (unions, _ANTHROPIC_UNIONS, "parameters with union types"),
        ]
        return [
            ConversionNote(path, f"{count} {what}; strict tool use allows {limit} per request")
            for count, limit, what in counts
            if count > limit
        ]


def _subschemas(node: Any, path: str) -> Iterator[tuple[Any, str]]:
    """The schemas directly under ``node`` (in properties, items, unions, definitions and a
    schema-valued additionalProperties), with their paths."""
    if not isinstance(node, Mapping):
        return
    for key in ("properties", "$defs", "definitions"):
        named = node.get(key)
        if isinstance(named, Mapping):
            for name, sub in named.items():
                yield sub, f"{path}/{key}/{escape_pointer(str(name))}"
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), Mapping):
            yield node[key], f"{path}/{key}"
    for key in ("anyOf", "allOf", "oneOf", "prefixItems"):
        branches = node.get(key)
        if isinstance(branches, list):
            yield from ((sub, f"{path}/{key}/{i}") for i, sub in enumerate(branches))


# -- OpenAI --------------------------------------------------------------------------------------

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
    found = _root_violations(parameters, _OPENAI_TOP_LEVEL_REFUSED)
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
    return _name_violations(name, 64)


def _types(node: Mapping[str, Any]) -> list[Any]:
    t = node.get("type")
    return t if isinstance(t, list) else [t] if t is not None else []


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
        if len(self.found) < _STRICT_NOTES:
            self.found.append(ConversionNote(path, message))
        else:
            self.unlisted += 1

    def run(self) -> list[ConversionNote]:
        stack: list[tuple[Any, str, int]] = [(self.root, "#", 0)]
        budget = _WALK_BUDGET  # entries pushed, as in property_paths
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
        types = _types(node)
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


def _name_violations(name: Any, max_length: int) -> list[ConversionNote]:
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
