"""Tools, policy and helpers shared by the inbox tests: a turn paused by a deferred approval,
and a client of the console over httpx's ASGI transport."""

from __future__ import annotations

import contextlib
import select
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from toolwire import (
    ApprovalPending,
    ApprovalRequest,
    DeferredApproval,
    Executor,
    Policy,
    Rule,
    RunStore,
    Tool,
    ToolCall,
    ToolSet,
    make_call,
)
from toolwire.inbox import app

RAN: Counter[str] = Counter()
"""What ran, with which arguments."""


def _transfer(amount: int, currency: str, note: str = "") -> str:
    RAN[f"transfer {amount} {currency}"] += 1
    return f"moved {amount} {currency}"


def _delete(customer: int) -> str:
    RAN[f"delete {customer}"] += 1
    return f"customer {customer} deleted"


TRANSFER = Tool(
    name="transfer",
    description="Moves money.",
    input_schema={
        "type": "object",
        "properties": {
            "amount": {"type": "integer", "minimum": 1, "maximum": 1000},
            "currency": {"enum": ["EUR", "USD"]},
            "note": {"type": "string"},
        },
        "required": ["amount", "currency"],
        "additionalProperties": False,
    },
    handler=_transfer,
)
DELETE = Tool(
    name="delete_customer",
    description="Deletes a customer.",
    input_schema={
        "type": "object",
        "properties": {"customer": {"type": "integer", "minimum": 1}},
        "required": ["customer"],
        "additionalProperties": False,
    },
    handler=_delete,
)
TOOLS = ToolSet([TRANSFER, DELETE])
ASK = Policy(Rule("ask", "*", reason="money and deletions need a human"))


def executor(store: RunStore) -> Executor:
    return Executor(TOOLS, policy=ASK, approver=DeferredApproval(), store=store)


def transfer(amount: int, currency: str = "EUR", call_id: str = "c1", **more: Any) -> ToolCall:
    arguments = {"amount": amount, "currency": currency, **more}
    return make_call(TOOLS, "transfer", arguments, call_id=call_id)


def delete(customer: int, call_id: str = "c1") -> ToolCall:
    return make_call(TOOLS, "delete_customer", {"customer": customer}, call_id=call_id)


async def pause(
    store: RunStore, run_id: str, calls: list[ToolCall], principal: Any = "alice"
) -> list[ApprovalRequest]:
    """Run a turn whose calls all wait for a human; returns what waits."""
    with pytest.raises(ApprovalPending) as waiting:
        await executor(store).run(calls, run_id=run_id, principal=principal)
    return waiting.value.pending


def client(console: Any, **headers: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=console), base_url="http://inbox.test", headers=headers
    )


def console_for(store: RunStore, who: Any = "bob", **options: Any) -> Any:
    """A console whose every request is made by ``who`` (None: by nobody)."""
    return app(store, authorize=lambda request: who, **options)


API = {"X-Toolwire-Inbox": "1"}


@contextlib.contextmanager
def served_inbox(store_url: str, *extra: str) -> Iterator[str]:
    """``toolwire inbox`` in a process of its own on a free loopback port; yields the URL it
    printed (with its token)."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolwire.cli",
            "inbox",
            "--store",
            store_url,
            "--port",
            "0",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 60)
        line = process.stdout.readline() if ready else ""
        if not line.startswith("toolwire inbox: http://127.0.0.1:"):
            process.kill()
            _, errors = process.communicate(timeout=30)
            pytest.fail(f"toolwire inbox did not start: {line!r} {errors}")
        yield line.removeprefix("toolwire inbox: ").strip()
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
