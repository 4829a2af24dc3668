"""The store contract, the same for every store (the ``store`` fixture: memory, SQLite and
Redis), and the executor's use of it: resuming, claims, interrupted calls, damaged records and
stores failing mid-turn. One file for every store, as the contract is one: what only one store
does is tested beside that store's module (``test_memory``, ``test_sqlite``, ``test_redis``,
``test_postgres``)."""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from store_kit import RUNS, TOOLS, record

from toolwire import (
    ApprovalPending,
    AudioContent,
    DeferredApproval,
    EmbeddedResource,
    Executor,
    ImageContent,
    MemoryStore,
    Policy,
    ResourceLink,
    Rule,
    RunStore,
    SQLiteStore,
    StoreUnavailable,
    TextContent,
    ToolResult,
    ToolSet,
    ToolwireError,
    allow,
    deny,
    make_call,
    tool,
)
from toolwire.store import CallRecord

pytestmark = pytest.mark.anyio


# -- the contract --------------------------------------------------------------------------------


async def test_swap_creates_then_compares_versions(store: RunStore) -> None:
    assert await store.get("r", "c1") is None
    first = await store.swap("r", None, record())
    assert first is not None
    assert first.version == 1
    assert await store.get("r", "c1") == first
    assert await store.swap("r", None, record(state="approved")) is None  # not new any more
    second = await store.swap("r", first, first.with_(state="approved", decision=allow()))
    assert second is not None
    assert second.version == 2
    assert await store.swap("r", first, first.with_(state="denied")) is None  # stale
    assert await store.get("r", "c1") == second
    assert await store.get("other", "c1") is None
    assert await store.get("r", "c2") is None


async def test_get_many_reads_several_calls_in_order(store: RunStore) -> None:
    first = await store.swap("r", None, record("c1"))
    third = await store.swap("r", None, record("c3", state="completed"))
    assert await store.get_many("r", ["c3", "c2", "c1"]) == [third, None, first]
    assert await store.get_many("r", []) == []
    assert await store.get_many("nothing", ["c1", "c2"]) == [None, None]


async def test_only_one_of_many_concurrent_claims_wins(store: RunStore) -> None:
    pending = await store.swap("r", None, record())
    wins: list[str] = []

    async def claim(worker: int) -> None:
        claimed = pending.with_(state="running", owner=f"w{worker}")  # type: ignore[union-attr]
        if await store.swap("r", pending, claimed) is not None:
            wins.append(f"w{worker}")

    async with anyio.create_task_group() as tasks:
        for worker in range(20):
            tasks.start_soon(claim, worker)
    assert len(wins) == 1
    stored = await store.get("r", "c1")
    assert stored is not None
    assert (stored.state, stored.owner) == ("running", wins[0])


async def test_records_keep_every_kind_of_content(store: RunStore) -> None:
    result = ToolResult(
        content=(
            TextContent("héllo"),
            ImageContent(b"\x89PNG\x00", "image/png"),
            AudioContent(b"RIFF", "audio/wav"),
            ResourceLink(uri="file:///a", name="a", mime_type="text/plain", description="d"),
            EmbeddedResource(uri="mem://t", mime_type="text/plain", text="inline"),
            EmbeddedResource(uri="mem://b", blob=b"\x00\x01"),
        ),
        structured_content={"n": 1, "nested": {"list": [1, "two", None]}},
    )
    stored = await store.swap(
        "r", None, record(state="completed", decision=deny("why"), result=result)
    )
    assert await store.get("r", "c1") == stored
    assert stored is not None
    assert stored.result == result


class FailingAfter:
    """A store that stops answering after ``writes`` successful writes."""

    def __init__(self, writes: int) -> None:
        self.inner = MemoryStore()
        self.writes = writes

    async def get(self, run_id: str, call_id: str) -> CallRecord | None:
        return await self.inner.get(run_id, call_id)

    async def get_many(self, run_id: str, call_ids: Sequence[str]) -> list[CallRecord | None]:
        return await self.inner.get_many(run_id, call_ids)

    async def load(
        self, run_id: str, call_ids: Sequence[str]
    ) -> tuple[str | None, list[CallRecord | None]]:
        return await self.inner.load(run_id, call_ids)

    async def records(self, run_id: str) -> list[CallRecord]:
        return await self.inner.records(run_id)

    async def pending(self, **options: Any) -> list[tuple[str, CallRecord]]:
        return await self.inner.pending(**options)

    async def swap(
        self,
        run_id: str,
        expected: CallRecord | None,
        record: CallRecord,
        *,
        binding: str | None = None,
    ) -> CallRecord | None:
        if self.writes <= 0:
            raise StoreUnavailable("the store went away")
        self.writes -= 1
        return await self.inner.swap(run_id, expected, record, binding=binding)


async def test_a_store_failing_mid_turn_raises_with_every_answer() -> None:
    """The first call is claimed and run, its answer cannot be stored; the second cannot be
    claimed, so it does not run. Both are answered in ``outcomes``."""
    store = FailingAfter(writes=1)
    calls = [
        make_call(TOOLS, "transfer", {"amount": 5}, call_id="c1"),
        make_call(TOOLS, "transfer", {"amount": 6}, call_id="c2"),
    ]
    # a short lease: the resume below waits for it to lapse before it answers c1
    with pytest.raises(StoreUnavailable, match="went away") as raised:
        await Executor(TOOLS, store=store, max_concurrency=1, lease=0.2).run(calls, run_id="r")
    outcomes = raised.value.outcomes
    assert outcomes is not None
    assert outcomes[0].result.text == "moved 5"
    assert outcomes[1].result.error_kind == "unavailable"
    assert RUNS["transfer"] == 1
    # the run remembers c1 as running: a resume answers it interrupted, never runs it again
    store.writes = 10
    resumed = await Executor(TOOLS, store=store).run(calls, run_id="r")
    assert [o.result.error_kind for o in resumed] == ["interrupted", None]
    assert RUNS["transfer"] == 2


# -- the executor on each store -------------------------------------------------------------------


async def test_a_resumed_run_answers_from_the_store_and_runs_nothing_twice(
    store: RunStore,
) -> None:
    calls = [
        make_call(TOOLS, "add", {"a": 1, "b": 2}, call_id="c1"),
        make_call(TOOLS, "transfer", {"amount": 9}, call_id="c2"),
        make_call(TOOLS, "add", {"a": "x", "b": 2}, call_id="c3"),
    ]
    policy = Policy(Rule("ask", "transfer"))
    first = Executor(TOOLS, store=store, policy=policy, approver=DeferredApproval())
    with pytest.raises(ApprovalPending) as pending:
        await first.run(calls, run_id="r")
    assert [p.call_id for p in pending.value.pending] == ["c2"]
    stored = await store.get("r", "c2")
    assert stored is not None
    assert (stored.state, stored.tool) == ("pending", "transfer")
    assert (await store.get("r", "c3")).state == "failed"  # type: ignore[union-attr]

    # another executor (another worker) records the decision and another completes the turn
    await Executor(TOOLS, store=store).decide("r", "c2", allow())
    second = Executor(TOOLS, store=store, policy=policy, approver=DeferredApproval())
    outcomes = await second.run(calls, run_id="r")
    assert [o.result.text.split(":")[0] for o in outcomes] == [
        "3",
        "moved 9",
        "Invalid arguments for 'add'",
    ]
    assert [o.from_store for o in outcomes] == [True, False, True]
    assert RUNS == {"add": 1, "transfer": 1}
    assert [(await store.get("r", c)).state for c in ("c1", "c2", "c3")] == [  # type: ignore[union-attr]
        "completed",
        "completed",
        "failed",
    ]
    again = await second.run(calls, run_id="r")
    assert all(o.from_store for o in again)
    assert RUNS == {"add": 1, "transfer": 1}
    with pytest.raises(ToolwireError, match="no call 'c2' waiting"):
        await second.decide("r", "c2", deny())


async def test_a_denied_call_is_stored_as_denied(store: RunStore) -> None:
    calls = [make_call(TOOLS, "transfer", {"amount": 9}, call_id="c1")]
    executor = Executor(
        TOOLS, store=store, policy=Policy(Rule("ask", "*")), approver=DeferredApproval()
    )
    with pytest.raises(ApprovalPending):
        await executor.run(calls, run_id="r")
    await executor.decide("r", "c1", deny("too much"))
    [outcome] = await executor.run(calls, run_id="r")
    assert outcome.result.text == "Denied: too much."
    stored = await store.get("r", "c1")
    assert stored is not None
    assert (stored.state, stored.decision) == ("denied", deny("too much"))
    assert RUNS["transfer"] == 0


async def test_running_calls_are_interrupted_or_rerun_only_if_idempotent(
    store: RunStore,
) -> None:
    calls = [
        make_call(TOOLS, "transfer", {"amount": 1}, call_id="c1"),
        make_call(TOOLS, "lookup", {"key": "k"}, call_id="c2"),
    ]
    from toolwire.ledger import fingerprint as _fingerprint

    for run_id in ("r1", "r2"):
        for call in calls:  # a worker claimed both and died
            claim = CallRecord(
                call_id=call.local_id,
                tool=call.exposed_name,
                fingerprint=_fingerprint(call),
                state="running",
                owner="dead-worker",
                started_at=time.time(),
            )
            assert await store.swap(run_id, None, claim) is not None

    plain = await Executor(TOOLS, store=store).run(calls, run_id="r1")
    assert [o.result.error_kind for o in plain] == ["interrupted", "interrupted"]
    assert not RUNS
    # The run keeps the verdict: whoever resumes it next gives the same answers.
    again = await Executor(TOOLS, store=store, on_interrupted="rerun_idempotent").run(
        calls, run_id="r1"
    )
    assert [o.result for o in again] == [o.result for o in plain]
    assert not RUNS

    rerun = await Executor(TOOLS, store=store, on_interrupted="rerun_idempotent").run(
        calls, run_id="r2"
    )
    assert [o.result.error_kind for o in rerun] == ["interrupted", None]
    assert rerun[1].result.text == "K"
    assert RUNS == {"lookup": 1}
    stored = await store.get("r2", "c2")
    assert stored is not None
    assert stored.state == "completed"
    interrupted = await store.get("r2", "c1")
    assert interrupted is not None
    assert interrupted.state == "failed"
    assert interrupted.result is not None
    assert interrupted.result.error_kind == "interrupted"


async def test_a_worker_waits_for_a_call_another_is_running(store: RunStore) -> None:
    gate = anyio.Event()
    started = anyio.Event()

    @tool
    async def slow() -> str:
        """Takes its time."""
        started.set()
        await gate.wait()
        RUNS["slow"] += 1
        return "done"

    tools = ToolSet([slow])
    call = make_call(tools, "slow", {}, call_id="c1")
    results: dict[str, ToolResult] = {}

    async def first() -> None:
        [outcome] = await Executor(tools, store=store).run([call], run_id="r")
        results["first"] = outcome.result

    async def second() -> None:
        await started.wait()
        waiting = Executor(tools, store=store, wait_for_running=30)
        gate.set()  # the first worker finishes while the second waits
        [outcome] = await waiting.run([call], run_id="r")
        results["second"] = outcome.result
        assert outcome.from_store

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(first)
        tasks.start_soon(second)
    assert results["first"] == results["second"]
    assert RUNS["slow"] == 1


async def test_a_run_id_reused_for_other_arguments_is_refused(store: RunStore) -> None:
    executor = Executor(TOOLS, store=store)
    await executor.run([make_call(TOOLS, "add", {"a": 1, "b": 2}, call_id="c1")], run_id="r")
    with pytest.raises(ToolwireError, match="another model response"):
        await executor.run([make_call(TOOLS, "add", {"a": 5, "b": 2}, call_id="c1")], run_id="r")


async def test_bad_options_are_refused() -> None:
    with pytest.raises(ToolwireError, match="on_interrupted"):
        Executor(TOOLS, on_interrupted="always")  # type: ignore[arg-type]
    with pytest.raises(ToolwireError, match="wait_for_running"):
        Executor(TOOLS, wait_for_running=-1)
    with pytest.raises(ValueError, match="ttl"):
        MemoryStore(ttl=0)
    with pytest.raises(ValueError, match="synchronous"):
        SQLiteStore(":memory:", synchronous="OFF")  # type: ignore[arg-type]


async def test_a_damaged_record_is_a_clear_error_and_nothing_runs(
    tmp_path: Path, redis_url: str
) -> None:
    from toolwire.store.redis import RedisStore

    sqlite_store = SQLiteStore(tmp_path / "runs.db")
    await sqlite_store.swap("r", None, record("c1"))
    db = sqlite3.connect(tmp_path / "runs.db")
    db.execute('UPDATE toolwire_calls SET record = \'{"not": "a record"\'')
    db.commit()
    db.close()
    async with RedisStore(redis_url, prefix="damaged:") as redis_store:
        await redis_store.swap("r", None, record("c1"))
        client = redis_store._connection()
        await client.hset("damaged:r", "c1", "1:[1, 2, 3]")
        await client.hset("damaged:other", "c1", "no version here")
        with pytest.raises(StoreUnavailable, match="cannot be read"):
            await redis_store.get("other", "c1")
        for store in (sqlite_store, redis_store):
            with pytest.raises(StoreUnavailable, match="cannot be read"):
                await Executor(TOOLS, store=store).run(
                    [make_call(TOOLS, "add", {"a": 1, "b": 2}, call_id="c1")], run_id="r"
                )
    sqlite_store.close()
    assert RUNS["add"] == 0


@settings(max_examples=40, deadline=None)
@given(
    workers=st.integers(min_value=2, max_value=5),
    delays=st.lists(st.integers(min_value=0, max_value=3), min_size=4, max_size=4),
    starts=st.lists(st.integers(min_value=0, max_value=3), min_size=5, max_size=5),
)
def test_workers_racing_in_one_process_run_each_call_once(
    workers: int, delays: list[int], starts: list[int]
) -> None:
    """Tasks resuming the same run at once, with random start and tool delays (in event-loop
    turns, so the interleaving is the drawn one): each call runs once, every worker answers
    every call, and all answers agree."""
    executions: Counter[str] = Counter()

    @tool
    async def step(n: int) -> str:
        """One step."""
        for _ in range(delays[n]):
            await anyio.lowlevel.checkpoint()
        executions[f"step{n}"] += 1
        return f"step {n} done"

    tools = ToolSet([step])
    calls = [make_call(tools, "step", {"n": n}, call_id=f"c{n}") for n in range(4)]
    store = MemoryStore()
    answers: list[list[str]] = []

    async def worker(index: int) -> None:
        for _ in range(starts[index]):
            await anyio.lowlevel.checkpoint()
        executor = Executor(tools, store=store, wait_for_running=30)
        outcomes = await executor.run(calls, run_id="r")
        answers.append([o.result.text for o in outcomes])

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            for index in range(workers):
                tasks.start_soon(worker, index)

    anyio.run(main)
    assert executions == {f"step{n}": 1 for n in range(4)}
    assert len(answers) == workers
    assert all(a == [f"step {n} done" for n in range(4)] for a in answers)


async def test_execute_tool_calls_takes_the_resume_options() -> None:
    from toolwire import execute_tool_calls
    from toolwire.ledger import fingerprint as _fingerprint

    store = MemoryStore()
    response = {"parts": [{"functionCall": {"name": "lookup", "args": {"key": "k"}, "id": "c1"}}]}
    [call] = [make_call(TOOLS, "lookup", {"key": "k"}, call_id="c1")]
    claim = CallRecord(
        call_id="c1", tool="lookup", fingerprint=_fingerprint(call), state="running", owner="x"
    )
    await store.swap("r", None, claim)
    await store.swap("r2", None, claim)
    plain = await execute_tool_calls(TOOLS, "gemini", response, run_id="r", store=store)
    assert plain.calls[0].result.error_kind == "interrupted"
    rerun = await execute_tool_calls(
        TOOLS, "gemini", response, run_id="r2", store=store, on_interrupted="rerun_idempotent"
    )
    assert rerun.results == [
        {"functionResponse": {"name": "lookup", "id": "c1", "response": {"output": "K"}}}
    ]
    assert RUNS["lookup"] == 1


async def test_operations_cut_off_by_cancellation_leave_the_store_usable(store: RunStore) -> None:
    # Deadlines land anywhere in an operation, mid-query included (a connection the store
    # keeps for one-at-a-time use must then be handed back, not reused half-read).
    for n in range(50):
        with anyio.move_on_after(0.0001 * (n % 7)):
            await store.swap(f"cut-{n}", None, record())
    stored = await store.swap("after", None, record())
    assert stored is not None
    assert await store.get("after", "c1") == stored
