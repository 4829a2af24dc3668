"""The approval console served over real HTTP on 127.0.0.1 by uvicorn, in a thread of its own
(so that a hypothesis test drives one server with many examples), over a SQLite store the
test shares; and a turn whose calls wait for a human (imported by the console tests here)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import anyio
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
    ToolSet,
    make_call,
)

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")

API = {"X-Toolwire-Inbox": "1"}
STOP_SECONDS = 30.0
"""Most seconds the server may take to stop (a bound, never a wait)."""

RAN: list[dict[str, Any]] = []
"""The arguments each call that ran was given."""


def _move(path: str, destination: str = "/srv/trash") -> str:
    RAN.append({"path": path, "destination": destination})
    return f"moved {path}"


MOVE = Tool(
    name="move_file",
    description="Moves a file.",
    input_schema={
        "type": "object",
        "properties": {"path": {"type": "string"}, "destination": {"type": "string"}},
        "required": ["path"],
    },
    handler=_move,
)
TOOLS = ToolSet([MOVE])
ASK = Policy(Rule("ask", "*", reason="moving files needs a human"))


async def pause(
    store: RunStore,
    run_id: str,
    arguments: dict[str, Any],
    *,
    principal: Any = "alice",
    policy: Policy = ASK,
) -> ApprovalRequest:
    """Run a turn of one call that waits for a human; returns what waits."""
    call = make_call(TOOLS, "move_file", arguments, call_id="c1")
    executor = Executor(TOOLS, policy=policy, approver=DeferredApproval(), store=store)
    with pytest.raises(ApprovalPending) as waiting:
        await executor.run([call], run_id=run_id, principal=principal)
    (request,) = waiting.value.pending
    return request


async def resume(store: RunStore, run_id: str, arguments: dict[str, Any]) -> None:
    """Resume the turn ``pause`` started: the decided call runs (or is answered)."""
    call = make_call(TOOLS, "move_file", arguments, call_id="c1")
    executor = Executor(TOOLS, policy=ASK, approver=DeferredApproval(), store=store)
    await executor.run([call], run_id=run_id, principal="alice")


@contextlib.contextmanager
def serving(asgi: Any) -> Iterator[str]:
    """``asgi`` served on a free loopback port until the block ends; yields its base URL.

    The socket listens before the server starts, so a request made at once waits in its
    backlog instead of being refused.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no 40 ms per answer
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=STOP_SECONDS)
        sock.close()
        assert not thread.is_alive(), "the console did not stop"


def run(function: Any, *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` run to its end on an event loop of its own."""

    async def call() -> Any:
        with anyio.fail_after(60):
            return await function(*args, **kwargs)

    return anyio.run(call)
