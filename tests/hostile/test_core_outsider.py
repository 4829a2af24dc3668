"""The recomposed governance core (a run over its store, a pure planner, a decider, a runner),
attacked from outside where its behaviour could have drifted from the code it replaced: two
workers on one run, records changed between planning and claiming, the one compare-and-swap
helper's retries, lease renewal on a lost race, the executor's settings, and what a user's tool
and the model are told. An attack that found a break asserts the correct behaviour as a strict
xfail saying what breaks; the attacks that held are plain tests."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
import pytest

import toolwire
from toolwire import (
    ApprovalPending,
    CallContext,
    ConfigurationError,
    Decision,
    DeferredApproval,
    Executor,
    Policy,
    Rule,
    RunStore,
    ToolSet,
    ToolwireError,
    ledger,
    make_call,
)
from toolwire.calls import ToolCall, ToolResult
from toolwire.runs._run import SWAP_ATTEMPTS, Contended, Keep, Lease, update
from toolwire.store import CallRecord

pytestmark = pytest.mark.anyio

BOUND = 60
RAN: list[Any] = []
OTHER = "another-machine:1:other"
"""A worker on another machine: only its lease says whether it is alive."""


@pytest.fixture(autouse=True)
def _nothing_ran() -> Any:
    RAN.clear()
    yield
    RAN.clear()


@toolwire.tool(idempotent=True)
async def bump(n: int) -> str:
    """Add one to a counter."""
    RAN.append(n)
    return f"bumped {n}"


@toolwire.tool
def pay(amount: int) -> str:
    """Pay an amount."""
    RAN.append(amount)
    return f"paid {amount}"


def _call(tool: Any, arguments: dict[str, Any], call_id: str = "c1") -> ToolCall:
    return make_call(ToolSet([tool]), tool.name, arguments, call_id=call_id)


class Watched:
    """A real store, watched: what was written, a callback on reads, and renewals of a running
    claim held back until ``renewals`` is set."""

    def __init__(self, inner: RunStore) -> None:
        self.inner = inner
        self.written: list[CallRecord] = []
        self.on_get: Callable[[str, str], Awaitable[None]] | None = None
        self.renewals: anyio.Event | None = None

    async def get(self, run_id: str, call_id: str) -> CallRecord | None:
        if self.on_get is not None:
            await self.on_get(run_id, call_id)
        return await self.inner.get(run_id, call_id)

    async def get_many(self, run_id: str, call_ids: Sequence[str]) -> list[CallRecord | None]:
        return await self.inner.get_many(run_id, call_ids)

    async def swap(
        self,
        run_id: str,
        expected: CallRecord | None,
        record: CallRecord,
        *,
        binding: str | None = None,
    ) -> CallRecord | None:
        renewal = (
            expected is not None
            and expected.state == record.state == "running"
            and expected.owner == record.owner
        )
        if renewal and self.renewals is not None:
            await self.renewals.wait()
        stored = await self.inner.swap(run_id, expected, record, binding=binding)
        if stored is not None:
            self.written.append(stored)
        return stored

    async def load(
        self, run_id: str, call_ids: Sequence[str]
    ) -> tuple[str | None, list[CallRecord | None]]:
        return await self.inner.load(run_id, call_ids)

    async def records(self, run_id: str) -> list[CallRecord]:
        return await self.inner.records(run_id)

    async def pending(self, **kwargs: Any) -> Any:
        return await self.inner.pending(**kwargs)


def _running_elsewhere(call: ToolCall, lease_until: float) -> CallRecord:
    """The claim of a worker on another machine running ``call``."""
    return CallRecord(
        call_id=call.local_id,
        tool=call.exposed_name,
        fingerprint=ledger.fingerprint(call),
        tool_id=call.tool.qualified_name,
        state="running",
        owner=OTHER,
        started_at=time.time(),
        lease_until=lease_until,
    )


# -- two workers, one call ----------------------------------------------------------------------


async def test_a_claim_won_after_waiting_for_another_worker_leases_from_when_it_is_written(
    store: RunStore,
) -> None:
    watched = Watched(store)
    released: list[float] = []
    reads = 0

    async def other_stops(run_id: str, call_id: str) -> None:
        # The other worker's second poll finds its lease ended (it was cancelled mid-call).
        nonlocal reads
        reads += 1
        if reads == 2:
            current = await store.get(run_id, call_id)
            assert current is not None
            released.append(time.time())
            assert await store.swap(run_id, current, current.with_(lease_until=released[0]))

    async def another_worker_claims_first(context: CallContext) -> None:
        assert context.run_id is not None
        await store.swap(context.run_id, None, _running_elsewhere(context.call, time.time() + 60))
        watched.on_get = other_stops

    lease = 30.0
    executor = Executor(
        [bump],
        store=watched,
        on_interrupted="rerun_idempotent",
        before_call=[another_worker_claims_first],
        lease=lease,
    )
    with anyio.fail_after(BOUND):
        [outcome] = await executor.run([_call(bump, {"n": 1})], run_id="r1")
    assert outcome.result.text == "bumped 1"
    [claim] = [r for r in watched.written if r.owner == executor.worker_id and r.state == "running"]
    assert claim.started_at is not None
    assert claim.lease_until is not None
    assert claim.started_at >= released[0]
    assert claim.lease_until >= released[0] + lease


async def test_a_call_claimed_after_a_long_wait_is_not_run_again_by_a_concurrent_resume(
    store: RunStore,
) -> None:
    watched = Watched(store)
    watched.renewals = anyio.Event()  # the claimer's renewals wait: only its claim counts
    told: list[ToolResult] = []

    @toolwire.tool(name="bump", idempotent=True)
    async def bump_and_resume(n: int) -> str:
        """Add one to a counter."""
        RAN.append(n)
        if len(RAN) == 1:  # the claimer's run: a second worker resumes the run meanwhile
            assert watched.renewals is not None
            try:
                second = Executor(
                    [bump_and_resume],
                    store=store,
                    on_interrupted="rerun_idempotent",
                    wait_for_running=0,
                )
                [outcome] = await second.run([_call(bump_and_resume, {"n": n})], run_id="r1")
                told.append(outcome.result)
            finally:
                watched.renewals.set()
        return f"bumped {n}"

    async def another_worker_claims_first(context: CallContext) -> None:
        # whose lease runs out in 2 s: past the claimer's whole lease of 0.5 s
        assert context.run_id is not None
        await store.swap(context.run_id, None, _running_elsewhere(context.call, time.time() + 2))

    executor = Executor(
        [bump_and_resume],
        store=watched,
        on_interrupted="rerun_idempotent",
        before_call=[another_worker_claims_first],
        lease=0.5,
    )
    with anyio.fail_after(BOUND):
        await executor.run([_call(bump_and_resume, {"n": 1})], run_id="r1")
    assert told
    assert told[0].error_kind == "unavailable"
    assert RAN == [1]


async def test_two_executors_resuming_one_approved_run_run_its_call_once(store: RunStore) -> None:
    ask = Policy(Rule("ask", "pay"))
    call = _call(pay, {"amount": 5})
    first = Executor([pay], policy=ask, approver=DeferredApproval(), store=store)
    with pytest.raises(ApprovalPending):
        await first.run([call], run_id="r1")
    await first.decide("r1", "c1", Decision("allow"))
    workers = [Executor([pay], policy=ask, approver=DeferredApproval(), store=store) for _ in "ab"]
    answers: list[str] = []

    async def resume(worker: Executor) -> None:
        [outcome] = await worker.run([call], run_id="r1")
        answers.append(outcome.result.text)

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as group:
            for worker in workers:
                group.start_soon(resume, worker)
    assert RAN == [5]
    assert answers == ["paid 5", "paid 5"]


async def test_a_record_of_another_call_found_when_claiming_is_not_this_calls_answer(
    store: RunStore,
) -> None:
    secret = "the other call's answer"

    async def another_call_takes_the_id(context: CallContext) -> None:
        assert context.run_id is not None
        other = _call(pay, {"amount": 999})
        record = CallRecord(
            call_id=context.call_id,
            tool="pay",
            fingerprint=ledger.fingerprint(other),
            state="completed",
            result=ToolResult.from_value(secret),
        )
        assert await store.swap(context.run_id, None, record)

    executor = Executor([pay], store=store, before_call=[another_call_takes_the_id])
    with anyio.fail_after(BOUND):
        [outcome] = await executor.run([_call(pay, {"amount": 5})], run_id="r1")
    assert outcome.result.error_kind == "failed"
    assert secret not in outcome.result.text
    assert "already records another call" in outcome.result.text
    assert RAN == []
    kept = await ledger.record(store, "r1", "c1")
    assert kept is not None
    assert kept.result is not None
    assert kept.result.text == secret


async def test_a_deny_recorded_between_planning_and_claiming_is_final(store: RunStore) -> None:
    ask = Policy(Rule("ask", "pay"))
    call = _call(pay, {"amount": 5})
    executor = Executor([pay], policy=ask, approver=DeferredApproval(), store=store)
    with pytest.raises(ApprovalPending):
        await executor.run([call], run_id="r1")
    await executor.decide("r1", "c1", Decision("allow"))

    async def tightened_meanwhile(context: CallContext) -> None:
        await ledger.decide(store, "r1", "c1", Decision("deny", "changed my mind"))

    resuming = Executor(
        [pay],
        policy=ask,
        approver=DeferredApproval(),
        store=store,
        before_call=[tightened_meanwhile],
    )
    with anyio.fail_after(BOUND):
        [outcome] = await resuming.run([call], run_id="r1")
    assert outcome.result.error_kind == "approval_denied"
    assert "changed my mind" in outcome.result.text
    assert RAN == []
    # and it stays denied, whatever the next resume's policy says
    again = Executor([pay], store=store)
    [replayed] = await again.run([call], run_id="r1")
    assert replayed.result.error_kind == "approval_denied"
    assert RAN == []


async def test_another_workers_answer_found_when_remembering_a_denial_stands_for_all(
    store: RunStore,
) -> None:
    async def answered_elsewhere_meanwhile(context: CallContext) -> None:
        assert context.run_id is not None
        record = _running_elsewhere(context.call, time.time() + 60).with_(
            state="completed", result=ToolResult.from_value("paid 5 elsewhere"), lease_until=None
        )
        assert await store.swap(context.run_id, None, record)

    executor = Executor(
        [pay],
        policy=Policy(Rule("deny", "pay")),
        store=store,
        before_call=[answered_elsewhere_meanwhile],
    )
    with anyio.fail_after(BOUND):
        [outcome] = await executor.run([_call(pay, {"amount": 5})], run_id="r1")
    assert outcome.result.text == "paid 5 elsewhere"
    assert outcome.from_store
    kept = await ledger.record(store, "r1", "c1")
    assert kept is not None
    assert kept.state == "completed"


# -- decisions ----------------------------------------------------------------------------------


async def test_an_edited_allow_still_yields_to_the_policy_at_resume(store: RunStore) -> None:
    policy = Policy(
        Rule("deny", "pay", when=lambda c: c.arguments.get("amount", 0) > 100, reason="too much"),
        Rule("ask", "pay"),
    )
    call = _call(pay, {"amount": 5})
    executor = Executor([pay], policy=policy, approver=DeferredApproval(), store=store)
    with pytest.raises(ApprovalPending):
        await executor.run([call], run_id="r1")
    await executor.decide("r1", "c1", Decision("allow", arguments={"amount": 1000}))
    with anyio.fail_after(BOUND):
        [outcome] = await executor.run([call], run_id="r1")
    assert outcome.result.error_kind == "denied"
    assert "too much" in outcome.result.text
    assert RAN == []


async def test_an_allow_made_for_an_older_definition_is_not_honoured(store: RunStore) -> None:
    @toolwire.tool(name="pay", description="Pay a small amount.")
    def pay_changed(amount: int) -> str:
        RAN.append(("changed", amount))
        return "paid"

    ask = Policy(Rule("ask", "pay"))
    executor = Executor([pay], policy=ask, approver=DeferredApproval(), store=store)
    with pytest.raises(ApprovalPending):
        await executor.run([_call(pay, {"amount": 5})], run_id="r1")
    await executor.decide("r1", "c1", Decision("allow"))
    changed = Executor([pay_changed], policy=ask, approver=DeferredApproval(), store=store)
    with pytest.raises(ApprovalPending) as waiting:
        await changed.run([_call(pay_changed, {"amount": 5})], run_id="r1")
    assert "tool changed" in (waiting.value.pending[0].reason or "")
    assert RAN == []


async def test_an_executor_replaced_with_a_policy_and_approver_asks_them() -> None:
    given = Executor([pay])
    asked: list[str] = []

    def approver(request: Any) -> Decision:
        asked.append(request.exposed_name)
        return Decision("deny", "no")

    executor = given.replace(policy=Policy(Rule("ask", "pay")), approver=approver)
    [outcome] = await executor.run([_call(pay, {"amount": 5})])
    assert asked == ["pay"]
    assert outcome.result.error_kind == "approval_denied"
    assert RAN == []
    assert given.approver is None  # the executor it was made from is unchanged
    assert executor.store is given.store


async def test_an_executors_settings_are_fixed_and_replace_makes_one_with_others() -> None:
    executor = Executor([pay])
    with pytest.raises(ConfigurationError, match="replace"):
        executor.policy = Policy(Rule("deny", "pay"))
    with pytest.raises(ConfigurationError, match="replace"):
        executor.after_call = ()
    changed = executor.replace(
        after_call=(lambda context, result: "redacted",), max_output_chars=1000, timeout=5.0
    )
    [outcome] = await changed.run([_call(pay, {"amount": 5})])
    assert outcome.result.text == "redacted"
    assert (changed.max_output_chars, changed.timeout) == (1000, 5.0)
    [plain] = await executor.run([_call(pay, {"amount": 6})])
    assert plain.result.text != "redacted"
    with pytest.raises(ConfigurationError, match="no setting"):
        executor.replace(polcy=Policy())


async def test_deciding_a_call_that_keeps_changing_says_to_decide_again() -> None:
    class Racing(Watched):
        async def swap(self, *args: Any, **kwargs: Any) -> CallRecord | None:
            return None  # another writer always got there first

    ask = Policy(Rule("ask", "pay"))
    inner = toolwire.MemoryStore()
    executor = Executor([pay], policy=ask, approver=DeferredApproval(), store=inner)
    with pytest.raises(ApprovalPending):
        await executor.run([_call(pay, {"amount": 5})], run_id="r1")
    with pytest.raises(ToolwireError, match="kept changing; decide again") as raised:
        await ledger.decide(Racing(inner), "r1", "c1", Decision("allow"))
    assert not isinstance(raised.value, Contended)  # the public error, not the helper's


# -- the compare-and-swap helper and the lease --------------------------------------------------


async def test_update_tries_the_record_given_first_then_rereads_and_gives_up_contended(
    store: RunStore,
) -> None:
    stored = await store.swap(
        "r1", None, _running_elsewhere(_call(pay, {"amount": 5}), time.time() + 60)
    )
    assert stored is not None
    given: list[CallRecord | None] = []

    async def change(current: CallRecord | None) -> CallRecord:
        given.append(current)
        latest = await store.get("r1", "c1")  # another writer gets there first, every time
        assert latest is not None
        assert await store.swap("r1", latest, latest.with_(finished_at=time.time()))
        assert current is not None
        return current.with_(owner="me")

    with pytest.raises(Contended):
        await update(store, "r1", "c1", change, current=stored)
    assert len(given) == SWAP_ATTEMPTS
    assert given[0] is stored  # the record given is not read again for the first attempt
    versions = [g.version for g in given if g is not None]
    assert versions == sorted(set(versions))
    assert len(versions) == SWAP_ATTEMPTS
    after = await store.get("r1", "c1")
    assert after is not None
    assert after.owner == OTHER

    kept = await update(store, "r1", "c1", lambda current: Keep("left"))
    assert kept == Keep("left")


async def test_a_lease_taken_over_stops_renewing_and_never_overwrites_the_new_claim(
    store: RunStore,
) -> None:
    claim = await store.swap("r1", None, _running_elsewhere(_call(pay, {"amount": 5}), 0.0))
    assert claim is not None
    lease = Lease(store, "r1", claim, 30.0)
    assert await lease._renew_once()  # ours: renewed
    renewed = lease.held
    assert renewed.version > claim.version
    assert (renewed.lease_until or 0) > time.time()
    taken = await store.swap("r1", renewed, renewed.with_(owner="me", started_at=time.time()))
    assert taken is not None
    assert not await lease._renew_once()
    after = await store.get("r1", "c1")
    assert after is not None
    assert after.owner == "me"
    assert after.version == taken.version
    assert lease.held is renewed


# -- what a user's tool, and the model, are told ------------------------------------------------


async def test_a_tool_asking_for_its_context_sees_its_run_and_no_resume(store: RunStore) -> None:
    seen: list[CallContext] = []

    @toolwire.tool
    def look(n: int, context: CallContext) -> str:
        """Look."""
        seen.append(context)
        return "ok"

    executor = Executor([look], store=store)
    call = _call(look, {"n": 1})
    await executor.run([call], run_id="r1", deps={"db": "x"})
    [context] = seen
    assert (context.run_id, context.call_id, context.deps, context.resume) == (
        "r1",
        "c1",
        {"db": "x"},
        None,
    )
    assert context.arguments == {"n": 1}


async def test_a_failing_hooks_answer_stays_short_whatever_its_exception_is_called() -> None:
    long_named = type("E" * 5000, (Exception,), {})

    def hook(context: CallContext) -> None:
        raise long_named("m" * 1000)

    executor = Executor([pay], before_call=[hook])
    [outcome] = await executor.run([_call(pay, {"amount": 5})])
    assert outcome.result.text.startswith("Not run: a before-call hook failed (")
    assert len(outcome.result.text) <= 400
    assert RAN == []
