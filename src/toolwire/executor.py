"""The governed pipeline: every call validated, governed, run and answered exactly once.

Per call, in this order: resolve (done by the provider's parser) → validate the arguments
against the tool's original schema → before-call hooks → policy → approval → run under a
timeout → shape the result → after-call hooks. Every call of a turn gets exactly one
:class:`CallOutcome`, in the model's order, whatever happens.

A turn runs in two phases: first every call is decided (validation, hooks, policy, approval),
cheaply and in order; then the approved calls run concurrently, except that a tool with
``parallel_safe=False`` runs alone (the calls before it finish first, the calls after it start
once it is done).

A turn with a ``run_id`` keeps its calls in the run store (:mod:`toolwire.store`): a call
already answered there is answered again from it; one still to run is claimed (moved to
``running`` by compare-and-swap, so two workers resuming the run can't both run it) just before
it runs, and its answer is stored as soon as it returns.
"""

from __future__ import annotations

import asyncio
import datetime
import inspect
import logging
import math
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext, suppress
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Literal

import anyio
import anyio.abc

from toolwire import ledger
from toolwire._tracing import end_tool_span, global_tracing, make_tracer, tool_span
from toolwire.approval import ApprovalPending, ApprovalRequest, Approver, Decision
from toolwire.calls import (
    AudioContent,
    Content,
    EmbeddedResource,
    ImageContent,
    RejectedCall,
    ResourceLink,
    TextContent,
    ToolCall,
    ToolResult,
    canonical_json,
    describe_exception,
    placeholder,
    stable_call_id,
    strip_nulls,
)
from toolwire.errors import (
    ConfigurationError,
    InvalidArguments,
    StoreUnavailable,
    ToolNotFound,
    ToolwireError,
)
from toolwire.policy import ALLOW_ALL, Policy, PolicyContext, Verdict
from toolwire.store import CallRecord, CallState, MemoryStore, RunStore
from toolwire.tool import Tool, ToolSet

__all__ = [
    "AfterHook",
    "BeforeHook",
    "CallContext",
    "CallOutcome",
    "Executor",
    "Veto",
    "make_call",
]

_log = logging.getLogger("toolwire")
"""Failures of the application's own code (hooks, policies, approvers) answered to the model
are also logged here, with their tracebacks, for the developer."""

_MESSAGE_LIMIT = 2_000
"""Characters of an exception message passed on to the model."""
DEFAULT_OUTPUT_LIMIT = 100_000
"""Characters of tool output passed on to the model before it is truncated (with a notice)."""
DEFAULT_MEDIA_LIMIT = 5 * 1024 * 1024
"""Characters of base64 media one result may carry (5 MiB: Anthropic's limit for one image)."""
_NOT_RUN = ToolResult.error("approval_denied", "Not run: an approver halted this turn.")
_CANCELLED = ToolResult.error("cancelled", "The call was cancelled before it finished.")
_SWAP_ATTEMPTS = ledger.SWAP_ATTEMPTS
DEFAULT_LEASE = 30.0
"""Seconds a claim on a running call holds without renewal; the running worker renews it
every third of that while the call runs."""
_UNTIMED_WAIT = 300.0
"""Seconds a worker waits for another's call that has no timeout, beyond its lease."""
_UNSTORED_KINDS = frozenset({"cancelled", "unavailable"})
"""Answers a run does not keep: they say what happened to this attempt, not to the call."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CallContext:
    """What hooks see about a call."""

    call: ToolCall
    arguments: Mapping[str, Any]
    """The validated arguments as the model sent them (JSON values)."""
    principal: Any
    run_id: str | None
    taint: frozenset[str]

    @property
    def tool(self) -> Tool:
        return self.call.tool


@dataclass(frozen=True, slots=True)
class Veto:
    """Returned by a before-call hook: don't run the call; the model is told ``reason``."""

    reason: str


BeforeHook = Callable[[CallContext], "Mapping[str, Any] | Veto | Awaitable[Any] | None"]
"""May return new arguments (validated again), a :class:`Veto`, or None to change nothing."""
AfterHook = Callable[[CallContext, ToolResult], "ToolResult | Awaitable[Any] | None"]
"""May return a replacement result (e.g. redacted), or None to keep it."""


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
    """Set when hooks need it."""
    record: CallRecord | None = None
    """The run's record of the call when it was planned (what the claim swaps out)."""


@dataclass(slots=True, eq=False)
class _Turn:
    items: Sequence[ToolCall | RejectedCall]
    run_id: str | None
    principal: Any
    taint: frozenset[str]
    outcomes: list[CallOutcome | None] = field(default_factory=list)
    planned: list[_Planned] = field(default_factory=list)
    pending: list[tuple[int, ApprovalRequest, Mapping[str, Any]]] = field(default_factory=list)
    """Calls waiting for a decision: index, request, and the arguments the run keeps."""
    admitted: list[ToolCall] = field(default_factory=list)
    fingerprints: dict[str, str] = field(default_factory=dict)
    """By call id, the fingerprints computed so far."""
    """The calls admitted to the turn (what its run is bound to)."""
    binding: str | None = None
    """What the run is for (see :func:`toolwire.ledger.binding_for`), once it has a run id."""
    known: dict[str, CallRecord] = field(default_factory=dict)
    """The run's records of the turn's calls when it started, by call id."""
    seen: dict[int, CallRecord] = field(default_factory=dict)
    """The records the run had of its calls when they were planned, by index."""
    settled: set[int] = field(default_factory=set)
    """Calls whose answer is already stored, or must not be."""
    store_error: StoreUnavailable | None = None
    halted: bool = False
    scope: anyio.CancelScope | None = None
    """What :meth:`Executor.cancel` cancels: the turn's scope, or a one-call turn's call's."""
    cancelled: bool = False
    tracer: Any = None
    """Where the turn's spans go; None when nothing would record them."""


_fingerprint = ledger.fingerprint


def make_call(
    toolset: ToolSet, name: str, arguments: Mapping[str, Any], *, call_id: str | None = None
) -> ToolCall:
    """A :class:`ToolCall` for the visible tool exposed as ``name``, to run directly.

    Raises:
        ToolNotFound: when no visible tool has that name.
    """
    tool = toolset[name]
    arguments = dict(arguments)
    return ToolCall(
        exposed_name=name,
        tool=tool,
        arguments=arguments,
        call_id=call_id,
        local_id=call_id or stable_call_id(name, arguments, 1),
    )


class Executor:
    """Runs a turn's calls through validation, policy, approval, timeouts and concurrency.

    Args:
        toolset: the tools calls resolve to.
        policy: which calls may run; every call may when None.
        approver: decides calls the policy marks ``ask`` (:class:`~toolwire.approval.AutoApprove`,
            :class:`~toolwire.approval.CallbackApproval`,
            :class:`~toolwire.approval.DeferredApproval`, or any callable of an
            :class:`~toolwire.approval.ApprovalRequest` returning a ``Decision`` or None).
        store: where runs remember decisions and outcomes; a bounded in-memory store by default.
        timeout: seconds a call may run (a tool's own ``timeout`` wins); None for no limit.
        max_concurrency: calls running at once, across the turn.
        max_concurrency_per_server: calls running at once per server id (tools without one
            share no limit beyond ``max_concurrency``).
        on_unknown: ``"answer"`` tells the model a tool doesn't exist; ``"raise"`` raises
            :class:`~toolwire.errors.ToolNotFound` before anything runs.
        before_call: hooks run after validation, before policy (see :data:`BeforeHook`).
        after_call: hooks run on each result before it is shaped (see :data:`AfterHook`).
        max_output_chars: characters of text a result may give the model (text parts,
            embedded resources' text, links, structured content as JSON); more is cut, with an
            explicit notice.
        max_media_chars: characters of base64-encoded media (images, audio, resource blobs) a
            result may carry; parts beyond it are left out, named in a notice.
        on_interrupted: what to do with a call the run's store shows ``running`` whose worker
            stopped (its lease ran out, or its process is gone): ``"error"`` answers it with
            an ``interrupted`` error and never runs it again; ``"rerun_idempotent"`` runs it
            again when its tool is marked ``idempotent``.
        wait_for_running: a call another live worker is running (its lease renewed) is
            waited for, polling the store, and answered with that worker's answer; this is
            the most seconds to wait. None (the default) waits up to the call's timeout plus
            one lease (300 s plus a lease for a call without a timeout). A call still running
            when the wait ends is answered ``unavailable`` (not kept by the run).
        lease: seconds a claim on a running call holds; the running worker renews it every
            third of that while the call runs, so a claim whose lease ran out belongs to a
            worker that stopped.
        approval_ttl: seconds a request for approval waits; once past, the call is answered
            ``approval_denied`` ("expired"). None: requests never expire.
        redact: called with each :class:`~toolwire.approval.ApprovalRequest` before the run
            keeps it; returns the arguments to keep (what an approval screen shows). The call
            still runs with the model's arguments.
        tracer_provider: an OpenTelemetry ``TracerProvider`` for the ``execute_tool`` spans;
            the global one when None (spans cost nothing without ``toolwire[otel]``).
    """

    def __init__(
        self,
        toolset: ToolSet | Iterable[Tool | Callable[..., Any]],
        *,
        policy: Policy | None = None,
        approver: Approver | Callable[[ApprovalRequest], Any] | None = None,
        store: RunStore | None = None,
        timeout: float | None = None,
        max_concurrency: int = 16,
        max_concurrency_per_server: int | None = None,
        on_unknown: Literal["answer", "raise"] = "answer",
        before_call: Sequence[BeforeHook] = (),
        after_call: Sequence[AfterHook] = (),
        max_output_chars: int = DEFAULT_OUTPUT_LIMIT,
        max_media_chars: int = DEFAULT_MEDIA_LIMIT,
        on_interrupted: Literal["error", "rerun_idempotent"] = "error",
        wait_for_running: float | None = None,
        lease: float = DEFAULT_LEASE,
        approval_ttl: float | None = None,
        redact: Callable[[ApprovalRequest], Mapping[str, Any]] | None = None,
        tracer_provider: Any = None,
    ) -> None:
        if on_unknown not in ("answer", "raise"):
            raise ConfigurationError(f"on_unknown is 'answer' or 'raise', not {on_unknown!r}")
        if on_interrupted not in ("error", "rerun_idempotent"):
            raise ConfigurationError(
                f"on_interrupted is 'error' or 'rerun_idempotent', not {on_interrupted!r}"
            )
        if max_output_chars < 1 or max_media_chars < 0:
            raise ConfigurationError(
                "max_output_chars must be at least 1 and max_media_chars at least 0"
            )
        if max_concurrency < 1:
            raise ConfigurationError("max_concurrency must be at least 1")
        if max_concurrency_per_server is not None and max_concurrency_per_server < 1:
            raise ConfigurationError("max_concurrency_per_server must be at least 1 (or None)")
        if wait_for_running is not None and not wait_for_running >= 0:
            raise ConfigurationError("wait_for_running must be a number of seconds, 0 or more")
        if not lease > 0:
            raise ConfigurationError("lease must be a positive number of seconds")
        if approval_ttl is not None and not approval_ttl > 0:
            raise ConfigurationError("approval_ttl must be a positive number of seconds, or None")
        if timeout is not None and not timeout > 0:
            raise ConfigurationError("timeout must be a positive number of seconds")
        self.toolset = ToolSet.of(toolset)
        self.policy = policy or ALLOW_ALL
        self.approver = approver
        self.store: RunStore = store if store is not None else MemoryStore()
        self.timeout = timeout
        self.on_unknown = on_unknown
        self.before_call = tuple(before_call)
        self.after_call = tuple(after_call)
        self.max_output_chars = max_output_chars
        self.max_media_chars = max_media_chars
        self._max_concurrency = max_concurrency
        self._limiter = anyio.Semaphore(max_concurrency)
        self._per_server = max_concurrency_per_server
        self._server_limiters: dict[str, anyio.Semaphore] = {}
        self._turns: set[_Turn] = set()
        self.on_interrupted = on_interrupted
        self.wait_for_running = wait_for_running
        self.lease = lease
        self.approval_ttl = approval_ttl
        self.redact = redact
        self._tracer = make_tracer(tracer_provider)
        self._own_tracer = tracer_provider is not None
        self._token = uuid.uuid4().hex[:8]

    # -- public ------------------------------------------------------------------------------

    @property
    def worker_id(self) -> str:
        """Who this executor is in the run store's claims: ``host:pid:token`` (the pid of the
        process it runs in now, should it be forked)."""
        return f"{_HOST}:{os.getpid()}:{self._token}"

    async def run(
        self,
        items: Sequence[ToolCall | RejectedCall],
        *,
        run_id: str | None = None,
        principal: Any = None,
        taint: Iterable[str] = (),
    ) -> list[CallOutcome]:
        """Run one turn's calls; one outcome per item, in order.

        Args:
            items: the calls as a provider's parser returned them (rejected ones included).
            run_id: names the turn so a retry (after :class:`ApprovalPending`) answers the
                calls that already ran from the store instead of running them again.
            principal: who the turn runs for; policies, approvers and hooks see it.
            taint: sources whose output is already in the model's context.

        Raises:
            ApprovalPending: some calls wait for a decision; the others have run and are
                stored under ``exc.run_id``.
            StoreUnavailable: the run store failed (see its ``outcomes``).
            ToolNotFound: only with ``on_unknown="raise"``.
            RunBindingConflict: ``run_id`` was started for another principal, or for other
                calls (another model response): a run id names one model response.
            ConfigurationError: e.g. a policy asked for approval and there is no approver.
        """
        if run_id is not None and not ledger.valid_id(run_id):
            raise ConfigurationError("a run id must be a string of valid Unicode text without NUL")
        turn = _Turn(items=list(items), run_id=run_id, principal=principal, taint=frozenset(taint))
        turn.outcomes = [None] * len(turn.items)
        ids = self._admit(turn)
        if run_id is not None:  # what the run already knows, in one round trip
            binding, records = await self.store.load(run_id, ids)
            ledger.check_binding(run_id, binding, self._binding(turn))
            turn.known = {i: r for i, r in zip(ids, records, strict=True) if r is not None}
        for index, item in enumerate(turn.items):
            if turn.outcomes[index] is not None:
                continue  # answered on admission
            if isinstance(item, RejectedCall):
                turn.outcomes[index] = CallOutcome(
                    item=item, result=ToolResult.error(item.error_kind, item.message)
                )
            elif turn.halted:  # nobody is asked anything more once a turn is halted
                if item.local_id in turn.known:  # what the run's answer replaces
                    turn.seen[index] = turn.known[item.local_id]
                self._finish(turn, index, _NOT_RUN)
            else:
                await self._plan(turn, index, item)
        if turn.halted:
            for planned in turn.planned:
                self._finish(turn, planned.index, _NOT_RUN)
        else:
            await self._run_planned(turn)
        if turn.run_id is not None and turn.store_error is None:
            try:
                await self._remember(turn)
            except StoreUnavailable as exc:
                turn.store_error = exc
        outcomes = [outcome for outcome in turn.outcomes if outcome is not None]
        if turn.store_error is not None:
            raise StoreUnavailable(
                f"{turn.store_error} (run {turn.run_id!r}; the turn's answers are in "
                "`outcomes`, but the run may not remember them)",
                outcomes=outcomes,
            ) from turn.store_error
        if turn.pending:
            assert turn.run_id is not None
            raise ApprovalPending(turn.run_id, [request for _, request, _ in turn.pending])
        return outcomes

    @staticmethod
    def _fingerprint(turn: _Turn, call: ToolCall) -> str:
        """The call's fingerprint, computed once per turn (calls are keyed by their id)."""
        known = turn.fingerprints.get(call.local_id)
        if known is None:
            known = turn.fingerprints[call.local_id] = _fingerprint(call)
        return known

    def _binding(self, turn: _Turn) -> str:
        """The turn's run binding: its principal and its admitted calls (computed once)."""
        if turn.binding is None:
            pairs = [(call.local_id, self._fingerprint(turn, call)) for call in turn.admitted]
            turn.binding = ledger.binding_for(turn.principal, pairs)
        return turn.binding

    def _admit(self, turn: _Turn) -> list[str]:
        """The ids of the turn's calls, each once: a call reusing an earlier call's id, or with
        an id no store can hold, is answered now and never run (the parsers already answer such
        calls; this holds for items built by hand too)."""
        ids: list[str] = []
        taken: set[str] = set()
        for index, item in enumerate(turn.items):
            if isinstance(item, RejectedCall):
                if self.on_unknown == "raise" and item.error_kind == "not_found":
                    raise ToolNotFound(item.name)
                continue
            if not isinstance(item, ToolCall):
                raise ConfigurationError(
                    f"a turn's items are ToolCalls or RejectedCalls, not {type(item).__name__}"
                )
            call_id = item.local_id
            problem = (
                "its id is not a string"
                if not isinstance(call_id, str)
                else f"an earlier call of this turn has the id {call_id!r}"
                if call_id in taken
                # what a store keeps (a run id may be made later in the turn, for a call that waits)
                else "its id is not valid Unicode text without NUL"
                if not ledger.valid_id(call_id)
                else None
            )
            if problem is not None:
                self._finish(
                    turn, index, ToolResult.error("invalid_arguments", f"Not run: {problem}.")
                )
                turn.settled.add(index)  # not the run's to keep: its id is not its own
                continue
            taken.add(call_id)
            ids.append(call_id)
            turn.admitted.append(item)
        return ids

    async def decide(
        self, run_id: str, call_id: str, decision: Decision, *, by: Any = None
    ) -> None:
        """Record a decision, and who made it, for a pending call of ``run_id`` (see
        :func:`toolwire.ledger.decide`)."""
        await ledger.decide(self.store, run_id, call_id, decision, by=by)

    def cancel(self, run_id: str | None = None) -> None:
        """Cancel the turns in progress (only the one named ``run_id``, when given).

        Their running calls, and those not started yet, are answered with a ``cancelled``
        error (a cancelled call's tool is cancelled, a tool of an MCP server told so); the turn
        still returns one outcome per call. A cancelled answer is not stored: a resumed run
        finds a call that was claimed as ``running`` and answers it ``interrupted``.
        """
        for turn in list(self._turns):
            if run_id is None or turn.run_id == run_id:
                turn.cancelled = True  # a call that has not started yet won't
                if turn.scope is not None:
                    turn.scope.cancel()

    # -- phase 1: decide -----------------------------------------------------------------------

    async def _plan(self, turn: _Turn, index: int, call: ToolCall) -> None:
        record = None
        if turn.known:
            assert turn.run_id is not None  # records are known of named runs only
            record = await self._unless_running(
                turn.run_id, call.local_id, turn.known.get(call.local_id), call.tool
            )
            if record is not None:
                if record.fingerprint != self._fingerprint(turn, call):
                    raise ConfigurationError(
                        f"run {turn.run_id!r} already has a call {call.local_id!r} with other "
                        "arguments; use a new run id for a new turn"
                    )
                turn.seen[index] = record
                if self._settled_by(turn, index, record):
                    return

        tool = call.tool
        # A recorded decision governs the call. A deny (or halt) is final, whatever the policy
        # says on this resume and even if the tool changed (decisions only tighten); an allow
        # holds only for the tool it was made for, as defined then: one made for another tool
        # (renamed, reordered) or an older definition is void. A call asked about and not
        # decided (or whose allow is void) waits, whatever the policy says.
        recorded = record.decision if record is not None else None
        if recorded is not None and not recorded.allowed:
            self._refuse(turn, index, recorded)
            return
        void = (
            record is not None
            and (recorded is not None or record.state == "pending")
            and not ledger.decided_for(record, tool)
        )
        if void:
            recorded = None
        elif recorded is None and record is not None and ledger.expired(record):
            self._finish(
                turn,
                index,
                ToolResult.error("approval_denied", "Denied: the approval request expired."),
            )
            return
        undecided = void or (record is not None and recorded is None and record.state == "pending")

        # Arguments a human edited are what runs, so validation, hooks and policy see them.
        edited = recorded.arguments if recorded is not None else None
        if edited is not None:
            arguments: Mapping[str, Any] = dict(edited)
        else:
            if call.null_paths:  # nulls a strict schema made the model send mean "left out"
                call = replace(call, arguments=strip_nulls(call.arguments, call.null_paths))
            arguments = call.arguments
        try:
            kwargs = tool.validate_arguments(arguments)
        except Exception as exc:
            prefix = "The approver edited the arguments: " if edited is not None else ""
            self._finish(turn, index, _invalid(tool, exc, prefix))
            return

        context = _context(turn, call, arguments) if self.before_call or self.after_call else None
        for hook in self.before_call:
            assert context is not None  # made whenever there are hooks
            try:
                answer = await _maybe_await(hook(context))
                if answer is not None and not isinstance(answer, Veto):
                    answer = dict(answer)
            except Exception as exc:  # the call's own failure: it does not run, the turn goes on
                _log.exception("a before-call hook failed on %s", call.exposed_name)
                self._finish(turn, index, _not_run("a before-call hook", exc))
                return
            if isinstance(answer, Veto):
                self._finish(turn, index, ToolResult.error("denied", answer.reason))
                return
            if answer is not None:
                arguments = answer
                try:
                    kwargs = tool.validate_arguments(arguments)
                except Exception as exc:
                    prefix = "A hook rewrote the arguments: "
                    self._finish(turn, index, _invalid(tool, exc, prefix))
                    return
                context = _context(turn, call, arguments)

        if self.policy.allows_everything and not tool.needs_approval and not undecided:
            turn.planned.append(_Planned(index, call, kwargs, context, record))
            return
        verdict = self._verdict(turn, call, arguments)
        if verdict.effect == "deny":  # a recorded allow yields to a policy's deny
            self._finish(turn, index, _denied(verdict))
            return
        if verdict.effect == "ask" or undecided:
            decision = recorded
            if decision is None:
                reason = verdict.reason if verdict.effect == "ask" else None
                if void:
                    reason = "the tool changed since the call was decided" + (
                        f"; {reason}" if reason else ""
                    )
                elif undecided and record is not None:
                    reason = reason or (record.request or {}).get("reason")
                deferred = undecided and self.approver is None
                decision = await self._ask(turn, index, call, arguments, reason, deferred=deferred)
                if decision is None:
                    return  # pending: recorded on the turn
                if decision.allowed and decision.arguments is not None:
                    # An approver answering now edited them: they run, if the policy agrees.
                    arguments = dict(decision.arguments)
                    try:
                        kwargs = tool.validate_arguments(arguments)
                    except Exception as exc:
                        prefix = "The approver edited the arguments: "
                        self._finish(turn, index, _invalid(tool, exc, prefix))
                        return
                    verdict = self._verdict(turn, call, arguments)
                    if verdict.effect == "deny":
                        self._finish(turn, index, _denied(verdict))
                        return
                    if context is not None:
                        context = _context(turn, call, arguments)
            if not decision.allowed:
                self._refuse(turn, index, decision)
                return
        turn.planned.append(_Planned(index, call, kwargs, context, record))

    def _verdict(self, turn: _Turn, call: ToolCall, arguments: Mapping[str, Any]) -> Verdict:
        try:
            return self.policy.evaluate(
                PolicyContext(
                    tool=call.tool,
                    arguments=arguments,
                    principal=turn.principal,
                    taint=turn.taint,
                    exposed_name=call.exposed_name,
                )
            )
        except Exception as exc:  # fail closed
            _log.exception("the policy failed on %s", call.exposed_name)
            return Verdict("deny", f"the policy could not be evaluated ({_short(exc)})")

    def _refuse(self, turn: _Turn, index: int, decision: Decision) -> None:
        """Answer a call an approver denied (or halted the turn on)."""
        reason = decision.reason or "the call was not approved"
        halted = decision.kind == "halt"
        turn.halted = turn.halted or halted
        self._finish(turn, index, ToolResult.error("approval_denied", f"Denied: {reason}."), halted)

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
        if record is None or record.state != "running" or not _held(record):
            return record
        deadline = time.monotonic() + self._wait_bound(tool)
        pause = 0.005
        while record is not None and record.state == "running" and _held(record):
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
        elif record.state == "running" and _held(record):
            self._finish(turn, index, _still_running(record))
        elif record.state == "running" and not self._may_rerun(item):
            # Not settled: the run keeps this verdict, so every worker gives the same answer.
            self._finish(turn, index, _interrupted(record))
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

    async def _ask(
        self,
        turn: _Turn,
        index: int,
        call: ToolCall,
        arguments: Mapping[str, Any],
        reason: str | None,
        *,
        deferred: bool = False,
    ) -> Decision | None:
        """The approver's decision on the call, or None when it waits (recorded on the turn).
        A ``deferred`` call waits without asking an immediate approver."""
        if self.approver is None and not deferred:
            raise ConfigurationError(
                f"the policy asks for approval of {call.tool.qualified_name!r} but the "
                "executor has no approver"
            )
        if turn.run_id is None:
            turn.run_id = f"run_{uuid.uuid4().hex}"
        now = time.time()
        request = ApprovalRequest(
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
        decision = None
        if self.approver is not None and not deferred:
            try:
                decision = await _maybe_await(self.approver(request))
            except ToolwireError:
                raise
            except Exception as exc:  # fail closed: an approver that fails has not approved
                _log.exception("the approver failed on %s", call.exposed_name)
                return Decision("deny", f"the approver failed ({_short(exc)})")
        if decision is None:
            try:
                kept = request.arguments if self.redact is None else self.redact(request)
                kept = dict(kept)
            except Exception as exc:  # fail closed: nothing unredacted is kept
                _log.exception("redacting the request of %s failed", call.exposed_name)
                self._finish(turn, index, _not_run("redacting its approval request", exc))
                return None
            # What the run keeps is what the application is shown: the redacted arguments.
            turn.pending.append((index, replace(request, arguments=kept), kept))
            return None
        if not isinstance(decision, Decision):
            raise ConfigurationError(
                f"an approver returned a {type(decision).__name__}, not a Decision"
            )
        return decision

    # -- phase 2: run ----------------------------------------------------------------------------

    async def _run_planned(self, turn: _Turn) -> None:
        if not turn.planned:
            return
        if self._tracer is not None and (self._own_tracer or global_tracing()):
            turn.tracer = self._tracer  # checked per turn: a provider installed later counts
        self._turns.add(turn)
        try:
            if len(turn.planned) == 1:  # the common turn: the call's own scope is the turn's
                await self._execute(turn, turn.planned[0])
            else:
                with anyio.CancelScope() as scope:
                    turn.scope = scope
                    for group in _groups(turn.planned):
                        await self._run_group(turn, group)
        finally:
            turn.scope = None
            self._turns.discard(turn)
            for planned in turn.planned:  # cancelled before finishing
                if turn.outcomes[planned.index] is None:
                    self._finish(turn, planned.index, _CANCELLED)

    async def _run_group(self, turn: _Turn, group: list[_Planned]) -> None:
        """Run a group's calls concurrently: as many workers as the limit allows, each taking
        the next call (cheaper than a task per call for large turns)."""
        if len(group) == 1:
            await self._execute(turn, group[0])
            return
        queue = iter(group)

        async def worker() -> None:
            for planned in queue:  # shared: each call is taken by one worker
                await self._execute(turn, planned)

        async with anyio.create_task_group() as tasks:
            for _ in range(min(len(group), self._max_concurrency)):
                tasks.start_soon(worker)

    async def _execute(self, turn: _Turn, planned: _Planned) -> None:
        """Claim, run, store and answer one call: its failure boundary. Whatever goes wrong
        in here is this call's answer; the turn's other calls are untouched."""
        if turn.run_id is None:
            self._finish(turn, planned.index, await self._answer_of(turn, planned))
            return
        claim = await self._claim(turn, planned)
        if claim is None:
            return  # answered from the run, or not to be run
        lease = ledger.Lease(self.store, turn.run_id, claim, self.lease)
        try:
            async with lease:
                result = await self._answer_of(turn, planned)
        except BaseException:
            # Cancelled mid-call (the turn, or the task): end the lease now, so a resume
            # answers the call interrupted at once instead of waiting for it to run out.
            with anyio.CancelScope(shield=True), suppress(Exception):
                ended = lease.held.with_(lease_until=time.time())
                await self._write_own(turn.run_id, lease.held, ended)
            raise
        result = await self._store_answer(turn, planned.index, lease.held, result)
        self._finish(turn, planned.index, result)

    async def _answer_of(self, turn: _Turn, planned: _Planned) -> ToolResult:
        try:
            if turn.tracer is None:
                return await self._run_call(turn, planned, None)
            with tool_span(turn.tracer, planned.call, turn.run_id) as span:
                return await self._run_call(turn, planned, span)
        except Exception as exc:  # toolwire's own step failed after the tool may have run
            _log.exception("answering %s failed", planned.call.exposed_name)
            return ToolResult.error(
                "failed",
                f"The call's answer could not be made ({_short(exc)}); whether it took effect "
                "is unknown.",
            )

    async def _run_call(self, turn: _Turn, planned: _Planned, span: Any) -> ToolResult:
        call = planned.call
        tool = call.tool
        if turn.cancelled:
            return _CANCELLED
        error: BaseException | None = None
        timeout = tool.timeout if tool.timeout is not None else self.timeout
        # One scope per call carries its deadline and, in a one-call turn (which opens no scope
        # of its own), the turn's cancellation: scopes are the dearest part of running a call.
        alone = turn.scope is None
        scope = (
            anyio.CancelScope(
                deadline=anyio.current_time() + timeout if timeout is not None else math.inf
            )
            if alone or timeout is not None
            else None
        )
        value: Any = None
        try:
            with scope if scope is not None else nullcontext():
                if alone:
                    turn.scope = scope
                await acquire(self._limiter)
                try:
                    server_limiter = self._server_limiter(tool)
                    if server_limiter is not None:
                        async with server_limiter:
                            value = await self._invoke(tool, planned.kwargs)
                    elif tool.is_async:  # inline: each frame in the chain costs every resume
                        assert tool.handler is not None
                        value = await tool.handler(**planned.kwargs)
                    else:
                        value = await self._invoke(tool, planned.kwargs)
                finally:
                    self._limiter.release()
            if scope is not None and scope.cancelled_caught:
                result = (
                    _CANCELLED
                    if turn.cancelled
                    else ToolResult.error(
                        "timeout",
                        f"Tool {call.exposed_name!r} timed out after {timeout:g} seconds.",
                    )
                )
            else:
                result = ToolResult.from_value(value)  # never raises: unencodable is an answer
        except Exception as exc:  # the tool raised: the model is told, the turn goes on
            error = exc
            result = ToolResult.error("failed", _failure_message(call.exposed_name, exc))
        except BaseException as exc:
            if not _raised_by_the_tool(exc):
                raise  # this task is being cancelled (or the process stopped): not the call's
            error = exc  # e.g. a tool raising CancelledError itself: a failure like any other
            result = ToolResult.error("failed", _failure_message(call.exposed_name, exc))
        if span is not None:
            end_tool_span(span, result, error)
        result = _cap_output(result, self.max_output_chars, self.max_media_chars)
        for hook in self.after_call:
            assert planned.context is not None  # made whenever there are hooks
            try:
                replaced = await _maybe_await(hook(planned.context, result))
            except Exception as exc:  # the result may be unredacted: withhold it
                _log.exception("an after-call hook failed on %s", call.exposed_name)
                return ToolResult.error(
                    "failed",
                    f"The call ran, but its result is withheld: an after-call hook failed "
                    f"({_short(exc)}).",
                )
            if replaced is not None:
                result = ToolResult.from_value(replaced)
                result = _cap_output(result, self.max_output_chars, self.max_media_chars)
        return result

    async def _invoke(self, tool: Tool, kwargs: dict[str, Any]) -> Any:
        handler = tool.handler
        if handler is None:
            raise RuntimeError(f"tool {tool.qualified_name!r} has no handler to run")
        if tool.is_async:
            return await handler(**kwargs)
        # Sync tools run in a worker thread; on timeout or cancellation the turn moves on
        # and the thread is abandoned (Python cannot stop it).
        value = await anyio.to_thread.run_sync(partial(handler, **kwargs), abandon_on_cancel=True)
        return await value if inspect.isawaitable(value) else value

    def _server_limiter(self, tool: Tool) -> anyio.Semaphore | None:
        if self._per_server is None or tool.server_id is None:
            return None
        limiter = self._server_limiters.get(tool.server_id)
        if limiter is None:
            limiter = self._server_limiters[tool.server_id] = anyio.Semaphore(self._per_server)
        return limiter

    # -- bookkeeping -----------------------------------------------------------------------------

    def _finish(self, turn: _Turn, index: int, result: ToolResult, halted: bool = False) -> None:
        turn.outcomes[index] = CallOutcome(item=turn.items[index], result=result, halted=halted)

    async def _claim(self, turn: _Turn, planned: _Planned) -> CallRecord | None:
        """Move the call to ``running`` in the run, atomically: the claim, or None when another
        worker's record answers the call (the outcome is then set)."""
        assert turn.run_id is not None
        call, index = planned.call, planned.index
        seen = planned.record
        fingerprint = self._fingerprint(turn, call)
        for _ in range(_SWAP_ATTEMPTS):
            now = time.time()
            claim = (
                # keeps the request and the decision the record carries
                seen.with_(
                    state="running",
                    owner=self.worker_id,
                    started_at=now,
                    lease_until=now + self.lease,
                )
                if seen is not None
                else CallRecord(
                    call_id=call.local_id,
                    tool=call.exposed_name,
                    fingerprint=fingerprint,
                    tool_id=call.tool.qualified_name,
                    state="running",
                    owner=self.worker_id,
                    started_at=now,
                    lease_until=now + self.lease,
                )
            )
            try:
                stored = await self.store.swap(
                    turn.run_id, seen, claim, binding=self._binding(turn)
                )
                if stored is not None:
                    return stored
                seen = await self._unless_running(  # another worker wrote first: see what
                    turn.run_id,
                    call.local_id,
                    await self.store.get(turn.run_id, call.local_id),
                    call.tool,
                )
            except StoreUnavailable as exc:
                turn.store_error = turn.store_error or exc
                break
            if seen is not None and seen.fingerprint != fingerprint:
                # Another call holds this id in the run: its record is not this call's answer.
                self._finish(
                    turn,
                    index,
                    ToolResult.error(
                        "failed",
                        f"Not run: run {turn.run_id!r} already records another call under the "
                        f"id {call.local_id!r}.",
                    ),
                )
                turn.settled.add(index)
                return None
            if seen is not None and self._settled_by(turn, index, seen):
                return None
            if seen is not None and seen.state == "denied":  # decided again since planned
                reason = seen.decision.reason if seen.decision is not None else None
                self._finish(
                    turn,
                    index,
                    ToolResult.error("approval_denied", f"Denied: {reason or 'not approved'}."),
                )
                return None
        self._finish(
            turn,
            index,
            ToolResult.error("unavailable", "Not run: the run's store could not record the call."),
        )
        turn.settled.add(index)
        return None

    async def _store_answer(
        self, turn: _Turn, index: int, claim: CallRecord, result: ToolResult
    ) -> ToolResult:
        """Record the answer of a call this worker ran, right away (a crash later in the turn
        must not make the run forget it); returns the answer to give."""
        assert turn.run_id is not None
        turn.settled.add(index)
        if result.error_kind in _UNSTORED_KINDS:
            # e.g. cancelled mid-run: the claim stays, its lease ended now, so a resume says
            # interrupted at once rather than waiting for a worker that is not running it
            with suppress(Exception):
                await self._write_own(turn.run_id, claim, claim.with_(lease_until=time.time()))
            return result
        answered = claim.with_(
            state=_answered_state(result), result=result, lease_until=None, finished_at=time.time()
        )
        try:
            # A write refused means another worker took the claim over after its lease lapsed
            # (answered it interrupted, or reran an idempotent call): its answer is the run's,
            # and so the one every worker gives.
            kept = await self._write_own(turn.run_id, claim, answered)
            if kept is not None:
                return kept
        except StoreUnavailable as exc:
            turn.store_error = turn.store_error or exc
        except Exception as exc:  # never expected: the answer could not be written
            _log.exception("storing the answer of %s failed", claim.call_id)
            result = ToolResult.error(
                "failed",
                f"The call ran, but its answer could not be stored ({_short(exc)}); it is "
                "withheld.",
            )
            try:  # release the claim with that answer, so no resume finds it running
                await self.store.swap(
                    turn.run_id, claim, answered.with_(state="failed", result=result)
                )
            except Exception as again:
                turn.store_error = turn.store_error or StoreUnavailable(
                    f"the run's store could not record call {claim.call_id!r}: {_short(again)}"
                )
        return result

    async def _write_own(
        self, run_id: str, claim: CallRecord, record: CallRecord
    ) -> ToolResult | None:
        """Replace this worker's claim with ``record``; returns the answer the run kept
        instead, when another worker answered the call meanwhile (this one's lease lapsed).

        A renewal cut off by the end of the call may have bumped the claim's version unseen:
        the claim read back is still ours if the owner and start are."""
        for _ in range(_SWAP_ATTEMPTS):
            if await self.store.swap(run_id, claim, record) is not None:
                return None
            current = await self.store.get(run_id, claim.call_id)
            if current is not None and current.result is not None:
                return current.result
            if (
                current is None
                or current.state != "running"
                or current.owner != claim.owner
                or current.started_at != claim.started_at
            ):
                return None
            claim = current
        return None

    async def _remember(self, turn: _Turn) -> None:
        """Store the answers decided without running (invalid arguments, denials...), and the
        calls waiting for a decision as pending."""
        assert turn.run_id is not None
        for index, outcome in enumerate(turn.outcomes):
            if (
                outcome is None
                or index in turn.settled
                or outcome.from_store
                or not isinstance(outcome.item, ToolCall)
                or outcome.result.error_kind in _UNSTORED_KINDS
            ):
                continue
            call = outcome.item
            seen = turn.seen.get(index)
            state, now = _answered_state(outcome.result), time.time()
            stored = await self.store.swap(
                turn.run_id,
                seen,
                seen.with_(state=state, result=outcome.result, finished_at=now, lease_until=None)
                if seen is not None
                else CallRecord(
                    call_id=call.local_id,
                    tool=call.exposed_name,
                    fingerprint=self._fingerprint(turn, call),
                    tool_id=call.tool.qualified_name,
                    state=state,
                    result=outcome.result,
                    finished_at=now,
                ),
                binding=self._binding(turn),
            )
            for _ in range(_SWAP_ATTEMPTS):
                if stored is not None:
                    break
                # Written meanwhile: another worker's answer stands, for all; a decision made
                # meanwhile does not undo this answer (the model has it), so it is stored over.
                current = await self.store.get(turn.run_id, call.local_id)
                if current is not None and current.result is not None:
                    turn.outcomes[index] = CallOutcome(
                        item=call, result=current.result, from_store=True
                    )
                    break
                if current is None or current.state == "running":
                    break  # claimed by a worker that will answer it
                stored = await self.store.swap(
                    turn.run_id,
                    current,
                    current.with_(state=state, result=outcome.result, finished_at=now),
                )
        for index, request, kept in turn.pending:
            seen = turn.seen.get(index)
            item = turn.items[index]
            assert isinstance(item, ToolCall)
            if seen is not None and seen.state == "pending" and ledger.decided_for(seen, item.tool):
                continue  # already waiting in the run, for this tool as it is
            await self.store.swap(
                turn.run_id,
                seen,
                ledger.request_record(request, item, kept),
                binding=self._binding(turn),
            )  # a failed swap: the call was decided meanwhile; the next resume reads it


_HOST = socket.gethostname()


def _held(record: CallRecord) -> bool:
    """True while a running call's claim is held: its lease not run out, its owner not a
    process of this machine known to be gone."""
    lease = record.lease_until
    return lease is not None and lease > time.time() and not _owner_gone(record.owner)


def _when(at: float | None) -> str:
    if at is None:
        return "at an unknown time"
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("at %Y-%m-%d %H:%M:%S UTC")


def _interrupted(record: CallRecord) -> ToolResult:
    """The answer to a call whose worker stopped while running it, saying what is known."""
    owner = record.owner or "an unknown worker"
    started = _when(record.started_at)
    if _owner_gone(record.owner):
        what = f"by worker {owner} {started}, whose process has stopped"
    elif record.lease_until is not None:
        ago = max(0.0, time.time() - record.lease_until)
        what = (
            f"by worker {owner} {started}; its lease ran out {ago:.0f} s ago without an "
            "answer (the worker stopped, or lost the store)"
        )
    else:
        what = f"by worker {owner} {started} and never finished (its worker stopped)"
    return ToolResult.error(
        "interrupted",
        f"The call was started {what}; it is not run again, so whether it took effect is unknown.",
    )


def _still_running(record: CallRecord) -> ToolResult:
    """The answer to a call another live worker is still running when the wait ends."""
    return ToolResult.error(
        "unavailable",
        f"The call is still running in worker {record.owner} (started "
        f"{_when(record.started_at)[3:]}); its answer will be kept in the run: resume it later.",
    )


def _owner_gone(owner: str | None) -> bool:
    """True when a claim's owner is known to be dead: a process of this machine that no longer
    exists (worker ids are ``host:pid:token``). Other machines' workers can't be checked."""
    host, _, rest = (owner or "").partition(":")
    pid = rest.partition(":")[0]
    if host != _HOST or not pid.isdigit() or os.name != "posix":
        return False  # (on Windows, os.kill would end the process, not probe it)
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # e.g. another user's process: it exists
        return False
    return False


def _raised_by_the_tool(exc: BaseException) -> bool:
    """True when an exception that is not an ``Exception`` came from the tool itself rather
    than from a cancellation of this task: a tool that raises ``CancelledError`` on its own
    must fail as its call, not cancel the turn. Interrupts and exits are never the tool's."""
    if isinstance(exc, KeyboardInterrupt | SystemExit | GeneratorExit):
        return False
    if isinstance(exc, BaseExceptionGroup):
        return all(_raised_by_the_tool(inner) for inner in exc.exceptions)
    cancelled = anyio.get_cancelled_exc_class()
    if cancelled is asyncio.CancelledError and isinstance(exc, asyncio.CancelledError):
        task = asyncio.current_task()  # a cancel scope cancelling it has asked the task
        return task is not None and task.cancelling() == 0
    return not isinstance(exc, cancelled)


def _answered_state(result: ToolResult) -> CallState:
    if result.error_kind in ("denied", "approval_denied"):
        return "denied"
    return "failed" if result.is_error else "completed"


async def acquire(limiter: anyio.Semaphore) -> None:
    """``await limiter.acquire()``, without a trip through the event loop when a token is
    free (the common case; each trip costs every call of a turn). Limits are semaphores, not
    capacity limiters: they need no per-task bookkeeping, which costs as much again."""
    try:
        limiter.acquire_nowait()
    except anyio.WouldBlock:
        await limiter.acquire()


def _context(turn: _Turn, call: ToolCall, arguments: Mapping[str, Any]) -> CallContext:
    return CallContext(
        call=call,
        arguments=arguments,
        principal=turn.principal,
        run_id=turn.run_id,
        taint=turn.taint,
    )


def _groups(planned: list[_Planned]) -> list[list[_Planned]]:
    """Consecutive parallel-safe calls run together; any other call runs alone."""
    groups: list[list[_Planned]] = []
    for item in planned:
        if item.call.tool.parallel_safe and groups and groups[-1][-1].call.tool.parallel_safe:
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _describe(exc: InvalidArguments) -> str:
    details = "; ".join(f"{path}: {message}" for path, message in exc.errors)
    return _truncate(f"Invalid arguments for {exc.tool!r}: {details}", _MESSAGE_LIMIT)


def _failure_message(name: str, exc: BaseException) -> str:
    return _truncate(f"Tool {name!r} failed: {describe_exception(exc)}", _MESSAGE_LIMIT)


def _short(exc: BaseException) -> str:
    return _truncate(describe_exception(exc), 300)


def _denied(verdict: Verdict) -> ToolResult:
    return ToolResult.error(
        "denied", f"Denied: {verdict.reason or 'the policy does not allow this call'}."
    )


def _not_run(what: str, exc: BaseException) -> ToolResult:
    return ToolResult.error("failed", f"Not run: {what} failed ({_short(exc)}).")


def _invalid(tool: Tool, exc: Exception, prefix: str) -> ToolResult:
    """The answer to a call whose arguments ``tool.validate_arguments`` refused with ``exc``."""
    if isinstance(exc, InvalidArguments):
        return ToolResult.error("invalid_arguments", prefix + _describe(exc))
    if isinstance(exc, ConfigurationError):  # the tool's own schema is broken
        return ToolResult.error("failed", _truncate(str(exc), _MESSAGE_LIMIT))
    # Never expected of a validator: the call does not run.
    _log.error("validating the arguments of %s failed", tool.qualified_name, exc_info=exc)
    return _not_run("validating its arguments", exc)


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 15] + " [truncated]"


def _json_fits(value: Any, budget: int) -> bool:
    """True when ``value``'s JSON surely has at most ``budget`` characters: an upper bound
    walked until it passes the budget, cheaper than encoding (False when unsure)."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = item.__class__
        if kind is str:
            budget -= 6 * len(item) + 2  # every character escaped, at worst
        elif kind is int:
            budget -= len(str(item))
        elif kind is float or kind is bool or item is None:
            budget -= 24
        elif kind is dict:
            budget -= 2
            for key, inner in item.items():
                if key.__class__ is not str:
                    return False
                budget -= 6 * len(key) + 4
                stack.append(inner)
        elif kind is list or kind is tuple:
            budget -= 2 + len(item)
            stack.extend(item)
        else:
            return False  # written by ``default=str``: unknown length
        if budget < 0:
            return False
    return True


def _encoded_size(data: bytes) -> int:
    return 4 * ((len(data) + 2) // 3)  # base64, as every provider receives media


def _cap_output(result: ToolResult, limit: int, media_limit: int) -> ToolResult:
    """The result within the output limits, saying what was cut: text of every kind (text
    parts, embedded resources' text, links, structured content as JSON) up to ``limit``
    characters, media (images, audio, resource blobs) up to ``media_limit`` characters of
    base64. Text is cut; a part that cannot be cut and does not fit is left out, named."""
    content = result.content
    structured = result.structured_content
    if structured is None or _json_fits(structured, limit):
        if not content:
            return result
        if len(content) == 1:  # the common case: one short text
            only = content[0]
            if isinstance(only, TextContent) and len(only.text) <= limit:
                return result
    parts = list(content)
    if structured is not None:
        encoded = canonical_json(dict(structured))
        if len(encoded) > limit:
            parts.append(TextContent(encoded))
            structured = None
    kept: list[Content] = []
    budget, media_budget = limit, media_limit
    text_total = 0
    left_out: list[str] = []
    for part in parts:
        if isinstance(part, TextContent):
            text_total += len(part.text)
            if budget > 0:
                kept.append(part if len(part.text) <= budget else TextContent(part.text[:budget]))
                budget -= min(len(part.text), budget)
            continue
        if isinstance(part, EmbeddedResource) and part.text is not None:
            size = len(part.uri) + len(part.text)
            text_total += size
            if size <= budget:
                kept.append(part)
                budget -= size
            elif budget > len(part.uri):
                kept.append(replace(part, text=part.text[: budget - len(part.uri)]))
                budget = 0
            continue
        if isinstance(part, ResourceLink):
            size = sum(
                len(x or "") for x in (part.uri, part.name, part.mime_type, part.description)
            )
            text_total += size
            if size <= budget:
                kept.append(part)
                budget -= size
            else:
                left_out.append(f"a resource link of {size} characters")
            continue
        data = part.data if isinstance(part, ImageContent | AudioContent) else part.blob
        size = _encoded_size(data or b"")
        if size <= media_budget:
            kept.append(part)
            media_budget -= size
        else:
            left_out.append(f"{placeholder(part)} ({size} characters as base64)")
    if text_total <= limit and not left_out and structured is result.structured_content:
        return result
    if text_total > limit:
        kept.append(TextContent(f"[truncated: {limit} of {text_total} characters shown]"))
    if left_out:
        kept.append(
            TextContent(
                f"[left out, over the output limits ({limit} characters of text, {media_limit} "
                f"of media): "
                + "; ".join(left_out[:10])
                + (" ..." if len(left_out) > 10 else "")
                + "]"
            )
        )
    return ToolResult(
        content=tuple(kept),
        structured_content=structured,
        is_error=result.is_error,
        error_kind=result.error_kind,
    )
