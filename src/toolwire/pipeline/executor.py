"""The governed pipeline: every call validated, governed, run and answered exactly once.

Per call, in this order: resolve (done by the provider's parser) → validate the arguments
against the tool's original schema → before-call hooks → policy → approval → run under a
timeout → shape the result → after-call hooks. Every call of a turn gets exactly one
[`CallOutcome`][], in the model's order, whatever happens.

A turn runs in two phases: first every call is decided (validation, hooks, policy, approval),
cheaply and in order; then the approved calls run concurrently, except that a tool with
``parallel_safe=False`` runs alone (the calls before it finish first, the calls after it start
once it is done).

A turn with a ``run_id`` keeps its calls in the run store ([`toolwire.runs.store`][]): a call
already answered there is answered again from it; one still to run is claimed (moved to
``running`` by compare-and-swap, so two workers resuming the run can't both run it) just before
it runs, and its answer is stored as soon as it returns.

The [`Executor`][] composes its parts and inherits from none of them, all in
``toolwire.pipeline``: the decider (``_deciding``: phase 1, carrying out the steps of the
planner, ``_plan``, pure functions from a call and what its run's record says to a step), the
call running (``_running``: phase 2, each call claimed in its run and run by the runner,
``_runner``: limits, timeout, the handler, output caps, after-call hooks), and what a turn's run
keeps (``_keeping``); the run itself is ``toolwire.runs``. A turn's state is a ``_turns.Turn``,
which a decided step changes in one place (``Turn.apply``); the executor's settings are
``_settings``; what the model is told of a call that did not run is shaped by ``_output``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from toolwire._tracing import make_tracer
from toolwire.approval import ApprovalRequest, Approver, Decision
from toolwire.calls import RejectedCall, ToolCall
from toolwire.context import AfterHook, BeforeHook, CallContext, Veto
from toolwire.errors import ConfigurationError, ToolNotFound
from toolwire.pipeline._deciding import Decider
from toolwire.pipeline._keeping import close, keep_planned
from toolwire.pipeline._output import DEFAULT_MEDIA_LIMIT, DEFAULT_OUTPUT_LIMIT
from toolwire.pipeline._runner import Runner
from toolwire.pipeline._running import CallRunning, Claims
from toolwire.pipeline._settings import Setting, check_settings
from toolwire.pipeline._turns import CallOutcome, CallTicket, Planned, Turn, TurnPlan
from toolwire.policy import ALLOW_ALL, Policy
from toolwire.provenance import Provenance
from toolwire.runs import check_outlives, checked_wake, ledger, valid_id
from toolwire.runs.store import MemoryStore, RunStore, clock_of
from toolwire.tool import Tool
from toolwire.toolset import ToolSet, make_call

__all__ = [
    "AfterHook",
    "BeforeHook",
    "CallContext",
    "CallOutcome",
    "CallTicket",
    "Executor",
    "Veto",
    "make_call",
]

DEFAULT_LEASE = 30.0
"""Seconds a claim on a running call holds without renewal; the running worker renews it
every third of that while the call runs."""


class Executor:
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
        self._settings: dict[str, Any] = {
            name: value for name, value in locals().items() if name not in ("self", "toolset")
        }
        check_settings(**self._settings)
        self.toolset = ToolSet.of(toolset)
        self.store: RunStore = store if store is not None else MemoryStore()
        self._settings.update(
            policy=policy or ALLOW_ALL,
            store=self.store,
            before_call=tuple(before_call),
            after_call=tuple(after_call),
        )
        check_outlives(self.store, approval_ttl)
        self.on_unknown = on_unknown
        self.runner = Runner(
            timeout=timeout,
            max_concurrency=max_concurrency,
            max_concurrency_per_server=max_concurrency_per_server,
            after_call=after_call,
            max_output_chars=max_output_chars,
            max_media_chars=max_media_chars,
        )
        self.decider = Decider(
            policy=policy or ALLOW_ALL,
            approver=approver,
            before_call=before_call,
            hooked=bool(before_call or after_call),
            redact=redact,
            approval_ttl=approval_ttl,
            clock=clock_of(self.store),
        )
        self.claims = Claims(
            store=self.store,
            token=uuid.uuid4().hex[:8],
            lease=lease,
            wait_for_running=wait_for_running,
            on_interrupted=on_interrupted,
            runner=self.runner,
        )
        self.calls = CallRunning(
            runner=self.runner,
            decider=self.decider,
            claims=self.claims,
            max_concurrency=max_concurrency,
            tracer=make_tracer(tracer_provider),
            own_tracer=tracer_provider is not None,
        )

    policy: Setting[Policy] = Setting()
    """Which calls may run."""
    approver: Setting[Approver | Callable[[ApprovalRequest], Any] | None] = Setting()
    """Decides the calls the policy asks about."""
    before_call: Setting[tuple[BeforeHook, ...]] = Setting()
    """Hooks run after validation, before policy."""
    after_call: Setting[tuple[AfterHook, ...]] = Setting()
    """Hooks run on each result before it is shaped."""
    redact: Setting[Callable[[ApprovalRequest], Mapping[str, Any]] | None] = Setting()
    """What a waiting call's request keeps of its arguments."""
    approval_ttl: Setting[float | None] = Setting()
    """Seconds a request for approval waits."""
    timeout: Setting[float | None] = Setting()
    """Seconds a call may run (a tool's own ``timeout`` wins); None for no limit."""
    max_output_chars: Setting[int] = Setting()
    """Characters of text a result may give the model."""
    max_media_chars: Setting[int] = Setting()
    """Characters of base64-encoded media a result may carry."""

    def replace(self, **changes: Any) -> Executor:
        """A new executor with ``changes`` to this one's settings (any keyword argument of
        the constructor), over the same toolset and store: how a wrapper that needs another
        setting (an engine that defers approvals, say) gets one without changing the
        executor it was given. Its settings are fixed once it is made.

        Raises:
            ConfigurationError: a setting the constructor does not take, or a bad value.
        """
        unknown = sorted(set(changes) - set(self._settings))
        if unknown:
            raise ConfigurationError(f"an executor has no setting {', '.join(unknown)}")
        return Executor(self.toolset, **{**self._settings, **changes})

    @property
    def worker_id(self) -> str:
        """Who this executor is in the run store's claims: ``host:pid:token`` (the pid of the
        process it runs in now, should it be forked)."""
        return self.claims.worker_id

    # -- public ------------------------------------------------------------------------------

    async def run(
        self,
        items: Sequence[ToolCall | RejectedCall],
        *,
        run_id: str | None = None,
        principal: Any = None,
        taint: Iterable[str] = (),
        provenance: Provenance | None = None,
        deps: Any = None,
        place: str | None = None,
        resume: bool = False,
    ) -> list[CallOutcome]:
        """Run one turn's calls; one outcome per item, in order.

        Args:
            items: the calls as a provider's parser returned them (rejected ones included).
            run_id: names the turn so a retry (after [`ApprovalPending`][]) answers the
                calls that already ran from the store instead of running them again.
            principal: who the turn runs for; policies, approvers and hooks see it.
            taint: sources whose output is already in the model's context.
            provenance: what the model read and was trustingly told before the turn (see
                [`toolwire.provenance`][]): the policy sees where each call's arguments
                came from. None: nothing is kept, and a rule asking where an argument came
                from holds for every call (it fails closed).
            deps: the application's dependencies (a database, a client, settings...): what
                tools asking for a [`CallContext`][] and hooks see as its ``deps``. Never
                stored, fingerprinted or shown to the model.
            place: where the turn stands in its conversation (any string, e.g. a digest of
                the messages its response answers; ``toolwire.loop`` gives one): kept in the
                run's binding, so ``run_id`` answers no other turn.
            resume: the turn resumes a run that paused (``ApprovalPending``): the run must
                still be in the store, or nothing runs (``RunNotFound``).

        Raises:
            ApprovalPending: some calls wait for a decision; the others have run and are
                stored under ``exc.run_id``, in ``exc.store``.
            StoreUnavailable: the run store failed (see its ``outcomes``).
            ToolNotFound: only with ``on_unknown="raise"``.
            RunBindingConflict: ``run_id`` was started for another principal, other calls
                (another model response) or another place: a run id names one turn.
            RunNotFound: ``resume``, and the store no longer keeps the run.
            ConfigurationError: e.g. a policy asked for approval and there is no approver.
        """
        turn = await self.plan_turn(
            items,
            run_id=run_id,
            principal=principal,
            taint=taint,
            provenance=provenance,
            deps=deps,
            place=place,
            resume=resume,
        )
        await self.calls.run_turn(turn)
        return await close(turn, self.claims.run_of(turn) if turn.run_id else None, self.store)

    async def plan_turn(
        self,
        items: Sequence[ToolCall | RejectedCall],
        *,
        run_id: str | None = None,
        principal: Any = None,
        taint: Iterable[str] = (),
        provenance: Provenance | None = None,
        deps: Any = None,
        wake: Mapping[str, Any] | None = None,
        place: str | None = None,
        resume: bool = False,
    ) -> Turn:
        """Phase 1 of [`run`][]: every call of the turn admitted and decided, none run yet.

        Part of the engine boundary (``toolwire.integrations``): an engine that checkpoints
        each step plans the turn in one step, runs each of ``turn.planned`` in a step of its
        own ([`ticket`][], [`run_ticket`][]), and waits for the calls in ``turn.waiting``.
        ``wake`` names what waits for the turn's pending calls (kept with their requests, so a
        decision wakes it: see ``toolwire.ledger.register_waker``). ``place`` and ``resume``
        are [`run`][]'s.
        """
        if run_id is not None and not valid_id(run_id):
            raise ConfigurationError("a run id must be a string of valid Unicode text without NUL")
        if place is not None and not isinstance(place, str):
            raise ConfigurationError("a turn's place is a string")
        turn = Turn(
            items=list(items),
            run_id=run_id,
            principal=principal,
            taint=frozenset(taint),
            provenance=provenance,
            deps=deps,
            wake=checked_wake(wake) if wake is not None else None,
            place=place,
            resume=resume,
        )
        turn.outcomes = [None] * len(turn.items)
        ids = turn.admit(raise_unknown=self.on_unknown == "raise")
        if run_id is not None:  # what the run already knows, in one round trip
            turn.known = await self.claims.run_of(turn).load(ids, resume=resume)
        for index, item in enumerate(turn.items):
            if turn.outcomes[index] is None:  # (not answered on admission)
                await self._decide(turn, index, item)
        turn.end_if_halted()
        return turn

    async def plan(
        self,
        items: Sequence[ToolCall | RejectedCall],
        *,
        run_id: str,
        principal: Any = None,
        taint: Iterable[str] = (),
        provenance: Provenance | None = None,
        deps: Any = None,
        wake: Mapping[str, Any] | None = None,
        place: str | None = None,
        resume: bool = False,
        toolset: str | None = None,
    ) -> TurnPlan:
        """An engine's planning step, whole: the turn planned ([`plan_turn`][]), what it
        decided kept ([`keep_planned`][]), and a ticket for each call to run ([`ticket`][]),
        as one [`TurnPlan`][toolwire.pipeline.TurnPlan] value. The engine runs each ticket
        ([`run_ticket`][]), waits while ``plan.waiting``, then plans again with
        ``resume=True``.

        Raises:
            ConfigurationError: a planned call's arguments cannot be bound into its ticket.
            RunBindingConflict: ``run_id`` was started for another principal, calls or place.
            RunNotFound: with ``resume``, a run its store no longer keeps.
            StoreUnavailable: the run store failed.
        """
        turn = await self.plan_turn(
            items,
            run_id=run_id,
            principal=principal,
            taint=taint,
            provenance=provenance,
            deps=deps,
            wake=wake,
            place=place,
            resume=resume,
        )
        await self.keep_planned(turn, toolset=toolset)
        waiting = {index for index, _ in turn.waiting}
        return TurnPlan(
            answered={
                index: outcome
                for index, outcome in enumerate(turn.outcomes)
                if outcome is not None and index not in waiting
            },
            tickets=tuple(self.ticket(turn, planned, toolset=toolset) for planned in turn.planned),
            waiting=bool(waiting),
        )

    async def keep_planned(self, turn: Turn, *, toolset: str | None = None) -> None:
        """Store what the turn decided without running (answers, and the calls waiting for a
        decision), and the digest of each planned call's ticket (see [`run_ticket`][]), before
        any call runs: an engine's planning step ends with it. ``toolset`` names the toolset
        the tickets belong to (an engine's name for it; see [`ticket`][]).

        Raises:
            ConfigurationError: a planned call's arguments cannot be bound into its ticket
                (a before-call hook made them other than JSON): nothing is stored.
            StoreUnavailable: the run store failed.
        """
        if turn.run_id is None:
            return
        # every ticket made first: one that cannot be bound refuses the turn before any write
        digests = [
            (planned, self.ticket(turn, planned, toolset=toolset).digest())
            for planned in turn.planned
        ]
        await keep_planned(turn, self.claims.run_of(turn), digests)

    def ticket(self, turn: Turn, planned: Planned, *, toolset: str | None = None) -> CallTicket:
        """What running one planned call of a named run needs, as JSON values: an engine hands
        it to a step, or to another process through its queue ([`run_ticket`][]), in the
        ``toolset`` named (it runs in no other).

        Raises:
            ConfigurationError: the call's arguments cannot be bound into a ticket (not JSON).
        """
        assert turn.run_id is not None
        return CallTicket.of(turn.run_id, self.claims.run_of(turn).binding, turn, planned, toolset)

    async def run_ticket(
        self, ticket: CallTicket, *, deps: Any = None, toolset: str | None = None
    ) -> CallOutcome:
        """Claim, run, store and answer the call a [`ticket`][] names, here, at most once
        whoever holds the ticket (its claim in the run is the ledger's), under this executor's
        tools, limits and after-call hooks; ``toolset`` must be the one it was planned in.

        The ticket is not trusted beyond what its run keeps: the planning step kept its
        digest ([`keep_planned`][]), so a ticket changed since, or made anywhere else, runs
        nothing. What runs is decided again from the run's record (an answer kept, a refusal,
        a wait); the arguments planning made (``runs_with``) are validated and put to this
        executor's policy again. The before-call hooks do not run again.

        Raises:
            RunBindingConflict: the ticket belongs to another toolset, or its run keeps no
                such ticket (changed since its turn was planned, never planned there, or the
                run is gone from the store), or is bound to another principal or calls.
            ApprovalPending: the run holds the call waiting for a decision now.
            StoreUnavailable: the run store failed (the call's answer is on the exception).
        """
        ticket.check_toolset(toolset)  # refused before anything is read
        tool = self.toolset.get(ticket.name)
        if tool is None:
            raise ToolNotFound(ticket.name)
        run = self.claims.run_of_ticket(ticket)
        known = await run.load([ticket.call_id])  # (a run gone keeps no ticket: refused)
        ticket.check_kept(known.get(ticket.call_id), toolset)
        turn = Turn.of_ticket(ticket, tool, deps)
        turn.run, turn.known = run, known
        await self._decide(turn, 0, turn.items[0], ticketed=ticket.runs_with)
        await self.calls.run_turn(turn)
        [outcome] = await close(turn, self.claims.run_of(turn), self.store)
        return outcome

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
        self.calls.cancel(run_id)

    # -- phase 1: decide -----------------------------------------------------------------------

    async def _decide(
        self,
        turn: Turn,
        index: int,
        item: ToolCall | RejectedCall,
        *,
        ticketed: Mapping[str, Any] | None = None,
    ) -> None:
        """Decide one call of the turn, in order, and apply the step: what its run's record
        says (waited for while another live worker runs it), then the decider's validation,
        hooks, policy and approver. Nobody is asked anything once the turn is halted."""
        assert isinstance(item, ToolCall)  # rejected calls were answered on admission
        if turn.halted:
            turn.answer_halted(index, item)
            return
        record = await self.claims.record_of(turn, item) if turn.known else None
        may_rerun = False
        if record is not None:
            turn.seen[index] = record
            may_rerun = record.state == "running" and self.claims.may_rerun(item)
        step, named_run = await self.decider.decide(
            turn, index, item, record, may_rerun=may_rerun, ticketed=ticketed
        )
        turn.apply(index, step, named_run)
