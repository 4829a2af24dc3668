"""Tools, stores and a worker process for the durable-store tests.

Run as a program, it is one worker process:

    python workers.py serve STORE LEDGER        answer JSON commands from stdin, one per line
    python workers.py turn STORE LEDGER RUN     run the Gemini turn below once
    python workers.py decide STORE RUN CALL allow|deny

STORE is ``sqlite:PATH`` or ``redis:URL``. Every execution of ``effect`` is written to the
LEDGER (a SQLite file) before it returns, so the tests can count how often each call really ran,
whichever process ran it.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import sys
import time
from typing import Any

import anyio
import anyio.to_thread

import toolwire
from toolwire import (
    ApprovalPending,
    DeferredApproval,
    Executor,
    Policy,
    Rule,
    RunStore,
    ToolSet,
    make_call,
    tool,
)
from toolwire.store import from_url

LEDGER_SCHEMA = "CREATE TABLE IF NOT EXISTS runs (tag TEXT NOT NULL, pid INTEGER NOT NULL)"
KILL: dict[str, str | None] = {"tag": None}
"""The ``effect`` call that ends this process right after taking effect, when set."""
LEDGER: dict[str, str] = {}


def record_execution(tag: str) -> None:
    with sqlite3.connect(LEDGER["path"], timeout=30, isolation_level=None) as db:
        db.execute("INSERT INTO runs VALUES (?, ?)", (tag, os.getpid()))
    db.close()


def ledger_counts(path: str) -> dict[str, int]:
    """How many times each tag ran, across every process."""
    db = sqlite3.connect(path, timeout=30)
    try:
        db.execute(LEDGER_SCHEMA)
        return dict(db.execute("SELECT tag, count(*) FROM runs GROUP BY tag").fetchall())
    finally:
        db.close()


@tool
def effect(tag: str) -> str:
    """Does something that must not happen twice, and says which process did it."""
    time.sleep(random.random() * 0.004)  # a random interleaving with the other workers
    record_execution(tag)
    if KILL["tag"] == tag:
        os._exit(17)  # the worker dies between "running" and "completed"
    return f"{tag} by {os.getpid()}"


@tool
def guarded(tag: str) -> str:
    """Needs a human's approval first."""
    record_execution(tag)
    if KILL["tag"] == tag:
        os._exit(17)
    return f"{tag} approved, by {os.getpid()}"


TOOLS = ToolSet([effect, guarded])
POLICY = Policy(Rule("ask", "guarded"))


def open_store(url: str) -> RunStore:
    return from_url(url)


def executor(store: RunStore, **options: Any) -> Executor:
    return Executor(TOOLS, policy=POLICY, approver=DeferredApproval(), store=store, **options)


def gemini_turn(tag: str) -> dict[str, Any]:
    """A model response calling ``effect`` twice and ``guarded`` once."""
    calls = [("effect", f"{tag}/a"), ("guarded", f"{tag}/g"), ("effect", f"{tag}/b")]
    parts = [{"functionCall": {"name": name, "args": {"tag": arg}}} for name, arg in calls]
    return {"candidates": [{"content": {"role": "model", "parts": parts}}]}


async def serve(store: RunStore) -> None:
    """Answer commands: ``{"run_id", "calls": [[name, tag, id]...], "kill", "jitter"}``."""
    run = executor(store, wait_for_running=10)
    while line := await anyio.to_thread.run_sync(sys.stdin.readline):
        command = json.loads(line)
        KILL["tag"] = command.get("kill")
        calls = [
            make_call(TOOLS, name, {"tag": tag}, call_id=id_) for name, tag, id_ in command["calls"]
        ]
        await anyio.sleep(command.get("jitter", 0))
        try:
            outcomes = await run.run(calls, run_id=command["run_id"])
        except ApprovalPending as exc:
            answer: dict[str, Any] = {"pending": [p.call_id for p in exc.pending]}
        else:
            answer = {
                "outcomes": [
                    [o.call_id, o.result.error_kind, o.result.text, o.from_store] for o in outcomes
                ]
            }
        print(json.dumps(answer), flush=True)


async def one_turn(store: RunStore, run_id: str) -> None:
    try:
        outcome = await toolwire.execute_tool_calls(
            TOOLS, "gemini", gemini_turn(run_id), run_id=run_id, executor=executor(store)
        )
    except ApprovalPending as exc:
        print(json.dumps({"pending": [p.call_id for p in exc.pending]}))
    else:
        print(json.dumps({"results": outcome.results}))


async def decide(store: RunStore, run_id: str, call_id: str, verdict: str) -> None:
    decision = toolwire.allow() if verdict == "allow" else toolwire.deny("not today")
    await toolwire.decide(run_id, call_id, decision, store=store)
    print(json.dumps({"decided": call_id}))


def main(argv: list[str]) -> None:
    mode, spec = argv[0], argv[1]
    store = open_store(spec)
    if mode == "decide":
        anyio.run(decide, store, *argv[2:5])
        return
    LEDGER["path"] = argv[2]
    if mode == "serve":
        anyio.run(serve, store)
    elif mode == "turn":
        anyio.run(one_turn, store, argv[3])


if __name__ == "__main__":
    main(sys.argv[1:])
