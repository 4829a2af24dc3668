"""Gemini's Interactions API (``client.interactions.create``) tool calling, as pure functions
over dicts.

Tools are flat: ``{"type": "function", name, description, parameters}``, one per function,
beside built-in tools such as ``{"type": "google_search"}``. A deferred function also carries
``defer_loading: true`` and a ``short_description`` the model sees until it loads the tool.
The model's calls are ``function_call`` steps (``id``, ``name``, ``arguments`` as an object);
answers are ``function_result`` steps (``call_id``, ``name``, ``result`` as a string, an object,
or a list of text, image, audio and document content; ``is_error`` on a failure).

The server keeps the conversation (``store`` is on by default): the next request sends only the
answers as its ``input``, with ``previous_interaction_id`` set to the interaction's id (see
[`followup`][] and [`continuation`][]). A client that keeps the history itself
(``store=False``) appends [`model_steps`][] and then the answers.

Schemas: ``parameters`` takes the same JSON Schema subset as generateContent's
``parametersJsonSchema``, so the Gemini lowering is shared
([`to_gemini_json_schema`][toolwire.schema.gemini.to_gemini_json_schema]). Where the two
differ: the Interactions API documents that it ignores ``minLength``, ``maxLength``,
``minProperties``, ``maxProperties``, ``uniqueItems``, ``contains``, ``minContains`` and
``maxContains`` rather than refusing them (the lowering drops them and describes the lengths
for the model, as for generateContent; calls are still validated against the original schema);
there is no OpenAPI form (``schema="openapi"``) and no grouping of declarations in one tool.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from toolwire.calls import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    RejectedCall,
    ResourceLink,
    TextContent,
    ToolCall,
    ToolResult,
    canonical_json,
    content_text,
    placeholder,
    printable,
)
from toolwire.errors import ConfigurationError, MalformedResponse, SchemaConversionError
from toolwire.providers import gemini
from toolwire.providers._assess import assessed, texts
from toolwire.providers._contract import (
    Declaration,
    DeclaredTool,
    ProviderProfile,
    Stopped,
    Verdict,
)
from toolwire.providers._wire import (
    ChoiceMode,
    NotJson,
    StreamBudget,
    StreamLimits,
    as_data,
    call_ids,
    carried_calls,
    check_shape,
    chosen_names,
    described,
    listed,
    load_json,
    named_tools,
    resolve_call,
)
from toolwire.schema.checks import gemini_violations
from toolwire.schema.gemini import to_gemini_json_schema
from toolwire.tool import Tool
from toolwire.toolset import ToolSet

__all__ = [
    "NAME",
    "PROFILE",
    "Accumulator",
    "InteractionsOptions",
    "InteractionsStreamAccumulator",
    "Options",
    "answer",
    "assess",
    "continuation",
    "declare",
    "followup",
    "function_result",
    "interaction_id",
    "model_steps",
    "parse",
    "recognizes",
    "request",
    "response_for",
    "stopped",
    "text",
    "tool_choice",
]

NAME = "gemini-interactions"

PROFILE = ProviderProfile(
    label="Gemini Interactions",
    name_pattern=gemini.PROFILE.name_pattern,
    image_types=frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"}),
    error_prefix=None,  # a failure is a function_result with is_error
    declared_options=frozenset({"native_tools", "deferred"}),
    max_tools=gemini.PROFILE.max_tools,
    schema_rules="Gemini's JSON Schema subset (parameters), as for parametersJsonSchema",
    api_key_env=gemini.PROFILE.api_key_env,
    default_model="gemini-3-flash-preview",
    namespace_separators=gemini.PROFILE.namespace_separators,
    server_history=True,
    tool_search=True,
)

# The media a function_result's content list takes, by content type (the SDK's own literals:
# google.genai.interactions ImageContent, DocumentContent and AudioContent mime types).
_MEDIA_TYPES: Mapping[str, frozenset[str]] = {
    "image": frozenset(
        {
            "image/png",
            "image/jpeg",
            "image/webp",
            "image/heic",
            "image/heif",
            "image/gif",
            "image/bmp",
            "image/tiff",
        }
    ),
    "document": frozenset(
        {
            "application/pdf",
            "text/csv",
            "application/vnd.openxmlformats-officedocument.presentationml.presentation",
            "application/vnd.ms-powerpoint",
            "application/vnd.oasis.opendocument.presentation",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            "application/msword",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.template",
            "application/vnd.oasis.opendocument.text",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            "application/vnd.ms-excel",
            "application/vnd.oasis.opendocument.spreadsheet",
        }
    ),
    "audio": frozenset(
        {
            "audio/wav",
            "audio/mp3",
            "audio/aiff",
            "audio/aac",
            "audio/ogg",
            "audio/flac",
            "audio/mpeg",
            "audio/m4a",
            "audio/l16",
            "audio/opus",
            "audio/alaw",
            "audio/mulaw",
            "audio/webm",
        }
    ),
}
_SHORT_DESCRIPTION = 200
"""Characters of a deferred tool's short description (its first sentence, cut there)."""


@dataclass(frozen=True, slots=True)
class InteractionsOptions:
    """Options of the Interactions API."""

    native_tools: tuple[Any, ...] = ()
    """Built-in tools declared beside the functions: a type name (``"google_search"``,
    ``"url_context"``, ``"code_execution"``), a ``(type, config)`` pair, or a raw tool map."""
    deferred: tuple[str, ...] = field(
        default=(), metadata={"help": "exposed names of tools declared with defer_loading"}
    )
    """Exposed names of tools declared with ``defer_loading: true`` and a short description,
    beside those the toolset defers (``Tool.deferred``, ``ToolSet(deferred=...)``): the model
    sees their summary until it loads them through the ``tool_search`` tool, declared with
    them. A name of a hidden tool is let be; a name no tool has is warned about."""
    structured: gemini.StructuredMode = "prefer"
    """How an answer carries structured content: ``"prefer"`` sends it as the result object;
    ``"auto"`` sends the text when there is any; ``"append"`` the text and then the JSON;
    ``"ignore"`` the text only."""
    file_links: bool = False
    """Send a tool's links to Gemini Files API files as content the model reads (Gemini
    reads them with the request's key, so a tool could point the model at any file of the
    project: only for tools you trust); otherwise a link is text."""


Options = InteractionsOptions
_DEFAULT = Options()


# -- declare ---------------------------------------------------------------------------------------


def _short(description: str) -> str:
    first = description.split("\n\n", 1)[0].strip()
    end = first.find(". ")
    first = first[: end + 1] if end != -1 else first
    return first if len(first) <= _SHORT_DESCRIPTION else first[: _SHORT_DESCRIPTION - 3] + "..."


def _declare_all(toolset: ToolSet, names: tuple[str, ...]) -> tuple[list[dict[str, Any]], Any]:
    visible = [
        toolset.exposed_name(t) for t in toolset if t.providers is None or NAME in t.providers
    ]
    deferred = named_tools(toolset, "deferred", names, visible) | set(toolset.deferred_names)
    declared = []
    notes = {}
    for tool in toolset:
        if tool.providers is not None and NAME not in tool.providers:
            continue
        name = toolset.exposed_name(tool)
        try:
            parameters, tool_notes = to_gemini_json_schema(tool.declared_schema)
        except SchemaConversionError as exc:
            raise exc.for_tool(tool.qualified_name) from None
        description = described(tool)
        entry: dict[str, Any] = {
            "type": "function",
            "name": name,
            "description": description,
            "parameters": parameters,
        }
        if name in deferred:
            entry["defer_loading"] = True
            entry["short_description"] = _short(description) or name
        declared.append(entry)
        notes[name] = tool_notes
    return declared, notes


def _declared(toolset: ToolSet, deferred: Iterable[str]) -> tuple[list[dict[str, Any]], Any]:
    names = tuple(dict.fromkeys(deferred))
    return toolset.cached((NAME, frozenset(names)), lambda: _declare_all(toolset, names))


def _native(tool: Any) -> dict[str, Any]:
    if isinstance(tool, str):
        return {"type": tool}
    if isinstance(tool, tuple) and len(tool) == 2 and isinstance(tool[0], str):
        return {"type": tool[0], **dict(tool[1])}
    if isinstance(tool, Mapping) and isinstance(tool.get("type"), str):
        return dict(tool)
    raise ConfigurationError(f"not a native tool (a type name, a pair, or a map): {tool!r}")


def declare(toolset: ToolSet, options: Options | None = None) -> Declaration:
    """The request's ``tools``: one function entry per visible tool, then the native tools
    (None when there is nothing to send).

    Raises:
        SchemaConversionError: naming the tool whose schema cannot be declared.
        ConfigurationError: for a native tool that is not one, or a deferred name that is not
            a string.
    """
    options = options or _DEFAULT
    declared, _ = _declared(toolset, options.deferred)
    entries = toolset.cached(
        (NAME, "entries"),
        lambda: {d["name"]: DeclaredTool(d["name"], toolset[d["name"]]) for d in declared},
    )
    native = [_native(tool) for tool in options.native_tools]
    if any("defer_loading" in entry for entry in declared) and not any(
        tool.get("type") == "tool_search" for tool in native
    ):
        native.append({"type": "tool_search"})  # how the model finds the deferred tools
    listed_tools = [*declared, *native]
    return Declaration(
        provider=NAME,
        options=options,
        toolset=toolset,
        tools=listed_tools or None,
        entries=entries,
    )


def assess(tool: Tool, options: Options | None = None) -> Verdict:
    """How the Interactions API takes ``tool``: its lowered schema, checked against the
    documented rules (those of generateContent's JSON Schema)."""

    def declared() -> tuple[Any, list[str]]:
        single = ToolSet([tool])
        (entry,), notes = _declared(single, ())
        return entry["parameters"], texts(notes[entry["name"]])

    return assessed(NAME, tool, declared, gemini_violations)


# -- parse -----------------------------------------------------------------------------------------

_STEP_TYPES = frozenset(
    {
        "user_input",
        "model_output",
        "thought",
        "function_call",
        "function_result",
        "code_execution_call",
        "code_execution_result",
        "url_context_call",
        "url_context_result",
        "google_search_call",
        "google_search_result",
        "google_maps_call",
        "google_maps_result",
        "file_search_call",
        "file_search_result",
        "mcp_server_tool_call",
        "mcp_server_tool_result",
        "tool_search_call",
        "tool_search_result",
        "retrieval_call",
        "retrieval_result",
        "processing_call",
        "processing_result",
    }
)
"""Step types of the Interactions API (google.genai.interactions.Step)."""
_OWN_STEP_TYPES = _STEP_TYPES - {"function_call", "file_search_call", "tool_search_call"}
"""Step types no other provider uses (OpenAI Responses has items of the others' names)."""


def _is_mapping(value: Any) -> bool:
    return value.__class__ is dict or isinstance(value, Mapping)


def recognizes(response: Any) -> bool:
    """True for an interaction (an object with ``steps``), one step, or a list of steps."""
    data = as_data(response)
    if _is_mapping(data):
        if isinstance(data.get("steps"), list | tuple):
            return True
        return _is_step(data)
    if isinstance(data, list | tuple):
        items = [as_data(item) for item in data[:16]]
        if any(_is_mapping(item) and "call_id" in item and _is_call(item) for item in items):
            return False  # an OpenAI Responses call item: joined by call_id, not id
        return any(_is_mapping(item) and _is_step(item) for item in items)
    return False


def _is_call(item: Mapping[str, Any]) -> bool:
    kind = item.get("type")
    return kind.__class__ is str and kind.endswith("_call")


def _is_step(item: Mapping[str, Any]) -> bool:
    """True for a step of this API's own (a function call's arguments are an object, and it
    has no ``call_id``: an OpenAI item's arguments are text)."""
    kind = item.get("type")
    if kind == "function_call":
        return "call_id" not in item and _is_mapping(item.get("arguments", {}))
    return kind.__class__ is str and kind in _OWN_STEP_TYPES  # the shared names decide nothing


def _steps(response: Any) -> list[Mapping[str, Any]]:
    data = as_data(response)
    check_shape(NAME, data, recognizes)
    if _is_mapping(data) and "steps" not in data and isinstance(data.get("type"), str):
        data = [data]  # one step
    steps = []
    for position, raw in enumerate(listed(data, "steps", "an interaction or a list of steps")):
        step = as_data(raw)
        if not _is_mapping(step):
            raise MalformedResponse(f"steps[{position}] is not an object")
        steps.append(step)
    return steps


def function_result(
    call_id: str,
    name: str,
    result: str | Mapping[str, Any] | list[dict[str, Any]],
    *,
    is_error: bool = False,
) -> dict[str, Any]:
    """A ``function_result`` step."""
    step: dict[str, Any] = {"type": "function_result", "call_id": call_id, "name": name}
    step["result"] = result
    if is_error:
        step["is_error"] = True
    return step


def parse(response: Any, declaration: Declaration) -> list[ToolCall | RejectedCall]:
    """Every ``function_call`` step of an interaction (or a list of steps) still to answer,
    in order.

    A call to a declared tool whose arguments are an object is a [`ToolCall`][]. A call to an
    unknown name, with arguments that are not an object, or whose ``id`` an earlier call has,
    is a [`RejectedCall`][] with its ``function_result`` error answer. A call some later
    ``function_result`` of the same steps answers is skipped, whether the model sent it an
    id or it was answered under a generated one: steps that carry their history never get
    an answered call run again.

    Raises:
        MalformedResponse: when the response, or one of its steps, is not an object (naming
            the provider it looks like, when it is another's).
    """
    return carried_calls(
        _steps(response),
        is_call=_is_function_call,
        answers=_ANSWERS,
        parse_turn=partial(_parse_turn, declaration=declaration),
    )


_ANSWERS = {"function_result": "call_id"}
"""The steps that answer a call, and the field naming the call they answer."""


def _is_function_call(step: Mapping[str, Any]) -> bool:
    return step.get("type") == "function_call"


def _parse_turn(
    calls: list[Mapping[str, Any]], declaration: Declaration
) -> list[ToolCall | RejectedCall]:
    """One turn's ``function_call`` steps, as a response holding only them is parsed."""
    ids = call_ids(step.get("id") for step in calls)
    return [
        resolve_call(
            declaration,
            PROFILE,
            name=step.get("name"),
            call_id=step.get("id"),
            arguments=step.get("arguments"),
            index=index,
            ids=ids,
            error_answer=_error_result,
            coerce=gemini.whole_floats,  # the same models: a whole number may come as 2.0
        )
        for index, step in enumerate(calls)
    ]


def _error_result(name: str, call_id: str | None, answer_id: str, message: str) -> dict[str, Any]:
    return function_result(answer_id, name, message, is_error=True)


# -- answer ----------------------------------------------------------------------------------------


def _kind(mime_type: str | None) -> str | None:
    """The content type that carries ``mime_type`` in a result list, or None."""
    for kind, types in _MEDIA_TYPES.items():
        if mime_type in types:
            return kind
    return None


def _media(part: Any, file_links: bool) -> dict[str, Any] | None:
    """A content item for a media part the API takes, else None: images and audio inline,
    an embedded document's bytes inline, and with ``file_links`` a link to media in Gemini's
    Files API by its URI (toolwire never fetches a link; other links stay text)."""
    if isinstance(part, ImageContent | AudioContent):
        kind, data = _kind(part.mime_type), part.data
    elif isinstance(part, EmbeddedResource) and part.blob is not None:
        kind, data = _kind(part.mime_type), part.blob
    elif file_links and isinstance(part, ResourceLink) and gemini.files_api_uri(part.uri):
        kind = _kind(part.mime_type)
        return {"type": kind, "mime_type": part.mime_type, "uri": part.uri} if kind else None
    else:
        return None
    if kind is None:
        return None
    encoded = base64.b64encode(data).decode("ascii")
    return {"type": kind, "mime_type": part.mime_type, "data": encoded}


def _structured(result: ToolResult, text: str, has_text: bool, mode: str) -> Any:
    """The result as a string or an object (no media), per the ``structured`` mode."""
    data = result.structured_content
    if data is None or mode == "ignore" or (mode == "auto" and has_text):
        return text
    if mode == "append":
        return f"{text}\n{canonical_json(dict(data))}" if has_text else canonical_json(dict(data))
    return dict(data)


def answer(call: ToolCall, result: ToolResult, options: Options | None = None) -> dict[str, Any]:
    """The ``function_result`` step for ``call``: its result is a string, the structured
    content as an object, or a content list when the result carries media the API takes
    (images, audio, documents, and with ``file_links`` links to Files API files); a failure is
    its message with ``is_error``.

    ``result`` is an executor's (made safe to shape by ``ToolResult.from_value`` already)."""
    options = options or _DEFAULT
    call_id = call.call_id or call.local_id
    name = call.exposed_name
    if result.is_error:
        message = content_text(result.content) or "the tool failed"
        return function_result(call_id, name, message, is_error=True)
    media = [_media(part, options.file_links) for part in result.content]
    if not any(media):
        text = content_text(result.content)
        value = _structured(result, text, bool(result.content), options.structured)
        return function_result(call_id, name, value)
    items: list[dict[str, Any]] = []
    data = result.structured_content
    if data is not None and options.structured != "ignore":
        items.append({"type": "text", "text": canonical_json(dict(data))})
    for part, item in zip(result.content, media, strict=True):
        if item is not None:
            items.append(item)
        elif isinstance(part, TextContent):
            items.append({"type": "text", "text": part.text})
        else:
            items.append({"type": "text", "text": placeholder(part)})
    return function_result(call_id, name, items)


# -- the conversation ------------------------------------------------------------------------------


def tool_choice(
    declaration: Declaration, allowed: Sequence[str] | None = None, mode: ChoiceMode = "auto"
) -> Any:
    """The interaction's ``generation_config.tool_choice``: ``auto``, ``any`` (required) or
    ``none`` over every declared function, or narrowed to ``allowed`` (``{"allowed_tools":
    {"mode", "tools"}}``: ``validated`` when the model may still answer in text, ``any`` when
    it must call one) without changing the declared functions.

    Raises:
        ConfigurationError: see ``chosen_names``.
    """
    names = chosen_names(declaration, allowed, mode)
    if names is None:
        return {"auto": "auto", "required": "any", "none": "none"}[mode]
    narrowed = "validated" if mode == "auto" else "any"
    return {"allowed_tools": {"mode": narrowed, "tools": list(names)}}


def followup(response: Any, answers: Sequence[Any], ids: Sequence[str | None] = ()) -> list[Any]:
    """The next request's ``input``: the answers, in call order. The server holds the rest of
    the conversation: send them with ``previous_interaction_id`` set to ``response``'s id
    ([`continuation`][] builds both). With ``store=False``, append [`model_steps`][] first."""
    _steps(response)  # a response of another provider's shape is refused here too
    return list(answers)


def interaction_id(response: Any) -> str:
    """The id of the interaction ``response`` is, to continue from.

    Raises:
        MalformedResponse: when it has none (it was not stored: keep the history with
            [`model_steps`][] instead).
    """
    data = as_data(response)
    found = data.get("id") if _is_mapping(data) else None
    if not isinstance(found, str) or not found:
        raise MalformedResponse(
            "this interaction has no id to continue from; with store=False send the history: "
            "model_steps(response) and then the answers"
        )
    return found


def continuation(response: Any, answers: Sequence[Any]) -> dict[str, Any]:
    """The next ``interactions.create`` arguments after ``response``: ``input`` (the answers)
    and ``previous_interaction_id``.

    Raises:
        MalformedResponse: when the interaction has no id (see [`interaction_id`][]).
    """
    return {
        "previous_interaction_id": interaction_id(response),
        "input": followup(response, answers),
    }


def model_steps(response: Any) -> list[dict[str, Any]]:
    """The model's steps of ``response`` (its thoughts, with their signatures, its output and
    its calls), for a client that keeps the history itself."""
    return [dict(step) for step in _steps(response) if step.get("type") != "user_input"]


def response_for(
    calls: Sequence[tuple[str, str, Mapping[str, Any]]], text: str | None = None
) -> dict[str, Any]:
    """An interaction holding ``text`` as model output, then ``calls`` ((id, name,
    arguments)) as ``function_call`` steps."""
    steps: list[dict[str, Any]] = []
    if text:
        steps.append({"type": "model_output", "content": [{"type": "text", "text": text}]})
    steps += [
        {"type": "function_call", "id": call_id, "name": name, "arguments": dict(args)}
        for call_id, name, args in calls
    ]
    status = "requires_action" if calls else "completed"
    return {"id": "interaction_1", "status": status, "steps": steps}


def text(response: Any) -> str:
    """The text of the model's output steps (thoughts left out)."""
    return "".join(
        item["text"]
        for step in _steps(response)
        if step.get("type") == "model_output" and isinstance(step.get("content"), list | tuple)
        for item in map(as_data, step["content"])
        if _is_mapping(item) and item.get("type") == "text" and isinstance(item.get("text"), str)
    )


# -- streaming -------------------------------------------------------------------------------------


class InteractionsStreamAccumulator:
    """Turns the Interactions API's streamed events into the interaction they add up to.

    ``step.start`` opens a step at its ``index``; ``step.delta`` adds to it: an
    ``arguments_delta`` is a piece of a function call's arguments (JSON text), a ``text``
    delta a piece of the model's output, a ``thought_signature`` its thought's signature;
    ``step.stop`` ends it. ``interaction.created``, ``interaction.status_update`` and
    ``interaction.completed`` carry the id and status (and, when it comes, the completed
    interaction's steps, which win). A stream the SDK continued on its own (automatic
    continuation) holds several interactions, each opened by ``interaction.created``: their
    steps add up, and the last one's id is the one to continue from. Other deltas are ignored.

    Bounded by ``limits`` (see [`StreamLimits`][toolwire.providers._wire.StreamLimits]): an
    event not shaped as the API streams it, an ``error`` event, or a stream past a limit raises
    [`MalformedResponse`][toolwire.errors.MalformedResponse].
    """

    def __init__(self, *, limits: StreamLimits | None = None) -> None:
        self._budget = StreamBudget("Interactions stream", limits)
        self._steps: dict[int, dict[str, Any]] = {}
        self._arguments: dict[int, list[str]] = {}
        self._texts: dict[int, list[str]] = {}
        self._interaction: dict[str, Any] = {}
        self._completed_steps: list[Any] | None = None
        self._earlier: list[dict[str, Any]] = []
        """The steps of earlier hops: the SDK's automatic continuation streams several
        interactions as one, each numbering its steps from 0."""

    def add(self, event: Any) -> None:
        """Add one event (a dict or the SDK's event object).

        Raises:
            MalformedResponse: for an event not shaped as the API streams it, an error event,
                or past a limit.
        """
        data = as_data(event)
        if not _is_mapping(data):
            raise MalformedResponse(f"an event must be an object, not {type(event).__name__}")
        kind = data.get("event_type")
        if kind == "step.start":
            self._start(data)
        elif kind == "step.delta":
            self._delta(data)
        elif kind in ("interaction.created", "interaction.completed"):
            interaction = as_data(data.get("interaction"))
            if not _is_mapping(interaction):
                raise MalformedResponse(f"{kind} carries no interaction object")
            fields = {k: v for k, v in interaction.items() if k != "steps"}
            if kind == "interaction.created":
                if self._steps or self._completed_steps is not None:  # the next hop begins
                    self._earlier += self._hop_steps()
                    self._steps, self._arguments, self._texts = {}, {}, {}
                    self._completed_steps = None
                self._interaction = fields  # the last hop's id is the one to continue from
            else:
                steps = interaction.get("steps")
                if isinstance(steps, list) and steps:
                    self._completed_steps = [self._counted(step) for step in steps]
                self._interaction.update(fields)
        elif kind == "interaction.status_update":
            if isinstance(data.get("status"), str):
                self._interaction["status"] = data["status"]
        elif kind == "error":
            error = as_data(data.get("error"))
            message = error.get("message") if _is_mapping(error) else None
            shown = printable(message[:300]) if isinstance(message, str) else repr(error)[:300]
            raise MalformedResponse(f"the interaction stream failed: {shown}")

    def _start(self, data: Mapping[str, Any]) -> None:
        index = self._budget.index(data.get("index"), "index")
        step = as_data(data.get("step"))
        if not _is_mapping(step) or not isinstance(step.get("type"), str):
            raise MalformedResponse("step.start carries no step object")
        if index in self._steps:  # starting it again would drop what it held (a call)
            raise MalformedResponse(f"step {index} started twice")
        content = step.get("content")
        if content is not None and not isinstance(content, list | tuple):
            raise MalformedResponse(f"step {index}: content is not a list")
        self._budget.part()
        self._steps[index] = dict(step)

    def _counted(self, raw: Any) -> Any:
        """A completed interaction's step, counted against the limits like streamed ones."""
        self._budget.part()
        step = as_data(raw)
        self._budget.text(json.dumps(step, default=repr), "a completed step")
        return step

    def _delta(self, data: Mapping[str, Any]) -> None:
        index = self._budget.index(data.get("index"), "index")
        delta = as_data(data.get("delta"))
        if not _is_mapping(delta):
            raise MalformedResponse("step.delta carries no delta object")
        step = self._steps.get(index)
        if step is None:
            raise MalformedResponse(f"step.delta for step {index}, which never started")
        kind = delta.get("type")
        if kind == "arguments_delta":
            if step.get("type") != "function_call":
                return  # another call step's arguments: not ours to run
            piece = self._budget.text(delta.get("arguments", ""), "arguments")
            self._arguments.setdefault(index, []).append(piece)
        elif kind == "text":
            self._texts.setdefault(index, []).append(self._budget.text(delta.get("text"), "text"))
        elif kind == "thought_signature" and delta.get("signature") is not None:
            step["signature"] = self._budget.text(delta["signature"], "signature")

    def _step(self, index: int) -> dict[str, Any]:
        step = dict(self._steps[index])
        if index in self._arguments:
            joined = "".join(self._arguments[index])
            loaded = load_json(joined) if joined.strip() else {}
            # arguments that are not a JSON object stay text: parsing answers them as invalid
            step["arguments"] = joined if isinstance(loaded, NotJson) else loaded
        if index in self._texts:
            content = list(step.get("content") or [])
            content.append({"type": "text", "text": "".join(self._texts[index])})
            step["content"] = content
        return step

    def _hop_steps(self) -> list[dict[str, Any]]:
        if self._completed_steps is not None:
            return list(self._completed_steps)
        return [self._step(index) for index in sorted(self._steps)]

    def response(self) -> dict[str, Any]:
        """The interaction so far: the last hop's ``id`` and ``status`` when streamed, and the
        steps of every hop."""
        return {**self._interaction, "steps": self._earlier + self._hop_steps()}


Accumulator = InteractionsStreamAccumulator


def stopped(response: Any) -> Stopped | None:
    """An interaction that ``failed`` or was ``cancelled``, or one that completed with no
    output step; None otherwise."""
    data = as_data(response)
    if not isinstance(data, Mapping) or "status" not in data:
        return None
    status = data.get("status")
    if status in ("failed", "cancelled"):
        return Stopped("blocked", str(status))
    if status == "completed" and not (data.get("steps") or data.get("outputs")):
        return Stopped("empty", "completed")
    return None


def request(
    declaration: Declaration, messages: Sequence[Any], previous: Any = None
) -> dict[str, Any]:
    """The keyword arguments of ``interactions.create``: the server keeps the conversation,
    so ``messages`` are the steps not sent yet (the prompt, then the answers), sent after
    ``previous`` (the last interaction) by its id."""
    sent: dict[str, Any] = {"input": list(messages)}
    if declaration.tools:
        sent["tools"] = declaration.tools
    if previous is not None:
        sent["previous_interaction_id"] = interaction_id(previous)
    return sent
