"""``toolwire.pipeline._deciding``: one call decided, in order, as a step the turn applies: what
its run's record says, then validation, the before-call hooks, the policy and the approver.
The decider changes no turn itself (``Turn.apply`` does); these tests read the steps it gives."""

from __future__ import annotations

from typing import Any

import pytest

from toolwire import (
    AutoApprove,
    ConfigurationError,
    DeferredApproval,
    Executor,
    Policy,
    Rule,
    ToolSet,
    Veto,
    deny,
    make_call,
    tool,
)
from toolwire.approval import ApprovalRequest
from toolwire.calls import ToolCall
from toolwire.pipeline._plan import Answer, Wait
from toolwire.pipeline._turns import Planned, Turn
from toolwire.runs import CallRecord

pytestmark = pytest.mark.anyio


@tool
def transfer(amount: int) -> str:
    """Moves money."""
    return f"moved {amount}"


TOOLS = ToolSet([transfer])


def turn_of(call: ToolCall, run_id: str | None = None) -> Turn:
    turn = Turn(items=[call], run_id=run_id, principal="alice", taint=frozenset())
    turn.outcomes = [None]
    return turn


async def decide(
    executor: Executor, call: ToolCall, record: CallRecord | None = None, **how: Any
) -> tuple[Any, str | None]:
    return await executor.decider.decide(
        turn_of(call, "r" if record else None), 0, call, record, **how
    )


async def test_a_valid_call_the_policy_allows_is_planned_with_its_validated_arguments() -> None:
    call = make_call(TOOLS, "transfer", {"amount": "5"})
    step, named = await decide(Executor(TOOLS), call)
    assert isinstance(step, Planned)
    assert (step.index, step.call, named) == (0, call, None)
    assert step.kwargs == {"amount": 5}  # validated: the schema coerced the string


async def test_invalid_arguments_are_answered_and_nothing_else_is_asked() -> None:
    asked: list[ApprovalRequest] = []
    executor = Executor(TOOLS, policy=Policy(Rule("ask", "*")), approver=asked.append)
    step, _ = await decide(executor, make_call(TOOLS, "transfer", {"amount": "lots"}))
    assert isinstance(step, Answer)
    assert step.result.error_kind == "invalid_arguments"
    assert asked == []


async def test_a_policy_deny_and_a_hooks_veto_are_answers() -> None:
    denied, _ = await decide(
        Executor(TOOLS, policy=Policy(Rule("deny", "transfer", reason="frozen"))),
        make_call(TOOLS, "transfer", {"amount": 5}),
    )
    assert isinstance(denied, Answer)
    assert denied.result.text == "Denied: frozen."

    def veto(context: Any) -> Veto:
        return Veto("not on weekends")

    vetoed, _ = await decide(
        Executor(TOOLS, before_call=[veto]), make_call(TOOLS, "transfer", {"amount": 5})
    )
    assert isinstance(vetoed, Answer)
    assert "not on weekends" in (vetoed.result.text or "")


async def test_a_deferred_call_waits_in_a_run_named_for_it() -> None:
    executor = Executor(
        TOOLS, policy=Policy(Rule("ask", "*", reason="money")), approver=DeferredApproval()
    )
    step, named = await decide(executor, make_call(TOOLS, "transfer", {"amount": 5}))
    assert isinstance(step, Wait)
    assert named is not None
    assert (step.request.run_id, step.request.reason) == (named, "money")


async def test_an_approvers_answer_is_the_step() -> None:
    call = make_call(TOOLS, "transfer", {"amount": 5})
    ask = Policy(Rule("ask", "*"))
    allowed, _ = await decide(Executor(TOOLS, policy=ask, approver=AutoApprove()), call)
    assert isinstance(allowed, Planned)
    refused, _ = await decide(
        Executor(TOOLS, policy=ask, approver=lambda request: deny("no")), call
    )
    assert isinstance(refused, Answer)
    assert (refused.result.error_kind, refused.result.text) == ("approval_denied", "Denied: no.")
    with pytest.raises(ConfigurationError):
        await decide(Executor(TOOLS, policy=ask), call)


async def test_a_recorded_deny_is_final_before_anything_else_is_asked() -> None:
    asked: list[ApprovalRequest] = []
    executor = Executor(TOOLS, approver=asked.append)
    call = make_call(TOOLS, "transfer", {"amount": 5})
    record = CallRecord(
        call_id=call.local_id, tool="transfer", fingerprint="f", state="denied", decision=deny("no")
    )
    step, _ = await decide(executor, call, record)
    assert isinstance(step, Answer)
    assert step.result.error_kind == "approval_denied"
    assert asked == []


async def test_a_tickets_arguments_are_validated_and_put_to_the_policy_again() -> None:
    policy = Policy(
        Rule("deny", "transfer", when=lambda context: context.arguments["amount"] > 100)
    )
    executor = Executor(TOOLS, policy=policy)
    call = make_call(TOOLS, "transfer", {"amount": 5})
    runs, _ = await decide(executor, call, ticketed={"amount": 7})
    assert isinstance(runs, Planned)
    assert runs.kwargs == {"amount": 7}
    denied, _ = await decide(executor, call, ticketed={"amount": 500})
    assert isinstance(denied, Answer)
    assert denied.result.error_kind == "denied"
    invalid, _ = await decide(executor, call, ticketed={"amount": "many"})
    assert isinstance(invalid, Answer)
    assert invalid.result.error_kind == "invalid_arguments"
