"""Deciding what to do with one call, as values: pure functions from the call's tool, what its
run's record says and the policy's verdict to a step.

Nothing here reads or writes a store, runs a hook or asks an approver: the executor carries
the steps out. A call's way through: [`from_record`][] (what the run already knows: an answer
to replay, a decision, a wait), then validation and hooks (the executor's), then [`gate`][]
(the policy's verdict and the recorded decision), then, when asked, [`decided`][]. A worker
that loses the race to claim a call reads what another wrote: [`found`][].
"""

from __future__ import annotations

from dataclasses import dataclass

from toolwire.approval import ApprovalRequest, Decision
from toolwire.calls import ToolResult
from toolwire.pipeline._output import denied_answer
from toolwire.policy import Verdict
from toolwire.runs import (
    CallRecord,
    awaits_input,
    decided_for,
    expired,
    held,
    input_resume,
    interrupted_answer,
    request_of,
    still_running_answer,
)
from toolwire.tool import Tool

__all__ = [
    "NO_RECORD",
    "RUN",
    "Answer",
    "Ask",
    "Go",
    "Refuse",
    "Run",
    "Wait",
    "decided",
    "found",
    "from_record",
    "gate",
    "refusal",
    "replayed",
    "settled",
]


@dataclass(frozen=True, slots=True)
class Answer:
    """Answer the call now with ``result``; it does not run."""

    result: ToolResult
    from_store: bool = False
    """The answer the run kept, replayed."""
    halted: bool = False
    """The answer of a call halted by a human: the turn stops."""
    kept: bool = False
    """The run's record already says so: nothing to remember."""


@dataclass(frozen=True, slots=True)
class Refuse:
    """A deny or halt, recorded or an approver's: the call is answered ``approval_denied``."""

    decision: Decision


@dataclass(frozen=True, slots=True)
class Wait:
    """The call waits in the run, for a decision or for input its server asked for."""

    request: ApprovalRequest
    kept: bool = False
    """Its record says so already."""


@dataclass(frozen=True, slots=True)
class Go:
    """Nothing the run knows stops the call: on to validation, hooks and policy, with what
    the record says of deciding it."""

    recorded: Decision | None = None
    """A recorded allow (its edited arguments, if any, are what runs)."""
    undecided: bool = False
    """It was asked about and not decided (or its decision is void): it waits, whatever the
    policy says."""
    void: bool = False
    """Its decision (or request) was made for another tool, or an older definition."""
    reason: str | None = None
    """Why it was asked about, as its request kept it."""
    asked: tuple[float | None, float | None] | None = None
    """When its kept request was made and expires (it waits with that request, not a new
    one: the deadline a person is shown is the one the run keeps); None when the request is
    made again (none is kept, or it is void)."""


@dataclass(frozen=True, slots=True)
class Ask:
    """Ask the approver (``deferred``: the call waits in the run without asking one)."""

    reason: str | None
    deferred: bool
    asked: tuple[float | None, float | None] | None = None
    """When the run's kept request of the call was made and expires, if it keeps one."""


@dataclass(frozen=True, slots=True)
class Run:
    """The call runs."""


RUN = Run()
NO_RECORD = Go()
"""What the run says of a call it has no record of: go on."""

_INPUT_EXPIRED = ToolResult.error(
    "failed", "Not finished: the server's request for input expired unanswered."
)
_CHANGED_WHILE_WAITING = ToolResult.error(
    "failed",
    "Not finished: the tool changed while the call waited for input; the answers given are "
    "not sent to the changed tool.",
)
_REQUEST_EXPIRED = ToolResult.error("approval_denied", "Denied: the approval request expired.")


def replayed(record: CallRecord, *, may_rerun: bool, now: float) -> Answer | None:
    """The answer a record gives the call by itself: the one it kept, the call is still
    running in a live worker, or its worker stopped mid-run (unless it may run again); None
    when the record answers nothing."""
    if record.result is not None:
        halted = record.decision is not None and record.decision.kind == "halt"
        return Answer(record.result, from_store=True, halted=halted, kept=True)
    if record.state == "running" and held(record, now):
        return Answer(still_running_answer(record), kept=True)
    if record.state == "running" and not may_rerun:
        # Not kept yet: the run keeps this verdict, so every worker gives the same answer.
        return Answer(interrupted_answer(record))
    return None


def from_record(
    record: CallRecord | None, tool: Tool, run_id: str | None, *, may_rerun: bool, now: float
) -> Answer | Refuse | Wait | Go:
    """What the run's record of a call says before anything else is done with it.

    A recorded deny (or halt) is final, whatever the policy says now and even if the tool
    changed; an allow holds only for the tool it was made for, as defined then (one made for
    another tool or an older definition is void). A call asked about and not decided (or whose
    allow is void) waits, whatever the policy says.
    """
    if record is None:
        return NO_RECORD
    replay = replayed(record, may_rerun=may_rerun, now=now)
    if replay is not None:
        return replay
    recorded = record.decision
    if recorded is not None and not recorded.allowed:
        return Refuse(recorded)
    if awaits_input(record):  # its server asked a question nobody has answered yet
        assert run_id is not None  # records are read in named runs only
        return Answer(_INPUT_EXPIRED) if expired(record, now) else _waits(run_id, record)
    return _deciding(record, tool, now)


def _waits(run_id: str, record: CallRecord) -> Wait:
    return Wait(request_of(run_id, record), kept=True)


def _deciding(record: CallRecord, tool: Tool, now: float) -> Answer | Go:
    """What a record that neither answers nor refuses the call says of deciding it."""
    recorded = record.decision
    this_tool = decided_for(record, tool)
    if input_resume(record) is not None and not this_tool:
        return Answer(_CHANGED_WHILE_WAITING)
    if (recorded is not None or record.state == "pending") and not this_tool:
        return Go(undecided=True, void=True)
    if recorded is None and record.state == "pending":
        if expired(record, now):
            return Answer(_REQUEST_EXPIRED)
        kept = record.kept
        if kept is None:
            return Go(undecided=True)
        return Go(undecided=True, reason=kept.reason, asked=(kept.requested_at, kept.expires_at))
    return Go(recorded=recorded)


def gate(
    go: Go, verdict: Verdict | None, *, has_approver: bool, let_run: bool = False
) -> Run | Answer | Ask:
    """What the policy's ``verdict`` (None: not asked, the policy allows everything) and
    the record's decision make of a valid call. A recorded allow still yields to a policy's
    deny. ``let_run``: the call's turn was planned already and let it run (a ticket's call),
    so a policy asking was answered then; unless the run holds it undecided since."""
    if verdict is not None and verdict.effect == "deny":
        return Answer(denied_answer(verdict))
    asked = verdict is not None and verdict.effect == "ask" and not let_run
    if not (asked or go.undecided) or go.recorded is not None:
        return RUN
    reason = verdict.reason if asked and verdict is not None else None
    if go.void:
        reason = "the tool changed since the call was decided" + (f"; {reason}" if reason else "")
    elif go.undecided:
        reason = reason or go.reason
    return Ask(reason, deferred=go.undecided and not has_approver, asked=go.asked)


def decided(decision: Decision) -> Run | Refuse:
    """An approver's decision: the call runs, or is refused."""
    return RUN if decision.allowed else Refuse(decision)


def refusal(decision: Decision) -> Answer:
    """The answer to a refused call (a halt stops the turn)."""
    reason = decision.reason or "the call was not approved"
    return Answer(
        ToolResult.error("approval_denied", f"Denied: {reason}."), halted=decision.kind == "halt"
    )


def settled(step: Answer | Refuse | Wait) -> Answer | Wait:
    """A step that answers the call now (a refusal as its answer), or puts it up waiting."""
    return refusal(step.decision) if isinstance(step, Refuse) else step


def found(
    record: CallRecord, *, fingerprint: str, run_id: str, may_rerun: bool, now: float
) -> Answer | Refuse | Wait | None:
    """What a record another worker wrote, found when claiming the call, says (``now``, the
    store's time, judges its lease): None when the call may still be claimed."""
    if record.fingerprint != fingerprint:
        # Another call holds this id in the run: its record is not this call's answer.
        return Answer(
            ToolResult.error(
                "failed",
                f"Not run: run {run_id!r} already records another call under the id "
                f"{record.call_id!r}.",
            ),
            kept=True,
        )
    replay = replayed(record, may_rerun=may_rerun, now=now)
    if replay is not None:
        return replay
    if record.state == "denied":  # tightened since it was planned
        return Refuse(record.decision or Decision("deny"))
    if record.state == "pending":
        # Another worker put it up for approval, or its server asked for input, since this
        # one planned it: it waits, here too.
        return _waits(run_id, record)
    return None
