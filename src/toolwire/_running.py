"""Phase 2 of a turn: the approved calls run, in groups, under the limits, timeouts and
cancel scopes; with a run id each is claimed in the run first (its lease renewed while it runs)
and its answer recorded as soon as it returns."""

from __future__ import annotations

import asyncio
import inspect
import math
import time
import uuid
from contextlib import nullcontext, suppress
from dataclasses import replace
from functools import partial
from typing import Any

import anyio
import anyio.abc

from toolwire import ledger
from toolwire._limits import acquire
from toolwire._output import _cap_output, _failure_message, _log, _short
from toolwire._tracing import end_tool_span, global_tracing, tool_span
from toolwire._turn import (
    _CANCELLED,
    _UNSTORED_KINDS,
    CallOutcome,
    _injected,
    _maybe_await,
    _Pipeline,
    _Planned,
    _Turn,
)
from toolwire.approval import Decision
from toolwire.calls import ToolCall, ToolResult
from toolwire.context import CallContext, current_call
from toolwire.errors import StoreUnavailable
from toolwire.inputs import InputDeferred
from toolwire.store import CallRecord
from toolwire.tool import Tool

_SWAP_ATTEMPTS = ledger.SWAP_ATTEMPTS


class _Running(_Pipeline):
    """Runs a turn's planned calls and keeps the run's records (see
    [`Executor`][toolwire.Executor])."""

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
            # Paused for input, not cancelled (most turns have nothing waiting).
            waiting = {index for index, _ in turn.pending} if turn.pending else ()
            for planned in turn.planned:  # cancelled before finishing
                if turn.outcomes[planned.index] is None and planned.index not in waiting:
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
            try:
                result = await self._answer_of(turn, planned)
            except InputDeferred as waiting:  # kept in a run made for the turn now
                if turn.run_id is None:  # (another call of the turn may have made it already)
                    turn.run_id = f"run_{uuid.uuid4().hex}"
                await self._keep_waiting(turn, planned, None, waiting)
                return
            self._finish(turn, planned.index, result, ran=True)
            return
        claim = await self._claim(turn, planned)
        if claim is None:
            return  # answered from the run, or not to be run
        planned.resume = ledger.input_resume(claim)
        lease = ledger.Lease(self.store, turn.run_id, claim, self.lease)
        try:
            async with lease:
                result = await self._answer_of(turn, planned)
        except InputDeferred as waiting:
            await self._keep_waiting(turn, planned, lease.held, waiting)
            return
        except BaseException:
            # Cancelled mid-call (the turn, or the task): end the lease now, so a resume
            # answers the call interrupted at once instead of waiting for it to run out.
            with anyio.CancelScope(shield=True), suppress(Exception):
                ended = lease.held.with_(lease_until=time.time())
                await self._write_own(turn.run_id, lease.held, ended)
            raise
        result = await self._store_answer(turn, planned.index, lease.held, result)
        self._finish(turn, planned.index, result, ran=True)

    async def _answer_of(self, turn: _Turn, planned: _Planned) -> ToolResult:
        try:
            if turn.tracer is None:
                return await self._run_call(turn, planned, None)
            with tool_span(turn.tracer, planned.call, turn.run_id) as span:
                return await self._run_call(turn, planned, span)
        except InputDeferred:
            raise  # the call pauses: its server waits for input
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
                kwargs = planned.kwargs
                if tool.context_parameter is not None:
                    kwargs = _injected(turn, planned)
                await acquire(self._limiter)
                told = None
                if tool.server_id is not None:  # an MCP tool's server may ask for input
                    told = current_call.set(_in_flight(turn, planned))
                try:
                    server_limiter = self._server_limiter(tool)
                    if server_limiter is not None:
                        async with server_limiter:
                            value = await self._invoke(tool, kwargs)
                    elif tool.is_async:  # inline: each frame in the chain costs every resume
                        assert tool.handler is not None
                        value = await tool.handler(**kwargs)
                    else:
                        value = await self._invoke(tool, kwargs)
                finally:
                    self._limiter.release()
                    if told is not None:
                        current_call.reset(told)
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
        except InputDeferred:
            if span is not None:
                span.set_attribute("toolwire.waits_for_input", True)
            raise
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
            if seen is not None and seen.state == "denied":  # tightened since planned
                self._refuse(turn, index, seen.decision or Decision("deny"))
                return None
            if seen is not None and seen.state == "pending":
                # Another worker put it up for approval, or its server asked for input, since
                # this one planned it: it waits, here too.
                turn.pending.append((index, ledger.request_of(turn.run_id, seen)))
                turn.settled.add(index)
                return None
        self._finish(
            turn,
            index,
            ToolResult.error("unavailable", "Not run: the run's store could not record the call."),
        )
        turn.settled.add(index)
        return None

    async def _keep_waiting(
        self, turn: _Turn, planned: _Planned, claim: CallRecord | None, waiting: InputDeferred
    ) -> None:
        """Keep a call whose server waits for input in the run, ``pending`` with the server's
        questions and state (over this worker's claim, when it has one), and list it as waiting.
        A call whose wait cannot be kept is answered ``failed``, for good: nothing is lost."""
        assert turn.run_id is not None
        call, index = planned.call, planned.index
        turn.settled.add(index)
        arguments = planned.context.arguments if planned.context is not None else planned.kwargs
        request = self._request(turn, call, arguments, "the tool's server asks for input")
        kept = self._kept(turn, index, request)
        if kept is None:  # its arguments could not be redacted: that is its answer
            outcome = turn.outcomes[index]
            assert outcome is not None
            await self._give_up_waiting(turn, index, claim, outcome.result)
            return
        base = claim or CallRecord(
            call_id=call.local_id,
            tool=call.exposed_name,
            fingerprint=self._fingerprint(turn, call),
            tool_id=call.tool.qualified_name,
            definition=call.tool.definition_hash,
            state="pending",
        )
        try:
            record = ledger.input_record(
                base.with_(tool_id=call.tool.qualified_name, definition=call.tool.definition_hash),
                kept,
                waiting,
            )
            if claim is not None:
                answered = await self._write_own(turn.run_id, claim, record)
                if answered is not None:  # another worker answered it meanwhile: that stands
                    self._finish(turn, index, answered)
                    return
            elif (
                await self.store.swap(turn.run_id, None, record, binding=self._binding(turn))
                is None
            ):
                raise StoreUnavailable("the run's store kept another record of the call")
        except Exception as exc:
            _log.exception("keeping the input request of %s failed", call.exposed_name)
            failed = ToolResult.error(
                "failed",
                f"Not finished: the call's server asked for input, and the request could not "
                f"be kept ({_short(exc)}).",
            )
            await self._give_up_waiting(turn, index, claim, failed)
            return
        shown_round = ledger.input_round(record)
        questions = tuple(
            replace(
                q,
                round=shown_round,
                exposed_name=call.exposed_name,
                run_id=turn.run_id,
                call_id=call.local_id,
                principal=turn.principal,
                arguments=kept.arguments,
            )
            for q in waiting.questions
            if q.key not in waiting.answered
        )
        turn.pending.append((index, replace(kept, tool=call.tool, input=questions)))

    async def _give_up_waiting(
        self, turn: _Turn, index: int, claim: CallRecord | None, result: ToolResult
    ) -> None:
        """Answer a call whose server's question could not be kept waiting with ``result``, for
        good: over this worker's claim now, or (without one) when the turn's answers are
        stored, so a resume gives the same answer instead of finding the call running."""
        if claim is None:
            turn.settled.discard(index)
            self._finish(turn, index, result, ran=True)
            return
        self._finish(turn, index, await self._store_answer(turn, index, claim, result), ran=True)

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
            state=ledger.answered_state(result),
            result=result,
            lease_until=None,
            finished_at=time.time(),
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
            state, now = ledger.answered_state(outcome.result), time.time()
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
        for index, request in turn.pending:
            if index in turn.settled:
                continue  # waits for input: its record says so already
            seen = turn.seen.get(index)
            item = turn.items[index]
            assert isinstance(item, ToolCall)
            if seen is not None and seen.state == "pending" and ledger.decided_for(seen, item.tool):
                continue  # already waiting in the run, for this tool as it is
            await self.store.swap(
                turn.run_id,
                seen,
                ledger.request_record(request, item, seen=seen),
                binding=self._binding(turn),
            )  # a failed swap: the call was decided meanwhile; the next resume reads it


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


def _groups(planned: list[_Planned]) -> list[list[_Planned]]:
    """Consecutive parallel-safe calls run together; any other call runs alone."""
    groups: list[list[_Planned]] = []
    for item in planned:
        if item.call.tool.parallel_safe and groups and groups[-1][-1].call.tool.parallel_safe:
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


def _in_flight(turn: _Turn, planned: _Planned) -> CallContext:
    """The context an MCP tool's handler reads while the call runs (its run, id, principal,
    and what resuming it sends its server)."""
    context = planned.context
    if context is not None and context.run_id == turn.run_id:
        return replace(context, resume=planned.resume)
    return CallContext(
        call=planned.call,
        arguments=context.arguments if context is not None else planned.kwargs,
        principal=turn.principal,
        run_id=turn.run_id,
        taint=turn.taint,
        deps=turn.deps,
        resume=planned.resume,
    )
