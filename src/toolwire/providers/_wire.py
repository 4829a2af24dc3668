"""What every provider's parser shares: reading responses that arrive as dicts or as the
official SDKs' objects, one call resolved against what was declared ([`resolve_call`][]: the
id as sent and unique per response, the name, the arguments, the error answer of a call not
run), JSON arguments decoded without surprises, and the limits that keep a stream accumulator
bounded."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Literal

from toolwire._json import NotJson, load_json
from toolwire._text import clean_description
from toolwire.calls import (
    DIRECT,
    Caller,
    CallIds,
    ErrorKind,
    RejectedCall,
    ToolCall,
    argument_problem,
    canonical_json,
    printable,
    stable_call_id,
)
from toolwire.errors import ConfigurationError, MalformedResponse, ToolwireWarning
from toolwire.providers._contract import Declaration, ProviderProfile
from toolwire.providers._registry import get_provider, provider_names
from toolwire.tool import Tool
from toolwire.toolset import ToolSet

_NO_EXTRAS: Mapping[str, Any] = MappingProxyType({})

__all__ = [
    "ChoiceMode",
    "ErrorAnswer",
    "NotJson",
    "StreamBudget",
    "StreamLimits",
    "arguments_problem_message",
    "as_data",
    "call_arguments",
    "call_ids",
    "carried_calls",
    "check_shape",
    "chosen_names",
    "described",
    "get_field",
    "item_types",
    "json_type",
    "listed",
    "load_json",
    "named_tools",
    "resolve_call",
    "selected_tools",
    "sent_id",
    "split_calls",
    "unknown_tool",
]


def as_data(value: Any) -> Any:
    """An SDK object (openai, anthropic, google-genai pydantic models) as its JSON dict;
    dicts, lists and anything else as they are.

    Raises:
        MalformedResponse: when the object cannot be dumped.
    """
    kind = value.__class__
    if kind is dict or kind is list:
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, Mapping):
        try:
            return dump(mode="json", by_alias=True, exclude_none=True)
        except Exception as exc:  # an SDK object built without validation, holding garbage
            raise MalformedResponse(
                f"a {type(value).__name__} could not be read ({type(exc).__name__})"
            ) from None
    return value


def get_field(data: Mapping[str, Any], camel: str, snake: str) -> Any:
    """``data[camel]``, or ``data[snake]`` (REST JSON or a snake_case dump), or None."""
    value = data.get(camel)
    return data.get(snake) if value is None else value


def listed(response: Any, key: str, what: str) -> list[Any]:
    """``response[key]`` as a list, where ``response`` is an object holding the list under
    ``key`` or the list itself (``what`` names it in the error).

    Raises:
        MalformedResponse: when there is no such list.
    """
    data = as_data(response)
    if isinstance(data, Mapping):
        data = data.get(key)
        if data is None:
            return []
    if not isinstance(data, list | tuple):
        raise MalformedResponse(f"expected {what}, not {type(response).__name__}")
    return list(data)


def named_tools(
    toolset: ToolSet, option: str, names: Iterable[str], declared: Sequence[str]
) -> frozenset[str]:
    """The declared tools among ``names`` (an option naming tools by exposed name).

    A name of a tool the toolset hides (a policy's deny, a filter) is let be, and so is a name
    no tool has (a server that is down, or a typo): the listing still works, and the second
    gets a [`ToolwireWarning`][toolwire.errors.ToolwireWarning] naming the declared tools.

    Raises:
        ConfigurationError: for a name that is not a string.
    """
    chosen = []
    for name in names:
        if not isinstance(name, str):
            raise ConfigurationError(f"{option} names tools by exposed name, not {name!r}")
        if not toolset.has_name(name):
            shown = ", ".join(declared[:_NAMES_LISTED]) or "(none)"
            warnings.warn(
                f"{option} names {printable(name[:100])!r}, which no tool has; declared: {shown}",
                ToolwireWarning,
                stacklevel=4,
            )
        chosen.append(name)
    return frozenset(chosen) & frozenset(declared)


ChoiceMode = Literal["auto", "required", "none"]
"""Whether the model may call a tool (``auto``), must (``required``) or may not (``none``)."""


def chosen_names(
    declaration: Any, allowed: Iterable[str] | None, mode: Any
) -> tuple[str, ...] | None:
    """The declared tools a tool choice narrows the turn to (exposed names, in declaration
    order; None: every one), ``mode`` checked.

    Raises:
        ConfigurationError: a mode that is none of ``auto``, ``required``, ``none``; names with
            ``none``; a name that is not a string or not declared; an empty list.
    """
    if mode not in ("auto", "required", "none"):
        raise ConfigurationError(f"a tool choice's mode is auto, required or none, not {mode!r}")
    if allowed is None:
        return None
    if isinstance(allowed, str):
        raise ConfigurationError("allowed is a list of exposed tool names, not one string")
    names = list(allowed)
    if mode == "none":
        raise ConfigurationError("mode none allows no tool: give no names")
    if not names:
        raise ConfigurationError("allowed names no tool: give None for every declared tool")
    declared = list(declaration.entries)
    for name in names:
        if not isinstance(name, str) or name not in declaration.entries:
            shown = ", ".join(declared[:_NAMES_LISTED]) or "(none)"
            raise ConfigurationError(
                f"allowed names {printable(str(name)[:100])!r}, which is not declared; "
                f"declared: {shown}"
            )
    wanted = set(names)
    return tuple(name for name in declared if name in wanted)


def described(tool: Tool) -> str:
    """The tool's description as an API without input examples of its own is sent it: cleaned,
    then the tool's example arguments, one JSON object a line."""
    text = clean_description(tool.description)
    if not tool.input_examples:
        return text
    shown = "\n".join(canonical_json(dict(example)) for example in tool.input_examples)
    return f"{text}\n\nExample arguments:\n{shown}".lstrip()


def selected_tools(
    toolset: ToolSet, option: str, declarations: Sequence[Mapping[str, Any]], selection: Any
) -> frozenset[str]:
    """The declared names an option naming tools selects: ``True`` (every one), ``False``
    (none) or exposed names (see [`named_tools`][]).

    Raises:
        ConfigurationError: for a selection of another kind.
    """
    if selection is False:
        return frozenset()
    declared = [d["name"] for d in declarations]
    if selection is True:
        return frozenset(declared)
    if not isinstance(selection, list | tuple):
        raise ConfigurationError(
            f"{option} takes True, False or a list of exposed tool names, "
            f"not {type(selection).__name__}"
        )
    return named_tools(toolset, option, selection, declared)


def caller_of(raw: Any, *, id_field: str, code: str) -> Caller | str:
    """Who made a call, by its ``caller`` (``{"type", id_field}``): the model (none given, or
    ``direct``), or the code of ``code`` (the provider's code execution, as declared); or why
    the call is refused (a caller of another shape, or of code that was not declared)."""
    raw = as_data(raw)
    if raw is None:
        return DIRECT
    kind = raw.get("type") if isinstance(raw, Mapping) else None
    if kind == "direct":
        return DIRECT
    made_by = raw.get(id_field) if isinstance(raw, Mapping) else None
    if kind.__class__ is not str or made_by.__class__ is not str or not made_by:
        return "Not run: the call names a caller of a shape the API does not send."
    if kind != code:
        return (
            f"Not run: the call comes from {printable(kind[:80])!r}, which no tool was declared "
            f"to be called from (code runs in {code!r})."
        )
    return Caller("code", kind, made_by)


def split_calls(items: list[ToolCall | RejectedCall]) -> tuple[list[ToolCall], list[Any]]:
    """The resolved calls, and the error answers of the rejected ones."""
    return (
        [item for item in items if isinstance(item, ToolCall)],
        [item.answer for item in items if isinstance(item, RejectedCall)],
    )


_NAMES_LISTED = 50
"""Tool names an unknown-tool answer lists, so the model can correct itself."""


def unknown_tool(names: Sequence[str], name: str) -> str:
    """What the model is told when it calls a name it was not shown (``names``)."""
    listed = ", ".join(names[:_NAMES_LISTED])
    return f"Unknown tool {printable(name)!r}. Available tools: {listed or '(none)'}."


def arguments_problem_message(name: str, problem: str) -> str:
    """What the model is told when a call's arguments are not JSON toolwire can carry, with
    ``problem`` from [`toolwire.calls.argument_problem`][] saying why."""
    return f"Invalid arguments for {printable(name)!r}: {problem}."


def carried_calls(
    entries: Sequence[Mapping[str, Any]],
    *,
    is_call: Callable[[Mapping[str, Any]], bool],
    answers: Mapping[str, str],
    parse_turn: Callable[[list[Mapping[str, Any]]], list[ToolCall | RejectedCall]],
) -> list[ToolCall | RejectedCall]:
    """The calls of a carried history that no answer after them settles, in order.

    A history holds a model turn's calls, then the answers sent back, then the next turn's
    calls, and so on. Each turn's calls (those up to the next answer) are parsed by
    ``parse_turn`` as that turn's response was on its own, so a call sent without an id gets
    the id its answer was sent with. An answer (an entry whose ``type`` is a key of
    ``answers``; its value names the field holding the call id) settles the earliest call
    before it with that id that nothing settled yet: one answer, one call. An answer before
    any such call (a previous turn's, echoed) settles nothing.
    """
    history = _Settled()
    turn: list[Mapping[str, Any]] = []
    for entry in entries:
        if is_call(entry):
            turn.append(entry)
            continue
        kind = entry.get("type")
        id_field = answers.get(kind) if kind.__class__ is str else None
        if id_field is None:
            continue  # the model's text or thoughts, or a step the API runs itself
        if turn:  # the answers begin: the turn before them is complete
            history.add(parse_turn(turn))
            turn = []
        history.settle(sent_id(entry.get(id_field)))
    if turn:
        history.add(parse_turn(turn))
    parsed = history.unsettled()
    if any(item.index != index for index, item in enumerate(parsed)):  # several turns' calls
        parsed = [replace(item, index=index) for index, item in enumerate(parsed)]
    return parsed


class _Settled:
    """The calls of a carried history so far, and those its answers settled.

    An answer settles the earliest unsettled call with its id. A call the model sent without
    an id was answered under an id made from its name, arguments and occurrence among the
    identical calls of its response; a history may split that response (each call followed
    by its answer), so an answer under such an id that no call has settles the earliest
    unsettled identical id-less call, whatever the occurrence.
    """

    __slots__ = ("_alike", "_generated", "_open", "_parsed", "_settled")

    def __init__(self) -> None:
        self._parsed: list[ToolCall | RejectedCall] = []
        self._open: dict[str | None, list[int]] = {}
        self._settled: set[int] = set()
        self._alike: dict[tuple[str, str], list[int]] = {}
        """The positions of identical id-less calls, by name and canonical arguments."""
        self._generated: dict[str, tuple[str, str]] | None = None
        """The ids such calls could have been answered under (made when first needed)."""

    def add(self, items: list[ToolCall | RejectedCall]) -> None:
        for item in items:
            position = len(self._parsed)
            self._parsed.append(item)
            self._open.setdefault(item.local_id, []).append(position)
            if item.call_id is None and isinstance(item, ToolCall):
                alike = (item.exposed_name, canonical_json(item.arguments))
                positions = self._alike.setdefault(alike, [])
                positions.append(position)
                if self._generated is not None:
                    self._generated[_made_id(alike, len(positions))] = alike

    def settle(self, answered: str | None) -> None:
        waiting = self._open.get(answered)
        if waiting:
            self._close(waiting[0])
            return
        if answered is None or not answered.startswith("tw_"):
            return
        if self._generated is None:
            self._generated = {
                _made_id(alike, occurrence): alike
                for alike, positions in self._alike.items()
                for occurrence in range(1, len(positions) + 1)
            }
        alike = self._generated.get(answered)
        still = [p for p in self._alike.get(alike, ()) if p not in self._settled] if alike else []
        if still:
            self._close(still[0])

    def _close(self, position: int) -> None:
        self._settled.add(position)
        self._open[self._parsed[position].local_id].remove(position)

    def unsettled(self) -> list[ToolCall | RejectedCall]:
        if not self._settled:
            return self._parsed
        return [item for position, item in enumerate(self._parsed) if position not in self._settled]


def _made_id(alike: tuple[str, str], occurrence: int) -> str:
    name, encoded = alike
    return stable_call_id(name, {}, occurrence, encoded=encoded)


ErrorAnswer = Callable[[str, str | None, str, str], Any]
"""A provider's answer to a call that is not run: ``(name, call_id, answer_id, message)``,
from the call's name and id as the model sent them (``""`` and None when it sent none), the
id the answer echoes (the sent one, or one made for the call) and the message for the
model."""


def call_ids(sent: Iterable[Any]) -> CallIds:
    """The [`CallIds`][toolwire.calls.CallIds] of one response, from the ids its calls were
    sent with, as sent (anything but a non-empty string counts as none)."""
    return CallIds(call_id for call_id in sent if call_id.__class__ is str and call_id)


def resolve_call(
    declaration: Declaration,
    profile: ProviderProfile,
    *,
    name: Any,
    call_id: Any,
    arguments: Any,
    index: int,
    ids: CallIds,
    error_answer: ErrorAnswer,
    extras: Mapping[str, Any] | None = None,
    coerce: Callable[[dict[str, Any], Tool], dict[str, Any]] | None = None,
    custom: bool = False,
    refused: tuple[ErrorKind, str] | None = None,
    caller: Caller = DIRECT,
) -> ToolCall | RejectedCall:
    """One call the model sent, resolved against what was declared, or rejected with the
    provider's error answer (``error_answer``, see [`ErrorAnswer`][]).

    What every provider does with a call, once it has read the call out of its own shape:

    - ``name`` and ``call_id`` are taken as sent: a name that is not a string counts as none,
      and an id that is not a non-empty string too (then the call gets a generated id, see
      [`CallIds`][toolwire.calls.CallIds]);
    - a call whose id an earlier call of the response has is refused (``ids``, made by
      [`call_ids`][] from every id of the response, keeps the first);
    - a call ``refused`` by the provider (a shape it does not run, a malformed call) is
      answered with that error kind and message;
    - the name must be one the model was shown (a namespace prefix the profile allows, such
      as Gemini's ``default_api.``, is dropped); a tool that was offered but is gone is
      ``unavailable``;
    - for a ``custom`` call (OpenAI's custom tools) ``arguments`` is the free text that
      becomes the custom tool's one argument; otherwise ``arguments`` may be an object, the
      JSON text of one, or absent (then ``{}``, unless the schema requires something), and
      ``coerce(arguments, tool)`` adjusts well-formed ones (Gemini's whole-number floats);
    - a call made by a ``caller`` the tool does not allow (code the model wrote, for a tool
      only the model may call) is refused, never run.
    """
    sent = name if name.__class__ is str else ""
    call_id = call_id if call_id.__class__ is str and call_id else None
    if call_id is not None and not ids.keep(call_id):
        refused = ("invalid_arguments", ids.duplicate(call_id))
    if refused is not None:
        kind, message = refused
        return _rejected(sent, sent, call_id, index, kind, message, ids, error_answer)
    entry = declaration.entry(sent)
    if entry is None and not custom:
        for separator in profile.namespace_separators:
            if separator in sent:
                entry = declaration.entry(sent.rsplit(separator, 1)[1])
                if entry is not None:
                    break
    if entry is None:
        gone = declaration.unavailable.get(sent)
        if gone is not None:
            message = f"Tool {printable(sent)!r} is unavailable: {gone}."
            return _rejected(sent, sent, call_id, index, "unavailable", message, ids, error_answer)
        message = unknown_tool(declaration.names, sent)
        if custom:
            message = "Not run: this custom tool call names no declared tool. " + message
        return _rejected(sent, sent, call_id, index, "not_found", message, ids, error_answer)
    exposed, tool = entry.name, entry.tool
    if caller.kind not in tool.callers:
        message = (
            f"Not run: {printable(exposed)!r} cannot be called from code; call it directly."
            if caller.kind == "code"
            else f"Not run: {printable(exposed)!r} is called only from code."
        )
        return _rejected(exposed, sent, call_id, index, "denied", message, ids, error_answer)
    if custom:
        made = _custom_call(
            exposed, tool, sent, call_id, arguments, index, ids, error_answer, extras
        )
        return replace(made, caller=caller) if isinstance(made, ToolCall) else made
    loaded = call_arguments(arguments, exposed, tool)
    if loaded.__class__ is str:
        return _rejected(
            exposed, sent, call_id, index, "invalid_arguments", loaded, ids, error_answer
        )
    assert isinstance(loaded, dict)
    if coerce is not None:
        loaded = coerce(loaded, tool)
    return ToolCall(
        exposed_name=exposed,
        tool=tool,
        arguments=loaded,
        call_id=call_id,
        local_id=call_id if call_id is not None else ids.make(exposed, loaded),
        index=index,
        extras=extras if extras is not None else _NO_EXTRAS,
        null_paths=entry.null_paths,
        caller=caller,
    )


def _custom_call(
    exposed: str,
    tool: Tool,
    sent: str,
    call_id: str | None,
    text: Any,
    index: int,
    ids: CallIds,
    error_answer: ErrorAnswer,
    extras: Mapping[str, Any] | None,
) -> ToolCall | RejectedCall:
    """A call to the custom tool ``tool`` (its free text ``text`` as its one argument, the
    grammar checked with the arguments), or rejected when ``tool`` is a function tool or the
    text is not text."""
    argument = tool.text_argument
    if argument is None:
        message = (
            f"Not run: {printable(exposed)!r} is a function tool; call it as a function, "
            "with JSON arguments, not as a custom tool with free-form input."
        )
        return _rejected(
            exposed, sent, call_id, index, "invalid_arguments", message, ids, error_answer
        )
    if not isinstance(text, str):
        message = f"Malformed custom tool call: its input is {json_type(text)}, not text."
        return _rejected(
            exposed, sent, call_id, index, "invalid_arguments", message, ids, error_answer
        )
    arguments = {argument: text}
    return ToolCall(
        exposed_name=exposed,
        tool=tool,
        arguments=arguments,
        call_id=call_id,
        local_id=call_id if call_id is not None else ids.make(exposed, arguments),
        index=index,
        extras=extras if extras is not None else {},
    )


def _rejected(
    shown: str,
    sent: str,
    call_id: str | None,
    index: int,
    kind: ErrorKind,
    message: str,
    ids: CallIds,
    error_answer: ErrorAnswer,
) -> RejectedCall:
    """A call answered with an error, never run: named ``shown`` (the exposed name once it
    resolved, else the name ``sent``), its answer echoing its id (one made by ``ids`` when it
    has none)."""
    answer_id = call_id if call_id is not None else ids.make(shown)
    return RejectedCall(
        name=shown,
        call_id=call_id,
        local_id=answer_id,
        index=index,
        error_kind=kind,
        message=message,
        answer=error_answer(sent, call_id, answer_id, message),
    )


_RAW_ECHO = 300
"""Characters of malformed arguments echoed back to the model."""


def call_arguments(raw: Any, name: str, tool: Tool) -> dict[str, Any] | str:
    """A call's arguments as a dict, or the error message for the model.

    ``raw`` is an object (Gemini, Anthropic, some OpenAI-compatible hosts), the JSON text of
    one (OpenAI), or None. Text that is not JSON (``NaN`` and ``Infinity`` included), JSON
    that is not an object, and objects toolwire cannot carry (see
    [`toolwire.calls.argument_problem`][]) are refused.
    """
    if raw.__class__ is dict or isinstance(raw, Mapping):
        arguments: Any = raw
    elif raw is None or (isinstance(raw, str) and not raw.strip()):
        if _requires_something(tool):
            return f"Invalid arguments for {printable(name)!r}: no arguments were sent."
        return {}
    elif not isinstance(raw, str):
        shown = printable(name)
        return f"Invalid arguments for {shown!r}: expected a JSON object, got {json_type(raw)}."
    else:
        arguments = load_json(raw)
        if isinstance(arguments, NotJson):
            echo = raw if len(raw) <= _RAW_ECHO else raw[:_RAW_ECHO] + "..."
            return f"Invalid arguments for {printable(name)!r}: {arguments.why}: {printable(echo)}"
    if arguments.__class__ is not dict and not isinstance(arguments, Mapping):
        return (
            f"Invalid arguments for {printable(name)!r}: expected a JSON object, got "
            f"{json_type(arguments)}."
        )
    problem = argument_problem(arguments)
    if problem is not None:
        return arguments_problem_message(name, problem)
    return dict(arguments)  # the call's own: the response is never changed through it


def json_type(value: Any) -> str:
    """How JSON names the type of ``value`` (what the model sent), e.g. ``an array``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return f"a {type(value).__name__}"


def _requires_something(tool: Tool) -> bool:
    schema = tool.input_schema
    required = schema.get("required") if isinstance(schema, Mapping) else None
    return bool(required)


def sent_id(value: Any) -> str | None:
    """A provider's call id as sent: a non-empty string, or None."""
    return value if value.__class__ is str and value else None


# -- streams ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StreamLimits:
    """How large one streamed response may grow; the defaults are far above any real one."""

    max_parts: int = 100_000
    """Parts, content blocks, tool calls or output items a response may have; an index that
    names one (a block, tool call or output index) must be below it."""
    max_chars: int = 32_000_000
    """Characters of text, thinking, signatures, names and arguments the stream's pieces may
    add up to."""


class StreamBudget:
    """Counts what a stream accumulator keeps against its [`StreamLimits`][].

    Every check raises [`MalformedResponse`][] with a message naming the stream (``what``),
    the field and the limit.
    """

    __slots__ = ("_chars", "_parts", "limits", "what")

    def __init__(self, what: str, limits: StreamLimits | None = None) -> None:
        self.what = what
        self.limits = limits if limits is not None else StreamLimits()
        self._chars = 0
        self._parts = 0

    def text(self, value: Any, field: str) -> str:
        """``value``, a string, counted toward ``max_chars``."""
        if value.__class__ is not str and not isinstance(value, str):
            raise MalformedResponse(
                f"{self.what}: {field} is not a string ({type(value).__name__})"
            )
        self._chars += len(value)
        if self._chars > self.limits.max_chars:
            raise MalformedResponse(
                f"{self.what}: more than {self.limits.max_chars} characters of text and "
                "arguments; no real response is that long"
            )
        return str(value)

    def part(self) -> None:
        """Count one more part (block, call, item) toward ``max_parts``."""
        self._parts += 1
        if self._parts > self.limits.max_parts:
            raise MalformedResponse(
                f"{self.what}: more than {self.limits.max_parts} parts; no real response has "
                "that many"
            )

    def index(self, value: Any, field: str) -> int:
        """``value`` as an index: an integer from 0 to ``max_parts - 1``."""
        if value.__class__ is not int:
            raise MalformedResponse(
                f"{self.what}: {field} is not an integer ({type(value).__name__})"
            )
        if not 0 <= value < self.limits.max_parts:
            raise MalformedResponse(
                f"{self.what}: {field} {value} is out of range (0 to {self.limits.max_parts - 1})"
            )
        return int(value)


# -- shapes ----------------------------------------------------------------------------------------


def check_shape(provider: str, data: Any, recognizes: Callable[[Any], bool]) -> None:
    """Nothing when ``data`` has ``provider``'s shape or no registered provider's; otherwise
    the response was given to the wrong parser, which would find no calls in it and end the
    loop as if the model were done.

    Raises:
        MalformedResponse: naming the provider the response looks like.
    """
    if recognizes(data):
        return
    for other in provider_names():
        if other != provider and get_provider(other).recognizes(data):
            mine, theirs = get_provider(provider).PROFILE.label, get_provider(other).PROFILE.label
            raise MalformedResponse(
                f"this is not a {mine} response: it looks like {theirs} ({other!r}); parse it "
                "with the provider it came from"
            )


def item_types(data: Sequence[Any]) -> set[str]:
    """The string ``type`` of each object in a list (at most the first 16)."""
    kinds = set()
    for item in data[:16]:
        item = as_data(item)
        if isinstance(item, Mapping):
            kind = item.get("type")
            if kind.__class__ is str:
                kinds.add(kind)
    return kinds
