"""The record a run keeps of one call, its typed parts, and its JSON form.

A [`CallRecord`][] is what the run ledger knows of a call: where it is (``state``), the human
decision and who made it, the claim of the worker running it (``owner``, ``started_at``,
``lease_until``), the answer, and for a call that waited, the request it keeps
([`KeptRequest`][], with an [`InputWait`][] when its MCP server asked for input). Durable
stores keep it as JSON (``toolwire.runs._record_json``).
"""

from __future__ import annotations

import datetime
import hashlib
import operator
import os
import socket
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, TypeGuard

import pydantic_core

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
from toolwire.errors import RunBindingConflict
from toolwire.inputs import InputDeferred, InputRequest
from toolwire.tool import Tool

__all__ = [
    "ANSWERED",
    "HOST",
    "INPUT_WAIT",
    "CallRecord",
    "CallState",
    "InputWait",
    "KeptRequest",
    "answered_state",
    "awaits_input",
    "binding_for",
    "check_binding",
    "decided_for",
    "expired",
    "fingerprint",
    "held",
    "input_record",
    "input_resume",
    "input_round",
    "interrupted_answer",
    "owner_gone",
    "pending_since",
    "principal_key",
    "request_of",
    "request_record",
    "still_running_answer",
    "valid_id",
]

CallState = Literal["pending", "approved", "denied", "running", "completed", "failed"]
"""Where a call is: waiting for a decision (``pending``), decided and not yet run (``approved``,
or ``denied`` without a result), claimed by a worker (``running``), or answered (``completed``,
``failed``, or ``denied`` with the denial as its result)."""

ANSWERED: frozenset[CallState] = frozenset({"completed", "failed", "denied"})


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRecord:
    """What a run knows about one of its calls."""

    call_id: str
    tool: str
    """The name the model called the tool by."""
    fingerprint: str
    """The tool and its canonical arguments, hashed: the same id with other content is
    another call, not a resume."""
    state: CallState
    decision: Decision | None = None
    result: ToolResult | None = None
    """The answer, once the call is answered; resuming the run replays it."""
    owner: str | None = None
    """Who claimed the call to run it (an executor's worker id); kept once it is answered."""
    started_at: float | None = None
    """When it was claimed (seconds since the epoch)."""
    lease_until: float | None = None
    """While ``running``: until when the owner is known to be alive (it renews the lease as
    the call runs); past it, with no answer, the owner stopped."""
    finished_at: float | None = None
    """When the answer was recorded."""
    tool_id: str | None = None
    """The tool's identity (``server/name``, its original name) when the call was asked about:
    a decision holds only for the tool it was made for."""
    definition: str | None = None
    """The tool's [`definition_hash`][toolwire.Tool.definition_hash] when the call was asked
    about."""
    request: dict[str, Any] | None = None
    """For a call that waited for a decision, what a human is shown (JSON values): see
    ``ApprovalRequest.to_dict()``."""
    decided_by: Any = None
    """Who decided (a JSON value the decider gave)."""
    decided_at: float | None = None
    caller: dict[str, Any] | None = None
    """Who made the call when it was not the model itself: code the model wrote (see
    [`Caller`][toolwire.Caller], as JSON values)."""
    position: int | None = None
    """Where the call stands among its turn's calls (0: the model's first), so a run's
    history reads in call order."""
    wake: dict[str, Any] | None = None
    """What waits for the call to be decided, beyond the run's next turn: a durable-execution
    engine's workflow (``{"engine": "dbos", ...}``), which a decision wakes (see
    ``toolwire.ledger.register_waker``)."""
    ticket: str | None = None
    """For a call an engine runs from a ticket, the digest of the ticket its turn's planning
    made (``CallTicket.digest``): a ticket runs only when the run keeps its digest."""
    version: int = 0
    """Bumped by the store on every write; what a compare-and-swap compares."""

    @property
    def kept(self) -> KeptRequest | None:
        """The request the record keeps, typed (see ``KeptRequest``)."""
        return KeptRequest.of(self.request)

    @property
    def input_wait(self) -> InputWait | None:
        """What the call was asked by its server, when it waited for input."""
        if self.request is None:
            return None
        return InputWait.of(self.request.get(INPUT_WAIT))

    def with_(self, **changes: Any) -> CallRecord:
        """A copy with ``changes`` (several times cheaper than ``dataclasses.replace``)."""
        values = dict(zip(_RECORD_FIELDS, _record_values(self), strict=True))
        values.update(changes)
        return CallRecord(**values)


_RECORD_FIELDS = tuple(f.name for f in fields(CallRecord))
_record_values = operator.attrgetter(*_RECORD_FIELDS)


INPUT_WAIT = "input_wait"
"""Where a record's request keeps what a call waiting for input was asked (see
[`InputWait`][])."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InputWait:
    """What a call waiting for input its MCP server asked keeps in its request: the round's
    ``questions``, the ``answers`` given so far by key (action, content, by, at), the
    server's ``state`` (its ``request_state``), the ``protocol`` revision, the ``server`` and
    ``tool`` the call went to, a digest of the arguments it was ``sent`` with, the ``round``
    (an id of this pause) and how many times the call has been ``asked``."""

    questions: tuple[InputRequest, ...]
    answers: Mapping[str, Mapping[str, Any]]
    round: str | None
    asked: int
    kept: Mapping[str, Any]
    """The whole JSON form (what resuming the call sends its server)."""

    @classmethod
    def of(cls, kept: Any) -> InputWait | None:
        """The wait a request keeps (None when it keeps none)."""
        if kept is None or not isinstance(kept, Mapping):  # (None: most requests)
            return None
        listed = kept.get("questions")
        answers = kept.get("answers")
        asked = kept.get("asked")
        shown_round = kept.get("round")
        return cls(
            questions=tuple(InputRequest.from_dict(q) for q in listed)
            if isinstance(listed, list)
            else (),
            answers=dict(answers) if isinstance(answers, Mapping) else {},
            round=shown_round if isinstance(shown_round, str) else None,
            asked=asked if isinstance(asked, int) else 1,
            kept=kept,
        )

    @property
    def unanswered(self) -> list[InputRequest]:
        """The questions nobody has answered yet."""
        return [q for q in self.questions if q.key not in self.answers]

    def with_answer(self, key: str, answer: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON form with ``answer`` given to question ``key``."""
        return {**self.kept, "answers": {**self.answers, key: answer}}


@dataclass(frozen=True, slots=True, kw_only=True)
class KeptRequest:
    """What a record keeps of the request of a call that waited: what a human is shown (an
    ``ApprovalRequest``'s JSON form), whose request it is, the tool's input schema then (to
    check edited arguments), and the input wait, if its server asked for input."""

    reason: str | None
    requested_at: float | None
    expires_at: float | None
    principal_key: str
    input_schema: Any
    input_wait: InputWait | None
    kept: Mapping[str, Any]
    """The whole JSON form."""

    @classmethod
    def of(cls, kept: Mapping[str, Any] | None) -> KeptRequest | None:
        """The request a record keeps (None when it keeps none)."""
        if kept is None:
            return None
        reason = kept.get("reason")
        requested_at = kept.get("requested_at")
        expires_at = kept.get("expires_at")
        return cls(
            reason=reason if reason.__class__ is str else None,
            requested_at=requested_at if _is_number(requested_at) else None,
            expires_at=expires_at if _is_number(expires_at) else None,
            principal_key=str(kept.get("principal_key") or ""),
            input_schema=kept.get("input_schema"),
            input_wait=InputWait.of(kept.get(INPUT_WAIT)),
            kept=kept,
        )

    def expired(self, now: float) -> bool:
        """True once ``expires_at`` has passed."""
        return self.expires_at is not None and now >= self.expires_at


def _is_number(value: Any) -> TypeGuard[float]:
    kind = value.__class__
    if kind is float or kind is int:  # what JSON gives: checked first, as it is listed often
        return True
    return isinstance(value, int | float) and not isinstance(value, bool)


def pending_since(record: CallRecord) -> tuple[float, str] | None:
    """Where a record stands in the pending index: (requested at, principal key), or None
    when it waits for nothing."""
    if record.state != "pending":
        return None
    kept = record.kept  # a record of an earlier release keeps none: listed first
    if kept is None:
        return (0.0, "")
    return (float(kept.requested_at or 0.0), kept.principal_key)


# -- what a record says ----------------------------------------------------------------------
# Pure readings of records (and of what identifies calls, principals and runs), shared by the
# planner, the run and the ledger's operations.


def fingerprint(call: ToolCall) -> str:
    """The call's tool and arguments, hashed (stripped nulls don't count)."""
    arguments = strip_nulls(call.arguments, call.null_paths) if call.null_paths else call.arguments
    return stable_call_id(call.exposed_name, arguments, 0)


def principal_key(principal: Any) -> str:
    """A short key for a principal: equal JSON forms give equal keys."""
    if principal is None:
        return _NO_PRINCIPAL
    encoded = canonical_json(principal_json(principal))
    return hashlib.sha256(encoded.encode("utf-8", "surrogatepass")).hexdigest()[:32]


_NO_PRINCIPAL = hashlib.sha256(b"null").hexdigest()[:32]


def binding_for(
    principal: Any,
    calls: Iterable[tuple[str, str]],
    place: str | None = None,
    provenance: str | None = None,
) -> str:
    """What a run is for: its principal's key, its calls' ``(id, fingerprint)`` pairs, and,
    when the caller names them, the turn's place in its conversation (hashed) and its
    provenance's fingerprint (``Provenance.fingerprint``)."""
    listed = canonical_json(sorted(calls))
    digest = hashlib.sha256(listed.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    bound = {"principal": principal_key(principal), "calls": digest}
    if place is not None:
        bound["place"] = hashlib.sha256(place.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    if provenance is not None:
        bound["provenance"] = provenance
    return canonical_json(bound)


def check_binding(run_id: str, stored: str | None, wanted: str) -> None:
    """Raise when a run is resumed for another principal, another turn of its conversation
    or another model response.

    Raises:
        RunBindingConflict: saying which.
    """
    if stored is None or stored == wanted:
        return
    try:
        before = pydantic_core.from_json(stored)
        now = pydantic_core.from_json(wanted)
        other_principal = before.get("principal") != now.get("principal")
        other_place = before.get("place") != now.get("place")
        other_provenance = before.get("provenance") != now.get("provenance")
    except (ValueError, AttributeError):
        other_principal = other_place = other_provenance = False
    if other_principal:
        raise RunBindingConflict(
            f"run {run_id!r} belongs to another principal; a run is resumed only by the "
            "principal it was started for"
        )
    if other_place:
        raise RunBindingConflict(
            f"run {run_id!r} was started for another turn of its conversation (another "
            "place); a run answers only the turn it was started for: name each turn's run "
            "on its own"
        )
    if other_provenance:
        raise RunBindingConflict(
            f"run {run_id!r} was started under another provenance (what the model had read "
            "and was told before the turn); resume a turn with the provenance it started with"
        )
    raise RunBindingConflict(
        f"run id {run_id!r} already used for another model response (other calls); choose "
        "a new run id per model response"
    )


def valid_id(value: Any) -> bool:
    """A run or call id a store can keep: a string of valid Unicode text without NUL."""
    return isinstance(value, str) and "\x00" not in value and not has_lone_surrogate(value)


def caller_json(call: ToolCall) -> dict[str, Any] | None:
    """What a record keeps of who made ``call``: None for the model itself."""
    return call.caller.to_dict() if call.caller.kind != "direct" else None


def request_record(
    request: ApprovalRequest,
    call: ToolCall,
    *,
    seen: CallRecord | None = None,
    wake: dict[str, Any] | None = None,
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
    waited = seen.input_wait if seen is not None else None
    if waited is not None:
        kept[INPUT_WAIT] = waited.kept
    return CallRecord(
        call_id=request.call_id,
        tool=request.exposed_name,
        fingerprint=fingerprint(call),
        state="pending",
        tool_id=tool.qualified_name,
        definition=tool.definition_hash,
        request=kept,
        caller=caller_json(call),
        wake=wake,
        ticket=seen.ticket if seen is not None else None,
    )


# -- a call waiting for input ------------------------------------------------------------------


def awaits_input(record: CallRecord) -> bool:
    """True for a call that waits for an answer to a question its server asked."""
    wait = record.input_wait
    return wait is not None and record.result is None and bool(wait.unanswered)


def input_resume(record: CallRecord | None) -> Mapping[str, Any] | None:
    """What resuming a call that waited for input sends its server (the questions, every
    answer, the server's state), once every question is answered; None otherwise."""
    wait = record.input_wait if record is not None else None
    if record is None or wait is None or awaits_input(record):
        return None
    return wait.kept


def input_round(record: CallRecord) -> str | None:
    """The round of the questions a call waiting for input was asked (see ``respond``)."""
    wait = record.input_wait
    return wait.round if wait is not None else None


def input_record(base: CallRecord, request: ApprovalRequest, waiting: InputDeferred) -> CallRecord:
    """``base`` (the call's claim, or a new record of it) waiting for input: ``pending``,
    keeping ``request`` and the server's round (its questions, the answers given at once, its
    state)."""
    now = time.time()
    answers = {
        key: {**answer.to_dict(), "by": "elicitor", "at": now}
        for key, answer in waiting.answered.items()
    }
    earlier = base.input_wait  # the call waited before: this is its server's next round
    asked = earlier.asked if earlier is not None else 0
    kept = {
        **request.to_dict(),
        "principal_key": principal_key(request.principal),
        INPUT_WAIT: {
            "questions": [q.to_dict() for q in waiting.questions],
            "answers": answers,
            "state": waiting.state,
            "protocol": waiting.protocol,
            "server": request.server,  # the call the state belongs to, checked on resume
            "tool": request.tool_name,
            "sent": waiting.sent,
            "round": uuid.uuid4().hex[:16],
            "asked": asked + 1,
        },
    }
    return base.with_(state="pending", request=principal_json(kept), lease_until=None, result=None)


def decided_for(record: CallRecord, tool: Tool) -> bool:
    """True when ``record``'s decision was made for ``tool`` as it is defined now."""
    return record.tool_id == tool.qualified_name and record.definition == tool.definition_hash


def request_of(run_id: str, record: CallRecord) -> ApprovalRequest:
    """The request a ``pending`` record keeps, as an [`ApprovalRequest`][] (no ``Tool``);
    for a call waiting for input, with the questions still unanswered."""
    request = record.request or {}
    kept = {"exposed_name": record.tool, **request, "run_id": run_id, "call_id": record.call_id}
    if INPUT_WAIT in request:  # (looked up first: most requests wait for approval only)
        wait = record.input_wait
        if wait is not None:
            kept["input"] = [{**q.to_dict(), "round": wait.round} for q in wait.unanswered]
    return ApprovalRequest.from_dict(kept)


def expired(record: CallRecord, now: float | None = None) -> bool:
    """True for a request whose ``expires_at`` has passed by ``now``: the store's time
    (``toolwire.ledger.store_time``), which the deadline was written in; this host's when
    not given."""
    request = record.request  # (read alone, not as a KeptRequest: a queue page asks fifty)
    if request is None:
        return False
    expires_at = request.get("expires_at")
    return _is_number(expires_at) and (time.time() if now is None else now) >= expires_at


HOST = socket.gethostname()


def held(record: CallRecord, now: float | None = None) -> bool:
    """True while a running call's claim is held: its lease not run out by ``now`` (the
    store's time, ``toolwire.ledger.store_time``, which the lease was written in; this host's
    when not given), its owner not a process of this machine known to be gone."""
    lease = record.lease_until
    if now is None:
        now = time.time()
    return lease is not None and lease > now and not owner_gone(record.owner)


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
