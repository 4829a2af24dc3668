"""``toolwire call``: one call through the governed pipeline, asked about on the terminal."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
import anyio.from_thread

import toolwire
from toolwire import _text
from toolwire._cli.common import arguments_option, print_json, safe
from toolwire.approval import ApprovalRequest, Decision
from toolwire.errors import ToolNotFound
from toolwire.policy import Policy, PolicyContext, Verdict, destructive_by_annotations
from toolwire.providers import get_provider
from toolwire.sources import SourceError, opened_source
from toolwire.tool import Tool

__all__ = ["call_policy", "run_call"]


class _Unpromised(Policy):
    """Approval for a tool whose annotations do not promise it is harmless (see
    [`destructive_by_annotations`][toolwire.policy.destructive_by_annotations]), after what
    every policy says. The MCP defaults apply to every tool, a Python function's included:
    the one running ``call`` may not be the one who wrote it."""

    def __init__(self) -> None:
        super().__init__()
        self.allows_everything = False

    def evaluate(self, context: PolicyContext) -> Verdict:
        verdict = super().evaluate(context)
        why = destructive_by_annotations(context.tool) if verdict.effect == "allow" else None
        return Verdict("ask", why) if why is not None else verdict

    def may_ask(
        self, tool: Tool, *, principal: Any = None, exposed_name: str | None = None
    ) -> str | None:
        asked = super().may_ask(tool, principal=principal, exposed_name=exposed_name)
        return asked or destructive_by_annotations(tool)


def call_policy(policies: Sequence[Policy]) -> Policy:
    """What ``call`` runs a call under: every policy given at once (a deny of any denies, an
    ask of any asks), then approval for a tool whose annotations do not promise it is
    harmless."""
    return Policy.all_of(*policies, _Unpromised())


def _terminal_approver(yes: bool) -> Callable[[ApprovalRequest], Awaitable[Decision]]:
    """``call``'s approver: approves with ``yes``; else asks on the terminal (on stderr, so
    stdout stays the answer), or denies at once when stdin is not a terminal."""

    async def decide(request: ApprovalRequest) -> Decision:
        # Shown as the console shows what a human approves: hidden characters as escapes.
        text = json.dumps(dict(request.arguments), ensure_ascii=False, sort_keys=True, default=str)
        what = f"{_text.shown_name(request.exposed_name)}({_text.visible_json_text(text)})"
        why = f" ({request.reason})" if request.reason else ""
        if yes:
            print(safe(f"toolwire: {what} needs approval{why}: approved (--yes)"), file=sys.stderr)
            return toolwire.allow()
        if not sys.stdin.isatty():
            print(
                safe(f"toolwire: {what} needs approval{why}: denied, no terminal to ask on ")
                + "(pass --yes to approve)",
                file=sys.stderr,
            )
            return toolwire.deny("no one could approve it: no terminal to ask on")
        if _text.hides(request.exposed_name) or _text.hides(text) or _text.hides(why):
            print(
                "toolwire: careful: hidden characters, shown as escapes (\\u202e); the call "
                "gets the characters themselves",
                file=sys.stderr,
            )
        answer = await _read_line(safe(f"toolwire: {what} needs approval{why}. Run it? [y/N] "))
        if answer.strip().lower() in ("y", "yes"):
            return toolwire.allow()
        return toolwire.deny("the user said no")

    return decide


async def _read_line(prompt: str) -> str:
    """A line of stdin, asked for with ``prompt`` and read in a daemon thread while the event
    loop goes on: Ctrl-C ends the command at once (a worker thread of the loop's pool would
    keep the process alive until the line came). The question is shown once everything is
    waiting for the answer, so a Ctrl-C at it finds the command waiting, never setting up."""
    line: list[str] = []
    read = anyio.Event()
    async with anyio.from_thread.BlockingPortal() as portal:

        def wait_for_it() -> None:
            line.append(sys.stdin.readline())
            with contextlib.suppress(RuntimeError):  # the command ended meanwhile
                portal.call(read.set)

        threading.Thread(target=wait_for_it, daemon=True).start()
        print(prompt, end="", flush=True, file=sys.stderr)
        await read.wait()
    return line[0]


async def run_call(args: argparse.Namespace) -> int:
    from toolwire.pipeline.executor import Executor
    from toolwire.policy_file import load_policy
    from toolwire.toolset import make_call

    arguments = arguments_option(args.args)
    adapter = get_provider(args.provider)
    given = load_policy(args.policy) if args.policy is not None else None
    async with opened_source(args.source, server_name=args.name) as opened:
        toolset, own = opened.toolset, opened.policy
        try:
            call = make_call(toolset, args.tool, arguments, call_id="call_1")
        except ToolNotFound:
            known = ", ".join(toolset.exposed_names) or "none"
            raise SourceError(
                f"{args.source} has no tool {args.tool!r} (its tools: {known})"
            ) from None
        policies = [policy for policy in (own, given) if policy is not None]
        executor = Executor(
            toolset,
            policy=call_policy(policies),
            approver=_terminal_approver(args.yes),
            timeout=args.timeout,
        )
        (outcome,) = await executor.run([call])
    answer = adapter.answer(call, outcome.result.for_model(), None)
    if args.json:
        print_json(
            {
                "ok": not outcome.result.is_error,
                "error_kind": outcome.result.error_kind,
                "answer": answer,
            }
        )
    else:
        print_json(answer)
    return 1 if outcome.result.is_error else 0
