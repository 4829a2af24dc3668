"""The governed pipeline: every call validated, governed, run and answered exactly once.

Per call, in this order: resolve (done by the provider's parser) → validate the arguments
against the tool's original schema → before-call hooks → policy → approval → run under a
timeout → shape the result → after-call hooks. Every call of a turn gets exactly one
[`CallOutcome`][], in the model's order, whatever happens.

A turn runs in two phases: first every call is decided (validation, hooks, policy, approval),
cheaply and in order; then the approved calls run concurrently, except that a tool with
``parallel_safe=False`` runs alone (the calls before it finish first, the calls after it start
once it is done).

A turn with a ``run_id`` keeps its calls in the run store ([`toolwire.store`][]): a call
already answered there is answered again from it; one still to run is claimed (moved to
``running`` by compare-and-swap, so two workers resuming the run can't both run it) just before
it runs, and its answer is stored as soon as it returns.

The executor is split along these seams: ``toolwire._planning`` decides (phase 1),
``toolwire._running`` runs and keeps the run's records (phase 2), [`toolwire.ledger`][] is
the run ledger's protocol (fingerprints, bindings, requests, leases, deciding, listing,
history), and ``toolwire._output`` shapes what the model is told. This module holds the
public [`Executor`][]: its options, admission of a turn's calls, and the turn itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import anyio
import anyio.abc

from toolwire import ledger
from toolwire._output import DEFAULT_MEDIA_LIMIT, DEFAULT_OUTPUT_LIMIT
from toolwire._planning import _Planning
from toolwire._running import _Running
from toolwire._tracing import make_tracer
from toolwire._turn import _NOT_RUN, AfterHook, BeforeHook, CallContext, CallOutcome, Veto, _Turn
from toolwire.approval import ApprovalPending, ApprovalRequest, Approver, Decision
from toolwire.calls import CallIds, RejectedCall, ToolCall, ToolResult
from toolwire.errors import ConfigurationError, StoreUnavailable, ToolNotFound
from toolwire.policy import ALLOW_ALL, Policy
from toolwire.store import MemoryStore, RunStore
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


_SWAP_ATTEMPTS = ledger.SWAP_ATTEMPTS
DEFAULT_LEASE = 30.0
"""Seconds a claim on a running call holds without renewal; the running worker renews it
every third of that while the call runs."""


def make_call(
    toolset: ToolSet, name: str, arguments: Mapping[str, Any], *, call_id: str | None = None
) -> ToolCall:
    """A [`ToolCall`][] for the visible tool exposed as ``name``, to run directly.

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
        local_id=call_id or CallIds().make(name, arguments),  # as a parser makes one
    )


class Executor(_Planning, _Running):
    """Runs a turn's calls through validation, policy, approval, timeouts and concurrency.

    Args:
        toolset: the tools calls resolve to.
        policy: which calls may run; every call may when None.
        approver: decides calls the policy marks ``ask``
            ([`AutoApprove`][toolwire.approval.AutoApprove],
            [`CallbackApproval`][toolwire.approval.CallbackApproval],
            [`DeferredApproval`][toolwire.approval.DeferredApproval], or any callable of an
            [`ApprovalRequest`][toolwire.approval.ApprovalRequest] returning a ``Decision``
            or None).
        store: where runs remember decisions and outcomes; a bounded in-memory store by default.
        timeout: seconds a call may run (a tool's own ``timeout`` wins); None for no limit.
        max_concurrency: calls running at once, across the turn.
        max_concurrency_per_server: calls running at once per server id (tools without one
            share no limit beyond ``max_concurrency``).
        on_unknown: ``"answer"`` tells the model a tool doesn't exist; ``"raise"`` raises
            [`ToolNotFound`][toolwire.errors.ToolNotFound] before anything runs.
        before_call: hooks run after validation, before policy (see [`BeforeHook`][]).
        after_call: hooks run on each result before it is shaped (see [`AfterHook`][]).
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
        redact: called with each [`ApprovalRequest`][toolwire.approval.ApprovalRequest] before
            the run keeps it; returns the arguments to keep (what an approval screen shows).
            The call still runs with the model's arguments.
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

    async def run(
        self,
        items: Sequence[ToolCall | RejectedCall],
        *,
        run_id: str | None = None,
        principal: Any = None,
        taint: Iterable[str] = (),
        deps: Any = None,
    ) -> list[CallOutcome]:
        """Run one turn's calls; one outcome per item, in order.

        Args:
            items: the calls as a provider's parser returned them (rejected ones included).
            run_id: names the turn so a retry (after [`ApprovalPending`][]) answers the
                calls that already ran from the store instead of running them again.
            principal: who the turn runs for; policies, approvers and hooks see it.
            taint: sources whose output is already in the model's context.
            deps: the application's dependencies (a database, a client, settings...): what
                tools asking for a [`CallContext`][] and hooks see as its ``deps``. Never
                stored, fingerprinted or shown to the model.

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
        turn = _Turn(
            items=list(items),
            run_id=run_id,
            principal=principal,
            taint=frozenset(taint),
            deps=deps,
        )
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
        [`toolwire.ledger.decide`][])."""
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

    # -- phase 2: run ----------------------------------------------------------------------------

    # -- bookkeeping -----------------------------------------------------------------------------
