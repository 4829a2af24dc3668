"""A turn paused for a human in one process, decided in another, finished in a third.

A web application does this across requests and workers: the run store (here a SQLite file;
``RedisStore`` across machines) remembers which calls ran, which wait, and what was decided, so
nothing runs twice. Runs without an API key: the model's response is a Gemini-shaped dict.

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
from toolwire import ApprovalPending, DeferredApproval, Policy, Rule, SQLiteStore

RUN_ID = "turn-42"
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
            store=SQLiteStore(database),
            policy=Policy(Rule("ask", "transfer")),
            approver=DeferredApproval(),
        )
    except ApprovalPending as pending:
        for request in pending.pending:
            print(f"  waiting for a human: {request.exposed_name}({dict(request.arguments)})")
        # The application keeps the ids (in its session or database) for the approval screen.
        Path(database).with_suffix(".pending").write_text(
            "\n".join(request.call_id for request in pending.pending)
        )
        return
    for call, answer in zip(outcome.calls, outcome.results, strict=True):
        source = "from the store" if call.from_store else "ran now"
        print(f"  {json.dumps(answer['functionResponse'])}  ({source})")


async def decide(database: str) -> None:
    """What the approval screen does when the human clicks "approve"."""
    store = SQLiteStore(database)
    for call_id in Path(database).with_suffix(".pending").read_text().split():
        await toolwire.decide(RUN_ID, call_id, toolwire.allow(), store=store)
        print(f"  approved {call_id}")


def main() -> None:
    if len(sys.argv) == 3:  # one step, in its own process
        step, database = sys.argv[1], sys.argv[2]
        asyncio.run(handle_request(database) if step == "request" else decide(database))
        return
    with tempfile.TemporaryDirectory() as folder:
        database = str(Path(folder) / "runs.db")
        for title, step in [
            ("process A: the model's calls arrive", "request"),
            ("process B: a human decides", "decide"),
            ("process C: the same calls again, same run id", "request"),
        ]:
            print(title)
            subprocess.run([sys.executable, __file__, step, database], check=True)


if __name__ == "__main__":
    main()
