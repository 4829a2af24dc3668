"""Copy-on-write rewrites of a whole schema, for the consumers that take it nearly as it is.

- [`for_validation`][]: the copy jsonschema-rs compiles. References to other documents
  (``http(s)://``, ``file://``, ``urn:``, a path relative to a remote ``$id``) are removed, so
  the part they name accepts any value, exactly as every declaration says; nothing is ever
  retrieved. Spellings some servers publish that JSON Schema does not define are read as what
  they mean: upper-case type names (``"STRING"``, Gemini's style), a type name standing for a
  schema (``"properties": {"q": "string"}``), draft-4 tuple ``items`` and boolean
  ``exclusiveMinimum``/``exclusiveMaximum`` in a schema of the default dialect, a ``$schema``
  naming no dialect jsonschema-rs has built in (dropped, so the default, 2020-12, applies;
  never fetched).
- [`for_declaration`][] and [`declared_object`][]: what providers that take JSON Schema as
  it is (Anthropic, OpenAI) are sent: the schema as validated, with descriptions and titles
  cleaned at every depth (``clean_description``), so what the model is told is what its
  arguments are checked against.
- [`external_references`][]: where a schema names another document, for reports.

Each walk visits schema positions only (``properties`` keys are names, ``enum``/``const``/
``default`` values are data), is bounded in depth and total nodes, never mutates its input and
returns the very same object when nothing changes (the common case costs one read-only walk).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urldefrag, urljoin

import jsonschema_rs

from toolwire._text import clean_description
from toolwire.errors import SchemaConversionError
from toolwire.schema._base import (
    DATA_KEYWORDS,
    JSON_TYPES,
    MANY_SUBSCHEMAS,
    MAX_DEPTH,
    MAX_NODES,
    NAME_MAPS,
    ONE_SUBSCHEMA,
    ConversionNote,
    Lowering,
    SchemaWalk,
    escape_pointer,
    shown,
)

__all__ = [
    "LATEST_DIALECT",
    "MODERN_KEYWORDS",
    "ROOT_URI",
    "ForDeclaration",
    "RewriteWalk",
    "declared_object",
    "external_references",
    "for_declaration",
    "for_validation",
    "is_metaschema",
    "join_uri",
    "lower_types",
    "modern_spelling",
    "rule_broken",
    "short_text",
]

# A walk does not look inside data (`{"enum": [{"$ref": ...}]}` keeps its value). A keyword
# of ONE_SUBSCHEMA or MANY_SUBSCHEMAS may also hold a type name alone ("string"), read as the
# schema of that type; other keywords' objects are walked too, as schemas a local reference
# may point into, but nothing in them is read as shorthand.
_NAME_MAPS = frozenset(NAME_MAPS)
_SUBSCHEMA = frozenset(ONE_SUBSCHEMA + MANY_SUBSCHEMAS)
_REFERENCES = ("$ref", "$dynamicRef")
_TEXT = ("description", "title")

# The dialects jsonschema-rs has built in, by their URI without scheme and empty fragment.
_DIALECTS = {
    "json-schema.org/draft-04/schema": "http://json-schema.org/draft-04/schema#",
    "json-schema.org/draft-06/schema": "http://json-schema.org/draft-06/schema#",
    "json-schema.org/draft-07/schema": "http://json-schema.org/draft-07/schema#",
    "json-schema.org/draft/2019-09/schema": "https://json-schema.org/draft/2019-09/schema",
    "json-schema.org/draft/2020-12/schema": "https://json-schema.org/draft/2020-12/schema",
    "json-schema.org/schema": "https://json-schema.org/draft/2020-12/schema",
}
_DRAFT_4 = _DIALECTS["json-schema.org/draft-04/schema"]
LATEST_DIALECT = _DIALECTS["json-schema.org/draft/2020-12/schema"]
# What a document without an `$id` is called here; only equality with it matters.
ROOT_URI = "https://root.toolwire.invalid/"


def _dialect(value: Any) -> str | None:
    """The built-in dialect ``$schema`` names, spelled as jsonschema-rs knows it, or None."""
    if not isinstance(value, str):
        return None
    key = value.strip().removesuffix("#").removesuffix("/")
    for scheme in ("https://", "http://"):
        if key.startswith(scheme):
            key = key[len(scheme) :]
            break
    return _DIALECTS.get(key)


def _join(base: str, reference: str) -> str | None:
    """The document ``reference`` names from ``base`` (no fragment), or None when it is not
    a URI reference at all."""
    return join_uri(base, reference)


def join_uri(base: str, reference: str, *, keep_fragment: bool = False) -> str | None:
    """``reference`` resolved against ``base`` (without its fragment unless
    ``keep_fragment``), or None when it is not a URI reference at all."""
    try:
        joined = urljoin(base, reference)
        return joined if keep_fragment else urldefrag(joined).url
    except ValueError:  # e.g. a malformed IPv6 host
        return None


_METASCHEMA_PREFIXES = (
    "https://json-schema.org/draft/",
    "http://json-schema.org/draft/",
    "http://json-schema.org/draft-0",
    "https://json-schema.org/draft-0",
)


def is_metaschema(document: str) -> bool:
    """True for a JSON Schema meta-schema (or one of its vocabularies' documents), which the
    validator has built in: never fetched, and never unknown."""
    return document.startswith(_METASCHEMA_PREFIXES) or document.rstrip("#") in _DIALECTS.values()


class RewriteWalk(SchemaWalk):
    """One copy-on-write walk of one schema; ``edit`` decides what changes at each node."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        super().__init__(root)
        self.references: list[ConversionNote] = []
        """The notes on references to other documents."""
        self.dialect = _dialect(root.get("$schema")) or LATEST_DIALECT
        # Draft 4 names a schema's own URI `id`; later drafts `$id`.
        self.id_key = "id" if self.dialect == _DRAFT_4 else "$id"
        self._documents: frozenset[str] | None = None
        self.known: frozenset[str] = frozenset()
        """Other documents the schema may name: the tool's ``resources``."""

    keeps_metaschemas = False
    """Whether references to the JSON Schema meta-schemas are kept (the validator's copy)."""

    # -- documents and references --------------------------------------------------------------

    def rebase(self, node: Mapping[str, Any], base: str) -> str:
        """The base URI inside ``node``: its own ``$id`` resolved against ``base``."""
        own = node.get(self.id_key)
        if isinstance(own, str) and not own.startswith("#"):  # "#name" is an anchor (draft 6/7)
            return _join(base, own) or base
        return base

    def documents(self) -> frozenset[str]:
        """Every document this schema holds: the root and each subschema with an ``$id``.
        Computed once, on the first reference that is not a plain fragment."""
        if self._documents is None:
            found = {self.rebase(self.root, ROOT_URI), ROOT_URI}
            stack: list[tuple[Any, str, int]] = [(self.root, ROOT_URI, 0)]
            seen = 0
            while stack:
                node, base, depth = stack.pop()
                seen += 1
                if seen > MAX_NODES or depth > MAX_DEPTH:
                    break  # the edit walk reports the bound
                base = self.rebase(node, base)
                found.add(base)
                for _, child in _children(node):
                    if isinstance(child, Mapping):
                        stack.append((child, base, depth + 1))
            self._documents = frozenset(found)
        return self._documents

    def is_external(self, reference: str, base: str) -> bool:
        """True for a reference into another document than this schema's own ones, the
        documents the tool was given (``known``) and the meta-schemas."""
        if reference.startswith("#"):
            return False  # a fragment of the current document, which this schema holds
        document = _join(base, reference)
        return document is None or not (
            document in self.documents()
            or document in self.known
            or (self.keeps_metaschemas and is_metaschema(document))
        )

    # -- the walk --------------------------------------------------------------------------------

    def schema(self, node: Any, path: str, base: str, depth: int, known: bool = True) -> Any:
        """``node`` rewritten (the same object when nothing changes); ``known`` when it stands
        where JSON Schema has a schema (not in an unknown keyword)."""
        if node.__class__ is not dict and not isinstance(node, Mapping):
            return self.shorthand(node, path) if known else node
        self.visit(path, depth)
        if self.id_key in node:
            base = self.rebase(node, base)
        out = self.edit(node, path, base)
        source: Mapping[str, Any] = node if out is None else out
        for key, value in source.items():
            kind = value.__class__  # exact classes first: ABC checks cost more
            if kind is not dict and kind is not list and not isinstance(value, Mapping | list):
                continue
            if key in DATA_KEYWORDS:
                continue
            key_path = f"{path}/{escape_pointer(key if key.__class__ is str else str(key))}"
            known = key in _SUBSCHEMA or key in _NAME_MAPS
            if key in _NAME_MAPS and (kind is dict or isinstance(value, Mapping)):
                new: Any = self._values(value, key_path, base, depth)
            elif isinstance(value, list):  # allOf, prefixItems, draft-4 tuple items, ...
                new = self._items(value, key_path, base, depth, known)
            else:  # one subschema, or an unknown keyword's object (a `$ref` may point into it)
                new = self.schema(value, key_path, base, depth + 1, known)
            if new is not value:
                if out is None:
                    out = dict(source)
                out[key] = new
        return source if out is None else out

    def _values(self, value: Mapping[str, Any], path: str, base: str, depth: int) -> Any:
        out: dict[str, Any] | None = None
        for name, sub in value.items():
            new = self.schema(sub, f"{path}/{escape_pointer(str(name))}", base, depth + 1)
            if new is not sub:
                if out is None:
                    out = dict(value)
                out[name] = new
        return value if out is None else out

    def _items(self, value: list[Any], path: str, base: str, depth: int, known: bool) -> Any:
        out: list[Any] | None = None
        for i, sub in enumerate(value):
            new = self.schema(sub, f"{path}/{i}", base, depth + 1, known)
            if new is not sub:
                if out is None:
                    out = list(value)
                out[i] = new
        return value if out is None else out

    def shorthand(self, node: Any, path: str) -> Any:
        """A type name where a schema belongs (``"string"``, some servers' shorthand) as the
        schema of that type; anything else as it is."""
        if isinstance(node, str) and node.lower() in JSON_TYPES:
            self.note(path, f"type name {node!r} read as {{'type': {node.lower()!r}}}")
            return {"type": node.lower()}
        return node

    def edit(self, node: Mapping[str, Any], path: str, base: str) -> dict[str, Any] | None:
        """A copy of ``node`` with its own keywords changed (never its subschemas), or None
        when nothing changes."""
        return None

    def drop_external(self, node: Mapping[str, Any], path: str, base: str) -> dict[str, Any] | None:
        """``node`` without its references to other documents (each noted), or None when it
        has none."""
        out: dict[str, Any] | None = None
        for key in _REFERENCES:
            reference = node.get(key)
            if isinstance(reference, str) and self.is_external(reference, base):
                document = _join(base, reference)
                said = (
                    f"{key} to the JSON Schema meta-schema {shown(reference)} declared as any "
                    "value (arguments are still validated against it)"
                    if document is not None and is_metaschema(document)
                    else f"external {key} {shown(reference)} not followed; any value accepted there"
                )
                note = ConversionNote(path, said)
                self.notes.append(note)
                self.references.append(note)
                if out is None:
                    out = dict(node)
                del out[key]
        return out


def _children(node: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    """The (key, value) pairs of ``node`` that may hold schemas, name maps flattened."""
    children: list[tuple[Any, Any]] = []
    for key, value in node.items():
        if key in DATA_KEYWORDS:
            continue
        if key in _NAME_MAPS and isinstance(value, Mapping):
            children.extend(value.items())
        elif isinstance(value, list):
            children.extend(enumerate(value))
        elif isinstance(value, Mapping):
            children.append((key, value))
    return children


class _ForValidation(RewriteWalk):
    keeps_metaschemas = True  # the validator has them built in

    def __init__(self, root: Mapping[str, Any]) -> None:
        super().__init__(root)
        self.respelled: list[str] = []
        """Where tuple ``items`` became ``prefixItems`` (references into them follow)."""

    def schema(self, node: Any, path: str, base: str, depth: int, known: bool = True) -> Any:
        out = super().schema(node, path, base, depth, known)
        if depth == 0 and path == "#" and self.respelled:
            out = _Repointed(out, self.respelled).schema(out, "#", base, 0)
        return out

    def edit(self, node: Mapping[str, Any], path: str, base: str) -> dict[str, Any] | None:
        out = None
        if "$ref" in node or "$dynamicRef" in node:
            out = self.drop_external(node, path, base)
        if "$schema" in node:
            dialect = _dialect(node["$schema"])
            if dialect != node["$schema"]:
                out = dict(node) if out is None else out
                if dialect is None:
                    del out["$schema"]  # unknown: never fetched; the default dialect applies
                else:
                    out["$schema"] = dialect
        types = node.get("type")
        if types is not None and not (types.__class__ is str and types in JSON_TYPES):
            lowered = lower_types(types)
            if lowered is not types:
                out = dict(node) if out is None else out
                out["type"] = lowered
        if self.dialect == LATEST_DIALECT and not MODERN_KEYWORDS.isdisjoint(node):
            modern = modern_spelling(node if out is None else out)
            if modern is not None:
                if "prefixItems" in modern and "prefixItems" not in node:
                    self.respelled.append(path)
                out = modern
        return out


class _Repointed(RewriteWalk):
    """Local references into tuple ``items`` respelled as ``prefixItems`` (and into
    ``additionalItems``, now ``items``), pointing where their targets went."""

    def __init__(self, root: Mapping[str, Any], respelled: list[str]) -> None:
        super().__init__(root)
        self.moves = [
            (f"{where}/{old}", f"{where}/{new}")
            for where in respelled
            for old, new in (("items/", "prefixItems/"), ("additionalItems", "items"))
        ]

    def edit(self, node: Mapping[str, Any], path: str, base: str) -> dict[str, Any] | None:
        reference = node.get("$ref")
        if not isinstance(reference, str) or not reference.startswith("#/"):
            return None
        for old, new in self.moves:
            if reference.startswith(old) and (
                old.endswith("/") or reference == old or reference[len(old)] == "/"
            ):
                return {**node, "$ref": new + reference[len(old) :]}
        return None


def lower_types(types: Any) -> Any:
    """``"STRING"`` as ``"string"`` (and in a type list); anything else as it is."""
    if isinstance(types, str):
        lowered = types.lower()
        return lowered if lowered in JSON_TYPES else types
    if isinstance(types, list) and any(isinstance(t, str) and t not in JSON_TYPES for t in types):
        return [lower_types(t) for t in types]
    return types


MODERN_KEYWORDS = frozenset({"items", "exclusiveMinimum", "exclusiveMaximum"})
"""The keywords [`modern_spelling`][] may rewrite."""


def modern_spelling(node: Mapping[str, Any]) -> dict[str, Any] | None:
    """Draft-4 spellings that 2020-12 rejects as they are, in their 2020-12 form (or None when
    there are none): tuple ``items`` (a list) becomes ``prefixItems`` and ``additionalItems``
    the ``items`` after them; a boolean ``exclusiveMinimum`` qualifies ``minimum``."""
    out: dict[str, Any] | None = None
    if isinstance(node.get("items"), list) and "prefixItems" not in node:
        out = dict(node)
        out["prefixItems"] = out.pop("items")
        if "additionalItems" in out:
            out["items"] = out.pop("additionalItems")
    for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = node.get(exclusive)
        if isinstance(flag, bool):
            out = dict(node) if out is None else out
            del out[exclusive]
            if flag and bound in out:
                out[exclusive] = out.pop(bound)
    return out


class ForDeclaration(_ForValidation):
    keeps_metaschemas = False  # a provider is sent no reference it cannot follow

    def edit(self, node: Mapping[str, Any], path: str, base: str) -> dict[str, Any] | None:
        out = super().edit(node, path, base)
        for key in _TEXT:
            text = node.get(key)
            if text is None or (text.__class__ is str and _plain(text)):
                continue
            if not isinstance(text, str):
                self.note(path, f"{key} is not a string; dropped")
                out = dict(node) if out is None else out
                del out[key]
                continue
            cleaned = clean_description(text)
            if cleaned == text:
                continue
            self.note(path, f"{key} cleaned (invisible characters removed or length capped)")
            out = dict(node) if out is None else out
            if cleaned:
                out[key] = cleaned
            else:
                del out[key]
        return out


def _plain(text: str) -> bool:
    """Short printable ASCII: nothing [`clean_description`][] would change."""
    return len(text) < 1024 and text.isascii() and text.isprintable()


def for_validation(
    schema: Mapping[str, Any], known: frozenset[str] = frozenset()
) -> Mapping[str, Any]:
    """The copy of ``schema`` jsonschema-rs compiles (see the module docstring); ``schema``
    itself when nothing needs changing. References to the documents ``known`` (the tool's
    ``resources``) and to the meta-schemas are kept: the validator has them.

    Raises:
        SchemaConversionError: when the schema is nested deeper than ``MAX_DEPTH`` levels or
            has more than ``MAX_NODES`` nodes.
    """
    walk = _ForValidation(schema)
    walk.known = known
    return walk.schema(schema, "#", ROOT_URI, 0)  # type: ignore[no-any-return]


def for_declaration(schema: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[ConversionNote]]:
    """``schema`` as it is validated ([`for_validation`][]), with descriptions and titles
    cleaned at every depth; ``schema`` itself when nothing changes.

    Returns:
        The schema and a note for each change.

    Raises:
        SchemaConversionError: when the schema is nested deeper than ``MAX_DEPTH`` levels or
            has more than ``MAX_NODES`` nodes.
    """
    walk = ForDeclaration(schema)
    return walk.schema(schema, "#", ROOT_URI, 0), walk.notes


def declared_object(schema: Mapping[str, Any]) -> tuple[dict[str, Any], list[ConversionNote]]:
    """What a provider that takes JSON Schema as it is (Anthropic; OpenAI without strict mode)
    is sent: [`for_declaration`][], with a plain object root (a root reference, ``allOf``
    or union of objects merged), checked against JSON Schema's own rules, which those
    providers enforce on the whole request.

    Returns:
        A new top-level dict (nested values may be shared with ``schema``; treat them as
        read-only) and a note for each change.

    Raises:
        SchemaConversionError: for a schema that is not valid JSON Schema (``required: "x"``,
            ``items: 5``, ...), nests beyond the bounds, or has no object root.
    """
    prepared, notes = for_declaration(schema)
    problem = rule_broken(prepared)
    if problem is not None:
        reason, where = problem
        raise SchemaConversionError(reason, path=where)
    lowering = Lowering(prepared)
    root = lowering.object_root()
    return (dict(root) if root is prepared else root), notes + lowering.notes


def rule_broken(schema: Mapping[str, Any]) -> tuple[str, str] | None:
    """Why ``schema`` breaks its dialect's meta-schema (reason and path), or None."""
    try:
        jsonschema_rs.meta.validate(dict(schema))
    except jsonschema_rs.ValidationError as exc:
        where = "#" + "".join(f"/{escape_pointer(str(p))}" for p in exc.instance_path)
        return f"not valid JSON Schema: {short_text(exc.message)}", where
    except (jsonschema_rs.ReferencingError, ValueError, TypeError, OverflowError) as exc:
        return f"not valid JSON Schema: {short_text(str(exc).split(chr(10), 1)[0])}", "#"
    return None


def short_text(message: str, limit: int = 500) -> str:
    """``message`` cut to ``limit`` characters (jsonschema-rs quotes the failing value)."""
    return message if len(message) <= limit else message[: limit - 3] + "..."


def external_references(
    schema: Mapping[str, Any], known: frozenset[str] = frozenset()
) -> list[ConversionNote]:
    """A note for each ``$ref``/``$dynamicRef`` in ``schema`` that names another document
    than ``known`` ones (the tool's ``resources``) and the meta-schemas (never fetched: the
    part it names accepts any value).

    Raises:
        SchemaConversionError: when the schema is nested deeper than ``MAX_DEPTH`` levels or
            has more than ``MAX_NODES`` nodes.
    """
    walk = _ForValidation(schema)
    walk.known = known
    walk.schema(schema, "#", ROOT_URI, 0)
    return walk.references
