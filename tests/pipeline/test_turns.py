"""``toolwire.pipeline._turns``: a turn's state and the engine boundary's values. ``Turn.apply``
is the one place a decided step changes a turn; a halted turn answers what its run kept or "Not
run"; ``in_groups`` orders the calls; ``CallOutcome``, ``CallTicket`` and ``TurnPlan`` go to
JSON and back whole, and a form that is not one is refused with the library's own error."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolwire import (
    ConfigurationError,
    DeferredApproval,
    Executor,
    MemoryStore,
    Policy,
    RejectedCall,
    Rule,
    RunBindingConflict,
    TextContent,
    ToolResult,
    ToolSet,
    make_call,
    tool,
)
from toolwire.approval import ApprovalRequest
from toolwire.pipeline._plan import Answer, Wait
from toolwire.pipeline._turns import (
    NOT_RUN,
    CallOutcome,
    CallTicket,
    Planned,
    Turn,
    TurnPlan,
    in_groups,
)
from toolwire.runs import CallRecord

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


@tool
def transfer(amount: int) -> str:
    """Moves money."""
    return f"moved {amount}"


TOOLS = ToolSet([add, transfer])


def turn_of(*calls: Any, run_id: str | None = "r") -> Turn:
    turn = Turn(items=list(calls), run_id=run_id, principal="alice", taint=frozenset())
    turn.outcomes = [None] * len(calls)
    return turn


def text(value: str) -> ToolResult:
    return ToolResult(content=(TextContent(value),))


# -- Turn.apply and a halted turn -----------------------------------------------------------------


def test_apply_answers_waits_or_plans_and_names_the_run_once() -> None:
    first, second, third = (make_call(TOOLS, "add", {"a": i, "b": 1}) for i in range(3))
    turn = turn_of(first, second, third, run_id=None)
    turn.apply(0, Answer(text("1"), kept=True), named_run="made-for-the-wait")
    request = ApprovalRequest(
        tool=add,
        exposed_name="add",
        arguments={"a": 1, "b": 1},
        run_id=None,
        call_id=second.local_id,
        principal="alice",
        reason="asked",
    )
    turn.apply(1, Wait(request))
    turn.apply(2, Planned(index=2, call=third, kwargs={"a": 2, "b": 1}, context=None), "another")
    assert turn.run_id == "made-for-the-wait"  # named once, by the first step that names it
    assert turn.outcomes[0] is not None
    assert turn.outcomes[0].result == text("1")
    assert turn.kept == {0}  # a kept answer is not the run's to keep again; a new wait is
    assert turn.waiting == [(1, request)]
    assert [planned.index for planned in turn.planned] == [2]
    assert turn.outcomes[1:] == [None, None]


def test_a_halting_answer_halts_the_turn_and_its_planned_calls_are_not_run() -> None:
    first, second = (
        make_call(TOOLS, "add", {"a": 1, "b": 1}),
        make_call(TOOLS, "transfer", {"amount": 5}),
    )
    turn = turn_of(first, second)
    turn.apply(0, Planned(index=0, call=first, kwargs={"a": 1, "b": 1}, context=None))
    halted = ToolResult.error("approval_denied", "Denied: stop.")
    turn.apply(1, Answer(halted, halted=True))
    turn.end_if_halted()
    assert turn.halted
    assert turn.planned == []
    assert [o.result if o else None for o in turn.outcomes] == [NOT_RUN, halted]
    assert turn.outcomes[1] is not None
    assert turn.outcomes[1].halted


def test_a_halted_turn_answers_what_its_run_kept_else_not_run() -> None:
    ran, never = (
        make_call(TOOLS, "add", {"a": 1, "b": 1}),
        make_call(TOOLS, "add", {"a": 2, "b": 2}),
    )
    turn = turn_of(ran, never)
    kept = CallRecord(
        call_id=ran.local_id, tool="add", fingerprint="f", state="completed", result=text("2")
    )
    turn.known = {ran.local_id: kept}
    turn.answer_halted(0, ran)
    turn.answer_halted(1, never)
    assert turn.outcomes[0] == CallOutcome(item=ran, result=text("2"), from_store=True)
    assert turn.seen[0] is kept  # the record the run's answer replaces
    assert turn.outcomes[1] == CallOutcome(item=never, result=NOT_RUN)


def test_admit_answers_a_reused_id_and_a_rejected_call_and_binds_the_run_to_the_rest() -> None:
    once = make_call(TOOLS, "add", {"a": 1, "b": 1}, call_id="c1")
    again = make_call(TOOLS, "add", {"a": 9, "b": 9}, call_id="c1")
    rejected = RejectedCall(
        name="ghost", call_id="c2", index=2, error_kind="not_found", message="No tool.", answer=None
    )
    turn = turn_of(once, again, rejected)
    assert turn.admit(raise_unknown=False) == ["c1"]
    assert turn.admitted == [once]
    assert turn.outcomes[1] is not None
    assert turn.outcomes[1].result.error_kind == "invalid_arguments"
    assert turn.outcomes[2] is not None
    assert turn.outcomes[2].result.error_kind == "not_found"
    assert turn.bound_calls() == [("c1", turn.fingerprint(once))]


# -- in_groups ------------------------------------------------------------------------------------


@given(st.lists(st.booleans(), max_size=12))
def test_groups_keep_the_order_and_a_call_that_must_run_alone_runs_alone(alone: list[bool]) -> None:
    items = list(enumerate(alone))
    groups = in_groups(items, lambda item: item[1])
    assert [item for group in groups for item in group] == items
    for group in groups:
        assert group
        if any(must for _, must in group):
            assert len(group) == 1
    # side by side whenever they may be: two neighbouring groups are never both shareable
    for before, after in itertools.pairwise(groups):
        assert before[-1][1] or after[0][1]


# -- CallOutcome's JSON form ----------------------------------------------------------------------

RESULTS = st.builds(
    lambda words, kind: text(words) if kind is None else ToolResult.error(kind, words or "failed"),
    st.text(max_size=20),
    st.sampled_from([None, "failed", "timeout", "denied", "approval_denied"]),
)


@given(result=RESULTS, from_store=st.booleans(), halted=st.booleans(), ran=st.booleans())
def test_an_outcome_comes_back_from_its_json_form(
    result: ToolResult, from_store: bool, halted: bool, ran: bool
) -> None:
    call = make_call(TOOLS, "add", {"a": 1, "b": 2})
    outcome = CallOutcome(item=call, result=result, from_store=from_store, halted=halted, ran=ran)
    assert CallOutcome.from_dict(call, outcome.to_dict()) == outcome


def test_a_rejected_call_never_ran_whatever_its_form_says() -> None:
    rejected = RejectedCall(
        name="ghost", call_id="c2", index=2, error_kind="not_found", message="No tool.", answer=None
    )
    form = CallOutcome(item=rejected, result=ToolResult.error("not_found", "No tool.")).to_dict()
    assert CallOutcome.from_dict(rejected, {**form, "ran": True}).ran is False


@pytest.mark.parametrize(
    "damage",
    [
        {"ran": "yes"},
        {"halted": 1},
        {"result": "moved 5"},
        {"result": {"content": [{"type": "text"}]}},
        {"from_store": None},
    ],
)
def test_a_damaged_outcome_is_refused(damage: dict[str, Any]) -> None:
    call = make_call(TOOLS, "add", {"a": 1, "b": 2})
    form = CallOutcome(item=call, result=text("3")).to_dict()
    with pytest.raises(ConfigurationError, match="not a call's outcome"):
        CallOutcome.from_dict(call, {**form, **damage})
    missing = dict(form)
    del missing["ran"]
    with pytest.raises(ConfigurationError, match="not a call's outcome"):
        CallOutcome.from_dict(call, missing)


# -- CallTicket -----------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
ARGUMENTS = st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=4)

TICKETS = st.builds(
    CallTicket,
    run_id=st.text(min_size=1, max_size=8),
    binding=st.text(max_size=12),
    call_id=st.text(min_size=1, max_size=8),
    name=st.text(min_size=1, max_size=8),
    arguments=ARGUMENTS,
    runs_with=ARGUMENTS,
    toolset=st.none() | st.text(max_size=6),
    null_paths=st.lists(st.lists(st.text(max_size=4), max_size=3).map(tuple), max_size=2).map(
        tuple
    ),
    principal=JSON_VALUES,
    taint=st.lists(st.text(max_size=4), max_size=3).map(tuple),
    caller=st.none() | st.dictionaries(st.text(max_size=4), JSON_VALUES, max_size=2),
    alone=st.booleans(),
    position=st.none() | st.integers(min_value=0, max_value=50),
)


@given(TICKETS)
def test_a_ticket_comes_back_from_its_json_form_with_the_same_digest(ticket: CallTicket) -> None:
    again = CallTicket.from_dict(ticket.to_dict())
    assert again == ticket
    assert again.digest() == ticket.digest()


@given(TICKETS, ARGUMENTS)
def test_a_ticket_whose_arguments_changed_has_another_digest(
    ticket: CallTicket, runs_with: dict[str, Any]
) -> None:
    changed = CallTicket.from_dict({**ticket.to_dict(), "runs_with": runs_with})
    assert (changed.digest() == ticket.digest()) == (dict(ticket.runs_with) == runs_with)


@pytest.mark.parametrize(
    ("damage", "where"),
    [
        ({"position": -1}, "position"),
        ({"position": "3"}, "position"),
        ({"run_id": 7}, "run_id"),
        ({"arguments": [1, 2]}, "arguments"),
        ({"alone": "no"}, "alone"),
    ],
)
def test_a_damaged_ticket_is_refused_naming_where(damage: dict[str, Any], where: str) -> None:
    form = CallTicket(
        run_id="r", binding="b", call_id="c1", name="add", arguments={}, runs_with={}
    ).to_dict()
    with pytest.raises(ConfigurationError, match=f"not a call ticket: {where}"):
        CallTicket.from_dict({**form, **damage})


def test_a_ticket_runs_only_in_its_toolset_and_where_its_run_keeps_its_digest() -> None:
    ticket = CallTicket(
        run_id="r", binding="b", call_id="c1", name="add", arguments={}, runs_with={}, toolset="a"
    )
    kept = CallRecord(call_id="c1", tool="add", fingerprint="f", state="approved")
    ticket.check_kept(kept.with_(ticket=ticket.digest()), "a")
    with pytest.raises(RunBindingConflict, match="toolset"):
        ticket.check_kept(kept.with_(ticket=ticket.digest()), "b")
    with pytest.raises(RunBindingConflict, match="keeps no such ticket"):
        ticket.check_kept(kept.with_(ticket="0" * 64), "a")
    with pytest.raises(RunBindingConflict, match="keeps no such ticket"):
        ticket.check_kept(None, "a")


# -- TurnPlan -------------------------------------------------------------------------------------


async def test_a_planned_turn_comes_back_from_its_json_form() -> None:
    executor = Executor(
        TOOLS,
        store=MemoryStore(),
        policy=Policy(
            Rule("ask", "transfer"),
            Rule("deny", "add", when=lambda context: context.arguments.get("a") == 0),
        ),
        approver=DeferredApproval(),
    )
    items = [
        make_call(TOOLS, "add", {"a": 0, "b": 1}, call_id="denied"),
        make_call(TOOLS, "add", {"a": 2, "b": 3}, call_id="runs"),
        make_call(TOOLS, "add", {"a": "x", "b": 3}, call_id="invalid"),
        make_call(TOOLS, "transfer", {"amount": 5}, call_id="waits"),
    ]
    plan = await executor.plan(items, run_id="r", principal={"user": "alice"})
    assert sorted(plan.answered) == [0, 2]
    assert [ticket.call_id for ticket in plan.tickets] == ["runs"]
    assert plan.waiting
    again = TurnPlan.from_dict(items, plan.to_dict())
    assert again == plan


async def test_a_plan_naming_a_call_the_turn_does_not_have_is_refused() -> None:
    items = [make_call(TOOLS, "add", {"a": 1, "b": 1})]
    answered = CallOutcome(item=items[0], result=text("2")).to_dict()
    body = {"answered": [{"at": 1, "outcome": answered}], "tickets": [], "waiting": False}
    with pytest.raises(ConfigurationError, match="it answers no call at 1"):
        TurnPlan.from_dict(items, body)
    with pytest.raises(ConfigurationError, match="not a turn's plan"):
        TurnPlan.from_dict(items, {**body, "waiting": "no"})
    assert TurnPlan.from_dict(items, {**body, "answered": [{"at": 0, "outcome": answered}]})
