"""The record of one call, the store interface, and the record's JSON form for durable stores."""

from __future__ import annotations

import base64
import json
import operator
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, Protocol, runtime_checkable

import pydantic_core

from toolwire.approval import Decision
from toolwire.calls import (
    AudioContent,
    Content,
    EmbeddedResource,
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
    "RunStore",
    "binding_conflict",
    "decode_record",
    "encode_record",
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
    ) -> list[tuple[str, CallRecord]]:
        """Calls waiting for a decision, as ``(run_id, record)``, oldest request first, from an
        index (never a scan of every run); only those of ``run_id`` and of the principal whose
        key is ``principal_key`` when given."""
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


def decode_record(text: str | bytes, version: int) -> CallRecord:
    """A record from its JSON form.

    Raises:
        StoreUnavailable: the stored text is not a record (written by something else, or
            damaged): the run cannot be trusted, so nothing of it runs.
    """
    try:
        return _decode_record(text, version)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise StoreUnavailable(
            f"a stored call record cannot be read ({type(exc).__name__}: {exc})"
        ) from exc


def _decode_record(text: str | bytes, version: int) -> CallRecord:
    body = json.loads(text)
    decision = body.get("decision")
    result = body.get("result")
    if body["state"] not in _STATES:
        raise ValueError(f"unknown state {body['state']!r}")
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
        version=version,
        **{name: body.get(name) for name in _OPTIONAL_FIELDS},
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
_STATES = frozenset(("pending", "approved", "denied", "running", "completed", "failed"))


def _encode_result(result: ToolResult) -> dict[str, Any]:
    body: dict[str, Any] = {"content": [_encode_part(part) for part in result.content]}
    if result.structured_content is not None:
        body["structured_content"] = result.structured_content
    if result.is_error:
        body["is_error"] = True
        body["error_kind"] = result.error_kind
    return body


def _decode_result(body: dict[str, Any]) -> ToolResult:
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


def _decode_part(body: dict[str, Any]) -> Content:
    match body["type"]:
        case "text":
            return TextContent(body["text"])
        case "image":
            return ImageContent(base64.b64decode(body["data"]), body["mime_type"])
        case "audio":
            return AudioContent(base64.b64decode(body["data"]), body["mime_type"])
        case "resource_link":
            return ResourceLink(
                uri=body["uri"],
                name=body["name"],
                mime_type=body["mime_type"],
                description=body["description"],
            )
        case "resource":
            blob = body["blob"]
            return EmbeddedResource(
                uri=body["uri"],
                mime_type=body["mime_type"],
                text=body["text"],
                blob=base64.b64decode(blob) if blob is not None else None,
            )
    raise ValueError(f"unknown content part type {body['type']!r} in a stored record")
