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
import inspect
import logging
import math
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Literal

import anyio
import anyio.abc

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
    has_lone_surrogate,
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
_INTERRUPTED = ToolResult.error(
    "interrupted",
    "The call was started earlier and never finished (its worker stopped); it is not run "
    "again, so whether it took effect is unknown.",
)
_SWAP_ATTEMPTS = 8
"""Compare-and-swap retries before a store write gives up (each retry means another worker
wrote the same call in between; more than a few is a store out of order)."""
_UNSTORED_KINDS = frozenset({"cancelled", "interrupted", "unavailable"})
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
    pending: list[tuple[int, ApprovalRequest]] = field(default_factory=list)
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


def _fingerprint(call: ToolCall) -> str:
    """The call's tool and arguments, hashed (stripped nulls don't count)."""
    arguments = strip_nulls(call.arguments, call.null_paths) if call.null_paths else call.arguments
    return stable_call_id(call.exposed_name, arguments, 0)


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
        on_interrupted: what to do with a call the run's store shows ``running`` when a turn
            resumes (a worker stopped while running it, or is running it now):
            ``"error"`` answers it with an ``interrupted`` error and never runs it again;
            ``"rerun_idempotent"`` runs it again when its tool is marked ``idempotent``.
        wait_for_running: seconds to wait, polling the store, for a call another worker is
            running to be answered, before treating it as interrupted (for duplicate requests
            resuming the same run at once); 0 does not wait.
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
        wait_for_running: float = 0.0,
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
        if not wait_for_running >= 0:
            raise ConfigurationError("wait_for_running must be a number of seconds, 0 or more")
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
            ConfigurationError: e.g. a policy asked for approval and there is no approver.
        """
        if run_id is not None and (not isinstance(run_id, str) or has_lone_surrogate(run_id)):
            raise ConfigurationError("a run id must be a string of valid Unicode text")
        turn = _Turn(items=list(items), run_id=run_id, principal=principal, taint=frozenset(taint))
        turn.outcomes = [None] * len(turn.items)
        ids = self._admit(turn)
        if run_id is not None:  # what the run already knows, in one round trip
            records = await self.store.get_many(run_id, ids)
            turn.known = {i: r for i, r in zip(ids, records, strict=True) if r is not None}
        for index, item in enumerate(turn.items):
            if turn.outcomes[index] is not None:
                continue  # answered on admission
            if isinstance(item, RejectedCall):
                turn.outcomes[index] = CallOutcome(
                    item=item, result=ToolResult.error(item.error_kind, item.message)
                )
            elif turn.halted:  # nobody is asked anything more once a turn is halted
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
            raise ApprovalPending(turn.run_id, [request for _, request in turn.pending])
        return outcomes

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
                else "its id is not valid Unicode text"  # a store keeps ids as UTF-8 text
                if turn.run_id is not None and has_lone_surrogate(call_id)
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
        return ids

    async def decide(self, run_id: str, call_id: str, decision: Decision) -> None:
        """Record a decision for a pending call of ``run_id`` (see :class:`ApprovalPending`).

        Raises:
            ToolwireError: when the run has no such call waiting (a decided call that has not
                run yet may be decided again).
            StoreUnavailable: the run store cannot be reached.
        """
        if not isinstance(decision, Decision):
            raise ConfigurationError(f"a decision is a Decision, not a {type(decision).__name__}")
        for value in (run_id, call_id):
            if not isinstance(value, str) or has_lone_surrogate(value):
                raise ConfigurationError("run and call ids are strings of valid Unicode text")
        state: CallState = "approved" if decision.allowed else "denied"
        for _ in range(_SWAP_ATTEMPTS):
            record = await self.store.get(run_id, call_id)
            if (
                record is None
                or record.result is not None
                or record.state not in ("pending", "approved", "denied")
            ):
                raise ToolwireError(f"run {run_id!r} has no call {call_id!r} waiting for approval")
            changed = record.with_(state=state, decision=decision)
            if await self.store.swap(run_id, record, changed) is not None:
                return
        raise ToolwireError(f"run {run_id!r}: call {call_id!r} kept changing; decide again")

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
                turn.run_id, call.local_id, turn.known.get(call.local_id)
            )
            if record is not None:
                if record.fingerprint != _fingerprint(call):
                    raise ConfigurationError(
                        f"run {turn.run_id!r} already has a call {call.local_id!r} with other "
                        "arguments; use a new run id for a new turn"
                    )
                turn.seen[index] = record
                if self._settled_by(turn, index, record):
                    return

        tool = call.tool
        if call.null_paths:  # nulls a strict schema made the model send mean "left out"
            call = replace(call, arguments=strip_nulls(call.arguments, call.null_paths))
        try:
            kwargs = tool.validate_arguments(call.arguments)
        except Exception as exc:
            self._finish(turn, index, _invalid(tool, exc, ""))
            return

        arguments: Mapping[str, Any] = call.arguments
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

        recorded = record.decision if record is not None else None
        if recorded is not None and not recorded.allowed:
            # A human's deny (or halt) is final, whatever the policy says on this resume.
            self._refuse(turn, index, recorded)
            return
        if self.policy.allows_everything and not tool.needs_approval:
            turn.planned.append(_Planned(index, call, kwargs, context, record))
            return
        try:
            verdict = self.policy.evaluate(
                PolicyContext(
                    tool=tool,
                    arguments=arguments,
                    principal=turn.principal,
                    taint=turn.taint,
                    exposed_name=call.exposed_name,
                )
            )
        except Exception as exc:  # fail closed
            _log.exception("the policy failed on %s", call.exposed_name)
            verdict = Verdict("deny", f"the policy could not be evaluated ({_short(exc)})")
        if verdict.effect == "deny":
            self._finish(
                turn,
                index,
                ToolResult.error(
                    "denied", f"Denied: {verdict.reason or 'the policy does not allow this call'}."
                ),
            )
            return
        if verdict.effect == "ask":
            decision = record.decision if record is not None else None
            if decision is None:
                decision = await self._ask(turn, index, call, arguments, verdict.reason)
            if decision is None:
                return  # pending: recorded on the turn
            if not decision.allowed:
                self._refuse(turn, index, decision)
                return
        turn.planned.append(_Planned(index, call, kwargs, context, record))

    def _refuse(self, turn: _Turn, index: int, decision: Decision) -> None:
        """Answer a call an approver denied (or halted the turn on)."""
        reason = decision.reason or "the call was not approved"
        halted = decision.kind == "halt"
        turn.halted = turn.halted or halted
        self._finish(turn, index, ToolResult.error("approval_denied", f"Denied: {reason}."), halted)

    async def _unless_running(
        self, run_id: str, call_id: str, record: CallRecord | None
    ) -> CallRecord | None:
        """``record`` as read, or, when another worker is running the call, the record it
        leaves once it is done (waited for up to ``wait_for_running``, polling the store)."""
        if record is None or record.state != "running" or self.wait_for_running <= 0:
            return record
        deadline = time.monotonic() + self.wait_for_running
        pause = 0.005
        while record is not None and record.state == "running":
            left = deadline - time.monotonic()
            if left <= 0 or _owner_gone(record.owner):
                break
            await anyio.sleep(min(pause, left))
            pause = min(pause * 2, 0.1)
            record = await self.store.get(run_id, call_id)
        return record

    def _settled_by(self, turn: _Turn, index: int, record: CallRecord) -> bool:
        """Answer the call from its record when the record says how; False to go on."""
        item = turn.items[index]
        if record.result is not None:
            turn.outcomes[index] = CallOutcome(item=item, result=record.result, from_store=True)
        elif record.state == "running" and not self._may_rerun(item):
            self._finish(turn, index, _INTERRUPTED)
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
    ) -> Decision | None:
        if self.approver is None:
            raise ConfigurationError(
                f"the policy asks for approval of {call.tool.qualified_name!r} but the "
                "executor has no approver"
            )
        if turn.run_id is None:
            turn.run_id = f"run_{uuid.uuid4().hex}"
        request = ApprovalRequest(
            run_id=turn.run_id,
            call_id=call.local_id,
            tool=call.tool,
            exposed_name=call.exposed_name,
            arguments=arguments,
            principal=turn.principal,
            reason=reason,
        )
        try:
            decision = await _maybe_await(self.approver(request))
        except ToolwireError:
            raise
        except Exception as exc:  # fail closed: an approver that fails has not approved
            _log.exception("the approver failed on %s", call.exposed_name)
            return Decision("deny", f"the approver failed ({_short(exc)})")
        if decision is None:
            turn.pending.append((index, request))
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
        claim = None
        if turn.run_id is not None:
            claim = await self._claim(turn, planned)
            if claim is None:
                return  # answered from the run, or not to be run
        try:
            if turn.tracer is None:
                result = await self._run_call(turn, planned, None)
            else:
                with tool_span(turn.tracer, planned.call, turn.run_id) as span:
                    result = await self._run_call(turn, planned, span)
        except Exception as exc:  # toolwire's own step failed after the tool may have run
            _log.exception("answering %s failed", planned.call.exposed_name)
            result = ToolResult.error(
                "failed",
                f"The call's answer could not be made ({_short(exc)}); whether it took effect "
                "is unknown.",
            )
        if claim is not None:
            result = await self._store_answer(turn, planned.index, claim, result)
        self._finish(turn, planned.index, result)

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
        fingerprint = _fingerprint(call)
        for _ in range(_SWAP_ATTEMPTS):
            claim = CallRecord(
                call_id=call.local_id,
                tool=call.exposed_name,
                fingerprint=fingerprint,
                state="running",
                decision=seen.decision if seen is not None else None,
                owner=self.worker_id,
                started_at=time.time(),
            )
            try:
                stored = await self.store.swap(turn.run_id, seen, claim)
                if stored is not None:
                    return stored
                seen = await self._unless_running(  # another worker wrote first: see what
                    turn.run_id, call.local_id, await self.store.get(turn.run_id, call.local_id)
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
            return result  # e.g. cancelled mid-run: the claim stays, a resume says interrupted
        answered = claim.with_(
            state=_answered_state(result), result=result, owner=None, started_at=None
        )
        try:
            # A failed swap means another worker took the claim over (an idempotent rerun):
            # its answer is the run's.
            await self.store.swap(turn.run_id, claim, answered)
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
            await self.store.swap(
                turn.run_id,
                seen,
                CallRecord(
                    call_id=call.local_id,
                    tool=call.exposed_name,
                    fingerprint=_fingerprint(call),
                    state=_answered_state(outcome.result),
                    decision=seen.decision if seen is not None else None,
                    result=outcome.result,
                ),
            )  # a failed swap: another worker answered it first, and that answer stands
        for index, request in turn.pending:
            if index in turn.seen:
                continue  # already pending in the run
            item = turn.items[index]
            assert isinstance(item, ToolCall)
            await self.store.swap(
                turn.run_id,
                None,
                CallRecord(
                    call_id=request.call_id,
                    tool=request.exposed_name,
                    fingerprint=_fingerprint(item),
                    state="pending",
                ),
            )


_HOST = socket.gethostname()


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
