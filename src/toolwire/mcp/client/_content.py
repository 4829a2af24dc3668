"""MCP tool results as toolwire results: text, images, audio, resource links (never fetched),
embedded resources, structured content and ``isError``."""

from __future__ import annotations

import base64
import binascii
import dataclasses
from collections.abc import Mapping
from typing import Any

from toolwire.calls import (
    AudioContent,
    Content,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    ToolResult,
    content_text,
)

__all__ = ["result_from_mcp"]

_SHOWN = 60
"""Characters of a server's odd value quoted back in a placeholder."""


class _Unreadable(ValueError):
    """A content block that cannot be mapped; its message is the placeholder's text."""


def _field(obj: Any, *names: str) -> Any:
    # The SDK's objects (snake_case attributes) or the wire's dicts (camelCase keys). dict and
    # attribute lookups first: an ABC isinstance check costs more than the rest of the mapping.
    get = obj.get if isinstance(obj, dict) else None
    for name in names:
        if get is not None:
            value = get(name)
        else:
            value = getattr(obj, name, None)
            if value is None and isinstance(obj, Mapping):
                value = obj.get(name)
        if value is not None:
            return value
    return None


def _shown(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _text(value: Any, what: str) -> str | None:
    """``value`` when it is a string (or absent), else the block is unreadable."""
    if value is None or isinstance(value, str):
        return value
    raise _Unreadable(f"[{what} is not a string]")


def _bytes(data: Any, what: str) -> bytes:
    """The bytes of base64 ``data``; anything else makes the block unreadable (never an empty
    or half-decoded payload passed on as if it were the server's)."""
    if isinstance(data, bytes):
        return data
    if not isinstance(data, str):
        raise _Unreadable(f"[{what} without data]")
    try:
        # Servers may wrap base64 over lines; any other character is an error, not skipped.
        return base64.b64decode("".join(data.split()), validate=True)
    except (binascii.Error, ValueError):
        raise _Unreadable(f"[{what} with invalid base64 data]") from None


def _media(block: Any, kind: str, default_mime: str) -> Content:
    data = _bytes(_field(block, "data"), kind)
    if not data:
        raise _Unreadable(f"[{kind} without data]")
    mime_type = _text(_field(block, "mime_type", "mimeType"), f"{kind} mimeType") or default_mime
    if kind == "image":
        return ImageContent(data, mime_type)
    return AudioContent(data, mime_type)


def _content(block: Any) -> Content:
    kind = _field(block, "type")
    if kind == "text":
        return TextContent(_text(_field(block, "text"), "text") or "")
    if kind == "image":
        return _media(block, "image", "image/png")
    if kind == "audio":
        return _media(block, "audio", "audio/wav")
    if kind == "resource_link":
        return ResourceLink(
            uri=_text(_field(block, "uri"), "resource link uri") or "",
            name=_text(_field(block, "name"), "resource link name"),
            mime_type=_text(_field(block, "mime_type", "mimeType"), "resource link mimeType"),
            description=_text(_field(block, "description"), "resource link description"),
        )
    if kind == "resource":
        resource = _field(block, "resource")
        blob = _field(resource, "blob")
        return EmbeddedResource(
            uri=_text(_field(resource, "uri"), "resource uri") or "",
            mime_type=_text(_field(resource, "mime_type", "mimeType"), "resource mimeType"),
            text=_text(_field(resource, "text"), "resource text"),
            blob=_bytes(blob, "resource") if blob is not None else None,
        )
    return TextContent(f"[unsupported content: {_shown(kind)}]")


def _annotations(block: Any) -> dict[str, Any] | None:
    """A block's MCP annotations as a JSON object (None: none, or not an object)."""
    value = _field(block, "annotations")
    if hasattr(value, "model_dump"):
        value = value.model_dump(by_alias=True, exclude_none=True)
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        return None
    return dict(value) or None


def _mapped(block: Any) -> Content:
    try:
        part = _content(block)
        annotations = _annotations(block)
        return part if annotations is None else dataclasses.replace(part, annotations=annotations)
    except _Unreadable as exc:
        return TextContent(str(exc))
    except Exception:  # e.g. an object whose attributes raise: still one placeholder
        return TextContent("[unreadable content]")


def _structured(value: Any) -> dict[str, Any] | None:
    """``structuredContent`` when it is a JSON object (string keys), else None."""
    if value is None:
        return None
    if value.__class__ is not dict:
        if not isinstance(value, Mapping):
            return None
        try:
            value = dict(value)
        except Exception:  # a mapping that cannot be read is no structured content
            return None
    return value if all(isinstance(key, str) for key in value) else None


def result_from_mcp(result: Any) -> ToolResult:
    """A ``CallToolResult`` (SDK object or dict) as a [`ToolResult`][]. Never raises.

    ``isError`` makes an error result carrying the server's message (kind ``failed``);
    ``structuredContent`` is kept when it is an object, on errors too (providers answer an
    error with its text; the structured detail stays on the result for the application). A
    content block that cannot be mapped (an unknown kind, invalid base64, a field of the wrong
    type) becomes a text placeholder saying so; a result that is not a ``CallToolResult`` at
    all is a ``failed`` answer.
    """
    if not hasattr(result, "content") and not isinstance(result, Mapping):
        return ToolResult.error("failed", "The server's answer is not a tool result.")
    blocks = _field(result, "content")
    if blocks is None:
        blocks = ()
    elif not isinstance(blocks, list | tuple):
        return ToolResult.error("failed", "The server's answer has content that is not a list.")
    content = tuple(_mapped(block) for block in blocks)
    structured = _structured(_field(result, "structured_content", "structuredContent"))
    is_error = _field(result, "is_error", "isError")
    if is_error is not None and is_error is not False:  # only false (or absent) is success
        failed = ToolResult.error("failed", content_text(content) or "the tool reported an error")
        if structured is None:
            return failed
        return dataclasses.replace(failed, structured_content=structured)
    return ToolResult(content=content, structured_content=structured)
