"""What flows between the model and the tools: calls, results and their content parts."""

from __future__ import annotations

import base64
import enum
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, get_args

import pydantic_core

from toolwire._values import (
    MAX_ARGUMENT_DEPTH,
    MAX_INTEGER_BITS,
    MAX_INTEGER_DIGITS,
    argument_problem,
    canonical_json,
    describe_exception,
    has_lone_surrogate,
    principal_json,
    safe_text,
    within_depth,
)

if TYPE_CHECKING:
    from toolwire.tool import CallerKind, Tool

__all__ = [
    "DIRECT",
    "MAX_ARGUMENT_DEPTH",
    "MAX_INTEGER_DIGITS",
    "AudioContent",
    "Caller",
    "Content",
    "EmbeddedResource",
    "ErrorKind",
    "ImageContent",
    "RejectedCall",
    "ResourceLink",
    "TextContent",
    "ToolCall",
    "ToolResult",
    "argument_problem",
    "canonical_json",
    "content_text",
    "has_lone_surrogate",
    "placeholder",
    "principal_json",
    "stable_call_id",
    "strip_nulls",
    "within_depth",
]

ErrorKind = Literal[
    "not_found",
    "invalid_arguments",
    "denied",
    "approval_denied",
    "timeout",
    "failed",
    "unavailable",
    "interrupted",
    "cancelled",
]
"""Why a call failed, as the model is told."""

_SMALL_INT = 2**64


@dataclass(frozen=True, slots=True)
class TextContent:
    """Plain text returned by a tool."""

    text: str
    annotations: Mapping[str, Any] | None = field(default=None, kw_only=True, hash=False)
    """Its MCP annotations (``audience``, ``priority``...), as its server gave them."""


@dataclass(frozen=True, slots=True)
class ImageContent:
    """An image returned by a tool, as raw bytes."""

    data: bytes
    mime_type: str
    annotations: Mapping[str, Any] | None = field(default=None, kw_only=True, hash=False)
    """Its MCP annotations (``audience``, ``priority``...), as its server gave them."""


@dataclass(frozen=True, slots=True)
class AudioContent:
    """Audio returned by a tool, as raw bytes."""

    data: bytes
    mime_type: str
    annotations: Mapping[str, Any] | None = field(default=None, kw_only=True, hash=False)
    """Its MCP annotations (``audience``, ``priority``...), as its server gave them."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceLink:
    """A link to a resource; toolwire never fetches it."""

    uri: str
    name: str | None = None
    mime_type: str | None = None
    description: str | None = None
    annotations: Mapping[str, Any] | None = field(default=None, kw_only=True, hash=False)
    """Its MCP annotations (``audience``, ``priority``...), as its server gave them."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbeddedResource:
    """A resource's contents carried inline: ``text`` or ``blob``, not both."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: bytes | None = None
    annotations: Mapping[str, Any] | None = field(default=None, kw_only=True, hash=False)
    """Its MCP annotations (``audience``, ``priority``...), as its server gave them."""


Content = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource
_CONTENT_TYPES = (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)


def _for_the_model(part: Content) -> bool:
    """Whether ``part`` may be put before a model: not one whose MCP ``audience`` leaves the
    assistant out."""
    annotations = part.annotations
    if annotations is None:
        return True
    audience = annotations.get("audience")
    return not isinstance(audience, list | tuple) or "assistant" in audience


def placeholder(part: Content) -> str:
    """How a content part reads where the provider takes text only."""
    match part:
        case TextContent(text=text):
            return text
        case ImageContent(data=data, mime_type=mime):
            return f"[image: {mime}, {len(data)} bytes]"
        case AudioContent(data=data, mime_type=mime):
            return f"[audio: {mime}, {len(data)} bytes]"
        case ResourceLink(uri=uri, name=name, mime_type=mime):
            details = ", ".join(x for x in (name, mime) if x)
            return f"[resource link: {uri}" + (f" ({details})" if details else "") + "]"
        case EmbeddedResource(uri=uri, text=str() as text):
            return f"[resource: {uri}]\n{text}"
        case EmbeddedResource(uri=uri, mime_type=mime, blob=blob):
            size = len(blob) if blob is not None else 0
            return f"[resource: {uri}, {mime or 'application/octet-stream'}, {size} bytes]"
    raise TypeError(f"not a content part: {part!r}")  # pragma: no cover - exhaustive above


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """The outcome of one tool call, before it is shaped for a provider.

    Build one with [`from_value`][] (a handler's return value) or [`error`][].
    """

    content: tuple[Content, ...] = ()
    """Content parts in order (text, images, audio, resources)."""
    structured_content: Mapping[str, Any] | None = None
    """A JSON object result, when the tool produced one."""
    is_error: bool = False
    """True when the call failed; ``content`` then holds the message."""
    error_kind: ErrorKind | None = None
    """Why it failed, when ``is_error``."""
    value: Any = None
    """For a tool that returned a JSON value other than an object or a string (a list, a
    number, a boolean), that value (``content`` holds its JSON text): Gemini's answer sends
    it as the value it is, under ``output``; the other APIs take the text."""

    @classmethod
    def error(cls, kind: ErrorKind, message: str) -> ToolResult:
        """A failed call with a message the model can act on."""
        return cls(content=(TextContent(safe_text(message)),), is_error=True, error_kind=kind)

    @classmethod
    def from_value(cls, value: Any) -> ToolResult:
        """Shape a handler's return value into a result every provider can carry.

        A string becomes text, a content part or a sequence of them becomes content, a mapping
        becomes structured content, and anything else is rendered as JSON text. Values that are
        not JSON are converted as pydantic's JSON mode does (ISO datetimes, ``Decimal`` and
        ``UUID`` as strings, sets as lists, bytes as base64, models and dataclasses as objects,
        non-string keys as strings); lone surrogates become U+FFFD. A ``ToolResult`` is checked
        the same way. Never raises: a value that cannot be encoded (NaN or Infinity, a cycle,
        nesting deeper than [`MAX_RESULT_DEPTH`][], an integer of more than
        [`MAX_INTEGER_DIGITS`][] digits, an object whose ``str()`` fails) gives a ``failed``
        result saying why.
        """
        kind = value.__class__  # the commonest values first, without a call more
        if kind is ToolResult and _plainly_safe(value):
            return value  # type: ignore[no-any-return]
        if kind is str and value.isascii():
            return cls(content=(TextContent(value),))
        if kind is int and -_SMALL_INT < value < _SMALL_INT:
            return cls(content=(TextContent(str(value)),), value=value)
        try:
            return cls._from_value(value)
        except Exception as exc:  # the value, not toolwire, is at fault: the model is told
            reason = exc.reason if isinstance(exc, _Unencodable) else describe_exception(exc)
            return cls.error("failed", f"The tool's result cannot be sent as JSON: {reason}.")

    @classmethod
    def _from_value(cls, value: Any) -> ToolResult:
        kind = value.__class__
        if kind is str:
            return cls(content=(TextContent(safe_text(value)),))
        if kind is dict:
            return cls(structured_content=json_safe(value))
        if kind is ToolResult:
            return _checked(value)
        if kind is int:
            if value.bit_length() > MAX_INTEGER_BITS:
                raise _Unencodable(f"an integer has more than {MAX_INTEGER_DIGITS} digits")
            return cls(content=(TextContent(str(value)),), value=value)
        if kind is bool or (kind is float and math.isfinite(value)):
            return cls(content=(TextContent(json.dumps(value)),), value=value)
        if value is None:
            return cls()
        if isinstance(value, ToolResult):
            return _checked(value)
        if isinstance(value, str):
            return cls(content=(TextContent(safe_text(str.__str__(value))),))
        if isinstance(value, _CONTENT_TYPES):
            return cls(content=(_checked_part(value),))
        if isinstance(value, Mapping):
            return cls(structured_content=json_safe(dict(value)))
        if (
            isinstance(value, list | tuple)
            and value
            and all(isinstance(v, _CONTENT_TYPES) for v in value)
        ):
            return cls(content=tuple(_checked_part(v) for v in value))
        safe = json_safe(value)
        return cls(content=(TextContent(canonical_json(safe)),), value=safe)

    def for_model(self) -> ToolResult:
        """The result as a model is shown it: without the parts whose annotations say they
        are for the user only (an ``audience`` without ``"assistant"``); a result left with
        nothing says so."""
        kept = tuple(part for part in self.content if _for_the_model(part))
        if len(kept) == len(self.content):
            return self
        if not kept and self.structured_content is None:
            kept = (TextContent("[content for the user only]"),)
        return replace(self, content=kept)

    @property
    def text(self) -> str:
        """The content as text, media replaced by placeholders, parts joined by newlines; for
        a result that is structured content alone (a tool returning a dict), its JSON text.
        Empty only when the result holds nothing."""
        if not self.content and self.structured_content is not None:
            return json.dumps(self.structured_content, ensure_ascii=False)
        return content_text(self.content)


def content_text(parts: tuple[Content, ...]) -> str:
    """Content parts as text, media replaced by placeholders, joined by newlines."""
    if len(parts) == 1 and isinstance(parts[0], TextContent):
        return parts[0].text
    return "\n".join(placeholder(part) for part in parts)


# -- JSON-safe values --------------------------------------------------------------------------

MAX_RESULT_DEPTH = 100
"""Nesting levels a tool's result may have; a deeper one is answered as a failure."""
_ERROR_KINDS = frozenset(get_args(ErrorKind))


class _Unencodable(ValueError):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _is_plain_json(value: Any) -> bool:
    """True when ``value`` is already JSON every provider takes: dicts with string keys, lists,
    valid text, finite floats, integers of at most [`MAX_INTEGER_DIGITS`][] digits, bools
    and None, nested at most [`MAX_RESULT_DEPTH`][] levels. The cheap check of the common
    case (exact types only)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        kind = node.__class__
        if kind is str:
            if has_lone_surrogate(node):
                return False
        elif kind is int:
            if node.bit_length() > MAX_INTEGER_BITS:
                return False
        elif kind is float:
            if not math.isfinite(node):
                return False
        elif kind is dict:
            if depth >= MAX_RESULT_DEPTH:
                return False
            for key, inner in node.items():
                if key.__class__ is not str or has_lone_surrogate(key):
                    return False
                stack.append((inner, depth + 1))
        elif kind is list:
            if depth >= MAX_RESULT_DEPTH:
                return False
            stack.extend((inner, depth + 1) for inner in node)
        elif not (kind is bool or node is None):
            return False
    return True


def json_safe(value: Any) -> Any:
    """``value`` as plain JSON data (see [`ToolResult.from_value`][] for the conversions).

    Raises:
        ValueError: when it cannot be encoded (the message says why).
    """
    if _is_plain_json(value):
        return value
    return _converted(value, 0, set())


def _converted(node: Any, depth: int, open_ids: set[int]) -> Any:
    """One value made plain JSON: containers walked here (so text is made valid and cycles are
    seen), other values converted by pydantic's JSON mode, then walked again."""
    kind = node.__class__
    if kind is str:
        return safe_text(node)
    if node is None or kind is bool:
        return node
    if kind is int or kind is float:
        return _number(node)
    if isinstance(node, enum.Enum):
        return _converted(node.value, depth, open_ids)
    if isinstance(node, str):
        return safe_text(str.__str__(node))
    if isinstance(node, bool | int | float):
        return _number(bool(node) if isinstance(node, bool) else node)
    if isinstance(node, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(node)).decode("ascii")
    if depth >= MAX_RESULT_DEPTH:
        raise _Unencodable(f"it is nested deeper than {MAX_RESULT_DEPTH} levels")
    if isinstance(node, Mapping | list | tuple | set | frozenset):
        if id(node) in open_ids:
            raise _Unencodable("it refers to itself (a cycle)")
        open_ids.add(id(node))
        try:
            if isinstance(node, Mapping):
                return {
                    _key(key): _converted(inner, depth + 1, open_ids) for key, inner in node.items()
                }
            return [_converted(inner, depth + 1, open_ids) for inner in node]
        finally:
            open_ids.discard(id(node))
    try:  # datetimes, Decimal, UUID, paths, models, dataclasses, ...
        data = pydantic_core.to_jsonable_python(
            node, bytes_mode="base64", inf_nan_mode="constants", fallback=_text_of
        )
    except _Unencodable:
        raise
    except Exception as exc:
        raise _Unencodable(describe_exception(exc)) from None
    return _converted(data, depth + 1, open_ids)


def _number(value: int | float) -> int | float:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Unencodable(f"{float.__repr__(value)} is not a JSON number")
        return float(value)
    if int.bit_length(value) > MAX_INTEGER_BITS:
        raise _Unencodable(f"an integer has more than {MAX_INTEGER_DIGITS} digits")
    return int(value)


def _key(key: Any) -> str:
    """An object key as JSON text: what ``json.dumps`` makes of scalar keys, else its text."""
    if isinstance(key, str):
        return safe_text(str.__str__(key))
    if isinstance(key, enum.Enum):
        return _key(key.value)
    if key is None or isinstance(key, bool | float):
        return json.dumps(key)
    if isinstance(key, int):
        return str(_number(key))
    return safe_text(_text_of(key))


def _text_of(value: Any) -> str:
    # What neither the walk nor pydantic's JSON mode can convert is given as its text.
    text = str(value)
    if not isinstance(text, str):
        raise _Unencodable(f"str() of a {type(value).__name__} is not a string")
    return text


def _checked(result: ToolResult) -> ToolResult:
    """A result built by a tool itself, made safe to shape: content parts of the known kinds
    with valid text, JSON-safe structured content, a known error kind."""
    if _plainly_safe(result):
        return result  # the common case, every answer step meets it: nothing to build
    content = result.content
    parts = content if content.__class__ is tuple else tuple(content)
    checked = tuple(_checked_part(part) for part in parts)
    structured = result.structured_content
    if structured is not None:
        if not isinstance(structured, Mapping):
            raise _Unencodable(
                f"structured content is a {type(structured).__name__}, not an object"
            )
        structured = json_safe(structured if structured.__class__ is dict else dict(structured))
    is_error = result.is_error is True
    kind = result.error_kind if result.error_kind in _ERROR_KINDS else None
    if is_error and kind is None:
        kind = "failed"
    value = json_safe(result.value) if result.value is not None else None
    if (
        structured is result.structured_content
        and is_error is result.is_error
        and kind == result.error_kind
        and parts is content
        and all(a is b for a, b in zip(checked, parts, strict=True))
        and value == result.value
    ):
        return result
    return ToolResult(
        content=checked,
        structured_content=structured,
        is_error=is_error,
        error_kind=kind if is_error else None,
        value=value,
    )


def _plainly_safe(result: ToolResult) -> bool:
    """True when a cheap look (exact classes) shows ``result`` needs no checking: text parts
    of ASCII, plain JSON structured content, a consistent error kind."""
    if result.content.__class__ is not tuple:
        return False
    for part in result.content:
        if part.__class__ is not TextContent:
            return False
        text = part.text
        if text.__class__ is not str or not text.isascii():
            return False
    structured = result.structured_content
    if structured is not None and (
        structured.__class__ is not dict or not _is_plain_json(structured)
    ):
        return False
    if result.value is not None and result.value.__class__ not in (int, bool, float):
        return False  # a list (or anything else) is checked
    if result.is_error is False:
        return result.error_kind is None
    return result.is_error is True and result.error_kind in _ERROR_KINDS


def _checked_part(part: Any) -> Content:
    """``part`` with its text fields valid and its data as bytes; a value that is no content
    part becomes text saying so."""
    match part:
        case str():  # a bare string where a part was expected: it is text
            return TextContent(safe_text(part))
        case TextContent(text=str() as text):
            return part if not has_lone_surrogate(text) else TextContent(safe_text(text))
        case (
            ImageContent(data=bytes(), mime_type=str() as mime)
            | AudioContent(data=bytes(), mime_type=str() as mime)
        ):
            return (
                part if not has_lone_surrogate(mime) else replace(part, mime_type=safe_text(mime))
            )
        case ResourceLink(uri=str()) | EmbeddedResource(uri=str()):
            return _checked_fields(part)
    return TextContent(f"[unreadable content part: {type(part).__name__}]")


def _checked_fields(part: ResourceLink | EmbeddedResource) -> Content:
    changes: dict[str, Any] = {}
    for name in ("uri", "name", "mime_type", "description", "text"):
        value = getattr(part, name, None)
        if value is None:
            continue
        if not isinstance(value, str):
            changes[name] = None if name != "uri" else ""
        elif has_lone_surrogate(value):
            changes[name] = safe_text(value)
    blob = getattr(part, "blob", None)
    if blob is not None and not isinstance(blob, bytes):
        changes["blob"] = None
    return replace(part, **changes) if changes else part


@dataclass(frozen=True, slots=True)
class Caller:
    """What made one call: the model, or the code of one code execution."""

    kind: CallerKind
    type: str = "direct"
    """The provider's own name for it (Anthropic's ``code_execution_20260120``, OpenAI's
    ``program``), as the answer gives it back."""
    id: str | None = None
    """The code execution that made the call (Anthropic's ``tool_id``, OpenAI's
    ``caller_id``)."""

    def to_dict(self) -> dict[str, Any]:
        """The caller as JSON values (what a run's history keeps)."""
        return {"kind": self.kind, "type": self.type, "id": self.id}

    @classmethod
    def from_dict(cls, kept: Mapping[str, Any] | None) -> Caller:
        """The caller ``to_dict`` gave (the model itself for None)."""
        if kept is None:
            return DIRECT
        return cls(kept["kind"], kept.get("type", "direct"), kept.get("id"))


DIRECT = Caller("direct")
"""The model itself, calling a tool as it always could."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One call the model asked for, resolved to a tool."""

    exposed_name: str
    """The name the model used (after resolving ``default_api.x`` style prefixes)."""
    tool: Tool
    """The tool it resolves to."""
    arguments: dict[str, Any]
    """The arguments, always a dict."""
    call_id: str | None = None
    """The provider's id for the call, or None when the provider sent none."""
    local_id: str
    """An id for correlation: the provider's id, or one derived with [`stable_call_id`][]."""
    index: int = 0
    """The position of the call among the calls of its response."""
    extras: Mapping[str, Any] = field(default_factory=dict)
    """Provider data to replay unchanged (Gemini's ``thoughtSignature``)."""
    null_paths: tuple[tuple[str, ...], ...] = ()
    """Where a strict schema made an optional argument nullable: a null there means "left
    out" and is stripped before validation (``"*"`` stands for every array item)."""
    caller: Caller = DIRECT
    """Who made the call: the model, or code it wrote (programmatic tool calling); policies
    see it as ``PolicyContext.caller``."""

    @property
    def name(self) -> str:
        """The tool's own name (not the exposed one)."""
        return self.tool.name

    @property
    def server_id(self) -> str | None:
        """The id of the server the tool comes from, if any."""
        return self.tool.server_id


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectedCall:
    """A call that could not be resolved or parsed, with the error answer already built."""

    name: str
    """The name the model sent."""
    call_id: str | None
    """The provider's id for the call, when sent."""
    index: int
    """The position of the call among the calls of its response."""
    error_kind: ErrorKind
    """``not_found``, ``unavailable`` or ``invalid_arguments``."""
    message: str
    """What the model is told."""
    answer: Any
    """The provider-shaped error answer to send back."""
    local_id: str | None = None
    """The id the answer carries: the provider's, or one made as for a [`ToolCall`][]."""


def printable(text: str) -> str:
    """``text`` with any lone surrogate written as its escape (``\\ud800``), so an error
    message that quotes the model can be encoded as UTF-8."""
    if not has_lone_surrogate(text):
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def strip_nulls(arguments: dict[str, Any], paths: tuple[tuple[str, ...], ...]) -> dict[str, Any]:
    """``arguments`` without the ``None`` values found at ``paths``; containers on the way are
    copied, never mutated. Only nulls are stripped: never ``""``, ``0`` or ``False``. A ``"*"``
    step is every item of an array, and a property named ``*`` of an object."""

    def strip(node: Any, path: tuple[str, ...]) -> Any:
        head, rest = path[0], path[1:]
        if head == "*" and isinstance(node, list):
            return [strip(item, rest) if rest else item for item in node]
        if not isinstance(node, dict) or head not in node:
            return node
        if not rest:
            if node[head] is None:
                return {k: v for k, v in node.items() if k != head}
            return node
        return {**node, head: strip(node[head], rest)}

    for path in paths:
        if path:
            arguments = strip(arguments, path)
    return arguments


def stable_call_id(
    name: str, arguments: Mapping[str, Any], occurrence: int, *, encoded: str | None = None
) -> str:
    """A deterministic id for a call the provider sent without one.

    Derived from the name, the canonical arguments and the occurrence (the n-th identical call
    of the turn), so a retried turn with the same calls, even reordered, gets the same ids.
    ``encoded`` is ``canonical_json(arguments)`` when the caller already has it.
    """
    if encoded is None:
        encoded = canonical_json(arguments)
    # surrogatepass: the same bytes as UTF-8 for any valid text, and no error for a name or an
    # argument holding a lone surrogate (those calls are rejected, but still need an id).
    payload = f"{name}\x00{encoded}\x00{occurrence}".encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(payload).hexdigest()
    return f"tw_{digest[:24]}"


class CallIds:
    """The ids of one response's calls, unique whatever the model sent.

    The first call with a given provider id keeps it ([`keep`][]); a later call with the same
    id must be answered with an error, since an answer could not be told apart from the first
    call's. A call sent without an id gets one from [`make`][]: derived from its name,
    canonical arguments and occurrence ([`stable_call_id`][], so a retried turn gets the same
    ids), and never equal to an id the model sent anywhere in the response nor to another
    generated one.

    Args:
        sent: every id the model sent in the response, gathered before any call is parsed
            (a generated id must not take an id that a later call brings).
    """

    __slots__ = ("_occurrences", "_sent", "_used")

    def __init__(self, sent: Iterable[str] = ()) -> None:
        self._sent = frozenset(sent)
        self._used: set[str] = set()
        self._occurrences: dict[tuple[str, str], int] = {}

    def keep(self, call_id: str) -> bool:
        """True for the first call with the provider id ``call_id``; False for a later one."""
        if call_id in self._used:
            return False
        self._used.add(call_id)
        return True

    def make(self, name: str, arguments: Mapping[str, Any] | None = None) -> str:
        """A fresh id for a call sent without one (``arguments`` None when they could not be
        read)."""
        if arguments is None:
            arguments = {}
        encoded = canonical_json(arguments)
        key = (name, encoded)
        occurrence = self._occurrences.get(key, 0)
        while True:
            occurrence += 1
            local_id = stable_call_id(name, arguments, occurrence, encoded=encoded)
            if local_id not in self._sent and local_id not in self._used:
                break
        self._occurrences[key] = occurrence
        self._used.add(local_id)
        return local_id

    @staticmethod
    def duplicate(call_id: str) -> str:
        """What the model is told for a call whose id an earlier call already has."""
        return (
            f"Not run: this call's id {printable(call_id)!r} is also the id of an earlier call "
            "in the same response, so their answers could not be told apart. If it still needs "
            "to run, call it again."
        )
