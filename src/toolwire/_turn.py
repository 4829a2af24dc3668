"""What a turn is made of (its calls, their plans and outcomes) and what the executor's parts
(planning, running, the run's records) share."""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import anyio
import anyio.abc

from toolwire import ledger
from toolwire._output import _log, _not_run
from toolwire.approval import ApprovalRequest, Approver, Decision
from toolwire.calls import RejectedCall, ToolCall, ToolResult
from toolwire.context import AfterHook, BeforeHook, CallContext
from toolwire.errors import StoreUnavailable
from toolwire.policy import Policy
from toolwire.store import CallRecord, RunStore
from toolwire.tool import Tool, ToolSet

_NOT_RUN = ToolResult.error("approval_denied", "Not run: an approver halted this turn.")
_CANCELLED = ToolResult.error("cancelled", "The call was cancelled before it finished.")
_UNSTORED_KINDS = frozenset({"cancelled", "unavailable"})
"""Answers a run does not keep: they say what happened to this attempt, not to the call."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CallOutcome:
    """How one call of a turn ended."""

    item: ToolCall | RejectedCall
    """The call as parsed (a rejected one never resolved to a tool)."""
    result: ToolResult
    """What the model is told; ``result.error_kind`` says why a call failed."""
    from_store: bool = False
    """True when the answer came from the run's store (the call had already been answered)."""
    halted: bool = False
    """True for the call an approver answered with deny-and-halt."""
    ran: bool = False
    """True when this turn ran the tool (its answer may carry what the tool produced, even
    when it is an error)."""

    @property
    def call_id(self) -> str | None:
        """The provider's id for the call, if it sent one."""
        return self.item.call_id


@dataclass(slots=True)
class _Planned:
    index: int
    call: ToolCall
    kwargs: dict[str, Any]
    context: CallContext | None
    """Set when hooks, or the tool's function, need it."""
    record: CallRecord | None = None
    """The run's record of the call when it was planned (what the claim swaps out)."""
    resume: Mapping[str, Any] | None = None
    """For a call that waited for input its server asked for, the answers to continue it with
    (see [`toolwire.ledger.input_resume`][]), read from its claim."""


@dataclass(slots=True, eq=False)
class _Turn:
    items: Sequence[ToolCall | RejectedCall]
    run_id: str | None
    principal: Any
    taint: frozenset[str]
    deps: Any = None
    """What the turn's tools and hooks are given as ``CallContext.deps``; never stored."""
    outcomes: list[CallOutcome | None] = field(default_factory=list)
    planned: list[_Planned] = field(default_factory=list)
    pending: list[tuple[int, ApprovalRequest]] = field(default_factory=list)
    """Calls waiting for a decision: index, and the request as the run keeps it (its arguments
    redacted)."""
    admitted: list[ToolCall] = field(default_factory=list)
    fingerprints: dict[str, str] = field(default_factory=dict)
    """By call id, the fingerprints computed so far."""
    """The calls admitted to the turn (what its run is bound to)."""
    binding: str | None = None
    """What the run is for (see [`toolwire.ledger.binding_for`][]), once it has a run id."""
    known: dict[str, CallRecord] = field(default_factory=dict)
    """The run's records of the turn's calls when it started, by call id."""
    seen: dict[int, CallRecord] = field(default_factory=dict)
    """The records the run had of its calls when they were planned, by index."""
    settled: set[int] = field(default_factory=set)
    """Calls whose answer is already stored, or must not be."""
    store_error: StoreUnavailable | None = None
    halted: bool = False
    scope: anyio.CancelScope | None = None
    """What [`Executor.cancel`][] cancels: the turn's scope, or a one-call turn's call's."""
    cancelled: bool = False
    tracer: Any = None
    """Where the turn's spans go; None when nothing would record them."""


def _context(turn: _Turn, call: ToolCall, arguments: Mapping[str, Any]) -> CallContext:
    return CallContext(
        call=call,
        arguments=arguments,
        principal=turn.principal,
        run_id=turn.run_id,
        taint=turn.taint,
        deps=turn.deps,
    )


def _injected(turn: _Turn, planned: _Planned) -> dict[str, Any]:
    """The keyword arguments of a tool whose function asks for its call's context: the
    validated ones and the context, made as the call runs (a run id may have been made for the
    turn since the call was planned)."""
    context, function = planned.context, planned.call.tool.function
    assert context is not None  # made whenever the tool's function asks for it
    assert function is not None
    assert function.context_parameter is not None
    assert function.context_type is not None
    kind = function.context_type
    if context.__class__ is not kind or context.run_id != turn.run_id:
        context = kind(
            call=context.call,
            arguments=context.arguments,
            principal=turn.principal,
            run_id=turn.run_id,
            taint=turn.taint,
            deps=turn.deps,
            resume=planned.resume,
        )
    return {**planned.kwargs, function.context_parameter: context}


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


_UNTIMED_WAIT = 300.0
"""Seconds a worker waits for another's call that has no timeout, beyond its lease."""


class _Pipeline:
    """What the executor's parts share: its settings (set by [`Executor`][toolwire.Executor]) and
    the bookkeeping of a turn's outcomes."""

    toolset: ToolSet
    policy: Policy
    approver: Approver | Callable[[ApprovalRequest], Any] | None
    store: RunStore
    timeout: float | None
    on_unknown: Literal["answer", "raise"]
    before_call: tuple[BeforeHook, ...]
    after_call: tuple[AfterHook, ...]
    max_output_chars: int
    max_media_chars: int
    on_interrupted: Literal["error", "rerun_idempotent"]
    wait_for_running: float | None
    lease: float
    approval_ttl: float | None
    redact: Callable[[ApprovalRequest], Mapping[str, Any]] | None
    _max_concurrency: int
    _limiter: anyio.Semaphore
    _per_server: int | None
    _server_limiters: dict[str, anyio.Semaphore]
    _turns: set[_Turn]
    _tracer: Any
    _own_tracer: bool
    _token: str

    @staticmethod
    def _fingerprint(turn: _Turn, call: ToolCall) -> str:
        """The call's fingerprint, computed once per turn (calls are keyed by their id)."""
        known = turn.fingerprints.get(call.local_id)
        if known is None:
            known = turn.fingerprints[call.local_id] = ledger.fingerprint(call)
        return known

    def _binding(self, turn: _Turn) -> str:
        """The turn's run binding: its principal and its admitted calls (computed once)."""
        if turn.binding is None:
            pairs = [(call.local_id, self._fingerprint(turn, call)) for call in turn.admitted]
            turn.binding = ledger.binding_for(turn.principal, pairs)
        return turn.binding

    def _request(
        self, turn: _Turn, call: ToolCall, arguments: Mapping[str, Any], reason: str | None
    ) -> ApprovalRequest:
        """What a human is shown of a call that waits in the turn's run (from now, until the
        executor's ``approval_ttl``)."""
        assert turn.run_id is not None
        now = time.time()
        return ApprovalRequest(
            run_id=turn.run_id,
            call_id=call.local_id,
            tool=call.tool,
            exposed_name=call.exposed_name,
            arguments=arguments,
            principal=turn.principal,
            reason=reason,
            requested_at=now,
            expires_at=now + self.approval_ttl if self.approval_ttl is not None else None,
        )

    def _kept(self, turn: _Turn, index: int, request: ApprovalRequest) -> ApprovalRequest | None:
        """``request`` as the run keeps it, which is what the application is shown: its
        arguments passed through ``redact``; None, with the call answered, when that fails."""
        try:
            kept = request.arguments if self.redact is None else self.redact(request)
            kept = dict(kept)
        except Exception as exc:  # fail closed: nothing unredacted is kept
            _log.exception("redacting the request of %s failed", request.exposed_name)
            self._finish(turn, index, _not_run("redacting its request", exc))
            return None
        return replace(request, arguments=kept)

    def _refuse(self, turn: _Turn, index: int, decision: Decision) -> None:
        """Answer a call an approver denied (or halted the turn on)."""
        reason = decision.reason or "the call was not approved"
        halted = decision.kind == "halt"
        turn.halted = turn.halted or halted
        self._finish(turn, index, ToolResult.error("approval_denied", f"Denied: {reason}."), halted)

    def _finish(
        self, turn: _Turn, index: int, result: ToolResult, halted: bool = False, ran: bool = False
    ) -> None:
        turn.outcomes[index] = CallOutcome(
            item=turn.items[index], result=result, halted=halted, ran=ran
        )

    @property
    def worker_id(self) -> str:
        """Who this executor is in the run store's claims: ``host:pid:token`` (the pid of the
        process it runs in now, should it be forked)."""
        return f"{ledger.HOST}:{os.getpid()}:{self._token}"

    # -- what the run's record of a call says ---------------------------------------------------

    def _wait_bound(self, tool: Tool | None) -> float:
        if self.wait_for_running is not None:
            return self.wait_for_running
        timeout = tool.timeout if tool is not None and tool.timeout is not None else self.timeout
        return (timeout if timeout is not None else _UNTIMED_WAIT) + self.lease

    async def _unless_running(
        self, run_id: str, call_id: str, record: CallRecord | None, tool: Tool | None
    ) -> CallRecord | None:
        """``record`` as read, or, when another live worker is running the call (its lease
        renewed), the record it leaves once it is done, polled for up to the wait bound."""
        if record is None or record.state != "running" or not ledger.held(record):
            return record
        deadline = time.monotonic() + self._wait_bound(tool)
        pause = 0.005
        while record is not None and record.state == "running" and ledger.held(record):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await anyio.sleep(min(pause, left))
            pause = min(pause * 2, 0.25)
            record = await self.store.get(run_id, call_id)
        return record

    def _settled_by(self, turn: _Turn, index: int, record: CallRecord) -> bool:
        """Answer the call from its record when the record says how; False to go on."""
        item = turn.items[index]
        if record.result is not None:
            halted = record.decision is not None and record.decision.kind == "halt"
            turn.halted = turn.halted or halted  # a replayed halt still stops the turn
            turn.outcomes[index] = CallOutcome(
                item=item, result=record.result, from_store=True, halted=halted
            )
        elif record.state == "running" and ledger.held(record):
            self._finish(turn, index, ledger.still_running_answer(record))
        elif record.state == "running" and not self._may_rerun(item):
            # Not settled: the run keeps this verdict, so every worker gives the same answer.
            self._finish(turn, index, ledger.interrupted_answer(record))
            return True
        else:
            return False
        turn.settled.add(index)
        return True

    def _may_rerun(self, item: ToolCall | RejectedCall) -> bool:
        return (
            self.on_interrupted == "rerun_idempotent"
            and isinstance(item, ToolCall)
            and item.tool.idempotent
        )
