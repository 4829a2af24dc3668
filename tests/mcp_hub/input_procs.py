"""The processes of the cross-process input test, each a program of its own:

- ``pause STORE RUN``: a hub in front of ``input_servers.py`` (over stdio) with an elicitor
  that defers every question; runs ``asking__delete`` in run RUN of the SQLite ledger STORE and
  prints the waiting request's JSON form.
- ``respond STORE RUN CALL CONTENT``: answers the call's question with CONTENT (JSON) from
  another process, with nothing but the store.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio

import toolwire
from toolwire.mcp import Hub, StdioServer

SERVER = Path(__file__).with_name("input_servers.py")


def stdio_server() -> StdioServer:
    env = {
        name: os.environ[name] for name in ("INPUT_STATE_KEY", "INPUT_LOG") if name in os.environ
    }
    return StdioServer(command=sys.executable, args=[str(SERVER)], env=env)


async def pause(store_path: str, run_id: str) -> None:
    store = toolwire.SQLiteStore(store_path)
    async with Hub({"asking": stdio_server()}, elicitor=lambda request: None) as hub:
        toolset = hub.as_toolset()
        call = toolwire.make_call(toolset, "asking__delete", {"path": "/srv/a"}, call_id="c1")
        try:
            await toolwire.Executor(toolset, store=store).run([call], run_id=run_id)
        except toolwire.ApprovalPending as waiting:
            print(json.dumps(waiting.pending[0].to_dict()))
            return
    raise SystemExit("the call did not wait for input")


async def respond(store_path: str, run_id: str, call_id: str, content: str) -> None:
    store = toolwire.SQLiteStore(store_path)
    await toolwire.respond(run_id, call_id, json.loads(content), store=store, by="ops")


if __name__ == "__main__":
    if sys.argv[1] == "pause":
        anyio.run(pause, *sys.argv[2:4])
    elif sys.argv[1] == "respond":
        anyio.run(respond, *sys.argv[2:6])
