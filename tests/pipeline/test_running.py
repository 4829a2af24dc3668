"""``toolwire.pipeline._running``: how an executor claims calls in their runs and runs a turn's
planned calls. ``Claims`` names the worker, bounds the wait for another worker's call, reads a
call's record (waiting while a live worker runs it, refusing another call under its id) and
opens a ticket's run; ``CallRunning.cancel`` reaches the turns it names and no other."""

from __future__ import annotations

import os

import anyio
import pytest

from toolwire import (
    ConfigurationError,
    Executor,
    MemoryStore,
    TextContent,
    ToolResult,
    ToolSet,
    make_call,
    tool,
)
from toolwire.pipeline._turns import CallTicket, Turn
from toolwire.runs import HOST, UNTIMED_WAIT

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


@tool(timeout=7, idempotent=True)
def lookup(key: str) -> str:
    """Reads a value."""
    return key.upper()


TOOLS = ToolSet([add, lookup])


def test_a_worker_is_named_by_its_host_process_and_executor() -> None:
    first, second = Executor(TOOLS), Executor(TOOLS)
    host, pid, token = first.claims.worker_id.split(":")
    assert (host, pid) == (HOST, str(os.getpid()))
    assert token != second.claims.worker_id.split(":")[2]


def test_the_wait_for_another_workers_call_is_bounded_by_its_timeout_and_a_lease() -> None:
    claims = Executor(TOOLS, lease=20, timeout=3).claims
    assert claims.wait_bound(lookup) == 7 + 20  # the tool's own timeout wins
    assert claims.wait_bound(add) == 3 + 20
    assert Executor(TOOLS, lease=20).claims.wait_bound(add) == UNTIMED_WAIT + 20
    assert Executor(TOOLS, wait_for_running=0).claims.wait_bound(lookup) == 0


def test_only_an_idempotent_tool_may_run_again_and_only_when_the_executor_says_so() -> None:
    rerun = Executor(TOOLS, on_interrupted="rerun_idempotent").claims
    never = Executor(TOOLS).claims
    assert rerun.may_rerun(make_call(TOOLS, "lookup", {"key": "k"}))
    assert not rerun.may_rerun(make_call(TOOLS, "add", {"a": 1, "b": 1}))
    assert not never.may_rerun(make_call(TOOLS, "lookup", {"key": "k"}))


def test_a_tickets_run_is_bound_as_planned_and_claims_as_this_executor() -> None:
    executor = Executor(TOOLS, lease=12)
    ticket = CallTicket(
        run_id="r",
        binding="bound",
        call_id="c1",
        name="add",
        arguments={},
        runs_with={},
        position=3,
    )
    run = executor.claims.run_of_ticket(ticket)
    assert (run.run_id, run.binding, run.worker, run.lease_seconds) == (
        "r",
        "bound",
        executor.worker_id,
        12,
    )
    assert run.store is executor.store
    assert run.positions == {"c1": 3}
    assert (
        executor.claims.run_of_ticket(
            CallTicket(
                run_id="r", binding="b", call_id="c1", name="add", arguments={}, runs_with={}
            )
        ).positions
        == {}
    )


async def test_a_record_of_another_call_under_the_same_id_is_refused() -> None:
    store = MemoryStore()
    first = Executor(TOOLS, store=store)
    await first.run([make_call(TOOLS, "add", {"a": 1, "b": 1}, call_id="c1")], run_id="r")
    second = Executor(TOOLS, store=store)
    other = make_call(TOOLS, "add", {"a": 5, "b": 5}, call_id="c1")
    turn = Turn(items=[other], run_id="r", principal=None, taint=frozenset())
    kept = await store.get("r", "c1")
    assert kept is not None
    turn.known = {"c1": kept}
    turn.run = second.claims.run_of(turn)
    with pytest.raises(ConfigurationError, match="already has a call 'c1' with other arguments"):
        await second.claims.record_of(turn, other)


async def test_a_call_a_live_worker_runs_is_waited_for_and_its_answer_read() -> None:
    store = MemoryStore()
    executor = Executor(TOOLS, store=store)
    call = make_call(TOOLS, "add", {"a": 1, "b": 1}, call_id="c1")
    turn = await executor.plan_turn([call], run_id="r")
    run = executor.claims.run_of(turn)
    now = await run.clock.now()
    running = run.first_record(call, turn.fingerprint(call), "running").with_(
        owner="elsewhere:1:abc", started_at=now, lease_until=now + 600
    )
    running = await store.swap("r", None, running, binding=run.binding)
    assert running is not None
    turn.known = {"c1": running}
    answer = ToolResult(content=(TextContent("2"),))
    read: list[object] = []

    async def read_it() -> None:
        read.append(await executor.claims.record_of(turn, call))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read_it)
            await anyio.wait_all_tasks_blocked()
            assert read == []  # still waiting for the live worker
            done = running.with_(state="completed", result=answer, lease_until=None)
            assert await store.swap("r", running, done) is not None
    [record] = read
    assert record is not None
    assert record.result == answer  # type: ignore[attr-defined]
    assert (
        await executor.claims.record_of(
            turn.__class__(items=[], run_id="r", principal=None, taint=frozenset()), call
        )
        is None
    )


async def test_cancel_reaches_the_turn_it_names_and_no_other() -> None:
    started = {"one": anyio.Event(), "two": anyio.Event()}
    release = anyio.Event()

    @tool
    async def wait(name: str) -> str:
        """Waits for the test to let it finish."""
        started[name].set()
        await release.wait()
        return f"{name} done"

    toolset = ToolSet([wait])
    executor = Executor(toolset)
    outcomes: dict[str, list[object]] = {}

    async def turn(name: str) -> None:
        call = make_call(toolset, "wait", {"name": name})
        outcomes[name] = list(await executor.run([call], run_id=f"run-{name}"))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(turn, "one")
            tasks.start_soon(turn, "two")
            await started["one"].wait()
            await started["two"].wait()
            executor.calls.cancel("run-one")
            await anyio.wait_all_tasks_blocked()
            assert "one" in outcomes  # answered at once
            assert "two" not in outcomes  # still running
            release.set()
    [one], [two] = outcomes["one"], outcomes["two"]
    assert one.result.error_kind == "cancelled"  # type: ignore[attr-defined]
    assert two.result.text == "two done"  # type: ignore[attr-defined]
    assert executor.calls.turns == set()
