"""``toolwire.runs._run``: the run over its store. ``update`` is the one compare-and-swap every
change of a record goes through: a lost race reads the record again and asks the change again,
``Keep`` writes nothing, a record that keeps changing is ``Contended``. A run resumed that its
store no longer keeps, or bound to another turn, is refused; a lease is renewed while its call
runs; a store that forgets runs before their requests expire is refused."""

from __future__ import annotations

import anyio
import pytest

from toolwire import (
    ConfigurationError,
    MemoryStore,
    RunBindingConflict,
    RunNotFound,
    RunStore,
    ToolSet,
    make_call,
    tool,
)
from toolwire.runs import CallRecord, Contended, Keep, Run, binding_for, check_outlives, update
from toolwire.runs._run import Lease

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


TOOLS = ToolSet([add])


def pending(call_id: str = "c1") -> CallRecord:
    return CallRecord(call_id=call_id, tool="add", fingerprint="f", state="pending")


async def test_update_creates_changes_and_keeps(store: RunStore) -> None:
    made = await update(store, "r", "c1", lambda current: pending() if current is None else Keep(0))
    assert isinstance(made, CallRecord)
    assert made.version == 1

    async def approve(current: CallRecord | None) -> CallRecord:
        assert current is not None
        return current.with_(state="approved")

    approved = await update(store, "r", "c1", approve)
    assert isinstance(approved, CallRecord)
    assert (approved.state, approved.version) == ("approved", 2)
    assert await update(store, "r", "c1", lambda current: Keep("as it is")) == Keep("as it is")
    assert await store.get("r", "c1") == approved


async def test_a_lost_race_reads_again_and_asks_the_change_again(store: RunStore) -> None:
    first = await store.swap("r", None, pending())
    assert first is not None
    seen: list[str] = []

    async def deny_unless_approved(current: CallRecord | None) -> CallRecord | Keep[str]:
        assert current is not None
        seen.append(current.state)
        if current.state == "approved":
            return Keep("someone approved it first")
        if len(seen) == 1:  # another writer gets there in between
            await store.swap("r", current, current.with_(state="approved"))
        return current.with_(state="denied")

    kept = await update(store, "r", "c1", deny_unless_approved, current=first)
    assert kept == Keep("someone approved it first")
    assert seen == ["pending", "approved"]


async def test_a_record_that_keeps_changing_is_contended(store: RunStore) -> None:
    await store.swap("r", None, pending())

    async def always_overtaken(current: CallRecord | None) -> CallRecord:
        assert current is not None
        await store.swap("r", current, current.with_(decided_by=(current.decided_by or 0) + 1))
        return current.with_(state="denied")

    with pytest.raises(Contended, match="kept changing"):
        await update(store, "r", "c1", always_overtaken, attempts=3)
    stored = await store.get("r", "c1")
    assert stored is not None
    assert (stored.state, stored.decided_by) == ("pending", 3)


async def test_a_run_resumed_that_its_store_does_not_keep_or_bound_to_another_is_refused() -> None:
    store = MemoryStore()
    calls = [("c1", "f")]
    run = Run(store, "r", binding=binding_for("alice", calls), worker="w", lease=30)
    with pytest.raises(RunNotFound, match="not in its store"):
        await run.load(["c1"], resume=True)
    assert await run.load(["c1"]) == {}
    await store.swap("r", None, pending(), binding=run.binding)
    assert (await run.load(["c1"], resume=True))["c1"].state == "pending"
    bob = Run(store, "r", binding=binding_for("bob", calls), worker="w", lease=30)
    with pytest.raises(RunBindingConflict, match="another principal"):
        await bob.load(["c1"])


async def test_a_first_record_carries_the_calls_place_in_its_turn() -> None:
    call = make_call(TOOLS, "add", {"a": 1, "b": 2}, call_id="c1")
    run = Run(MemoryStore(), "r", binding="b", worker="w", lease=30, positions={"c1": 4})
    first = run.first_record(call, "f", "running")
    assert (first.position, first.tool_id, first.state) == (4, add.qualified_name, "running")
    assert run.placed(pending()).position == 4
    assert run.placed(pending().with_(position=1)).position == 1


async def test_a_lease_is_renewed_while_its_call_runs() -> None:
    store = MemoryStore()
    now = await Run(store, "r", binding="b", worker="w", lease=0.3).clock.now()
    claim = await store.swap(
        "r", None, pending().with_(state="running", owner="w", lease_until=now + 0.3)
    )
    assert claim is not None
    with anyio.fail_after(10):
        async with Lease(store, "r", claim, 0.3) as lease:
            while lease.held.version < claim.version + 2:  # renewed twice, a third each
                await anyio.sleep(0.02)
    renewed = await store.get("r", "c1")
    assert renewed is not None
    assert renewed.lease_until is not None
    assert renewed.lease_until > now + 0.3
    assert renewed.state == "running"


def test_a_store_that_forgets_runs_before_their_requests_expire_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="ttl of at least approval_ttl"):
        check_outlives(MemoryStore(ttl=60), 120)
    check_outlives(MemoryStore(ttl=60), 60)
    check_outlives(MemoryStore(ttl=None), 10**6)
    check_outlives(MemoryStore(ttl=60), None)
