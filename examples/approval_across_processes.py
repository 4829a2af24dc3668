"""A turn paused for a human in one process, decided in another, finished in a third.

A web application does this across requests and workers: the run store (here a SQLite file;
``RedisStore`` or ``PostgresStore`` across machines, any of them by URL) remembers which calls
ran, which wait and what was decided, so nothing runs twice. The approval screen lists what
waits with ``toolwire.pending`` and records who decided with ``toolwire.decide(..., by=...)``.
Runs without an API key: the model's response is a Gemini-shaped dict.

    python examples/approval_across_processes.py
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import toolwire
from toolwire import ApprovalPending, DeferredApproval, Policy, Rule
from toolwire.store import from_url

RUN_ID = "turn-42"
"""One run id per model response: a resume with other calls, or for another user, is refused."""
USER = {"id": "u-7", "name": "Dana"}
RESPONSE = {
    "candidates": [
        {
            "content": {
                "parts": [
                    {"functionCall": {"name": "get_balance", "args": {"account": "ops"}}},
                    {"functionCall": {"name": "transfer", "args": {"to": "acme", "amount": 120}}},
                ]
            }
        }
    ]
}


@toolwire.tool
def get_balance(account: str) -> str:
    """The balance of an account."""
    return f"{account}: 1,000 EUR"


@toolwire.tool
def transfer(to: str, amount: int) -> str:
    """Move money to another account."""
    return f"sent {amount} EUR to {to}"


async def handle_request(database: str) -> None:
    """What a worker does with the model's response: run it, or say what waits."""
    try:
        outcome = await toolwire.execute_tool_calls(
            [get_balance, transfer],
            "gemini",
            RESPONSE,
            run_id=RUN_ID,
            principal=USER,
            store=from_url(database),
            policy=Policy(Rule("ask", "transfer", reason="money leaves the company")),
            approver=DeferredApproval(),
        )
    except ApprovalPending as pending:
        for request in pending.pending:
            print(f"  waiting for a human: {request.exposed_name}({dict(request.arguments)})")
        return  # the run keeps each request: the approval screen reads them from the store
    for call, answer in zip(outcome.calls, outcome.results, strict=True):
        source = "from the store" if call.from_store else "ran now"
        print(f"  {json.dumps(answer['functionResponse'])}  ({source})")


async def decide(database: str) -> None:
    """What the approval screen does: list what waits, and record the human's decision."""
    store = from_url(database)
    for request in await toolwire.pending(store=store, principal=USER):
        shown = request.to_dict()  # JSON: what the screen renders
        print(f"  {shown['exposed_name']}({shown['arguments']}): {shown['reason']}")
        await toolwire.decide(
            request.run_id, request.call_id, toolwire.allow(), store=store, by="ops-lead"
        )
        print(f"  approved {request.call_id} (by ops-lead)")


def main() -> None:
    if len(sys.argv) == 3:  # one step, in its own process
        step, database = sys.argv[1], sys.argv[2]
        asyncio.run(handle_request(database) if step == "request" else decide(database))
        return
    with tempfile.TemporaryDirectory() as folder:
        database = f"sqlite:///{Path(folder) / 'runs.db'}"
        for title, step in [
            ("process A: the model's calls arrive", "request"),
            ("process B: a human decides", "decide"),
            ("process C: the same calls again, same run id", "request"),
        ]:
            print(title)
            subprocess.run([sys.executable, __file__, step, database], check=True)


if __name__ == "__main__":
    main()
