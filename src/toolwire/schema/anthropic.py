"""JSON Schema lowered for an Anthropic tool's ``input_schema``.

Anthropic takes JSON Schema as it is, checks the whole of it against draft 2020-12, and has one
rule of its own: an object root with no ``anyOf``, ``oneOf`` or ``allOf`` at the top level (400
"input_schema does not support oneOf, allOf, or anyOf at the top level"; sources in
[`toolwire.schema.checks.anthropic_violations`][]). Real MCP servers publish such roots: "one
of these sets of arguments" as a top-level ``oneOf``, shared fields as an ``allOf``.

[`to_anthropic_schema`][] starts from what every provider taking JSON Schema is sent
(``for_declaration``: references to other documents removed,
type names in lower case, descriptions cleaned, checked against its dialect's meta-schema as
the validator checks it) and merges the top level into one object:

- ``allOf`` members, and the target of a ``$ref`` beside other keywords: properties merged,
  ``required`` united; a property the members define differently is the ``allOf`` of its
  definitions.
- ``anyOf``/``oneOf`` of object schemas: every alternative's properties (a property they define
  differently is the ``anyOf`` of its definitions), required where every alternative requires
  it; the root's description says what each alternative needs.
- ``not`` and ``if``/``then``/``else``, which the API accepts at the top level, stay there
  (several are folded into one ``not``).
- A ``$ref`` into what the merge rebuilds (``#``, an alternative, a property the alternatives
  define too) points at a copy of its original target under ``$defs``, so it means what it
  meant (``toolwire.schema._kept_refs``).

What merging loosens is still enforced: arguments are validated against the original schema.
Alternatives that are not object schemas cannot be merged: the conversion fails and says why.

[`to_anthropic_strict_schema`][] makes such an ``input_schema`` fit strict tool use
(``strict: true``, grammar-constrained sampling): every object closed, references inlined,
what the grammar cannot carry (numeric bounds, lengths, formats it lacks, complex patterns)
moved into descriptions, and what it cannot express at all refused with a
[`StrictSchemaError`][toolwire.schema.openai.StrictSchemaError]. Optional properties stay
optional, each spending the request's budget of optional parameters (see
[`StrictBudget`][]); ``nullable=True`` makes them required and nullable instead, as OpenAI's
strict mode does, spending the budget of union-typed parameters, with the nulls stripped
before the call.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolwire._text import DESCRIPTION_LIMIT, clean_description
from toolwire.errors import SchemaConversionError
from toolwire.schema._base import (
    ANNOTATIONS,
    JSON_TYPES,
    NOWHERE,
    ConversionNote,
    Lowering,
    UniqueValues,
    follow_pointer,
    same_value,
    short_json,
    shown,
)
from toolwire.schema._kept_refs import dangling, modern_reference, references_kept
from toolwire.schema._rewrite import (
    LATEST_DIALECT,
    MODERN_KEYWORDS,
    ROOT_URI,
    ForDeclaration,
    RewriteWalk,
    lower_types,
    modern_spelling,
    rule_broken,
)
from toolwire.schema.checks import anthropic_pattern_problem, draft_2020_12_violations
from toolwire.schema.openai import (
    STRICT_DESCRIBED,
    NullPath,
    StrictLimits,
    StrictLowering,
    StrictSchemaError,
    accepts_null,
)

__all__ = [
    "STRICT_BUDGET",
    "StrictBudget",
    "StrictCost",
    "StrictForm",
    "strict_cost",
    "to_anthropic_schema",
    "to_anthropic_strict_schema",
]

# Root keywords that send the root through the merge (anything else is declared as it is).
_MERGED = frozenset({"anyOf", "oneOf", "allOf", "$ref", "enum", "const", "nullable"})
_CONDITION = ("if", "then", "else")
_FIXED = ("enum", "const")
_TYPE_NAMES = ", ".join(sorted(JSON_TYPES))

_LISTED = 12
"""Alternatives the description spells out (the rest are counted)."""
_NAMED = 8
"""Properties named per alternative."""
_NAME_LENGTH = 40
_SENTENCE = 1_000
"""Characters the sentence on the alternatives may take in the root's description."""


def to_anthropic_schema(schema: Mapping[str, Any]) -> tuple[dict[str, Any], list[ConversionNote]]:
    """``schema`` as an Anthropic tool's ``input_schema``: an object root without top-level
    ``anyOf``/``oneOf``/``allOf``, valid under draft 2020-12 (see the module docstring).

    Returns:
        A new top-level dict (nested values may be shared with ``schema``; treat them as
        read-only) and a note for each change.

    Raises:
        SchemaConversionError: for a schema the validator refuses too (not valid JSON Schema,
            an unknown type name, a reference that points to nothing), one nested beyond the
            bounds, or top-level alternatives that are not all object schemas (or hold a
            ``not`` or an ``if``), which no single object can stand for.
    """
    if not isinstance(schema, Mapping):
        raise SchemaConversionError(
            f"the input schema must be a JSON object, not {type(schema).__name__}"
        )
    walk = _Declared(schema)
    prepared: Mapping[str, Any] = walk.schema(schema, "#", ROOT_URI, 0)
    notes = walk.notes
    problem = rule_broken(prepared)  # the dialect's own rules, as the validator applies them
    if problem is not None:
        reason, where = problem
        raise SchemaConversionError(_type_problem(prepared, where) or reason, path=where)
    # Another dialect's schema is mostly valid 2020-12 as it is (draft 7's, say); what is not
    # (tuple items, boolean bounds) is written in 2020-12's spelling.
    rewritten = walk.dialect != LATEST_DIALECT and bool(draft_2020_12_violations(prepared, limit=1))
    if rewritten:
        modern = _Written2020(prepared)
        prepared = modern.schema(prepared, "#", ROOT_URI, 0)
        notes += modern.notes
    lowering = _TopLevel(prepared)
    out = lowering.run()
    notes += lowering.notes
    if lowering.rebuilt or rewritten:
        _check_written(out)
    return out, notes


class _Declared(ForDeclaration):
    """``for_declaration``'s walk, noting each type name it writes in lower case
    (``"OBJECT"``, ``["STRING", "null"]``)."""

    def edit(self, node: Mapping[str, Any], path: str, base: str) -> dict[str, Any] | None:
        types = node.get("type")
        if types is not None and not (types.__class__ is str and types in JSON_TYPES):
            lowered = lower_types(types)
            if lowered != types:
                self.note(path, f"type {shown(types)} written as {shown(lowered)}")
        return super().edit(node, path, base)


class _Written2020(RewriteWalk):
    """A schema of an older dialect as draft 2020-12 reads it: tuple ``items`` and boolean
    exclusive bounds in their 2020-12 spelling, no ``$schema`` naming another dialect."""

    def edit(self, node: Mapping[str, Any], path: str, base: str) -> dict[str, Any] | None:
        out = modern_spelling(node) if not MODERN_KEYWORDS.isdisjoint(node) else None
        if out is not None:
            self.note(path, "tuple items or a boolean exclusive bound written as in draft 2020-12")
        if "$schema" in node and node["$schema"] != LATEST_DIALECT:
            out = dict(node) if out is None else out
            del out["$schema"]
            self.note(
                path,
                f"$schema {shown(node['$schema'])} dropped: Anthropic reads the schema as "
                "draft 2020-12",
            )
        ref = node.get("$ref")
        if ref.__class__ is str and ref.startswith("#/"):
            modern = modern_reference(self.root, ref)
            if modern != ref:
                out = dict(node) if out is None else out
                out["$ref"] = modern
                self.note(path, f"$ref {shown(ref)} written as {shown(modern)}, where it points")
        return out


def _type_problem(schema: Mapping[str, Any], where: str) -> str | None:
    """A plain reason for a meta-schema error on a ``type`` keyword, or None."""
    if not where.endswith("/type"):
        return None
    value = follow_pointer(schema, where, None)
    names = value if isinstance(value, list) else [value]
    unknown = [t for t in names if not (isinstance(t, str) and t in JSON_TYPES)]
    if unknown:
        return (
            f"type {shown(unknown[0])} is not a JSON Schema type ({_TYPE_NAMES}); the "
            "validator refuses this schema too"
        )
    if len(set(names)) < len(names):
        return f"type list {shown(value)} names a type twice"
    return None


def _check_written(schema: Mapping[str, Any]) -> None:
    """Refuse what the merge or a dialect's rewriting left invalid for the API.

    Raises:
        SchemaConversionError: for a schema that breaks draft 2020-12's meta-schema, or a
            local reference that points nowhere (the merge and the rewriting keep every
            reference that pointed somewhere, so it pointed nowhere before either; the
            validator refuses it too).
    """
    problems = draft_2020_12_violations(schema, limit=1)
    if problems:
        raise SchemaConversionError(problems[0].message, path=problems[0].path)
    nowhere = dangling(schema)
    if nowhere is not None:
        raise SchemaConversionError(f"$ref {shown(nowhere[1])} points to nothing", path=nowhere[0])


class _Shape:
    """One object schema assembled from parts: conjuncts (the root, its ``allOf`` members,
    referenced targets) or alternatives. A name defined several ways gets ``combine`` of its
    definitions."""

    __slots__ = (
        "combine",
        "conditions",
        "description",
        "keywords",
        "lowering",
        "merged",
        "negations",
        "path",
        "properties",
        "required",
        "sentences",
        "title",
    )

    def __init__(self, lowering: _TopLevel, combine: str, path: str) -> None:
        self.lowering = lowering
        self.combine = combine
        self.path = path
        self.properties: dict[Any, UniqueValues] = {}
        self.required: dict[str, None] = {}  # an ordered set
        self.keywords: dict[str, Any] = {}
        self.description: str | None = None
        self.title: str | None = None
        self.negations: list[Any] = []
        self.conditions: list[dict[str, Any]] = []
        self.sentences: list[str] = []
        self.merged: set[str] = set()
        """References merged in already: merging one again changes nothing."""

    def add_property(self, name: Any, definition: Any) -> None:
        values = self.properties.get(name)
        if values is None:
            values = self.properties[name] = UniqueValues(self.lowering, self.path)
        values.add(definition)

    def definition(self, name: Any) -> Any:
        values = self.properties[name].values
        return values[0] if len(values) == 1 else {self.combine: list(values)}

    def keyword(self, key: str, value: Any, path: str) -> None:
        """Set a keyword the merge does not combine; the first definition stands."""
        if key not in self.keywords:
            self.keywords[key] = value
        elif not same_value(self.keywords[key], value):
            self.lowering.note(path, f"{key} differs from an earlier part's; the first is declared")

    def absorb(self, other: _Shape) -> None:
        """Merge another shape in, as one more conjunct."""
        for name in other.properties:
            self.add_property(name, other.definition(name))
        for name in other.required:
            self.required.setdefault(name)
        for key, value in other.keywords.items():
            self.keyword(key, value, other.path)
        self.negations += other.negations
        self.conditions += other.conditions
        self.sentences += other.sentences


class _TopLevel(Lowering):
    """The merge of a prepared schema's top level into one object."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        super().__init__(root)
        self.rebuilt = False
        """Whether the root was rebuilt (a plain object root is declared as it is)."""
        self._following: list[str] = []
        """References whose targets are being merged, innermost last."""

    def run(self) -> dict[str, Any]:
        root = self.root
        plain = root.get("type") == "object" and isinstance(root.get("properties", {}), Mapping)
        if plain and root.keys().isdisjoint(_MERGED):
            out = dict(root)
            out.setdefault("properties", {})
            return out
        self.rebuilt = True
        shape = _Shape(self, "allOf", "#")
        if "type" not in root:
            self.note("#", 'type "object" added at the root (Anthropic requires it)')
        self.conjunct(shape, root, "#", 0, frozenset(), None)
        return references_kept(self, self.assemble(shape))

    # -- conjuncts ---------------------------------------------------------------------------

    def conjunct(
        self,
        shape: _Shape,
        node: Any,
        path: str,
        depth: int,
        ancestors: frozenset[str],
        alternative: str | None,
    ) -> None:
        """Merge ``node`` into ``shape`` as one more conjunct.

        ``ancestors`` are the references being followed around the alternatives being
        lowered (one met again is a cycle); ``alternative`` names the alternative ``shape``
        stands for, if any (where a negation, a condition or a fixed value cannot go).
        """
        self.visit(path, depth)
        where = alternative or "the input schema"
        if node is True:
            return
        if not isinstance(node, Mapping):
            accepts = "accepts nothing" if node is False else "is not a schema"
            raise SchemaConversionError(f"{where} {accepts}", path=path)
        self.spend(len(node), path)
        types = node.get("type")
        if types is not None:
            names = types if isinstance(types, list) else [types]
            if "object" not in names:
                raise SchemaConversionError(
                    f"{where} is not an object schema (type {shown(types)}), so no object "
                    "can stand for it",
                    path=path,
                )
            if len(names) > 1:
                self.note(path, f"type {shown(types)} narrowed to object")
        has_condition = False
        for key, value in node.items():
            if key in ("$ref", "type", "$defs", "definitions"):
                continue
            if key == "allOf":
                if isinstance(value, list):
                    self.note(path, f"allOf of {len(value)} members merged into one object")
                for i, member in enumerate(value if isinstance(value, list) else ()):
                    self.conjunct(
                        shape, member, f"{path}/allOf/{i}", depth + 1, ancestors, alternative
                    )
            elif key in ("anyOf", "oneOf"):
                # The references being followed here: one met again inside the alternatives
                # is a cycle. One merged before beside them (an earlier member's) is not.
                inner = ancestors | frozenset(self._following)
                shape.absorb(self.alternatives(value, key, f"{path}/{key}", depth + 1, inner))
            elif key == "properties" and isinstance(value, Mapping):
                self.spend(len(value), path)
                for name, sub in value.items():
                    shape.add_property(name, sub)
            elif key == "required" and isinstance(value, list):
                self.spend(len(value), path)
                for name in value:
                    if name.__class__ is str:
                        shape.required.setdefault(name)
            elif key == "description":
                if shape.description is None:
                    shape.description = value
            elif key == "title" and alternative is not None:
                if shape.title is None and isinstance(value, str):
                    shape.title = value
            elif key == "not" or key in _CONDITION:
                if alternative is not None:
                    raise SchemaConversionError(
                        f"{alternative} holds {key}: alternatives with a negation or a "
                        "condition cannot be merged into one object",
                        path=path,
                    )
                if key == "not":
                    shape.negations.append(value)
                elif not has_condition:
                    has_condition = True
                    shape.conditions.append({k: node[k] for k in _CONDITION if k in node})
            elif key == "nullable":  # OpenAPI's: arguments are an object, never null
                self.note(path, "nullable dropped (arguments are an object)")
            elif key in _FIXED:
                if alternative is not None:
                    raise SchemaConversionError(
                        f"{alternative} is a fixed value ({key}), not an object schema",
                        path=path,
                    )
                self.note(path, f"{key} on the root dropped (arguments are an object)")
            elif path == "#" or key not in ANNOTATIONS:
                shape.keyword(key, value, path)
        ref = node.get("$ref")
        if ref is not None:  # after the node's own keywords, which come first
            self.reference(shape, ref, path, depth, ancestors, alternative)

    def reference(
        self,
        shape: _Shape,
        ref: Any,
        path: str,
        depth: int,
        ancestors: frozenset[str],
        alternative: str | None,
    ) -> None:
        """Merge the target of a local reference into ``shape``.

        Raises:
            SchemaConversionError: for a reference that cannot be followed, one that leads
                back to itself, or one back to alternatives it stands in.
        """
        if ref.__class__ is not str:
            self.resolve(ref, path)  # raises: only a string can be a reference
        if ref in ancestors:
            raise SchemaConversionError(
                f"$ref {shown(ref)} leads back to the alternatives it stands in", path=path
            )
        if ref in self._following:  # as every other lowering refuses it
            raise SchemaConversionError(
                f"$ref {shown(ref)} leads back to itself (a reference cycle at the top level)",
                path=path,
            )
        if ref in shape.merged:
            return  # met again beside itself: merging it twice changes nothing
        shape.merged.add(ref)
        target = self.resolve(ref, path)
        self._following.append(ref)
        try:
            self.conjunct(shape, target, ref, depth + 1, ancestors, alternative)
        finally:
            self._following.pop()

    # -- alternatives --------------------------------------------------------------------------

    def alternatives(
        self, branches: Any, key: str, path: str, depth: int, ancestors: frozenset[str]
    ) -> _Shape:
        """``anyOf``/``oneOf`` of object schemas as one shape: every property, a property
        defined differently as the ``anyOf`` of its definitions, required where every
        alternative requires it, and a sentence saying what each alternative needs."""
        if not isinstance(branches, list) or not branches:
            raise SchemaConversionError(f"{key} must be a non-empty list", path=path)
        variants = []
        for i, branch in enumerate(branches):
            variant = _Shape(self, "allOf", f"{path}/{i}")
            self.conjunct(
                variant,
                branch,
                f"{path}/{i}",
                depth + 1,
                ancestors,
                f"alternative {i + 1} of {key}",
            )
            if variant.sentences:
                self.note(f"{path}/{i}", "nested alternatives merged without being described")
                variant.sentences = []
            variants.append(variant)
        union = _Shape(self, "anyOf", path)
        for variant in variants:
            for name in variant.properties:
                union.add_property(name, variant.definition(name))
        common = set(variants[0].required).intersection(*(v.required for v in variants[1:]))
        union.required = {name: None for name in variants[0].required if name in common}
        first = variants[0].keywords
        union.keywords = {
            k: value
            for k, value in first.items()
            if all(k in v.keywords and same_value(v.keywords[k], value) for v in variants[1:])
        }
        self.spend(len(first) * len(variants), path)
        union.sentences.append(_sentence(key, variants))
        self.note(path, f"{key} of {len(variants)} object schemas merged into one object")
        return union

    # -- the root ------------------------------------------------------------------------------

    def assemble(self, shape: _Shape) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object"}
        description = _described(shape.description, shape.sentences)
        if description:
            out["description"] = description
        out["properties"] = {name: shape.definition(name) for name in shape.properties}
        if shape.required:
            out["required"] = list(shape.required)
        out.update(shape.keywords)
        # All of them must hold: each extra condition goes into the one `not`, negated.
        negated = shape.negations + [{"not": c} for c in shape.conditions[1:]]
        if len(negated) > 1:
            self.note("#", f"{len(negated)} negations and conditions folded into one not")
        if negated:
            out["not"] = negated[0] if len(negated) == 1 else {"anyOf": negated}
        if shape.conditions:
            out.update(shape.conditions[0])
        for key in ("$defs", "definitions"):  # what references in the properties point to
            if key in self.root:
                out[key] = self.root[key]
        return out


def _fixed(definition: Any) -> Any:
    """The one value a property definition allows (``const``, one-value ``enum``), or NOWHERE."""
    if isinstance(definition, Mapping):
        if "const" in definition:
            return definition["const"]
        enum = definition.get("enum")
        if isinstance(enum, list) and len(enum) == 1:
            return enum[0]
    return NOWHERE


def _name(name: Any) -> str:
    text = str(name)
    return text if len(text) <= _NAME_LENGTH else text[: _NAME_LENGTH - 3] + "..."


def _label(variant: _Shape) -> str:
    """What one alternative needs: the properties it fixes (``shape="circle"``), then those
    it requires."""
    parts = []
    fixed = set()
    for name in variant.properties:
        value = _fixed(variant.definition(name))
        if value is not NOWHERE:
            fixed.add(name)
            parts.append(f"{_name(name)}={short_json(value)[:_NAME_LENGTH]}")
    parts += [_name(name) for name in variant.required if name not in fixed]
    text = ", ".join(parts[:_NAMED]) + (", ..." if len(parts) > _NAMED else "")
    if not text:
        optional = [_name(name) for name in list(variant.properties)[:_NAMED]]
        text = f"{', '.join(optional)} (none required)" if optional else "no property required"
    title = variant.title
    if title and len(title) <= _NAME_LENGTH and "\n" not in title:
        text = f"{title}: {text}"
    return text


def _sentence(key: str, variants: list[_Shape]) -> str:
    lead = "Provide exactly one of" if key == "oneOf" else "Provide at least one of"
    parts = [f"({i}) {_label(v)}" for i, v in enumerate(variants[:_LISTED], 1)]
    if len(variants) > _LISTED:
        parts.append(f"and {len(variants) - _LISTED} more")
    text = f"{lead}: {'; '.join(parts)}."
    return text if len(text) <= _SENTENCE else text[: _SENTENCE - 4] + "...."


def _described(description: Any, sentences: list[str]) -> str:
    """The root's description with the sentences on its alternatives after it, the
    description cut first when both do not fit."""
    extra = clean_description(" ".join(sentences), limit=DESCRIPTION_LIMIT // 2)
    room = DESCRIPTION_LIMIT - len(extra.encode("utf-8")) - 2  # a full stop and a space
    text = clean_description(description if isinstance(description, str) else None, limit=room)
    text = text.rstrip()
    if not extra:
        return text
    if text and text[-1].isalnum():
        text += "."
    return f"{text} {extra}".strip()


# -- strict tool use -----------------------------------------------------------------------------

# The rules are those of structured outputs ("JSON Schema limitations"), the budgets its
# "Schema complexity limits" (https://platform.claude.com/docs/en/build-with-claude/
# structured-outputs; the checker, toolwire.schema.checks, cites both): "Strict tools per
# request: 20", "Optional parameters: 24 ... Each parameter not listed in `required` counts",
# "Parameters with union types: 16 ... that use `anyOf` or type arrays", all "the combined
# total across all strict schemas in a single request".


@dataclass(frozen=True, slots=True)
class StrictCost:
    """What one strict schema spends of a request's [`StrictBudget`][]."""

    optional: int
    """Properties not in their object's ``required`` (at any depth)."""
    unions: int
    """Values that use ``anyOf`` or a type list (``["string", "null"]`` is one)."""


@dataclass(frozen=True, slots=True)
class StrictBudget:
    """What all strict tools of one Messages request may spend together (Anthropic's explicit
    limits; the API refuses a request past one)."""

    tools: int = 20
    optional: int = 24
    unions: int = 16

    def fits(self, cost: StrictCost) -> bool:
        """True when one more strict tool costing ``cost`` fits what is left."""
        return self.tools >= 1 and cost.optional <= self.optional and cost.unions <= self.unions

    def after(self, cost: StrictCost) -> StrictBudget:
        """What is left once a strict tool costing ``cost`` is declared."""
        return StrictBudget(
            self.tools - 1, self.optional - cost.optional, self.unions - cost.unions
        )


STRICT_BUDGET = StrictBudget()
"""The budget of one request."""


@dataclass(frozen=True, slots=True)
class StrictForm:
    """An ``input_schema`` made strict."""

    schema: dict[str, Any]
    null_paths: tuple[NullPath, ...]
    """Where an optional argument was made nullable (``nullable=True``): a null there means
    "left out" and is stripped before the call."""
    cost: StrictCost
    notes: tuple[ConversionNote, ...]
    """What making it strict changed beyond what the schema's own keywords show."""


_UNLIMITED = sys.maxsize
# OpenAI's limits do not apply; the node cap is toolwire's own (see StrictLimits.nodes).
_LIMITS = StrictLimits(
    properties=_UNLIMITED,
    nesting=_UNLIMITED,
    enum_values=_UNLIMITED,
    string_budget=_UNLIMITED,
    large_enum=_UNLIMITED,
    large_enum_budget=_UNLIMITED,
)
_NUMERIC_AND_LENGTHS = frozenset(
    {
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "maxItems",
    }
)
_ANNOTATED = ("description", "title")
_STRICT_FORMATS = frozenset(
    {
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "uri",
        "ipv4",
        "ipv6",
        "uuid",
    }
)


class _AnthropicStrict(StrictLowering):
    """OpenAI's strict walk with Anthropic's rules: numeric bounds, lengths and array limits
    other than ``minItems`` 0 or 1 described, ``uri`` among the formats, ``default`` kept,
    patterns kept when simple, and ``required`` as the schema has it (unless ``nullable``)."""

    KEPT = frozenset({"title", "description", "default"})
    DESCRIBED = (STRICT_DESCRIBED - {"default"}) | _NUMERIC_AND_LENGTHS
    FORMATS = _STRICT_FORMATS

    def __init__(self, root: Any, *, nullable: bool) -> None:
        super().__init__(root, _LIMITS)
        self.nullable = nullable

    def keyword(self, key: str, value: Any, out: dict[str, Any], hints: list[str]) -> None:
        if key == "pattern":
            if anthropic_pattern_problem(value) is None:
                out[key] = value
            else:  # as written: JSON would double every backslash
                hints.append(f"pattern: {value if isinstance(value, str) else short_json(value)}")
        elif key == "minItems":
            if value.__class__ is int and value in (0, 1):
                out[key] = value
            else:  # at least one item still holds for any larger minimum
                if value.__class__ is int and value > 1:
                    out[key] = 1
                hints.append(f"minItems: {short_json(value)}")
        else:
            super().keyword(key, value, out, hints)

    def _enum(self, node: Mapping[str, Any], out: dict[str, Any], path: str) -> None:
        if "const" in node and isinstance(node["const"], Mapping | list):
            raise self.refuse("const must be a string, a number, a boolean or null", path)
        super()._enum(node, out, path)

    def _object(
        self,
        node: Mapping[str, Any],
        out: dict[str, Any],
        path: str,
        instance: NullPath,
        depth: int,
        objects: int,
        refs: tuple[str, ...],
    ) -> None:
        if not node.get("properties") and "additionalProperties" not in node:
            branches = out.get("anyOf")
            if branches and all(b.get("type") == "object" for b in branches):
                del out["type"]  # {"type": "object", "oneOf": [objects]}: each closed alone
                return
            # Closing an object that names no property would leave it only {}: the argument
            # could carry nothing. (The root is the arguments: no properties means none.)
            if path != "#":
                raise self.refuse("an object of any keys (no properties) cannot be strict", path)
        super()._object(node, out, path, instance, depth, objects, refs)
        if not out["required"] and "required" not in node:
            del out["required"]  # nothing is required, as before

    def optional(self, schema: dict[str, Any], instance: NullPath) -> dict[str, Any]:
        if self.nullable:
            return super().optional(schema, instance)
        # A null whose default is null means what leaving the argument out means: the model
        # leaves it out, and the union it needed is not spent.
        if schema.get("default", NOWHERE) is None and accepts_null(schema):
            narrowed = _without_null(schema)
            if narrowed is not None:
                return narrowed
        return schema

    def required(self, converted: Mapping[str, Any], required: set[str]) -> list[str]:
        if self.nullable:
            return super().required(converted, required)
        return [name for name in converted if name in required]


def _without_null(schema: dict[str, Any]) -> dict[str, Any] | None:
    """``schema`` (an optional property defaulting to null) without its null and default,
    and with no union left where one type remains; None when null cannot be taken out
    cleanly (a const null, an enum of null alone, a union whose null is not a branch)."""
    out = {k: v for k, v in schema.items() if k != "default"}
    types = out.get("type")
    if isinstance(types, list) and "null" in types:
        rest = [t for t in types if t != "null"]
        if not rest:
            return None
        out["type"] = rest[0] if len(rest) == 1 else rest
    enum = out.get("enum")
    if isinstance(enum, list) and None in enum:
        values = [v for v in enum if v is not None]
        if not values:
            return None
        out["enum"] = values
    branches = out.get("anyOf")
    if isinstance(branches, list):
        kept = [b for b in branches if b != {"type": "null"}]
        if not kept or any(isinstance(b, Mapping) and accepts_null(b) for b in kept):
            return None
        out["anyOf"] = kept
        if len(kept) == 1 and isinstance(kept[0], Mapping) and set(out) <= {"anyOf", *_ANNOTATED}:
            out = _merged_annotations(out, kept[0])
    if "const" in out and out["const"] is None:
        return None
    return out if not accepts_null(out) else None


def _merged_annotations(outer: Mapping[str, Any], only: Mapping[str, Any]) -> dict[str, Any]:
    """The one branch left of ``outer``'s ``anyOf``, with ``outer``'s title and description
    (two descriptions joined, the property's first)."""
    out = dict(only)
    title = outer.get("title")
    if title is not None:
        out["title"] = title
    described = [
        d for d in (outer.get("description"), only.get("description")) if isinstance(d, str) and d
    ]
    if described:
        out["description"] = " ".join(dict.fromkeys(described))
    return out


def strict_cost(schema: Any) -> StrictCost:
    """What a strict schema made here spends (references are inlined, so each value is counted
    where it stands)."""
    optional = unions = 0
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, Mapping):
            continue
        if isinstance(node.get("anyOf"), list) or isinstance(node.get("type"), list):
            unions += 1
        props = node.get("properties")
        if isinstance(props, Mapping):
            required = node.get("required")
            listed = set(required) if isinstance(required, list) else set()
            optional += sum(1 for name in props if name not in listed)
            stack.extend(props.values())
        if isinstance(node.get("items"), Mapping):
            stack.append(node["items"])
        if isinstance(node.get("anyOf"), list):
            stack.extend(node["anyOf"])
    return StrictCost(optional, unions)


def to_anthropic_strict_schema(schema: Mapping[str, Any], *, nullable: bool = False) -> StrictForm:
    """``schema`` (an ``input_schema`` as [`to_anthropic_schema`][] gives it) made to fit
    strict tool use (see the module docstring).

    Args:
        schema: the schema; never modified.
        nullable: make optional properties required and nullable (their paths recorded),
            rather than leave them optional.

    Raises:
        StrictSchemaError: why the schema cannot be strict (send the tool without ``strict``).
    """
    conversion = _AnthropicStrict(schema, nullable=nullable)
    try:
        strict = conversion.run()
    except StrictSchemaError:
        raise
    except SchemaConversionError as exc:
        raise StrictSchemaError(exc.reason, path=exc.path) from None
    return StrictForm(
        strict, tuple(conversion.null_paths), strict_cost(strict), tuple(conversion.notes)
    )
