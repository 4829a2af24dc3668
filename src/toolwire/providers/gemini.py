"""Gemini (``generateContent``) function calling, as pure functions over dicts.

Declare::

    declarations = gemini.function_declarations(toolset)
    request["tools"] = gemini.build_tools(declarations, ["google_search"])

Parse the model's calls against what was declared, and answer them::

    items = gemini.parse(response, gemini.declare(toolset))
    calls = [item for item in items if isinstance(item, ToolCall)]
    rejected = [item.answer for item in items if isinstance(item, RejectedCall)]
    parts = [gemini.function_response(c.exposed_name, result, id=c.call_id) for c, result in ...]
    contents.append({"role": "user", "parts": rejected + parts})

On the Live API, declare with ``schema="openapi"`` (Live reads ``parameters``), and answer
with [`live_tool_response`][]; functions named in ``non_blocking`` run asynchronously, and
``scheduling`` says how the model takes their answers.

Responses may be dicts (REST JSON, camelCase or snake_case) or google-genai objects; nothing
here imports google-genai.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from toolwire.calls import (
    CallIds,
    RejectedCall,
    ToolCall,
    ToolResult,
    canonical_json,
    content_text,
)
from toolwire.errors import ConfigurationError, MalformedResponse, SchemaConversionError
from toolwire.providers._assess import assessed, texts
from toolwire.providers._contract import (
    Declaration,
    DeclaredTool,
    ProviderProfile,
    Stopped,
    Verdict,
)
from toolwire.providers._gemini_live import (
    Scheduling,
    checked_scheduling,
    live_function_calls,
    live_tool_response,
)
from toolwire.providers._gemini_media import add_native_part, display_name, files_api_uri
from toolwire.providers._gemini_stream import StreamAccumulator
from toolwire.providers._wire import (
    ChoiceMode,
    as_data,
    check_shape,
    chosen_names,
    described,
    get_field,
    json_type,
    resolve_call,
    selected_tools,
)
from toolwire.schema import ConversionNote
from toolwire.schema.checks import gemini_violations
from toolwire.schema.gemini import (
    Backend,
    coerce_whole_floats,
    to_gemini_json_schema,
    to_gemini_openapi_schema,
)
from toolwire.tool import Tool
from toolwire.toolset import ToolSet

__all__ = [
    "NAME",
    "PROFILE",
    "Accumulator",
    "GeminiOptions",
    "MediaMode",
    "Options",
    "Scheduling",
    "SchemaMode",
    "StreamAccumulator",
    "StructuredMode",
    "answer",
    "assess",
    "build_tools",
    "conversion_notes",
    "declare",
    "files_api_uri",
    "followup",
    "function_declarations",
    "function_response",
    "live_function_calls",
    "live_tool_response",
    "parse",
    "recognizes",
    "request",
    "response_for",
    "stopped",
    "text",
    "tool_choice",
    "whole_floats",
]

NAME = "gemini"

SchemaMode = Literal["json", "openapi"]
StructuredMode = Literal["prefer", "auto", "append", "ignore"]
MediaMode = Literal["placeholder", "parts"]

_NO_EXTRAS: Mapping[str, Any] = MappingProxyType({})

PROFILE = ProviderProfile(
    label="Gemini",
    name_pattern=r"[A-Za-z_][A-Za-z0-9_.:-]{0,127}",
    image_types=frozenset({"image/png", "image/jpeg", "image/webp"}),
    error_prefix=None,  # a failure goes under response.error
    declared_options=frozenset({"schema", "backend", "native_tools", "non_blocking"}),
    max_tools=512,  # "Maximum 512 function declarations can be provided" (google-genai)
    schema_rules="Gemini's JSON Schema subset (parametersJsonSchema), or OpenAPI 3.0 (parameters)",
    option_sets=({}, {"schema": "openapi"}, {"schema": "openapi", "backend": "vertex"}),
    api_key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    default_model="gemini-2.5-flash",
    namespace_separators=(".", ":"),  # models sometimes call "default_api.search"
)


@dataclass(frozen=True, slots=True)
class GeminiOptions:
    """Options of the Gemini API (``generateContent``)."""

    schema: SchemaMode = field(
        default="json", metadata={"help": "parametersJsonSchema (json) or parameters (openapi)"}
    )
    """``"json"`` sends ``parametersJsonSchema`` (JSON Schema); ``"openapi"`` sends
    ``parameters`` (the OpenAPI 3.0 subset, for the Live API and older models)."""
    backend: Backend = field(
        default="gemini",
        metadata={"help": "vertex keeps what Vertex AI takes beyond the Gemini API"},
    )
    """``"vertex"`` keeps what Vertex AI takes beyond the Gemini API in ``"openapi"`` mode
    (``additionalProperties``, recursive ``ref``/``defs``)."""
    native_tools: tuple[Any, ...] = ()
    """Built-in tools declared beside the functions (see [`build_tools`][])."""
    structured: StructuredMode = "prefer"
    """How an answer carries structured content (see [`function_response`][])."""
    media: MediaMode = "placeholder"
    """How an answer carries images, PDFs and links to them (see [`function_response`][])."""
    non_blocking: bool | tuple[str, ...] = field(
        default=False, metadata={"help": "Live API: the functions declared NON_BLOCKING"}
    )
    """Live API only: the functions declared ``behavior: NON_BLOCKING`` (asynchronous
    function calling), as exposed names, or True for every function. The model goes on
    talking while they run; their answers are taken as ``scheduling`` says. Gemini takes
    ``behavior`` only on the Live API (``BidiGenerateContent``): leave this False for
    ``generateContent``."""
    scheduling: Scheduling | None = None
    """Live API: how the model takes each answer to a non-blocking call (see
    [`Scheduling`][]); None sends none (Gemini then takes ``"WHEN_IDLE"``)."""
    public_urls: bool = False
    """With ``media="parts"``: also send a tool's links to public ``https`` URLs as
    ``fileData``, for Gemini to fetch (see [`function_response`][])."""

    def __post_init__(self) -> None:
        given: Any = self.non_blocking
        if isinstance(given, list):  # a list from keyword options: kept hashable
            object.__setattr__(self, "non_blocking", tuple(given))
        if self.scheduling is not None:
            checked_scheduling(self.scheduling)


Options = GeminiOptions
_DEFAULT = Options()


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
                lowered, tool_notes = to_gemini_json_schema(tool.declared_schema)
            else:
                lowered, tool_notes = to_gemini_openapi_schema(
                    tool.declared_schema, backend=backend
                )
        except SchemaConversionError as exc:
            raise exc.for_tool(tool.qualified_name) from None
        declarations.append(
            {
                "name": name,
                "description": described(tool),
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
    toolset: ToolSet | Iterable[Tool],
    *,
    schema: SchemaMode = "json",
    backend: Backend = "gemini",
    non_blocking: bool | Sequence[str] = False,
) -> list[dict[str, Any]]:
    """The ``functionDeclarations`` for the visible tools, in toolset order.

    Args:
        toolset: the tools (a plain list is wrapped in a [`ToolSet`][]).
        schema: ``"json"`` sends ``parametersJsonSchema`` (JSON Schema, the default);
            ``"openapi"`` sends ``parameters`` (the OpenAPI 3.0 subset, for the Live API and
            older models).
        backend: ``"vertex"`` keeps what Vertex AI takes beyond the Gemini API in ``"openapi"``
            mode (``additionalProperties``, recursive ``ref``/``defs``).
        non_blocking: Live API only: the exposed names of the functions to declare
            ``behavior: NON_BLOCKING``, or True for all (see ``GeminiOptions.non_blocking``).
            A name of the toolset that is not declared to Gemini is let be.

    Each declaration has the exposed name, a cleaned description (``""`` when missing) and an
    object schema, even for a tool without parameters. The declarations are cached on the
    toolset; treat them as read-only.

    Raises:
        SchemaConversionError: naming the tool and the JSON path of a schema that cannot be
            converted.
        ConfigurationError: ``non_blocking`` is not True, False or a list of names (a name
            no tool has is warned about, naming the declared ones).
    """
    tools = ToolSet.of(toolset)
    declarations = list(_declared(tools, schema, backend)[0])
    chosen = selected_tools(tools, "non_blocking", declarations, non_blocking)
    if not chosen:
        return declarations
    # "currently only supported by the BidiGenerateContent method" (google-genai's
    # FunctionDeclaration.behavior; https://ai.google.dev/gemini-api/docs/live-tools)
    return [{**d, "behavior": "NON_BLOCKING"} if d["name"] in chosen else d for d in declarations]


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
    if data.__class__ is not dict or "candidates" not in data:
        check_shape(NAME, data, recognizes)
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
    elif _is_candidate(data):
        data = as_data(data["content"])
    parts = data.get("parts")
    if parts is None:
        if "functionCall" in data or "function_call" in data:
            return [data]  # a single part
        return []
    if not isinstance(parts, list | tuple):
        raise MalformedResponse("parts is not a list")
    return list(parts)


def _error_part(name: str, call_id: str | None, answer_id: str, message: str) -> dict[str, Any]:
    """A call's error answer, naming it as sent; a generated id (``answer_id``) is for
    correlation only: it is never sent to Gemini."""
    body: dict[str, Any] = {"name": name}
    if call_id is not None:
        body["id"] = call_id
    body["response"] = {"error": message}
    return {"functionResponse": body}


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


def recognizes(response: Any) -> bool:
    """True for a generateContent response, a Content, a part, or a list of parts."""
    data = as_data(response)
    if _is_mapping(data):
        if not _RESPONSE_KEYS.isdisjoint(data):
            return True
        return _is_candidate(data)
    if isinstance(data, list | tuple):
        first = [as_data(part) for part in data[:16]]
        return any(
            _is_mapping(p) and "type" not in p and not _PART_KEYS.isdisjoint(p) for p in first
        )
    return False


_RESPONSE_KEYS = frozenset(
    {
        "candidates",
        "promptFeedback",
        "prompt_feedback",
        "usageMetadata",
        "usage_metadata",
        "modelVersion",
        "model_version",
        "parts",
        "functionCall",
        "function_call",
    }
)
_PART_KEYS = frozenset(
    {
        "text",
        "functionCall",
        "function_call",
        "functionResponse",
        "function_response",
        "inlineData",
        "inline_data",
        "fileData",
        "file_data",
        "executableCode",
        "executable_code",
        "codeExecutionResult",
        "code_execution_result",
        "thought",
        "thoughtSignature",
        "thought_signature",
    }
)


def _is_candidate(data: Mapping[str, Any]) -> bool:
    """True for a Candidate (its content holding the parts), not a Content or a part."""
    if not _PARTS_HERE.isdisjoint(data):
        return False
    content = as_data(data.get("content"))
    return _is_mapping(content) and "parts" in content


_PARTS_HERE = frozenset({"parts", "functionCall", "function_call"})


def parse(response: Any, declaration: Declaration) -> list[ToolCall | RejectedCall]:
    """Every ``functionCall`` of ``response`` in order, resolved against what was declared.

    Accepts a generateContent response (its first candidate), a Content, or a list of parts,
    as dicts or google-genai objects. Other parts are ignored. A call to a name that was not
    declared, with ``args`` that are not a JSON object toolwire can carry, or with an ``id``
    an earlier call already has, is a [`RejectedCall`][] answered by an error
    ``functionResponse``. Missing ``args`` are ``{}``; an empty ``id`` counts as none; a call
    without an id gets a ``local_id`` of its own, never sent to Gemini; a part's
    ``thoughtSignature`` is kept in ``call.extras``; ``default_api.x`` resolves to ``x`` when
    ``x`` is declared; whole-number floats become ints where the schema wants an integer.

    Raises:
        MalformedResponse: when the structure around the parts is not what Gemini sends
            (naming the provider it looks like, when it is another's).
    """
    found, sent = _function_calls_of(response)
    ids = CallIds(sent)  # the sent ids, read on the way (they are non-empty strings)
    return [
        _parse_call(part, call, index, ids, declaration) for index, (part, call) in enumerate(found)
    ]


def _parse_call(
    part: Mapping[str, Any], call: Any, index: int, ids: CallIds, declaration: Declaration
) -> ToolCall | RejectedCall:
    if not _is_mapping(call):
        message = f"Malformed function call: expected an object, got {json_type(call)}."
        return resolve_call(
            declaration,
            PROFILE,
            name=None,
            call_id=None,
            arguments=None,
            index=index,
            ids=ids,
            error_answer=_error_part,
            refused=("invalid_arguments", message),
        )
    signature = get_field(part, "thoughtSignature", "thought_signature")
    return resolve_call(
        declaration,
        PROFILE,
        name=call.get("name"),
        call_id=call.get("id"),
        arguments=call.get("args"),
        index=index,
        ids=ids,
        error_answer=_error_part,
        extras={"thoughtSignature": signature} if signature is not None else _NO_EXTRAS,
        coerce=whole_floats,
    )


def whole_floats(arguments: dict[str, Any], tool: Tool) -> dict[str, Any]:
    """Gemini sends every number as a float: ``2.0`` becomes ``2`` where the schema wants an
    integer."""
    if not any(isinstance(v, dict | list | float) for v in arguments.values()):
        return arguments
    return coerce_whole_floats(arguments, tool.input_schema)


# -- answer ----------------------------------------------------------------------------------------


def function_response(
    name: str,
    outcome: ToolResult | Any,
    *,
    id: str | None = None,
    structured: StructuredMode = "prefer",
    media: MediaMode = "placeholder",
    scheduling: Scheduling | None = None,
    backend: Backend = "gemini",
    public_urls: bool = False,
) -> dict[str, Any]:
    """The ``functionResponse`` part answering a call to ``name`` (the name the model used).

    Args:
        name: the exposed name the model called.
        outcome: a [`ToolResult`][], or a plain value (shaped by ``ToolResult.from_value``).
        id: the call's id, only when the model sent one (never a locally made id).
        structured: with structured content present, ``"prefer"`` sends it as the output;
            ``"auto"`` sends the text content when there is any, else the structured content;
            ``"append"`` sends the text followed by the structured content as JSON;
            ``"ignore"`` sends the text content only.
        media: ``"placeholder"`` writes media as ``[image: image/png, 1024 bytes]``;
            ``"parts"`` sends images and PDFs as ``functionResponse.parts`` (Gemini 3+):
            inline as ``inlineData``, and a [`ResourceLink`][] to one as ``fileData`` when
            Gemini can read its URI (below).
        scheduling: Live API: how the model takes the answer to a non-blocking call
            (see [`Scheduling`][]); None sends none.
        backend: where the request goes (``"gemini"`` or ``"vertex"``): which storage URIs
            it reads.
        public_urls: with ``media="parts"``, also send links to public ``https`` URLs as
            ``fileData``.

    ``response`` is always an object: the output under ``"output"``, a failure under
    ``"error"``. Each media part has a ``displayName`` (``image_1.png``, ``application_2.pdf``:
    unique within the answer) and ``response.media`` refers to each as ``{"$ref": name}``.

    A link becomes ``fileData`` only when it has a MIME type Gemini takes there and a URI it
    reads itself: a Gemini Files API URI (``https://generativelanguage.googleapis.com/v1beta/
    files/...``) on the Gemini API, a ``gs://`` URI on Vertex AI (the Gemini API reads a Cloud
    Storage object only once registered, by the Files API URI that gives it), and, with
    ``public_urls``, an ``https`` URL on a public host (no credentials, no port but 443, no IP
    address that is not public, no ``localhost``, ``.local`` or ``.internal`` name). Any other
    link stays text. toolwire never fetches a link; Gemini fetches a public URL itself, and a
    URL it cannot fetch fails the request, which is why those go only when asked.

    Raises:
        ConfigurationError: for a ``scheduling`` Gemini does not take, or a ``backend`` that
            is not ``"gemini"`` or ``"vertex"``.
    """
    if backend not in ("gemini", "vertex"):
        raise ConfigurationError(f"backend must be 'gemini' or 'vertex', not {backend!r}")
    return _response_part(
        name,
        ToolResult.from_value(outcome),
        id=id,
        structured=structured,
        media=media,
        scheduling=scheduling,
        file_backend=backend,
        public_urls=public_urls,
    )


def _response_part(
    name: str,
    result: ToolResult,
    *,
    id: str | None = None,
    structured: StructuredMode = "prefer",
    media: MediaMode = "placeholder",
    scheduling: Scheduling | None = None,
    file_backend: Backend | None = None,
    public_urls: bool = False,
) -> dict[str, Any]:
    """The ``functionResponse`` part; links become ``fileData`` only with a ``file_backend``
    (the backend whose URIs count as readable)."""
    body: dict[str, Any] = {"name": name}
    if id:
        body["id"] = id
    native: list[dict[str, Any]] = []
    content = result.content
    if media == "parts":
        content = tuple(
            part
            for part in result.content
            if not add_native_part(part, native, file_backend=file_backend, public_urls=public_urls)
        )
    text = content_text(content)
    if result.is_error:
        body["response"] = {"error": text or "the tool failed"}
    else:
        body["response"] = {"output": _output(text, bool(content), result, structured)}
    if native:
        # Each part is named, and the response refers to it by name, as Gemini documents
        # (https://ai.google.dev/gemini-api/docs/function-calling, multimodal responses).
        body["response"]["media"] = [{"$ref": display_name(p)} for p in native]
        body["parts"] = native
    if scheduling is not None:
        body["scheduling"] = checked_scheduling(scheduling)
    return {"functionResponse": body}


def _holds_ref(value: Any) -> bool:
    """True when a ``$ref`` key is anywhere in ``value`` (JSON data): Gemini reads one in a
    function response as a reference to a media part."""
    stack = [value]
    while stack:
        node = stack.pop()
        if node.__class__ is dict:
            if "$ref" in node:
                return True
            stack.extend(v for v in node.values() if v.__class__ is dict or v.__class__ is list)
        elif node.__class__ is list:
            stack.extend(v for v in node if v.__class__ is dict or v.__class__ is list)
    return False


def _output(text: str, has_content: bool, result: ToolResult, structured: StructuredMode) -> Any:
    data = result.structured_content
    if data is None and result.value is not None and structured != "ignore":
        # a list, a number, a boolean: sent as the JSON value it is
        value = result.value
        return canonical_json(value) if _holds_ref(value) else value
    if data is None or structured == "ignore":
        return text
    if structured == "prefer" or (structured == "auto" and not has_content):
        # a tool's own "$ref" key would be read as a part reference: sent as JSON text
        return canonical_json(dict(data)) if _holds_ref(data) else dict(data)
    if structured == "append":
        return (
            f"{text}\n{canonical_json(dict(data))}" if has_content else canonical_json(dict(data))
        )
    return text


# -- the provider contract -----------------------------------------------------------------------


def _entries(toolset: ToolSet, schema: SchemaMode, backend: Backend) -> dict[str, DeclaredTool]:
    return toolset.cached(
        (NAME, "entries", schema, backend),
        lambda: {
            d["name"]: DeclaredTool(d["name"], toolset[d["name"]])
            for d in _declared(toolset, schema, backend)[0]
        },
    )


def declare(toolset: ToolSet, options: Options | None = None) -> Declaration:
    """The request's ``tools`` for ``toolset`` (see [`build_tools`][]; None when empty).

    Raises:
        SchemaConversionError: naming the tool whose schema cannot be declared.
        ConfigurationError: for a native tool that is not one, or ``non_blocking`` naming a
            tool that is not declared.
    """
    options = options or _DEFAULT
    declarations = function_declarations(
        toolset,
        schema=options.schema,
        backend=options.backend,
        non_blocking=options.non_blocking,
    )
    return Declaration(
        provider=NAME,
        options=options,
        toolset=toolset,
        tools=build_tools(declarations, options.native_tools),
        entries=_entries(toolset, options.schema, options.backend),
    )


def assess(tool: Tool, options: Options | None = None) -> Verdict:
    """How Gemini takes ``tool``: its lowered schema, checked against the documented rules."""
    options = options or _DEFAULT

    def declared() -> tuple[Any, list[str]]:
        single = ToolSet([tool])
        (declaration,) = function_declarations(
            single, schema=options.schema, backend=options.backend
        )
        schema = declaration.get("parametersJsonSchema", declaration.get("parameters", {}))
        notes = conversion_notes(single, schema=options.schema, backend=options.backend)
        return schema, texts(notes[single.exposed_name(tool)])

    def rules(schema: Any) -> list[ConversionNote]:
        return gemini_violations(schema) if options.schema == "json" else []

    return assessed(NAME, tool, declared, rules)


def answer(call: ToolCall, result: ToolResult, options: Options | None = None) -> dict[str, Any]:
    """The ``functionResponse`` part for ``call``, echoing its id only when Gemini sent one.

    ``result`` is an executor's (made safe to shape by ``ToolResult.from_value`` already);
    [`function_response`][] takes any value. The options' ``backend`` says which storage
    URIs a link may point to (see [`function_response`][])."""
    options = options or _DEFAULT
    return _response_part(
        call.exposed_name,
        result,
        id=call.call_id,
        structured=options.structured,
        media=options.media,
        scheduling=options.scheduling,
        file_backend=options.backend,
        public_urls=options.public_urls,
    )


def _model_content(response: Any) -> Any:
    """The model's Content in ``response``, as it came: an SDK object stays one, so its
    thought signatures (bytes) go back unchanged."""
    candidates = None if isinstance(response, Mapping) else getattr(response, "candidates", None)
    if isinstance(candidates, list | tuple) and candidates:
        content = getattr(candidates[0], "content", None)
        if content is not None and not isinstance(content, Mapping | str):
            return content
    data = as_data(response)
    check_shape(NAME, data, recognizes)
    if _is_mapping(data) and "candidates" in data:
        return {"role": "model", "parts": _parts_of(data)}
    if _is_mapping(data) and "parts" in data:
        return {"role": "model", **data}
    return {"role": "model", "parts": _parts_of(data)}


def tool_choice(
    declaration: Declaration, allowed: Sequence[str] | None = None, mode: ChoiceMode = "auto"
) -> Any:
    """The request's ``toolConfig``: ``AUTO``, ``ANY`` (required) or ``NONE`` over every
    declared function, or narrowed to ``allowed`` (``allowedFunctionNames``: ``VALIDATED``
    when the model may still answer in text, ``ANY`` when it must call one) without changing
    the declared functions.

    Raises:
        ConfigurationError: see ``chosen_names``.
    """
    names = chosen_names(declaration, allowed, mode)
    if names is None:
        return {
            "functionCallingConfig": {
                "mode": {"auto": "AUTO", "required": "ANY", "none": "NONE"}[mode]
            }
        }
    narrowed = "VALIDATED" if mode == "auto" else "ANY"
    return {"functionCallingConfig": {"mode": narrowed, "allowedFunctionNames": list(names)}}


def followup(response: Any, answers: Sequence[Any], ids: Sequence[str | None] = ()) -> list[Any]:
    """The model's content, then one user content holding the answers: what to append to
    ``contents`` (Gemini pairs answers by name and order; ``ids`` are not needed)."""
    turn = [_model_content(response)]
    return turn + ([{"role": "user", "parts": list(answers)}] if answers else [])


def response_for(
    calls: Sequence[tuple[str, str, Mapping[str, Any]]], text: str | None = None
) -> dict[str, Any]:
    """A generateContent response holding ``text`` and ``calls`` ((id, name, arguments))."""
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    for call_id, name, args in calls:
        call: dict[str, Any] = {"name": name, "args": dict(args)}
        if call_id:
            call["id"] = call_id
        parts.append({"functionCall": call})
    return {"candidates": [{"content": {"role": "model", "parts": parts}}]}


def text(response: Any) -> str:
    """The model's text (thoughts left out)."""
    return "".join(
        part["text"]
        for part in map(as_data, _parts_of(response))
        if _is_mapping(part) and isinstance(part.get("text"), str) and not part.get("thought")
    )


Accumulator = StreamAccumulator


_BLOCKED_FINISHES = frozenset(
    {"SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_SAFETY"}
)
"""The ``finishReason`` values of a candidate the API cut off or withheld."""


def stopped(response: Any) -> Stopped | None:
    """A prompt blocked (``promptFeedback.blockReason``, no candidate), a candidate stopped
    by a filter (``SAFETY``, ``RECITATION``, ``PROHIBITED_CONTENT``...) with nothing to show,
    or a candidate with no parts at all; None otherwise."""
    data = as_data(response)
    if not _is_mapping(data) or ("candidates" not in data and "promptFeedback" not in data):
        return None
    candidates = data.get("candidates") or []
    if not candidates:
        feedback = as_data(data.get("promptFeedback") or {})
        reason = feedback.get("blockReason") if _is_mapping(feedback) else None
        if reason:
            return Stopped("blocked", str(reason), feedback.get("blockReasonMessage"))
        return Stopped("empty", "no candidate")
    candidate = as_data(candidates[0])
    if not _is_mapping(candidate):
        return None
    finish = candidate.get("finishReason")
    content = as_data(candidate.get("content") or {})
    parts = content.get("parts") if _is_mapping(content) else None
    if parts:
        return None  # text or calls came: an ordinary response, however it finished
    if isinstance(finish, str) and finish in _BLOCKED_FINISHES:
        return Stopped("blocked", finish, candidate.get("finishMessage"))
    return Stopped("empty", str(finish or "no parts"), candidate.get("finishMessage"))


def request(
    declaration: Declaration, messages: Sequence[Any], previous: Any = None
) -> dict[str, Any]:
    """The keyword arguments of ``generate_content`` sending ``messages`` (the ``contents``)
    with the declared tools (in ``config``; a config bound to the call is merged)."""
    del previous  # the whole conversation goes each time
    sent: dict[str, Any] = {"contents": list(messages)}
    if declaration.tools:
        sent["config"] = {"tools": declaration.tools}
    return sent
