"""A governed turn inside a DBOS workflow: a call waits for a human, who decides from another
process, and the workflow wakes and finishes.

DBOS Transact checkpoints the workflow in its system database (here a SQLite file;
PostgreSQL across machines). The turn's calls are planned in one step and each runs in a step
of its own, recorded in toolwire's run ledger too, so a crash and a replay never run a
finished call again. The call the policy asks about blocks the workflow on a DBOS message
until ``toolwire decide`` (another process) records the decision and sends it. Runs without an
API key: the model's response is a Gemini-shaped dict.

    pip install -e '.[dbos]'
    python examples/dbos_workflow.py
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

from dbos import DBOS

import toolwire
from toolwire.integrations.dbos import DurableTools
from toolwire.store import from_url

HERE = Path(tempfile.mkdtemp(prefix="toolwire-dbos-"))
STORE_URL = f"sqlite:///{HERE / 'runs.db'}"
SYSTEM_DB = f"sqlite:///{HERE / 'dbos.sqlite'}"


@toolwire.tool
def get_balance(account: str) -> int:
    """The balance of ``account``, in euros."""
    return {"ops": 2_000}.get(account, 0)


@toolwire.tool
def transfer(to: str, amount: int) -> str:
    """Transfer ``amount`` euros to ``to``."""
    return f"sent {amount} EUR to {to}"


TOOLS = [get_balance, transfer]
policy = toolwire.Policy(toolwire.Rule("ask", "transfer", reason="moves money"))
store = from_url(STORE_URL)
durable = DurableTools(toolwire.Executor(TOOLS, policy=policy, store=store))
listing = toolwire.tools(TOOLS, "gemini", policy=policy)

RESPONSE = {  # what the model answered (your client's call, checkpointed as a step of its own)
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"functionCall": {"name": "get_balance", "args": {"account": "ops"}}},
                    {"functionCall": {"name": "transfer", "args": {"to": "acme", "amount": 120}}},
                ],
            }
        }
    ]
}


@DBOS.workflow()
async def pay_supplier() -> list[str]:
    outcome = await durable.execute_tool_calls(listing, RESPONSE)
    return [call.result.text for call in outcome.calls]


async def decide_elsewhere() -> None:
    """A person decides from the command line, in another process: the ledger records it, and
    DBOS's client wakes the workflow (through ``DBOS_SYSTEM_DATABASE_URL``)."""
    while not (waiting := await toolwire.pending(store=store)):
        await asyncio.sleep(0.05)
    [request] = waiting
    print(f"waiting: {request.exposed_name}({request.arguments}) because {request.reason}")
    toolwire_command = str(Path(sys.executable).with_name("toolwire"))  # this environment's
    command = [toolwire_command, "decide", request.run_id, request.call_id]
    command += ["allow", "--store", STORE_URL, "--by", "dana@example.com"]
    env = {**os.environ, "DBOS_SYSTEM_DATABASE_URL": SYSTEM_DB}
    process = await asyncio.create_subprocess_exec(*command, env=env)
    assert await process.wait() == 0


async def main() -> None:
    DBOS(config={"name": "pay-supplier", "system_database_url": SYSTEM_DB, "log_level": "WARNING"})
    DBOS.launch()
    try:
        handle = await DBOS.start_workflow_async(pay_supplier)
        await decide_elsewhere()
        for text in await handle.get_result():
            print("answer:", text)
    finally:
        DBOS.destroy()


if __name__ == "__main__":
    asyncio.run(main())
