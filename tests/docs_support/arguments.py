"""Arguments a tiny model would send for a tool: made from the tool's JSON schema, as every
provider declares it (JSON Schema, or Gemini's OpenAPI subset with upper-case type names).

Only required properties are filled in; a value is the schema's ``const``, its ``default``,
its first ``enum`` member, ``null`` where null is allowed (what a strict OpenAI schema makes
of an optional parameter), else a plausible value of its type: a string from the property's
name (``city`` is ``"Lisbon"``), the smallest number the bounds allow, one item per array.
"""

from __future__ import annotations

from typing import Any

__all__ = ["arguments_for", "value_for"]

# Strings a property's name suggests (matched on the name's words, lower-case).
_HINTS = {
    "city": "Lisbon",
    "location": "Lisbon",
    "place": "Lisbon",
    "country": "PT",
    "email": "ada@example.com",
    "url": "https://example.com",
    "uri": "https://example.com",
    "path": "notes.txt",
    "file": "notes.txt",
    "filename": "notes.txt",
    "query": "weather",
    "q": "weather",
    "name": "Ada",
    "user": "ada",
    "to": "ada@example.com",
    "date": "2026-01-01",
    "currency": "EUR",
    "language": "en",
    "id": "1",
}
_FORMATS = {
    "date": "2026-01-01",
    "date-time": "2026-01-01T09:00:00Z",
    "time": "09:00:00",
    "email": "ada@example.com",
    "uri": "https://example.com",
    "url": "https://example.com",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "ipv4": "127.0.0.1",
}
_MAX_DEPTH = 8


def arguments_for(schema: dict[str, Any] | None) -> dict[str, Any]:
    """The arguments of one call to a tool whose parameters are ``schema``."""
    value = value_for(schema or {"type": "object"}, schema or {}, "", 0)
    return value if isinstance(value, dict) else {}


def value_for(schema: Any, root: dict[str, Any], name: str, depth: int) -> Any:
    """A value ``schema`` accepts (``root`` resolves ``$ref``; ``name`` is the property's)."""
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return None
    if "$ref" in schema:
        target = _resolve(root, str(schema["$ref"]))
        return value_for({**target, **_without(schema, "$ref")}, root, name, depth + 1)
    if "const" in schema:
        return schema["const"]
    if "default" in schema:
        return schema["default"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            if any(_is_null(option) for option in options) or schema.get("nullable") is True:
                return None
            return value_for({**options[0], **_without(schema, key)}, root, name, depth + 1)
    if isinstance(schema.get("allOf"), list):
        merged: dict[str, Any] = _without(schema, "allOf")
        for part in schema["allOf"]:
            merged = _merge(merged, _resolve_all(part, root))
        return value_for(merged, root, name, depth + 1)
    types = _types(schema)
    if "null" in types or schema.get("nullable") is True:
        return None
    kind = types[0] if types else _guess(schema)
    if kind == "object":
        return _object(schema, root, depth)
    if kind == "array":
        items = schema.get("items", {})
        if isinstance(items, list):  # a tuple schema
            return [value_for(item, root, name, depth + 1) for item in items]
        count = max(1, int(schema.get("minItems") or 1))
        return [value_for(items, root, name, depth + 1) for _ in range(count)]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        number = 1 if low is None else int(low) + (1 if "exclusiveMinimum" in schema else 0)
        high = schema.get("maximum")
        if high is not None and number > high:
            number = int(high)
        return number if kind == "integer" else float(number)
    if kind == "boolean":
        return True
    return _string(schema, name)


def _object(schema: dict[str, Any], root: dict[str, Any], depth: int) -> dict[str, Any]:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    names = [n for n in required if n in properties] if isinstance(required, list) else []
    return {n: value_for(properties[n], root, n, depth + 1) for n in names}


def _string(schema: dict[str, Any], name: str) -> str:
    text = _FORMATS.get(str(schema.get("format", "")).lower())
    if text is None:
        words = name.lower().replace("-", "_").split("_")
        text = next((_HINTS[w] for w in [name.lower(), *reversed(words)] if w in _HINTS), None)
    text = text or "example"
    low = schema.get("minLength")
    if isinstance(low, int) and len(text) < low:
        text = text + "x" * (low - len(text))
    high = schema.get("maxLength")
    if isinstance(high, int) and len(text) > high:
        text = text[:high]
    return text


def _types(schema: dict[str, Any]) -> list[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared.lower()]
    if isinstance(declared, list):
        names = [str(t).lower() for t in declared]
        return sorted(names, key=lambda t: t != "null")  # null first: the safe choice
    return []


def _guess(schema: dict[str, Any]) -> str:
    if "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return "string"


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and str(schema.get("type", "")).lower() == "null"


def _resolve(root: dict[str, Any], ref: str) -> dict[str, Any]:
    node: Any = root
    for part in ref.removeprefix("#").strip("/").split("/"):
        if not part:
            continue
        node = (
            node.get(part.replace("~1", "/").replace("~0", "~"), {})
            if isinstance(node, dict)
            else {}
        )
    return node if isinstance(node, dict) else {}


def _resolve_all(schema: Any, root: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(schema, dict):
        return {}
    if "$ref" in schema:
        return {**_resolve(root, str(schema["$ref"])), **_without(schema, "$ref")}
    return schema


def _merge(left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
    merged = {**left, **right}
    if isinstance(left.get("properties"), dict) and isinstance(right.get("properties"), dict):
        merged["properties"] = {**left["properties"], **right["properties"]}
    if isinstance(left.get("required"), list) and isinstance(right.get("required"), list):
        merged["required"] = [*left["required"], *right["required"]]
    return merged


def _without(schema: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != key}
