"""The run ledger: what a run store keeps about calls, and the operations on it that need no
executor (deciding, listing what waits, reading a run's history).

A run is bound to what it was started for: its principal and its calls (ids and
fingerprints). Each waiting call keeps its request (what a human is shown), and each decision
the tool it was made for (identity and definition hash): a decision made for another tool, or
for a definition that has changed since, is void.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from toolwire._text import blank
from toolwire.approval import ApprovalRequest, Decision
from toolwire.calls import ToolResult, principal_json
from toolwire.errors import ConfigurationError, ToolwireError
from toolwire.inputs import InputAnswer, InputRequest, checked_answer
from toolwire.runs._record import (
    INPUT_WAIT,
    InputWait,
    answered_state,
    awaits_input,
    binding_for,
    check_binding,
    decided_for,
    expired,
    fingerprint,
    held,
    input_record,
    input_resume,
    input_round,
    interrupted_answer,
    owner_gone,
    pending_since,
    principal_key,
    request_of,
    request_record,
    still_running_answer,
    valid_id,
)
from toolwire.runs._record_json import place_of
from toolwire.runs._run import Contended, Keep, Lease, read, update
from toolwire.runs.store import CallRecord, CallState, DamagedRecord, QueuePlace, RunStore, clock_of
from toolwire.tool import Tool

__all__ = [
    "CallTrail",
    "Lease",
    "Waiting",
    "answered_state",
    "awaits_input",
    "binding_for",
    "check_binding",
    "decide",
    "decided_for",
    "expired",
    "fingerprint",
    "held",
    "history",
    "identity_json",
    "input_record",
    "input_resume",
    "input_round",
    "interrupted_answer",
    "iso_utc",
    "owner_gone",
    "pending",
    "principal_json",
    "principal_key",
    "record",
    "register_waker",
    "request_of",
    "request_record",
    "respond",
    "settle",
    "still_running_answer",
    "store_time",
    "trail_of",
    "valid_id",
    "waiting",
    "wake",
]

_log = logging.getLogger("toolwire")


# -- waking what waits for a decision ----------------------------------------------------------

Waker = Callable[[Mapping[str, Any], str, str], Awaitable[None]]
"""Wakes what a record's ``wake`` names, given it, the run id and the call id."""

_WAKERS: dict[str, Waker] = {}

WAKERS_GROUP = "toolwire.wakers"
"""The entry-point group where installed engines name their wakers (``engine = "module:waker"``):
a process that decides a call whose record names an engine no one registered here yet (the
command line, the console) loads that engine's waker from it."""


def register_waker(engine: str, waker: Waker) -> None:
    """Have ``waker`` wake what waits for calls whose record names ``engine`` in its
    ``wake`` (a durable-execution engine's workflow), each time one is decided or answered."""
    _WAKERS[engine] = waker


async def wake(record: CallRecord | None, run_id: str) -> None:
    """Wake what waits for ``record``'s call, when its record names something. A waker that
    fails is logged and the decision stands: what waits reads the run again in its own time."""
    target = record.wake if record is not None else None
    if target is None:
        return
    engine = target.get("engine")
    waker = _WAKERS.get(engine) if isinstance(engine, str) else None
    if waker is None and isinstance(engine, str):
        waker = _installed_waker(engine, run_id)
    if waker is None:
        _log.warning("no waker for engine %r: what waits for run %r reads it later", engine, run_id)
        return
    assert record is not None
    try:
        await waker(target, run_id, record.call_id)
    except Exception:
        _log.warning(
            "waking the %s workflow waiting for run %r failed; the decision stands",
            engine,
            run_id,
            exc_info=True,
        )


def _installed_waker(engine: str, run_id: str) -> Waker | None:
    """The waker an installed engine names in the ``toolwire.wakers`` entry points (registered
    here from now on), or None."""
    for entry in importlib.metadata.entry_points(group=WAKERS_GROUP, name=engine):
        try:
            waker = entry.load()
        except ImportError as exc:
            _log.warning("cannot wake the %s workflow waiting for %s: %s", engine, run_id, exc)
            return None
        if callable(waker):
            register_waker(engine, waker)
            return cast(Waker, waker)
    return None


# -- what identifies calls, principals and runs ------------------------------------------------


def identity_json(who: Any) -> Any | None:
    """The identity an ``authorize`` returned, as the JSON kept as ``by`` with a decision
    (see [`principal_json`][]); None when it names nobody: only a non-empty identity may
    decide.

    Nobody is: None; True or False (a yes or a no, never who); a string that is empty,
    whitespace or invisible characters only; the number 0; NaN or an infinity (nothing a
    store keeps); an empty object or list, or one whose values (at every depth; an object's
    keys don't count) are all nobody, like ``{"user": None}``. Any other value, or an object
    whose JSON form is one, is somebody, kept as given.
    """
    if who is None or isinstance(who, bool):
        return None
    try:
        jsonable = principal_json(who)
    except ConfigurationError:
        return None
    return jsonable if _names_someone(jsonable) else None


def _names_someone(value: Any) -> bool:
    """Whether a JSON value (at most ``_MAX_DEPTH`` deep: ``principal_json`` made it) holds a
    non-empty string or a number other than 0."""
    if isinstance(value, str):
        return not blank(value)
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, dict):
        return any(_names_someone(item) for item in value.values())
    if isinstance(value, list):
        return any(_names_someone(item) for item in value)
    return False


# -- the request a waiting call keeps ---------------------------------------------------------


# -- operations ------------------------------------------------------------------------------


async def decide(
    store: RunStore, run_id: str, call_id: str, decision: Decision, *, by: Any = None
) -> None:
    """Record ``decision`` (and who made it, and when) for a waiting call of ``run_id``.

    An allow with ``arguments`` is checked against the tool's schema as the request kept it:
    invalid arguments record nothing.

    Raises:
        InvalidArguments: the edited arguments do not fit the tool's schema.
        ToolwireError: the run has no such call waiting (a decided call that has not run yet
            may be decided again), or its request expired.
        StoreUnavailable: the run store cannot be reached.
    """
    if not isinstance(decision, Decision):
        raise ConfigurationError(f"a decision is a Decision, not a {type(decision).__name__}")
    for value in (run_id, call_id):
        if not valid_id(value):
            raise ConfigurationError(
                "run and call ids are strings of valid Unicode text without NUL"
            )
    if decision.kind not in ("allow", "deny", "halt"):
        raise ConfigurationError(f"a decision is allow, deny or halt, not {decision.kind!r}")
    if decision.reason is not None and not isinstance(decision.reason, str):
        raise ConfigurationError("a decision's reason is a string (or None)")
    if decision.arguments is not None and not decision.allowed:
        raise ConfigurationError("only an allow may carry arguments")
    if decision.arguments is not None and not isinstance(decision.arguments, Mapping):
        raise ConfigurationError("edited arguments are an object (a mapping)")
    state: CallState = "approved" if decision.allowed else "denied"
    by = principal_json(by)
    checked = False
    clock = clock_of(store)
    now = await clock.now()  # a request's deadline is in the store's time

    def decided(record: CallRecord | None) -> CallRecord | Keep[None]:
        nonlocal checked
        if (
            record is None
            or record.result is not None
            or record.state not in ("pending", "approved", "denied")
            or record.request is None  # never asked about (a call given back, say)
        ):
            raise ToolwireError(f"run {run_id!r} has no call {call_id!r} waiting for approval")
        if expired(record, now):
            raise ToolwireError(f"run {run_id!r}: the approval request of call {call_id!r} expired")
        if decision.allowed and awaits_input(record):
            raise ToolwireError(
                f"run {run_id!r}: call {call_id!r} waits for input, not for approval: answer "
                "it with toolwire.respond (a deny or halt stops the call)"
            )
        earlier = record.decision
        if earlier is not None and not _tightens(earlier, decision):
            if earlier == decision:
                return Keep(None)  # said again
            raise ToolwireError(
                f"run {run_id!r}: call {call_id!r} is already decided ({earlier.kind}); a "
                "decision is final, and may only be tightened (an allow to a deny or halt)"
            )
        if decision.arguments is not None and not checked:
            _check_edited(record, decision.arguments)
            checked = True
        # in the store's time, as the request and the claim are: a trail keeps its order
        decided_at = clock.current()
        return record.with_(state=state, decision=decision, decided_by=by, decided_at=decided_at)

    try:
        written = await update(store, run_id, call_id, decided)
    except Contended as exc:
        raise ToolwireError(f"{exc}; decide again") from None
    if isinstance(written, CallRecord):
        await wake(written, run_id)


async def store_time(store: RunStore) -> float:
    """The store's time (seconds since the epoch), which leases and the deadlines of requests
    are judged by, whatever this host's clock says (see ``toolwire.runs.store._clock``)."""
    return await clock_of(store).now()


async def settle(
    store: RunStore,
    run_id: str,
    call_id: str,
    answer: ToolResult,
    *,
    only_lapsed: bool = False,
) -> bool:
    """Answer a call of ``run_id`` that has no answer yet with ``answer`` (a ``cancelled``
    error, say): whatever it waited for is over, and a worker still running it keeps this
    answer (the first answer a run keeps is its answer). With ``only_lapsed``, only a call
    claimed ``running`` by a worker that is gone (its lease lapsed) is answered (an
    ``interrupted`` error, say). True when this answered it.

    Raises:
        ToolwireError: the run has no such call.
        StoreUnavailable: the run store cannot be reached.
    """

    clock = clock_of(store)
    now = await clock.now()  # leases are in the store's time

    def settled(record: CallRecord | None) -> CallRecord | Keep[bool]:
        if record is None:
            raise ToolwireError(f"run {run_id!r} has no call {call_id!r}")
        if record.result is not None:
            return Keep(False)
        if only_lapsed and (record.state != "running" or held(record, now)):
            return Keep(False)
        finished_at = clock.current()
        return record.with_(state=answered_state(answer), result=answer, finished_at=finished_at)

    try:
        written = await update(store, run_id, call_id, settled)
    except Contended as exc:
        raise ToolwireError(f"{exc}; try again") from None
    return not isinstance(written, Keep)


async def record(store: RunStore, run_id: str, call_id: str) -> CallRecord | None:
    """The record ``run_id`` keeps of ``call_id`` (None: it keeps none).

    Raises:
        StoreUnavailable: the store cannot be reached, or the record is damaged.
    """
    return await read(store, run_id, call_id)


def _tightens(earlier: Decision, later: Decision) -> bool:
    """True when ``later`` allows less than ``earlier``: only an allow may be taken back."""
    return earlier.allowed and not later.allowed


def _check_edited(record: CallRecord, arguments: Mapping[str, Any]) -> None:
    kept = record.kept
    schema = kept.input_schema if kept is not None else None
    if not isinstance(schema, Mapping):
        raise ToolwireError(
            f"call {record.call_id!r}: its request keeps no schema to check edited arguments "
            "against"
        )
    Tool(name=record.tool, input_schema=schema).validate_arguments(arguments)


async def respond(
    store: RunStore,
    run_id: str,
    call_id: str,
    answer: InputAnswer,
    *,
    key: str | None = None,
    round: str | None = None,
    by: Any = None,
) -> None:
    """Record ``answer`` (and who gave it, and when) to a question the server of a waiting
    call of ``run_id`` asked: the question ``key``, or the only one still open, of the
    ``round`` shown (the question's ``round``; when given, an answer never reaches a question
    the server asked again since; it must be given once the server has asked more than once
    in the call). Once every question of the call is answered, the call is resumed by running
    the same calls again with the same run id.

    An accepted form's content is checked against the server's requested schema: content
    that does not fit records nothing.

    Raises:
        InvalidArguments: the content does not fit the requested schema.
        ToolwireError: the run has no such call waiting for input, the question was already
            answered otherwise, or the request expired.
        ConfigurationError: several questions are open and ``key`` names none of them, or the
            server asked again after an earlier answer and ``round`` is not given.
        StoreUnavailable: the run store cannot be reached.
    """
    if not isinstance(answer, InputAnswer):
        raise ConfigurationError(
            f"an answer is an InputAnswer (toolwire.inputs.accept, decline or cancel), not a "
            f"{type(answer).__name__}"
        )
    for value in (run_id, call_id):
        if not valid_id(value):
            raise ConfigurationError(
                "run and call ids are strings of valid Unicode text without NUL"
            )
    if key is not None and not isinstance(key, str):
        raise ConfigurationError("a question's key is a string")
    if round is not None and not isinstance(round, str):
        raise ConfigurationError("a round is a string")
    by = principal_json(by)
    clock = clock_of(store)
    now = await clock.now()  # a request's deadline is in the store's time

    def answered(record: CallRecord | None) -> CallRecord | Keep[None]:
        wait = record.input_wait if record is not None else None
        if (
            record is None
            or wait is None
            or record.result is not None
            or record.state not in ("pending", "approved")
        ):
            raise ToolwireError(f"run {run_id!r} has no call {call_id!r} waiting for input")
        if expired(record, now):
            raise ToolwireError(f"run {run_id!r}: the input request of call {call_id!r} expired")
        _check_round(run_id, call_id, wait, round)
        question = _question(run_id, call_id, wait, key)
        checked = checked_answer(
            question, answer, label=f"the answer to {record.tool}'s question {question.key!r}"
        )
        earlier = wait.answers.get(question.key)
        if earlier is not None:
            if _same_answer(earlier, checked):
                return Keep(None)  # said again
            raise ToolwireError(
                f"run {run_id!r}: the question {question.key!r} of call {call_id!r} is already "
                "answered; an answer is final"
            )
        given = principal_json({**checked.to_dict(), "by": by, "at": clock.current()})
        kept = wait.with_answer(question.key, given)
        every = all(q.key in kept["answers"] for q in wait.questions)
        request = {**(record.request or {}), INPUT_WAIT: kept}
        # Every question answered, the call leaves the waiting list: it runs on the next resume.
        return record.with_(state="approved" if every else "pending", request=request)

    try:
        written = await update(store, run_id, call_id, answered)
    except Contended as exc:
        raise ToolwireError(f"{exc}; answer again") from None
    if isinstance(written, CallRecord):
        await wake(written, run_id)


def _check_round(run_id: str, call_id: str, wait: InputWait, round: str | None) -> None:
    """Refuse an answer to another round than the one the call waits on now."""
    if round is not None and wait.round != round:
        raise ToolwireError(
            f"run {run_id!r}: call {call_id!r} no longer waits on round {round!r} (its "
            "server asked again since); answer what it asks now"
        )
    if round is None and wait.asked > 1:
        # An answer without a round may be a retry of the answer to an earlier round.
        raise ConfigurationError(
            f"run {run_id!r}: the server of call {call_id!r} asked again after an earlier "
            f"answer; say which round this answers with round={wait.round!r} (the "
            "round of the questions shown)"
        )


def _same_answer(kept: Mapping[str, Any], answer: InputAnswer) -> bool:
    return kept.get("action") == answer.action and (kept.get("content") or None) == (
        principal_json(answer.content) or None
    )


def _question(run_id: str, call_id: str, wait: InputWait, key: str | None) -> InputRequest:
    questions = wait.questions
    if key is not None:
        for question in questions:
            if question.key == key:
                return question
        raise ConfigurationError(
            f"run {run_id!r}: call {call_id!r} has no question {key!r} (its questions: "
            f"{', '.join(repr(q.key) for q in questions)})"
        )
    still = wait.unanswered
    if len(still) == 1:
        return still[0]
    if not still and len(questions) == 1:
        return questions[0]  # answered: the same answer again is no change
    if not still:
        raise ToolwireError(f"run {run_id!r}: every question of call {call_id!r} is answered")
    raise ConfigurationError(
        f"run {run_id!r}: call {call_id!r} waits for {len(still)} answers; say which with "
        f"key= ({', '.join(repr(q.key) for q in still)})"
    )


@dataclass(frozen=True, slots=True)
class Waiting:
    """What waits for a decision (see [`waiting`][])."""

    requests: list[ApprovalRequest]
    """The requests, in the order asked for."""
    damaged: list[DamagedRecord]
    """Waiting calls whose stored record cannot be read: named so they are not lost from
    view; deciding or resuming one raises ``StoreUnavailable``, and nothing of it runs."""
    next: QueuePlace | None = None
    """Where the next page starts (``waiting(..., after=next)``); None when this page is the
    last."""


async def waiting(
    store: RunStore,
    *,
    principal: Any = None,
    run_id: str | None = None,
    limit: int = 100,
    newest_first: bool = False,
    after: QueuePlace | None = None,
) -> Waiting:
    """The calls waiting for a decision, oldest request first (newest first with
    ``newest_first``), across runs (only ``principal``'s, or ``run_id``'s, when given), and
    those whose record is damaged: what an approval screen shows. A page of ``limit`` starts
    after the place ``after`` (the previous page's ``next``): each page is one range of the
    store's index, as fast deep in the queue as at its head."""
    if limit.__class__ is not int or not 1 <= limit <= _MAX_LISTED:
        raise ConfigurationError(f"limit is an integer from 1 to {_MAX_LISTED}")
    if run_id is not None and not valid_id(run_id):
        raise ConfigurationError("a run id is a string of valid Unicode text without NUL")
    if after is not None and not isinstance(after, QueuePlace):
        raise ConfigurationError("after is a QueuePlace: the next of the page before")
    key = principal_key(principal) if principal is not None else None
    paged: dict[str, Any] = {"newest_first": True} if newest_first else {}
    if after is not None:
        paged["after"] = after  # a store of another make need not know the options unused
    found = await store.pending(run_id=run_id, principal_key=key, limit=limit, **paged)
    # an expired request waits for nothing: it is answered denied on resume
    now = await clock_of(store).now()
    requests = []
    damaged = []
    for run, record in found:
        if isinstance(record, DamagedRecord):
            damaged.append(record)
        elif not expired(record, now):
            requests.append(request_of(run, record))
    last = place_of(*found[-1]) if len(found) == limit else None
    return Waiting(requests, damaged, last)


async def pending(
    store: RunStore,
    *,
    principal: Any = None,
    run_id: str | None = None,
    limit: int = 100,
    newest_first: bool = False,
    after: QueuePlace | None = None,
) -> list[ApprovalRequest]:
    """The requests of [`waiting`][]; a waiting call whose record is damaged is logged as a
    warning on the ``toolwire`` logger (deciding it raises ``StoreUnavailable``)."""
    found = await waiting(
        store,
        principal=principal,
        run_id=run_id,
        limit=limit,
        newest_first=newest_first,
        after=after,
    )
    for damaged in found.damaged:
        _log.warning(
            "run %r: waiting call %r cannot be listed: %s",
            damaged.run_id,
            damaged.call_id,
            damaged.problem,
        )
    return found.requests


_MAX_LISTED = 10_000


@dataclass(frozen=True, slots=True, kw_only=True)
class CallTrail:
    """What a run's ledger says happened to one call, step by step (each step None when it
    did not happen): ``requested`` (``at``, ``reason``, ``expires_at``), ``decided`` (``by``,
    ``at``, ``kind``, ``reason``, ``edited``), ``claimed`` (``worker``, ``at``) and
    ``finished`` (``state``, ``error_kind``, ``at``, ``duration``). Each time is seconds since
    the epoch (``at``), beside it the same in ISO 8601, UTC (``at_utc``:
    ``2026-12-02T11:00:00.250Z``)."""

    call_id: str
    exposed_name: str
    state: CallState
    position: int | None = None
    """Where the call stood among its turn's calls (0: the model's first); None for a record
    of an earlier release."""
    requested: dict[str, Any] | None = None
    decided: dict[str, Any] | None = None
    claimed: dict[str, Any] | None = None
    finished: dict[str, Any] | None = None
    caller: dict[str, Any] | None = None
    """Who made the call when it was not the model itself (``kind``, ``type``, ``id``: code
    the model wrote, see [`Caller`][toolwire.Caller])."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "call_id": self.call_id,
            "exposed_name": self.exposed_name,
            "state": self.state,
            "position": self.position,
            "requested": self.requested,
            "decided": self.decided,
            "claimed": self.claimed,
            "finished": self.finished,
            "caller": self.caller,
        }


def trail_of(record: CallRecord) -> CallTrail:
    kept = record.kept
    decision = record.decision
    result = record.result
    finished_at = record.finished_at
    return CallTrail(
        call_id=record.call_id,
        exposed_name=record.tool,
        state=record.state,
        position=record.position,
        caller=record.caller,
        requested=(
            {
                "at": kept.requested_at,
                "at_utc": iso_utc(kept.requested_at),
                "reason": kept.reason,
                "expires_at": kept.expires_at,
                "expires_at_utc": iso_utc(kept.expires_at),
            }
            if kept is not None
            else None
        ),
        decided=(
            {
                "by": record.decided_by,
                "at": record.decided_at,
                "at_utc": iso_utc(record.decided_at),
                "kind": decision.kind,
                "reason": decision.reason,
                "edited": decision.arguments is not None,
            }
            if decision is not None
            else None
        ),
        claimed=(
            {
                "worker": record.owner,
                "at": record.started_at,
                "at_utc": iso_utc(record.started_at),
            }
            if record.owner is not None
            else None
        ),
        finished=(
            {
                "state": record.state,
                "error_kind": result.error_kind,
                "at": finished_at,
                "at_utc": iso_utc(finished_at),
                "duration": (
                    finished_at - record.started_at
                    if finished_at is not None and record.started_at is not None
                    else None
                ),
            }
            if result is not None
            else None
        ),
    )


def iso_utc(at: float | None) -> str | None:
    """``at`` (seconds since the epoch) in ISO 8601, UTC, to the millisecond; None when no
    date can say it."""
    if at is None or not isinstance(at, int | float) or not math.isfinite(at):
        return None
    try:
        moment = datetime.datetime.fromtimestamp(at, datetime.UTC)
    except (ValueError, OverflowError, OSError):  # beyond what a date can say (year 10000...)
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def history(store: RunStore, run_id: str) -> list[CallTrail]:
    """Each call of ``run_id`` with its trail, in the order the model made the calls (records
    of an earlier release, which do not say, after them by when each was asked about or
    claimed)."""
    if not valid_id(run_id):
        raise ConfigurationError("a run id is a string of valid Unicode text without NUL")
    records = await store.records(run_id)

    def first_seen(record: CallRecord) -> float:
        since = pending_since(record)
        kept = record.kept
        at = (kept.requested_at if kept is not None else None) if since is None else since[0]
        for value in (at, record.started_at, record.finished_at):
            if isinstance(value, int | float):
                return float(value)
        return float("inf")

    def order(record: CallRecord) -> tuple[int, float, float]:
        position = record.position
        return (0, position, 0.0) if position is not None else (1, 0, first_seen(record))

    return [trail_of(record) for record in sorted(records, key=order)]
