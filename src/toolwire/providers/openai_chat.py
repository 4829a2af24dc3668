"""OpenAI Chat Completions tool calling, as pure functions over dicts.

Tools are ``{"type": "function", "function": {name, description, parameters, strict}}``;
``strict`` is always sent, true where the schema could be made strict. Calls come from
``choices[0].message.tool_calls`` with ``arguments`` as a JSON string; answers are
``{"role": "tool", "tool_call_id", "content"}`` messages, one per call, right after the
assistant message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from toolwire.calls import RejectedCall, ToolCall, ToolResult, stable_call_id
from toolwire.errors import MalformedResponse
from toolwire.providers import _openai
from toolwire.providers._wire import as_data, split_calls
from toolwire.tool import Tool, ToolSet

__all__ = [
    "NAME",
    "ChatStreamAccumulator",
    "answer",
    "declare",
    "null_paths",
    "parse_calls",
    "strict_reasons",
    "tool_calls",
    "tool_message",
    "tools",
]

NAME = "openai-chat"
ERROR_PREFIX = "Error: "


def tools(toolset: ToolSet | Iterable[Tool], *, strict: bool = True) -> list[dict[str, Any]]:
    """The request's ``tools``, in toolset order (cached on the toolset; read-only)."""
    return [
        {
            "type": "function",
            "function": {
                "name": d.name,
                "description": d.description,
                "parameters": d.parameters,
                "strict": d.strict,
            },
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


def _message(response: Any) -> Mapping[str, Any]:
    data = as_data(response)
    if isinstance(data, Mapping) and "choices" in data:
        choices = data.get("choices") or []
        if not isinstance(choices, list):
            raise MalformedResponse("choices is not a list")
        if not choices:
            return {}
        choice = as_data(choices[0])
        if not isinstance(choice, Mapping):
            raise MalformedResponse("choices[0] is not an object")
        data = as_data(choice.get("message") or {})
    if not isinstance(data, Mapping):
        raise MalformedResponse(
            f"expected a chat completion or an assistant message, not {type(response).__name__}"
        )
    return data


def tool_message(call_id: str, content: str) -> dict[str, Any]:
    """A ``role: tool`` message answering ``call_id``."""
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def parse_calls(
    response: Any, toolset: ToolSet, *, strict: bool = True
) -> list[ToolCall | RejectedCall]:
    """Every tool call of a chat completion (or of its assistant message), in order."""
    raw_calls = _message(response).get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise MalformedResponse("message.tool_calls is not a list")
    items: list[ToolCall | RejectedCall] = []
    for index, raw in enumerate(raw_calls):
        raw = as_data(raw)
        function = as_data(raw.get("function")) if isinstance(raw, Mapping) else None
        call_id = raw.get("id") if isinstance(raw, Mapping) else None
        call_id = call_id if isinstance(call_id, str) and call_id else None
        if not isinstance(function, Mapping):
            local = call_id or stable_call_id("", {}, index + 1)
            message = "Malformed tool call: no function."
            items.append(
                RejectedCall(
                    name="",
                    call_id=call_id,
                    index=index,
                    error_kind="invalid_arguments",
                    message=message,
                    answer=tool_message(local, ERROR_PREFIX + message),
                )
            )
            continue
        name = function.get("name")
        local_id = call_id or stable_call_id(
            str(name), {"arguments": function.get("arguments")}, index + 1
        )
        items.append(
            _openai.resolve_or_reject(
                toolset,
                NAME,
                strict,
                name=name,
                call_id=call_id,
                raw_arguments=function.get("arguments"),
                index=index,
                local_id=local_id,
                error_answer=lambda m, i=local_id: tool_message(i, ERROR_PREFIX + m),
            )
        )
    return items


def tool_calls(
    response: Any, toolset: ToolSet | Iterable[Tool], *, strict: bool = True
) -> tuple[list[ToolCall], list[dict[str, Any]]]:
    """The resolved calls, and the error answers for calls that cannot run."""
    return split_calls(parse_calls(response, ToolSet.of(toolset), strict=strict))


def answer(
    call: ToolCall, result: ToolResult, *, error_prefix: str = ERROR_PREFIX
) -> dict[str, Any]:
    """The ``role: tool`` message for ``call`` (media become placeholders: Chat tool messages
    carry text only)."""
    return tool_message(call.call_id or call.local_id, _openai.output_text(result, error_prefix))


class ChatStreamAccumulator:
    """Turns chat completion chunks into the assistant message they add up to.

    Tool call deltas are joined by ``index``; a delta carrying a new ``id`` at an index that
    already has one starts a new call (some compatible servers never increment the index), and
    a delta without an index continues the last call unless it brings an id.
    """

    def __init__(self) -> None:
        self.content = ""
        self.calls: list[dict[str, Any]] = []
        self._by_index: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: Any = None

    def add(self, chunk: Any) -> None:
        data = as_data(chunk)
        if not isinstance(data, Mapping):
            raise MalformedResponse(f"a chunk must be an object, not {type(chunk).__name__}")
        if data.get("usage"):
            self.usage = data["usage"]
        for choice in data.get("choices") or []:
            choice = as_data(choice)
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
            delta = as_data(choice.get("delta") or {})
            if isinstance(delta.get("content"), str):
                self.content += delta["content"]
            for piece in delta.get("tool_calls") or []:
                self._add_call_delta(as_data(piece))

    def _add_call_delta(self, piece: Mapping[str, Any]) -> None:
        index = piece.get("index")
        call_id = piece.get("id")
        current = (
            self._by_index.get(index)
            if isinstance(index, int)
            else (self.calls[-1] if self.calls else None)
        )
        if current is None or (call_id and current.get("id") and call_id != current["id"]):
            current = {"id": call_id, "type": "function", "function": {"name": "", "arguments": ""}}
            self.calls.append(current)
            if isinstance(index, int):
                self._by_index[index] = current
        elif call_id and not current.get("id"):
            current["id"] = call_id
        function = as_data(piece.get("function") or {})
        if function.get("name"):
            current["function"]["name"] += function["name"]
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            current["function"]["arguments"] += arguments
        elif isinstance(arguments, Mapping):
            current["function"]["arguments"] = dict(arguments)

    def message(self) -> dict[str, Any]:
        """The assistant message so far (``tool_calls`` only when there are calls)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.calls:
            message["tool_calls"] = [dict(c, function=dict(c["function"])) for c in self.calls]
        return message

    def response(self) -> dict[str, Any]:
        """A chat-completion-shaped response holding :meth:`message`."""
        response: dict[str, Any] = {
            "choices": [
                {"index": 0, "message": self.message(), "finish_reason": self.finish_reason}
            ]
        }
        if self.usage is not None:
            response["usage"] = self.usage
        return response
