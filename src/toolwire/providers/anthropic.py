"""Anthropic Messages tool calling, as pure functions over dicts.

Tools are ``{name, description, input_schema}`` (the original schema: Anthropic takes JSON
Schema and optional properties as they are). Calls are ``tool_use`` content blocks; answers are
``tool_result`` blocks, all of a turn in one user message, before any text. toolwire never
builds a forced ``tool_choice``: current models reject it with extended thinking.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from toolwire._text import clean_description
from toolwire.calls import (
    MAX_ARGUMENT_DEPTH,
    ImageContent,
    RejectedCall,
    TextContent,
    ToolCall,
    ToolResult,
    canonical_json,
    placeholder,
    within_depth,
)
from toolwire.errors import MalformedResponse, SchemaConversionError
from toolwire.providers._wire import as_data, listed, split_calls, unknown_tool
from toolwire.schema._base import Lowering
from toolwire.tool import Tool, ToolSet

__all__ = [
    "NAME",
    "AnthropicStreamAccumulator",
    "answer",
    "declare",
    "parse_calls",
    "tool_result",
    "tool_uses",
    "tools",
]

NAME = "anthropic"
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def _input_schema(tool: Tool) -> dict[str, Any]:
    schema = tool.input_schema
    if isinstance(schema, Mapping) and schema.get("type") == "object":
        return dict(schema)
    try:  # Anthropic wants an object root; normalise the rest
        return Lowering(schema).object_root()
    except SchemaConversionError as exc:
        raise exc.for_tool(tool.qualified_name) from None


def tools(
    toolset: ToolSet | Iterable[Tool], *, cache_control: Literal["last"] | None = None
) -> list[dict[str, Any]]:
    """The request's ``tools`` in toolset order; ``cache_control="last"`` marks the last tool,
    which caches the whole list as a prompt prefix."""
    toolset = ToolSet.of(toolset)

    def build() -> list[dict[str, Any]]:
        declared = [
            {
                "name": toolset.exposed_name(t),
                "description": clean_description(t.description),
                "input_schema": _input_schema(t),
            }
            for t in toolset
            if t.providers is None or NAME in t.providers
        ]
        if cache_control == "last" and declared:
            declared[-1] = {**declared[-1], "cache_control": {"type": "ephemeral"}}
        return declared

    return toolset.cached((NAME, cache_control), build)


def declare(
    toolset: ToolSet, *, cache_control: Literal["last"] | None = None
) -> list[dict[str, Any]]:
    """The registry's declare step: :func:`tools`."""
    return tools(toolset, cache_control=cache_control)


def tool_result(
    tool_use_id: str, content: str | list[dict[str, Any]], *, is_error: bool = False
) -> dict[str, Any]:
    """A ``tool_result`` block."""
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def parse_calls(response: Any, toolset: ToolSet) -> list[ToolCall | RejectedCall]:
    """Every ``tool_use`` block of a message (or of a list of blocks), in order."""
    items: list[ToolCall | RejectedCall] = []
    for raw in listed(response, "content", "a message or a list of content blocks"):
        block = as_data(raw)
        if not isinstance(block, Mapping) or block.get("type") != "tool_use":
            continue
        index = len(items)
        call_id = block.get("id") if isinstance(block.get("id"), str) else None
        local_id = call_id or f"toolu_missing_{index}"
        raw_name = block.get("name")
        name: str = raw_name if isinstance(raw_name, str) else ""
        tool = toolset.get(name)
        arguments = block.get("input")
        if arguments is None:
            arguments = {}
        message = None
        kind: Literal["not_found", "invalid_arguments"] = "invalid_arguments"
        if tool is None:
            message, kind = unknown_tool(toolset, name), "not_found"
        elif not isinstance(arguments, Mapping):
            message = (
                f"Invalid arguments for {name!r}: expected an object, got "
                f"{type(arguments).__name__}."
            )
        elif not within_depth(arguments, MAX_ARGUMENT_DEPTH):
            message = f"Invalid arguments for {name!r}: nested deeper than {MAX_ARGUMENT_DEPTH}."
        if message is not None or tool is None:
            text = message or ""
            items.append(
                RejectedCall(
                    name=name,
                    call_id=call_id,
                    index=index,
                    error_kind=kind,
                    message=text,
                    answer=tool_result(local_id, text, is_error=True),
                )
            )
            continue
        items.append(
            ToolCall(
                exposed_name=name,
                tool=tool,
                arguments=dict(arguments),
                call_id=call_id,
                local_id=local_id,
                index=index,
            )
        )
    return items


def tool_uses(
    response: Any, toolset: ToolSet | Iterable[Tool]
) -> tuple[list[ToolCall], list[dict[str, Any]]]:
    """The resolved calls, and the error answers for calls that cannot run."""
    return split_calls(parse_calls(response, ToolSet.of(toolset)))


def answer(call: ToolCall, result: ToolResult) -> dict[str, Any]:
    """The ``tool_result`` block for ``call``: text, or text and image blocks; ``is_error`` on
    failure."""
    call_id = call.call_id or call.local_id
    has_image = any(
        isinstance(p, ImageContent) and p.mime_type in _IMAGE_TYPES for p in result.content
    )
    if not has_image:
        text = "\n".join(placeholder(p) for p in result.content)
        if result.structured_content is not None and not text:
            text = canonical_json(dict(result.structured_content))
        return tool_result(call_id, text, is_error=result.is_error)
    blocks: list[dict[str, Any]] = []
    for part in result.content:
        if isinstance(part, ImageContent) and part.mime_type in _IMAGE_TYPES:
            blocks.append(
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": part.mime_type,
                        "data": base64.b64encode(part.data).decode("ascii"),
                    },
                }
            )
        elif isinstance(part, TextContent):
            blocks.append({"type": "text", "text": part.text})
        else:
            blocks.append({"type": "text", "text": placeholder(part)})
    return tool_result(call_id, blocks, is_error=result.is_error)


class AnthropicStreamAccumulator:
    """Turns Messages stream events into the message they add up to; ``tool_use`` inputs are
    joined from their ``input_json_delta`` pieces (left as the raw text when it is not JSON,
    so the call is answered with an error rather than run with guessed arguments)."""

    def __init__(self) -> None:
        self._message: dict[str, Any] = {"role": "assistant", "content": []}
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, str] = {}

    def add(self, event: Any) -> None:
        data = as_data(event)
        if not isinstance(data, Mapping):
            raise MalformedResponse(f"an event must be an object, not {type(event).__name__}")
        kind = data.get("type")
        if kind == "message_start":
            message = as_data(data.get("message") or {})
            self._message.update({k: v for k, v in message.items() if k != "content"})
        elif kind == "content_block_start":
            index = data.get("index", len(self._blocks))
            self._blocks[index] = dict(as_data(data.get("content_block") or {}))
        elif kind == "content_block_delta":
            index = data.get("index", -1)
            block = self._blocks.setdefault(index, {"type": "text", "text": ""})
            delta = as_data(data.get("delta") or {})
            if delta.get("type") == "input_json_delta":
                self._json[index] = self._json.get(index, "") + str(delta.get("partial_json", ""))
            elif delta.get("type") == "text_delta":
                block["text"] = str(block.get("text", "")) + str(delta.get("text", ""))
            elif delta.get("type") == "thinking_delta":
                block["thinking"] = str(block.get("thinking", "")) + str(delta.get("thinking", ""))
            elif delta.get("type") == "signature_delta":
                block["signature"] = str(block.get("signature", "")) + str(
                    delta.get("signature", "")
                )
        elif kind == "message_delta":
            delta = as_data(data.get("delta") or {})
            self._message.update(delta)
            if data.get("usage"):
                self._message["usage"] = {**self._message.get("usage", {}), **data["usage"]}

    def message(self) -> dict[str, Any]:
        """The message so far, ``tool_use`` inputs parsed."""
        content = []
        for index in sorted(self._blocks):
            block = dict(self._blocks[index])
            if index in self._json:
                text = self._json[index]
                try:
                    block["input"] = json.loads(text) if text.strip() else {}
                except json.JSONDecodeError:
                    block["input"] = text
            content.append(block)
        return {**self._message, "content": content}
