"""Phase 2 of a turn: each planned call claimed in its run, run by the runner under a lease its
worker renews, and its answer stored at once (a call whose server asks for input is kept
waiting instead). Each call is its own failure boundary: whatever goes wrong is its answer."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from typing import Any, Literal

import anyio

from toolwire._tracing import global_tracing, tool_span
from toolwire._values import describe_exception
from toolwire.calls import ToolCall, ToolResult
from toolwire.context import CallContext
from toolwire.errors import ConfigurationError, StoreUnavailable
from toolwire.inputs import InputDeferred
from toolwire.pipeline._deciding import Decider
from toolwire.pipeline._keeping import keep_waiting, store_answer
from toolwire.pipeline._plan import Answer, Refuse, Wait, found, settled
from toolwire.pipeline._runner import CANCELLED, Job, Runner, unanswerable
from toolwire.pipeline._turns import CallTicket, Planned, Turn, in_groups
from toolwire.runs import HOST, UNTIMED_WAIT, CallRecord, Contended, Keep, Run, input_resume
from toolwire.runs.store import RunStore
from toolwire.tool import Tool

__all__ = ["CallRunning", "Claims"]

_UNRECORDED = ToolResult.error("unavailable", "Not run: the run's store could not record the call.")


@dataclass(frozen=True, slots=True)
class Claims:
    """How one executor claims calls in runs: who it is, its lease, and what it does with a
    call another worker runs or ran."""

    store: RunStore
    token: str
    """Tells this executor's claims from another's in the same process."""
    lease: float
    wait_for_running: float | None
    on_interrupted: Literal["error", "rerun_idempotent"]
    runner: Runner
    """Whose timeouts bound the wait for a call another worker runs."""

    @property
    def worker_id(self) -> str:
        """Who claims, in the run store: ``host:pid:token`` (the pid of the process it runs
        in now, should it be forked)."""
        return f"{HOST}:{os.getpid()}:{self.token}"

    def run_of(self, turn: Turn) -> Run:
        """The turn's run in the store (made once the turn has a run id)."""
        if turn.run is not None:  # asked for on every step of every call: no worker id made
            return turn.run
        return turn.run_in(self.store, worker=self.worker_id, lease=self.lease)

    def wait_bound(self, tool: Tool | None) -> float:
        """Seconds to wait for a call another live worker runs."""
        if self.wait_for_running is not None:
            return self.wait_for_running
        timeout = self.runner.timeout_of(tool)
        return (timeout if timeout is not None else UNTIMED_WAIT) + self.lease

    def run_of_ticket(self, ticket: CallTicket) -> Run:
        """The run a ticket names, claiming its one call as this executor."""
        return Run(
            self.store,
            ticket.run_id,
            binding=ticket.binding,
            worker=self.worker_id,
            lease=self.lease,
            positions={ticket.call_id: ticket.position} if ticket.position is not None else {},
        )

    async def record_of(self, turn: Turn, call: ToolCall) -> CallRecord | None:
        """The turn's run's record of the call, waited for while another live worker runs it.

        Raises:
            ConfigurationError: the run holds another call (other arguments) under its id.
        """
        known = turn.known.get(call.local_id)
        if known is None or turn.run is None:
            return None
        record: CallRecord | None = known
        if known.state == "running":  # another worker's, maybe: waited for while it runs
            record = await turn.run.unless_running(call.local_id, known, self.wait_bound(call.tool))
        if record is not None and record.fingerprint != turn.fingerprint(call):
            raise ConfigurationError(
                f"run {turn.run_id!r} already has a call {call.local_id!r} with other "
                "arguments; use a new run id for a new turn"
            )
        return record

    def may_rerun(self, call: ToolCall) -> bool:
        """Whether a call whose worker stopped may run again (an idempotent tool, when the
        executor says so)."""
        return self.on_interrupted == "rerun_idempotent" and call.tool.idempotent


class CallRunning:
    """Runs a turn's planned calls (see ``Executor`` for the settings).

    Args:
        runner: the limits, timeout, handler, output caps and after-call hooks.
        decider: what a call waiting for its server's input is shown as (its request).
        claims: how calls are claimed in their run.
        max_concurrency: calls running at once, across the turn.
    """

    def __init__(
        self,
        *,
        runner: Runner,
        decider: Decider,
        claims: Claims,
        max_concurrency: int,
        tracer: Any = None,
        own_tracer: bool = False,
    ) -> None:
        self.runner = runner
        self.decider = decider
        self.claims = claims
        self.max_concurrency = max_concurrency
        self.tracer = tracer
        self.own_tracer = own_tracer
        self.turns: set[Turn] = set()
        """The turns running now (what ``cancel`` reaches)."""

    async def run_turn(self, turn: Turn) -> None:
        """Run the turn's planned calls, in order of their groups (a call of a tool that is
        not ``parallel_safe`` alone); a call the turn's cancel stopped is answered cancelled."""
        if not turn.planned:
            return
        if self.tracer is not None and (self.own_tracer or global_tracing()):
            turn.tracer = self.tracer  # checked per turn: a provider installed later counts
        self.turns.add(turn)
        try:
            if len(turn.planned) == 1:  # the common turn: the call's own scope is the turn's
                await self.execute(turn, turn.planned[0])
            else:
                with anyio.CancelScope() as scope:
                    turn.scope = scope
                    for group in in_groups(turn.planned, _alone):
                        await self.run_group(turn, group)
        finally:
            turn.scope = None
            self.turns.discard(turn)
            # Paused for input, not cancelled (most turns have nothing waiting).
            waiting = {index for index, _ in turn.waiting} if turn.waiting else ()
            for planned in turn.planned:  # cancelled before finishing
                if turn.outcomes[planned.index] is None and planned.index not in waiting:
                    turn.finish(planned.index, CANCELLED)

    def cancel(self, run_id: str | None = None) -> None:
        """Cancel the turns running now (only the one named ``run_id``, when given)."""
        for turn in list(self.turns):
            if run_id is None or turn.run_id == run_id:
                turn.cancelled = True  # a call that has not started yet won't
                if turn.scope is not None:
                    turn.scope.cancel()

    async def run_group(self, turn: Turn, group: list[Planned]) -> None:
        """Run a group's calls concurrently: as many workers as the limit allows, each taking
        the next call (cheaper than a task per call for large turns)."""
        if len(group) == 1:
            await self.execute(turn, group[0])
            return
        queue = iter(group)

        async def worker() -> None:
            for planned in queue:  # shared: each call is taken by one worker
                await self.execute(turn, planned)

        async with anyio.create_task_group() as tasks:
            for _ in range(min(len(group), self.max_concurrency)):
                tasks.start_soon(worker)

    async def execute(self, turn: Turn, planned: Planned) -> None:
        """Claim, run, store and answer one call: its failure boundary. Whatever goes wrong
        in here is this call's answer; the turn's other calls are untouched."""
        if turn.run_id is None:
            try:
                result = await self._answer_of(turn, planned)
            except InputDeferred as waiting:  # kept in a run made for the turn now
                if turn.run_id is None:  # (another call of the turn may have made it already)
                    turn.run_id = f"run_{uuid.uuid4().hex}"
                await keep_waiting(
                    turn, planned, None, waiting, decider=self.decider, run=self.claims.run_of(turn)
                )
                return
            turn.finish(planned.index, result, ran=True)
            return
        try:
            claim = await self._claim(turn, planned)
        except BaseException:
            # Cancelled while its claim was written: it may be written, and nobody runs it.
            with anyio.CancelScope(shield=True):
                await self.claims.run_of(turn).end_lease_if_claimed(planned.call.local_id)
            raise
        if claim is None:
            return  # answered from the run, or not to be run
        planned.resume = input_resume(claim)
        run = self.claims.run_of(turn)
        lease = run.lease(claim)
        try:
            async with lease:
                result = await self._answer_of(turn, planned)
        except InputDeferred as waiting:
            await keep_waiting(
                turn,
                planned,
                lease.held,
                waiting,
                decider=self.decider,
                run=self.claims.run_of(turn),
            )
            return
        except BaseException:
            # Cancelled mid-call (the turn, or the task): end the lease now, so a resume
            # answers the call interrupted at once instead of waiting for it to run out.
            with anyio.CancelScope(shield=True):
                await run.end_lease(lease.held)
            raise
        result = await store_answer(
            turn, planned.index, lease.held, result, run=self.claims.run_of(turn)
        )
        turn.finish(planned.index, result, ran=True)

    async def _answer_of(self, turn: Turn, planned: Planned) -> ToolResult:
        call = planned.call
        kwargs = planned.kwargs
        if call.tool.needs_context:
            try:
                kwargs = self._injected(turn, planned)
            except _NotSupplied as exc:
                return ToolResult.error("failed", str(exc))
        job = Job(
            call=call,
            kwargs=kwargs,
            context=planned.context,
            in_flight=self._in_flight(turn, planned) if call.tool.server_id is not None else None,
        )
        try:
            if turn.tracer is None:
                return await self.runner.run(job, turn)
            with tool_span(turn.tracer, call, turn.run_id) as span:
                try:
                    return await self.runner.run(job, turn, span)
                except InputDeferred:
                    span.set_attribute("toolwire.waits_for_input", True)
                    raise
        except InputDeferred:
            raise  # the call pauses: its server waits for input
        except Exception as exc:  # toolwire's own step failed after the tool may have run
            return unanswerable(call, exc)

    def _injected(self, turn: Turn, planned: Planned) -> dict[str, Any]:
        """The keyword arguments of a tool whose function asks for its call's context, or
        whose parameters the application supplies: the validated ones, the context, and the
        supplied values, made as the call runs (a run id may have been made for the turn
        since the call was planned).

        Raises:
            _NotSupplied: a supplier failed (the call is answered so; the tool never ran).
        """
        context, function = planned.context, planned.call.tool.function
        assert context is not None  # made whenever the tool's function asks for it
        assert function is not None
        kind = function.context_type or context.__class__
        if (
            context.__class__ is not kind
            or context.run_id != turn.run_id
            or context.resume is not planned.resume
        ):
            context = kind(
                call=context.call,
                arguments=context.arguments,
                principal=turn.principal,
                run_id=turn.run_id,
                taint=turn.taint,
                deps=turn.deps,
                resume=planned.resume,
            )
        kwargs = dict(planned.kwargs)
        if function.context_parameter is not None:
            kwargs[function.context_parameter] = context
        for parameter, supplier in function.supplied:
            try:
                kwargs[parameter] = supplier(context)
            except Exception as exc:  # the application's code: the model is told, not raised
                raise _NotSupplied(
                    f"The application could not supply parameter {parameter!r} "
                    f"({describe_exception(exc)[:200]}); the tool did not run."
                ) from None
        return kwargs

    @staticmethod
    def _in_flight(turn: Turn, planned: Planned) -> CallContext:
        """What an MCP tool's handler reads while its call runs (its run, id and principal,
        and what resuming it sends its server)."""
        context = planned.context
        return CallContext(
            call=planned.call,
            arguments=context.arguments if context is not None else planned.kwargs,
            principal=turn.principal,
            run_id=turn.run_id,
            taint=turn.taint,
            deps=turn.deps,
            resume=planned.resume,
        )

    async def _claim(self, turn: Turn, planned: Planned) -> CallRecord | None:
        """Move the call to ``running`` in the run, atomically: the claim, or None when another
        worker's record answers the call (the outcome is then set)."""
        call, index = planned.call, planned.index
        run = self.claims.run_of(turn)
        fingerprint_ = turn.fingerprint(call)
        may_rerun = self.claims.may_rerun(call)

        def what_it_says(record: CallRecord) -> Answer | Refuse | Wait | None:
            # judged when the record is read: the claim may first wait for another worker
            now = run.clock.current()
            return found(
                record, fingerprint=fingerprint_, run_id=run.run_id, may_rerun=may_rerun, now=now
            )

        try:
            claimed = await run.claim(
                call,
                fingerprint_,
                planned.record,
                bound=self.claims.wait_bound(call.tool),
                claimable=lambda record: record is None or what_it_says(record) is None,
            )
        except (StoreUnavailable, Contended) as exc:
            if isinstance(exc, StoreUnavailable):
                turn.store_error = turn.store_error or exc
            turn.finish(index, _UNRECORDED)
            turn.kept.add(index)
            return None
        if isinstance(claimed, Keep):
            assert claimed.value is not None  # a call without a record may be claimed
            step = what_it_says(claimed.value)
            assert step is not None
            turn.apply(index, settled(step))
            return None
        return claimed


def _alone(planned: Planned) -> bool:
    return not planned.call.tool.parallel_safe


class _NotSupplied(Exception):
    """A parameter the application supplies could not be made."""
