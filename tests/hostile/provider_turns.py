"""Building model responses for every provider and reading back what their answers say: the
shared vocabulary of the hostile tests (calls, ids, unknown items, odd arguments and results,
streams, servers)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from toolwire import ToolSet
from toolwire.calls import RejectedCall, ToolCall, ToolResult
from toolwire.providers import anthropic, gemini, openai_chat, openai_responses, parse_calls

PROVIDERS = ("gemini", "anthropic", "openai-chat", "openai-responses")
DECLARATIONS: list[tuple[str, dict[str, Any]]] = [
    ("gemini", {}),
    ("gemini", {"schema": "openapi"}),
    ("gemini", {"schema": "openapi", "backend": "vertex"}),
    ("anthropic", {}),
    ("openai-chat", {}),
    ("openai-chat", {"strict": False}),
    ("openai-responses", {}),
    ("openai-responses", {"strict": False}),
]
"""Every provider, with each declaration option that changes what is sent."""
DECLARATION_IDS = [f"{p}-{'-'.join(map(str, o.values())) or 'default'}" for p, o in DECLARATIONS]
MODULES = {
    "gemini": gemini,
    "anthropic": anthropic,
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
}

Arguments = dict[str, Any] | str
"""A call's arguments: a dict, or (OpenAI) the JSON text as the model sent it."""
WireCall = tuple[str, Arguments, str | None]
"""(name, arguments, provider id or None)"""


def as_json_text(arguments: Arguments) -> str:
    """The arguments as OpenAI sends them: JSON text (NaN allowed, as Python writes it)."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def response_for(provider: str, calls: Sequence[WireCall]) -> dict[str, Any]:
    """A response of ``provider`` in which the model makes ``calls``, in order; a call whose
    id is None is sent without one."""
    if provider == "gemini":
        parts = []
        for name, arguments, call_id in calls:
            body: dict[str, Any] = {"name": name, "args": arguments}
            if call_id is not None:
                body["id"] = call_id
            parts.append({"functionCall": body})
        return {"candidates": [{"content": {"role": "model", "parts": parts}}]}
    if provider == "anthropic":
        blocks = []
        for name, arguments, call_id in calls:
            block: dict[str, Any] = {"type": "tool_use", "name": name, "input": arguments}
            if call_id is not None:
                block["id"] = call_id
            blocks.append(block)
        return {"role": "assistant", "content": blocks}
    if provider == "openai-chat":
        tool_calls = []
        for name, arguments, call_id in calls:
            entry: dict[str, Any] = {
                "type": "function",
                "function": {"name": name, "arguments": as_json_text(arguments)},
            }
            if call_id is not None:
                entry["id"] = call_id
            tool_calls.append(entry)
        return {"choices": [{"message": {"role": "assistant", "tool_calls": tool_calls}}]}
    items = []
    for name, arguments, call_id in calls:
        item: dict[str, Any] = {
            "type": "function_call",
            "name": name,
            "arguments": as_json_text(arguments),
        }
        if call_id is not None:
            item["call_id"] = call_id
        items.append(item)
    return {"output": items}


def parse(provider: str, response: Any, toolset: ToolSet) -> list[ToolCall | RejectedCall]:
    return parse_calls(provider, response, toolset)


def answer_of(provider: str, item: ToolCall | RejectedCall, result: Any = "ok") -> Any:
    """The answer sent back for ``item``: its error answer, or a result's."""
    if isinstance(item, RejectedCall):
        return item.answer
    return MODULES[provider].answer(item, ToolResult.from_value(result))


def answered_id(answer: dict[str, Any]) -> str | None:
    """The call id an answer (of any provider, any item type) names."""
    if "functionResponse" in answer:
        return answer["functionResponse"].get("id")
    for key in ("tool_use_id", "tool_call_id", "call_id"):
        if key in answer:
            return answer[key]  # type: ignore[no-any-return]
    return answer.get("id")  # local_shell_call_output


def answer_text(answer: dict[str, Any]) -> str:
    """Everything an answer tells the model, as one string."""
    if "functionResponse" in answer:
        return json.dumps(answer["functionResponse"]["response"], ensure_ascii=False)
    body = answer.get("content", answer.get("output"))
    return body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)


def is_error_answer(answer: dict[str, Any]) -> bool:
    if "functionResponse" in answer:
        return "error" in answer["functionResponse"]["response"]
    if answer.get("type") == "tool_result":
        return answer.get("is_error") is True
    return answer_text(answer).startswith("Error: ")


def strict_json(value: Any) -> bytes:
    """``value`` as a provider's HTTP client sends it: strict JSON (no NaN), UTF-8."""
    return json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
