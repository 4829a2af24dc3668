"""``toolwire.pipeline._plan``: the planner's pure steps, from a call's tool, what its run's
record says and the policy's verdict to a step. Nothing here touches a store: each test builds
the record a run could hold and reads the step it gives."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolwire import TextContent, ToolResult, allow, deny, halt, tool
from toolwire.pipeline._plan import (
    NO_RECORD,
    RUN,
    Answer,
    Ask,
    Go,
    Refuse,
    Wait,
    decided,
    found,
    from_record,
    gate,
    refusal,
    settled,
)
from toolwire.policy import Verdict
from toolwire.runs import HOST, CallRecord

NOW = 1_000_000.0


@tool
def transfer(amount: int) -> str:
    """Moves money."""
    return f"moved {amount}"


@tool
def other(amount: int) -> str:
    """Another tool, exposed by another name."""
    return str(amount)


def record(state: str = "pending", *, for_tool: object = transfer, **changes: object) -> CallRecord:
    """The run's record of a ``transfer`` call, made (when asked about) for ``for_tool``."""
    base = CallRecord(
        call_id="c1",
        tool="transfer",
        fingerprint="f" * 16,
        state=state,  # type: ignore[arg-type]
        tool_id=for_tool.qualified_name,  # type: ignore[attr-defined]
        definition=for_tool.definition_hash,  # type: ignore[attr-defined]
    )
    return base.with_(**changes)


def asked(expires_at: float | None = None, reason: str | None = "large") -> dict[str, object]:
    return {"reason": reason, "requested_at": NOW - 10, "expires_at": expires_at}


# -- from_record: what the run already knows ---------------------------------------------------


def test_a_call_the_run_has_no_record_of_goes_on() -> None:
    assert from_record(None, transfer, "r", may_rerun=False, now=NOW) is NO_RECORD


def test_a_kept_answer_is_replayed_and_a_kept_halt_still_halts() -> None:
    done = ToolResult(content=(TextContent("moved 5"),))
    step = from_record(record("completed", result=done), transfer, "r", may_rerun=False, now=NOW)
    assert step == Answer(done, from_store=True, kept=True)
    refused = ToolResult.error("approval_denied", "Denied: stop.")
    stopped = record("denied", result=refused, decision=halt("stop"))
    step = from_record(stopped, transfer, "r", may_rerun=False, now=NOW)
    assert step == Answer(refused, from_store=True, halted=True, kept=True)


def test_a_recorded_deny_is_final_even_for_a_changed_tool() -> None:
    no = deny("not today")
    for made_for in (transfer, other):
        denied = record("denied", decision=no, for_tool=made_for)
        step = from_record(denied, transfer, "r", may_rerun=False, now=NOW)
        assert step == Refuse(no)


def test_a_recorded_allow_holds_only_for_the_tool_it_was_made_for() -> None:
    yes = allow()
    assert from_record(
        record("approved", decision=yes), transfer, "r", may_rerun=False, now=NOW
    ) == Go(recorded=yes)
    void = from_record(
        record("approved", decision=yes, for_tool=other), transfer, "r", may_rerun=False, now=NOW
    )
    assert void == Go(undecided=True, void=True)


def test_a_call_asked_about_waits_with_its_kept_request_until_it_expires() -> None:
    waiting = record("pending", request=asked(expires_at=NOW + 60))
    step = from_record(waiting, transfer, "r", may_rerun=False, now=NOW)
    assert step == Go(undecided=True, reason="large", asked=(NOW - 10, NOW + 60))
    step = from_record(waiting, transfer, "r", may_rerun=False, now=NOW + 60)
    assert isinstance(step, Answer)
    assert step.result.error_kind == "approval_denied"
    assert "expired" in (step.result.text or "")


def test_a_call_running_in_a_live_worker_is_answered_unavailable_and_kept() -> None:
    live = record("running", owner="elsewhere:1:abc", started_at=NOW - 1, lease_until=NOW + 30)
    step = from_record(live, transfer, "r", may_rerun=True, now=NOW)
    assert isinstance(step, Answer)
    assert (step.result.error_kind, step.kept) == ("unavailable", True)


def test_a_call_whose_worker_stopped_is_interrupted_unless_it_may_run_again() -> None:
    lapsed = record("running", owner="elsewhere:1:abc", started_at=NOW - 90, lease_until=NOW - 30)
    step = from_record(lapsed, transfer, "r", may_rerun=False, now=NOW)
    assert isinstance(step, Answer)
    # not kept yet: the run keeps this verdict, so every worker gives the same answer
    assert (step.result.error_kind, step.kept) == ("interrupted", False)
    assert isinstance(from_record(lapsed, transfer, "r", may_rerun=True, now=NOW), Go)


def test_a_live_lease_of_a_process_of_this_host_that_is_gone_is_not_held() -> None:
    gone = _a_finished_pid()
    dead = record("running", owner=f"{HOST}:{gone}:abc", started_at=NOW, lease_until=NOW + 600)
    step = from_record(dead, transfer, "r", may_rerun=False, now=NOW)
    assert isinstance(step, Answer)
    assert step.result.error_kind == "interrupted"
    assert "process has stopped" in (step.result.text or "")


def _a_finished_pid() -> int:
    if os.name != "posix":
        pytest.skip("a stopped process is known only on POSIX")
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


# -- gate: the policy's verdict and the record's decision ---------------------------------------


@given(
    recorded=st.sampled_from([None, allow()]),
    undecided=st.booleans(),
    void=st.booleans(),
    let_run=st.booleans(),
    has_approver=st.booleans(),
)
def test_a_policy_deny_answers_the_call_whatever_the_record_says(
    recorded: object, undecided: bool, void: bool, let_run: bool, has_approver: bool
) -> None:
    go = Go(recorded=recorded, undecided=undecided, void=void)  # type: ignore[arg-type]
    step = gate(go, Verdict("deny", "too much"), has_approver=has_approver, let_run=let_run)
    assert step == Answer(ToolResult.error("denied", "Denied: too much."))


def test_a_policy_that_asks_is_answered_by_a_recorded_allow_or_a_planned_ticket() -> None:
    ask = Verdict("ask", "large")
    assert gate(Go(recorded=allow()), ask, has_approver=False) is RUN
    assert gate(NO_RECORD, ask, has_approver=False, let_run=True) is RUN
    assert gate(NO_RECORD, None, has_approver=False) is RUN
    assert gate(NO_RECORD, ask, has_approver=True) == Ask("large", deferred=False)


def test_an_undecided_call_waits_without_an_approver_and_says_why_a_void_one_is_asked_again() -> (
    None
):
    kept = Go(undecided=True, reason="large", asked=(1.0, 2.0))
    assert gate(kept, Verdict("allow"), has_approver=False) == Ask(
        "large", deferred=True, asked=(1.0, 2.0)
    )
    assert gate(kept, Verdict("allow"), has_approver=True) == Ask(
        "large", deferred=False, asked=(1.0, 2.0)
    )
    void = gate(Go(undecided=True, void=True), Verdict("ask", "large"), has_approver=True)
    assert isinstance(void, Ask)
    assert void.reason == "the tool changed since the call was decided; large"


# -- decided, refusal, settled, found ------------------------------------------------------------


def test_an_approvers_decision_runs_the_call_or_refuses_it_and_a_halt_stops_the_turn() -> None:
    assert decided(allow()) is RUN
    assert decided(deny("no")) == Refuse(deny("no"))
    answer = refusal(halt("enough"))
    assert (answer.result.error_kind, answer.result.text, answer.halted) == (
        "approval_denied",
        "Denied: enough.",
        True,
    )
    assert refusal(deny()).result.text == "Denied: the call was not approved."
    assert settled(Refuse(deny("no"))) == refusal(deny("no"))
    wait = Wait(request=None, kept=True)  # type: ignore[arg-type]
    assert settled(wait) is wait


def test_a_record_found_when_claiming_answers_by_what_another_worker_wrote() -> None:
    def found_now(found_record: CallRecord, *, mine: str = "f" * 16) -> object:
        return found(found_record, fingerprint=mine, run_id="r", may_rerun=False, now=NOW)

    step = found_now(record("approved"), mine="e" * 16)
    assert isinstance(step, Answer)
    assert (step.result.error_kind, step.kept) == ("failed", True)
    assert "already records another call" in (step.result.text or "")
    assert found_now(record("denied")) == Refuse(deny())
    assert found_now(record("denied", decision=halt("x"))) == Refuse(halt("x"))
    waits = found_now(record("pending", request=asked()))
    assert isinstance(waits, Wait)
    assert (waits.request.run_id, waits.request.call_id, waits.kept) == ("r", "c1", True)
    assert found_now(record("approved", decision=allow())) is None  # still to claim
