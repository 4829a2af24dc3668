"""A call's trail is read on one clock, the run store's: requested, decided, claimed and
finished, whichever process or host writes each. Attacked here with hosts whose clocks are
minutes off the store's (Redis and PostgreSQL tell their own time): a decider through the
console, a worker that runs the call, and a process that settles a running call. Before, a
decision and an answer were timed on the writer's own clock, so the trail went backwards and a
duration could be negative."""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio
import httpx
import pytest

import toolwire
from toolwire import ApprovalPending, DeferredApproval, Executor, RunStore, ToolResult

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.parametrize("store", ["redis", "postgres"], indirect=True),
]
SKEW = 300.0


def skewed(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """This host's wall clock, ``seconds`` off (the store's clock is not moved)."""
    real: Callable[[], float] = time.time
    monkeypatch.setattr(time, "time", lambda: real() + seconds)


@toolwire.tool
def wire_money(amount: int) -> str:
    """Send money."""
    return f"sent {amount}"


ASK = toolwire.Policy(toolwire.Rule("ask", "wire_money"))


def call() -> toolwire.ToolCall:
    return toolwire.make_call(
        toolwire.ToolSet([wire_money]), "wire_money", {"amount": 3}, call_id="c1"
    )


async def one_trail(store: RunStore, run_id: str) -> toolwire.CallTrail:
    [trail] = await toolwire.history(run_id, store=store)
    return trail


def assert_in_order(trail: toolwire.CallTrail) -> None:
    times = [
        part["at"]
        for part in (trail.requested, trail.decided, trail.claimed, trail.finished)
        if part is not None
    ]
    assert times == sorted(times)
    assert trail.finished is not None
    assert trail.finished["duration"] >= 0


@pytest.mark.parametrize("seconds", [-SKEW, SKEW])
async def test_a_decision_taken_in_the_console_on_a_skewed_host_keeps_the_trail_in_order(
    store: RunStore, monkeypatch: pytest.MonkeyPatch, seconds: float
) -> None:
    pytest.importorskip("starlette")
    from toolwire.inbox import app

    executor = Executor([wire_money], store=store, policy=ASK, approver=DeferredApproval())
    with pytest.raises(ApprovalPending):
        await executor.run([call()], run_id="r")
    skewed(monkeypatch, seconds)
    console = app(store, authorize=lambda request: "bob")
    transport = httpx.ASGITransport(app=console)
    async with httpx.AsyncClient(transport=transport, base_url="http://inbox.test") as http:
        decided = await http.post(
            "/api/runs/r/calls/c1/decision",
            json={"decision": "allow"},
            headers={"X-Toolwire-Inbox": "1"},
        )
    assert decided.status_code == 200, decided.text
    monkeypatch.undo()
    [outcome] = await executor.run([call()], run_id="r")
    assert outcome.result.text == "sent 3"
    trail = await one_trail(store, "r")
    assert trail.decided is not None
    assert_in_order(trail)


@pytest.mark.parametrize("seconds", [-SKEW, SKEW])
async def test_a_worker_on_a_skewed_host_answers_a_call_after_it_claimed_it(
    store: RunStore, monkeypatch: pytest.MonkeyPatch, seconds: float
) -> None:
    await toolwire.ledger.store_time(store)  # the store's clock is read before the skew
    skewed(monkeypatch, seconds)
    [outcome] = await Executor([wire_money], store=store).run([call()], run_id="r")
    assert outcome.result.text == "sent 3"
    assert_in_order(await one_trail(store, "r"))


@pytest.mark.parametrize("seconds", [-SKEW, SKEW])
async def test_a_running_call_settled_from_a_skewed_host_ends_after_it_began(
    store: RunStore, monkeypatch: pytest.MonkeyPatch, seconds: float
) -> None:
    started, release = anyio.Event(), anyio.Event()

    @toolwire.tool
    async def hold() -> str:
        """Hold until released."""
        started.set()
        await release.wait()
        return "held"

    calls = [toolwire.make_call(toolwire.ToolSet([hold]), "hold", {}, call_id="c1")]
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lambda: Executor([hold], store=store).run(calls, run_id="r"))
            await started.wait()
            skewed(monkeypatch, seconds)
            stopped = ToolResult.error("cancelled", "Stopped by an operator.")
            assert await toolwire.ledger.settle(store, "r", "c1", stopped)
            release.set()
    trail = await one_trail(store, "r")
    assert trail.finished is not None
    assert trail.finished["error_kind"] == "cancelled"
    assert_in_order(trail)
