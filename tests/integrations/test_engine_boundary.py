"""The engine boundary a durable-execution integration is built on: a turn planned without
running, a call's ticket run anywhere at most once, and the ledger's wakers, which a decision
calls for what waits for it."""

from __future__ import annotations

import datetime
import decimal
import functools
import logging
import sqlite3
from pathlib import Path
from typing import Annotated, Any

import anyio
import pydantic
import pytest

import toolwire
from toolwire import Executor, ledger
from toolwire.pipeline._turns import CallTicket
from toolwire.store import MemoryStore, SQLiteStore

pytestmark = pytest.mark.anyio

RESPONSE = {
    "role": "assistant",
    "stop_reason": "tool_use",
    "content": [
        {"type": "tool_use", "id": "a", "name": "count", "input": {"tag": "a"}},
        {"type": "tool_use", "id": "w", "name": "wipe", "input": {"path": "/data"}},
    ],
}


def _tools(runs: list[str]) -> list[toolwire.Tool]:
    @toolwire.tool
    async def count(tag: str) -> str:
        """Count ``tag``."""
        runs.append(tag)
        await anyio.sleep(0.05)
        return f"counted {tag}"

    @toolwire.tool
    def wipe(path: str) -> str:
        """Wipe ``path``."""
        runs.append(f"wipe:{path}")
        return f"wiped {path}"

    return [count, wipe]


POLICY = toolwire.Policy(toolwire.Rule("ask", "wipe", reason="destroys data"))


def _deferring(tmp_path: Path, runs: list[str]) -> tuple[SQLiteStore, Executor]:
    """A worker on the run store in ``tmp_path``, whose asked calls wait for a human."""
    store = SQLiteStore(tmp_path / "runs.db")
    executor = Executor(
        _tools(runs), policy=POLICY, store=store, approver=toolwire.DeferredApproval()
    )
    return store, executor


async def _planned(executor: Executor, run_id: str, wake: dict[str, Any] | None = None) -> Any:
    listing = toolwire.tools(executor.toolset, "anthropic", policy=POLICY)
    items = toolwire.providers.get_provider("anthropic").parse(RESPONSE, listing.declaration)
    turn = await executor.plan_turn(items, run_id=run_id, wake=wake)
    await executor.keep_planned(turn)
    return turn


async def test_a_planned_turn_runs_nothing_and_keeps_its_waiting_calls(tmp_path: Path) -> None:
    runs: list[str] = []
    store, executor = _deferring(tmp_path, runs)
    turn = await _planned(executor, "run-1", wake={"engine": "test", "where": "here"})
    assert runs == []
    assert [planned.call.exposed_name for planned in turn.planned] == ["count"]
    [request] = await toolwire.pending(store=store)
    assert (request.call_id, request.reason) == ("w", "destroys data")
    record = await ledger.record(store, "run-1", "w")
    assert record is not None
    assert record.wake == {"engine": "test", "where": "here"}


async def test_a_ticket_runs_once_whoever_holds_it(tmp_path: Path) -> None:
    runs: list[str] = []
    store, executor = _deferring(tmp_path, runs)
    turn = await _planned(executor, "run-2")
    ticket = CallTicket.from_dict(executor.ticket(turn, turn.planned[0]).to_dict())  # as JSON
    other = Executor(_tools(runs), policy=POLICY, store=store)  # another worker, same tools
    answers: list[toolwire.CallOutcome] = []

    async def hold(worker: Executor) -> None:
        answers.append(await worker.run_ticket(ticket))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(hold, executor)
        tasks.start_soon(hold, other)
    assert runs == ["a"]
    assert [answer.result.text for answer in answers] == ["counted a", "counted a"]
    assert sorted(answer.ran for answer in answers) == [False, True]
    again = await other.run_ticket(ticket)  # later: answered from the run
    assert (again.result.text, again.from_store, runs) == ("counted a", True, ["a"])


async def test_a_ticket_for_another_run_binding_is_refused(tmp_path: Path) -> None:
    runs: list[str] = []
    _, executor = _deferring(tmp_path, runs)
    turn = await _planned(executor, "run-3")
    body = executor.ticket(turn, turn.planned[0]).to_dict()
    forged = CallTicket.from_dict({**body, "binding": '{"calls":"0","principal":null}'})
    with pytest.raises(toolwire.RunBindingConflict):
        await executor.run_ticket(forged)
    assert runs == []


def _ticket_of(executor: Executor, turn: Any, name: str) -> dict[str, Any]:
    [planned] = [p for p in turn.planned if p.call.exposed_name == name]
    return executor.ticket(turn, planned).to_dict()


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"arguments": {"tag": "b"}}, "other arguments than its model's"),
        ({"call_id": "w"}, "a call the run holds under another id"),
        ({"principal": "mallory"}, "another principal"),
        ({"run_id": "run-other"}, "another run (where it would run again)"),
        ({"taint": []}, "without the taint its turn had"),
        ({"caller": {"kind": "code", "type": "code_execution", "id": "x"}}, "another caller"),
        ({"position": 7}, "another place in its turn"),
    ],
)
@pytest.mark.parametrize("deferred", [True, False], ids=["run bound", "nothing stored yet"])
async def test_a_ticket_changed_after_planning_is_refused(
    tmp_path: Path, change: dict[str, Any], why: str, deferred: bool
) -> None:
    runs: list[str] = []
    # Without a call waiting, planning stores nothing but the tickets' digests: the run's
    # binding alone would not refuse a ticket made up whole.
    executor = Executor(
        _tools(runs),
        policy=POLICY if deferred else None,
        store=SQLiteStore(tmp_path / "runs.db"),
        approver=toolwire.DeferredApproval(),
    )
    turn = await _planned(executor, "run-forged")
    body = {**_ticket_of(executor, turn, "count"), "taint": ["web"]}
    turn = await executor.plan_turn(turn.items, run_id="run-forged", taint=["web"])
    await executor.keep_planned(turn)
    assert _ticket_of(executor, turn, "count") == body
    forged = CallTicket.from_dict({**body, **change})
    with pytest.raises(toolwire.RunBindingConflict, match="no such ticket"):
        await executor.run_ticket(forged)
    assert runs == [], why
    assert (await executor.run_ticket(CallTicket.from_dict(body))).result.text == "counted a"


async def test_a_ticket_made_up_for_a_run_never_planned_runs_nothing(tmp_path: Path) -> None:
    runs: list[str] = []
    store, executor = _deferring(tmp_path, runs)
    elsewhere = Executor(_tools(runs), store=SQLiteStore(tmp_path / "other.db"))
    turn = await _planned(elsewhere, "run-1")  # planned where the policy asks nobody
    made_up = CallTicket.from_dict({**_ticket_of(elsewhere, turn, "wipe"), "run_id": "never"})
    with pytest.raises(toolwire.RunBindingConflict, match="no such ticket"):
        await executor.run_ticket(made_up)
    copied = CallTicket.from_dict(_ticket_of(elsewhere, turn, "wipe"))  # into another store
    with pytest.raises(toolwire.RunBindingConflict, match="no such ticket"):
        await executor.run_ticket(copied)
    assert runs == []
    assert await toolwire.pending(store=store) == []


@pytest.mark.parametrize(
    "change",
    [
        {"null_paths": 3},
        {"null_paths": [[1]]},
        {"arguments": None},
        {"arguments": [1]},
        {"run_id": None},
        {"run_id": 5},
        {"name": []},
        {"taint": "web"},
        {"taint": [[1]]},
        {"caller": 5},
        {"alone": "false"},
        {"position": "x"},
        {"position": -1},
        {"position": True},
        {"runs_with": None},
        {"runs_with": [1]},
        {"toolset": 5},
        {"toolset": ["calls"]},
    ],
)
def test_what_is_not_a_ticket_is_refused_with_our_error(change: dict[str, Any]) -> None:
    body = {
        "run_id": "r",
        "binding": "b",
        "call_id": "a",
        "name": "count",
        "arguments": {},
        "runs_with": {},
    }
    body = {key: value for key, value in {**body, **change}.items() if value is not None}
    with pytest.raises(toolwire.ConfigurationError, match="not a call ticket"):
        CallTicket.from_dict(body)


@pytest.mark.parametrize(
    "wake",
    [
        {},
        {"engine": 5},
        {"engine": "e", "at": float("inf")},
        {"engine": "e", "x": object()},
        {"engine": "e", "deep": functools.reduce(lambda inner, _: [inner], range(100_000), [])},
    ],
)
async def test_a_wake_no_record_could_keep_is_refused_before_anything_is_stored(
    tmp_path: Path, wake: dict[str, Any]
) -> None:
    store, executor = _deferring(tmp_path, [])
    with pytest.raises(toolwire.ConfigurationError, match="wake"):
        await _planned(executor, "run-wake", wake=wake)
    assert await toolwire.pending(store=store) == []


async def test_a_ticket_whose_arguments_to_run_were_changed_runs_nothing(
    tmp_path: Path,
) -> None:
    runs: list[str] = []
    _, executor = _deferring(tmp_path, runs)
    turn = await _planned(executor, "run-kwargs")
    body = _ticket_of(executor, turn, "count")
    forged = CallTicket.from_dict({**body, "runs_with": {"tag": "x"}})
    with pytest.raises(toolwire.RunBindingConflict, match="no such ticket"):
        await executor.run_ticket(forged)
    assert runs == []
    outcome = await executor.run_ticket(CallTicket.from_dict(body))
    assert (outcome.result.text, runs) == ("counted a", ["a"])


async def test_a_ticket_of_an_approved_call_runs_the_edited_arguments_the_ledger_keeps(
    tmp_path: Path,
) -> None:
    runs: list[str] = []
    store, executor = _deferring(tmp_path, runs)
    await _planned(executor, "run-edit")
    await toolwire.decide(
        "run-edit", "w", toolwire.allow(arguments={"path": "/tmp/x"}), store=store
    )
    again = await _planned(executor, "run-edit")  # the engine plans the turn again
    body = _ticket_of(executor, again, "wipe")
    assert body["runs_with"] == {"path": "/tmp/x"}
    forged = CallTicket.from_dict({**body, "runs_with": {"path": "/data"}})
    with pytest.raises(toolwire.RunBindingConflict, match="no such ticket"):
        await executor.run_ticket(forged)
    outcome = await executor.run_ticket(CallTicket.from_dict(body))
    assert (outcome.result.text, runs) == ("wiped /tmp/x", ["wipe:/tmp/x"])


async def test_a_ticket_of_a_call_still_waiting_for_its_decision_does_not_run(
    tmp_path: Path,
) -> None:
    runs: list[str] = []
    store = SQLiteStore(tmp_path / "runs.db")
    executor = Executor(_tools(runs), policy=POLICY, store=store, approver=toolwire.AutoApprove())
    turn = await _planned(executor, "run-wait")
    wipe = next(p for p in turn.planned if p.call.exposed_name == "wipe")  # allowed at once
    ticket = executor.ticket(turn, wipe)
    # Meanwhile another worker, deferring, put the same call up for a human.
    _, deferring = _deferring(tmp_path, runs)
    await _planned(deferring, "run-wait")
    with pytest.raises(toolwire.ApprovalPending):  # held by a worker that asks nobody now
        await deferring.run_ticket(ticket)
    assert runs == []


async def test_a_ticket_the_policy_now_denies_is_answered_denied_and_kept(tmp_path: Path) -> None:
    runs: list[str] = []
    store = SQLiteStore(tmp_path / "runs.db")
    executor = Executor(_tools(runs), store=store)
    turn = await _planned(executor, "run-tight")
    body = _ticket_of(executor, turn, "count")
    strict = Executor(
        _tools(runs), policy=toolwire.Policy(toolwire.Rule("deny", "count")), store=store
    )
    outcome = await strict.run_ticket(CallTicket.from_dict(body))
    assert outcome.result.error_kind == "denied"
    assert runs == []
    record = await ledger.record(store, "run-tight", "a")
    assert record is not None
    assert record.result is not None
    assert record.result.error_kind == "denied"


async def test_a_ticket_carries_what_the_before_call_hooks_made_and_they_run_once(
    tmp_path: Path,
) -> None:
    runs: list[str] = []
    hooked: list[str] = []

    def shout(context: toolwire.CallContext) -> dict[str, Any]:
        hooked.append(context.call.exposed_name)
        return {**context.arguments, "tag": str(context.arguments["tag"]).upper()}

    store = SQLiteStore(tmp_path / "runs.db")
    executor = Executor(_tools(runs), store=store, before_call=[shout])
    turn = await _planned(executor, "run-hooked")
    body = _ticket_of(executor, turn, "count")
    assert body["runs_with"] == {"tag": "A"}
    outcome = await executor.run_ticket(CallTicket.from_dict(body))
    assert (outcome.result.text, runs) == ("counted A", ["A"])
    assert hooked == ["count", "wipe"]  # at planning only


def _bank(sent: list[tuple[str, float]]) -> list[toolwire.Tool]:
    @toolwire.tool
    def transfer(to: str, amount: float, memo: Any = None) -> str:
        """Send ``amount`` to ``to``."""
        sent.append((to, amount))
        return f"sent {amount:g} to {to}"

    return [transfer]


def _transfer(to: str, amount: float) -> list[Any]:
    listing = toolwire.tools(_bank([]), "anthropic")
    response = {
        "role": "assistant",
        "stop_reason": "tool_use",
        "content": [
            {
                "type": "tool_use",
                "id": "t",
                "name": "transfer",
                "input": {"to": to, "amount": amount},
            }
        ],
    }
    return toolwire.providers.get_provider("anthropic").parse(response, listing.declaration)


def _tidy(context: toolwire.CallContext) -> dict[str, Any]:
    """A before-call hook: the payee's name trimmed and lowercased."""
    return {**context.arguments, "to": str(context.arguments["to"]).strip().lower()}


async def test_an_approval_of_what_the_hooks_made_runs_that_and_nothing_else(
    tmp_path: Path,
) -> None:
    sent: list[tuple[str, float]] = []
    store = SQLiteStore(tmp_path / "runs.db")
    executor = Executor(
        _bank(sent),
        policy=toolwire.Policy(toolwire.Rule("ask", "transfer")),
        store=store,
        approver=toolwire.DeferredApproval(),
        before_call=[_tidy],
    )
    items = _transfer(" Alice ", 10)
    await executor.keep_planned(await executor.plan_turn(items, run_id="run-bank"))
    [request] = await toolwire.pending(store=store)
    assert request.arguments == {"to": "alice", "amount": 10}  # what the hooks made
    await toolwire.decide("run-bank", "t", toolwire.allow(), store=store)
    turn = await executor.plan_turn(items, run_id="run-bank")  # planned again, decided
    await executor.keep_planned(turn)
    body = executor.ticket(turn, turn.planned[0]).to_dict()
    assert body["runs_with"] == {"to": "alice", "amount": 10}
    forged = {**body, "runs_with": {"to": "mallory", "amount": 1_000_000}}
    with pytest.raises(toolwire.RunBindingConflict, match="no such ticket"):
        await executor.run_ticket(CallTicket.from_dict(forged))
    assert sent == []
    outcome = await executor.run_ticket(CallTicket.from_dict(body))
    assert (outcome.result.text, sent) == ("sent 10 to alice", [("alice", 10)])


async def test_where_a_ticket_runs_its_policy_judges_the_arguments_the_hooks_made(
    tmp_path: Path,
) -> None:
    sent: list[tuple[str, float]] = []
    store = SQLiteStore(tmp_path / "runs.db")

    def reroute(context: toolwire.CallContext) -> dict[str, Any]:
        return {**context.arguments, "to": "mallory"}

    planner = Executor(_bank(sent), store=store, before_call=[reroute])
    turn = await planner.plan_turn(_transfer("alice", 10), run_id="run-reroute")
    await planner.keep_planned(turn)
    ticket = planner.ticket(turn, turn.planned[0])
    not_mallory = toolwire.Rule(
        "deny", "transfer", when=lambda call: call.arguments["to"] == "mallory", reason="no"
    )
    worker = Executor(_bank(sent), store=store, policy=toolwire.Policy(not_mallory))
    outcome = await worker.run_ticket(ticket)
    assert outcome.result.error_kind == "denied"
    assert sent == []


async def test_where_a_ticket_runs_the_arguments_the_hooks_made_are_validated_again(
    tmp_path: Path,
) -> None:
    sent: list[tuple[str, float]] = []
    store = SQLiteStore(tmp_path / "runs.db")

    def inflate(context: toolwire.CallContext) -> dict[str, Any]:
        return {**context.arguments, "amount": 1_000_000}

    planner = Executor(_bank(sent), store=store, before_call=[inflate])
    turn = await planner.plan_turn(_transfer("alice", 10), run_id="run-inflate")
    await planner.keep_planned(turn)
    ticket = planner.ticket(turn, turn.planned[0])

    @toolwire.tool(name="transfer")
    def capped(to: str, amount: Annotated[float, pydantic.Field(le=100)]) -> str:
        """Send at most 100."""
        sent.append((to, amount))
        return "sent"

    outcome = await Executor([capped], store=store).run_ticket(ticket)
    assert outcome.result.error_kind == "invalid_arguments"
    assert sent == []


@pytest.mark.parametrize(
    "memo",
    [decimal.Decimal("10"), datetime.datetime(2026, 1, 1), object(), b"\x00", {1, 2}],
    ids=["decimal", "datetime", "object", "bytes", "set"],
)
async def test_a_turn_whose_hooks_made_arguments_no_ticket_can_bind_is_refused_when_planned(
    tmp_path: Path, memo: Any
) -> None:
    sent: list[tuple[str, float]] = []
    store = SQLiteStore(tmp_path / "runs.db")

    def annotate(context: toolwire.CallContext) -> dict[str, Any]:
        return {**context.arguments, "memo": memo}

    executor = Executor(
        [*_bank(sent), *_tools([])],
        policy=POLICY,
        store=store,
        approver=toolwire.DeferredApproval(),
        before_call=[annotate],
    )
    items = [*_transfer("alice", 10), *_planned_items(executor)]
    turn = await executor.plan_turn(items, run_id="run-memo")
    with pytest.raises(toolwire.ConfigurationError, match="not JSON"):
        await executor.keep_planned(turn)
    assert await toolwire.pending(store=store) == []  # nothing of the turn was kept
    assert await store.records("run-memo") == []
    assert sent == []


def _planned_items(executor: Executor) -> list[Any]:
    listing = toolwire.tools(executor.toolset, "anthropic", policy=POLICY)
    return toolwire.providers.get_provider("anthropic").parse(RESPONSE, listing.declaration)


async def test_a_ticket_runs_only_in_the_toolset_that_planned_it(tmp_path: Path) -> None:
    runs: list[str] = []
    store, executor = _deferring(tmp_path, runs)
    turn = await executor.plan_turn(_planned_items(executor), run_id="run-tenant")
    await executor.keep_planned(turn, toolset="tenant-a")
    [planned] = [p for p in turn.planned if p.call.exposed_name == "count"]
    body = executor.ticket(turn, planned, toolset="tenant-a").to_dict()
    assert body["toolset"] == "tenant-a"
    other = Executor(_tools(runs), store=store)  # tenant B's worker, on the same store
    for toolset in ("tenant-b", None):
        with pytest.raises(toolwire.RunBindingConflict, match="toolset"):
            await other.run_ticket(CallTicket.from_dict(body), toolset=toolset)
    renamed = CallTicket.from_dict({**body, "toolset": "tenant-b"})
    with pytest.raises(toolwire.RunBindingConflict, match="no such ticket"):
        await other.run_ticket(renamed, toolset="tenant-b")
    assert runs == []
    outcome = await executor.run_ticket(CallTicket.from_dict(body), toolset="tenant-a")
    assert (outcome.result.text, runs) == ("counted a", ["a"])


def _expire(store: SQLiteStore, run_id: str) -> None:
    """The run's time in the store is up (as its ``ttl`` would have it)."""
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE toolwire_runs SET expires_at = 1 WHERE run_id = ?", (run_id,))


async def test_a_turn_planned_again_after_its_run_expired_is_refused_and_runs_nothing(
    tmp_path: Path,
) -> None:
    runs: list[str] = []
    store, executor = _deferring(tmp_path, runs)
    turn = await _planned(executor, "run-gone")  # count is planned, wipe waits
    [count] = [p for p in turn.planned if p.call.exposed_name == "count"]
    await executor.run_ticket(executor.ticket(turn, count))
    assert runs == ["a"]
    _expire(store, "run-gone")  # forgotten while wipe waited
    with pytest.raises(toolwire.RunNotFound, match="'run-gone' is not in its store"):
        await executor.plan_turn(turn.items, run_id="run-gone", resume=True)
    with pytest.raises(toolwire.RunBindingConflict, match="no such ticket"):
        await executor.run_ticket(executor.ticket(turn, count))
    assert runs == ["a"]  # count never ran twice
    assert await store.records("run-gone") == []


async def test_a_ticket_of_a_strict_call_with_nulls_keeps_the_runs_fingerprint(
    tmp_path: Path,
) -> None:
    seen: list[dict[str, Any]] = []

    @toolwire.tool
    def find(key: str, limit: int = 5) -> str:
        """Find ``key``."""
        seen.append({"key": key, "limit": limit})
        return f"found {key}"

    store = SQLiteStore(tmp_path / "runs.db")
    executor = Executor([find], store=store)
    listing = toolwire.tools(executor.toolset, "openai-chat", strict=True)
    response = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "find", "arguments": '{"key": "k", "limit": null}'},
            }
        ],
    }
    provider = toolwire.providers.get_provider("openai-chat")
    items = provider.parse(response, listing.declaration)
    turn = await executor.plan_turn(items, run_id="run-null")
    await executor.keep_planned(turn)
    ticket = CallTicket.from_dict(executor.ticket(turn, turn.planned[0]).to_dict())
    assert (await executor.run_ticket(ticket)).result.text == "found k"
    # Planned again (an engine's replay), the call is answered from the run, not refused
    # as another call under the same id.
    replay = await executor.plan_turn(items, run_id="run-null")
    [outcome] = [o for o in replay.outcomes if o is not None]
    assert (outcome.result.text, outcome.from_store) == ("found k", True)
    assert seen == [{"key": "k", "limit": 5}]  # the null strict mode made it send: left out


async def test_a_decision_wakes_what_the_record_names_and_a_failing_waker_loses_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    woken: list[tuple[dict[str, Any], str, str]] = []

    async def waker(target: Any, run_id: str, call_id: str) -> None:
        woken.append((dict(target), run_id, call_id))
        if target.get("fail"):
            raise OSError("the engine is down")

    ledger.register_waker("test", waker)
    store, executor = _deferring(tmp_path, [])
    await _planned(executor, "run-4", wake={"engine": "test", "n": 1})
    await toolwire.decide("run-4", "w", toolwire.allow(), store=store)
    assert woken == [({"engine": "test", "n": 1}, "run-4", "w")]

    await _planned(executor, "run-5", wake={"engine": "test", "fail": True})
    with caplog.at_level(logging.WARNING, logger="toolwire"):
        await toolwire.decide("run-5", "w", toolwire.deny("no"), store=store)
    assert "the decision stands" in caplog.text
    record = await ledger.record(store, "run-5", "w")
    assert record is not None
    assert record.state == "denied"

    await _planned(executor, "run-6", wake={"engine": "nobody-registered"})
    with caplog.at_level(logging.WARNING, logger="toolwire"):
        await toolwire.decide("run-6", "w", toolwire.allow(), store=store)
    assert "no waker for engine 'nobody-registered'" in caplog.text


async def test_two_durable_tools_of_one_name_in_a_process_are_refused(tmp_path: Path) -> None:
    dbos = pytest.importorskip("toolwire.integrations.dbos")
    name = f"tenant-{tmp_path.name}"
    dbos.DurableTools(Executor(_tools([]), store=SQLiteStore(tmp_path / "a.db")), name=name)
    tenant_b = Executor(_tools([]), store=SQLiteStore(tmp_path / "b.db"))
    with pytest.raises(toolwire.ConfigurationError, match="already exists in this process"):
        dbos.DurableTools(tenant_b, name=name)
    for nameless in ("", None, 5):
        with pytest.raises(toolwire.ConfigurationError, match="non-empty string"):
            dbos.DurableTools(tenant_b, name=nameless)


async def test_durable_tools_refuse_what_cannot_outlive_a_process() -> None:
    dbos = pytest.importorskip("toolwire.integrations.dbos")
    with pytest.raises(toolwire.ConfigurationError, match="run store every process reads"):
        dbos.DurableTools(Executor(_tools([]), store=MemoryStore()), name="refused")


async def test_durable_calls_run_inside_a_workflow_only(tmp_path: Path) -> None:
    dbos = pytest.importorskip("toolwire.integrations.dbos")
    executor = Executor(_tools([]), policy=POLICY, store=SQLiteStore(tmp_path / "runs.db"))
    durable = dbos.DurableTools(executor, name="outside")
    # calls asked about wait for a decision; the executor given is left as it was
    assert isinstance(durable.executor.approver, toolwire.DeferredApproval)
    assert executor.approver is None
    assert durable.executor.store is executor.store
    listing = toolwire.tools(executor.toolset, "anthropic", policy=POLICY)
    with pytest.raises(toolwire.ConfigurationError, match="inside a DBOS workflow"):
        await durable.execute_tool_calls(listing, RESPONSE)
