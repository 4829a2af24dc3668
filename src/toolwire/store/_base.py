"""The record of one call, the store interface, and the record's JSON form for durable stores."""

from __future__ import annotations

import base64
import json
import operator
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Annotated, Any, Literal, NotRequired, Protocol, runtime_checkable

import pydantic
import pydantic_core
from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from toolwire.approval import Decision
from toolwire.calls import (
    AudioContent,
    Content,
    EmbeddedResource,
    ErrorKind,
    ImageContent,
    ResourceLink,
    TextContent,
    ToolResult,
)
from toolwire.errors import RunBindingConflict, StoreUnavailable

__all__ = [
    "DEFAULT_TTL",
    "CallRecord",
    "CallState",
    "DamagedRecord",
    "RunStore",
    "binding_conflict",
    "decode_record",
    "encode_record",
    "listed_record",
    "pending_since",
]

DEFAULT_TTL = 7 * 24 * 3600.0
"""Seconds a durable store keeps a run after its last write (a week: long enough for a human
to answer an approval request, short enough that runs don't pile up)."""

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
    version: int = 0
    """Bumped by the store on every write; what a compare-and-swap compares."""

    def with_(self, **changes: Any) -> CallRecord:
        """A copy with ``changes`` (several times cheaper than ``dataclasses.replace``)."""
        values = dict(zip(_RECORD_FIELDS, _record_values(self), strict=True))
        values.update(changes)
        return CallRecord(**values)


_RECORD_FIELDS = tuple(f.name for f in fields(CallRecord))
_record_values = operator.attrgetter(*_RECORD_FIELDS)


@runtime_checkable
class RunStore(Protocol):
    """The store interface; implementations must be safe to share between tasks.

    Durable implementations are shared between processes too: ``swap`` is atomic across every
    process using the same database.
    """

    async def get(self, run_id: str, call_id: str) -> CallRecord | None:
        """The record of ``call_id`` in ``run_id``, if any (expired runs have none)."""
        ...

    async def get_many(self, run_id: str, call_ids: Sequence[str]) -> list[CallRecord | None]:
        """The records of several calls of ``run_id`` at once (one round trip), in order."""
        ...

    async def swap(
        self,
        run_id: str,
        expected: CallRecord | None,
        record: CallRecord,
        *,
        binding: str | None = None,
    ) -> CallRecord | None:
        """Store ``record`` if the call's record is still ``expected`` (None: there is none).

        Compares versions, not contents. Returns the stored record (its ``version`` one more
        than ``expected``'s), or None when another writer got there first: read it again.

        ``binding`` (what the run is for: its principal and its calls) is kept with the run by
        its first write that gives one; a later write giving another is refused. A record in
        state ``pending`` is listed by [`pending`][] until it leaves that state.

        Raises:
            RunBindingConflict: the run is bound to another principal or other calls.
            StoreUnavailable: the store cannot be reached.
        """
        ...

    async def load(
        self, run_id: str, call_ids: Sequence[str]
    ) -> tuple[str | None, list[CallRecord | None]]:
        """The run's binding (None before its first bound write) and the records of
        ``call_ids``, in order, in one round trip."""
        ...

    async def records(self, run_id: str) -> list[CallRecord]:
        """Every record of the run (its calls' trail)."""
        ...

    async def pending(
        self, *, run_id: str | None = None, principal_key: str | None = None, limit: int = 100
    ) -> list[tuple[str, CallRecord | DamagedRecord]]:
        """Calls waiting for a decision, as ``(run_id, record)``, oldest request first, from an
        index (never a scan of every run); only those of ``run_id`` and of the principal whose
        key is ``principal_key`` when given. A record that cannot be read is listed as a
        [`DamagedRecord`][] rather than failing the whole list."""
        ...


def binding_conflict(run_id: str | None) -> RunBindingConflict:
    """What a store raises when a bound write gives another binding than the run's."""
    run = f"run {run_id!r}" if run_id is not None else "the run"
    return RunBindingConflict(
        f"{run} was started for another principal or another model response; use a new run "
        "id per model response"
    )


def pending_since(record: CallRecord) -> tuple[float, str] | None:
    """Where a record stands in the pending index: (requested at, principal key), or None
    when it waits for nothing."""
    if record.state != "pending":
        return None
    request = record.request or {}  # a record of an earlier release keeps none: listed first
    requested_at = request.get("requested_at")
    return (
        float(requested_at) if isinstance(requested_at, int | float) else 0.0,
        str(request.get("principal_key") or ""),
    )


# -- the JSON form ------------------------------------------------------------------------------


def encode_record(record: CallRecord) -> str:
    """The record as JSON (without its version, which stores keep beside it)."""
    body: dict[str, Any] = {
        "call_id": record.call_id,
        "tool": record.tool,
        "fingerprint": record.fingerprint,
        "state": record.state,
    }
    if record.decision is not None:
        decision = record.decision
        body["decision"] = {"kind": decision.kind, "reason": decision.reason}
        if decision.arguments is not None:
            body["decision"]["arguments"] = dict(decision.arguments)
    if record.result is not None:
        body["result"] = _encode_result(record.result)
    for name in _OPTIONAL_FIELDS:
        value = getattr(record, name)
        if value is not None:
            body[name] = value
    # pydantic_core writes what json can't (datetimes, UUIDs...) that tools put in structured
    # content; anything stranger is kept as its str().
    return pydantic_core.to_json(body, fallback=str).decode()


def decode_record(text: str | bytes, version: int, *, call_id: str | None = None) -> CallRecord:
    """A record from its JSON form, its whole shape checked (nested parts included).

    Args:
        text: the JSON form.
        version: the version the store keeps beside it.
        call_id: the call the store keeps it under, when known: a record naming another
            call is damaged too.

    Raises:
        StoreUnavailable: the stored text is not a record of that call (written by something
            else, or damaged): the call cannot be trusted, so nothing of it runs.
    """
    which = f"the stored record of call {call_id!r}" if call_id is not None else "a stored record"
    try:
        body = _RECORD_FORM.validate_python(json.loads(text), strict=True)
        record = _record_from(body, version)
    except pydantic.ValidationError as exc:
        raise StoreUnavailable(f"{which} cannot be read: {_first_error(exc)}") from None
    except (ValueError, TypeError, KeyError, RecursionError) as exc:  # not JSON, bad base64
        raise StoreUnavailable(
            f"{which} cannot be read ({type(exc).__name__}: {str(exc)[:200]})"
        ) from None
    if call_id is not None and record.call_id != call_id:
        raise StoreUnavailable(f"{which} cannot be read: it names another call")
    return record


@dataclass(frozen=True, slots=True)
class DamagedRecord:
    """A waiting call whose stored record cannot be read: listed by ``RunStore.pending`` so it
    is not lost from view; nothing of it runs."""

    run_id: str
    call_id: str
    problem: str
    """What is wrong with it."""


def listed_record(
    run_id: str, call_id: str, text: str | bytes, version: int
) -> CallRecord | DamagedRecord:
    """A record a store lists as pending, or what is wrong with it."""
    try:
        return decode_record(text, version, call_id=call_id)
    except StoreUnavailable as exc:
        return DamagedRecord(run_id, call_id, str(exc))


def _first_error(exc: pydantic.ValidationError) -> str:
    """The first problem pydantic found, as ``field.path: message`` (the value left out: it
    may be anything, of any size)."""
    first = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "the record"
    more = exc.error_count() - 1
    return f"{where}: {first['msg']}" + (f" (and {more} more)" if more else "")


def _record_from(body: _RecordForm, version: int) -> CallRecord:
    decision = body.get("decision")
    result = body.get("result")
    return CallRecord(
        call_id=body["call_id"],
        tool=body["tool"],
        fingerprint=body["fingerprint"],
        state=body["state"],
        decision=(
            Decision(decision["kind"], decision["reason"], arguments=decision.get("arguments"))
            if decision
            else None
        ),
        result=_decode_result(result) if result is not None else None,
        owner=body.get("owner"),
        started_at=body.get("started_at"),
        lease_until=body.get("lease_until"),
        finished_at=body.get("finished_at"),
        tool_id=body.get("tool_id"),
        definition=body.get("definition"),
        request=dict(request) if (request := body.get("request")) is not None else None,
        decided_by=body.get("decided_by"),
        decided_at=body.get("decided_at"),
        version=version,
    )


_OPTIONAL_FIELDS = (
    "owner",
    "started_at",
    "lease_until",
    "finished_at",
    "tool_id",
    "definition",
    "request",
    "decided_by",
    "decided_at",
)
"""Fields written only when set (the JSON form of older records lacks them)."""


# The JSON form's shape, checked whole when a record is read (strict: a number is not a
# string of digits). Parts a later release may add to are open (extra keys kept).

_OPEN = ConfigDict(extra="allow")


class _DecisionForm(TypedDict):
    kind: Literal["allow", "deny", "halt"]
    reason: str | None
    arguments: NotRequired[dict[str, Any] | None]


class _TextForm(TypedDict):
    type: Literal["text"]
    text: str


class _MediaForm(TypedDict):
    type: Literal["image", "audio"]
    data: str
    mime_type: str


class _LinkForm(TypedDict):
    type: Literal["resource_link"]
    uri: str
    name: str | None
    mime_type: str | None
    description: str | None


class _ResourceForm(TypedDict):
    type: Literal["resource"]
    uri: str
    mime_type: str | None
    text: str | None
    blob: str | None


_PartForm = Annotated[
    _TextForm | _MediaForm | _LinkForm | _ResourceForm, pydantic.Field(discriminator="type")
]


class _ResultForm(TypedDict):
    content: list[_PartForm]
    structured_content: NotRequired[dict[str, Any] | None]
    is_error: NotRequired[bool]
    error_kind: NotRequired[ErrorKind | None]


@with_config(_OPEN)
class _QuestionForm(TypedDict):
    key: str
    message: str
    mode: NotRequired[Literal["form", "url"]]
    requested_schema: NotRequired[dict[str, Any] | None]
    url: NotRequired[str | None]
    round: NotRequired[str | None]


@with_config(_OPEN)
class _InputAnswerForm(TypedDict):
    action: Literal["accept", "decline", "cancel"]
    content: NotRequired[dict[str, Any] | None]


@with_config(_OPEN)
class _InputWaitForm(TypedDict):
    questions: list[_QuestionForm]
    answers: NotRequired[dict[str, _InputAnswerForm]]
    state: NotRequired[Any]
    protocol: NotRequired[str | None]
    server: NotRequired[str | None]
    tool: NotRequired[str | None]
    sent: NotRequired[str | None]
    round: NotRequired[str | None]
    asked: NotRequired[int]


@with_config(_OPEN)
class _RequestForm(TypedDict):
    run_id: NotRequired[str]
    call_id: NotRequired[str]
    exposed_name: NotRequired[str]
    server: NotRequired[str | None]
    tool_name: NotRequired[str | None]
    arguments: NotRequired[dict[str, Any] | None]
    principal: NotRequired[Any]
    principal_key: NotRequired[str | None]
    reason: NotRequired[str | None]
    requested_at: NotRequired[float | None]
    expires_at: NotRequired[float | None]
    input: NotRequired[list[_QuestionForm]]
    input_schema: NotRequired[Any]
    input_wait: NotRequired[_InputWaitForm]


class _RecordForm(TypedDict):
    call_id: str
    tool: str
    fingerprint: str
    state: CallState
    decision: NotRequired[_DecisionForm | None]
    result: NotRequired[_ResultForm | None]
    owner: NotRequired[str | None]
    started_at: NotRequired[float | None]
    lease_until: NotRequired[float | None]
    finished_at: NotRequired[float | None]
    tool_id: NotRequired[str | None]
    definition: NotRequired[str | None]
    request: NotRequired[_RequestForm | None]
    decided_by: NotRequired[Any]
    decided_at: NotRequired[float | None]


_RECORD_FORM = pydantic.TypeAdapter(_RecordForm)


def _encode_result(result: ToolResult) -> dict[str, Any]:
    body: dict[str, Any] = {"content": [_encode_part(part) for part in result.content]}
    if result.structured_content is not None:
        body["structured_content"] = result.structured_content
    if result.is_error:
        body["is_error"] = True
        body["error_kind"] = result.error_kind
    return body


def _decode_result(body: _ResultForm) -> ToolResult:
    return ToolResult(
        content=tuple(_decode_part(part) for part in body["content"]),
        structured_content=body.get("structured_content"),
        is_error=body.get("is_error", False),
        error_kind=body.get("error_kind"),
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _encode_part(part: Content) -> dict[str, Any]:
    match part:
        case TextContent(text=text):
            return {"type": "text", "text": text}
        case ImageContent(data=data, mime_type=mime):
            return {"type": "image", "data": _b64(data), "mime_type": mime}
        case AudioContent(data=data, mime_type=mime):
            return {"type": "audio", "data": _b64(data), "mime_type": mime}
        case ResourceLink():
            return {
                "type": "resource_link",
                "uri": part.uri,
                "name": part.name,
                "mime_type": part.mime_type,
                "description": part.description,
            }
        case EmbeddedResource():
            return {
                "type": "resource",
                "uri": part.uri,
                "mime_type": part.mime_type,
                "text": part.text,
                "blob": _b64(part.blob) if part.blob is not None else None,
            }
    raise TypeError(f"not a content part: {part!r}")  # pragma: no cover - exhaustive above


def _decode_part(body: _PartForm) -> Content:
    if body["type"] == "text":
        return TextContent(body["text"])
    if body["type"] == "image":
        return ImageContent(_unb64(body["data"]), body["mime_type"])
    if body["type"] == "audio":
        return AudioContent(_unb64(body["data"]), body["mime_type"])
    if body["type"] == "resource_link":
        return ResourceLink(
            uri=body["uri"],
            name=body["name"],
            mime_type=body["mime_type"],
            description=body["description"],
        )
    blob = body["blob"]
    return EmbeddedResource(
        uri=body["uri"],
        mime_type=body["mime_type"],
        text=body["text"],
        blob=_unb64(blob) if blob is not None else None,
    )


def _unb64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)  # binascii.Error (a ValueError) if damaged
