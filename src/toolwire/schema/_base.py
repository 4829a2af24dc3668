"""What every schema lowering shares: bounded walking, local ``$ref`` resolution, ``allOf``
merging, type-list splitting, the object root, and notes on what was changed.

Schemas are untrusted input. Nothing here mutates the caller's dicts, every walk is bounded in
depth and node count, and ``properties`` keys are treated as names, never as keywords.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from toolwire._text import clean_description
from toolwire.errors import SchemaConversionError

__all__ = [
    "ANNOTATIONS",
    "ANNOUNCED_DROPS",
    "DATA_KEYWORDS",
    "MANY_SUBSCHEMAS",
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_WORK",
    "NAME_MAPS",
    "ONE_SUBSCHEMA",
    "ConversionNote",
    "Lowering",
    "UniqueValues",
    "escape_pointer",
    "same_value",
    "shown",
]

MAX_DEPTH = 100
"""Nesting levels a schema may have (after following references)."""
MAX_NODES = 100_000
"""Schema nodes one conversion may visit."""
MAX_WORK = 2_000_000
"""Entries (keywords, properties, members, list items) one conversion may read, each time it
reads them: a node reached through many references costs its size every time."""

# Keywords whose value must be a non-negative integer.
COUNT_KEYWORDS = frozenset(
    {"minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"}
)
JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})

# Where a schema holds schemas, by how it holds them (every dialect's spellings together).
NAME_MAPS = (
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",  # draft 7's: a schema or a list of names (data) under each name
)
"""Keywords whose value maps names (never keywords) to schemas."""
ONE_SUBSCHEMA = (
    "additionalProperties",
    "items",
    "additionalItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
"""Keywords whose value is one schema."""
MANY_SUBSCHEMAS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
"""Keywords whose value is a list of schemas (``items``: draft 4-7's tuple form)."""
DATA_KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "const",
        "default",
        "examples",
        "example",
        "required",
        "dependentRequired",
        "propertyOrdering",
        "enumDescriptions",
        "markdownEnumDescriptions",
        "$vocabulary",
    }
)
"""Keywords whose value is data compared with (or shown beside) arguments, never a schema."""

# Keywords that only annotate: dropping them loses nothing a validator or a model needs.
ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$anchor",
        "$comment",
        "$vocabulary",
        "$dynamicAnchor",
        "title",
        "examples",
        "example",
        "deprecated",
        "readOnly",
        "writeOnly",
        "discriminator",
        "contentMediaType",
        "contentEncoding",
        "contentSchema",
        "markdownDescription",
        "enumDescriptions",
        "markdownEnumDescriptions",
        "errorMessage",
        "$defs",
        "definitions",
    }
)

# Constraints with no Gemini equivalent at all: dropped with a note, still checked by the
# validator against the original schema.
ANNOUNCED_DROPS = frozenset(
    {
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "dependencies",
        "patternProperties",
        "propertyNames",
        "unevaluatedProperties",
        "unevaluatedItems",
        "contains",
        "minContains",
        "maxContains",
        "$dynamicRef",
        "$recursiveRef",
        "$recursiveAnchor",
    }
)

# Which keywords belong to which JSON type, for splitting a type list into anyOf branches.
_NUMERIC_KEYWORDS = frozenset(
    {
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "format",
        "enum",
        "const",
    }
)
TYPE_KEYWORDS: Mapping[str, frozenset[str]] = {
    "string": frozenset({"minLength", "maxLength", "pattern", "format", "enum", "const"}),
    "number": _NUMERIC_KEYWORDS,
    "integer": _NUMERIC_KEYWORDS,
    "boolean": frozenset({"enum", "const"}),
    "null": frozenset(),
    "array": frozenset(
        {
            "items",
            "prefixItems",
            "additionalItems",
            "minItems",
            "maxItems",
            "uniqueItems",
            "contains",
            "minContains",
            "maxContains",
        }
    ),
    "object": frozenset(
        {
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
            "propertyNames",
            "minProperties",
            "maxProperties",
            "propertyOrdering",
            "dependentRequired",
            "dependentSchemas",
            "dependencies",
        }
    ),
}
_TYPED_KEYWORDS = frozenset().union(*TYPE_KEYWORDS.values())

_HINT_LIMIT = 200
# Root keywords that make object_root rewrite the root.
_ROOT_REWRITES = frozenset({"$ref", "allOf", "anyOf", "oneOf", "enum", "const", "nullable"})


@dataclass(frozen=True, slots=True)
class ConversionNote:
    """Something a conversion dropped or rewrote, and where."""

    path: str
    """JSON pointer into the original schema (``#/properties/a``)."""
    message: str


class UniqueValues:
    """Values kept once each, in order. A few are compared directly; past that each is keyed
    by its JSON, so many values cost time linear in their size (a list's ``in`` compares each
    new value with all the others). An object added again is known by identity, and the
    characters keyed are spent on ``walk``: one large value met many times is keyed once, and
    many large values make the walk stop rather than run long."""

    __slots__ = ("_keys", "_known", "_path", "_walk", "values")

    _COMPARED = 8

    def __init__(self, walk: SchemaWalk, path: str) -> None:
        self.values: list[Any] = []
        self._keys: set[str] | None = None
        self._known: dict[int, Any] = {}  # id -> the object, kept so that its id stays its own
        self._walk = walk
        self._path = path

    def add(self, value: Any) -> None:
        if self._keys is None:
            try:
                if value in self.values:
                    return
            except RecursionError:  # data too deep to compare: kept as a value of its own
                pass
            if len(self.values) < self._COMPARED:
                self.values.append(value)
                return
            self._keys = {self._key(v) for v in self.values}
        if self._known.get(id(value)) is value:
            return  # keyed before: present already
        self._known[id(value)] = value
        key = self._key(value)
        if key not in self._keys:
            self._keys.add(key)
            self.values.append(value)

    def _key(self, value: Any) -> str:
        try:
            key = json.dumps(value, sort_keys=True, separators=(",", ":"))
        except (TypeError, ValueError, RecursionError):  # not JSON: kept by identity
            return f"id:{id(value)}"
        self._walk.spend(len(key) // 8, self._path)  # about one entry per 8 characters
        return key


class _Definitions:
    """What several ``allOf`` members say under one name (a property, ``items``), merged into
    ``target``: a name defined differently gets every definition, as an ``allOf`` merged when
    it is lowered. A definition is compared with the name's first one once; met again (the
    same object, through another reference) it is known by identity, so members sharing large
    definitions cost their number, not their size."""

    __slots__ = ("_every", "_same", "target")

    def __init__(self, target: dict[Any, Any]) -> None:
        self.target = target
        self._every: dict[Any, list[Any]] = {}
        self._same: dict[tuple[Any, int], Any] = {}  # (name, id) -> a definition equal to the first

    def add(self, name: Any, definition: Any) -> None:
        target = self.target
        if name not in target:
            target[name] = definition
            return
        every = self._every.get(name)
        if every is not None:
            every.append(definition)
            return
        first = target[name]
        if first is definition or self._same.get((name, id(definition))) is definition:
            return
        if same_value(first, definition):
            self._same[(name, id(definition))] = definition
            return
        every = self._every[name] = [first, definition]
        target[name] = {"allOf": every}


def escape_pointer(segment: str) -> str:
    """Escape one JSON-pointer segment (RFC 6901)."""
    if "~" in segment or "/" in segment:
        return segment.replace("~", "~0").replace("/", "~1")
    return segment


def _unescape_pointer(segment: str) -> str:
    return unquote(segment).replace("~1", "/").replace("~0", "~")


NOWHERE: Any = object()
"""What [`follow_pointer`][] returns for a reference that leads nowhere."""


def follow_pointer(root: Any, ref: str, default: Any = NOWHERE) -> Any:
    """The node the local reference ``ref`` (``#`` or ``#/a/0/b``) points to in ``root``, or
    ``default`` when it is not local or leads nowhere."""
    if not ref.startswith("#"):
        return default
    node = root
    for raw in ref[1:].split("/")[1:] if len(ref) > 1 else ():
        segment = _unescape_pointer(raw)
        if isinstance(node, Mapping) and segment in node:
            node = node[segment]
        elif isinstance(node, list) and segment.isdigit() and int(segment) < len(node):
            node = node[int(segment)]
        else:
            return default
    return node


def json_type_of(value: Any) -> str | None:
    """The JSON type of a Python value (bool before int)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return None


def short_json(value: Any) -> str:
    """A value as compact JSON, cut to a readable length.

    Values are data of any size and depth: only what fits the length is ever looked at
    (nesting past a few levels shows as ``...``), so this costs the same for any value.
    """
    text = _preview(value, _HINT_LIMIT, 0)
    return text if len(text) <= _HINT_LIMIT else text[: _HINT_LIMIT - 3] + "..."


def shown(value: Any) -> str:
    """A schema's value as a message quotes it: ``repr`` for a short string or a number,
    [`short_json`][] for anything else (which may be too deep or too long to ``repr``)."""
    kind = value.__class__
    if (kind is str and len(value) <= _HINT_LIMIT) or kind in _SMALL_SCALARS:
        return repr(value)
    if kind is int and value.bit_length() <= _INT_BITS:
        return repr(value)
    return short_json(value)


_SMALL_SCALARS = frozenset({bool, float, type(None)})
_INT_BITS = 4_000
"""Integers up to this many bits are written out (Python refuses past 4,300 digits)."""
_PREVIEW_DEPTH = 16


def _preview(value: Any, room: int, depth: int) -> str:
    """Compact JSON of ``value`` up to about ``room`` characters; containers past
    [`_PREVIEW_DEPTH`][] levels and entries past ``room`` are elided."""
    if isinstance(value, str):
        return json.dumps(value[:room], ensure_ascii=False)
    if value is None or isinstance(value, bool):
        return "null" if value is None else ("true" if value else "false")
    if isinstance(value, int):
        if value.bit_length() > _INT_BITS:
            return f"<an integer of about {int(value.bit_length() * 0.30103) + 1} digits>"
        return int.__repr__(value)
    if isinstance(value, float):
        return json.dumps(float(value))  # NaN and Infinity as JSON texts write them
    is_map = isinstance(value, Mapping)
    if not (is_map or isinstance(value, list | tuple)):
        return f"<{type(value).__name__}>"  # never str(): a caller's object may raise
    if depth >= _PREVIEW_DEPTH:
        return "{...}" if is_map else "[...]"
    parts: list[str] = []
    for entry in value.items() if is_map else value:
        if room <= 0:
            parts.append("...")
            break
        if is_map:
            key, item = entry
            label = key if isinstance(key, str) else _preview(key, room, depth + 1)
            text = _preview(label, room, depth) + ":"
            text += _preview(item, room - len(text), depth + 1)
        else:
            text = _preview(entry, room, depth + 1)
        parts.append(text)
        room -= len(text) + 1
    body = ",".join(parts)
    return "{" + body + "}" if is_map else "[" + body + "]"


def same_value(a: Any, b: Any) -> bool:
    """``a == b`` for schema values, False where they are too deep to compare."""
    if a is b:
        return True
    try:
        return bool(a == b)
    except RecursionError:
        return False


def is_count(value: Any) -> bool:
    """A non-negative integer (not a bool): what minItems, maxLength, ... must be."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class SchemaWalk:
    """What every walk over one schema keeps: the root, notes on what it changed, and the
    nodes it has visited and the entries it has read, both bounded."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.notes: list[ConversionNote] = []
        self._nodes = 0
        self._work = 0

    def note(self, path: str, message: str) -> None:
        self.notes.append(ConversionNote(path, message))

    def visit(self, path: str, depth: int) -> None:
        """Count a node and enforce the bounds.

        Raises:
            SchemaConversionError: past [`MAX_DEPTH`][] levels or [`MAX_NODES`][] nodes.
        """
        self._nodes += 1
        if depth > MAX_DEPTH:
            raise SchemaConversionError(
                f"schema is nested deeper than {MAX_DEPTH} levels", path=path
            )
        if self._nodes > MAX_NODES:
            raise SchemaConversionError(f"schema has more than {MAX_NODES} nodes", path=path)
        if self._work > MAX_WORK:  # entries counted where they are read, without a check
            self.spend(0, path)

    def spend(self, entries: int, path: str) -> None:
        """Count ``entries`` read (a node's keywords, a merged member's properties, a list's
        items): counting nodes alone bounds how many, not what each costs.

        Raises:
            SchemaConversionError: past [`MAX_WORK`][] entries.
        """
        self._work += entries
        if self._work > MAX_WORK:
            raise SchemaConversionError(
                f"schema needs more than {MAX_WORK} entries read to convert (parts of it are "
                "used too many times)",
                path=path,
            )


class Lowering(SchemaWalk):
    """One conversion of one schema. Subclasses implement [`lower`][].

    ``notes`` collects what was dropped or rewritten, for reports; routine removals of
    annotations (``title``, ``$schema``, ...) are not noted.
    """

    def __init__(self, root: Any) -> None:
        super().__init__(root)
        self._def_names: dict[str, str] = {}
        self._taken: set[str] = set()
        self._next_suffix: dict[str, int] = {}
        # References whose target is being merged with sibling keywords, innermost last: one
        # met again while it is merged is a cycle (`{"$ref": "#", "type": "object"}`).
        self._merging: list[str] = []

    # -- references ------------------------------------------------------------------------------

    def is_external(self, ref: Any, path: str) -> bool:
        """True (and noted) for a reference to another document, which is never fetched."""
        if isinstance(ref, str) and not ref.startswith("#"):
            if ref.startswith(("https://json-schema.org/", "http://json-schema.org/")):
                self.note(
                    path,
                    f"$ref to the JSON Schema meta-schema {shown(ref)} declared as any value "
                    "(arguments are still validated against it)",
                )
            else:
                self.note(
                    path, f"external $ref {shown(ref)} not followed; any value accepted there"
                )
            return True
        return False

    def resolve(self, ref: Any, path: str) -> Any:
        """The node a local reference (``#`` or ``#/a/b``) points to in the root document.

        Raises:
            SchemaConversionError: for a non-local, malformed or dangling reference.
        """
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise SchemaConversionError(
                f"unsupported $ref {shown(ref)} (only local references)", path=path
            )
        pointer = ref[1:]
        if pointer and not pointer.startswith("/"):
            raise SchemaConversionError(
                f"unsupported $ref {shown(ref)} (anchors are not supported)", path=path
            )
        node = follow_pointer(self.root, ref)
        if node is NOWHERE:
            raise SchemaConversionError(f"$ref {shown(ref)} points to nothing", path=path)
        return node

    def merge_ref_siblings(self, node: Mapping[str, Any], path: str, depth: int) -> dict[str, Any]:
        """Inline the target of ``node["$ref"]``, combined with the node's other keywords as
        ``allOf`` would combine them (properties united; the node's own keywords win).

        Raises:
            SchemaConversionError: for a reference that cannot be followed, or one that leads
                back to itself while its target is being merged.
        """
        ref = node["$ref"]
        self._work += len(node)  # checked at the next visit
        rest = {k: v for k, v in node.items() if k != "$ref"}
        if self.is_external(ref, path):  # never fetched: what it names accepts any value
            return rest
        if rest:
            if ref.__class__ is not str:
                self.resolve(ref, path)  # raises: only a string can be a reference
            if ref in self._merging:
                raise SchemaConversionError(
                    f"$ref {shown(ref)} leads back to itself beside other keywords "
                    "(a reference cycle through allOf)",
                    path=path,
                )
            extra = rest.get("allOf")
            rest["allOf"] = [{"$ref": ref}, *(extra if isinstance(extra, list) else [])]
            self._merging.append(ref)
            try:
                return self.merge_all_of(rest, path, depth + 1)
            finally:
                self._merging.pop()
        target = self.resolve(ref, path)
        if isinstance(target, bool):
            return {} if target else {"not": {}}
        if not isinstance(target, Mapping):
            raise SchemaConversionError(f"$ref {shown(ref)} points to a non-schema", path=path)
        self._work += len(target)  # checked at the next visit
        # The target's own $ref (a chain) stays, for the caller to follow.
        return {k: v for k, v in target.items() if k not in ("$defs", "definitions")}

    def def_name(self, ref: str) -> tuple[str, bool]:
        """The definition name for a local reference in the output, and whether it is new.

        Taken from the pointer's last segment (``#/definitions/Tag`` → ``Tag``, ``#`` →
        ``root``), reduced to ``[A-Za-z0-9_]`` so it needs no escaping, made unique.
        """
        name = self._def_names.get(ref)
        if name is not None:
            return name, False
        last = _unescape_pointer(ref.rsplit("/", 1)[-1]) if "/" in ref else "root"
        base = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in last)
        base = base or "def"
        name = base
        # The next free suffix per base is remembered: many references ending alike
        # (`#/$defs/a/x`, `#/$defs/b/x`, ...) must not each count up from 2.
        n = self._next_suffix.get(base, 2)
        while name in self._taken:
            name = f"{base}_{n}"
            n += 1
        self._next_suffix[base] = n
        self._taken.add(name)
        self._def_names[ref] = name
        return name, True

    # -- allOf -----------------------------------------------------------------------------------

    def merge_all_of(self, node: Mapping[str, Any], path: str, depth: int) -> dict[str, Any]:
        """Flatten ``allOf`` into its node: properties merged, required united, other keywords
        taken from the first member that sets them (the node's own keywords win)."""
        merged = {k: v for k, v in node.items() if k != "allOf"}
        members = node["allOf"]
        if not isinstance(members, list):
            self.note(path, "allOf is not a list; dropped")
            return merged
        # Built in place (copies of the node's own), so many members cost what they hold;
        # each member's size is spent, as the same large member may be merged many times.
        props: _Definitions | None = None
        shapes = _Definitions(merged)  # items and additionalProperties, when both are schemas
        required: list[Any] | None = None
        required_seen: set[str] = set()
        for i, member in enumerate(members):
            member_path = f"{path}/allOf/{i}"
            self.visit(member_path, depth + 1)
            hops = 0
            while isinstance(member, Mapping) and "$ref" in member:
                member = self.merge_ref_siblings(member, member_path, depth + 1 + hops)
                hops += 1
                if hops > MAX_DEPTH:
                    raise SchemaConversionError("$ref chain does not end", path=member_path)
            if isinstance(member, Mapping) and "allOf" in member:
                member = self.merge_all_of(member, member_path, depth + 1)
            if member is True or (isinstance(member, Mapping) and not member):
                continue
            if not isinstance(member, Mapping):
                self.note(member_path, "allOf member is not a schema; dropped")
                continue
            self.spend(len(member), member_path)
            for key, value in member.items():
                if key == "properties" and isinstance(value, Mapping):
                    self.spend(len(value), member_path)
                    if props is None:
                        own = merged.get("properties")
                        props = _Definitions(dict(own) if isinstance(own, Mapping) else {})
                        merged["properties"] = props.target
                    for name, sub in value.items():
                        props.add(name, sub)
                elif key == "required" and isinstance(value, list):
                    self.spend(len(value), member_path)
                    if required is None:
                        own = merged.get("required")
                        required = list(own) if isinstance(own, list) else []
                        required_seen = {r for r in required if r.__class__ is str}
                        merged["required"] = required
                    for r in value:
                        if r.__class__ is not str:
                            required.append(r)  # not a name: pruned or refused later
                        elif r not in required_seen:
                            required_seen.add(r)
                            required.append(r)
                elif (
                    key in ("items", "additionalProperties")
                    and isinstance(merged.get(key), Mapping)
                    and isinstance(value, Mapping)
                ):
                    shapes.add(key, value)
                elif key == "description" and "description" in merged:
                    continue
                else:
                    merged.setdefault(key, value)
        return merged

    # -- type lists ------------------------------------------------------------------------------

    @staticmethod
    def split_type_list(node: Mapping[str, Any], types: list[str]) -> dict[str, Any]:
        """``{"type": [a, b], ...}`` as ``{"anyOf": [{"type": a, ...}, {"type": b, ...}]}``,
        each branch taking the keywords that apply to its type; the rest stay outside."""
        outer = {k: v for k, v in node.items() if k != "type" and k not in _TYPED_KEYWORDS}
        branches = []
        for t in types:
            branch: dict[str, Any] = {"type": t}
            branch.update((k, v) for k, v in node.items() if k in TYPE_KEYWORDS[t])
            branches.append(branch)
        if any(isinstance(node.get(k), list) and node[k] for k in ("anyOf", "oneOf")):
            # A type list beside a union: the union's branches are the more precise shapes;
            # keep them (the validator still checks the type list against the original).
            return outer
        outer["anyOf"] = branches
        return outer

    def normalize_types(self, raw: Any, path: str) -> list[str] | None:
        """The node's ``type`` as a list of lower-case JSON types, or None when absent."""
        if raw is None:
            return None
        if raw.__class__ is str and raw in JSON_TYPES:
            return [raw]
        values = raw if isinstance(raw, list) else [raw]
        types: list[str] = []
        for value in values:
            t = value.lower() if isinstance(value, str) else None
            if t in JSON_TYPES:
                if t not in types:
                    types.append(t)
            else:
                self.note(path, f"unknown type {shown(value)} dropped")
        return types or None

    # -- the root --------------------------------------------------------------------------------

    def object_root(self) -> dict[str, Any]:
        """The root as a plain object schema: references followed, ``allOf`` merged, a
        top-level union of objects flattened; anything else declares no parameters."""
        root = self.root
        if (
            type(root) is dict
            and root.get("type") == "object"
            and type(root.get("properties")) is dict
            and not (root.keys() & _ROOT_REWRITES)
        ):
            return root  # already a plain object root: nothing to rewrite, nothing to copy
        if not isinstance(root, Mapping):
            if root is True:
                return {"type": "object", "properties": {}}
            raise SchemaConversionError(
                f"the input schema must be a JSON object, not {type(root).__name__}"
            )
        node: dict[str, Any] = dict(root)
        for hop in range(MAX_DEPTH):
            if "$ref" in node:
                node = self.merge_ref_siblings(node, "#", hop)
            elif isinstance(node.get("allOf"), list):
                node = self.merge_all_of(node, "#", hop)
            else:
                break
        else:
            raise SchemaConversionError("the root's $ref/allOf chain does not end")

        types = self.normalize_types(node.get("type"), "#")
        union_key = next((k for k in ("anyOf", "oneOf") if isinstance(node.get(k), list)), None)
        if union_key and "properties" not in node and (types is None or types == ["object"]):
            node = self.flatten_union(node, union_key, "#", 0)
            types = ["object"]  # and the root's own enum/const/nullable still go, below
        if types is not None and "object" not in types:
            self.note(
                "#",
                f"the root is not an object (type {shown(node.get('type'))}); "
                "declared with no parameters",
            )
            return {"type": "object", "properties": {}}
        if types is not None and len(types) > 1:
            self.note("#", "the root's type list narrowed to object")
        node["type"] = "object"
        for key in ("enum", "const", "nullable"):  # an arguments object is never one value
            if node.pop(key, None) is not None:
                self.note("#", f"{key} on the root dropped")
        if not isinstance(node.get("properties"), Mapping):
            if "properties" in node:
                self.note("#", "properties is not an object; dropped")
            node["properties"] = {}
        return node

    def flatten_union(
        self, node: Mapping[str, Any], key: str, path: str, depth: int
    ) -> dict[str, Any]:
        """An ``anyOf``/``oneOf`` of objects as one object: the node's and every variant's
        properties; required where the node or every variant requires it."""
        variants = self._union_variants(node[key], f"{path}/{key}", depth)
        own_props = node.get("properties")
        choices: dict[str, UniqueValues] = {}
        for name, sub in own_props.items() if isinstance(own_props, Mapping) else ():
            choices[name] = UniqueValues(self, path)
            choices[name].add(sub)
        required_sets = []
        for variant in variants:
            props = variant.get("properties")
            req = variant.get("required")
            # The same large variant may stand many times in the union: spend what each holds.
            self.spend(
                (len(props) if isinstance(props, Mapping) else 0)
                + (len(req) if isinstance(req, list) else 0),
                path,
            )
            if isinstance(props, Mapping):
                for name, sub in props.items():
                    subs = choices.get(name)
                    if subs is None:
                        subs = choices[name] = UniqueValues(self, path)
                    subs.add(sub)
            required_sets.append(
                {r for r in req if r.__class__ is str} if isinstance(req, list) else set()
            )
        # A property the variants define differently may take any of their shapes.
        properties = {
            name: subs.values[0] if len(subs.values) == 1 else {"anyOf": subs.values}
            for name, subs in choices.items()
        }
        common = set.intersection(*required_sets) if required_sets else set()
        own = node.get("required")
        if isinstance(own, list):
            common |= {r for r in own if isinstance(r, str)}
        flattened = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf", "type")}
        flattened.update(type="object", properties=properties)
        flattened["required"] = [n for n in properties if n in common]
        self.note(path, f"{key} of {len(variants)} objects flattened into one object")
        return flattened

    def _union_variants(
        self, branches: list[Any], path: str, level: int
    ) -> list[Mapping[str, Any]]:
        """The object variants of a union, nested unions and references resolved."""
        variants: list[Mapping[str, Any]] = []
        for i, variant in enumerate(branches):
            branch_path = f"{path}/{i}"
            self.visit(branch_path, level + 1)
            for hop in range(MAX_DEPTH):
                if isinstance(variant, Mapping) and "$ref" in variant:
                    variant = self.merge_ref_siblings(variant, branch_path, level + 1 + hop)
                elif isinstance(variant, Mapping) and isinstance(variant.get("allOf"), list):
                    variant = self.merge_all_of(variant, branch_path, level + 1)
                else:
                    break
            if not isinstance(variant, Mapping):
                continue
            nested = next(
                (variant[k] for k in ("anyOf", "oneOf") if isinstance(variant.get(k), list)), None
            )
            if nested is not None and "properties" not in variant:
                variants += self._union_variants(nested, branch_path, level + 1)
            else:
                variants.append(variant)
        return variants

    # -- keywords both targets rewrite alike --------------------------------------------------

    def required_within(
        self, required: Any, properties: Mapping[str, Any], path: str
    ) -> list[str] | None:
        """``required`` pruned to the declared properties, without duplicates."""
        if not isinstance(required, list):
            if required is not None:
                self.note(path, "required is not a list; dropped")
            return None
        self.spend(len(required), path)
        try:
            unique = set(required)
            if len(unique) == len(required) and properties.keys() >= unique:
                return list(required)  # the common case: nothing to prune
        except TypeError:  # an unhashable entry; pruned below
            pass
        kept = list(dict.fromkeys(r for r in required if isinstance(r, str) and r in properties))
        self.note(path, "required pruned to the declared properties")
        return kept

    def describe_constraint(self, key: str, value: Any, path: str, hints: list[str]) -> None:
        """Describe a constraint the target cannot carry (the validator still enforces it)."""
        if key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
            if value:  # draft-4 form: it qualifies minimum/maximum
                hints.append(f"{key} (the bound itself is excluded)")
            return
        hints.append(f"{key} {short_json(value)}")
        self.note(path, f"{key} moved into the description")

    # -- descriptions ----------------------------------------------------------------------------

    @staticmethod
    def describe(description: Any, hints: list[str]) -> str | None:
        """The node's description (cleaned) with hints about dropped keywords appended."""
        text = clean_description(description) if isinstance(description, str) else ""
        if hints:
            extra = "; ".join(hints)
            text = f"{text} ({extra})" if text else f"({extra})"
            text = clean_description(text)
        return text or None

    # -- the walk ----------------------------------------------------------------------------------

    def lower(self, node: Any, path: str, depth: int) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError
