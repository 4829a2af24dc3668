"""Servers for ``test_input_outsider.py``: the ``mcp`` SDK's low-level ``Server`` (2026-07-28,
questions in an ``InputRequiredResult``), scripted per tool, run in process; each keeps a log
of every ``tools/call`` round it was sent (tool, arguments, answers, state).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

Script = Callable[["Round"], "types.CallToolResult | types.InputRequiredResult | Any"]


@dataclass
class Round:
    """One ``tools/call`` a scripted server was sent."""

    tool: str
    arguments: dict[str, Any]
    answers: dict[str, Any] | None
    state: str | None


@dataclass
class Scripted:
    """A low-level server whose tools answer by script; ``rounds`` is what it was sent."""

    scripts: dict[str, Script]
    descriptions: dict[str, str] = field(default_factory=dict)
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    rounds: list[Round] = field(default_factory=list)
    gate: anyio.Event | None = None
    """When set, each first round waits for it (to hold calls in flight together)."""

    def server(self, name: str = "scripted") -> Server[Any]:
        async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(
                tools=[
                    types.Tool(
                        name=tool,
                        description=self.descriptions.get(tool, f"The {tool} tool."),
                        input_schema=self.schemas.get(
                            tool,
                            {"type": "object", "properties": {"path": {"type": "string"}}},
                        ),
                    )
                    for tool in self.scripts
                ]
            )

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
            answers = {
                key: answer.model_dump(exclude_none=True)
                if hasattr(answer, "model_dump")
                else answer
                for key, answer in (params.input_responses or {}).items()
            }
            round_ = Round(
                params.name,
                dict(params.arguments or {}),
                answers or None,
                params.request_state,
            )
            self.rounds.append(round_)
            script = self.scripts[params.name]
            result = script(round_)
            if hasattr(result, "__await__"):
                result = await result
            return result

        return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)

    def ran(self, tool: str) -> list[Round]:
        """The rounds of ``tool`` that finished the call (answered with the answers)."""
        return [r for r in self.rounds if r.tool == tool and r.answers is not None]


def form(message: str, schema: Mapping[str, Any] | None = None) -> types.ElicitRequest:
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=message,
            requested_schema=dict(schema) if schema is not None else dict(CONFIRM),
        )
    )


CONFIRM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=value)])


def asks_then_answers(key: str = "q", schema: Mapping[str, Any] | None = None) -> Script:
    """A tool that asks ``key`` on its first round, and answers with what it got after."""

    def script(r: Round) -> Any:
        if r.answers is None:
            return types.InputRequiredResult(
                input_requests={key: form(f"Go on with {r.arguments.get('path')}?", schema)},
                request_state=f"state-of-{r.tool}-{r.arguments.get('path')}",
            )
        return text(f"{r.tool} {r.arguments.get('path')} got {r.answers} with {r.state}")

    return script


def plain(r: Round) -> Any:
    return text(f"{r.tool} {r.arguments.get('path')} done")
