"""A tool search of toolwire's own, for providers that take a search's results from the
application (Anthropic's ``tool_reference`` blocks).

A listing with deferred tools declares them with ``defer_loading``; the model finds them by
calling a search tool, and the API loads what the search names. Where the provider runs its
own search (Anthropic's BM25 and regex searches, OpenAI's hosted ``tool_search``, Gemini's
``tool_search``), toolwire declares that. With ``tool_search="local"`` (Anthropic), the search
is this module's tool instead: an ordinary tool the model calls, run through the governed
pipeline like any other, whose answer names the tools found (BM25 over each tool's name and
description, see ``toolwire._search_rank``). It only ever names tools of the listing it was
made for.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any

from toolwire._search_rank import ToolIndex
from toolwire.calls import ToolResult
from toolwire.tool import Tool

__all__ = ["SEARCH_LIMIT", "SEARCH_TOOL_NAME", "found_tools", "search_tool"]

SEARCH_TOOL_NAME = "tool_search"
"""The name a listing declares its own search under."""
SEARCH_LIMIT = 20
"""The most tools one search names."""

_SEARCH_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "What the tool you need does, in a few words.",
            "minLength": 1,
            "maxLength": 1000,
        },
        "limit": {
            "type": "integer",
            "description": "How many tools to load at most.",
            "minimum": 1,
            "maximum": SEARCH_LIMIT,
            "default": 5,
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}
_searches: weakref.WeakKeyDictionary[Tool, frozenset[str]] = weakref.WeakKeyDictionary()
"""Each search tool made here, with the names it may answer."""


def search_tool(tools: Iterable[tuple[str, str | None]], *, name: str = SEARCH_TOOL_NAME) -> Tool:
    """A tool that searches ``tools`` ((exposed name, description) pairs) by what they do and
    answers with the names of the best matches, best first (see [`found_tools`][])."""
    listed = [(tool_name, description or "") for tool_name, description in tools]
    index = ToolIndex(listed)

    def search(query: str, limit: int = 5) -> dict[str, Any]:
        # JSON Schema's integers include 5.0, which the schema lets through
        return {"tools": index.search(query, int(limit))}

    tool = Tool(
        name=name,
        description=(
            "Search the tools that are not loaded yet by what they do, and load the best "
            "matches. Call it when none of the loaded tools fits the task."
        ),
        input_schema=_SEARCH_SCHEMA,
        handler=search,
        annotations={"readOnlyHint": True, "openWorldHint": False},
    )
    _searches[tool] = frozenset(tool_name for tool_name, _ in listed)
    return tool


def found_tools(tool: Tool, result: ToolResult) -> list[str] | None:
    """The names a search made by [`search_tool`][] found, for its answer (a tool it was not
    made for names nothing: those are dropped); None when ``tool`` is no such search or the
    call failed."""
    known = _searches.get(tool)
    if known is None or result.is_error or result.structured_content is None:
        return None
    found = result.structured_content.get("tools")
    if not isinstance(found, list):
        return None
    return [name for name in found if isinstance(name, str) and name in known]
