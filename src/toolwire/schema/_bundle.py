"""One document out of many: a schema whose references name other documents (embedded
resources with their own ``$id``, anchors, documents the tool was given as ``resources``)
rewritten so every reference is a JSON pointer from its root, which every lowering follows.

- [`bundle`][]: the given documents a schema names are copied under its root ``$defs``; each
  ``$ref`` becomes ``#/pointer/to/its/target``; ``$id``, ``$anchor`` and ``$dynamicAnchor``
  below the root are removed (a provider resolving ``#/...`` from the root finds what the
  validator finds); a ``$dynamicRef`` becomes a ``$ref`` to its static target (noted). The
  JSON Schema meta-schemas, which the validator has built in, stay as they are (a lowering
  declares them as any value, noted; arguments are still checked against them).
- [`unresolved_references`][]: the references naming a document that is neither embedded,
  given, nor a meta-schema: what a tool refuses unless told to take them as unconstrained.

The validator needs none of this: it compiles the schema as it is, the given documents in its
registry (``toolwire._validation``). A schema with nothing to rewrite is returned as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urldefrag

from toolwire.errors import SchemaConversionError
from toolwire.schema._base import ConversionNote, shown
from toolwire.schema._rewrite import ROOT_URI, RewriteWalk, is_metaschema, join_uri

__all__ = ["RESOURCE_KEY", "bundle", "named_resources", "unresolved_references"]

RESOURCE_KEY = "toolwire_resource_"
"""The start of the ``$defs`` names the given documents are copied under."""

_IDENTIFIERS = ("$anchor", "$dynamicAnchor")
_REFERENCES = ("$ref", "$dynamicRef")


class _Places(RewriteWalk):
    """Where each document and anchor of a schema is (its JSON pointer from the root), and
    the documents its references name."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        super().__init__(root)
        self.documents_at: dict[str, str] = {}
        self.anchors_at: dict[tuple[str, str], str] = {}
        self.named: list[tuple[str, str, str]] = []
        """(reference, the base it is read from, where it stands)."""

    def edit(self, node: Mapping[str, Any], path: str, base: str) -> dict[str, Any] | None:
        pointer = path[1:]
        own = node.get(self.id_key)
        if isinstance(own, str) and own.startswith("#"):  # draft 6/7: an anchor spelled as $id
            self.anchors_at.setdefault((base, own[1:]), pointer)
        elif pointer == "" or isinstance(own, str):
            self.documents_at.setdefault(base, pointer)
        for key in _IDENTIFIERS:
            name = node.get(key)
            if isinstance(name, str):
                self.anchors_at.setdefault((base, name), pointer)
        for key in _REFERENCES:
            reference = node.get(key)
            if isinstance(reference, str):
                self.named.append((reference, base, path))
        return None


def _places(schema: Mapping[str, Any]) -> _Places:
    walk = _Places(schema)
    walk.schema(schema, "#", ROOT_URI, 0)
    return walk


def _target(places: _Places, reference: str, base: str) -> tuple[str, str] | None:
    """The document a reference names (resolved against ``base``) and its fragment."""
    resolved = join_uri(base, reference, keep_fragment=True)
    if resolved is None:
        return None
    document, fragment = urldefrag(resolved)
    if reference.startswith("#"):
        document = base  # a fragment of the current document
    return document, fragment


def unresolved_references(
    schema: Mapping[str, Any], resources: Mapping[str, Any] | None = None
) -> list[tuple[str, str]]:
    """Each reference (and where it stands) naming a document that is neither one of the
    schema's own, one of ``resources``, nor a JSON Schema meta-schema, in the order met.

    Raises:
        SchemaConversionError: when the schema is nested deeper than ``MAX_DEPTH`` levels or
            has more than ``MAX_NODES`` nodes.
    """
    given = {urldefrag(uri).url for uri in resources or ()}
    found: list[tuple[str, str]] = []
    pending: list[Mapping[str, Any]] = [schema]
    seen_documents: set[str] = set()
    while pending:
        places = _places(pending.pop())
        for reference, base, path in places.named:
            target = _target(places, reference, base)
            if target is None:
                found.append((reference, path))
                continue
            document = target[0]
            if document in places.documents_at or is_metaschema(document):
                continue
            if document not in given:
                found.append((reference, path))
            elif document not in seen_documents:  # what the given document names, too
                seen_documents.add(document)
                body = _given(resources or {}, document)
                if isinstance(body, Mapping):
                    pending.append({**body, "$id": body.get("$id", document)})
    return found


def _given(resources: Mapping[str, Any], document: str) -> Any:
    for uri, body in resources.items():
        if urldefrag(uri).url == document:
            return body
    return None


def bundle(
    schema: Mapping[str, Any], resources: Mapping[str, Any] | None = None
) -> tuple[Mapping[str, Any], list[ConversionNote]]:
    """``schema`` as one document whose references are JSON pointers from its root (see the
    module docstring), and a note for each rewrite; ``schema`` itself when it has nothing to
    rewrite (no embedded resource, anchor or given document named).

    Raises:
        SchemaConversionError: when the schema is nested beyond the bounds.
    """
    combined = _with_resources(schema, resources or {})
    places = _places(combined)
    needs = (
        combined is not schema
        or len(places.documents_at) > 1
        or any(
            not reference.startswith("#/") and reference != "#" for reference, _, _ in places.named
        )
    )
    if not needs:
        return schema, []
    walk = _Pointers(combined, places)
    out = walk.schema(combined, "#", ROOT_URI, 0)
    given = [
        ConversionNote(f"#/$defs/{key}", f"{shown(body.get('$id'))}, given in resources, inlined")
        for key, body in (combined.get("$defs") or {}).items()
        if combined is not schema
        and str(key).startswith(RESOURCE_KEY)
        and isinstance(body, Mapping)
    ]
    return out, given + walk.notes


def named_resources(schema: Mapping[str, Any], resources: Mapping[str, Any]) -> dict[str, Any]:
    """The documents of ``resources`` that ``schema`` names, at any depth of naming (what a
    validator's registry needs; the others are left out, whatever they hold)."""
    combined = _with_resources(schema, resources)
    if combined is schema:
        return {}
    defs = combined["$defs"]
    return {
        uri: body
        for uri, body in resources.items()
        if any(
            isinstance(added, Mapping) and added.get("$id") == urldefrag(uri).url
            for key, added in defs.items()
            if str(key).startswith(RESOURCE_KEY)
        )
    }


def _with_resources(schema: Mapping[str, Any], resources: Mapping[str, Any]) -> Mapping[str, Any]:
    """``schema`` with the given documents it names (at any depth of naming) copied under its
    root ``$defs``, each keeping its URI as its ``$id``; ``schema`` itself when it names none."""
    if not resources:
        return schema
    added: dict[str, Any] = {}
    combined: Mapping[str, Any] = schema
    while True:
        places = _places(combined)
        wanted = []
        for reference, base, _ in places.named:
            target = _target(places, reference, base)
            if target is None:
                continue
            document = target[0]
            if document in places.documents_at or is_metaschema(document):
                continue
            body = _given(resources, document)
            if body is not None and document not in wanted:
                wanted.append(document)
        if not wanted:
            return combined
        for document in wanted:
            body = _given(resources, document)
            key = f"{RESOURCE_KEY}{len(added) + 1}"
            added[key] = {**body, "$id": document} if isinstance(body, Mapping) else body
            if not isinstance(body, Mapping):
                # A boolean document has no $id to carry: named by where it is put.
                added[key] = {"$id": document, "allOf": [body]}
        defs = combined.get("$defs")
        merged = dict(defs) if isinstance(defs, Mapping) else {}
        merged.update(added)
        combined = {**combined, "$defs": merged}


class _Pointers(RewriteWalk):
    """Every reference as a JSON pointer from the root; identifiers below it removed."""

    def __init__(self, root: Mapping[str, Any], places: _Places) -> None:
        super().__init__(root)
        self.places = places

    def edit(self, node: Mapping[str, Any], path: str, base: str) -> dict[str, Any] | None:
        out: dict[str, Any] | None = None
        for key in _REFERENCES:
            reference = node.get(key)
            if not isinstance(reference, str):
                continue
            pointer = self._pointer(reference, base, path)
            if pointer is None:
                continue  # a meta-schema, or what the tool takes as unconstrained: as it is
            out = dict(node) if out is None else out
            if key == "$dynamicRef":
                del out["$dynamicRef"]
                self.note(path, f"$dynamicRef {shown(reference)} declared as its static target")
                if "$ref" in out:  # both: the static one stands beside
                    out.setdefault("allOf", []).append({"$ref": pointer})
                    continue
            out["$ref"] = pointer
        if path != "#":
            for key in (self.id_key, *_IDENTIFIERS):
                if key in node:
                    out = dict(node) if out is None else out
                    out.pop(key, None)
            if "$schema" in node:
                out = dict(node) if out is None else out
                out.pop("$schema", None)
        return out

    def _pointer(self, reference: str, base: str, path: str) -> str | None:
        target = _target(self.places, reference, base)
        if target is None:
            raise SchemaConversionError(
                f"$ref {shown(reference)} is not a URI reference", path=path
            )
        document, fragment = target
        where = self.places.documents_at.get(document)
        if where is None:
            return None  # another document: a meta-schema, or unconstrained
        if fragment == "" or fragment.startswith("/"):
            return "#" + where + fragment
        anchored = self.places.anchors_at.get((document, fragment))
        if anchored is None:
            raise SchemaConversionError(
                f"$ref {shown(reference)} names an anchor no part of the schema has", path=path
            )
        return "#" + anchored
