"""A scripted model for the demo without an API key: it sends fixed turns of tool calls in the
chosen provider's own response shape (its ``response_for``), so the real parser and answer
builder run."""

from __future__ import annotations

from typing import Any

from toolwire.providers import get_provider

Call = tuple[str, str, dict[str, Any]]
"""(call id, tool name, arguments)"""


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
        self._provider = get_provider(provider)
        self._turns = iter(script(with_mcp))

    async def respond(self) -> dict[str, Any]:
        calls, text = next(self._turns, ([], "(the script is over)"))
        return self._provider.response_for(calls, text)

    def add(self, followup: list[Any]) -> None:
        """Nothing to remember: the script does not read the answers."""
