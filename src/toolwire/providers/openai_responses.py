"""OpenAI Responses tool calling, as pure functions over dicts.

Tools are flat (``{"type": "function", name, description, parameters, strict}``) and
``strict`` is always sent: when it is left out, the Responses API makes the schema strict on its
own and optional fields become mandatory. Calls are ``function_call`` output items joined by
``call_id``; answers are ``function_call_output`` items whose ``output`` is a string, or a list
of ``input_text`` / ``input_image`` items when the result carries an image.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any

from toolwire.calls import (
    ImageContent,
    RejectedCall,
    TextContent,
    ToolCall,
    ToolResult,
    placeholder,
)
from toolwire.errors import MalformedResponse
from toolwire.providers import _openai
from toolwire.providers._wire import as_data, listed, split_calls
from toolwire.tool import Tool, ToolSet

__all__ = [
    "NAME",
    "ResponsesStreamAccumulator",
    "answer",
    "declare",
    "function_call_output",
    "function_calls",
    "null_paths",
    "parse_calls",
    "strict_reasons",
    "tools",
]

NAME = "openai-responses"
ERROR_PREFIX = "Error: "
_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def tools(toolset: ToolSet | Iterable[Tool], *, strict: bool = True) -> list[dict[str, Any]]:
    """The request's ``tools``, in toolset order (cached on the toolset; read-only)."""
    return [
        {
            "type": "function",
            "name": d.name,
            "description": d.description,
            "parameters": d.parameters,
            "strict": d.strict,
        }
        for d in _openai.declared(ToolSet.of(toolset), NAME, strict)
    ]


def declare(toolset: ToolSet, *, strict: bool = True) -> list[dict[str, Any]]:
    """The registry's declare step: :func:`tools`."""
    return tools(toolset, strict=strict)


def strict_reasons(toolset: ToolSet | Iterable[Tool], *, strict: bool = True) -> dict[str, str]:
    """Per exposed name, why a tool is declared with ``strict: false`` (for reports)."""
    return _openai.strict_reasons(ToolSet.of(toolset), NAME, strict)


def null_paths(toolset: ToolSet, *, strict: bool = True, **_: Any) -> dict[str, Any]:
    """Per exposed name, the argument paths strict mode made nullable."""
    return dict(_openai.null_paths_by_name(toolset, NAME, strict))


def function_call_output(call_id: str, output: str | list[dict[str, Any]]) -> dict[str, Any]:
    """A ``function_call_output`` input item."""
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def parse_calls(
    response: Any, toolset: ToolSet, *, strict: bool = True
) -> list[ToolCall | RejectedCall]:
    """Every ``function_call`` item of a response (or of a list of items), in order."""
    items: list[ToolCall | RejectedCall] = []
    for raw in listed(response, "output", "a response or a list of output items"):
        item = as_data(raw)
        if not isinstance(item, Mapping) or item.get("type") != "function_call":
            continue
        index = len(items)
        call_id = item.get("call_id")
        call_id = call_id if isinstance(call_id, str) and call_id else None
        local_id = call_id or f"call_{index}"
        extras = {"id": item["id"]} if isinstance(item.get("id"), str) else {}
        items.append(
            _openai.resolve_or_reject(
                toolset,
                NAME,
                strict,
                name=item.get("name"),
                call_id=call_id,
                raw_arguments=item.get("arguments"),
                index=index,
                local_id=local_id,
                error_answer=lambda m, i=local_id: function_call_output(i, ERROR_PREFIX + m),
                extras=extras,
            )
        )
    return items


def function_calls(
    response: Any, toolset: ToolSet | Iterable[Tool], *, strict: bool = True
) -> tuple[list[ToolCall], list[dict[str, Any]]]:
    """The resolved calls, and the error answers for calls that cannot run."""
    return split_calls(parse_calls(response, ToolSet.of(toolset), strict=strict))


def answer(
    call: ToolCall, result: ToolResult, *, error_prefix: str = ERROR_PREFIX
) -> dict[str, Any]:
    """The ``function_call_output`` for ``call``: a string, or text and image items when the
    result carries an image the API takes."""
    call_id = call.call_id or call.local_id
    if not any(isinstance(p, ImageContent) and p.mime_type in _IMAGE_TYPES for p in result.content):
        return function_call_output(call_id, _openai.output_text(result, error_prefix))
    parts: list[dict[str, Any]] = []
    if result.is_error:
        parts.append({"type": "input_text", "text": error_prefix.rstrip()})
    for part in result.content:
        if isinstance(part, ImageContent) and part.mime_type in _IMAGE_TYPES:
            data = base64.b64encode(part.data).decode("ascii")
            parts.append(
                {
                    "type": "input_image",
                    "detail": "auto",
                    "image_url": f"data:{part.mime_type};base64,{data}",
                }
            )
        elif isinstance(part, TextContent):
            parts.append({"type": "input_text", "text": part.text})
        else:
            parts.append({"type": "input_text", "text": placeholder(part)})
    return function_call_output(call_id, parts)


class ResponsesStreamAccumulator:
    """Turns Responses stream events into the output items they add up to.

    Function call arguments arrive as ``response.function_call_arguments.delta`` events
    joined by item; ``.done`` and ``response.output_item.done`` events carry the final values,
    and ``response.completed`` the whole response, which wins when it comes.
    """

    def __init__(self) -> None:
        self._items: dict[int, dict[str, Any]] = {}
        self._ids: dict[str, int] = {}
        self._completed: dict[str, Any] | None = None

    def add(self, event: Any) -> None:
        data = as_data(event)
        if not isinstance(data, Mapping):
            raise MalformedResponse(f"an event must be an object, not {type(event).__name__}")
        kind = data.get("type")
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = as_data(data.get("item") or {})
            index = data.get("output_index", len(self._items))
            merged = {**self._items.get(index, {}), **dict(item)}
            self._items[index] = merged
            if isinstance(merged.get("id"), str):
                self._ids[merged["id"]] = index
        elif kind in (
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
        ):
            index = data.get("output_index")
            if not isinstance(index, int):
                index = self._ids.get(str(data.get("item_id")), -1)
            item = self._items.setdefault(index, {"type": "function_call", "arguments": ""})
            if kind.endswith(".delta"):
                item["arguments"] = str(item.get("arguments") or "") + str(data.get("delta", ""))
            elif isinstance(data.get("arguments"), str):
                item["arguments"] = data["arguments"]
        elif kind == "response.completed":
            response = as_data(data.get("response"))
            if isinstance(response, Mapping):
                self._completed = dict(response)

    def response(self) -> dict[str, Any]:
        """A response-shaped dict with the output items so far (or the completed response)."""
        if self._completed is not None:
            return self._completed
        return {"output": [self._items[i] for i in sorted(self._items)]}
