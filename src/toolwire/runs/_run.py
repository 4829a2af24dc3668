"""A run over its store: the one compare-and-swap helper every write of a call's record goes
through ([`update`][]), the lease a running call's worker renews, and [`Run`][], what a turn
does with its run (load its records, claim a call, keep a waiting call, store an answer,
remember the answers decided without running)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import anyio

from toolwire._values import describe_exception
from toolwire.calls import ToolCall, ToolResult
from toolwire.errors import ConfigurationError, RunNotFound, StoreUnavailable, ToolwireError
from toolwire.runs._record import (
    CallRecord,
    CallState,
    answered_state,
    caller_json,
    check_binding,
    held,
)
from toolwire.runs.store import RunStore, clock_of

__all__ = [
    "SWAP_ATTEMPTS",
    "UNSTORED_KINDS",
    "UNTIMED_WAIT",
    "Contended",
    "Keep",
    "Lease",
    "Run",
    "check_outlives",
    "read",
    "update",
]

T = TypeVar("T")

_log = logging.getLogger("toolwire")

SWAP_ATTEMPTS = 8
"""Compare-and-swap retries before a store write gives up (each retry means another worker
wrote the same call in between; more than a few is a store out of order)."""


@dataclass(frozen=True, slots=True)
class Keep(Generic[T]):
    """What a change returns to leave the record as it is: [`update`][] returns it."""

    value: T


class Contended(ToolwireError):
    """Other writers changed the call's record on every attempt."""


_UNREAD: Any = object()

Change = Callable[[CallRecord | None], "CallRecord | Keep[T] | Awaitable[CallRecord | Keep[T]]"]
Read = Callable[[str, str], Awaitable[CallRecord | None]]


async def read(store: RunStore, run_id: str, call_id: str) -> CallRecord | None:
    """The run's record of a call, as the store has it now (None: none)."""
    return await store.get(run_id, call_id)


async def update(
    store: RunStore,
    run_id: str,
    call_id: str,
    change: Change[T],
    *,
    current: CallRecord | None = _UNREAD,
    binding: str | None = None,
    reread: Read | None = None,
    attempts: int = SWAP_ATTEMPTS,
) -> CallRecord | Keep[T]:
    """Write what ``change`` makes of the call's record, by compare-and-swap: the one way a
    record is changed. When another writer got there first, the record is read again
    (``reread``, ``store.get`` by default) and ``change`` asked again.

    Args:
        store: the run's store.
        run_id: the run.
        call_id: the call.
        change: given the record as it is (None: there is none), returns the record to write,
            or ``Keep(value)`` to write nothing; sync or async. It may raise to give up.
        current: the record as already read (not read again for the first attempt).
        binding: what the run is bound to (see ``RunStore.swap``).
        reread: how to read the record again after a lost race.
        attempts: how many times to try (1: a lost race is ``Contended`` at once, with
            nothing read again).

    Returns:
        The record as stored, or the ``Keep`` the change returned.

    Raises:
        Contended: the record changed under every attempt.
        StoreUnavailable: the store cannot be reached.
    """
    fetch = reread if reread is not None else store.get
    record = current
    for attempt in range(attempts):
        if attempt or record is _UNREAD:
            record = await fetch(run_id, call_id)
        wanted = change(record)
        if not isinstance(wanted, CallRecord | Keep):  # an async change
            wanted = await wanted
        if isinstance(wanted, Keep):
            return wanted
        stored = await store.swap(run_id, record, wanted, binding=binding)
        if stored is not None:
            return stored
    raise Contended(f"run {run_id!r}: call {call_id!r} kept changing")


class Lease:
    """Keeps a running call's claim alive: renews its ``lease_until`` every third of the lease
    while the call runs (``async with``), so other workers know its worker is alive.

    ``held`` is the claim as last written (each renewal bumps its version). On asyncio a timer
    of the event loop starts each renewal: a call that ends before the first renewal costs a
    timer, not a task (an anyio task group with a cancelled child costs about 100 µs, more
    than the rest of a call); other event loops get a task group.
    """

    def __init__(self, store: RunStore, run_id: str, claim: CallRecord, seconds: float) -> None:
        self.store = store
        self.clock = clock_of(store)
        self.run_id = run_id
        self.held = claim
        self.seconds = seconds
        self._stopped = False
        self._timer: Any = None
        self._renewal: Any = None  # the asyncio task of a renewal under way
        self._group: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def __aenter__(self) -> Lease:
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio (trio)
            self._loop = None
        if self._loop is not None:
            self._timer = self._loop.call_later(self.seconds / 3, self._start_renewal)
        else:
            self._group = anyio.create_task_group()
            await self._group.__aenter__()
            self._group.start_soon(self._renew_forever)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._stopped = True
        if self._group is not None:
            self._group.cancel_scope.cancel()
            await self._group.__aexit__(*exc_info)
            return
        self._timer.cancel()
        if self._renewal is not None and not self._renewal.done():
            with anyio.CancelScope(shield=True):
                await self._renewal  # its write lands before the answer's

    def _start_renewal(self) -> None:
        if not self._stopped and self._loop is not None:
            self._renewal = self._loop.create_task(self._renew_then_rearm())

    async def _renew_then_rearm(self) -> None:
        if await self._renew_once() and not self._stopped and self._loop is not None:
            self._timer = self._loop.call_later(self.seconds / 3, self._start_renewal)

    async def _renew_forever(self) -> None:
        while await self._renew_once():
            await anyio.sleep(self.seconds / 3)

    async def _renew_once(self) -> bool:
        """Renew now; False once the claim is no longer this worker's."""
        current = self.held
        renewed = current.with_(lease_until=await self.clock.now() + self.seconds)
        try:
            written = await _write_over(self.store, self.run_id, current, renewed)
        except Contended:
            return False  # taken over after a lapse
        except Exception:  # the store is away: the next renewal may reach it
            _log.warning("renewing the lease of %s failed", current.call_id, exc_info=True)
            return True
        self.held = written
        return True


def check_outlives(store: RunStore, approval_ttl: float | None) -> None:
    """Refuse a store that forgets a run before its requests for approval expire: a call
    decided after the run is gone would find nothing saying which of its calls ran.

    Raises:
        ConfigurationError: the store's ``ttl`` is shorter than ``approval_ttl``.
    """
    ttl = getattr(store, "ttl", None)
    if approval_ttl is None or not isinstance(ttl, int | float) or ttl >= approval_ttl:
        return
    raise ConfigurationError(
        f"the run store keeps a run {ttl:g} s after its last write, less than approval_ttl "
        f"({approval_ttl:g} s): a run would be forgotten while a call waits, and a resume could "
        "not know which calls ran; give the store a ttl of at least approval_ttl"
    )


UNTIMED_WAIT = 300.0
"""Seconds a worker waits for another's call that has no timeout, beyond its lease."""

UNSTORED_KINDS = frozenset({"cancelled", "unavailable"})
"""Answers a run does not keep: they say what happened to this attempt, not to the call."""


class Run:
    """A turn's run in its store: what the turn reads of its calls' records and writes to
    them, every write by [`update`][] (compare-and-swap).

    Args:
        store: the run's store.
        run_id: the run.
        binding: what the run is bound to (its principal and calls; see
            ``toolwire.ledger.binding_for``), kept by its first write.
        worker: who claims calls (``host:pid:token``).
        lease: seconds a claim holds without renewal.
    """

    def __init__(
        self,
        store: RunStore,
        run_id: str,
        *,
        binding: str,
        worker: str,
        lease: float,
        positions: Mapping[str, int] | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.binding = binding
        self.worker = worker
        self.lease_seconds = lease
        self.clock = clock_of(store)
        """The store's clock, which leases are written and judged in."""
        self.positions: Mapping[str, int] = positions or {}
        """Where each call stands in its turn, by call id (kept in its first record)."""

    def first_record(self, call: ToolCall, fingerprint: str, state: CallState) -> CallRecord:
        """The run's first record of ``call``, in ``state``, with its place in the turn."""
        return CallRecord(
            position=self.positions.get(call.local_id),
            call_id=call.local_id,
            tool=call.exposed_name,
            fingerprint=fingerprint,
            tool_id=call.tool.qualified_name,
            caller=caller_json(call),
            state=state,
        )

    def placed(self, record: CallRecord) -> CallRecord:
        """``record`` with its call's place in the turn, when it has none yet."""
        if record.position is not None:
            return record
        position = self.positions.get(record.call_id)
        return record if position is None else record.with_(position=position)

    async def load(self, call_ids: list[str], *, resume: bool = False) -> dict[str, CallRecord]:
        """The records the run has of ``call_ids``, in one round trip; with ``resume``, of a
        run that must be in the store already (a paused turn's, a ticket's).

        Raises:
            RunBindingConflict: the run was started for another principal, other calls or
                another place.
            RunNotFound: ``resume``, and the store keeps nothing of the run.
        """
        binding, records = await self.store.load(self.run_id, call_ids)
        if resume and binding is None and not any(records):
            raise RunNotFound(
                f"run {self.run_id!r} is not in its store (it expired, was evicted, or is kept "
                "in another store): the records that say which of its calls ran are gone, so "
                "none is run again; start a new run for a new turn"
            )
        check_binding(self.run_id, binding, self.binding)
        return {i: r for i, r in zip(call_ids, records, strict=True) if r is not None}

    async def unless_running(
        self, call_id: str, record: CallRecord | None, bound: float
    ) -> CallRecord | None:
        """``record`` as read, or, when another live worker is running the call (its lease
        renewed), the record it leaves once it is done, polled for up to ``bound`` seconds."""
        if record is None or record.state != "running" or not held(record, await self.clock.now()):
            return record
        deadline = time.monotonic() + bound
        pause = 0.005
        while (
            record is not None
            and record.state == "running"
            and held(record, await self.clock.now())
        ):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await anyio.sleep(min(pause, left))
            pause = min(pause * 2, 0.25)
            record = await self.store.get(self.run_id, call_id)
        return record

    async def claim(
        self,
        call: ToolCall,
        fingerprint: str,
        seen: CallRecord | None,
        *,
        bound: float,
        claimable: Callable[[CallRecord | None], bool],
    ) -> CallRecord | Keep[CallRecord | None]:
        """Move the call to ``running``, atomically, over the record it was planned with: the
        claim, or ``Keep(record)`` holding what another worker wrote when that is not for this
        worker to claim (``claimable`` says; a call another live worker runs is waited for)."""

        await self.clock.now()  # a fresh reading of the store's time, if it is due

        def claimed(current: CallRecord | None) -> CallRecord | Keep[CallRecord | None]:
            if current is not seen and not claimable(current):
                return Keep(current)
            # when it is written (a wait for another worker may come first), in store time
            now = self.clock.current()
            if current is not None:  # keeps the request and the decision it carries
                return self.placed(current).with_(
                    state="running",
                    owner=self.worker,
                    started_at=now,
                    lease_until=now + self.lease_seconds,
                )
            return self.first_record(call, fingerprint, "running").with_(
                owner=self.worker, started_at=now, lease_until=now + self.lease_seconds
            )

        async def reread(run_id: str, call_id: str) -> CallRecord | None:
            record = await self.store.get(run_id, call_id)
            return await self.unless_running(call_id, record, bound)

        return await update(
            self.store,
            self.run_id,
            call.local_id,
            claimed,
            current=seen,
            binding=self.binding,
            reread=reread,
        )

    async def keep_ticket(
        self, call: ToolCall, fingerprint: str, seen: CallRecord | None, digest: str
    ) -> None:
        """Keep in the call's record the digest of the ticket its turn's planning made (the
        record, ``approved``, is made when there is none): the run's word that the ticket is
        its own. A record another worker moved on since (running, answered, waiting) is left
        as it is.

        Raises:
            Contended: the record kept changing.
        """

        def kept(current: CallRecord | None) -> CallRecord | Keep[None]:
            if current is not None and (current.ticket == digest or current.state != "approved"):
                return Keep(None)
            base = current or self.first_record(call, fingerprint, "approved")
            return self.placed(base).with_(ticket=digest)

        await update(
            self.store, self.run_id, call.local_id, kept, current=seen, binding=self.binding
        )

    def lease(self, claim: CallRecord) -> Lease:
        """The lease that keeps ``claim`` alive while its call runs (``async with``)."""
        return Lease(self.store, self.run_id, claim, self.lease_seconds)

    async def write_own(self, claim: CallRecord, record: CallRecord) -> ToolResult | None:
        """Replace this worker's claim with ``record``; returns the answer the run kept
        instead, when another worker answered the call meanwhile (this one's lease lapsed).

        A renewal cut off by the end of the call may have bumped the claim's version unseen:
        the claim read back is still ours if the owner and start are."""

        def over(current: CallRecord | None) -> CallRecord | Keep[ToolResult | None]:
            if current is claim:
                return record
            if current is not None and current.result is not None:
                return Keep(current.result)
            if (
                current is None
                or current.state != "running"
                or current.owner != claim.owner
                or current.started_at != claim.started_at
            ):
                return Keep(None)
            return record

        try:
            written = await update(self.store, self.run_id, claim.call_id, over, current=claim)
        except Contended:
            return None
        return written.value if isinstance(written, Keep) else None

    async def end_lease_if_claimed(self, call_id: str) -> None:
        """End the lease of a claim this worker may have written just as it was cancelled
        (a claim's write cut off: written or not, nobody runs the call here), so a resume
        answers the call interrupted at once instead of waiting for the lease to run out."""
        with suppress(Exception):
            record = await self.store.get(self.run_id, call_id)
            if record is not None and record.state == "running" and record.owner == self.worker:
                await self.end_lease(record)

    async def end_lease(self, claim: CallRecord) -> None:
        """End the claim's lease now (its call was cancelled mid-run), so a resume answers
        the call interrupted at once instead of waiting for the lease to run out."""
        with suppress(Exception):
            await self.write_own(claim, claim.with_(lease_until=await self.clock.now()))

    async def store_answer(
        self, claim: CallRecord, result: ToolResult
    ) -> tuple[ToolResult, StoreUnavailable | None]:
        """Record the answer of a call this worker ran, right away (a crash later in the
        turn must not make the run forget it): the answer to give, and the store's failure
        when it could not keep it."""
        if result.error_kind in UNSTORED_KINDS:
            # e.g. cancelled mid-run: the claim stays, its lease ended now, so a resume says
            # interrupted at once rather than waiting for a worker that is not running it
            await self.end_lease(claim)
            return result, None
        answered = claim.with_(
            state=answered_state(result),
            result=result,
            lease_until=None,
            finished_at=self.clock.current(),  # in the store's time, as its claim was
        )
        try:
            # A write refused means another worker took the claim over after its lease lapsed
            # (answered it interrupted, or reran an idempotent call): its answer is the run's,
            # and so the one every worker gives.
            kept = await self.write_own(claim, answered)
        except StoreUnavailable as exc:
            # The answer is still given (in the turn's outcomes); the run keeps the call
            # claimed, so a resume answers it interrupted rather than running it again.
            _log.error(
                "call %s of run %s ran, but its answer could not be stored: %s",
                claim.call_id,
                self.run_id,
                exc,
            )
            return result, exc
        except Exception as exc:  # never expected: the answer could not be written
            _log.exception("storing the answer of %s failed", claim.call_id)
            withheld = ToolResult.error(
                "failed",
                f"The call ran, but its answer could not be stored "
                f"({describe_exception(exc, limit=300)}); it is withheld.",
            )
            return withheld, await self._release(
                claim, answered.with_(state="failed", result=withheld)
            )
        return (kept if kept is not None else result), None

    async def _release(self, claim: CallRecord, failed: CallRecord) -> StoreUnavailable | None:
        """Release a claim with the answer saying its own could not be stored, so no resume
        finds it running; the store's failure when it could not."""
        try:
            await _write_over(self.store, self.run_id, claim, failed)
        except Contended:
            return None  # answered meanwhile: that answer stands
        except Exception as again:
            return StoreUnavailable(
                f"the run's store could not record call {claim.call_id!r}: "
                f"{describe_exception(again, limit=300)}"
            )
        return None

    async def keep_waiting(self, claim: CallRecord | None, record: CallRecord) -> ToolResult | None:
        """Keep ``record`` (the call waiting for input) over this worker's claim, or as the
        call's first record; returns the answer another worker gave the call meanwhile.

        Raises:
            StoreUnavailable: the run's store could not keep it.
        """
        record = self.placed(record)
        if claim is not None:
            return await self.write_own(claim, record)

        def first(current: CallRecord | None) -> CallRecord:
            if current is not None:
                raise StoreUnavailable("the run's store kept another record of the call")
            return record

        await update(
            self.store, self.run_id, record.call_id, first, current=None, binding=self.binding
        )
        return None

    async def remember_answer(
        self, call: ToolCall, fingerprint: str, seen: CallRecord | None, result: ToolResult
    ) -> ToolResult | None:
        """Keep the answer of a call decided without running (invalid arguments, a denial...);
        returns another worker's answer, when the run has one for the call meanwhile: it
        stands, for all. A decision made meanwhile does not undo this answer (the model has
        it): it is stored over it."""
        state, now = answered_state(result), self.clock.current()
        attempts = 0

        def answered(current: CallRecord | None) -> CallRecord | Keep[ToolResult | None]:
            nonlocal attempts
            attempts += 1
            if attempts == 1:
                if seen is not None:
                    return seen.with_(state=state, result=result, finished_at=now, lease_until=None)
                first = self.first_record(call, fingerprint, state)
                return first.with_(result=result, finished_at=now)
            if current is not None and current.result is not None:
                return Keep(current.result)
            if current is None or current.state == "running":
                return Keep(None)  # claimed by a worker that will answer it
            return current.with_(state=state, result=result, finished_at=now)

        try:
            written = await update(
                self.store, self.run_id, call.local_id, answered, current=seen, binding=self.binding
            )
        except Contended:
            return None
        return written.value if isinstance(written, Keep) else None

    async def remember_wait(self, seen: CallRecord | None, record: CallRecord) -> None:
        """Put a call up in the run as waiting (``record``, pending), over the record it was
        planned with; a write refused means it was decided meanwhile: the next resume reads
        that."""
        with suppress(Contended):
            await _write_over(
                self.store, self.run_id, seen, self.placed(record), binding=self.binding
            )


async def _write_over(
    store: RunStore,
    run_id: str,
    current: CallRecord | None,
    record: CallRecord,
    *,
    binding: str | None = None,
) -> CallRecord:
    """Write ``record`` over ``current``, once: another writer first is ``Contended``."""

    def always(_: CallRecord | None) -> CallRecord:
        return record

    written: CallRecord | Keep[None] = await update(
        store, run_id, record.call_id, always, current=current, binding=binding, attempts=1
    )
    assert not isinstance(written, Keep)  # (the change always writes)
    return written
