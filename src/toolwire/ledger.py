"""The run ledger: what a run store keeps about calls, and the operations on it that need no
executor (deciding, listing what waits, reading a run's history).

A run is bound to what it was started for: its principal and its calls (ids and
fingerprints). Each waiting call keeps its request (what a human is shown), and each decision
the tool it was made for (identity and definition hash): a decision made for another tool, or
for a definition that has changed since, is void.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import pydantic_core

from toolwire._text import blank
from toolwire.approval import ApprovalRequest, Decision
from toolwire.calls import (
    ToolCall,
    ToolResult,
    canonical_json,
    has_lone_surrogate,
    principal_json,
    stable_call_id,
    strip_nulls,
)
from toolwire.errors import ConfigurationError, RunBindingConflict, ToolwireError
from toolwire.inputs import InputAnswer, InputDeferred, InputRequest, checked_answer
from toolwire.store import CallRecord, CallState, DamagedRecord, RunStore
from toolwire.store._base import pending_since
from toolwire.tool import Tool

__all__ = [
    "HOST",
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
    "owner_gone",
    "pending",
    "principal_json",
    "principal_key",
    "request_of",
    "request_record",
    "respond",
    "still_running_answer",
    "trail_of",
    "valid_id",
    "waiting",
]

_log = logging.getLogger("toolwire")

SWAP_ATTEMPTS = 8
"""Compare-and-swap retries before a store write gives up (each retry means another worker
wrote the same call in between; more than a few is a store out of order)."""


# -- what identifies calls, principals and runs ------------------------------------------------


def fingerprint(call: ToolCall) -> str:
    """The call's tool and arguments, hashed (stripped nulls don't count)."""
    arguments = strip_nulls(call.arguments, call.null_paths) if call.null_paths else call.arguments
    return stable_call_id(call.exposed_name, arguments, 0)


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


def principal_key(principal: Any) -> str:
    """A short key for a principal: equal JSON forms give equal keys."""
    if principal is None:
        return _NO_PRINCIPAL
    encoded = canonical_json(principal_json(principal))
    return hashlib.sha256(encoded.encode("utf-8", "surrogatepass")).hexdigest()[:32]


_NO_PRINCIPAL = hashlib.sha256(b"null").hexdigest()[:32]


def binding_for(principal: Any, calls: Iterable[tuple[str, str]]) -> str:
    """What a run is for: its principal's key and its calls' ``(id, fingerprint)`` pairs."""
    listed = canonical_json(sorted(calls))
    digest = hashlib.sha256(listed.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return canonical_json({"principal": principal_key(principal), "calls": digest})


def check_binding(run_id: str, stored: str | None, wanted: str) -> None:
    """Raise when a run is resumed for another principal or another model response.

    Raises:
        RunBindingConflict: saying which.
    """
    if stored is None or stored == wanted:
        return
    try:
        before = pydantic_core.from_json(stored)
        now = pydantic_core.from_json(wanted)
        other_principal = before.get("principal") != now.get("principal")
    except (ValueError, AttributeError):
        other_principal = False
    if other_principal:
        raise RunBindingConflict(
            f"run {run_id!r} belongs to another principal; a run is resumed only by the "
            "principal it was started for"
        )
    raise RunBindingConflict(
        f"run id {run_id!r} already used for another model response (other calls); choose "
        "a new run id per model response"
    )


def valid_id(value: Any) -> bool:
    """A run or call id a store can keep: a string of valid Unicode text without NUL."""
    return isinstance(value, str) and "\x00" not in value and not has_lone_surrogate(value)


# -- the request a waiting call keeps ---------------------------------------------------------


def request_record(
    request: ApprovalRequest, call: ToolCall, *, seen: CallRecord | None = None
) -> CallRecord:
    """The ``pending`` record of a call waiting for a decision, keeping ``request`` (whose
    arguments are already what the run may keep), and the input the call was given when it
    waited for input before (``seen``: resumed, it continues the server's call)."""
    tool = call.tool
    kept = {
        **request.to_dict(),
        "principal_key": principal_key(request.principal),
        "input_schema": principal_json(tool.input_schema),
    }
    waited = _input_wait(seen) if seen is not None else None
    if waited is not None:
        kept[_INPUT_WAIT] = waited
    return CallRecord(
        call_id=request.call_id,
        tool=request.exposed_name,
        fingerprint=fingerprint(call),
        state="pending",
        tool_id=tool.qualified_name,
        definition=tool.definition_hash,
        request=kept,
    )


# -- a call waiting for input ------------------------------------------------------------------

_INPUT_WAIT = "input_wait"
"""Where a record's request keeps what a call waiting for input was asked: ``questions`` (each
an ``InputRequest.to_dict()``), ``answers`` by key (action, content, by, at), the server's
``state`` (its ``request_state``), the ``protocol`` revision, the ``server`` and ``tool`` the
call went to, a digest of the arguments it was ``sent`` with, the ``round`` (an id of this
pause) and how many times the call has been ``asked``."""


def _input_wait(record: CallRecord | None) -> dict[str, Any] | None:
    kept = (record.request or {}).get(_INPUT_WAIT) if record is not None else None
    return kept if isinstance(kept, dict) else None


def _asked(wait: Mapping[str, Any]) -> int:
    """How many times the call has waited for input, this time included."""
    asked = wait.get("asked")
    return asked if isinstance(asked, int) else 1


def _questions(wait: Mapping[str, Any]) -> list[InputRequest]:
    listed = wait.get("questions")
    return [InputRequest.from_dict(q) for q in listed] if isinstance(listed, list) else []


def _answers(wait: Mapping[str, Any]) -> dict[str, Any]:
    answers = wait.get("answers")
    return dict(answers) if isinstance(answers, Mapping) else {}


def awaits_input(record: CallRecord) -> bool:
    """True for a call that waits for an answer to a question its server asked."""
    wait = _input_wait(record)
    if wait is None or record.result is not None:
        return False
    answers = _answers(wait)
    return any(q.key not in answers for q in _questions(wait))


def input_resume(record: CallRecord | None) -> dict[str, Any] | None:
    """What resuming a call that waited for input sends its server (the questions, every
    answer, the server's state), once every question is answered; None otherwise."""
    wait = _input_wait(record)
    if record is None or wait is None or awaits_input(record):
        return None
    return wait


def input_round(record: CallRecord) -> str | None:
    """The round of the questions a call waiting for input was asked (see ``respond``)."""
    wait = _input_wait(record)
    return wait.get("round") if wait is not None else None


def input_record(base: CallRecord, request: ApprovalRequest, waiting: InputDeferred) -> CallRecord:
    """``base`` (the call's claim, or a new record of it) waiting for input: ``pending``,
    keeping ``request`` and the server's round (its questions, the answers given at once, its
    state)."""
    now = time.time()
    answers = {
        key: {**answer.to_dict(), "by": "elicitor", "at": now}
        for key, answer in waiting.answered.items()
    }
    earlier = _input_wait(base)  # the call waited before: this is its server's next round
    asked = earlier.get("asked", 1) if earlier is not None else 0
    kept = {
        **request.to_dict(),
        "principal_key": principal_key(request.principal),
        _INPUT_WAIT: {
            "questions": [q.to_dict() for q in waiting.questions],
            "answers": answers,
            "state": waiting.state,
            "protocol": waiting.protocol,
            "server": request.server,  # the call the state belongs to, checked on resume
            "tool": request.tool_name,
            "sent": waiting.sent,
            "round": uuid.uuid4().hex[:16],
            "asked": (asked if isinstance(asked, int) else 1) + 1,
        },
    }
    return base.with_(state="pending", request=principal_json(kept), lease_until=None, result=None)


def decided_for(record: CallRecord, tool: Tool) -> bool:
    """True when ``record``'s decision was made for ``tool`` as it is defined now."""
    return record.tool_id == tool.qualified_name and record.definition == tool.definition_hash


def request_of(run_id: str, record: CallRecord) -> ApprovalRequest:
    """The request a ``pending`` record keeps, as an [`ApprovalRequest`][] (no ``Tool``);
    for a call waiting for input, with the questions still unanswered."""
    kept = dict(record.request or {})
    kept.update(run_id=run_id, call_id=record.call_id)
    kept.setdefault("exposed_name", record.tool)
    wait = _input_wait(record)
    if wait is not None:
        answers = _answers(wait)
        shown_round = wait.get("round")
        kept["input"] = [
            {**q.to_dict(), "round": shown_round} for q in _questions(wait) if q.key not in answers
        ]
    return ApprovalRequest.from_dict(kept)


def expired(record: CallRecord, now: float | None = None) -> bool:
    """True for a request whose ``expires_at`` has passed."""
    expires = (record.request or {}).get("expires_at")
    return isinstance(expires, int | float) and (now or time.time()) >= expires


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
    checked = False
    by = principal_json(by)
    for _ in range(SWAP_ATTEMPTS):
        record = await store.get(run_id, call_id)
        if (
            record is None
            or record.result is not None
            or record.state not in ("pending", "approved", "denied")
        ):
            raise ToolwireError(f"run {run_id!r} has no call {call_id!r} waiting for approval")
        if expired(record):
            raise ToolwireError(f"run {run_id!r}: the approval request of call {call_id!r} expired")
        if decision.allowed and awaits_input(record):
            raise ToolwireError(
                f"run {run_id!r}: call {call_id!r} waits for input, not for approval: answer "
                "it with toolwire.respond (a deny or halt stops the call)"
            )
        earlier = record.decision
        if earlier is not None and not _tightens(earlier, decision):
            if earlier == decision:
                return  # said again
            raise ToolwireError(
                f"run {run_id!r}: call {call_id!r} is already decided ({earlier.kind}); a "
                "decision is final, and may only be tightened (an allow to a deny or halt)"
            )
        if decision.arguments is not None and not checked:
            _check_edited(record, decision.arguments)
            checked = True
        changed = record.with_(
            state=state, decision=decision, decided_by=by, decided_at=time.time()
        )
        if await store.swap(run_id, record, changed) is not None:
            return
    raise ToolwireError(f"run {run_id!r}: call {call_id!r} kept changing; decide again")


def _tightens(earlier: Decision, later: Decision) -> bool:
    """True when ``later`` allows less than ``earlier``: only an allow may be taken back."""
    return earlier.allowed and not later.allowed


def _check_edited(record: CallRecord, arguments: Mapping[str, Any]) -> None:
    schema = (record.request or {}).get("input_schema")
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
    for _ in range(SWAP_ATTEMPTS):
        record = await store.get(run_id, call_id)
        wait = _input_wait(record)
        if (
            record is None
            or wait is None
            or record.result is not None
            or record.state
            not in (
                "pending",
                "approved",
            )
        ):
            raise ToolwireError(f"run {run_id!r} has no call {call_id!r} waiting for input")
        if expired(record):
            raise ToolwireError(f"run {run_id!r}: the input request of call {call_id!r} expired")
        if round is not None and wait.get("round") != round:
            raise ToolwireError(
                f"run {run_id!r}: call {call_id!r} no longer waits on round {round!r} (its "
                "server asked again since); answer what it asks now"
            )
        if round is None and _asked(wait) > 1:
            # An answer without a round may be a retry of the answer to an earlier round.
            raise ConfigurationError(
                f"run {run_id!r}: the server of call {call_id!r} asked again after an earlier "
                f"answer; say which round this answers with round={wait.get('round')!r} (the "
                "round of the questions shown)"
            )
        questions = _questions(wait)
        answers = _answers(wait)
        question = _question(run_id, call_id, questions, answers, key)
        checked = checked_answer(
            question, answer, label=f"the answer to {record.tool}'s question {question.key!r}"
        )
        earlier = answers.get(question.key)
        if earlier is not None:
            if _same_answer(earlier, checked):
                return  # said again
            raise ToolwireError(
                f"run {run_id!r}: the question {question.key!r} of call {call_id!r} is already "
                "answered; an answer is final"
            )
        answers[question.key] = principal_json({**checked.to_dict(), "by": by, "at": time.time()})
        every = all(q.key in answers for q in questions)
        request = {**(record.request or {}), _INPUT_WAIT: {**wait, "answers": answers}}
        # Every question answered, the call leaves the waiting list: it runs on the next resume.
        changed = record.with_(state="approved" if every else "pending", request=request)
        if await store.swap(run_id, record, changed) is not None:
            return
    raise ToolwireError(f"run {run_id!r}: call {call_id!r} kept changing; answer again")


def _same_answer(kept: Mapping[str, Any], answer: InputAnswer) -> bool:
    return kept.get("action") == answer.action and (kept.get("content") or None) == (
        principal_json(answer.content) or None
    )


def _question(
    run_id: str,
    call_id: str,
    questions: list[InputRequest],
    answers: Mapping[str, Any],
    key: str | None,
) -> InputRequest:
    if key is not None:
        for question in questions:
            if question.key == key:
                return question
        raise ConfigurationError(
            f"run {run_id!r}: call {call_id!r} has no question {key!r} (its questions: "
            f"{', '.join(repr(q.key) for q in questions)})"
        )
    still = [q for q in questions if q.key not in answers]
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
    """The requests, oldest first."""
    damaged: list[DamagedRecord]
    """Waiting calls whose stored record cannot be read: named so they are not lost from
    view; deciding or resuming one raises ``StoreUnavailable``, and nothing of it runs."""


async def waiting(
    store: RunStore,
    *,
    principal: Any = None,
    run_id: str | None = None,
    limit: int = 100,
) -> Waiting:
    """The calls waiting for a decision, oldest request first, across runs (only
    ``principal``'s, or ``run_id``'s, when given), and those whose record is damaged: what an
    approval screen shows."""
    if limit.__class__ is not int or not 1 <= limit <= _MAX_LISTED:
        raise ConfigurationError(f"limit is an integer from 1 to {_MAX_LISTED}")
    if run_id is not None and not valid_id(run_id):
        raise ConfigurationError("a run id is a string of valid Unicode text without NUL")
    key = principal_key(principal) if principal is not None else None
    found = await store.pending(run_id=run_id, principal_key=key, limit=limit)
    now = time.time()  # an expired request waits for nothing: it is answered denied on resume
    requests = []
    damaged = []
    for run, record in found:
        if isinstance(record, DamagedRecord):
            damaged.append(record)
        elif not expired(record, now):
            requests.append(request_of(run, record))
    return Waiting(requests, damaged)


async def pending(
    store: RunStore,
    *,
    principal: Any = None,
    run_id: str | None = None,
    limit: int = 100,
) -> list[ApprovalRequest]:
    """The requests of [`waiting`][]; a waiting call whose record is damaged is logged as a
    warning on the ``toolwire`` logger (deciding it raises ``StoreUnavailable``)."""
    found = await waiting(store, principal=principal, run_id=run_id, limit=limit)
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
    ``finished`` (``state``, ``error_kind``, ``at``, ``duration``)."""

    call_id: str
    exposed_name: str
    state: CallState
    requested: dict[str, Any] | None = None
    decided: dict[str, Any] | None = None
    claimed: dict[str, Any] | None = None
    finished: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "call_id": self.call_id,
            "exposed_name": self.exposed_name,
            "state": self.state,
            "requested": self.requested,
            "decided": self.decided,
            "claimed": self.claimed,
            "finished": self.finished,
        }


def trail_of(record: CallRecord) -> CallTrail:
    request = record.request
    decision = record.decision
    result = record.result
    finished_at = record.finished_at
    return CallTrail(
        call_id=record.call_id,
        exposed_name=record.tool,
        state=record.state,
        requested=(
            {
                "at": request.get("requested_at"),
                "reason": request.get("reason"),
                "expires_at": request.get("expires_at"),
            }
            if request is not None
            else None
        ),
        decided=(
            {
                "by": record.decided_by,
                "at": record.decided_at,
                "kind": decision.kind,
                "reason": decision.reason,
                "edited": decision.arguments is not None,
            }
            if decision is not None
            else None
        ),
        claimed=(
            {"worker": record.owner, "at": record.started_at} if record.owner is not None else None
        ),
        finished=(
            {
                "state": record.state,
                "error_kind": result.error_kind,
                "at": finished_at,
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


async def history(store: RunStore, run_id: str) -> list[CallTrail]:
    """Each call of ``run_id`` with its trail, oldest first (by when it was asked about or
    claimed)."""
    if not valid_id(run_id):
        raise ConfigurationError("a run id is a string of valid Unicode text without NUL")
    records = await store.records(run_id)

    def first_seen(record: CallRecord) -> float:
        since = pending_since(record)
        request = record.request or {}
        at = request.get("requested_at") if since is None else since[0]
        for value in (at, record.started_at, record.finished_at):
            if isinstance(value, int | float):
                return float(value)
        return float("inf")

    return [trail_of(record) for record in sorted(records, key=first_seen)]


# -- leases ----------------------------------------------------------------------------------------


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
        try:
            renewed = await self.store.swap(
                self.run_id, current, current.with_(lease_until=time.time() + self.seconds)
            )
        except Exception:  # the store is away: the next renewal may reach it
            _log.warning("renewing the lease of %s failed", current.call_id, exc_info=True)
            return True
        if renewed is None:
            return False  # taken over after a lapse
        self.held = renewed
        return True


# -- reading a call's record ----------------------------------------------------------------------

HOST = socket.gethostname()


def held(record: CallRecord) -> bool:
    """True while a running call's claim is held: its lease not run out, its owner not a
    process of this machine known to be gone."""
    lease = record.lease_until
    return lease is not None and lease > time.time() and not owner_gone(record.owner)


def _when(at: float | None) -> str:
    if at is None:
        return "at an unknown time"
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("at %Y-%m-%d %H:%M:%S UTC")


def interrupted_answer(record: CallRecord) -> ToolResult:
    """The answer to a call whose worker stopped while running it, saying what is known."""
    owner = record.owner or "an unknown worker"
    started = _when(record.started_at)
    if owner_gone(record.owner):
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


def still_running_answer(record: CallRecord) -> ToolResult:
    """The answer to a call another live worker is still running when the wait ends."""
    return ToolResult.error(
        "unavailable",
        f"The call is still running in worker {record.owner} (started "
        f"{_when(record.started_at)[3:]}); its answer will be kept in the run: resume it later.",
    )


def owner_gone(owner: str | None) -> bool:
    """True when a claim's owner is known to be dead: a process of this machine that no longer
    exists (worker ids are ``host:pid:token``). Other machines' workers can't be checked."""
    host, _, rest = (owner or "").partition(":")
    pid = rest.partition(":")[0]
    if host != HOST or not pid.isdigit() or os.name != "posix":
        return False  # (on Windows, os.kill would end the process, not probe it)
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # e.g. another user's process: it exists
        return False
    return False


def answered_state(result: ToolResult) -> CallState:
    if result.error_kind in ("denied", "approval_denied"):
        return "denied"
    return "failed" if result.is_error else "completed"
