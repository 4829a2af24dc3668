"""OpenAI Chat Completions tool calling, as pure functions over dicts.

Tools are ``{"type": "function", "function": {name, description, parameters, strict}}``;
``strict`` is always sent, true where the schema could be made strict. Calls come from
``choices[0].message.tool_calls`` with ``arguments`` as a JSON string; answers are
``{"role": "tool", "tool_call_id", "content"}`` messages, one per call, right after the
assistant message.

Custom tools (``Tool(kind="custom")``) are declared as ``{"type": "custom", "custom": {name,
description, format}}``; the model calls one with a ``{"type": "custom", "custom": {name,
input}}`` tool call holding free text, answered by the usual tool message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolwire.calls import CallIds, ErrorKind, RejectedCall, ToolCall, ToolResult
from toolwire.errors import MalformedResponse
from toolwire.providers import _openai
from toolwire.providers._contract import (
    Declaration,
    ProviderProfile,
    Stopped,
    Verdict,
)
from toolwire.providers._openai import OpenAIOptions as Options
from toolwire.providers._wire import (
    ChoiceMode,
    ErrorAnswer,
    StreamBudget,
    StreamLimits,
    as_data,
    call_ids,
    check_shape,
    chosen_names,
    json_type,
    resolve_call,
    sent_id,
)
from toolwire.tool import Tool
from toolwire.toolset import ToolSet

__all__ = [
    "NAME",
    "PROFILE",
    "Accumulator",
    "ChatStreamAccumulator",
    "Options",
    "answer",
    "assess",
    "custom_tool_call",
    "declare",
    "followup",
    "parse",
    "recognizes",
    "request",
    "response_for",
    "stopped",
    "text",
    "tool_choice",
    "tool_message",
]

NAME = "openai-chat"
ERROR_PREFIX = _openai.ERROR_PREFIX
PROFILE = ProviderProfile(
    label="OpenAI Chat Completions",
    name_pattern=_openai.NAME_PATTERN,
    image_types=frozenset(),  # a tool message carries text only
    error_prefix=ERROR_PREFIX,
    declared_options=frozenset({"strict"}),
    max_tools=_openai.MAX_TOOLS,
    schema_rules="JSON Schema with an object root; strict mode's subset where strict",
    option_sets=({}, {"strict": False}),
    api_key_env=("OPENAI_API_KEY",),
    default_model="gpt-4.1-mini",
)
_DEFAULT = Options()


def _entry(d: _openai.Declared) -> dict[str, Any]:
    if d.custom:
        grammar = d.format
        # Chat nests the grammar one level deeper than Responses does.
        form: dict[str, Any] = (
            {
                "type": "grammar",
                "grammar": {"syntax": grammar["syntax"], "definition": grammar["definition"]},
            }
            if grammar is not None
            else {"type": "text"}
        )
        custom = {"name": d.name, "description": d.description, "format": form}
        return {"type": "custom", "custom": custom}
    return {
        "type": "function",
        "function": {
            "name": d.name,
            "description": d.description,
            "parameters": d.parameters,
            "strict": d.strict,
        },
    }


def declare(toolset: ToolSet, options: Options | None = None) -> Declaration:
    """The toolset's ``tools`` (None when empty), strict where each schema can be; cached on
    the toolset.

    Raises:
        SchemaConversionError: naming the tool whose schema cannot be declared.
    """
    return _openai.declaration(toolset, NAME, options or _DEFAULT, _entry)


def assess(tool: Tool, options: Options | None = None) -> Verdict:
    """How Chat Completions takes ``tool``, checked against its documented schema rules."""
    return _openai.assess(NAME, tool, options or _DEFAULT)


def recognizes(response: Any) -> bool:
    """True for a chat completion, or an assistant message of one."""
    data = as_data(response)
    if not isinstance(data, Mapping):
        return False
    if "choices" in data or data.get("object") in ("chat.completion", "chat.completion.chunk"):
        return True
    if _is_choice(data):
        return True
    content = data.get("content")
    return data.get("role") == "assistant" and (
        "tool_calls" in data
        or "function_call" in data
        or content is None
        or isinstance(content, str)
    )


def _is_choice(data: Mapping[str, Any]) -> bool:
    """True for one choice of a completion (its message holding the calls), not a message."""
    if "role" in data or "tool_calls" in data:
        return False
    message = as_data(data.get("message"))
    return isinstance(message, Mapping) and message.get("role") == "assistant"


def _message(response: Any) -> Mapping[str, Any]:
    data = as_data(response)
    check_shape(NAME, data, recognizes)
    if isinstance(data, Mapping) and "choices" in data:
        choices = data.get("choices") or []
        if not isinstance(choices, list | tuple):
            raise MalformedResponse("choices is not a list")
        if not choices:
            return {}
        choice = as_data(choices[0])
        if not isinstance(choice, Mapping):
            raise MalformedResponse("choices[0] is not an object")
        data = as_data(choice.get("message") or {})
    elif isinstance(data, Mapping) and _is_choice(data):
        data = as_data(data["message"])
    if not isinstance(data, Mapping):
        raise MalformedResponse(
            f"expected a chat completion or an assistant message, not {type(response).__name__}"
        )
    return data


def tool_message(call_id: str, content: str) -> dict[str, Any]:
    """A ``role: tool`` message answering ``call_id``."""
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def _error_message(prefix: str) -> ErrorAnswer:
    """The error answer of a call not run, its text starting with ``prefix``."""
    return lambda name, call_id, answer_id, message: tool_message(answer_id, prefix + message)


def parse(response: Any, declaration: Declaration) -> list[ToolCall | RejectedCall]:
    """Every tool call of a chat completion (or of its assistant message), in order.

    Every entry of ``tool_calls`` is a call and gets exactly one item: a function call to a
    declared tool that resolves is a [`ToolCall`][], and so is a ``custom`` call to a
    declared custom tool (its ``input`` text as the tool's one argument); anything else (an
    unknown name, arguments that are not a JSON object, a ``custom`` call to a function tool,
    an entry that is not a call object, an id an earlier call already has) is a
    [`RejectedCall`][] answering its ``tool_call_id``. The entry's ``type`` decides: some
    compatible hosts send an empty ``custom`` object beside a function call.

    Raises:
        MalformedResponse: when the completion is not shaped as Chat sends it (naming the
            provider it looks like, when it is another's).
    """
    raw_calls = _message(response).get("tool_calls")
    if raw_calls is None:
        return []
    if not isinstance(raw_calls, list | tuple):
        raise MalformedResponse("message.tool_calls is not a list")
    entries = [as_data(raw) for raw in raw_calls]
    ids = call_ids(entry.get("id") for entry in entries if isinstance(entry, Mapping))
    error = _error_message(getattr(declaration.options, "error_prefix", ERROR_PREFIX))
    return [
        _parse_entry(entry, index, ids, declaration, error) for index, entry in enumerate(entries)
    ]


def _parse_entry(
    entry: Any, index: int, ids: CallIds, declaration: Declaration, error: ErrorAnswer
) -> ToolCall | RejectedCall:
    if not isinstance(entry, Mapping):
        message = f"Malformed tool call: expected an object, got {json_type(entry)}."
        return resolve_call(
            declaration,
            PROFILE,
            name=None,
            call_id=None,
            arguments=None,
            index=index,
            ids=ids,
            error_answer=error,
            refused=("invalid_arguments", message),
        )
    # The type decides: some compatible hosts send an empty "custom" beside a function call.
    custom = entry.get("type") == "custom"
    body = as_data(entry.get("custom" if custom else "function"))
    refused: tuple[ErrorKind, str] | None = None
    if not isinstance(body, Mapping):
        body = {}
        if not custom:  # a custom call without a body names no tool: answered as such
            refused = ("invalid_arguments", "Malformed tool call: no function.")
    return resolve_call(
        declaration,
        PROFILE,
        name=body.get("name"),
        call_id=entry.get("id"),
        arguments=body.get("input" if custom else "arguments"),
        index=index,
        ids=ids,
        error_answer=error,
        custom=custom,
        refused=refused,
    )


def answer(call: ToolCall, result: ToolResult, options: Options | None = None) -> dict[str, Any]:
    """The ``role: tool`` message for ``call`` (media become placeholders: Chat tool messages
    carry text only)."""
    prefix = (options or _DEFAULT).error_prefix
    return tool_message(call.call_id or call.local_id, _openai.output_text(result, prefix))


_INPUT_FIELDS = ("role", "content", "refusal", "name", "tool_calls", "function_call")
"""What an assistant message may carry when it is sent back (not ``annotations``)."""


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
    tools = []
    for name in names:
        kind = "custom" if declaration.toolset[name].kind == "custom" else "function"
        tools.append({"type": kind, kind: {"name": name}})
    return {"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": tools}}


def followup(response: Any, answers: Sequence[Any], ids: Sequence[str | None] = ()) -> list[Any]:
    """The assistant message, then the ``tool`` messages: what to append to ``messages``.
    A tool call sent without an id gets the one its answer carries (``ids``, in order)."""
    message = _message(response)
    sent = {key: message[key] for key in _INPUT_FIELDS if message.get(key) is not None}
    calls = sent.get("tool_calls")
    if isinstance(calls, list | tuple):
        given = iter(ids)
        filled = []
        for call in map(as_data, calls):
            answer_id = next(given, None)
            if isinstance(call, Mapping) and sent_id(call.get("id")) is None and answer_id:
                call = {**call, "id": answer_id}
            filled.append(call)
        sent["tool_calls"] = filled
    sent["role"] = "assistant"
    sent.setdefault("content", None)
    audio = as_data(message.get("audio"))
    if isinstance(audio, Mapping) and isinstance(audio.get("id"), str):
        sent["audio"] = {"id": audio["id"]}
    return [sent, *answers]


def response_for(
    calls: Sequence[tuple[str, str, Mapping[str, Any] | str]], text: str | None = None
) -> dict[str, Any]:
    """A chat completion holding ``calls`` ((id, name, arguments)) and ``text``; a call whose
    arguments are a string is a ``custom`` tool call with that input."""
    import json

    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            custom_tool_call(call_id, name, args)
            if isinstance(args, str)
            else {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(dict(args))},
            }
            for call_id, name, args in calls
        ]
    reason = "tool_calls" if calls else "stop"
    return {"choices": [{"index": 0, "message": message, "finish_reason": reason}]}


def custom_tool_call(call_id: str, name: str, text: str) -> dict[str, Any]:
    """A ``tool_calls`` entry: the model calling custom tool ``name`` with ``text``."""
    return {"id": call_id, "type": "custom", "custom": {"name": name, "input": text}}


def text(response: Any) -> str:
    """The assistant message's text."""
    content = _message(response).get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in map(as_data, content)
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        )
    return ""


class _StreamedCall:
    """One tool call being streamed: its pieces are joined when the message is built."""

    __slots__ = ("arguments", "call_id", "kind", "name", "whole_arguments")

    def __init__(self, call_id: str | None) -> None:
        self.call_id = call_id
        self.kind = "function"
        self.name: list[str] = []
        self.arguments: list[str] = []
        self.whole_arguments: dict[str, Any] | None = None  # an object, from some servers

    def as_entry(self) -> dict[str, Any]:
        name = "".join(self.name)
        if self.kind == "custom":
            body: dict[str, Any] = {"name": name, "input": "".join(self.arguments)}
            return {"id": self.call_id, "type": "custom", "custom": body}
        arguments: Any = (
            dict(self.whole_arguments)
            if self.whole_arguments is not None
            else "".join(self.arguments)
        )
        return {
            "id": self.call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }


class ChatStreamAccumulator:
    """Turns chat completion chunks into the assistant message they add up to.

    Tool call deltas are joined by ``index``; a delta carrying a new ``id`` at an index that
    already has one starts a new call (some compatible servers never increment the index), and
    a delta without an index continues the last call unless it brings an id.

    Bounded: at most ``limits.max_parts`` tool calls (100,000 by default), indices below that,
    and ``limits.max_chars`` characters (32 million) of text, names and arguments in all.
    A chunk that is not shaped as Chat streams them, or a stream past a limit, raises
    [`MalformedResponse`][toolwire.errors.MalformedResponse]; choices other than the first are
    ignored.

    Args:
        limits: the bounds (the defaults are far above any real stream).
    """

    def __init__(self, *, limits: StreamLimits | None = None) -> None:
        self._budget = StreamBudget("chat completion stream", limits)
        self._content: list[str] = []
        self._calls: list[_StreamedCall] = []
        self._by_index: dict[int, _StreamedCall] = {}
        self.finish_reason: str | None = None
        self.usage: Any = None

    @property
    def content(self) -> str:
        """The text so far."""
        return "".join(self._content)

    @property
    def calls(self) -> list[dict[str, Any]]:
        """The tool calls so far, as ``tool_calls`` entries."""
        return [call.as_entry() for call in self._calls]

    def add(self, chunk: Any) -> None:
        """Add one chunk (a dict or the SDK's ``ChatCompletionChunk``).

        Raises:
            MalformedResponse: for a chunk not shaped as Chat streams them, or past a limit.
        """
        data = as_data(chunk)
        if not isinstance(data, Mapping):
            raise MalformedResponse(f"a chunk must be an object, not {type(chunk).__name__}")
        if data.get("usage"):
            self.usage = data["usage"]
        choices = data.get("choices")
        if choices is None:
            return
        if not isinstance(choices, list | tuple):
            raise MalformedResponse("a chunk's choices is not a list")
        for raw_choice in choices:
            choice = as_data(raw_choice)
            if not isinstance(choice, Mapping):
                raise MalformedResponse("a chunk's choice is not an object")
            if choice.get("index", 0) != 0:
                continue  # another of n choices: not the message being assembled
            self._add_choice(choice)

    def _add_choice(self, choice: Mapping[str, Any]) -> None:
        finish_reason = choice.get("finish_reason")
        if isinstance(finish_reason, str) and finish_reason:
            self.finish_reason = finish_reason
        delta = as_data(choice.get("delta"))
        if delta is None:
            return
        if not isinstance(delta, Mapping):
            raise MalformedResponse("a choice's delta is not an object")
        content = delta.get("content")
        if content is not None:
            self._content.append(self._budget.text(content, "delta.content"))
        pieces = delta.get("tool_calls")
        if pieces is None:
            return
        if not isinstance(pieces, list | tuple):
            raise MalformedResponse("delta.tool_calls is not a list")
        for piece in pieces:
            piece = as_data(piece)
            if not isinstance(piece, Mapping):
                raise MalformedResponse("a tool call delta is not an object")
            self._add_call_delta(piece)

    def _add_call_delta(self, piece: Mapping[str, Any]) -> None:
        raw_index = piece.get("index")
        index = None if raw_index is None else self._budget.index(raw_index, "tool call index")
        call_id = piece.get("id")
        if call_id is not None and not isinstance(call_id, str):
            raise MalformedResponse("a tool call delta's id is not a string")
        call_id = call_id or None
        current = (
            self._by_index.get(index)
            if index is not None
            else (self._calls[-1] if self._calls else None)
        )
        if current is None or (call_id and current.call_id and call_id != current.call_id):
            self._budget.part()
            current = _StreamedCall(call_id)
            self._calls.append(current)
            if index is not None:
                self._by_index[index] = current
        elif call_id and not current.call_id:
            current.call_id = call_id
        if piece.get("type") == "custom":
            current.kind = "custom"
        function = as_data(piece.get("custom" if current.kind == "custom" else "function"))
        if function is None:
            return
        if not isinstance(function, Mapping):
            raise MalformedResponse("a tool call delta's function is not an object")
        name = function.get("name")
        if name:
            current.name.append(self._budget.text(name, "function.name"))
        arguments = function.get("input" if current.kind == "custom" else "arguments")
        if isinstance(arguments, Mapping):
            current.whole_arguments = dict(arguments)
        elif arguments is not None:
            current.arguments.append(self._budget.text(arguments, "function.arguments"))

    def message(self) -> dict[str, Any]:
        """The assistant message so far (``tool_calls`` only when there are calls)."""
        content = self.content
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        if self._calls:
            message["tool_calls"] = self.calls
        return message

    def response(self) -> dict[str, Any]:
        """A chat-completion-shaped response holding [`message`][]."""
        response: dict[str, Any] = {
            "choices": [
                {"index": 0, "message": self.message(), "finish_reason": self.finish_reason}
            ]
        }
        if self.usage is not None:
            response["usage"] = self.usage
        return response


Accumulator = ChatStreamAccumulator


def stopped(response: Any) -> Stopped | None:
    """A message whose ``refusal`` says the model refused, a choice the content filter
    stopped (``finish_reason: "content_filter"``) with nothing to show, or a message with
    neither content nor calls; None otherwise."""
    data = as_data(response)
    if not isinstance(data, Mapping) or not data.get("choices"):
        return None
    choice = as_data(data["choices"][0])
    if not isinstance(choice, Mapping):
        return None
    message = as_data(choice.get("message") or {})
    if not isinstance(message, Mapping):
        return None
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        return Stopped("refused", "refusal", refusal)
    if message.get("content") or message.get("tool_calls") or message.get("function_call"):
        return None
    finish = choice.get("finish_reason")
    if finish == "content_filter":
        return Stopped("blocked", "content_filter")
    return Stopped("empty", str(finish or "no content"))


def request(
    declaration: Declaration, messages: Sequence[Any], previous: Any = None
) -> dict[str, Any]:
    """The keyword arguments of ``chat.completions.create`` sending ``messages`` with the
    declared tools."""
    del previous  # the whole conversation goes each time
    sent: dict[str, Any] = {"messages": list(messages)}
    if declaration.tools:
        sent["tools"] = declaration.tools
    return sent
