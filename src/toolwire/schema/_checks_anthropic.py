"""The Messages API's rules for a tool's ``input_schema`` and name, and strict tool use's rules
and budgets."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from toolwire.schema._base import (
    JSON_TYPES,
    MAX_DEPTH,
    ConversionNote,
    escape_pointer,
    follow_pointer,
    is_count,
    shown,
)
from toolwire.schema._checks_common import (
    STRICT_NOTES,
    WALK_BUDGET,
    draft_2020_12_violations,
    name_violations,
    root_violations,
    type_list,
)

__all__ = [
    "anthropic_name_violations",
    "anthropic_pattern_problem",
    "anthropic_strict_budget_violations",
    "anthropic_violations",
]

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
    found = root_violations(input_schema, _ANTHROPIC_TOP_LEVEL_REFUSED)
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
    return name_violations(name, max_length)


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
        self.budget = WALK_BUDGET
        """Entries every walk together may queue (targets are walked again for their
        references)."""

    def bad(self, path: str, message: str) -> None:
        if len(self.found) < STRICT_NOTES:
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
        types = type_list(node)
        if any(not (isinstance(t, str) and t in JSON_TYPES) for t in types):
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
