"""The contract every provider module fulfils, and the data that flows through it.

A provider module declares a toolset ([`Declaration`][]), parses a response against what
was declared, answers one call, and assesses one tool for ``toolwire check``; what differs
between providers as plain facts (name rules, image types, limits) is its
[`ProviderProfile`][], and its options are a frozen dataclass checked by
[`options_for`][].
"""

from __future__ import annotations

import dataclasses
import functools
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import UnionType
from typing import Any, Literal, Protocol, TypeVar, get_args, get_origin

from toolwire.calls import RejectedCall, ToolCall, ToolResult
from toolwire.errors import ConfigurationError
from toolwire.tool import Tool
from toolwire.toolset import ToolSet

__all__ = [
    "Declaration",
    "DeclaredTool",
    "Provider",
    "ProviderProfile",
    "Stopped",
    "StreamAccumulator",
    "Verdict",
    "VerdictStatus",
    "options_for",
]

NullPath = tuple[str, ...]
VerdictStatus = Literal["accepted", "converted", "rejected", "skipped"]


@dataclass(frozen=True, slots=True)
class Stopped:
    """Why a model's response holds no answer: the API ``blocked`` it (a safety filter,
    recitation...), the model ``refused``, or it came back ``empty``. Not an ordinary end
    of the loop: say so to the user."""

    kind: Literal["blocked", "refused", "empty"]
    reason: str
    """The API's own word for it (Gemini's ``finishReason`` or ``blockReason``, Anthropic's
    ``stop_reason``, OpenAI's ``finish_reason`` or ``refusal``)."""
    message: str | None = None
    """What the model said of it (a refusal's text), when it said anything."""


@dataclass(frozen=True, slots=True)
class ProviderProfile:
    """What a provider accepts, as data."""

    label: str
    """How people name the API ("OpenAI Chat Completions")."""
    name_pattern: str
    """The tool names its API accepts (a regular expression matched in full)."""
    image_types: frozenset[str]
    """Image MIME types an answer can carry as images; others become text placeholders."""
    error_prefix: str | None
    """What starts a failed call's answer, for an API without an error flag (else None)."""
    max_tools: int | None
    """Function tools one request may declare (None: no documented limit)."""
    schema_rules: str
    """The schema dialect it takes, in one line (what ``toolwire check`` holds it to)."""
    declared_options: frozenset[str] = frozenset()
    """The options that shape the declaration (the others shape answers): fixed once the
    tools are declared."""
    option_sets: tuple[Mapping[str, Any], ...] = ({},)
    """Every set of options that converts schemas differently: a tool from an untrusted
    source is offered only when it can be declared under each (an MCP hub checks)."""
    api_key_env: tuple[str, ...] = ()
    """Environment variables holding an API key, first found wins (for the demo)."""
    default_model: str | None = None
    """The model the demo talks to."""
    namespace_separators: tuple[str, ...] = ()
    """Separators of a namespace the model may prefix to a name (``default_api.search``)."""
    server_history: bool = False
    """True when the API keeps the conversation (Gemini Interactions): ``followup`` then gives
    the answers alone, sent beside the previous turn's id."""
    input_examples: bool = False
    """True when a tool definition takes example arguments of its own (Anthropic's
    ``input_examples``); elsewhere a tool's examples are folded into its description."""
    tool_search: bool = False
    """True when the API loads deferred tools on demand through a tool search; elsewhere
    every tool is declared in full, deferred or not."""
    code_callers: bool = False
    """True when code the model writes can call tools (programmatic tool calling); elsewhere
    only the model calls them."""

    def accepts_name(self, name: str) -> bool:
        """True when the API takes ``name`` as a tool name."""
        return re.fullmatch(self.name_pattern, name) is not None


@dataclass(frozen=True, slots=True)
class Verdict:
    """How one provider takes one tool (what ``toolwire check`` shows)."""

    provider: str
    status: VerdictStatus
    notes: tuple[str, ...] = ()
    """What was dropped or rewritten (converted), or why it cannot be declared (rejected)."""


@dataclass(frozen=True, slots=True)
class DeclaredTool:
    """One tool as the model was shown it."""

    name: str
    """The exposed name."""
    tool: Tool
    strict: bool | None = None
    """OpenAI: whether it was sent with ``strict: true`` (None where there is no such mode)."""
    null_paths: tuple[NullPath, ...] = ()
    """Where a strict schema made an optional argument nullable: a null there means "left
    out" (``"*"`` stands for every array item)."""
    not_strict_because: str | None = None
    """Why it was sent without strict mode when strict mode was asked for (a schema strict
    mode cannot express, a request whose budget for strict schemas is spent) or turned off
    (OpenAI: ``strict: false``); None otherwise."""


@dataclass(frozen=True, slots=True, eq=False)
class Declaration:
    """What one provider was shown: the request fragment and, per exposed name, how each tool
    was declared. Parsing a response against it resolves exactly these names, with the
    strictness and null paths each was declared with."""

    provider: str
    options: Any
    """The provider's options dataclass, as declared."""
    toolset: ToolSet
    tools: Any
    """The request's ``tools`` value; None when there is nothing to declare."""
    entries: Mapping[str, DeclaredTool]
    """The declared tools by exposed name, in order."""
    unavailable: Mapping[str, str] = field(default_factory=dict)
    """Tools that were offered before but are gone now (their server is down), by exposed
    name: a call to one is answered ``unavailable`` with this reason, not ``not_found``."""
    left_out: Mapping[str, str] = field(default_factory=dict)
    """Tools of the toolset left out of this declaration, by exposed name, and why."""
    _lazy: Callable[[Tool, str], DeclaredTool | None] | None = field(default=None, repr=False)
    """For a declaration made implicitly (no listing given): how to declare one tool when a
    call names it, so one undeclarable neighbour never breaks the others' calls."""

    def entry(self, name: str) -> DeclaredTool | None:
        """The declared tool exposed as ``name``, or None."""
        found = self.entries.get(name)
        if found is not None or self._lazy is None:
            return found
        tool = self.toolset.get(name)
        return None if tool is None else self._lazy(tool, name)

    @property
    def names(self) -> tuple[str, ...]:
        """The exposed names the model was shown, in order."""
        if self._lazy is not None:  # the tools of the toolset declared to this provider
            return tuple(
                name
                for name, tool in zip(self.toolset.exposed_names, self.toolset, strict=True)
                if tool.providers is None or self.provider in tool.providers
            )
        return tuple(self.entries)

    @property
    def null_paths(self) -> dict[str, tuple[NullPath, ...]]:
        """Per exposed name, the argument paths strict mode made nullable (only the tools
        that have some)."""
        return {name: e.null_paths for name, e in self.entries.items() if e.null_paths}

    @property
    def not_strict(self) -> dict[str, str]:
        """Per exposed name, why a tool was sent without strict mode (only the tools that
        were; see ``DeclaredTool.not_strict_because``)."""
        return {
            name: e.not_strict_because
            for name, e in self.entries.items()
            if e.not_strict_because is not None
        }


class StreamAccumulator(Protocol):
    """Adds a stream's events up to the response they make."""

    def add(self, event: Any) -> None: ...

    def response(self) -> Any: ...


class Provider(Protocol):
    """One provider's tool calling. Each module of [`toolwire.providers`][] is one."""

    NAME: str
    PROFILE: ProviderProfile
    Options: Callable[..., Any]
    """The options dataclass (every field has a default)."""
    Accumulator: Callable[..., StreamAccumulator]
    """The stream accumulator class (``limits=`` keyword)."""

    def declare(self, toolset: ToolSet, options: Any = None) -> Declaration:
        """The toolset's declaration (cached on the toolset; treat it as read-only).

        Raises:
            SchemaConversionError: naming the tool whose schema cannot be declared.
        """
        ...

    def parse(self, response: Any, declaration: Declaration) -> list[ToolCall | RejectedCall]:
        """Every call of ``response`` the client must answer, in the model's order.

        Raises:
            MalformedResponse: the response is not this provider's shape (naming the provider
                it looks like), or its structure is broken.
        """
        ...

    def answer(self, call: ToolCall, result: ToolResult, options: Any = None) -> Any:
        """The provider's answer to one call."""
        ...

    def assess(self, tool: Tool, options: Any = None) -> Verdict:
        """How this provider takes ``tool``, checked against its documented rules."""
        ...

    def recognizes(self, response: Any) -> bool:
        """True when ``response`` (as plain data) has this provider's shape."""
        ...

    def tool_choice(
        self, declaration: Declaration, allowed: Sequence[str] | None = None, mode: str = "auto"
    ) -> Any:
        """The request's tool-choice setting in this provider's shape: ``mode`` (``auto``,
        ``required``, ``none``) over the declared tools, or narrowed to ``allowed`` (exposed
        names) without changing what is declared.

        Raises:
            ConfigurationError: a choice this provider cannot express, or names not declared.
        """
        ...

    def request(
        self, declaration: Declaration, messages: Sequence[Any], previous: Any = None
    ) -> dict[str, Any]:
        """The keyword arguments of the API's request sending ``messages`` with the declared
        tools (``contents``/``config``, ``messages``/``tools``, ``input``/``tools``); for an
        API keeping the conversation (``PROFILE.server_history``), ``messages`` are the new
        ones, sent after ``previous``, the last response."""
        ...

    def stopped(self, response: Any) -> Stopped | None:
        """Why ``response`` holds no answer (blocked, refused, empty), or None for an
        ordinary response (calls, text, or both)."""
        ...

    def followup(
        self, response: Any, answers: Sequence[Any], ids: Sequence[str | None] = ()
    ) -> list[Any]:
        """What to append to the conversation: the model's turn, then the answers, in this
        provider's message shape. ``ids`` are the ids the answers carry, one per call in
        order: a call the model sent without one gets it, so every answer has its call."""
        ...

    def response_for(
        self, calls: Sequence[tuple[str, str, Mapping[str, Any]]], text: str | None = None
    ) -> dict[str, Any]:
        """A response in this provider's shape holding ``calls`` ((id, name, arguments)) and
        ``text``: what a scripted model sends."""
        ...

    def text(self, response: Any) -> str:
        """The model's text in ``response`` (thoughts left out)."""
        ...


# -- options ---------------------------------------------------------------------------------------

OptionsT = TypeVar("OptionsT")


def options_for(
    provider: str, kind: Callable[..., OptionsT], values: Mapping[str, Any], base: Any = None
) -> OptionsT:
    """``kind`` (an options dataclass) built from ``values`` on top of ``base`` (its defaults
    when None), every value checked against its field's type.

    Raises:
        ConfigurationError: naming the unknown option and the valid ones, or the option whose
            value has the wrong type and what it takes.
    """
    if not values:
        return base if base is not None else kind()
    hints = _field_types(kind)
    for name in values:
        if name not in hints:
            valid = ", ".join(hints) or "(none)"
            raise ConfigurationError(f"unknown option {name!r} for {provider}; valid: {valid}")
    for name, value in values.items():
        problem = _type_problem(value, hints[name])
        if problem is not None:
            raise ConfigurationError(f"option {name!r} for {provider}: {problem}")
    if base is None:
        return kind(**values)
    return dataclasses.replace(base, **values)  # type: ignore[no-any-return]


@functools.cache
def _field_types(kind: Any) -> dict[str, Any]:
    """The fields of an options dataclass and their types, in order."""
    hints = typing.get_type_hints(kind)
    return {f.name: hints[f.name] for f in dataclasses.fields(kind)}


def _type_problem(value: Any, hint: Any) -> str | None:
    """Why ``value`` does not fit ``hint`` (the simple types options use), or None."""
    origin = get_origin(hint)
    if origin is Literal:
        allowed = get_args(hint)
        if value in allowed and type(value) in {type(a) for a in allowed}:
            return None
        return f"expected one of {', '.join(repr(a) for a in allowed)}, not {value!r}"
    if origin is typing.Union or origin is UnionType:
        problems = [_type_problem(value, arm) for arm in get_args(hint)]
        if any(p is None for p in problems):
            return None
        return "; or ".join(p for p in problems if p)
    if hint is type(None):
        return None if value is None else f"expected None, not {value!r}"
    if hint is bool:
        return None if isinstance(value, bool) else f"expected True or False, not {value!r}"
    if hint is str:
        return None if isinstance(value, str) else f"expected a string, not {value!r}"
    if origin in (tuple, Sequence) or hint in (tuple, Sequence):
        ok = isinstance(value, list | tuple)
        return None if ok else f"expected a list, not {type(value).__name__}"
    return None


# -- declarations made without a listing --------------------------------------------------------


def implicit_declaration(
    provider: str,
    toolset: ToolSet,
    options: Any,
    declare: Callable[[ToolSet, Any], Declaration],
) -> Declaration:
    """What the model is taken to have been shown when no listing is given: ``toolset``
    declared with ``options`` (cached on the toolset). When a tool of it cannot be declared,
    each tool is declared on its own when a call names it, so calls to the others still run;
    a tool that cannot be declared then resolves with nothing stripped."""
    from toolwire.errors import ToolwireError

    def build() -> Declaration:
        try:
            return declare(toolset, options)
        except ToolwireError:
            pass
        memo: dict[str, DeclaredTool | None] = {}

        def one(tool: Tool, name: str) -> DeclaredTool | None:
            if name not in memo:
                memo[name] = _alone(tool, name)
            return memo[name]

        def _alone(tool: Tool, name: str) -> DeclaredTool | None:
            if tool.providers is not None and provider not in tool.providers:
                return None
            try:
                entries = list(declare(ToolSet([tool]), options).entries.values())
            except ToolwireError:
                return DeclaredTool(name, tool)
            return dataclasses.replace(entries[0], name=name, tool=tool) if entries else None

        return Declaration(provider, options, toolset, None, {}, _lazy=one)

    try:
        hash(options)
    except TypeError:  # options holding a dict (a native tool's config) cannot be a key
        return build()
    return toolset.cached((provider, "implicit", options), build)
