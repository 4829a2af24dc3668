"""The run ledger as the source of truth for approvals, on every store: decisions that hold,
requests a human can read, the inbox (pending, decide, history), leases, and runs bound to
what they were started for.

Reproduction (issue 15): a human's deny was read only when the resuming process's policy asked
again (resumed without ``policy=``, the call ran); decisions were bound to an exposed name and
arguments, not to the tool; a resuming worker answered a live worker's call "interrupted";
``MemoryStore`` evicted paused runs; a record held a hash of the arguments and nothing to list.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import partial
from typing import Any

import anyio
import pytest

import toolwire
from toolwire import (
    ApprovalPending,
    ApprovalRequest,
    Decision,
    DeferredApproval,
    Executor,
    InvalidArguments,
    MemoryStore,
    Policy,
    Rule,
    RunBindingConflict,
    RunStore,
    StoreUnavailable,
    Tool,
    ToolCall,
    ToolSet,
    ToolwireError,
    allow,
    deny,
    halt,
    make_call,
)

pytestmark = pytest.mark.anyio

RAN: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def delete_customer(customer: int) -> str:
    RAN[f"delete {customer}"] += 1
    return f"customer {customer} deleted"


DELETE = Tool(
    name="delete_customer",
    description="Deletes a customer.",
    input_schema={
        "type": "object",
        "properties": {"customer": {"type": "integer", "minimum": 1}},
        "required": ["customer"],
        "additionalProperties": False,
    },
    handler=delete_customer,
)
TOOLS = ToolSet([DELETE])
ASK = Policy(Rule("ask", "delete_customer", reason="deleting needs a human"))


def read_customer(customer: int) -> str:
    RAN[f"read {customer}"] += 1
    return f"customer {customer}"


READ_AND_DELETE = ToolSet(
    [
        Tool(
            name="read_customer",
            description="Reads a customer.",
            input_schema=DELETE.input_schema,
            handler=read_customer,
        ),
        DELETE,
    ]
)


def _turn(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """An Anthropic response making ``calls`` (id, tool, arguments)."""
    return {
        "role": "assistant",
        "stop_reason": "tool_use",
        "content": [
            {"type": "tool_use", "id": call_id, "name": name, "input": arguments}
            for call_id, name, arguments in calls
        ],
    }


def asking(store: RunStore, **options: Any) -> Executor:
    return Executor(TOOLS, policy=ASK, approver=DeferredApproval(), store=store, **options)


def delete(customer: int, call_id: str = "c1", toolset: ToolSet = TOOLS) -> list[ToolCall]:
    return [make_call(toolset, "delete_customer", {"customer": customer}, call_id=call_id)]


async def pause(store: RunStore, run_id: str = "r", customer: int = 8, **options: Any) -> None:
    with pytest.raises(ApprovalPending):
        await asking(store, **options).run(delete(customer), run_id=run_id, principal="alice")


# -- decisions are final and tighten only ---------------------------------------------------------


async def test_a_recorded_deny_holds_when_the_resume_has_no_policy(store: RunStore) -> None:
    await pause(store)  # process A
    await toolwire.decide("r", "c1", deny("customer 8 is protected"), store=store)  # B
    [outcome] = await Executor(TOOLS, store=store).run(delete(8), run_id="r", principal="alice")
    assert outcome.result.error_kind == "approval_denied"
    assert outcome.result.text == "Denied: customer 8 is protected."
    assert not RAN


async def test_a_recorded_halt_holds_under_a_policy_that_allows(store: RunStore) -> None:
    await pause(store)
    await toolwire.decide("r", "c1", halt("stop everything"), store=store)
    allowing = Executor(TOOLS, policy=Policy(Rule("allow", "*")), store=store)
    [outcome] = await allowing.run(delete(8), run_id="r", principal="alice")
    assert outcome.halted
    assert outcome.result.error_kind == "approval_denied"
    assert not RAN


async def test_a_recorded_allow_yields_to_a_policy_deny_at_resume(store: RunStore) -> None:
    await pause(store)
    await toolwire.decide("r", "c1", allow(), store=store)
    denying = Executor(TOOLS, policy=Policy(Rule("deny", "delete_customer")), store=store)
    [outcome] = await denying.run(delete(8), run_id="r", principal="alice")
    assert outcome.result.error_kind == "denied"
    assert not RAN


async def test_a_decision_is_void_once_the_tool_definition_changed(store: RunStore) -> None:
    await pause(store)
    await toolwire.decide("r", "c1", allow(), store=store)
    changed = Tool(
        name="delete_customer",
        description="Deletes a customer and every invoice.",  # what the human saw has changed
        input_schema=DELETE.input_schema,
        handler=delete_customer,
    )
    toolset = ToolSet([changed])
    executor = Executor(toolset, store=store)  # not even a policy that asks
    with pytest.raises(ApprovalPending) as waiting:
        await executor.run(delete(8, toolset=toolset), run_id="r", principal="alice")
    [request] = waiting.value.pending
    assert "changed since the call was decided" in (request.reason or "")
    assert not RAN
    [listed] = await toolwire.pending(store=store, run_id="r")
    assert listed.call_id == "c1"
    await toolwire.decide("r", "c1", allow(), store=store, by="bob")
    [outcome] = await executor.run(delete(8, toolset=toolset), run_id="r", principal="alice")
    assert outcome.result.text == "customer 8 deleted"
    assert RAN == {"delete 8": 1}


async def test_a_decision_is_void_for_another_tool_behind_the_same_exposed_name(
    store: RunStore,
) -> None:
    # A server renamed or reordered its tools: `read.log` and `read_log` both end up exposed as
    # `files__read_log`. The approval of one must not run the other.
    read_log = Tool(name="read_log", server_id="files", handler=lambda: "read_log ran")
    read_dot_log = Tool(name="read.log", server_id="files", handler=lambda: "read.log ran")

    def call_to(tool: Tool) -> list[ToolCall]:
        return [
            ToolCall(
                exposed_name="files__read_log", tool=tool, arguments={}, call_id="c1", local_id="c1"
            )
        ]

    executor = Executor(
        ToolSet([read_log]),
        policy=Policy(Rule("ask", "*/*")),
        approver=DeferredApproval(),
        store=store,
    )
    with pytest.raises(ApprovalPending):
        await executor.run(call_to(read_log), run_id="r")
    await toolwire.decide("r", "c1", allow(), store=store)
    with pytest.raises(ApprovalPending):
        await executor.run(call_to(read_dot_log), run_id="r")
    [request] = await toolwire.pending(store=store)
    assert (request.server, request.tool_name) == ("files", "read.log")


# -- the request is kept, and an inbox lists it ----------------------------------------------------


async def test_the_request_is_kept_for_an_approval_screen(store: RunStore) -> None:
    await pause(store, approval_ttl=3600)
    [request] = await toolwire.pending(store=store)
    assert request.tool is None  # read from the store: no Tool object needed
    assert (request.run_id, request.call_id, request.exposed_name) == ("r", "c1", "delete_customer")
    assert (request.server, request.tool_name) == (None, "delete_customer")
    assert request.arguments == {"customer": 8}
    assert request.principal == "alice"
    assert request.reason == "deleting needs a human"
    assert request.requested_at is not None
    assert request.expires_at == pytest.approx(request.requested_at + 3600)
    as_json = json.loads(json.dumps(request.to_dict()))
    assert ApprovalRequest.from_dict(as_json) == request


async def test_redacted_arguments_are_kept_and_the_real_ones_run(store: RunStore) -> None:
    def redact(request: ApprovalRequest) -> dict[str, Any]:
        return dict.fromkeys(request.arguments, "[redacted]")

    await pause(store, redact=redact)
    [request] = await toolwire.pending(store=store)
    assert request.arguments == {"customer": "[redacted]"}
    await toolwire.decide("r", "c1", allow(), store=store)
    [outcome] = await asking(store, redact=redact).run(delete(8), run_id="r", principal="alice")
    assert outcome.result.text == "customer 8 deleted"


async def test_pending_lists_across_runs_and_principals_oldest_first(store: RunStore) -> None:
    for n, (run_id, principal) in enumerate([("r1", "alice"), ("r2", "bob"), ("r3", "alice")]):
        with pytest.raises(ApprovalPending):
            await asking(store).run(delete(n + 1), run_id=run_id, principal=principal)
    every = await toolwire.pending(store=store)
    assert [(r.run_id, r.principal) for r in every] == [
        ("r1", "alice"),
        ("r2", "bob"),
        ("r3", "alice"),
    ]
    assert [r.run_id for r in await toolwire.pending(store=store, principal="alice")] == [
        "r1",
        "r3",
    ]
    assert [r.run_id for r in await toolwire.pending(store=store, run_id="r2")] == ["r2"]
    assert [r.run_id for r in await toolwire.pending(store=store, limit=1)] == ["r1"]
    await toolwire.decide("r1", "c1", deny(), store=store)
    assert [r.run_id for r in await toolwire.pending(store=store)] == ["r2", "r3"]


async def test_history_tells_each_calls_trail(store: RunStore) -> None:
    await pause(store)
    await toolwire.decide("r", "c1", allow(arguments={"customer": 9}), store=store, by="bob")
    await asking(store).run(delete(8), run_id="r", principal="alice")
    [trail] = await toolwire.history("r", store=store)
    assert (trail.call_id, trail.exposed_name) == ("c1", "delete_customer")
    assert trail.state == "completed"
    assert trail.requested is not None
    assert trail.requested["reason"] == "deleting needs a human"
    assert trail.decided is not None
    assert (trail.decided["by"], trail.decided["kind"], trail.decided["edited"]) == (
        "bob",
        "allow",
        True,
    )
    assert trail.claimed is not None
    assert trail.claimed["worker"].count(":") == 2  # host:pid:token
    assert trail.finished is not None
    assert trail.finished["state"] == "completed"
    assert trail.finished["duration"] >= 0
    assert trail.requested["at"] <= trail.decided["at"] <= trail.claimed["at"]
    json.dumps(trail.to_dict())


async def test_an_approval_with_edited_arguments_runs_with_them(store: RunStore) -> None:
    await pause(store)
    await toolwire.decide("r", "c1", allow(arguments={"customer": 9}), store=store)
    [outcome] = await asking(store).run(delete(8), run_id="r", principal="alice")
    assert outcome.result.text == "customer 9 deleted"
    assert RAN == {"delete 9": 1}


async def test_edited_arguments_that_do_not_fit_record_nothing(store: RunStore) -> None:
    await pause(store)
    with pytest.raises(InvalidArguments):
        await toolwire.decide("r", "c1", allow(arguments={"customer": "all"}), store=store)
    [still] = await toolwire.pending(store=store)
    assert still.call_id == "c1"
    edited_deny = Decision("deny", "no", arguments={"customer": 9})
    with pytest.raises(ToolwireError, match="only an allow"):
        await toolwire.decide("r", "c1", edited_deny, store=store)
    [still] = await toolwire.pending(store=store)
    assert still.call_id == "c1"


async def test_an_expired_request_is_denied(store: RunStore) -> None:
    await pause(store, approval_ttl=0.05)
    await anyio.sleep(0.1)
    with pytest.raises(ToolwireError, match="expired"):
        await toolwire.decide("r", "c1", allow(), store=store)
    [outcome] = await asking(store).run(delete(8), run_id="r", principal="alice")
    assert outcome.result.error_kind == "approval_denied"
    assert "expired" in outcome.result.text
    assert not RAN
    assert await toolwire.pending(store=store) == []


# -- runs are bound to what they were started for --------------------------------------------------


async def test_a_resume_by_another_principal_is_refused(store: RunStore) -> None:
    await pause(store)
    await toolwire.decide("r", "c1", allow(), store=store)
    with pytest.raises(RunBindingConflict, match="another principal"):
        await asking(store).run(delete(8), run_id="r", principal="mallory")
    assert not RAN


async def test_a_run_id_reused_for_another_model_response_is_refused(store: RunStore) -> None:
    executor = Executor(TOOLS, store=store)
    await executor.run(delete(3, call_id="c1"), run_id="r")
    with pytest.raises(RunBindingConflict, match="another model response"):
        await executor.run(delete(4, call_id="c2"), run_id="r")
    assert RAN == {"delete 3": 1}


async def test_a_run_id_given_to_another_turn_of_its_conversation_is_refused(
    store: RunStore,
) -> None:
    executor = Executor(TOOLS, store=store)
    await executor.run(delete(3), run_id="r", place="conversation 7, message 1")
    # The same call again (a model repeating itself), for the next user message.
    with pytest.raises(RunBindingConflict, match="'r' was started for another turn"):
        await executor.run(delete(3), run_id="r", place="conversation 7, message 2")
    with pytest.raises(RunBindingConflict, match="another turn"):
        await executor.run(delete(3), run_id="r")  # a turn that names no place is another
    assert RAN == {"delete 3": 1}
    [again] = await executor.run(delete(3), run_id="r", place="conversation 7, message 1")
    assert (again.from_store, RAN) == (True, {"delete 3": 1})  # the same turn: its answer


async def test_a_paused_turn_names_its_store_and_a_resume_without_one_uses_it(
    store: RunStore,
) -> None:
    listing = toolwire.tools(READ_AND_DELETE, "anthropic")
    response = _turn(
        ("c0", "read_customer", {"customer": 8}), ("c1", "delete_customer", {"customer": 8})
    )
    options: dict[str, Any] = {"policy": ASK, "approver": DeferredApproval()}
    with pytest.raises(ApprovalPending) as paused:
        await toolwire.execute_tool_calls(
            listing, response, run_id="r", store=store, principal="alice", **options
        )
    assert paused.value.store is store
    await toolwire.decide("r", "c1", allow(), store=store)
    # Without store=: the run is where the paused turn kept it, not in the default store.
    outcome = await toolwire.execute_tool_calls(
        listing, response, run_id="r", principal="alice", **options
    )
    assert [call.from_store for call in outcome.calls] == [True, False]
    assert RAN == {"read 8": 1, "delete 8": 1}
    again = await toolwire.execute_tool_calls(
        listing, response, resume=paused.value, principal="alice", **options
    )
    assert [call.from_store for call in again.calls] == [True, True]
    assert RAN == {"read 8": 1, "delete 8": 1}


async def test_a_resume_of_a_run_its_store_does_not_keep_is_refused_and_runs_nothing(
    store: RunStore,
) -> None:
    listing = toolwire.tools(READ_AND_DELETE, "anthropic")
    response = _turn(
        ("c0", "read_customer", {"customer": 8}), ("c1", "delete_customer", {"customer": 8})
    )
    options: dict[str, Any] = {"policy": ASK, "approver": DeferredApproval()}
    with pytest.raises(ApprovalPending) as paused:
        await toolwire.execute_tool_calls(listing, response, store=MemoryStore(), **options)
    assert RAN == {"read 8": 1}
    # Resumed where the run is not (its store forgot it, or another one is given): the read
    # that ran is not run again, and nothing else runs.
    with pytest.raises(toolwire.RunNotFound, match=repr(paused.value.run_id)):
        await toolwire.execute_tool_calls(
            listing, response, resume=paused.value, store=store, **options
        )
    executor = asking(store)
    with pytest.raises(toolwire.RunNotFound):
        await executor.run(delete(8), run_id=paused.value.run_id, resume=True)
    assert RAN == {"read 8": 1}
    assert await store.records(paused.value.run_id) == []


@pytest.mark.parametrize("approval_ttl", [3600.0, 61.0])
def test_a_store_that_forgets_runs_before_their_requests_expire_is_refused(
    tmp_path: Any, approval_ttl: float
) -> None:
    short = toolwire.SQLiteStore(tmp_path / "runs.db", ttl=60)
    with pytest.raises(toolwire.ConfigurationError, match="less than approval_ttl"):
        Executor(TOOLS, store=short, approval_ttl=approval_ttl)
    with pytest.raises(toolwire.ConfigurationError, match="less than approval_ttl"):
        Executor(TOOLS, store=MemoryStore(ttl=60), approval_ttl=approval_ttl)
    executor = Executor(TOOLS, store=short, approval_ttl=60)  # as long as the run: kept
    with pytest.raises(toolwire.ConfigurationError, match="less than approval_ttl"):
        executor.replace(approval_ttl=approval_ttl)
    assert executor.approval_ttl == 60
    Executor(TOOLS, store=short)  # requests that never expire: the store's ttl is the bound
    Executor(TOOLS, store=toolwire.SQLiteStore(tmp_path / "kept.db", ttl=None), approval_ttl=1e9)


# -- leases, not guesses ---------------------------------------------------------------------------


async def test_a_live_workers_call_is_waited_for_and_answered_alike(store: RunStore) -> None:
    started = anyio.Event()

    async def slow_delete(customer: int) -> str:
        started.set()
        await anyio.sleep(1.0)  # several leases long: only renewals keep the claim alive
        RAN[f"delete {customer}"] += 1
        return f"customer {customer} deleted"

    slow = Tool(name="delete_customer", input_schema=DELETE.input_schema, handler=slow_delete)
    toolset = ToolSet([slow])
    answers: dict[str, Any] = {}

    async def worker(name: str) -> None:
        executor = Executor(toolset, store=store, lease=0.2)
        [outcome] = await executor.run(delete(8, toolset=toolset), run_id="r")
        answers[name] = outcome.result

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(worker, "first")
        await started.wait()
        await anyio.sleep(0.5)  # past two leases: the first worker has renewed
        tasks.start_soon(worker, "second")
    assert answers["first"] == answers["second"]
    assert answers["first"].text == "customer 8 deleted"
    assert RAN == {"delete 8": 1}


# -- the default store keeps unfinished runs -------------------------------------------------------


async def test_a_paused_run_survives_thousands_of_other_runs_in_the_default_store() -> None:
    store = MemoryStore()  # the default's size
    await pause(store, run_id="paused")
    quick = Executor(TOOLS, store=store)
    for n in range(5_000):
        await quick.run(delete(n + 1, call_id=f"q{n}"), run_id=f"other-{n}")
    assert len(store) <= store.max_runs
    await toolwire.decide("paused", "c1", allow(), store=store)
    [outcome] = await asking(store).run(delete(8), run_id="paused", principal="alice")
    assert outcome.result.text == "customer 8 deleted"
    assert RAN["delete 8"] == 2  # once among the 5,000, once resumed: never twice for "paused"
    assert not (await toolwire.pending(store=store))


async def test_a_memory_store_full_of_unfinished_runs_says_so() -> None:
    store = MemoryStore(max_runs=3)
    for n in range(3):
        await pause(store, run_id=f"p{n}")
    with pytest.raises(StoreUnavailable, match="waiting or running"):
        await pause_or_raise(store, "p3")
    assert len(await toolwire.pending(store=store)) == 3  # nothing was forgotten
    await toolwire.decide("p0", "c1", deny(), store=store)
    await asking(store).run(delete(8), run_id="p0", principal="alice")  # p0 is finished now
    await pause(store, run_id="p3")  # so there is room again


async def pause_or_raise(store: RunStore, run_id: str) -> None:
    await asking(store).run(delete(8), run_id=run_id, principal="alice")


# -- who decided ----------------------------------------------------------------------------------


async def test_decisions_record_when_and_by_whom(store: RunStore) -> None:
    await pause(store)
    before = await toolwire.ledger.store_time(store)  # decisions are timed on the store's clock
    await toolwire.decide("r", "c1", deny("no"), store=store, by={"user": "bob", "role": "admin"})
    record = await store.get("r", "c1")
    assert record is not None
    assert record.decided_by == {"user": "bob", "role": "admin"}
    assert record.decided_at is not None
    assert record.decided_at >= before


# -- found by an outside review: each a way around the promises above -----------------------------


async def test_edited_arguments_pass_through_the_policy_and_the_hooks(store: RunStore) -> None:
    protected = Policy(
        Rule("deny", "delete_customer", when=lambda ctx: ctx.arguments.get("customer") == 1),
        Rule("ask", "delete_customer"),
    )
    vetoed: list[Any] = []

    def veto_one(context: Any) -> Any:
        if context.arguments.get("customer") == 1:
            vetoed.append(1)
        return None

    executor = Executor(
        TOOLS, policy=protected, approver=DeferredApproval(), store=store, before_call=[veto_one]
    )
    with pytest.raises(ApprovalPending):
        await executor.run(delete(7), run_id="r")
    await toolwire.decide("r", "c1", allow(arguments={"customer": 1}), store=store)
    [outcome] = await executor.run(delete(7), run_id="r")
    assert outcome.result.error_kind == "denied"
    assert vetoed == [1]  # the hook saw the arguments that would have run
    assert not RAN


async def test_edited_arguments_run_when_the_resume_has_no_policy(store: RunStore) -> None:
    await pause(store, customer=7)
    await toolwire.decide("r", "c1", allow(arguments={"customer": 1}), store=store)
    [outcome] = await Executor(TOOLS, store=store).run(delete(7), run_id="r", principal="alice")
    assert outcome.result.text == "customer 1 deleted"
    assert RAN == {"delete 1": 1}


async def test_a_call_waiting_for_a_decision_waits_whatever_the_resuming_policy(
    store: RunStore,
) -> None:
    await pause(store)
    for _ in range(2):  # resumed twice without a policy, or an approver: still waiting
        with pytest.raises(ApprovalPending):
            await Executor(TOOLS, store=store).run(delete(8), run_id="r", principal="alice")
    assert not RAN
    assert len(await toolwire.pending(store=store)) == 1


async def test_a_deny_holds_even_once_the_tool_changed(store: RunStore) -> None:
    await pause(store)
    await toolwire.decide("r", "c1", deny("no"), store=store)
    changed = Tool(
        name="delete_customer", description="Other words.", input_schema=DELETE.input_schema
    )
    toolset = ToolSet([changed])
    for _ in range(2):
        [outcome] = await Executor(toolset, store=store).run(
            delete(8, toolset=toolset), run_id="r", principal="alice"
        )
        assert outcome.result.text == "Denied: no."


async def test_a_decision_only_tightens(store: RunStore) -> None:
    await pause(store)
    await toolwire.decide("r", "c1", allow(), store=store)
    await toolwire.decide("r", "c1", allow(), store=store)  # said again: nothing changes
    await toolwire.decide("r", "c1", deny("changed my mind"), store=store)  # tighter: kept
    with pytest.raises(ToolwireError, match="final"):
        await toolwire.decide("r", "c1", allow(), store=store)
    [outcome] = await asking(store).run(delete(8), run_id="r", principal="alice")
    assert outcome.result.text == "Denied: changed my mind."


@pytest.mark.parametrize(
    "decision",
    [Decision("maybe"), Decision("deny", 5), Decision("allow", arguments=[1])],  # type: ignore[arg-type]
)
async def test_a_malformed_decision_is_refused(store: RunStore, decision: Decision) -> None:
    await pause(store)
    with pytest.raises(ToolwireError):
        await toolwire.decide("r", "c1", decision, store=store)
    assert len(await toolwire.pending(store=store)) == 1


async def test_a_halted_run_replayed_stays_halted_and_runs_nothing_after(store: RunStore) -> None:
    calls = [*delete(1, "c1"), *delete(2, "c2"), *delete(3, "c3")]
    with pytest.raises(ApprovalPending):
        await asking(store).run(calls, run_id="r")
    await toolwire.decide("r", "c1", allow(), store=store)
    await toolwire.decide("r", "c2", halt("stop"), store=store)
    await toolwire.decide("r", "c3", allow(), store=store)
    for _ in range(2):
        outcomes = await asking(store).run(calls, run_id="r")
        assert [o.halted for o in outcomes] == [False, True, False]
        assert [o.result.error_kind for o in outcomes] == ["approval_denied"] * 3
    assert not RAN  # a halt stops the whole turn, the calls allowed before it included


async def test_a_cancelled_turn_resumes_as_interrupted_at_once(store: RunStore) -> None:
    async def slow(n: int) -> str:
        RAN[f"slow {n}"] += 1
        await anyio.sleep(30)
        return "done"

    toolset = ToolSet([Tool(name="slow", input_schema={"type": "object"}, handler=slow)])
    calls = [make_call(toolset, "slow", {"n": n}, call_id=f"c{n}") for n in range(2)]
    executor = Executor(toolset, store=store, lease=30)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(partial(executor.run, calls, run_id="r"))
        while len(RAN) < 2:
            await anyio.sleep(0.01)
        executor.cancel("r")
    with anyio.fail_after(10):  # not a lease (30 s): the cancelled worker ended its claims
        outcomes = await Executor(toolset, store=store, lease=30).run(calls, run_id="r")
    assert [o.result.error_kind for o in outcomes] == ["interrupted", "interrupted"]


async def test_the_pending_exception_carries_the_redacted_arguments(store: RunStore) -> None:
    with pytest.raises(ApprovalPending) as waiting:
        await asking(store, redact=lambda request: {"customer": "***"}).run(delete(8), run_id="r")
    assert waiting.value.pending[0].arguments == {"customer": "***"}


async def test_a_finished_run_is_evicted_before_a_denied_one_not_yet_answered() -> None:
    store = MemoryStore(max_runs=1)
    await pause(store, run_id="A")
    await toolwire.decide("A", "c1", deny("no"), store=store)
    with pytest.raises(StoreUnavailable):  # A is decided, not answered: it is kept
        await Executor(TOOLS, store=store).run(delete(3, "x"), run_id="B")
    [outcome] = await Executor(TOOLS, store=store).run(delete(8), run_id="A", principal="alice")
    assert outcome.result.text == "Denied: no."
    assert not RAN


@pytest.mark.parametrize(
    ("principal", "kept"),
    [
        ({"roles": {"ops", "billing", "admin", "x", "y"}}, True),  # a set: kept in one order
        (float("nan"), False),
        ({"user": float("inf")}, False),
    ],
)
async def test_principals_are_kept_as_stable_json_or_refused(
    store: RunStore, principal: Any, kept: bool
) -> None:
    if not kept:
        with pytest.raises(ToolwireError, match="not JSON"):
            await asking(store).run(delete(8), run_id="r", principal=principal)
        assert not RAN
        return
    with pytest.raises(ApprovalPending):
        await asking(store).run(delete(8), run_id="r", principal=principal)
    [request] = await toolwire.pending(store=store, principal=principal)
    assert request.principal == {"roles": ["admin", "billing", "ops", "x", "y"]}


@pytest.mark.parametrize(
    "options",
    [{"limit": 0}, {"limit": 2**63}, {"limit": 1.5}, {"run_id": "a\x00"}, {"run_id": 123}],
)
async def test_odd_inbox_queries_are_configuration_errors(
    store: RunStore, options: dict[str, Any]
) -> None:
    with pytest.raises(toolwire.ConfigurationError):
        await toolwire.pending(store=store, **options)


async def test_a_halt_recorded_between_planning_and_claiming_halts_the_call() -> None:
    class HaltsBeforeTheClaim(MemoryStore):
        """A human halts the call just as a worker is about to claim it."""

        async def swap(self, run_id: str, expected: Any, record: Any, **options: Any) -> Any:
            if record.state == "running" and expected is not None and expected.state == "approved":
                await toolwire.decide(run_id, record.call_id, halt("stop now"), store=self)
            return await super().swap(run_id, expected, record, **options)

    store = HaltsBeforeTheClaim()
    await pause(store)
    await toolwire.decide("r", "c1", allow(), store=store)
    [outcome] = await asking(store).run(delete(8), run_id="r", principal="alice")
    assert outcome.halted
    assert outcome.result.text == "Denied: stop now."
    assert not RAN
    [again] = await asking(store).run(delete(8), run_id="r", principal="alice")
    assert again.halted
    assert again.result == outcome.result


async def test_a_call_planned_to_run_cannot_be_decided(store: RunStore) -> None:
    """An engine's plan keeps each call it will run (``approved``, with its ticket) before any
    runs: nobody asked about it, so a decision of it is refused (a deny recorded there would
    answer a call the policy lets run as denied, once its turn was cut before the ticket)."""
    toolset = ToolSet([DELETE])
    call = make_call(toolset, DELETE.name, {"customer": 7}, call_id="c5")
    plan = await Executor(toolset, store=store).plan([call], run_id="planned")
    assert [ticket.call_id for ticket in plan.tickets] == ["c5"]
    with pytest.raises(ToolwireError, match="no call 'c5' waiting for approval"):
        await toolwire.decide("planned", "c5", deny("not this one"), store=store)
    assert not RAN
