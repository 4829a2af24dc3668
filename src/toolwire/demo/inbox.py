"""``toolwire demo --inbox``: calls that need approval wait in a run store, and the demo waits
for a human to decide them in the approval console it serves (extra ``toolwire[inbox]``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import anyio

from toolwire._api import Outcome, execute_tool_calls
from toolwire.approval import ApprovalPending, DeferredApproval
from toolwire.runs import ledger
from toolwire.runs.store import MemoryStore, RunStore

__all__ = ["Console", "answer", "console"]

POLL_SECONDS = 0.25
"""How often the demo looks whether the waiting calls are decided."""


@dataclass(frozen=True, slots=True)
class Console:
    store: RunStore
    url: str
    """The console's address, with its token."""


@asynccontextmanager
async def console(printer: Any) -> AsyncIterator[Console]:
    """The approval console over a fresh store, served on a free loopback port meanwhile."""
    from toolwire.inbox import serve

    store = MemoryStore()
    async with anyio.create_task_group() as group:
        served = await group.start(
            lambda task_status: serve(store, announce=lambda line: None, task_status=task_status)
        )
        printer.line(f"approval console: {served.url}", "bold")
        try:
            yield Console(store, served.url)
        finally:
            served.stop()


async def answer(listing: Any, response: Any, policy: Any, inbox: Console, printer: Any) -> Outcome:
    """Run the turn's calls; those that need approval wait until decided in the console."""
    run_id: str | None = None
    while True:
        try:
            return await execute_tool_calls(
                listing,
                response,
                policy=policy,
                approver=DeferredApproval(),
                store=inbox.store,
                run_id=run_id,
            )
        except ApprovalPending as waiting:
            run_id = waiting.run_id
            base = inbox.url.partition("?")[0]
            for request in waiting.pending:
                printer.line(
                    f"  ? {request.exposed_name} waits for a decision: {base}runs/"
                    f"{quote(run_id, safe='')}/calls/{quote(request.call_id, safe='')}",
                    "yellow",
                )
            while await ledger.pending(inbox.store, run_id=run_id):
                await anyio.sleep(POLL_SECONDS)
