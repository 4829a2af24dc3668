"""Reading provider responses that arrive as dicts or as the official SDKs' objects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolwire.calls import RejectedCall, ToolCall
from toolwire.errors import MalformedResponse
from toolwire.tool import ToolSet

__all__ = ["as_data", "get_field", "listed", "split_calls", "unknown_tool"]


def as_data(value: Any) -> Any:
    """A google-genai object as its JSON dict; dicts and lists as they are."""
    kind = value.__class__
    if kind is dict or kind is list:
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, Mapping):
        return dump(mode="json", by_alias=True, exclude_none=True)
    return value


def get_field(data: Mapping[str, Any], camel: str, snake: str) -> Any:
    """``data[camel]``, or ``data[snake]`` (REST JSON or a snake_case dump), or None."""
    value = data.get(camel)
    return data.get(snake) if value is None else value


def listed(response: Any, key: str, what: str) -> list[Any]:
    """``response[key]`` as a list, where ``response`` is an object holding the list under
    ``key`` or the list itself (``what`` names it in the error).

    Raises:
        MalformedResponse: when there is no such list.
    """
    data = as_data(response)
    if isinstance(data, Mapping):
        data = data.get(key) or []
    if not isinstance(data, list | tuple):
        raise MalformedResponse(f"expected {what}, not {type(response).__name__}")
    return list(data)


def split_calls(items: list[ToolCall | RejectedCall]) -> tuple[list[ToolCall], list[Any]]:
    """The resolved calls, and the error answers of the rejected ones."""
    return (
        [item for item in items if isinstance(item, ToolCall)],
        [item.answer for item in items if isinstance(item, RejectedCall)],
    )


_NAMES_LISTED = 50
"""Tool names an unknown-tool answer lists, so the model can correct itself."""


def unknown_tool(toolset: ToolSet, name: str) -> str:
    """What the model is told when it calls a name the toolset does not expose."""
    listed = ", ".join(toolset.exposed_names[:_NAMES_LISTED])
    return f"Unknown tool {name!r}. Available tools: {listed or '(none)'}."
