"""Local references kept meaning what they meant when a lowering rebuilds what they point to.

- [`references_kept`][]: after the top level of a schema is merged into one object (Anthropic,
  OpenAI), each ``$ref`` into what the merge rebuilt (``#``, an alternative, a property the
  alternatives define too) is pointed at a copy of its original target under ``$defs``.
- [`modern_reference`][]: a pointer into an older dialect's schema as it reads once tuple
  ``items`` are spelled ``prefixItems`` (draft 2020-12).
- [`local_references`][]: every local reference in a schema's schema positions.

Schemas are untrusted input: nothing here mutates its input, and every walk is bounded.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from toolwire.errors import SchemaConversionError
from toolwire.schema._base import (
    DATA_KEYWORDS,
    MANY_SUBSCHEMAS,
    MAX_DEPTH,
    MAX_NODES,
    NAME_MAPS,
    NOWHERE,
    ONE_SUBSCHEMA,
    SchemaWalk,
    escape_pointer,
    follow_pointer,
    shown,
)

__all__ = ["dangling", "local_references", "modern_reference", "references_kept"]

# What a copy of the root leaves at the root: its definitions, and what names the document.
_ROOT_ONLY = frozenset(
    {"$defs", "definitions", "$id", "$schema", "$anchor", "$dynamicAnchor", "$vocabulary"}
)
_REWRITE_DEPTH = 4 * MAX_DEPTH
"""Levels the merged output may nest (merging adds a few to each level merged)."""


def _subschemas(node: Mapping[str, Any]) -> Iterator[tuple[str, Any, Any]]:
    """``(keyword, name or index or None, subschema)`` for each schema position in ``node``
    (a value that is not a schema is yielded too: callers skip it)."""
    for key in NAME_MAPS:
        named = node.get(key)
        if isinstance(named, Mapping):
            for name, sub in named.items():
                yield key, name, sub
    for key in ONE_SUBSCHEMA:
        if key in node:
            yield key, None, node[key]
    for key in MANY_SUBSCHEMAS:
        branches = node.get(key)
        if isinstance(branches, list):
            for i, sub in enumerate(branches):
                yield key, i, sub


def _child_path(path: str, key: str, at: Any) -> str:
    return f"{path}/{key}" if at is None else f"{path}/{key}/{escape_pointer(str(at))}"


def local_references(schema: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """``(path, $ref)`` for each local reference in a schema position, each node once.

    Raises:
        SchemaConversionError: past [`MAX_NODES`][] nodes.
    """
    stack: list[tuple[Any, str]] = [(schema, "#")]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if not isinstance(node, Mapping) or id(node) in seen:
            continue
        seen.add(id(node))
        if len(seen) > MAX_NODES:
            raise SchemaConversionError(f"schema has more than {MAX_NODES} nodes", path=path)
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            yield path, ref
        stack.extend((sub, _child_path(path, key, at)) for key, at, sub in _subschemas(node))


def modern_reference(root: Any, ref: str) -> str:
    """``ref``, a local pointer into ``root`` (an older dialect's schema), as it reads once
    ``modern_spelling`` has rewritten each node it passes through: a tuple ``items`` is then
    ``prefixItems``, and the ``additionalItems`` beside it ``items``. A pointer that leads
    nowhere is returned as it is."""
    if not ref.startswith("#/"):
        return ref
    node, named, changed = root, False, False
    segments = ref[2:].split("/")
    for i, raw in enumerate(segments):
        segment = raw.replace("~1", "/").replace("~0", "~") if "~" in raw else raw
        if (
            not named
            and isinstance(node, Mapping)
            and isinstance(node.get("items"), list)
            and "prefixItems" not in node
            and segment in ("items", "additionalItems")
        ):
            segments[i] = "prefixItems" if segment == "items" else "items"
            changed = True
        if isinstance(node, Mapping) and segment in node:
            if not named and segment in DATA_KEYWORDS:
                break  # data, not schemas: nothing below is rewritten
            named = not named and segment in NAME_MAPS  # a name there is never a keyword
            node = node[segment]
        elif isinstance(node, list) and segment.isdigit() and int(segment) < len(node):
            named = False
            node = node[int(segment)]
        else:
            return ref
    return "#/" + "/".join(segments) if changed else ref


def _definitions_key(schema: Mapping[str, Any]) -> str | None:
    """Where copies of definitions can go at ``schema``'s root: ``$defs`` unless it holds
    something else than definitions, then ``definitions``; None when neither can."""
    for key in ("$defs", "definitions"):
        if isinstance(schema.get(key, {}), Mapping):
            return key
    return None


class _Names:
    """Names for copies: from the pointer's last segment (``#/oneOf/0/properties/a`` → ``a``,
    ``#`` → ``root``), reduced to ``[A-Za-z0-9_]``, none taken twice."""

    def __init__(self, taken: Any) -> None:
        self._taken = {str(name) for name in taken}
        self._next: dict[str, int] = {}

    def new(self, ref: str) -> str:
        last = ref.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~") if "/" in ref else ""
        base = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in last)
        base = base or ("root" if ref == "#" else "def")
        name, n = base, self._next.get(base, 2)
        while name in self._taken:
            name = f"{base}_{n}"
            n += 1
        self._next[base] = n
        self._taken.add(name)
        return name


def references_kept(walk: SchemaWalk, out: dict[str, Any]) -> dict[str, Any]:
    """``out``, what the merge made of ``walk.root``, with every local reference meaning what
    it meant in ``walk.root``.

    The merge rebuilds the top level: a reference into it (``#``, ``#/oneOf/1/...``, or
    ``#/properties/a/...`` where the alternatives define ``a`` too, so that ``a`` is now the
    ``allOf`` of its definitions) would point nowhere, or at what the merge made of its
    target. Each such reference is pointed instead at a copy of its original target under
    ``$defs`` (noted), whose own references are treated alike (recursion stays recursion,
    through the copy). References the merge left alone stay as they are; one that pointed
    nowhere before stays too, for the caller to refuse.

    Raises:
        SchemaConversionError: past the walk's bounds, or when the root's ``$defs`` and
            ``definitions`` both hold something else than definitions.
    """
    root = walk.root
    verdicts: dict[str, bool] = {}

    def moved(ref: str) -> bool:
        verdict = verdicts.get(ref)
        if verdict is None:
            target = follow_pointer(root, ref)
            verdict = verdicts[ref] = (
                isinstance(target, Mapping | bool) and follow_pointer(out, ref) is not target
            )
        return verdict

    if not any(moved(ref) for _, ref in local_references(out)):
        return out
    key = _definitions_key(out)
    if key is None:
        raise SchemaConversionError(
            "a $ref points into the top level, which is merged: what it points to must be "
            "copied into $defs or definitions, and neither holds definitions",
            path="#",
        )
    own = out.get(key)
    names = _Names(own if isinstance(own, Mapping) else ())
    pointers: dict[str, str] = {}
    pending: list[tuple[str, Any, str]] = []
    done: dict[int, tuple[Any, Any]] = {}  # id -> (node, rewritten): the node kept alive

    def pointed(ref: str) -> str:
        pointer = pointers.get(ref)
        if pointer is None:
            name = names.new(ref)
            pointer = pointers[ref] = f"#/{key}/{name}"
            target = follow_pointer(root, ref)
            if ref == "#":  # the root's own definitions and identity stay at the root
                target = {k: v for k, v in target.items() if k not in _ROOT_ONLY}
            pending.append((name, target, pointer))
            walk.note(
                "#",
                f"$ref {shown(ref)} pointed at a copy of its target, {pointer}: the merge "
                "rebuilt what it pointed to",
            )
        return pointer

    def rewritten(node: Any, path: str, depth: int) -> Any:
        if not isinstance(node, Mapping):
            return node
        known = done.get(id(node))
        if known is not None:
            return known[1]
        walk.visit(path, 0)  # counted; the depth is the merged output's, bounded below
        if depth > _REWRITE_DEPTH:
            raise SchemaConversionError(
                f"schema is nested deeper than {_REWRITE_DEPTH} levels once merged", path=path
            )
        walk.spend(len(node), path)
        copy: dict[Any, Any] | None = None
        ref = node.get("$ref")
        if ref.__class__ is str and ref.startswith("#") and moved(ref):
            copy = dict(node)
            copy["$ref"] = pointed(ref)
        for keyword, at, sub in _subschemas(node):
            new = rewritten(sub, _child_path(path, keyword, at), depth + 1)
            if new is sub:
                continue
            if copy is None:
                copy = dict(node)
            if at is None:
                copy[keyword] = new
            else:
                whole = node[keyword]  # a list of schemas, or names mapped to schemas
                if copy[keyword] is whole:  # copied once, then changed in place
                    copy[keyword] = list(whole) if isinstance(whole, list) else dict(whole)
                copy[keyword][at] = new
        result = node if copy is None else copy
        done[id(node)] = (node, result)
        return result

    result: dict[str, Any] = rewritten(out, "#", 0)  # a copy: out holds a moved reference
    definitions = dict(result.get(key) or {})  # the root's own, their references kept
    while pending:
        name, target, path = pending.pop()
        definitions[name] = rewritten(target, path, 1)
    result[key] = definitions
    return result


def dangling(schema: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first local reference in ``schema`` that points nowhere (its path and itself)."""
    for path, ref in local_references(schema):
        if follow_pointer(schema, ref) is NOWHERE:
            return path, ref
    return None
