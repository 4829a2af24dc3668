"""MCP tool results as toolwire results: text, images, audio, resource links (never fetched),
embedded resources, structured content and ``isError``."""

from __future__ import annotations

import base64
import binascii
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


def _bytes(data: Any) -> bytes:
    if isinstance(data, bytes):
        return data
    try:
        return base64.b64decode(str(data or ""), validate=False)
    except (binascii.Error, ValueError):
        return b""


def _content(block: Any) -> Content:
    kind = _field(block, "type")
    if kind == "text":
        return TextContent(str(_field(block, "text") or ""))
    if kind == "image":
        return ImageContent(
            _bytes(_field(block, "data")),
            str(_field(block, "mime_type", "mimeType") or "image/png"),
        )
    if kind == "audio":
        return AudioContent(
            _bytes(_field(block, "data")),
            str(_field(block, "mime_type", "mimeType") or "audio/wav"),
        )
    if kind == "resource_link":
        return ResourceLink(
            uri=str(_field(block, "uri") or ""),
            name=_field(block, "name"),
            mime_type=_field(block, "mime_type", "mimeType"),
            description=_field(block, "description"),
        )
    if kind == "resource":
        resource = _field(block, "resource")
        text = _field(resource, "text")
        blob = _field(resource, "blob")
        return EmbeddedResource(
            uri=str(_field(resource, "uri") or ""),
            mime_type=_field(resource, "mime_type", "mimeType"),
            text=text if isinstance(text, str) else None,
            blob=_bytes(blob) if blob is not None else None,
        )
    return TextContent(f"[unsupported content: {kind}]")


def result_from_mcp(result: Any) -> ToolResult:
    """A ``CallToolResult`` (SDK object or dict) as a :class:`ToolResult`.

    ``isError`` makes an error result carrying the server's message (kind ``failed``);
    ``structuredContent`` is kept when it is an object.
    """
    blocks = _field(result, "content") or []
    content = tuple(_content(block) for block in blocks)
    structured = _field(result, "structured_content", "structuredContent")
    if _field(result, "is_error", "isError"):
        message = content_text(content) or "the tool reported an error"
        return ToolResult.error("failed", message)
    return ToolResult(
        content=content,
        structured_content=(
            structured
            if structured.__class__ is dict
            else dict(structured)
            if isinstance(structured, Mapping)
            else None
        ),
    )
