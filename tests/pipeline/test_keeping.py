"""``toolwire.pipeline._keeping``: what a turn's run keeps. Planning ends by keeping what was
decided without running (answers, calls waiting for a decision) and each planned call's ticket
digest; ``remember`` keeps answers but never an attempt's own (cancelled, unavailable), and
another worker's kept answer stands for all; ``close`` gives the outcomes, or the exception
that says some calls wait or the store failed."""

from __future__ import annotations

import pytest

import toolwire
from toolwire import (
    ApprovalPending,
    DeferredApproval,
    Executor,
    MemoryStore,
    Policy,
    Rule,
    StoreUnavailable,
    TextContent,
    ToolResult,
    ToolSet,
    make_call,
    tool,
)
from toolwire.pipeline._keeping import close, keep_planned, remember
from toolwire.pipeline._runner import CANCELLED
from toolwire.pipeline._turns import Turn

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


@tool
def transfer(amount: int) -> str:
    """Moves money."""
    return f"moved {amount}"


@tool
def wipe() -> str:
    """Deletes everything."""
    return "gone"


TOOLS = ToolSet([add, transfer, wipe])


def executor(store: MemoryStore) -> Executor:
    policy = Policy(Rule("ask", "transfer"), Rule("deny", "wipe", reason="never"))
    return Executor(TOOLS, store=store, policy=policy, approver=DeferredApproval())


async def planned_turn(store: MemoryStore) -> tuple[Executor, Turn]:
    """A planned turn: ``add`` to run, ``transfer`` waiting, ``wipe`` denied."""
    run = executor(store)
    items = [
        make_call(TOOLS, "add", {"a": 1, "b": 2}, call_id="runs"),
        make_call(TOOLS, "transfer", {"amount": 5}, call_id="waits"),
        make_call(TOOLS, "wipe", {}, call_id="denied"),
    ]
    return run, await run.plan_turn(items, run_id="r", principal="alice")


async def test_keep_planned_keeps_answers_waits_and_ticket_digests_before_anything_runs() -> None:
    store = MemoryStore()
    run, turn = await planned_turn(store)
    [planned] = turn.planned
    await keep_planned(turn, run.claims.run_of(turn), [(planned, "d" * 64)])
    records = {record.call_id: record for record in await store.records("r")}
    assert records["runs"].state == "approved"
    assert records["runs"].ticket == "d" * 64
    assert records["runs"].result is None  # nothing ran
    assert records["waits"].state == "pending"
    assert records["waits"].request is not None
    assert records["denied"].state == "denied"
    assert records["denied"].result == ToolResult.error("denied", "Denied: never.")
    assert turn.kept == {1, 2}  # closing the turn keeps nothing twice
    pending = await toolwire.pending(store=store)
    assert [(request.run_id, request.call_id) for request in pending] == [("r", "waits")]


async def test_an_attempts_own_answer_is_never_kept() -> None:
    store = MemoryStore()
    run, turn = await planned_turn(store)
    turn.finish(turn.planned[0].index, CANCELLED)
    await remember(turn, run.claims.run_of(turn))
    assert await store.get("r", "runs") is None  # a resume finds it still to run
    assert (await store.get("r", "denied")) is not None


async def test_another_workers_kept_answer_stands_for_all() -> None:
    store = MemoryStore()
    run, turn = await planned_turn(store)
    mine = turn.outcomes[2]
    assert mine is not None
    theirs = ToolResult(content=(TextContent("answered elsewhere"),))
    call = turn.items[2]
    first = run.claims.run_of(turn).first_record(call, turn.fingerprint(call), "completed")  # type: ignore[arg-type]
    await store.swap("r", None, first.with_(result=theirs), binding=run.claims.run_of(turn).binding)
    await remember(turn, run.claims.run_of(turn))
    kept = turn.outcomes[2]
    assert kept is not None
    assert (kept.result, kept.from_store) == (theirs, True)


async def test_close_raises_approval_pending_with_the_answers_so_far() -> None:
    store = MemoryStore()
    run, turn = await planned_turn(store)
    turn.finish(0, ToolResult(content=(TextContent("3"),)), ran=True)
    with pytest.raises(ApprovalPending) as raised:
        await close(turn, run.claims.run_of(turn), store)
    pending = raised.value
    assert pending.run_id == "r"
    assert pending.store is store
    assert [request.call_id for request in pending.pending] == ["waits"]
    assert [outcome.call_id for outcome in pending.completed] == ["runs", "denied"]


async def test_close_after_a_store_failure_raises_it_with_every_answer() -> None:
    store = MemoryStore()
    run, turn = await planned_turn(store)
    turn.waiting.clear()
    turn.finish(0, ToolResult(content=(TextContent("3"),)), ran=True)
    turn.finish(1, ToolResult.error("unavailable", "Not run: the store is away."))
    turn.store_error = StoreUnavailable("the store is away")
    with pytest.raises(StoreUnavailable, match="may not remember them") as raised:
        await close(turn, run.claims.run_of(turn), store)
    assert [outcome.call_id for outcome in raised.value.outcomes] == ["runs", "waits", "denied"]
    assert await store.records("r") == []  # nothing written after the store failed


async def test_close_of_an_unnamed_turn_gives_its_outcomes_and_keeps_nothing() -> None:
    store = MemoryStore()
    run = executor(store)
    turn = await run.plan_turn([make_call(TOOLS, "wipe", {}, call_id="c1")])
    outcomes = await close(turn, None, store)
    assert [outcome.result.error_kind for outcome in outcomes] == ["denied"]
    assert await toolwire.pending(store=store) == []
