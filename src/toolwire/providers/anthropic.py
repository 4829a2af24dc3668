"""Anthropic Messages tool calling, as pure functions over dicts.

Tools are ``{name, description, input_schema}`` (the original schema: Anthropic takes JSON
Schema and optional properties as they are). Calls are ``tool_use`` content blocks; answers are
``tool_result`` blocks, all of a turn in one user message, before any text. toolwire never
builds a forced ``tool_choice``: current models reject it with extended thinking.

With ``strict=True`` (strict tool use), each tool whose schema can be made strict is sent with
``"strict": true`` and its schema made to fit (see
[`toolwire.schema.anthropic.to_anthropic_strict_schema`][]); the others are sent as without it,
and the declaration's ``not_strict`` says why. The strict tools of one request share a budget
(20 tools, 24 optional and 16 union-typed parameters): tools are made strict in toolset order
while it lasts, each with its optional arguments left optional or, when the optional budget is
spent, made nullable (a null there is stripped before the call, as for OpenAI's strict mode).
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from toolwire._text import clean_description
from toolwire.calls import (
    DIRECT,
    Caller,
    ImageContent,
    RejectedCall,
    TextContent,
    ToolCall,
    ToolResult,
    canonical_json,
    placeholder,
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
from toolwire.providers._wire import (
    ChoiceMode,
    NotJson,
    StreamBudget,
    StreamLimits,
    as_data,
    call_ids,
    caller_of,
    check_shape,
    chosen_names,
    item_types,
    listed,
    load_json,
    resolve_call,
    selected_tools,
    sent_id,
)
from toolwire.schema.anthropic import (
    STRICT_BUDGET,
    StrictBudget,
    StrictForm,
    to_anthropic_schema,
    to_anthropic_strict_schema,
)
from toolwire.schema.checks import anthropic_violations
from toolwire.schema.openai import NullPath, StrictSchemaError
from toolwire.search import SEARCH_TOOL_NAME, found_tools, search_tool
from toolwire.tool import Tool, compile_validator
from toolwire.toolset import ToolSet

__all__ = [
    "NAME",
    "PROFILE",
    "Accumulator",
    "AnthropicOptions",
    "AnthropicStreamAccumulator",
    "CodeExecution",
    "Options",
    "ToolSearch",
    "answer",
    "assess",
    "container_id",
    "declare",
    "followup",
    "parse",
    "recognizes",
    "request",
    "response_for",
    "stopped",
    "text",
    "tool_choice",
    "tool_result",
]

NAME = "anthropic"
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
IMAGE_LIMIT = 5 * 1024 * 1024
"""Characters of base64 one image may have: the Messages API refuses a longer one ("image
exceeds 5 MB maximum"), failing the whole request."""
PROFILE = ProviderProfile(
    label="Anthropic Messages",
    name_pattern=r"[a-zA-Z0-9_-]{1,128}",
    image_types=_IMAGE_TYPES,
    error_prefix=None,  # tool_result blocks have is_error
    declared_options=frozenset(
        {"cache_control", "eager_input_streaming", "strict", "tool_search", "code_execution"}
    ),
    max_tools=None,
    schema_rules=(
        "JSON Schema draft 2020-12 with an object root; no anyOf, oneOf or allOf at the top; "
        "strict tool use's subset where strict"
    ),
    option_sets=({}, {"strict": True}),
    input_examples=True,
    api_key_env=("ANTHROPIC_API_KEY",),
    default_model="claude-sonnet-4-5",
    tool_search=True,
    code_callers=True,
)

ToolSearch = Literal["bm25", "regex", "local"]
"""The search a listing with deferred tools declares: the API's BM25 or regex search, or
toolwire's own (``local``: an ordinary tool, answered with ``tool_reference`` blocks)."""
_SEARCH_TOOLS = {
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
}
CodeExecution = Literal[
    "code_execution_20250825", "code_execution_20260120", "code_execution_20260521"
]
"""The code-execution tool whose code may call tools (``allowed_callers``)."""


@dataclass(frozen=True, slots=True)
class AnthropicOptions:
    """Options of the Messages API."""

    cache_control: Literal["last"] | None = field(
        default=None, metadata={"help": "mark the last tool so the tool list is cached"}
    )
    """``"last"`` marks the last tool ``cache_control: ephemeral``, which caches the whole
    tool list as a prompt prefix."""
    strict: bool = field(
        default=False, metadata={"help": "declare strict schemas where they can be made strict"}
    )
    """Declare each tool ``strict: true`` (strict tool use) where its schema can be made
    strict and the request's budget for strict schemas lasts; the others are sent without
    ``strict``."""
    eager_input_streaming: bool | tuple[str, ...] = field(
        default=False, metadata={"help": "stream these tools' arguments as the model writes them"}
    )
    """The tools declared ``eager_input_streaming: true``, as exposed names, or True for
    every tool: a stream carries their arguments as the model writes them, not buffered until
    they are whole JSON (fine-grained tool streaming: sooner, for long arguments). Arguments
    that end up invalid are answered as any invalid arguments, and the call does not run."""

    tool_search: ToolSearch = field(
        default="bm25", metadata={"help": "the search that finds deferred tools"}
    )
    """How the model finds deferred tools (``Tool.deferred``, a toolset's ``deferred``
    patterns): the API's ``bm25`` or ``regex`` tool search, or ``local``, toolwire's own
    search tool (see [`toolwire.search`][]). Declared only when some tool is deferred."""
    code_execution: CodeExecution = field(
        default="code_execution_20260120",
        metadata={"help": "the code-execution tool whose code may call tools"},
    )
    """The code-execution tool declared when some tool may be called from code
    (``Tool.callers``), and named in those tools' ``allowed_callers``."""

    def __post_init__(self) -> None:
        given: Any = self.eager_input_streaming
        if isinstance(given, list):  # a list from keyword options: kept hashable
            object.__setattr__(self, "eager_input_streaming", tuple(given))


Options = AnthropicOptions
_DEFAULT = Options()


def _sendable(part: Any) -> bool:
    return (
        isinstance(part, ImageContent)
        and part.mime_type in _IMAGE_TYPES
        and 4 * ((len(part.data) + 2) // 3) <= IMAGE_LIMIT
    )


def _as_text(part: Any) -> str:
    """A part the answer cannot carry as itself, as text."""
    if isinstance(part, ImageContent) and part.mime_type in _IMAGE_TYPES:
        return f"{placeholder(part)} (not sent: over the API's limit for one image)"
    return placeholder(part)


def _lowered(tool: Tool) -> tuple[dict[str, Any], list[Any]]:
    """The schema as Anthropic takes it, and what lowering it changed (see
    [`toolwire.schema.anthropic.to_anthropic_schema`][])."""
    try:
        return to_anthropic_schema(tool.declared_schema)
    except SchemaConversionError as exc:
        raise exc.for_tool(tool.qualified_name) from None


@dataclass(frozen=True, slots=True)
class _Declared:
    """One tool as the Messages API is sent it."""

    entry: dict[str, Any]
    """The request's tool: name, description, input_schema and, when strict, ``strict``."""
    strict: bool
    null_paths: tuple[NullPath, ...]
    not_strict_because: str | None
    """Why it is sent without ``strict`` in a strict declaration (else None)."""

    @property
    def name(self) -> str:
        """The exposed name."""
        name: str = self.entry["name"]
        return name


def _strict_form(
    schema: dict[str, Any], left: StrictBudget
) -> tuple[StrictForm | None, str | None]:
    """``schema`` (lowered) as strict tool use takes it within what is ``left`` of the
    request's budget, or None and why not: its optional arguments left optional or, when only
    that fits, made required and nullable (spending union-typed parameters instead)."""
    try:
        form = to_anthropic_strict_schema(schema)
    except StrictSchemaError as exc:
        return None, f"{exc.path}: {exc.reason}"
    if left.tools < 1:
        return (
            None,
            f"the request has {STRICT_BUDGET.tools} strict tools already, the most it takes",
        )
    if left.fits(form.cost):
        return form, None
    nullable = form
    if form.cost.optional:
        # Not expected to raise (nullable changes no rule the walk applies); if it does, the
        # tool is still sent, without strict.
        with contextlib.suppress(StrictSchemaError):
            nullable = to_anthropic_strict_schema(schema, nullable=True)
        if left.fits(nullable.cost):
            return nullable, None
    needs = f"{form.cost.optional} optional and {form.cost.unions} union-typed parameters"
    if nullable is not form:
        needs += f" (or {nullable.cost.unions} union-typed, its optional ones made nullable)"
    return None, (
        f"past the request's budget for strict schemas: it needs {needs}, and "
        f"{left.optional} of {STRICT_BUDGET.optional} optional and {left.unions} of "
        f"{STRICT_BUDGET.unions} union-typed are left"
    )


def _strict_examples(entry: dict[str, Any], form: StrictForm) -> None:
    """A strict tool's examples as its strict schema takes them: an optional argument it made
    required and nullable is given as null where an example leaves it out. An example that
    still does not fit is not sent (examples only guide the model)."""
    validator = compile_validator(form.schema)
    made_nullable = [path[0] for path in form.null_paths if len(path) == 1]
    kept = []
    for example in entry["input_examples"]:
        filled = {**dict.fromkeys(made_nullable), **example}
        if not isinstance(validator, str) and validator.is_valid(filled):
            kept.append(filled)
    if kept:
        entry["input_examples"] = kept
    else:
        del entry["input_examples"]


def _declared(toolset: ToolSet, strict: bool) -> list[_Declared]:
    """The toolset's tools for the Messages API, in order, strict where they can be while the
    request's budget lasts; cached per toolset.

    Raises:
        SchemaConversionError: naming the tool whose schema cannot be declared.
    """

    def build() -> list[_Declared]:
        left = STRICT_BUDGET
        declared = []
        for tool in toolset:
            if tool.providers is not None and NAME not in tool.providers:
                continue
            schema = _lowered(tool)[0]
            entry: dict[str, Any] = {
                "name": toolset.exposed_name(tool),
                "description": clean_description(tool.description),
                "input_schema": schema,
            }
            if tool.input_examples:
                entry["input_examples"] = [dict(example) for example in tool.input_examples]
            form, reason = _strict_form(schema, left) if strict else (None, None)
            if form is None:
                declared.append(_Declared(entry, False, (), reason))
                continue
            left = left.after(form.cost)
            entry.update(input_schema=form.schema, strict=True)
            if tool.input_examples:
                _strict_examples(entry, form)
            declared.append(_Declared(entry, True, form.null_paths, None))
        return declared

    return toolset.cached((NAME, "declared", strict), build)


def declare(toolset: ToolSet, options: Options | None = None) -> Declaration:
    """The request's ``tools`` in toolset order (None when empty); cached on the toolset.

    Raises:
        SchemaConversionError: naming the tool whose schema cannot be declared.
    """
    options = options or _DEFAULT

    def build() -> Declaration:
        listed = _declared(toolset, options.strict)
        declared = [d.entry for d in listed]
        eager = selected_tools(
            toolset, "eager_input_streaming", declared, options.eager_input_streaming
        )
        declared = [
            {**entry, "eager_input_streaming": True} if entry["name"] in eager else entry
            for entry in declared
        ]
        entries = {
            d.name: DeclaredTool(
                d.name, toolset[d.name], d.strict, d.null_paths, d.not_strict_because
            )
            for d in listed
        }
        declared += _loading(toolset, declared, entries, options)
        if options.cache_control == "last" and declared:
            declared[-1] = {**declared[-1], "cache_control": {"type": "ephemeral"}}
        return Declaration(
            provider=NAME,
            options=options,
            toolset=toolset,
            tools=declared or None,
            entries=entries,
        )

    return toolset.cached((NAME, "declaration", options), build)


def _loading(
    toolset: ToolSet,
    declared: list[dict[str, Any]],
    entries: dict[str, DeclaredTool],
    options: Options,
) -> list[dict[str, Any]]:
    """The deferred tools marked ``defer_loading`` and the tools code may call given their
    ``allowed_callers`` (both in ``declared``, in place), and the tools they need declared
    after them: the search that finds deferred tools, the code execution whose code calls.

    Raises:
        ConfigurationError: a tool of the toolset has the local search's name.
    """
    added: list[dict[str, Any]] = []
    deferred = []
    code = False
    for position, entry in enumerate(declared):
        tool = entries[entry["name"]].tool
        changes: dict[str, Any] = {}
        if toolset.is_deferred(tool):
            changes["defer_loading"] = True
            deferred.append(entry)
        if "code" in tool.callers:
            code = True
            changes["allowed_callers"] = [
                *(["direct"] if "direct" in tool.callers else []),
                options.code_execution,
            ]
        if changes:
            declared[position] = {**entry, **changes}
    if code:
        added.append({"type": options.code_execution, "name": "code_execution"})
    if deferred and options.tool_search != "local":
        added.append(dict(_SEARCH_TOOLS[options.tool_search]))
    elif deferred:
        added.append({"name": SEARCH_TOOL_NAME})  # toolwire's own search, made below
    for extra in added:  # the API refuses a request whose tools share a name
        if extra["name"] in entries:
            raise ConfigurationError(
                f"a tool is exposed as {extra['name']!r}, the name of the "
                f"{extra.get('type', 'toolwire search')} tool this listing declares: rename it"
            )
    if not deferred or options.tool_search != "local":
        return added
    added.pop()
    search = search_tool((e["name"], e.get("description")) for e in deferred)
    entries[SEARCH_TOOL_NAME] = DeclaredTool(SEARCH_TOOL_NAME, search)
    entry = {
        "name": SEARCH_TOOL_NAME,
        "description": search.description,
        "input_schema": dict(search.input_schema),
    }
    return [*added, entry]


def assess(tool: Tool, options: Options | None = None) -> Verdict:
    """How the Messages API takes ``tool``: its lowered schema, checked against the documented
    rules (draft 2020-12, an object root without top-level combinators); with ``strict``, the
    schema strict tool use is sent (alone in its request) and its rules too, or why it is
    sent without ``strict``."""
    options = options or _DEFAULT
    sent: list[StrictForm] = []

    def declared() -> tuple[Any, list[str]]:
        schema, changes = _lowered(tool)
        notes = texts(changes)
        if not options.strict:
            return schema, notes
        form, reason = _strict_form(schema, STRICT_BUDGET)
        if form is None:
            notes.insert(0, f"sent without strict ({reason})")
            return schema, notes
        sent.append(form)
        notes += texts(form.notes)
        if form.null_paths:
            notes.append(
                f"strict: {len(form.null_paths)} optional argument(s) made nullable "
                "(nulls are stripped before the call)"
            )
        if form.schema != tool.input_schema:
            notes.append(
                f"strict: spends {form.cost.optional} of {STRICT_BUDGET.optional} optional and "
                f"{form.cost.unions} of {STRICT_BUDGET.unions} union-typed parameters of a request"
            )
        return form.schema, notes

    return assessed(
        NAME, tool, declared, lambda schema: anthropic_violations(schema, strict=bool(sent))
    )


_BLOCK_TYPES = frozenset(
    {
        "text",
        "tool_use",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "mcp_tool_use",
        "mcp_tool_result",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "container_upload",
    }
)
"""Content block types of an assistant message (none is a Responses item type)."""


def recognizes(response: Any) -> bool:
    """True for a Messages response, an assistant message, or a list of content blocks."""
    data = as_data(response)
    if isinstance(data, Mapping):
        if data.get("type") in ("message", "tool_use") or "stop_reason" in data:
            return True
        return data.get("role") == "assistant" and isinstance(data.get("content"), list | tuple)
    if isinstance(data, list | tuple):
        return bool(item_types(data) & _BLOCK_TYPES)
    return False


def tool_result(
    tool_use_id: str, content: str | list[dict[str, Any]], *, is_error: bool = False
) -> dict[str, Any]:
    """A ``tool_result`` block."""
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def _error_result(name: str, call_id: str | None, answer_id: str, message: str) -> dict[str, Any]:
    return tool_result(answer_id, message, is_error=True)


def _blocks(response: Any) -> list[Mapping[str, Any]]:
    data = as_data(response)
    check_shape(NAME, data, recognizes)
    if isinstance(data, Mapping) and data.get("type") == "tool_use":
        response = [data]  # one block
    blocks = []
    for position, raw in enumerate(
        listed(response, "content", "a message or a list of content blocks")
    ):
        block = as_data(raw)
        if not isinstance(block, Mapping):
            raise MalformedResponse(f"content[{position}] is not an object")
        blocks.append(block)
    return blocks


def parse(response: Any, declaration: Declaration) -> list[ToolCall | RejectedCall]:
    """Every ``tool_use`` block of a message (or of a list of blocks), in order.

    A block naming a declared tool that resolves is a [`ToolCall`][]; a call to an
    unknown name, with an ``input`` that is not a JSON object toolwire can carry, or with an
    id an earlier block already has, is a [`RejectedCall`][] answered by an error
    ``tool_result``. Blocks of tools the API runs itself (``server_tool_use``,
    ``mcp_tool_use``) and other blocks are skipped.

    Raises:
        MalformedResponse: when the message, or one of its blocks, is not an object (naming
            the provider it looks like, when it is another's).
    """
    blocks = [b for b in _blocks(response) if b.get("type") == "tool_use"]
    ids = call_ids(block.get("id") for block in blocks)
    declared = getattr(declaration.options, "code_execution", _DEFAULT.code_execution)
    calls = []
    for index, block in enumerate(blocks):
        caller = caller_of(block.get("caller"), id_field="tool_id", code=declared)
        calls.append(
            resolve_call(
                declaration,
                PROFILE,
                name=block.get("name"),
                call_id=block.get("id"),
                # a string is what the stream accumulator leaves when the input is not JSON
                arguments=block.get("input"),
                index=index,
                ids=ids,
                error_answer=_error_result,
                refused=("denied", caller) if isinstance(caller, str) else None,
                caller=caller if isinstance(caller, Caller) else DIRECT,
            )
        )
    return calls


def answer(call: ToolCall, result: ToolResult, options: Options | None = None) -> dict[str, Any]:
    """The ``tool_result`` block for ``call``: text, or text and image blocks; ``is_error`` on
    failure. A call made by code is answered in text (the code reads the result as a string);
    toolwire's own tool search with ``tool_reference`` blocks naming the tools it found."""
    call_id = call.call_id or call.local_id
    found = found_tools(call.tool, result)
    if found:  # toolwire's own search: the API loads the tools it names
        references = [{"type": "tool_reference", "tool_name": name} for name in found]
        return tool_result(call_id, references)
    if found is not None:
        return tool_result(call_id, "No tool matched the query; try other words.")
    # code the model wrote reads a result as text: media are placeholders there
    has_image = call.caller.kind == "direct" and any(_sendable(p) for p in result.content)
    if not has_image:
        text = "\n".join(_as_text(p) for p in result.content)
        if result.structured_content is not None and not text:
            text = canonical_json(dict(result.structured_content))
        return tool_result(call_id, text, is_error=result.is_error)
    blocks: list[dict[str, Any]] = []
    for part in result.content:
        if _sendable(part):
            assert isinstance(part, ImageContent)
            blocks.append(
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": part.mime_type,
                        "data": base64.b64encode(part.data).decode("ascii"),
                    },
                }
            )
        elif isinstance(part, TextContent):
            blocks.append({"type": "text", "text": part.text})
        else:
            blocks.append({"type": "text", "text": _as_text(part)})
    return tool_result(call_id, blocks, is_error=result.is_error)


_INPUT_BLOCK_FIELDS = {
    "text": ("type", "text", "citations"),
    "tool_use": ("type", "id", "name", "input", "caller"),
    "thinking": ("type", "thinking", "signature"),
    "redacted_thinking": ("type", "data"),
}
"""What a block of these types may carry when it is sent back (the API refuses extra fields on
input; a ``tool_use``'s ``caller`` must stay, so the code's call stays the code's)."""


def tool_choice(
    declaration: Declaration, allowed: Sequence[str] | None = None, mode: ChoiceMode = "auto"
) -> Any:
    """The request's ``tool_choice``: ``auto``, ``any`` (required) or ``none`` over every
    declared tool, or one tool the model must call (``required`` with one name). The Messages
    API cannot narrow a turn to several of the declared tools.

    Raises:
        ConfigurationError: a narrowing the Messages API cannot express; see ``chosen_names``.
    """
    names = chosen_names(declaration, allowed, mode)
    if names is None or len(names) == len(declaration.entries):
        return {"type": {"auto": "auto", "required": "any", "none": "none"}[mode]}
    if mode == "required" and len(names) == 1:
        return {"type": "tool", "name": names[0]}
    raise ConfigurationError(
        "the Messages API narrows a turn only to one tool it must call (required, one name): "
        "declare the others in another listing"
    )


def followup(response: Any, answers: Sequence[Any], ids: Sequence[str | None] = ()) -> list[Any]:
    """The assistant message, then one user message with every ``tool_result`` (all of a
    turn's answers together, before anything else): what to append to ``messages``. A
    ``tool_use`` sent without an id gets the one its answer carries (``ids``, in order)."""
    content = []
    given = iter(ids)
    for block in _blocks(response):
        kept = _INPUT_BLOCK_FIELDS.get(str(block.get("type")))
        sent = dict(block) if kept is None else {k: block[k] for k in kept if k in block}
        if block.get("type") == "tool_use":
            answer_id = next(given, None)
            if sent_id(sent.get("id")) is None and answer_id is not None:
                sent["id"] = answer_id
        content.append(sent)
    turn = [{"role": "assistant", "content": content}]
    return turn + ([{"role": "user", "content": list(answers)}] if answers else [])


def container_id(response: Any) -> str | None:
    """The id of the container a response's code runs in (its ``container``), or None: while
    code the model wrote waits for tool results, the next request must name it
    (``container=``) beside the answers, or the API refuses it."""
    data = as_data(response)
    container = as_data(data.get("container")) if isinstance(data, Mapping) else None
    found = container.get("id") if isinstance(container, Mapping) else None
    return found if isinstance(found, str) and found else None


def response_for(
    calls: Sequence[tuple[str, str, Mapping[str, Any]]], text: str | None = None
) -> dict[str, Any]:
    """A message holding ``text`` and ``calls`` ((id, name, arguments)) as ``tool_use``."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [
        {"type": "tool_use", "id": call_id, "name": name, "input": dict(args)}
        for call_id, name, args in calls
    ]
    return {
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
    }


def text(response: Any) -> str:
    """The text of the message's text blocks."""
    return "".join(str(b.get("text", "")) for b in _blocks(response) if b.get("type") == "text")


_DELTA_FIELDS = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "signature_delta": "signature",
    "input_json_delta": "partial_json",
}
"""Delta types that extend a block's text field, and the field."""


class AnthropicStreamAccumulator:
    """Turns Messages stream events into the message they add up to.

    ``tool_use`` inputs are joined from their ``input_json_delta`` pieces, left as the raw
    text when it is not JSON (so the call is answered with an error rather than run with
    guessed arguments); text, thinking and signatures are joined from their deltas.

    Bounded: at most ``limits.max_parts`` content blocks (100,000 by default), block indices
    below that, and ``limits.max_chars`` characters (32 million) of text, thinking,
    signatures and JSON in all. An event not shaped as the API streams it (a block started
    twice, a delta for a block never started, a field of the wrong type), or a stream past a
    limit, raises [`MalformedResponse`][toolwire.errors.MalformedResponse]. Other events (``ping``,
    ``content_block_stop``, ``message_stop``) are ignored.

    Args:
        limits: the bounds (the defaults are far above any real stream).
    """

    def __init__(self, *, limits: StreamLimits | None = None) -> None:
        self._budget = StreamBudget("Messages stream", limits)
        self._message: dict[str, Any] = {"role": "assistant", "content": []}
        self._blocks: dict[int, dict[str, Any]] = {}
        self._pieces: dict[tuple[int, str], list[str]] = {}  # (block, field) -> deltas

    def add(self, event: Any) -> None:
        """Add one event (a dict or the SDK's event object).

        Raises:
            MalformedResponse: for an event not shaped as the API streams it, or past a limit.
        """
        data = as_data(event)
        if not isinstance(data, Mapping):
            raise MalformedResponse(f"an event must be an object, not {type(event).__name__}")
        kind = data.get("type")
        if kind == "message_start":
            message = as_data(data.get("message"))
            if not isinstance(message, Mapping):
                raise MalformedResponse("message_start carries no message object")
            self._message.update({k: v for k, v in message.items() if k != "content"})
        elif kind == "content_block_start":
            self._start_block(data)
        elif kind == "content_block_delta":
            self._add_delta(data)
        elif kind == "message_delta":
            delta = as_data(data.get("delta"))
            if delta is not None:
                if not isinstance(delta, Mapping):
                    raise MalformedResponse("message_delta's delta is not an object")
                self._message.update({k: v for k, v in delta.items() if k != "content"})
            usage = as_data(data.get("usage"))
            if usage:
                if not isinstance(usage, Mapping):
                    raise MalformedResponse("message_delta's usage is not an object")
                previous = self._message.get("usage")
                self._message["usage"] = {
                    **(previous if isinstance(previous, Mapping) else {}),
                    **usage,
                }

    def _start_block(self, data: Mapping[str, Any]) -> None:
        index = self._budget.index(data.get("index", len(self._blocks)), "content block index")
        block = as_data(data.get("content_block"))
        if not isinstance(block, Mapping):
            raise MalformedResponse(f"content block {index} starts with no block object")
        if index in self._blocks:
            raise MalformedResponse(f"content block {index} was started twice")
        self._budget.part()
        self._blocks[index] = dict(block)

    def _add_delta(self, data: Mapping[str, Any]) -> None:
        index = self._budget.index(data.get("index"), "content block index")
        if index not in self._blocks:
            raise MalformedResponse(f"a delta for content block {index}, which never started")
        delta = as_data(data.get("delta"))
        if not isinstance(delta, Mapping):
            raise MalformedResponse(f"a delta for content block {index} is not an object")
        kind = delta.get("type")
        field = _DELTA_FIELDS.get(kind) if isinstance(kind, str) else None
        if field is None:
            return  # e.g. citations_delta: nothing toolwire assembles
        piece = self._budget.text(delta.get(field, ""), f"{kind}.{field}")
        self._pieces.setdefault((index, field), []).append(piece)

    def response(self) -> dict[str, Any]:
        """The message so far, ``tool_use`` inputs parsed (the Messages API's response)."""
        return self.message()

    def message(self) -> dict[str, Any]:
        """The message so far, ``tool_use`` inputs parsed."""
        content = []
        for index in sorted(self._blocks):
            block = dict(self._blocks[index])
            for key in ("text", "thinking", "signature"):
                pieces = self._pieces.get((index, key))
                if pieces is not None:
                    previous = block.get(key)
                    block[key] = (previous if isinstance(previous, str) else "") + "".join(pieces)
            pieces = self._pieces.get((index, "partial_json"))
            if pieces is not None:
                text = "".join(pieces)
                loaded = load_json(text) if text.strip() else {}
                block["input"] = text if isinstance(loaded, NotJson) else loaded
            content.append(block)
        return {**self._message, "content": content}


Accumulator = AnthropicStreamAccumulator


def stopped(response: Any) -> Stopped | None:
    """A message the model ended with ``stop_reason: "refusal"`` (what it said, as the
    message), or one with no content at all; None otherwise."""
    data = as_data(response)
    if not isinstance(data, Mapping) or "content" not in data:
        return None
    content = data.get("content") or []
    said = "".join(
        str(block.get("text") or "")
        for block in (as_data(b) for b in content)
        if isinstance(block, Mapping) and block.get("type") == "text"
    )
    if data.get("stop_reason") == "refusal":
        return Stopped("refused", "refusal", said or None)
    if not content:
        return Stopped("empty", str(data.get("stop_reason") or "no content"))
    return None


def request(
    declaration: Declaration, messages: Sequence[Any], previous: Any = None
) -> dict[str, Any]:
    """The keyword arguments of ``messages.create`` sending ``messages`` with the declared
    tools."""
    del previous  # the whole conversation goes each time
    sent: dict[str, Any] = {"messages": list(messages)}
    if declaration.tools:
        sent["tools"] = declaration.tools
    return sent
