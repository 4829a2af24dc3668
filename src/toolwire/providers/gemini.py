"""Gemini (``generateContent``) function calling, as pure functions over dicts.

Declare::

    declarations = gemini.function_declarations(toolset)
    request["tools"] = gemini.build_tools(declarations, ["google_search"])

Parse the model's calls and answer them::

    calls, rejected = gemini.function_calls(response, toolset)
    parts = [gemini.function_response(c.exposed_name, result, id=c.call_id) for c, result in ...]
    contents.append({"role": "user", "parts": rejected + parts})

Responses may be dicts (REST JSON, camelCase or snake_case) or google-genai objects; nothing
here imports google-genai.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from types import MappingProxyType
from typing import Any, Literal

from toolwire._text import clean_description
from toolwire.calls import (
    AudioContent,
    ErrorKind,
    ImageContent,
    RejectedCall,
    ToolCall,
    ToolResult,
    argument_problem,
    canonical_json,
    content_text,
)
from toolwire.errors import ConfigurationError, MalformedResponse, SchemaConversionError
from toolwire.providers._wire import (
    CallIds,
    StreamBudget,
    StreamLimits,
    arguments_problem_message,
    as_data,
    get_field,
    load_json,
    printable,
    sent_id,
    split_calls,
    unknown_tool,
)
from toolwire.schema._base import ConversionNote
from toolwire.schema.gemini import (
    Backend,
    coerce_whole_floats,
    to_gemini_json_schema,
    to_gemini_openapi_schema,
)
from toolwire.tool import Tool, ToolSet

__all__ = [
    "NAME",
    "MediaMode",
    "SchemaMode",
    "StreamAccumulator",
    "StructuredMode",
    "build_tools",
    "conversion_notes",
    "function_calls",
    "function_declarations",
    "function_response",
    "live_function_calls",
    "live_tool_response",
    "parse_calls",
]

NAME = "gemini"

SchemaMode = Literal["json", "openapi"]
StructuredMode = Literal["prefer", "auto", "append", "ignore"]
MediaMode = Literal["placeholder", "parts"]

# Media Gemini 3 takes inside functionResponse.parts; anything else stays a placeholder.
_NATIVE_RESPONSE_MIME_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/webp", "application/pdf", "text/plain"}
)
_NO_EXTRAS: Mapping[str, Any] = MappingProxyType({})


# -- declare ---------------------------------------------------------------------------------------


def _declare_all(
    toolset: ToolSet, schema: SchemaMode, backend: Backend
) -> tuple[list[dict[str, Any]], dict[str, list[ConversionNote]]]:
    declarations = []
    notes: dict[str, list[ConversionNote]] = {}
    for tool in toolset:
        if tool.providers is not None and NAME not in tool.providers:
            continue
        name = toolset.exposed_name(tool)
        try:
            if schema == "json":
                lowered, tool_notes = to_gemini_json_schema(tool.input_schema)
            else:
                lowered, tool_notes = to_gemini_openapi_schema(tool.input_schema, backend=backend)
        except SchemaConversionError as exc:
            raise exc.for_tool(tool.qualified_name) from None
        declarations.append(
            {
                "name": name,
                "description": clean_description(tool.description),
                "parametersJsonSchema" if schema == "json" else "parameters": lowered,
            }
        )
        notes[name] = tool_notes
    return declarations, notes


def _declared(
    toolset: ToolSet, schema: SchemaMode, backend: Backend
) -> tuple[list[dict[str, Any]], dict[str, list[ConversionNote]]]:
    if schema not in ("json", "openapi"):
        raise ConfigurationError(f"schema must be 'json' or 'openapi', not {schema!r}")
    if backend not in ("gemini", "vertex"):
        raise ConfigurationError(f"backend must be 'gemini' or 'vertex', not {backend!r}")
    return toolset.cached((NAME, schema, backend), lambda: _declare_all(toolset, schema, backend))


def function_declarations(
    toolset: ToolSet | Iterable[Tool], *, schema: SchemaMode = "json", backend: Backend = "gemini"
) -> list[dict[str, Any]]:
    """The ``functionDeclarations`` for the visible tools, in toolset order.

    Args:
        toolset: the tools (a plain list is wrapped in a :class:`ToolSet`).
        schema: ``"json"`` sends ``parametersJsonSchema`` (JSON Schema, the default);
            ``"openapi"`` sends ``parameters`` (the OpenAPI 3.0 subset, for the Live API and
            older models).
        backend: ``"vertex"`` keeps what Vertex AI takes beyond the Gemini API in ``"openapi"``
            mode (``additionalProperties``, recursive ``ref``/``defs``).

    Each declaration has the exposed name, a cleaned description (``""`` when missing) and an
    object schema, even for a tool without parameters. The result is cached on the toolset;
    treat it as read-only.

    Raises:
        SchemaConversionError: naming the tool and the JSON path of a schema that cannot be
            converted.
    """
    return list(_declared(ToolSet.of(toolset), schema, backend)[0])


def conversion_notes(
    toolset: ToolSet | Iterable[Tool], *, schema: SchemaMode = "json", backend: Backend = "gemini"
) -> dict[str, list[ConversionNote]]:
    """What each tool's conversion dropped or rewrote, by exposed name."""
    return dict(_declared(ToolSet.of(toolset), schema, backend)[1])


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def build_tools(
    declarations: Sequence[Mapping[str, Any]],
    native_tools: Iterable[str | tuple[str, Mapping[str, Any]] | Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]] | None:
    """The request's ``tools``: ONE entry holding every declaration, then one per native tool.

    Native tools are names (``"google_search"``, ``"url_context"``, ``"code_execution"``, any
    snake_case or camelCase tool name), ``(name, config)`` pairs, or raw maps passed through.
    Returns None when there is nothing to send (Gemini rejects an empty declaration list).
    """
    tools: list[dict[str, Any]] = []
    if declarations:
        tools.append({"functionDeclarations": list(declarations)})
    for native in native_tools or ():
        if isinstance(native, str):
            tools.append({_camel(native): {}})
        elif isinstance(native, tuple) and len(native) == 2 and isinstance(native[0], str):
            tools.append({_camel(native[0]): dict(native[1])})
        elif isinstance(native, Mapping):
            tools.append(dict(native))
        else:
            raise ConfigurationError(f"not a native tool: {native!r}")
    return tools or None


# -- parse -----------------------------------------------------------------------------------------


def _is_mapping(value: Any) -> bool:
    # dicts first: the ABC check costs more than the rest of parsing a call
    return value.__class__ is dict or isinstance(value, Mapping)


def _parts_of(response: Any) -> list[Any]:
    """The parts of a response (first candidate), a Content, a single part or a part list.

    Raises:
        MalformedResponse: when the structure around the parts is not what Gemini sends.
    """
    data = as_data(response)
    if isinstance(data, list | tuple):
        return list(data)
    if not _is_mapping(data):
        raise MalformedResponse(
            "expected a generateContent response, a Content or a list of parts, "
            f"not {type(response).__name__}"
        )
    if "candidates" in data:
        candidates = data.get("candidates") or []
        if not isinstance(candidates, list | tuple):
            raise MalformedResponse("candidates is not a list")
        if not candidates:
            return []
        candidate = as_data(candidates[0])
        if not _is_mapping(candidate):
            raise MalformedResponse("candidates[0] is not an object")
        data = as_data(candidate.get("content") or {})
        if not _is_mapping(data):
            raise MalformedResponse("candidates[0].content is not an object")
    parts = data.get("parts")
    if parts is None:
        if "functionCall" in data or "function_call" in data:
            return [data]  # a single part
        return []
    if not isinstance(parts, list | tuple):
        raise MalformedResponse("parts is not a list")
    return list(parts)


def _resolve(toolset: ToolSet, name: str) -> tuple[str, Tool] | None:
    tool = toolset.get(name)
    if tool is not None:
        return name, tool
    # Models sometimes prefix a namespace ("default_api.search", "default_api:search").
    for separator in (".", ":"):
        if separator in name:
            short = name.rsplit(separator, 1)[1]
            tool = toolset.get(short)
            if tool is not None:
                return short, tool
    return None


def _error_part(name: str, call_id: str | None, message: str) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name}
    if call_id is not None:
        body["id"] = call_id
    body["response"] = {"error": message}
    return {"functionResponse": body}


def _rejected(
    name: str, call_id: str | None, index: int, kind: ErrorKind, message: str
) -> RejectedCall:
    return RejectedCall(
        name=name,
        call_id=call_id,
        index=index,
        error_kind=kind,
        message=message,
        answer=_error_part(name, call_id, message),
    )


def _function_calls_of(response: Any) -> tuple[list[tuple[Mapping[str, Any], Any]], list[str]]:
    """The parts of ``response`` that hold a function call, each with its call, and the ids
    the calls were sent with."""
    found = []
    sent = []
    for raw_part in _parts_of(response):
        part = raw_part if raw_part.__class__ is dict else as_data(raw_part)
        if not _is_mapping(part):
            continue
        call = part.get("functionCall")
        if call is None:
            call = part.get("function_call")
            if call is None:
                continue
        if call.__class__ is not dict:
            call = as_data(call)
        if _is_mapping(call):
            call_id = call.get("id")
            if call_id.__class__ is str and call_id:
                sent.append(call_id)
        found.append((part, call))
    return found, sent


def parse_calls(response: Any, toolset: ToolSet) -> list[ToolCall | RejectedCall]:
    """Every ``functionCall`` of ``response`` in order, resolved or rejected.

    Accepts a generateContent response (its first candidate), a Content, or a list of parts,
    as dicts or google-genai objects. Other parts are ignored. A call to an unknown name, with
    ``args`` that are not a JSON object toolwire can carry, or with an ``id`` an earlier call
    already has, is a :class:`RejectedCall` answered by an error ``functionResponse``.

    Raises:
        MalformedResponse: when the structure around the parts is not what Gemini sends.
    """
    found, sent = _function_calls_of(response)
    ids = CallIds(sent)
    return [
        _parse_call(part, call, index, ids, toolset) for index, (part, call) in enumerate(found)
    ]


def _parse_call(
    part: Mapping[str, Any], call: Any, index: int, ids: CallIds, toolset: ToolSet
) -> ToolCall | RejectedCall:
    if not _is_mapping(call):
        message = f"Malformed function call: expected an object, got {type(call).__name__}."
        return _rejected("", None, index, "invalid_arguments", message)
    name = call.get("name")
    name = name if isinstance(name, str) else ""
    call_id = sent_id(call.get("id"))
    if call_id is not None and not ids.keep(call_id):
        return _rejected(name, call_id, index, "invalid_arguments", ids.duplicate(call_id))
    resolved = _resolve(toolset, name)
    if resolved is None:
        return _rejected(name, call_id, index, "not_found", unknown_tool(toolset, name))
    args = call.get("args")
    if args is None:
        args = {}
    if args.__class__ is not dict and not isinstance(args, Mapping):
        message = (
            f"Invalid arguments for {printable(name)!r}: expected a JSON object, got "
            f"{type(args).__name__}."
        )
        return _rejected(name, call_id, index, "invalid_arguments", message)
    problem = argument_problem(args)
    if problem is not None:
        message = arguments_problem_message(name, problem)
        return _rejected(name, call_id, index, "invalid_arguments", message)
    exposed, tool = resolved
    flat = not any(isinstance(v, (dict, list, float)) for v in args.values())
    arguments = dict(args) if flat else coerce_whole_floats(dict(args), tool.input_schema)
    signature = get_field(part, "thoughtSignature", "thought_signature")
    extras = {"thoughtSignature": signature} if signature is not None else _NO_EXTRAS
    return ToolCall(
        exposed_name=exposed,
        tool=tool,
        arguments=arguments,
        call_id=call_id,
        # a generated id is for correlation only: it is never sent to Gemini
        local_id=call_id if call_id is not None else ids.make(exposed, arguments),
        index=index,
        extras=extras,
    )


def function_calls(
    response: Any, toolset: ToolSet | Iterable[Tool]
) -> tuple[list[ToolCall], list[dict[str, Any]]]:
    """The calls in ``response`` and the error answers for the ones that cannot run.

    A call to an unknown or hidden name, with ``args`` that are not a JSON object toolwire can
    carry (see :func:`toolwire.calls.argument_problem`), or with an ``id`` an earlier call of
    the response already has, produces no :class:`ToolCall` but a ``functionResponse`` error
    part in the second list. Missing ``args`` are ``{}``; an empty ``id`` counts as none; a
    call without an id gets a ``local_id`` of its own, never sent to Gemini; a part's
    ``thoughtSignature`` is kept in ``call.extras``; ``default_api.x`` resolves to ``x`` when
    ``x`` is declared; whole-number floats are turned into ints where the schema wants an
    integer.
    """
    return split_calls(parse_calls(response, ToolSet.of(toolset)))


# -- answer ----------------------------------------------------------------------------------------


def function_response(
    name: str,
    outcome: ToolResult | Any,
    *,
    id: str | None = None,
    structured: StructuredMode = "prefer",
    media: MediaMode = "placeholder",
) -> dict[str, Any]:
    """The ``functionResponse`` part answering a call to ``name`` (the name the model used).

    Args:
        name: the exposed name the model called.
        outcome: a :class:`ToolResult`, or a plain value (shaped by ``ToolResult.from_value``).
        id: the call's id, only when the model sent one (never a locally made id).
        structured: with structured content present, ``"prefer"`` sends it as the output;
            ``"auto"`` sends the text content when there is any, else the structured content;
            ``"append"`` sends the text followed by the structured content as JSON;
            ``"ignore"`` sends the text content only.
        media: ``"placeholder"`` writes media as ``[image: image/png, 1024 bytes]``;
            ``"parts"`` sends images and PDFs as ``functionResponse.parts`` (Gemini 3+).

    ``response`` is always an object: the output under ``"output"``, a failure under
    ``"error"``.
    """
    return _response_part(
        name, ToolResult.from_value(outcome), id=id, structured=structured, media=media
    )


def _response_part(
    name: str,
    result: ToolResult,
    *,
    id: str | None = None,
    structured: StructuredMode = "prefer",
    media: MediaMode = "placeholder",
) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name}
    if id:
        body["id"] = id
    native: list[dict[str, Any]] = []
    content = result.content
    if media == "parts":
        content = tuple(part for part in result.content if not _add_native_part(part, native))
    text = content_text(content)
    if result.is_error:
        body["response"] = {"error": text or "the tool failed"}
    else:
        body["response"] = {"output": _output(text, bool(content), result, structured)}
    if native:
        body["parts"] = native
    return {"functionResponse": body}


def _add_native_part(part: Any, native: list[dict[str, Any]]) -> bool:
    if isinstance(part, ImageContent | AudioContent) and (
        part.mime_type in _NATIVE_RESPONSE_MIME_TYPES
    ):
        native.append(
            {
                "inlineData": {
                    "mimeType": part.mime_type,
                    "data": base64.b64encode(part.data).decode("ascii"),
                }
            }
        )
        return True
    return False


def _output(text: str, has_content: bool, result: ToolResult, structured: StructuredMode) -> Any:
    data = result.structured_content
    if data is None or structured == "ignore":
        return text
    if structured == "prefer" or (structured == "auto" and not has_content):
        return dict(data)
    if structured == "append":
        return (
            f"{text}\n{canonical_json(dict(data))}" if has_content else canonical_json(dict(data))
        )
    return text


# -- the registry's view ---------------------------------------------------------------------------


def declare(
    toolset: ToolSet,
    *,
    schema: SchemaMode = "json",
    backend: Backend = "gemini",
    native_tools: Iterable[Any] | None = None,
) -> list[dict[str, Any]] | None:
    """The request's ``tools`` for ``toolset`` (see :func:`build_tools`)."""
    return build_tools(function_declarations(toolset, schema=schema, backend=backend), native_tools)


def answer(call: ToolCall, result: ToolResult, **options: Any) -> dict[str, Any]:
    """The ``functionResponse`` part for ``call``, echoing its id only when Gemini sent one.

    ``result`` is an executor's (made safe to shape by ``ToolResult.from_value`` already);
    :func:`function_response` takes any value."""
    return _response_part(call.exposed_name, result, id=call.call_id, **options)


# -- streaming ---------------------------------------------------------------------------------


class StreamAccumulator:
    """Turns ``streamGenerateContent`` chunks into the response they add up to.

    Every part is kept in order with its ``thoughtSignature``; function calls whose arguments
    are streamed (Vertex ``partialArgs`` with ``willContinue``) are assembled into one
    ``functionCall`` part with complete ``args``. ``usageMetadata`` and the finish reason come
    from the last chunk that has them.

    ```python
    stream = StreamAccumulator()
    async for chunk in await client.aio.models.generate_content_stream(...):
        stream.add(chunk)
    calls, rejected = function_calls(stream.response(), toolset)
    ```

    Bounded: at most ``limits.max_parts`` parts and streamed argument nodes (100,000 by
    default) and ``limits.max_chars`` characters (32 million) of text and streamed arguments
    in all; a ``jsonPath`` names at most 64 levels, and an array index at most the next
    element (arguments stream in order). A chunk not shaped as Gemini streams them (a
    ``partialArgs`` path that does not parse, or that runs into a value of another kind), or
    a stream past a limit, raises :class:`~toolwire.errors.MalformedResponse`. Parts that are
    not objects are skipped, as :func:`parse_calls` skips them.

    Args:
        limits: the bounds (the defaults are far above any real stream).
    """

    def __init__(self, *, limits: StreamLimits | None = None) -> None:
        self._budget = StreamBudget("Gemini stream", limits)
        self._parts: list[dict[str, Any]] = []
        self._open: _StreamedCall | None = None  # a function call still streaming its args
        self._candidate: dict[str, Any] = {}
        self._extra: dict[str, Any] = {}
        self._role = "model"

    def add(self, chunk: Any) -> None:
        """Add one chunk (a dict or the SDK's ``GenerateContentResponse``).

        Raises:
            MalformedResponse: for a chunk not shaped as Gemini streams them, or past a limit.
        """
        data = as_data(chunk)
        if not isinstance(data, Mapping):
            raise MalformedResponse(f"a stream chunk must be an object, not {type(chunk).__name__}")
        for key, value in data.items():
            if key != "candidates":
                self._extra[key] = value  # usageMetadata, modelVersion, responseId...
        candidates = data.get("candidates")
        if candidates is None:
            return
        if not isinstance(candidates, list | tuple):
            raise MalformedResponse("candidates is not a list")
        if not candidates:
            return
        candidate = as_data(candidates[0])
        if not isinstance(candidate, Mapping):
            raise MalformedResponse("candidates[0] is not an object")
        for key, value in candidate.items():
            if key != "content":
                self._candidate[key] = value  # finishReason, safetyRatings...
        content = as_data(candidate.get("content"))
        if content is None:
            return
        if not isinstance(content, Mapping):
            raise MalformedResponse("candidates[0].content is not an object")
        role = content.get("role")
        if isinstance(role, str) and role:
            self._role = role
        parts = content.get("parts")
        if parts is None:
            return
        if not isinstance(parts, list | tuple):
            raise MalformedResponse("candidates[0].content.parts is not a list")
        for part in parts:
            part = as_data(part)
            if isinstance(part, Mapping):
                self._add_part(part)

    def _keep(self, part: Mapping[str, Any]) -> None:
        self._budget.part()
        text = part.get("text")
        if isinstance(text, str):
            self._budget.text(text, "text")
        self._parts.append(dict(part))

    def _add_part(self, part: Mapping[str, Any]) -> None:
        call = get_field(part, "functionCall", "function_call")
        if not isinstance(call, Mapping):
            self._keep(part)
            return
        partial = get_field(call, "partialArgs", "partial_args")
        if partial is not None and not isinstance(partial, list | tuple):
            raise MalformedResponse("functionCall.partialArgs is not a list")
        continues = get_field(call, "willContinue", "will_continue") is True
        if self._open is None and not partial and not continues:
            self._keep(part)  # a whole call in one chunk
            return
        name = call.get("name")
        if self._open is None or (name and self._open.name and name != self._open.name):
            self._close()
            self._budget.part()
            self._open = _StreamedCall(self._budget)
        self._open.add(part, call, partial or ())
        if not continues:
            self._close()

    def _close(self) -> None:
        if self._open is not None:
            self._parts.append(self._open.as_part())
            self._open = None

    def response(self) -> dict[str, Any]:
        """The generateContent-shaped response so far (a call still streaming is included
        with the arguments received)."""
        parts = list(self._parts)
        if self._open is not None:
            parts.append(self._open.as_part())
        candidate = {**self._candidate, "content": {"role": self._role, "parts": parts}}
        return {**self._extra, "candidates": [candidate]}


class _Text:
    """A string argument still streaming: its pieces, joined when the call is read."""

    __slots__ = ("pieces",)

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces


_PATH_STEP = re.compile(
    r"""\.([^.\[\]]+)|\[([0-9]+)\]|\['((?:[^'\\]|\\.)*)'\]|\["((?:[^"\\]|\\.)*)"\]"""
)
_QUOTED_ESCAPE = re.compile(r'\\.|"')
_MAX_PATH_STEPS = 64
"""Levels a ``jsonPath`` may name, as arguments may nest (``MAX_ARGUMENT_DEPTH``)."""


def _unquote(body: str, quote: str) -> str | None:
    """A quoted ``jsonPath`` member name (RFC 9535 escapes), or None when it is malformed."""
    if quote == "'":  # as a JSON string: \' is a quote, a bare " must be escaped
        body = _QUOTED_ESCAPE.sub(
            lambda m: "'" if m.group() == "\\'" else ('\\"' if m.group() == '"' else m.group()),
            body,
        )
    decoded = load_json(f'"{body}"')
    return decoded if isinstance(decoded, str) else None


def _path_steps(path: str) -> list[str | int]:
    """The steps of a ``jsonPath`` (``$.a.b[0]``, ``$['a.b']``).

    Raises:
        MalformedResponse: when it does not parse, names no argument or is too deep.
    """
    shown = printable(path[:100]) + ("..." if len(path) > 100 else "")
    if not path.startswith("$") or path == "$":
        raise MalformedResponse(f"partialArgs jsonPath {shown!r} names no argument")
    steps: list[str | int] = []
    position = 1
    while position < len(path):
        if len(steps) == _MAX_PATH_STEPS:
            raise MalformedResponse(
                f"partialArgs jsonPath {shown!r} is deeper than {_MAX_PATH_STEPS} levels"
            )
        match = _PATH_STEP.match(path, position)
        if match is None:
            raise MalformedResponse(f"partialArgs jsonPath {shown!r} does not parse")
        name, index, single, double = match.groups()
        if name is not None:
            steps.append(name)
        elif index is not None:
            if len(index) > 9:  # no real argument is an array of a billion elements
                raise MalformedResponse(
                    f"partialArgs jsonPath {shown!r}: index {index} is too large"
                )
            steps.append(int(index))
        else:
            quoted = _unquote(single, "'") if single is not None else _unquote(double, '"')
            if quoted is None:
                raise MalformedResponse(f"partialArgs jsonPath {shown!r} does not parse")
            steps.append(quoted)
        position = match.end()
    return steps


_VALUE_FIELDS = (
    ("stringValue", "string_value", str),
    ("numberValue", "number_value", (int, float)),
    ("boolValue", "bool_value", bool),
    ("nullValue", "null_value", object),
)


class _StreamedCall:
    """A function call whose ``args`` arrive as ``partialArgs`` pieces.

    The containers it builds are its own: a container that came from a chunk is copied before
    a piece changes it, so the caller's chunks are never mutated.
    """

    __slots__ = ("_budget", "_owned", "_texts", "args", "call", "extra")

    def __init__(self, budget: StreamBudget) -> None:
        self._budget = budget
        self.call: dict[str, Any] = {}
        self.extra: dict[str, Any] = {}  # the part's other fields, e.g. thoughtSignature
        self.args: dict[str, Any] = {}
        self._owned = {id(self.args)}
        self._texts: list[tuple[Any, str | int, _Text]] = []

    @property
    def name(self) -> Any:
        return self.call.get("name")

    def add(self, part: Mapping[str, Any], call: Mapping[str, Any], partial: Any) -> None:
        for key in ("name", "id"):
            if call.get(key):
                self.call[key] = call[key]
        for key, value in part.items():
            if key not in ("functionCall", "function_call"):
                self.extra[key] = value
        args = call.get("args")
        if isinstance(args, Mapping):
            self.args.update(args)
        for piece in partial:
            piece = as_data(piece)
            if not isinstance(piece, Mapping):
                raise MalformedResponse("a partialArgs piece is not an object")
            self._apply(piece)

    def _apply(self, piece: Mapping[str, Any]) -> None:
        """Set one streamed argument (``jsonPath`` like ``$.a.b[0]``); a string is appended
        to the string before it at that path."""
        path = get_field(piece, "jsonPath", "json_path")
        if not isinstance(path, str):
            raise MalformedResponse("a partialArgs piece has no jsonPath")
        steps = _path_steps(self._budget.text(path, "partialArgs jsonPath"))
        node: Any = self.args
        for step, following in pairwise(steps):
            node = self._child(node, step, [] if isinstance(following, int) else {}, path)
        last = steps[-1]
        self._slot(node, last, path)
        previous = node[last]
        for camel, snake, kind in _VALUE_FIELDS:
            if camel in piece or snake in piece:
                value = get_field(piece, camel, snake)
                if kind is object:
                    value = None
                elif not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
                    raise MalformedResponse(f"partialArgs {camel} is a {type(value).__name__}")
                break
        else:  # no value: the end of a string streamed before, or a null
            if isinstance(previous, _Text | str):
                return
            value = None
        if isinstance(value, str):
            value = self._budget.text(value, "partialArgs stringValue")
            if isinstance(previous, _Text):
                previous.pieces.append(value)
                return
            text = _Text([previous, value] if isinstance(previous, str) else [value])
            self._texts.append((node, last, text))
            value = text
        node[last] = value

    def _slot(self, node: Any, step: str | int, path: str) -> None:
        """Make sure ``node[step]`` exists (None when new)."""
        if isinstance(step, int):
            if not isinstance(node, list):
                raise MalformedResponse(
                    f"partialArgs jsonPath {printable(path)[:100]!r} indexes a non-array"
                )
            if step > len(node):
                raise MalformedResponse(
                    f"partialArgs jsonPath {printable(path)[:100]!r} skips array elements"
                )
            if step == len(node):
                self._budget.part()
                node.append(None)
        else:
            if not isinstance(node, dict):
                raise MalformedResponse(
                    f"partialArgs jsonPath {printable(path)[:100]!r} names a member of a non-object"
                )
            if step not in node:
                self._budget.part()
                node[step] = None

    def _child(self, node: Any, step: str | int, empty: Any, path: str) -> Any:
        """``node[step]`` as a container of this call's own (``empty`` when there is none)."""
        self._slot(node, step, path)
        child = node[step]
        if child is None:
            child = empty
        elif isinstance(child, dict | list) and id(child) not in self._owned:
            child = dict(child) if isinstance(child, dict) else list(child)
        elif not isinstance(child, dict | list):
            raise MalformedResponse(
                f"partialArgs jsonPath {printable(path)[:100]!r} runs into a {type(child).__name__}"
            )
        if id(child) not in self._owned:
            self._owned.add(id(child))
            node[step] = child
        return child

    def as_part(self) -> dict[str, Any]:
        """The call as a ``functionCall`` part, its streamed strings joined."""
        for container, key, text in self._texts:
            if container[key] is text:
                container[key] = "".join(text.pieces)
        self._texts.clear()
        return {**self.extra, "functionCall": {**self.call, "args": self.args}}


# -- Live API ----------------------------------------------------------------------------------


def live_function_calls(
    message: Any, toolset: ToolSet | Iterable[Tool]
) -> tuple[list[ToolCall], list[dict[str, Any]]]:
    """The calls of a Live API ``toolCall`` server message, as :func:`function_calls`.

    Declare Live tools with ``function_declarations(toolset, schema="openapi")``: Live takes
    ``parameters`` and ignores ``parametersJsonSchema``.
    """
    data = as_data(message)
    if not isinstance(data, Mapping):
        raise MalformedResponse(f"a Live message must be an object, not {type(message).__name__}")
    tool_call = get_field(data, "toolCall", "tool_call")
    if tool_call is None:
        return [], []
    tool_call = as_data(tool_call)
    calls = (
        get_field(tool_call, "functionCalls", "function_calls")
        if isinstance(tool_call, Mapping)
        else None
    )
    if not isinstance(calls, list):
        raise MalformedResponse("toolCall.functionCalls is not a list")
    return function_calls([{"functionCall": c} for c in calls], toolset)


def live_tool_response(answers: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The client's ``toolResponse`` message for ``functionResponse`` parts (answers)."""
    return {
        "toolResponse": {
            "functionResponses": [dict(answer["functionResponse"]) for answer in answers]
        }
    }
