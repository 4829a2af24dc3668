"""Model responses holding given calls, for each provider, and what their answers say."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

PROVIDERS = ("gemini", "anthropic", "openai-chat", "openai-responses")

Call = tuple[str, dict[str, Any], str]
"""(exposed name, arguments, call id)"""


def response_for(provider: str, calls: Sequence[Call]) -> dict[str, Any]:
    """A response of ``provider`` in which the model makes ``calls``, in order."""
    if provider == "gemini":
        parts = [{"functionCall": {"name": n, "args": a, "id": i}} for n, a, i in calls]
        return {"candidates": [{"content": {"role": "model", "parts": parts}}]}
    if provider == "anthropic":
        blocks = [{"type": "tool_use", "id": i, "name": n, "input": a} for n, a, i in calls]
        return {"role": "assistant", "content": blocks}
    if provider == "openai-chat":
        tool_calls = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for n, a, i in calls
        ]
        return {"choices": [{"message": {"role": "assistant", "tool_calls": tool_calls}}]}
    items = [
        {"type": "function_call", "call_id": i, "name": n, "arguments": json.dumps(a)}
        for n, a, i in calls
    ]
    return {"output": items}


def answer_text(provider: str, answer: dict[str, Any]) -> str:
    """Everything an answer tells the model, as one string (JSON for structured parts)."""
    if provider == "gemini":
        return json.dumps(answer["functionResponse"]["response"], ensure_ascii=False)
    body = answer["content"] if provider in ("anthropic", "openai-chat") else answer["output"]
    return body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)


def answered_id(provider: str, answer: dict[str, Any]) -> str | None:
    """The call id an answer names."""
    if provider == "gemini":
        return answer["functionResponse"].get("id")
    if provider == "anthropic":
        return answer["tool_use_id"]
    return answer["tool_call_id"] if provider == "openai-chat" else answer["call_id"]


def is_error(provider: str, answer: dict[str, Any]) -> bool:
    if provider == "gemini":
        return "error" in answer["functionResponse"]["response"]
    if provider == "anthropic":
        return answer.get("is_error") is True
    return answer_text(provider, answer).startswith("Error: ")


def strict_json(value: Any) -> bytes:
    """``value`` as a provider's HTTP client sends it: strict JSON (no NaN), UTF-8."""
    return json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
