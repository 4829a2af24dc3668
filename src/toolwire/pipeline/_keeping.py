"""What a turn's run keeps: a call's answer stored at once when it ran, or kept waiting when
its server asks for input (``pending`` with the server's questions and state); and, as the
turn closes (or an engine's planning step ends), the answers decided without running and the
calls waiting for a decision."""

from __future__ import annotations

from collections.abc import Sequence

from toolwire.approval import ApprovalPending
from toolwire.calls import ToolCall, ToolResult
from toolwire.errors import StoreUnavailable
from toolwire.inputs import InputDeferred
from toolwire.pipeline._deciding import Decider
from toolwire.pipeline._output import log, short
from toolwire.pipeline._turns import CallOutcome, Planned, Turn, waiting_request
from toolwire.runs import (
    UNSTORED_KINDS,
    CallRecord,
    Run,
    caller_json,
    decided_for,
    input_record,
    request_record,
)
from toolwire.runs.store import RunStore

__all__ = ["close", "keep_planned", "keep_waiting", "remember", "store_answer"]


async def keep_waiting(
    turn: Turn,
    planned: Planned,
    claim: CallRecord | None,
    waiting: InputDeferred,
    *,
    decider: Decider,
    run: Run,
) -> None:
    """Keep a call whose server waits for input in the run, ``pending`` with the server's
    questions and state (over this worker's claim, when it has one), and list it as waiting.
    A call whose wait cannot be kept is answered ``failed``, for good: nothing is lost."""
    assert turn.run_id is not None
    call, index = planned.call, planned.index
    turn.kept.add(index)
    arguments = planned.context.arguments if planned.context is not None else planned.kwargs
    await decider.clock.now()  # the request's deadline is in the store's time
    request = decider.request(turn, call, arguments, "the tool's server asks for input")
    kept = decider.kept(request)
    if isinstance(kept, ToolResult):  # its arguments could not be redacted: that is its answer
        await _give_up_waiting(turn, index, claim, kept, run=run)
        return
    base = claim or CallRecord(
        call_id=call.local_id,
        tool=call.exposed_name,
        fingerprint=turn.fingerprint(call),
        state="pending",
        caller=caller_json(call),
    )
    if turn.wake is not None:
        base = base.with_(wake=turn.wake)
    try:
        record = input_record(
            base.with_(tool_id=call.tool.qualified_name, definition=call.tool.definition_hash),
            kept,
            waiting,
        )
        answered = await run.keep_waiting(claim, record)
    except Exception as exc:
        log.exception("keeping the input request of %s failed", call.exposed_name)
        failed = ToolResult.error(
            "failed",
            f"Not finished: the call's server asked for input, and the request could not "
            f"be kept ({short(exc)}).",
        )
        await _give_up_waiting(turn, index, claim, failed, run=run)
        return
    if answered is not None:  # another worker answered it meanwhile: that stands
        turn.finish(index, answered)
        return
    turn.waiting.append((index, waiting_request(turn, call, kept, record, waiting)))


async def _give_up_waiting(
    turn: Turn, index: int, claim: CallRecord | None, result: ToolResult, *, run: Run
) -> None:
    """Answer a call whose server's question could not be kept waiting with ``result``, for
    good: over this worker's claim now, or (without one) when the turn's answers are
    stored, so a resume gives the same answer instead of finding the call running."""
    if claim is None:
        turn.kept.discard(index)
        turn.finish(index, result, ran=True)
        return
    turn.finish(index, await store_answer(turn, index, claim, result, run=run), ran=True)


async def store_answer(
    turn: Turn, index: int, claim: CallRecord, result: ToolResult, *, run: Run
) -> ToolResult:
    """Record the answer of a call this worker ran, right away; returns the answer to
    give (another worker's, when it answered the call meanwhile)."""
    turn.kept.add(index)
    answer, error = await run.store_answer(claim, result)
    if error is not None:
        turn.store_error = turn.store_error or error
    return answer


async def remember(turn: Turn, run: Run) -> None:
    """Store the answers decided without running (invalid arguments, denials...), and the
    calls waiting for a decision as pending."""
    for index, outcome in enumerate(turn.outcomes):
        if (
            outcome is None
            or index in turn.kept
            or outcome.from_store
            or not isinstance(outcome.item, ToolCall)
            or outcome.result.error_kind in UNSTORED_KINDS
        ):
            continue
        call = outcome.item
        other = await run.remember_answer(
            call, turn.fingerprint(call), turn.seen.get(index), outcome.result
        )
        if other is not None:  # another worker's answer stands, for all
            turn.outcomes[index] = CallOutcome(item=call, result=other, from_store=True)
    for index, request in turn.waiting:
        if index in turn.kept:
            continue  # waits for input: its record says so already
        seen = turn.seen.get(index)
        item = turn.items[index]
        assert isinstance(item, ToolCall)
        if seen is not None and seen.state == "pending" and decided_for(seen, item.tool):
            continue  # already waiting in the run, for this tool as it is
        await run.remember_wait(seen, request_record(request, item, seen=seen, wake=turn.wake))


async def keep_planned(turn: Turn, run: Run, digests: Sequence[tuple[Planned, str]]) -> None:
    """Store what a planned turn decided without running (answers, and the calls waiting for
    a decision), then each planned call's ticket ``digests``, before any call runs."""
    await remember(turn, run)
    for index, outcome in enumerate(turn.outcomes):
        if outcome is not None:
            turn.kept.add(index)
    turn.kept.update(index for index, _ in turn.waiting)
    for planned, digest in digests:
        call = planned.call
        await run.keep_ticket(call, turn.fingerprint(call), planned.record, digest)


async def close(turn: Turn, run: Run | None, store: RunStore) -> list[CallOutcome]:
    """The turn's outcomes, once its ``run`` (in ``store``) remembers what was decided without
    running.

    Raises:
        StoreUnavailable: the run's store failed (the outcomes are on the exception).
        ApprovalPending: some calls wait.
    """
    if run is not None and turn.store_error is None:
        try:
            await remember(turn, run)
        except StoreUnavailable as exc:
            turn.store_error = exc
    outcomes = [outcome for outcome in turn.outcomes if outcome is not None]
    if turn.store_error is not None:
        raise StoreUnavailable(
            f"{turn.store_error} (run {turn.run_id!r}; the turn's answers are in "
            "`outcomes`, but the run may not remember them)",
            outcomes=outcomes,
        ) from turn.store_error
    if turn.waiting:
        assert turn.run_id is not None
        raise ApprovalPending(
            turn.run_id,
            [request for _, request in turn.waiting],
            completed=outcomes,
            store=store,
            place=turn.place,
        )
    return outcomes
