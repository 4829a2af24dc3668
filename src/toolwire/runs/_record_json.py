"""A call's record as JSON, the form durable stores keep it in, and the one way back.

[`encode_record`][] writes a [`CallRecord`][toolwire.runs.store.CallRecord] as JSON (its version is
kept beside it by the store); [`decode_record`][] reads one, its whole shape checked
(a damaged record is ``StoreUnavailable``: nothing of it runs), and builds the record as it
checks, inside pydantic-core. What the approval queue lists is here too: a record that cannot
be read ([`DamagedRecord`][]) and where a waiting call stands ([`QueuePlace`][]).
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
from dataclasses import dataclass, fields
from typing import Annotated, Any, Literal, NotRequired

import pydantic
import pydantic_core
from pydantic import ConfigDict, with_config
from pydantic_core import core_schema
from typing_extensions import TypedDict

from toolwire.approval import ApprovalRequest, Decision
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
from toolwire.errors import ConfigurationError, StoreUnavailable
from toolwire.runs._record import CallRecord, CallState, pending_since

__all__ = [
    "DamagedRecord",
    "QueuePlace",
    "checked_result",
    "checked_wake",
    "decode_record",
    "decode_result",
    "encode_record",
    "encode_result",
    "listed_record",
    "place_of",
]


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
        body["result"] = encode_result(record.result)
    for name in _OPTIONAL_FIELDS:
        value = getattr(record, name)
        if value is not None:
            body[name] = value
    # pydantic_core writes what json can't (datetimes, UUIDs...) that tools put in structured
    # content; anything stranger is kept as its str().
    return pydantic_core.to_json(body, fallback=str).decode()


def _names_non_finite(text: str | bytes) -> bool:
    """Whether a record's JSON text holds ``NaN`` or ``Infinity`` anywhere (a cheap scan)."""
    if isinstance(text, bytes):
        return b"NaN" in text or b"Infinity" in text
    return "NaN" in text or "Infinity" in text


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
        # Parsed and checked in one pass; the parser of ``validate_json`` takes NaN and
        # Infinity where a field holds any JSON value (an argument, a result), so a text that
        # names them (in a string, most likely) is parsed again without them first. A record
        # never holds a lone surrogate: it could not have been written.
        if _names_non_finite(text):
            pydantic_core.from_json(text, allow_inf_nan=False)
        record: CallRecord = _record_reader().validate_json(text, strict=True)
    except pydantic.ValidationError as exc:
        raise StoreUnavailable(f"{which} cannot be read: {_first_error(exc)}") from None
    except (ValueError, TypeError, KeyError, RecursionError) as exc:  # not JSON, bad base64
        raise StoreUnavailable(
            f"{which} cannot be read ({type(exc).__name__}: {str(exc)[:200]})"
        ) from None
    if call_id is not None and record.call_id != call_id:
        raise StoreUnavailable(f"{which} cannot be read: it names another call")
    # The version is the store's, kept beside the JSON form: set on the record just built,
    # before anything else holds it.
    object.__setattr__(record, "version", version)
    return record


@dataclass(frozen=True, slots=True)
class DamagedRecord:
    """A waiting call whose stored record cannot be read: listed by ``RunStore.pending`` so it
    is not lost from view; nothing of it runs."""

    run_id: str
    call_id: str
    problem: str
    """What is wrong with it."""
    since: float | None = None
    """When it was put up, by the store's index (where it stands in the queue)."""


@dataclass(frozen=True, slots=True, order=True)
class QueuePlace:
    """Where a waiting call stands in the approval queue: when it was put up, then its run and
    call ids (for calls put up at the same time). A page of ``RunStore.pending`` starts after
    the place of the last call of the page before (keyset pagination)."""

    since: float
    run_id: str
    call_id: str

    @classmethod
    def of(cls, request: ApprovalRequest) -> QueuePlace:
        """Where a listed request stands (the next page starts after the last one's)."""
        return cls(float(request.requested_at or 0.0), request.run_id, request.call_id)


def place_of(run_id: str, item: CallRecord | DamagedRecord) -> QueuePlace | None:
    """Where a listed call stands in the queue (None when its record says it waits for
    nothing)."""
    if isinstance(item, DamagedRecord):
        return QueuePlace(item.since, run_id, item.call_id) if item.since is not None else None
    listed = pending_since(item)
    return QueuePlace(listed[0], run_id, item.call_id) if listed is not None else None


def listed_record(
    run_id: str, call_id: str, text: str | bytes, version: int, since: float | None = None
) -> CallRecord | DamagedRecord:
    """A record a store lists as pending, or what is wrong with it."""
    try:
        return decode_record(text, version, call_id=call_id)
    except StoreUnavailable as exc:
        return DamagedRecord(run_id, call_id, str(exc), since)


def _first_error(exc: pydantic.ValidationError) -> str:
    """The first problem pydantic found, as ``field.path: message`` (the value left out: it
    may be anything, of any size)."""
    first = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "the record"
    more = exc.error_count() - 1
    return f"{where}: {first['msg']}" + (f" (and {more} more)" if more else "")


def _decision_from(body: _DecisionForm | None) -> Decision | None:
    if body is None:
        return None
    return Decision(body["kind"], body["reason"], arguments=body.get("arguments"))


def _result_from(body: _ResultForm | None) -> ToolResult | None:
    return decode_result(body) if body is not None else None


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
    "caller",
    "position",
    "wake",
    "ticket",
)
"""Fields written only when set (the JSON form of older records lacks them)."""


# The JSON form's shape, checked whole when a record is read (strict: a number is not a
# string of digits). Parts a later release may add to are open (extra keys kept).

# A time is a finite number: NaN would never expire, and no date shows an infinity.
_CLOSED = ConfigDict(allow_inf_nan=False)
_OPEN = ConfigDict(extra="allow", allow_inf_nan=False)


class _DecisionForm(TypedDict):
    kind: Literal["allow", "deny", "halt"]
    reason: str | None
    arguments: NotRequired[dict[str, Any] | None]


class _TextForm(TypedDict):
    type: Literal["text"]
    text: str
    annotations: NotRequired[dict[str, Any]]


class _MediaForm(TypedDict):
    type: Literal["image", "audio"]
    data: str
    mime_type: str
    annotations: NotRequired[dict[str, Any]]


class _LinkForm(TypedDict):
    type: Literal["resource_link"]
    uri: str
    name: str | None
    mime_type: str | None
    description: str | None
    annotations: NotRequired[dict[str, Any]]


class _ResourceForm(TypedDict):
    type: Literal["resource"]
    uri: str
    mime_type: str | None
    text: str | None
    blob: str | None
    annotations: NotRequired[dict[str, Any]]


_PartForm = Annotated[
    _TextForm | _MediaForm | _LinkForm | _ResourceForm, pydantic.Field(discriminator="type")
]


class _ResultForm(TypedDict):
    content: list[_PartForm]
    structured_content: NotRequired[dict[str, Any] | None]
    is_error: NotRequired[bool]
    error_kind: NotRequired[ErrorKind | None]
    value: NotRequired[Any]


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


@with_config(_OPEN)
class _CallerForm(TypedDict):
    kind: Literal["direct", "code"]
    type: str
    id: str | None


@with_config(_OPEN)
class _WakeForm(TypedDict):
    engine: str


@with_config(_CLOSED)
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
    caller: NotRequired[_CallerForm | None]
    position: NotRequired[int | None]
    wake: NotRequired[_WakeForm | None]
    ticket: NotRequired[str | None]


@functools.cache
def _record_reader() -> pydantic_core.SchemaValidator:
    """One validator that checks a record's JSON form whole (``_RecordForm``) and builds the
    ``CallRecord`` as it goes, inside pydantic-core: no dict of the form in between, and no
    Python constructor call (a queue page reads fifty records; this halves each read). Built
    on first use, as the forms below: a process that keeps no run does not pay for them."""
    generated = pydantic.TypeAdapter(_RecordForm).core_schema
    form = generated["schema"] if generated["type"] == "definitions" else generated
    if form["type"] != "typed-dict":
        raise RuntimeError(f"pydantic's schema of a record is a {form['type']!r}")
    built = {"decision": _decision_from, "result": _result_from}
    arguments = []
    for name, field in form["fields"].items():
        schema = field["schema"]
        if name in built:
            schema = core_schema.no_info_after_validator_function(built[name], schema)
        if not field.get("required", True):
            schema = core_schema.with_default_schema(schema, default=None)
        arguments.append(core_schema.dataclass_field(name, schema, kw_only=True))
    names = [f.name for f in fields(CallRecord)]
    if sorted(names) != sorted([*form["fields"], "version"]):
        raise RuntimeError("a CallRecord field is missing from its JSON form, or the reverse")
    config = form.get("config") or core_schema.CoreConfig()
    reader: core_schema.CoreSchema = core_schema.dataclass_schema(
        CallRecord,
        core_schema.dataclass_args_schema("CallRecord", arguments),
        names,
        slots=True,
        frozen=True,
        config=config,
    )
    if generated["type"] == "definitions":
        reader = core_schema.definitions_schema(reader, generated["definitions"])
    return pydantic_core.SchemaValidator(reader, config)


@functools.cache
def _form(kind: type) -> pydantic.TypeAdapter[Any]:
    return pydantic.TypeAdapter(kind)


def checked_wake(wake: Any) -> dict[str, Any]:
    """``wake`` as a record keeps it: an object naming its ``engine``, of JSON values.

    Raises:
        ConfigurationError: a record keeping it could not be read back.
    """
    what = "wake is an object naming its engine, of JSON values"
    try:
        return dict(_form(_WakeForm).validate_json(json.dumps(wake, allow_nan=False), strict=True))
    except pydantic.ValidationError as exc:
        raise ConfigurationError(f"{what} ({_first_error(exc)})") from None
    except (TypeError, ValueError, RecursionError) as exc:  # not JSON values, or too deep
        raise ConfigurationError(f"{what} ({str(exc)[:200]})") from None


def encode_result(result: ToolResult) -> dict[str, Any]:
    body: dict[str, Any] = {"content": [_encode_part(part) for part in result.content]}
    if result.structured_content is not None:
        body["structured_content"] = result.structured_content
    if result.is_error:
        body["is_error"] = True
        body["error_kind"] = result.error_kind
    if result.value is not None:
        body["value"] = result.value
    return body


def checked_result(body: Any) -> ToolResult:
    """A result from its JSON form (``encode_result``'s) as read from outside a record: an
    engine's checkpoint, say. Checked whole first.

    Raises:
        pydantic.ValidationError: ``body`` is not such a form.
    """
    return decode_result(_form(_ResultForm).validate_python(body, strict=True))


def decode_result(body: _ResultForm) -> ToolResult:
    return ToolResult(
        content=tuple(_decode_part(part) for part in body["content"]),
        structured_content=body.get("structured_content"),
        is_error=body.get("is_error", False),
        error_kind=body.get("error_kind"),
        value=body.get("value"),
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _encode_part(part: Content) -> dict[str, Any]:
    encoded = _encode_body(part)
    if part.annotations is not None:
        encoded["annotations"] = dict(part.annotations)
    return encoded


def _encode_body(part: Content) -> dict[str, Any]:
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
    part = _decode_body(body)
    annotations = body.get("annotations")
    return part if annotations is None else dataclasses.replace(part, annotations=annotations)


def _decode_body(body: _PartForm) -> Content:
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
