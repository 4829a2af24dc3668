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
from types import MappingProxyType
from typing import Any, Literal

from toolwire._text import clean_description
from toolwire.calls import (
    MAX_ARGUMENT_DEPTH,
    AudioContent,
    ErrorKind,
    ImageContent,
    RejectedCall,
    ToolCall,
    ToolResult,
    canonical_json,
    content_text,
    stable_call_id,
    within_depth,
)
from toolwire.errors import ConfigurationError, MalformedResponse, SchemaConversionError
from toolwire.providers._wire import as_data, get_field, split_calls, unknown_tool
from toolwire.schema._base import ConversionNote, follow_pointer
from toolwire.schema.gemini import Backend, to_gemini_json_schema, to_gemini_openapi_schema
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


def parse_calls(response: Any, toolset: ToolSet) -> list[ToolCall | RejectedCall]:
    """Every ``functionCall`` of ``response`` in order, resolved or rejected.

    Accepts a generateContent response (its first candidate), a Content, or a list of parts,
    as dicts or google-genai objects. Other parts are ignored.
    """
    items: list[ToolCall | RejectedCall] = []
    occurrences: dict[tuple[str, str], int] = {}
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
        index = len(items)
        if not _is_mapping(call):
            message = f"Malformed function call: expected an object, got {type(call).__name__}."
            items.append(_rejected("", None, index, "invalid_arguments", message))
            continue
        name = call.get("name")
        name = name if isinstance(name, str) else ""
        call_id = call.get("id") or None
        call_id = call_id if isinstance(call_id, str) else None
        resolved = _resolve(toolset, name)
        if resolved is None:
            items.append(_rejected(name, call_id, index, "not_found", unknown_tool(toolset, name)))
            continue
        args = call.get("args")
        if args is None:
            args = {}
        if args.__class__ is not dict and not isinstance(args, Mapping):
            message = (
                f"Invalid arguments for {name!r}: expected a JSON object, got "
                f"{type(args).__name__}."
            )
            items.append(_rejected(name, call_id, index, "invalid_arguments", message))
            continue
        flat = not any(isinstance(v, (dict, list, float)) for v in args.values())
        if not flat and not within_depth(args, MAX_ARGUMENT_DEPTH):
            message = (
                f"Invalid arguments for {name!r}: nested deeper than {MAX_ARGUMENT_DEPTH} levels."
            )
            items.append(_rejected(name, call_id, index, "invalid_arguments", message))
            continue
        exposed, tool = resolved
        arguments = (
            dict(args)
            if flat
            else _coerce_whole_floats(dict(args), tool.input_schema, tool.input_schema, 0)
        )
        if call_id is None:
            encoded = canonical_json(arguments)
            occurrence = occurrences[exposed, encoded] = occurrences.get((exposed, encoded), 0) + 1
            local_id = stable_call_id(exposed, arguments, occurrence, encoded=encoded)
        else:
            local_id = call_id
        signature = get_field(part, "thoughtSignature", "thought_signature")
        extras = {"thoughtSignature": signature} if signature is not None else _NO_EXTRAS
        items.append(
            ToolCall(
                exposed_name=exposed,
                tool=tool,
                arguments=arguments,
                call_id=call_id,
                local_id=local_id,
                index=index,
                extras=extras,
            )
        )
    return items


def function_calls(
    response: Any, toolset: ToolSet | Iterable[Tool]
) -> tuple[list[ToolCall], list[dict[str, Any]]]:
    """The calls in ``response`` and the error answers for the ones that cannot run.

    A call to an unknown or hidden name, or with ``args`` that are not an object, produces no
    :class:`ToolCall` but a ``functionResponse`` error part in the second list. Missing
    ``args`` are ``{}``; an empty ``id`` counts as none; a part's ``thoughtSignature`` is kept
    in ``call.extras``; ``default_api.x`` resolves to ``x`` when ``x`` is declared; whole-number
    floats are turned into ints where the schema wants an integer.
    """
    return split_calls(parse_calls(response, ToolSet.of(toolset)))


_COERCE_DEPTH = 32


def _deref(schema: Any, root: Any) -> Any:
    """``schema`` with a short chain of local ``$ref``s followed (None where it dangles)."""
    for _ in range(8):
        if not (isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str)):
            break
        schema = follow_pointer(root, schema["$ref"], None)
    return schema


def _wants_integer(schema: Any, root: Any, depth: int = 0) -> bool:
    schema = _deref(schema, root)
    if not isinstance(schema, Mapping) or depth > _COERCE_DEPTH:
        return False
    types = schema.get("type")
    types = [types] if isinstance(types, str) else (types or [])
    types = [t.lower() for t in types if isinstance(t, str)]
    if "integer" in types and "number" not in types:
        return True
    branches = [b for k in ("anyOf", "oneOf") for b in (schema.get(k) or [])]
    return (
        bool(branches)
        and any(_wants_integer(b, root, depth + 1) for b in branches)
        and not any(isinstance(b, Mapping) and b.get("type") == "number" for b in branches)
    )


def _subschema(schema: Any, root: Any, key: str) -> Any:
    schema = _deref(schema, root)
    return schema.get(key) if isinstance(schema, Mapping) else None


def _coerce_whole_floats(value: Any, schema: Any, root: Any, depth: int) -> Any:
    """Gemini sends every number as a float (protobuf Struct): ``3.0`` becomes ``3`` where the
    schema wants an integer. Nothing else changes; containers are copied, never mutated."""
    if depth > _COERCE_DEPTH or schema is None:
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() and _wants_integer(schema, root) else value
    if isinstance(value, dict):
        props = _subschema(schema, root, "properties")
        props = props if isinstance(props, Mapping) else {}
        extra = _subschema(schema, root, "additionalProperties")
        return {
            key: _coerce_whole_floats(item, props.get(key, extra), root, depth + 1)
            if isinstance(item, (float, dict, list))
            else item
            for key, item in value.items()
        }
    if isinstance(value, list):
        items = _subschema(schema, root, "items")
        if isinstance(items, Mapping):
            return [_coerce_whole_floats(v, items, root, depth + 1) for v in value]
    return value


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
    result = ToolResult.from_value(outcome)
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
    """The ``functionResponse`` part for ``call``, echoing its id only when Gemini sent one."""
    return function_response(call.exposed_name, result, id=call.call_id, **options)


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
    """

    def __init__(self) -> None:
        self._parts: list[dict[str, Any]] = []
        self._open: dict[str, Any] | None = None  # a function call still streaming its args
        self._open_part: dict[str, Any] = {}
        self._candidate: dict[str, Any] = {}
        self._extra: dict[str, Any] = {}
        self._role = "model"

    def add(self, chunk: Any) -> None:
        """Add one chunk (a dict or the SDK's ``GenerateContentResponse``)."""
        data = as_data(chunk)
        if not isinstance(data, Mapping):
            raise MalformedResponse(f"a stream chunk must be an object, not {type(chunk).__name__}")
        for key, value in data.items():
            if key not in ("candidates",):
                self._extra[key] = value  # usageMetadata, modelVersion, responseId...
        candidates = data.get("candidates") or []
        if not isinstance(candidates, list):
            raise MalformedResponse("candidates is not a list")
        if not candidates:
            return
        candidate = as_data(candidates[0])
        if not isinstance(candidate, Mapping):
            raise MalformedResponse("candidates[0] is not an object")
        for key, value in candidate.items():
            if key != "content":
                self._candidate[key] = value  # finishReason, safetyRatings...
        content = as_data(candidate.get("content") or {})
        if not isinstance(content, Mapping):
            raise MalformedResponse("candidates[0].content is not an object")
        self._role = content.get("role") or self._role
        for part in content.get("parts") or []:
            part = as_data(part)
            if isinstance(part, Mapping):
                self._add_part(part)

    def _add_part(self, part: Mapping[str, Any]) -> None:
        call = get_field(part, "functionCall", "function_call")
        if not isinstance(call, Mapping):
            self._parts.append(dict(part))
            return
        partial = get_field(call, "partialArgs", "partial_args")
        continues = get_field(call, "willContinue", "will_continue") is True
        if self._open is None and not partial and not continues:
            self._parts.append(dict(part))  # a whole call in one chunk
            return
        if self._open is None or (
            call.get("name")
            and self._open.get("name")
            and call.get("name") != self._open.get("name")
        ):
            self._close()
            self._open = {"args": {}}
            self._open_part = {}
        for key in ("name", "id"):
            if call.get(key):
                self._open[key] = call[key]
        for key, value in part.items():
            if key not in ("functionCall", "function_call"):
                self._open_part[key] = value  # e.g. thoughtSignature
        if isinstance(call.get("args"), Mapping):
            self._open["args"].update(call["args"])
        for piece in partial or []:
            piece = as_data(piece)
            if isinstance(piece, Mapping):
                _apply_partial_arg(self._open["args"], piece)
        if not continues:
            self._close()

    def _close(self) -> None:
        if self._open is not None:
            self._parts.append({**self._open_part, "functionCall": self._open})
            self._open = None
            self._open_part = {}

    def response(self) -> dict[str, Any]:
        """The generateContent-shaped response so far (a call still streaming is included
        with the arguments received)."""
        parts = list(self._parts)
        if self._open is not None:
            parts.append({**self._open_part, "functionCall": dict(self._open)})
        candidate = {**self._candidate, "content": {"role": self._role, "parts": parts}}
        return {**self._extra, "candidates": [candidate]}


_PATH_TOKEN = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\['([^']*)'\]")


def _apply_partial_arg(args: dict[str, Any], piece: Mapping[str, Any]) -> None:
    """Set one streamed argument (``jsonPath`` like ``$.a.b[0]``); a string that continues
    is appended to what came before at that path."""
    path = get_field(piece, "jsonPath", "json_path")
    if not isinstance(path, str) or not path.startswith("$"):
        return
    tokens: list[str | int] = [
        name or (int(index) if index else quoted)
        for name, index, quoted in _PATH_TOKEN.findall(path[1:])
    ]
    if not tokens:
        return
    if "stringValue" in piece or "string_value" in piece:
        value: Any = get_field(piece, "stringValue", "string_value")
    elif "numberValue" in piece or "number_value" in piece:
        value = get_field(piece, "numberValue", "number_value")
    elif "boolValue" in piece or "bool_value" in piece:
        value = get_field(piece, "boolValue", "bool_value")
    else:
        value = None
    node: Any = args
    for token, following in zip(tokens, [*tokens[1:], None], strict=True):
        if following is None:
            break
        child_default: Any = [] if isinstance(following, int) else {}
        if isinstance(node, dict):
            node = node.setdefault(token, child_default)
        elif isinstance(node, list) and isinstance(token, int):
            while len(node) <= token:
                node.append(None)
            if node[token] is None:
                node[token] = child_default
            node = node[token]
        else:
            return
    last = tokens[-1]
    if isinstance(node, dict):
        previous = node.get(last)
        node[last] = (
            previous + value if isinstance(previous, str) and isinstance(value, str) else value
        )
    elif isinstance(node, list) and isinstance(last, int):
        while len(node) <= last:
            node.append(None)
        previous = node[last]
        node[last] = (
            previous + value if isinstance(previous, str) and isinstance(value, str) else value
        )


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
