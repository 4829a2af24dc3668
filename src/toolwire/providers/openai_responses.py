"""OpenAI Responses tool calling, as pure functions over dicts.

Tools are flat (``{"type": "function", name, description, parameters, strict}``) and
``strict`` is always sent: when it is left out, the Responses API makes the schema strict on its
own and optional fields become mandatory. Calls are ``function_call`` output items joined by
``call_id``; answers are ``function_call_output`` items whose ``output`` is a string, or a list
of ``input_text`` / ``input_image`` items when the result carries an image.

Custom tools (``Tool(kind="custom")``) are declared as ``{"type": "custom", name, description,
format}``; the model calls one with a ``custom_tool_call`` item holding free text (``input``),
answered by a ``custom_tool_call_output`` of the same shape.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from toolwire.calls import (
    DIRECT,
    Caller,
    CallIds,
    ErrorKind,
    ImageContent,
    RejectedCall,
    TextContent,
    ToolCall,
    ToolResult,
    placeholder,
)
from toolwire.errors import MalformedResponse
from toolwire.providers import _openai
from toolwire.providers._contract import (
    Declaration,
    ProviderProfile,
    Stopped,
    Verdict,
)
from toolwire.providers._openai import OpenAIOptions
from toolwire.providers._wire import (
    ChoiceMode,
    StreamBudget,
    StreamLimits,
    as_data,
    call_ids,
    caller_of,
    carried_calls,
    check_shape,
    chosen_names,
    item_types,
    listed,
    resolve_call,
    sent_id,
)
from toolwire.tool import Tool, exposed_name_for
from toolwire.toolset import ToolSet

__all__ = [
    "NAME",
    "PROFILE",
    "Accumulator",
    "Options",
    "ResponsesOptions",
    "ResponsesStreamAccumulator",
    "answer",
    "assess",
    "custom_tool_call",
    "custom_tool_call_output",
    "declare",
    "followup",
    "function_call_output",
    "parse",
    "recognizes",
    "request",
    "response_for",
    "stopped",
    "text",
    "tool_choice",
]

NAME = "openai-responses"
ERROR_PREFIX = _openai.ERROR_PREFIX
_IMAGE_TYPES = _openai.IMAGE_TYPES
PROFILE = ProviderProfile(
    label="OpenAI Responses",
    name_pattern=_openai.NAME_PATTERN,
    image_types=_IMAGE_TYPES,
    error_prefix=ERROR_PREFIX,
    declared_options=frozenset({"strict", "namespaces"}),
    max_tools=_openai.MAX_TOOLS,
    schema_rules="JSON Schema with an object root; strict mode's subset where strict",
    option_sets=({}, {"strict": False}),
    api_key_env=("OPENAI_API_KEY",),
    default_model="gpt-4.1-mini",
    tool_search=True,
    code_callers=True,
)


@dataclass(frozen=True, slots=True)
class ResponsesOptions(OpenAIOptions):
    """Options of the Responses API."""

    namespaces: bool = field(
        default=False, metadata={"help": "group each server's tools in a namespace"}
    )
    """Declare each server's tools (``server__name``) inside a ``namespace`` tool named after
    the server, each by its own name: the model sees one entry per server, and a call names
    the namespace and the tool. Tools without a server stay as they are."""


Options = ResponsesOptions
_DEFAULT = Options()
_NAMESPACE_DESCRIPTION = 1024
"""Characters of a namespace's description (the server's tool names, listed)."""


def _entry(d: _openai.Declared) -> dict[str, Any]:
    if d.custom:
        return {
            "type": "custom",
            "name": d.name,
            "description": d.description,
            "format": d.format or {"type": "text"},
        }
    return {
        "type": "function",
        "name": d.name,
        "description": d.description,
        "parameters": d.parameters,
        "strict": d.strict,
    }


def declare(toolset: ToolSet, options: Options | None = None) -> Declaration:
    """The toolset's ``tools`` (None when empty), strict where each schema can be; cached on
    the toolset.

    Raises:
        SchemaConversionError: naming the tool whose schema cannot be declared.
    """
    options = options or _DEFAULT
    return toolset.cached(
        (NAME, "loading", options),
        lambda: _loading(toolset, _openai.declaration(toolset, NAME, options, _entry), options),
    )


def _loading(toolset: ToolSet, base: Declaration, options: Options) -> Declaration:
    """``base`` with its deferred tools marked ``defer_loading`` and a hosted ``tool_search``
    to find them, the tools code may call given ``allowed_callers`` and the
    ``programmatic_tool_calling`` tool that runs that code, and each server's tools in a
    namespace when ``options.namespaces``; ``base`` itself when none of these applies."""
    tools = list(base.tools or [])
    deferred = code = False
    for position, entry in enumerate(tools):
        tool = base.entries[entry["name"]].tool
        changes: dict[str, Any] = {}
        if toolset.is_deferred(tool):
            changes["defer_loading"] = deferred = True
        if "code" in tool.callers:
            code = True
            direct = ["direct"] if "direct" in tool.callers else []
            changes["allowed_callers"] = [*direct, "programmatic"]
        if changes:
            tools[position] = {**entry, **changes}
    if options.namespaces:
        tools = _namespaced(tools, base)
    tools += [{"type": "programmatic_tool_calling"}] if code else []
    tools += [{"type": "tool_search"}] if deferred else []
    return base if tools == (base.tools or []) else replace(base, tools=tools)


def _namespace_of(exposed: str, tool: Tool) -> str | None:
    """The namespace a server's tool is declared in: its exposed name's ``server__`` prefix
    (None for a tool without a server, or one whose name does not start with it)."""
    if tool.server_id is None:
        return None
    prefix = exposed_name_for("_", tool.server_id)[:-1]  # "server__", made portable
    return prefix[:-2] if exposed.startswith(prefix) and len(exposed) > len(prefix) else None


def _namespaced(tools: list[dict[str, Any]], base: Declaration) -> list[dict[str, Any]]:
    """Each server's tools in one ``namespace`` tool, where the first of them was."""
    grouped: list[dict[str, Any]] = []
    spaces: dict[str, dict[str, Any]] = {}
    for entry in tools:
        exposed = entry["name"]
        space = _namespace_of(exposed, base.entries[exposed].tool)
        if space is None:
            grouped.append(entry)
            continue
        if space not in spaces:
            spaces[space] = {"type": "namespace", "name": space, "description": "", "tools": []}
            grouped.append(spaces[space])
        spaces[space]["tools"].append({**entry, "name": exposed[len(space) + 2 :]})
    for space, namespace in spaces.items():
        names = ", ".join(t["name"] for t in namespace["tools"])
        description = f"The tools of the {space} server: {names}"
        if len(description) > _NAMESPACE_DESCRIPTION:
            description = description[: _NAMESPACE_DESCRIPTION - 3] + "..."
        namespace["description"] = description
    return grouped


def assess(tool: Tool, options: Options | None = None) -> Verdict:
    """How Responses takes ``tool``, checked against its documented schema rules."""
    return _openai.assess(NAME, tool, options or _DEFAULT)


_ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "web_search_call",
        "file_search_call",
        "computer_call",
        "code_interpreter_call",
        "image_generation_call",
        "local_shell_call",
        "shell_call",
        "apply_patch_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "tool_search_call",
        "tool_search_output",
        "program",
        "program_output",
    }
)
"""Output item types of the Responses API (none is a Gemini part or an Anthropic block)."""


def recognizes(response: Any) -> bool:
    """True for a Responses response, or a list of its output items."""
    data = as_data(response)
    if isinstance(data, Mapping):
        if isinstance(data.get("output"), list | tuple) or data.get("object") == "response":
            return True
        kind = data.get("type")  # one output item (a lone message holds no call)
        return (
            kind.__class__ is str
            and kind in _ITEM_TYPES
            and kind != "message"
            and not _is_interactions_call(data)
        )
    if isinstance(data, list | tuple):
        items = [as_data(item) for item in data[:16]]
        if any(isinstance(item, Mapping) and _is_interactions_call(item) for item in items):
            return False
        return bool(item_types(data) & _ITEM_TYPES)
    return False


def _is_interactions_call(item: Mapping[str, Any]) -> bool:
    """A Gemini Interactions ``function_call`` step: no ``call_id`` (every Responses call item
    has one) and its arguments an object, not JSON text."""
    return (
        item.get("type") == "function_call"
        and "call_id" not in item
        and isinstance(item.get("arguments", {}), Mapping)
    )


def function_call_output(call_id: str, output: str | list[dict[str, Any]]) -> dict[str, Any]:
    """A ``function_call_output`` input item."""
    return {"type": "function_call_output", "call_id": call_id, "output": output}


# A 1x1 white PNG: a computer_call_output carries a screenshot and nothing else.
_BLANK_SCREENSHOT = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGP4DwABAQEAsTj2FAAAAABJRU5ErkJggg=="
)


def _function_error(call_id: str, message: str) -> dict[str, Any]:
    return function_call_output(call_id, message)


def _custom_error(call_id: str, message: str) -> dict[str, Any]:
    return {"type": "custom_tool_call_output", "call_id": call_id, "output": message}


def _local_shell_error(call_id: str, message: str) -> dict[str, Any]:
    # the output item names the call by the model's call id, under "id"
    return {"type": "local_shell_call_output", "id": call_id, "output": message}


def _shell_error(call_id: str, message: str) -> dict[str, Any]:
    outcome = {
        "stdout": "",
        "stderr": message,
        "outcome": {"type": "exit", "exit_code": 1},
    }
    return {"type": "shell_call_output", "call_id": call_id, "output": [outcome]}


def _apply_patch_error(call_id: str, message: str) -> dict[str, Any]:
    return {
        "type": "apply_patch_call_output",
        "call_id": call_id,
        "status": "failed",
        "output": message,
    }


def _computer_error(call_id: str, message: str) -> dict[str, Any]:
    screenshot = {"type": "computer_screenshot", "image_url": _BLANK_SCREENSHOT}
    return {"type": "computer_call_output", "call_id": call_id, "output": screenshot}


def _tool_search_error(call_id: str, message: str) -> dict[str, Any]:
    return {
        "type": "tool_search_output",
        "call_id": call_id,
        "execution": "client",
        "status": "completed",
        "tools": [],
    }


_CLIENT_CALLS: Mapping[str, tuple[str, Callable[[str, str], dict[str, Any]]]] = {
    "custom_tool_call": ("", _custom_error),
    "local_shell_call": ("local_shell", _local_shell_error),
    "shell_call": ("shell", _shell_error),
    "apply_patch_call": ("apply_patch", _apply_patch_error),
    "computer_call": ("computer", _computer_error),
    "tool_search_call": ("tool_search", _tool_search_error),
}
"""Output items other than ``function_call`` that the client must answer, with the tool they
stand for and their error answer. Items of hosted tools (``web_search_call``,
``file_search_call``, ``code_interpreter_call``, ``mcp_call``, ...) are the API's own and get
no answer; so does a ``tool_search_call`` the server ran."""


def _is_client_call(item: Mapping[str, Any]) -> bool:
    kind = item.get("type")
    if kind == "function_call":
        return True
    if kind == "tool_search_call":
        return item.get("execution") == "client"
    return isinstance(kind, str) and kind in _CLIENT_CALLS


def parse(response: Any, declaration: Declaration) -> list[ToolCall | RejectedCall]:
    """Every call the client must answer in a response (or a list of output items), in order.

    A ``function_call`` to a declared tool that resolves is a [`ToolCall`][], and so is a
    ``custom_tool_call`` to a declared custom tool (its ``input`` text as the tool's one
    argument). Every other item the client must answer is a [`RejectedCall`][] with an answer
    of its own type: a ``function_call`` to an unknown name or with arguments that are not a
    JSON object, a ``custom_tool_call`` to an unknown name or a function tool, a
    ``local_shell_call``, ``shell_call``, ``apply_patch_call``, ``computer_call`` or
    client-side ``tool_search_call``, and any call whose ``call_id`` an earlier one has.
    Items the API handles itself (messages, reasoning, hosted tools) are skipped, and so is a
    call that a later output item of the list answers (a history the client keeps itself).

    Raises:
        MalformedResponse: when the response, or one of its output items, is not an object
            (naming the provider it looks like, when it is another's).
    """
    entries = []
    data = as_data(response)
    check_shape(NAME, data, recognizes)
    if isinstance(data, Mapping) and "output" not in data and isinstance(data.get("type"), str):
        response = [data]  # one output item
    for position, raw in enumerate(
        listed(response, "output", "a response or a list of output items")
    ):
        item = as_data(raw)
        if not isinstance(item, Mapping):
            raise MalformedResponse(f"output[{position}] is not an object")
        entries.append(item)
    prefix = getattr(declaration.options, "error_prefix", ERROR_PREFIX)
    return carried_calls(
        entries,
        is_call=_is_client_call,
        answers=_ANSWERS,
        parse_turn=partial(_parse_turn, declaration=declaration, prefix=prefix),
    )


_ANSWERS = {
    "function_call_output": "call_id",
    "custom_tool_call_output": "call_id",
    "local_shell_call_output": "id",
    "shell_call_output": "call_id",
    "apply_patch_call_output": "call_id",
    "computer_call_output": "call_id",
    "tool_search_output": "call_id",
}
"""The input items that answer a call, and the field naming the call they answer: a list of
items that carries its history (a client keeping the conversation itself) never gets an
answered call run again."""


def _parse_turn(
    calls: list[Mapping[str, Any]], declaration: Declaration, prefix: str
) -> list[ToolCall | RejectedCall]:
    """One turn's call items, as a response holding only them is parsed."""
    ids = call_ids(item.get("call_id") for item in calls)
    return [_parse_item(item, index, ids, declaration, prefix) for index, item in enumerate(calls)]


def _parse_item(
    item: Mapping[str, Any], index: int, ids: CallIds, declaration: Declaration, prefix: str
) -> ToolCall | RejectedCall:
    kind = str(item.get("type"))  # a client call's type (see _is_client_call)
    what, unprefixed = _CLIENT_CALLS.get(kind, ("", _function_error))

    def error_answer(name: str, call_id: str | None, answer_id: str, message: str) -> Any:
        return unprefixed(answer_id, prefix + message)

    custom = kind == "custom_tool_call"
    refused: tuple[ErrorKind, str] | None = None
    name = item.get("name") if kind in ("function_call", "custom_tool_call") else what
    space = item.get("namespace")
    if space.__class__ is str and space and name.__class__ is str:
        # a tool declared in a namespace, by its server: never another of the same bare name
        name = f"{space}__{name}"
    caller = caller_of(item.get("caller"), id_field="caller_id", code="program")
    if isinstance(caller, str):
        refused = ("denied", caller)
    if custom:
        extras = {"type": kind}  # answered in kind (see answer)
        if isinstance(item.get("id"), str):
            extras["id"] = item["id"]
    elif kind == "function_call":
        extras = {"id": item["id"]} if isinstance(item.get("id"), str) else {}
    else:
        extras = {}
        refused = (
            "not_found",
            f"Not run: {kind} items are not handled here; only the function tools declared "
            "here run.",
        )
    return resolve_call(
        declaration,
        PROFILE,
        name=name,
        call_id=item.get("call_id"),
        arguments=item.get("input" if custom else "arguments"),
        index=index,
        ids=ids,
        error_answer=error_answer,
        extras=extras,
        custom=custom,
        refused=refused,
        caller=caller if isinstance(caller, Caller) else DIRECT,
    )


def custom_tool_call_output(call_id: str, output: str | list[dict[str, Any]]) -> dict[str, Any]:
    """A ``custom_tool_call_output`` input item."""
    return {"type": "custom_tool_call_output", "call_id": call_id, "output": output}


def answer(call: ToolCall, result: ToolResult, options: Options | None = None) -> dict[str, Any]:
    """The ``function_call_output`` for ``call`` (a ``custom_tool_call_output`` for a call
    that came as a ``custom_tool_call``): a string, or text and image items when the result
    carries an image the API takes."""
    error_prefix = (options or _DEFAULT).error_prefix
    call_id = call.call_id or call.local_id
    shaped = (
        custom_tool_call_output
        if call.extras.get("type") == "custom_tool_call"
        else function_call_output
    )
    if call.caller.kind == "code":  # the program reads the result, as text
        answered = shaped(call_id, _openai.output_text(result, error_prefix))
        return {**answered, "caller": {"type": "program", "caller_id": call.caller.id}}
    if not any(isinstance(p, ImageContent) and p.mime_type in _IMAGE_TYPES for p in result.content):
        return shaped(call_id, _openai.output_text(result, error_prefix))
    parts: list[dict[str, Any]] = []
    if result.is_error:
        parts.append({"type": "input_text", "text": error_prefix.rstrip()})
    for part in result.content:
        if isinstance(part, ImageContent) and part.mime_type in _IMAGE_TYPES:
            data = base64.b64encode(part.data).decode("ascii")
            parts.append(
                {
                    "type": "input_image",
                    "detail": "auto",
                    "image_url": f"data:{part.mime_type};base64,{data}",
                }
            )
        elif isinstance(part, TextContent):
            parts.append({"type": "input_text", "text": part.text})
        else:
            parts.append({"type": "input_text", "text": placeholder(part)})
    return shaped(call_id, parts)


def _output_items(response: Any) -> list[Any]:
    check_shape(NAME, as_data(response), recognizes)
    return [as_data(item) for item in listed(response, "output", "a response or output items")]


def tool_choice(
    declaration: Declaration, allowed: Sequence[str] | None = None, mode: ChoiceMode = "auto"
) -> Any:
    """The request's ``tool_choice``: ``mode`` over every declared tool, or narrowed to
    ``allowed`` (``{"type": "allowed_tools", ...}``) without changing the declared tools, so
    the prompt cache holds.

    Raises:
        ConfigurationError: see ``chosen_names``.
    """
    names = chosen_names(declaration, allowed, mode)
    if names is None:
        return mode
    tools = [
        {
            "type": "custom" if declaration.toolset[name].kind == "custom" else "function",
            "name": name,
        }
        for name in names
    ]
    return {"type": "allowed_tools", "mode": mode, "tools": tools}


def followup(response: Any, answers: Sequence[Any], ids: Sequence[str | None] = ()) -> list[Any]:
    """The response's output items, then the answers: what to append to ``input`` (when
    the conversation is not kept by ``previous_response_id``). A call sent without a
    ``call_id`` gets the one its answer carries (``ids``, in order)."""
    given = iter(ids)
    items = []
    for item in _output_items(response):
        if isinstance(item, Mapping) and _is_client_call(item):
            answer_id = next(given, None)
            if sent_id(item.get("call_id")) is None and answer_id is not None:
                item = {**item, "call_id": answer_id}
        items.append(item)
    return [*items, *answers]


def response_for(
    calls: Sequence[tuple[str, str, Mapping[str, Any] | str]], text: str | None = None
) -> dict[str, Any]:
    """A response whose output holds ``text`` as a message, then ``calls`` ((id, name,
    arguments)) as ``function_call`` items; a call whose arguments are a string is a
    ``custom_tool_call`` with that input."""
    output: list[dict[str, Any]] = []
    if text:
        content = [{"type": "output_text", "text": text, "annotations": []}]
        output.append(
            {
                "type": "message",
                "id": "msg_0",
                "role": "assistant",
                "status": "completed",
                "content": content,
            }
        )
    output += [
        custom_tool_call(call_id, name, args, item_id=f"ctc_{index}")
        if isinstance(args, str)
        else {
            "type": "function_call",
            "id": f"fc_{index}",
            "call_id": call_id,
            "name": name,
            "arguments": json.dumps(dict(args)),
            "status": "completed",
        }
        for index, (call_id, name, args) in enumerate(calls)
    ]
    return {"object": "response", "output": output}


def custom_tool_call(
    call_id: str, name: str, text: str, *, item_id: str | None = None
) -> dict[str, Any]:
    """A ``custom_tool_call`` output item: the model calling custom tool ``name`` with
    ``text``."""
    item = {"type": "custom_tool_call", "call_id": call_id, "name": name, "input": text}
    if item_id is not None:
        item["id"] = item_id
    return item


def text(response: Any) -> str:
    """The text of the response's messages."""
    return "".join(
        part["text"]
        for item in _output_items(response)
        if isinstance(item, Mapping)
        and item.get("type") == "message"
        and isinstance(item.get("content"), list | tuple)
        for part in map(as_data, item["content"])
        if isinstance(part, Mapping)
        and part.get("type") == "output_text"
        and isinstance(part.get("text"), str)
    )


_STREAMED_FIELD = {
    "response.function_call_arguments.delta": "arguments",
    "response.function_call_arguments.done": "arguments",
    "response.custom_tool_call_input.delta": "input",
    "response.custom_tool_call_input.done": "input",
}
"""Events that stream a field of an output item, and the field."""


class ResponsesStreamAccumulator:
    """Turns Responses stream events into the output items they add up to.

    Function call arguments arrive as ``response.function_call_arguments.delta`` events
    joined by item (custom tool call input as ``response.custom_tool_call_input.delta``);
    ``.done`` and ``response.output_item.done`` events carry the final values, and
    ``response.completed`` the whole response, which wins when it comes.

    Bounded: at most ``limits.max_parts`` output items (100,000 by default), output indices
    below that, and ``limits.max_chars`` characters (32 million) of arguments in all. An event
    not shaped as the API streams it (an item that is not an object, an index that is not a
    small integer, arguments for an item never announced), or a stream past a limit, raises
    [`MalformedResponse`][toolwire.errors.MalformedResponse]. Other events are ignored.

    Args:
        limits: the bounds (the defaults are far above any real stream).
    """

    def __init__(self, *, limits: StreamLimits | None = None) -> None:
        self._budget = StreamBudget("Responses stream", limits)
        self._items: dict[int, dict[str, Any]] = {}
        self._pieces: dict[int, tuple[str, list[str]]] = {}  # a streamed field's pieces
        self._ids: dict[str, int] = {}
        self._completed: dict[str, Any] | None = None

    def add(self, event: Any) -> None:
        """Add one event (a dict or the SDK's event object).

        Raises:
            MalformedResponse: for an event not shaped as the API streams it, or past a limit.
        """
        data = as_data(event)
        if not isinstance(data, Mapping):
            raise MalformedResponse(f"an event must be an object, not {type(event).__name__}")
        kind = data.get("type")
        if kind in ("response.output_item.added", "response.output_item.done"):
            self._add_item(data)
        elif isinstance(kind, str) and kind in _STREAMED_FIELD:
            self._add_piece(data, _STREAMED_FIELD[kind], kind.endswith(".delta"))
        elif kind == "response.completed":
            response = as_data(data.get("response"))
            if not isinstance(response, Mapping):
                raise MalformedResponse("response.completed carries no response object")
            self._completed = dict(response)

    def _slot(self, raw_index: Any) -> int:
        index = self._budget.index(raw_index, "output_index")
        if index not in self._items:
            self._budget.part()
            self._items[index] = {}
        return index

    def _add_item(self, data: Mapping[str, Any]) -> None:
        item = as_data(data.get("item"))
        if not isinstance(item, Mapping):
            raise MalformedResponse(f"{data.get('type')} carries no item object")
        index = self._slot(data.get("output_index", len(self._items)))
        merged = {**self._items[index], **item}
        self._items[index] = merged
        for key in ("arguments", "input"):  # a final value replaces the pieces so far
            value = item.get(key)
            if isinstance(value, str):
                self._pieces[index] = (key, [self._budget.text(value, f"item.{key}")])
            elif value is not None:  # an object, from some compatible servers: kept as sent
                self._pieces.pop(index, None)
        item_id = merged.get("id")
        if isinstance(item_id, str):
            self._ids[item_id] = index

    def _add_piece(self, data: Mapping[str, Any], field: str, is_delta: bool) -> None:
        raw_index = data.get("output_index")
        if raw_index is None:
            item_id = data.get("item_id")
            found = self._ids.get(item_id) if isinstance(item_id, str) else None
            if found is None:
                raise MalformedResponse(
                    f"{data.get('type')} for an output item that was never added"
                )
            index = found
        else:
            index = self._slot(raw_index)
        if not self._items[index]:
            self._items[index] = {
                "type": "custom_tool_call" if field == "input" else "function_call"
            }
        if is_delta:
            piece = self._budget.text(data.get("delta", ""), "delta")
            streamed, pieces = self._pieces.get(index, (field, []))
            if streamed != field:
                raise MalformedResponse(f"output item {index} streams both arguments and input")
            pieces.append(piece)
            self._pieces[index] = (field, pieces)
        elif field in data:
            self._pieces[index] = (field, [self._budget.text(data[field], field)])

    def response(self) -> dict[str, Any]:
        """A response-shaped dict with the output items so far (or the completed response)."""
        if self._completed is not None:
            return self._completed
        output = []
        for index in sorted(self._items):
            item = dict(self._items[index])
            if index in self._pieces:
                field, pieces = self._pieces[index]
                item[field] = "".join(pieces)
            output.append(item)
        return {"output": output}


Accumulator = ResponsesStreamAccumulator


def stopped(response: Any) -> Stopped | None:
    """A message whose content is a ``refusal``, a response the content filter left
    incomplete (``incomplete_details.reason: "content_filter"``) with nothing to show, or one
    with no output at all; None otherwise."""
    data = as_data(response)
    if not isinstance(data, Mapping) or "output" not in data:
        return None
    output = [as_data(item) for item in data.get("output") or []]
    for item in output:
        if isinstance(item, Mapping) and item.get("type") == "message":
            for part in item.get("content") or []:
                part = as_data(part)
                if isinstance(part, Mapping) and part.get("type") == "refusal":
                    return Stopped("refused", "refusal", part.get("refusal"))
    details = as_data(data.get("incomplete_details") or {})
    reason = details.get("reason") if isinstance(details, Mapping) else None
    shown = [i for i in output if isinstance(i, Mapping) and i.get("type") != "reasoning"]
    if shown:
        return None
    if reason == "content_filter":
        return Stopped("blocked", "content_filter")
    return Stopped("empty", str(reason or data.get("status") or "no output"))


def request(
    declaration: Declaration, messages: Sequence[Any], previous: Any = None
) -> dict[str, Any]:
    """The keyword arguments of ``responses.create`` sending ``messages`` (the ``input``
    items) with the declared tools."""
    del previous  # the whole conversation goes each time (no previous_response_id needed)
    sent: dict[str, Any] = {"input": list(messages)}
    if declaration.tools:
        sent["tools"] = declaration.tools
    return sent
