"""The demo loop: ask the model, run its calls through the governed pipeline, answer, repeat."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TextIO

from toolwire._api import execute_tool_calls, tools
from toolwire.approval import ApprovalRequest, Decision, allow, deny
from toolwire.calls import RejectedCall, ToolCall, canonical_json, content_text
from toolwire.demo.inbox import Console
from toolwire.demo.inbox import answer as answer_in_console
from toolwire.demo.inbox import console as served_console
from toolwire.demo.live import api_key, live_model
from toolwire.demo.scripted import ScriptedModel
from toolwire.demo.tools import TOOLS
from toolwire.errors import ToolwireError
from toolwire.policy import Policy, Rule
from toolwire.providers import get_provider
from toolwire.toolset import ToolSet

MAX_TURNS = 8


class Printer:
    """Lines to ``out``, coloured when asked (only ever on a terminal)."""

    def __init__(self, out: TextIO, colour: bool) -> None:
        self.out, self.colour = out, colour

    def line(self, text: str, style: str = "") -> None:
        codes = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}
        if self.colour and style:
            text = f"\033[{codes[style]}m{text}\033[0m"
        print(text, file=self.out, flush=True)


def _shown(item: ToolCall | RejectedCall) -> str:
    if isinstance(item, ToolCall):
        return f"{item.exposed_name}({json.dumps(item.arguments, ensure_ascii=False)})"
    return f"{item.name or '?'}(...)"


def terminal_approver(yes: bool, printer: Printer) -> Callable[[ApprovalRequest], Decision]:
    """Approves everything with ``yes``; else asks on the terminal, or denies without one."""

    def decide(request: ApprovalRequest) -> Decision:
        what = f"{request.exposed_name}({json.dumps(dict(request.arguments))})"
        if yes:
            printer.line(f"  ? {what}: approved (--yes)", "yellow")
            return allow()
        if sys.stdin.isatty():
            answer = input(f"  ? approve {what}? [y/N] ").strip().lower()
            if answer in ("y", "yes"):
                return allow()
            return deny("the user said no")
        printer.line(f"  ? {what}: denied (no terminal to ask; pass --yes)", "yellow")
        return deny("no one could approve it")

    return decide


@asynccontextmanager
async def _console(inbox: bool, printer: Printer) -> AsyncIterator[Console | None]:
    if not inbox:
        yield None
        return
    async with served_console(printer) as served:
        yield served


@asynccontextmanager
async def _demo_tools(with_mcp: bool) -> AsyncIterator[ToolSet]:
    if not with_mcp:
        yield ToolSet(TOOLS)
        return
    from toolwire.mcp import Hub, StdioServer

    server = StdioServer(command=sys.executable, args=["-m", "toolwire.demo.server"])
    async with Hub({"notes": server}) as hub:
        if hub.status["notes"] is not None:
            raise ToolwireError(f"the demo MCP server did not start: {hub.status['notes']}")
        yield ToolSet([*TOOLS, *hub.as_toolset()])


async def run_demo(
    provider: str = "gemini",
    *,
    with_mcp: bool = False,
    yes: bool = False,
    model: str | None = None,
    scripted: bool = False,
    out: TextIO | None = None,
    colour: bool = False,
    inbox: bool = False,
) -> int:
    """Run the demo loop, printing each turn (to ``out``, or standard output as it is then);
    returns an exit status. With ``inbox``, calls that need approval wait for a decision in the
    approval console it serves."""
    printer = Printer(out or sys.stdout, colour)
    adapter = get_provider(provider)
    # Publishing alerts needs approval; so does any server tool not promising to be harmless.
    policy = Policy(Rule("ask", "set_alert"), destructive="ask")
    async with _demo_tools(with_mcp) as toolset, _console(inbox, printer) as console:
        listing = tools(toolset, provider)
        key = None if scripted else api_key(provider)
        llm: Any = (
            live_model(provider, key, model, listing.tools, with_mcp=with_mcp)
            if key
            else ScriptedModel(provider, with_mcp=with_mcp)
        )
        printer.line(f"toolwire demo: {provider}, talking to a {llm.label}", "bold")
        printer.line(f"tools: {', '.join(toolset.exposed_names)}", "dim")
        for turn in range(1, MAX_TURNS + 1):
            response = await llm.respond()
            calls = adapter.parse(response, listing.declaration)
            if not calls:
                printer.line(f"\nturn {turn}: the model answers", "bold")
                printer.line(f"  {adapter.text(response).strip()}", "green")
                return 0
            printer.line(f"\nturn {turn}: the model calls {len(calls)} tool(s)", "bold")
            for item in calls:
                printer.line(f"  → {_shown(item)}", "cyan")
            if console is not None:
                outcome = await answer_in_console(listing, response, policy, console, printer)
            else:
                outcome = await execute_tool_calls(
                    listing, response, policy=policy, approver=terminal_approver(yes, printer)
                )
            for call in outcome.calls:
                result = call.result
                text = content_text(result.content)
                if not text and result.structured_content is not None:
                    text = canonical_json(result.structured_content)
                text = text if len(text) <= 160 else text[:157] + "..."
                name = getattr(call.item, "exposed_name", call.item.name)
                if result.is_error:
                    printer.line(f"  ✗ {name}: {result.error_kind}: {text}", "red")
                else:
                    printer.line(f"  ✓ {name}: {text}", "green")
            llm.add(outcome.followup(response))
            if outcome.halted:
                printer.line("\nan approver halted the run", "yellow")
                return 0
        printer.line(f"\nstopped after {MAX_TURNS} turns", "yellow")
        return 1
