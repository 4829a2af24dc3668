"""Breaks of the governed path's invariants that the state machines of ``tests/model`` found,
each as the smallest test that shows it, and an outsider's attacks on the invariants around
them. A failing test names the invariant it breaks in its comment."""

from __future__ import annotations

import functools
import json
from typing import Any

import anyio
import pytest

import toolwire
from toolwire import ApprovalPending, DeferredApproval, Executor, MemoryStore, Policy, Rule, ledger
from toolwire.hosted import answer_hosted_approvals
from toolwire.providers import get_provider
from toolwire.store import CallRecord

pytestmark = pytest.mark.anyio

ran: list[str] = []


@pytest.fixture(autouse=True)
def _nothing_ran() -> None:
    ran.clear()


@toolwire.tool
def work(n: int) -> str:
    """Work on ``n``."""
    ran.append(f"work {n}")
    return f"worked {n}"


@toolwire.tool
def pay(n: int) -> str:
    """Pay ``n``."""
    ran.append(f"pay {n}")
    return f"paid {n}"


POLICY = Policy(Rule("ask", "pay", reason="it costs money"))
RESPONSE = get_provider("anthropic").response_for(
    [("c1", "pay", {"n": 1}), ("c2", "work", {"n": 2})]
)


def _deferring(store: toolwire.RunStore, **options: Any) -> tuple[Executor, toolwire.Listing]:
    executor = Executor(
        [work, pay], policy=POLICY, approver=DeferredApproval(), store=store, **options
    )
    return executor, toolwire.tools(executor.toolset, "anthropic", policy=POLICY)


async def _paused(executor: Executor, listing: toolwire.Listing, run_id: str) -> ApprovalPending:
    with pytest.raises(ApprovalPending) as paused:
        await toolwire.execute_tool_calls(listing, RESPONSE, executor=executor, run_id=run_id)
    return paused.value


async def test_a_halt_keeps_the_answer_of_a_call_that_already_ran() -> None:
    # every call answered exactly once: c2 ran and was answered "worked 2"; the run keeps
    # that answer, and a halt decided afterwards for c1 does not take it back.
    store = MemoryStore()
    executor, listing = _deferring(store)
    paused = await _paused(executor, listing, "r1")
    assert [(c.item.local_id, c.result.text) for c in paused.completed] == [("c2", "worked 2")]
    await toolwire.decide("r1", "c1", toolwire.halt("stop"), store=store)
    resumed = await toolwire.execute_tool_calls(listing, RESPONSE, executor=executor, resume=paused)
    assert ran == ["work 2"]
    assert [c.result.text for c in resumed.calls] == ["Denied: stop.", "worked 2"]
    kept = await ledger.record(store, "r1", "c2")
    assert kept is not None
    assert kept.result is not None
    assert kept.result.text == "worked 2"


async def test_a_turn_run_again_tells_the_deadline_its_run_keeps() -> None:
    # an approval bound to the exact call: the request a turn hands back is the one its run
    # keeps (the deadline a person is shown is the one that refuses them).
    store = MemoryStore()
    executor, listing = _deferring(store, approval_ttl=60)
    first = await _paused(executor, listing, "r2")
    again = await _paused(executor, listing, "r2")
    [kept] = await toolwire.pending(store=store)
    assert first.pending[0].expires_at == kept.expires_at
    assert again.pending[0].expires_at == kept.expires_at


def _hosted_request(request_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "mcp_approval_request",
        "id": request_id,
        "server_label": "github",
        "name": "merge_pr",
        "arguments": json.dumps(arguments),
    }


async def test_a_hosted_request_allowed_with_other_arguments_is_not_approved_as_asked() -> None:
    # an approval bound to the exact call: a person allowed merge_pr(number=8); the provider
    # runs a hosted call with the arguments the model sent (7), so an approval of the request
    # as it stands would run a call nobody allowed. Refused, or the edit refused, not approved.
    store = MemoryStore()
    policy = Policy(Rule("ask", "github/merge_*"), default="allow")
    response = {"output": [_hosted_request("mcpr_1", {"number": 7})]}
    first = await answer_hosted_approvals(response, policy=policy, store=store, run_id="h1")
    assert [request.call_id for request in first.pending] == ["mcpr_1"]
    try:
        await toolwire.decide("h1", "mcpr_1", toolwire.allow(arguments={"number": 8}), store=store)
    except toolwire.ToolwireError:
        return  # the edit refused: the request still waits, as asked
    again = await answer_hosted_approvals(response, policy=policy, store=store, run_id="h1")
    assert not any(answer["approve"] for answer in again.answers)


# -- around them: what holds ----------------------------------------------------------------------


async def test_a_halt_decided_later_never_runs_the_calls_still_to_run() -> None:
    # a deny final: after a halt, a call allowed before it, in the same turn, never runs.
    store = MemoryStore()
    executor, listing = _deferring(store)
    response = get_provider("anthropic").response_for(
        [("c1", "pay", {"n": 1}), ("c2", "pay", {"n": 2})]
    )
    with pytest.raises(ApprovalPending) as paused:
        await toolwire.execute_tool_calls(listing, response, executor=executor, run_id="r3")
    await toolwire.decide("r3", "c2", toolwire.allow(), store=store)
    await toolwire.decide("r3", "c1", toolwire.halt("stop"), store=store)
    resumed = await toolwire.execute_tool_calls(
        listing, response, executor=executor, resume=paused.value
    )
    assert ran == []
    assert [c.result.error_kind for c in resumed.calls] == ["approval_denied"] * 2
    with pytest.raises(toolwire.ToolwireError):
        await toolwire.decide("r3", "c2", toolwire.allow(), store=store)
    again = await toolwire.execute_tool_calls(listing, response, executor=executor, run_id="r3")
    assert ran == []
    assert [c.result.text for c in again.calls] == [c.result.text for c in resumed.calls]


async def test_an_allow_taken_back_before_the_call_runs_is_final() -> None:
    # a deny final: an allow may be tightened to a deny before the call runs, and never
    # loosened again.
    store = MemoryStore()
    executor, listing = _deferring(store)
    paused = await _paused(executor, listing, "r4")
    await toolwire.decide("r4", "c1", toolwire.allow(), store=store)
    await toolwire.decide("r4", "c1", toolwire.deny("changed my mind"), store=store)
    with pytest.raises(toolwire.ToolwireError, match="decision is final"):
        await toolwire.decide("r4", "c1", toolwire.allow(), store=store)
    resumed = await toolwire.execute_tool_calls(listing, RESPONSE, executor=executor, resume=paused)
    assert ran == ["work 2"]
    assert resumed.calls[0].result.text == "Denied: changed my mind."


async def test_a_run_resumed_for_another_principal_runs_nothing() -> None:
    # an approval bound to its principal: alice's allowed call is not run for bob, by a
    # resume or by the same run id.
    store = MemoryStore()
    executor, listing = _deferring(store)
    with pytest.raises(ApprovalPending) as paused:
        await toolwire.execute_tool_calls(
            listing, RESPONSE, executor=executor, run_id="r5", principal="alice"
        )
    await toolwire.decide("r5", "c1", toolwire.allow(), store=store)
    ran.clear()
    with pytest.raises(toolwire.RunBindingConflict):
        await toolwire.execute_tool_calls(
            listing, RESPONSE, executor=executor, resume=paused.value, principal="bob"
        )
    with pytest.raises(toolwire.RunBindingConflict):
        await toolwire.execute_tool_calls(
            listing, RESPONSE, executor=executor, run_id="r5", principal="bob"
        )
    assert ran == []


async def test_a_paused_loop_resumed_for_another_principal_runs_nothing() -> None:
    # an approval bound to its principal, through toolwire.loop: the paused result, decided,
    # resumed for bob, raises and runs nothing; resumed for alice, runs her call once.
    store = MemoryStore()
    executor, listing = _deferring(store)
    script = [RESPONSE]

    async def send(**request: Any) -> Any:
        return script.pop(0) if script else get_provider("anthropic").response_for([], "Done.")

    first = [{"role": "user", "content": "Go."}]
    paused = await toolwire.loop(send, listing, first, executor=executor, principal="alice")
    assert paused.pending is not None
    await toolwire.decide(paused.pending.run_id, "c1", toolwire.allow(), store=store)
    with pytest.raises(toolwire.RunBindingConflict):
        await toolwire.loop(send, listing, paused, executor=executor, principal="bob")
    assert ran == ["work 2"]
    done = await toolwire.loop(send, listing, paused, executor=executor, principal="alice")
    assert done.done
    assert ran == ["work 2", "pay 1"]


async def test_hosted_requests_answered_for_another_principal_are_refused() -> None:
    # an approval bound to its principal, for hosted tools: alice's allowed request is not
    # answered approved for bob under her run.
    store = MemoryStore()
    policy = Policy(Rule("ask", "github/merge_*"), default="allow")
    response = {"output": [_hosted_request("mcpr_1", {"number": 7})]}
    await answer_hosted_approvals(response, policy=policy, store=store, run_id="h2", principal="a")
    await toolwire.decide("h2", "mcpr_1", toolwire.allow(), store=store)
    with pytest.raises(toolwire.RunBindingConflict):
        await answer_hosted_approvals(
            response, policy=policy, store=store, run_id="h2", principal="b"
        )
    answered = await answer_hosted_approvals(
        response, policy=policy, store=store, run_id="h2", principal="a"
    )
    assert [answer["approve"] for answer in answered.answers] == [True]


async def test_a_gateway_approval_of_alices_call_never_runs_bobs_identical_call() -> None:
    # an approval bound to the exact call and principal, behind the gateway: alice's call and
    # bob's identical one wait in runs of their own; allowing alice's runs hers, once, and
    # bob's still waits.
    mcp = pytest.importorskip("mcp")
    from toolwire.mcp import Gateway

    store = MemoryStore()
    gateways = {
        who: Gateway(toolwire.ToolSet([pay]), policy=POLICY, store=store, principal=who)
        for who in ("alice", "bob")
    }

    async def call(who: str) -> str:
        async with mcp.Client(gateways[who].server()) as client:
            answer = await client.call_tool("pay", {"n": 1})
        return str(answer.content[0].text)

    assert "waits for approval" in await call("alice")
    assert "waits for approval" in await call("bob")
    waiting = {request.principal: request.run_id for request in await toolwire.pending(store=store)}
    assert set(waiting) == {"alice", "bob"}
    assert waiting["alice"] != waiting["bob"]
    await toolwire.decide(waiting["alice"], "call", toolwire.allow(), store=store)
    assert "waits for approval" in await call("bob")
    assert await call("alice") == "paid 1"
    assert ran == ["pay 1"]
    [still] = await toolwire.pending(store=store)
    assert (still.principal, still.run_id) == ("bob", waiting["bob"])


class _SlowToAnswerClaims(MemoryStore):
    """A store whose write of a claim (a record moved to ``running``) takes effect, then is
    slow to return: as a store across a network is, when the turn is cancelled meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.claimed = anyio.Event()

    async def swap(
        self,
        run_id: str,
        expected: CallRecord | None,
        record: CallRecord,
        *,
        binding: str | None = None,
    ) -> CallRecord | None:
        written = await super().swap(run_id, expected, record, binding=binding)
        claiming = expected is None or expected.state != "running"  # not a lease's renewal
        if written is not None and record.state == "running" and claiming:
            self.claimed.set()
            await anyio.sleep_forever()  # until the turn is cancelled
        return written


async def test_a_turn_cancelled_while_claiming_a_call_ends_its_lease() -> None:
    # every call answered at once on resume: a turn cut off mid-call ends its claim's lease,
    # so the resume answers the call interrupted at once (as when the cut comes while the
    # tool runs), whatever moment of the call the cut came at. The deep run on PostgreSQL
    # meets this often (its writes take long enough to be cut).
    store = _SlowToAnswerClaims()
    executor = Executor([work], store=store)
    listing = toolwire.tools(executor.toolset, "anthropic")
    response = get_provider("anthropic").response_for([("c1", "work", {"n": 1})])
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(
            functools.partial(
                toolwire.execute_tool_calls, listing, response, executor=executor, run_id="r6"
            )
        )
        await store.claimed.wait()
        tasks.cancel_scope.cancel()
    record = await ledger.record(store, "r6", "c1")
    assert record is not None
    assert record.state == "running"
    assert ran == []
    assert record.lease_until is not None
    assert record.lease_until <= await ledger.store_time(store)  # ended, not held
