"""A scripted model for the demo without an API key: it sends fixed turns of tool calls in the
chosen provider's own response shape, so the real parser and answer builder run."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

Call = tuple[str, str, dict[str, Any]]
"""(call id, tool name, arguments)"""


def _gemini(calls: Sequence[Call], text: str | None) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    parts += [{"functionCall": {"name": name, "args": args}} for _, name, args in calls]
    return {"candidates": [{"content": {"role": "model", "parts": parts}}]}


def _anthropic(calls: Sequence[Call], text: str | None) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [
        {"type": "tool_use", "id": call_id, "name": name, "input": args}
        for call_id, name, args in calls
    ]
    return {"role": "assistant", "content": content, "stop_reason": "tool_use" if calls else None}


def _openai_chat(calls: Sequence[Call], text: str | None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for call_id, name, args in calls
        ]
    return {"choices": [{"index": 0, "message": message}]}


def _openai_responses(calls: Sequence[Call], text: str | None) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if text:
        output.append(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text}],
            }
        )
    output += [
        {"type": "function_call", "call_id": call_id, "name": name, "arguments": json.dumps(args)}
        for call_id, name, args in calls
    ]
    return {"output": output}


SHAPES: dict[str, Callable[[Sequence[Call], str | None], dict[str, Any]]] = {
    "gemini": _gemini,
    "anthropic": _anthropic,
    "openai-chat": _openai_chat,
    "openai-responses": _openai_responses,
}


def script(with_mcp: bool) -> list[tuple[list[Call], str | None]]:
    """The turns: weather for two cities (and a call with a bad argument), then an alert that
    needs approval, then the final answer."""
    first: list[Call] = [
        ("call_1", "get_weather", {"city": "Lisbon"}),
        ("call_2", "get_weather", {"city": "Oslo", "units": "fahrenheit"}),
        ("call_3", "get_weather", {"city": 42}),
    ]
    second: list[Call] = [
        ("call_4", "set_alert", {"city": "Oslo", "level": "warning", "note": "Snow tonight."})
    ]
    if with_mcp:
        first.append(("call_5", "notes__find_notes", {"word": "oslo"}))
        second.append(("call_6", "notes__delete_note", {"key": "old"}))
    final = "Lisbon is sunny at 21 °C; Oslo has snow at 27 °F."
    return [(first, "Let me check the weather."), (second, None), ([], final)]


class ScriptedModel:
    """Answers each turn with the next scripted response, whatever it was sent."""

    label = "scripted model (no API key set: nothing is sent anywhere)"

    def __init__(self, provider: str, *, with_mcp: bool) -> None:
        self._shape = SHAPES[provider]
        self._turns = iter(script(with_mcp))

    async def respond(self) -> dict[str, Any]:
        calls, text = next(self._turns, ([], "(the script is over)"))
        return self._shape(calls, text)

    def add_answers(self, response: Any, results: list[Any]) -> None:
        """Nothing to remember: the script does not read the answers."""
