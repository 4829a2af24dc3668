"""What OpenAI Chat Completions and Responses share: options, strict declarations, custom
tools, arguments that arrive as JSON strings, and text answers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolwire.calls import (
    ToolResult,
    canonical_json,
    content_text,
)
from toolwire.errors import SchemaConversionError
from toolwire.providers._assess import assessed, custom_verdict, texts
from toolwire.providers._contract import Declaration, DeclaredTool, Verdict
from toolwire.providers._wire import described
from toolwire.schema import ConversionNote
from toolwire.schema.anthropic import to_anthropic_schema
from toolwire.schema.checks import openai_violations
from toolwire.schema.openai import NullPath, StrictSchemaError, strict_schema
from toolwire.tool import Tool
from toolwire.toolset import ToolSet

__all__ = [
    "Declared",
    "OpenAIOptions",
    "assess",
    "declaration",
    "declared",
    "output_text",
]

ERROR_PREFIX = "Error: "
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
NAME_PATTERN = r"[a-zA-Z0-9_-]{1,64}"
MAX_TOOLS = 128
"""Function tools one request may declare: both APIs refuse more ("Invalid 'tools': array
too long. Expected an array with maximum length 128")."""


_REFUSED_AT_ROOT = ("not", "enum")
"""Keywords OpenAI refuses at the top of a function's parameters (besides the combinators,
which the lowering merges): "schema must have type 'object' and not have 'oneOf'/'anyOf'/
'allOf'/'enum'/'not' at the top level"."""


@dataclass(frozen=True, slots=True)
class OpenAIOptions:
    """Options of both OpenAI APIs."""

    strict: bool = field(
        default=True, metadata={"help": "declare strict schemas where they can be made strict"}
    )
    """Declare each tool ``strict: true`` where its schema can be made strict; False sends
    every tool with ``strict: false`` and its schema as it is."""
    error_prefix: str = ERROR_PREFIX
    """What starts a failed call's answer (OpenAI has no error flag)."""


@dataclass(frozen=True, slots=True)
class Declared:
    """One tool as OpenAI sees it."""

    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool
    null_paths: tuple[NullPath, ...]
    not_strict_because: str | None
    """Why ``strict`` is false, when it is (None for a custom tool: it has no strict mode)."""
    custom: bool = False
    """A custom tool: declared with its ``format``, not ``parameters``."""
    format: dict[str, str] | None = None
    """A custom tool's grammar in the Responses shape (``{"type": "grammar", "syntax",
    "definition"}``); None for free text."""


def _plain_object(tool: Tool) -> tuple[dict[str, Any], list[Any]]:
    """The tool's schema as sent without strict mode, and what strict mode converts: as it is
    validated, descriptions cleaned at every depth, an object root, no ``$schema``.

    Raises:
        SchemaConversionError: naming the tool, for a schema that is not valid JSON Schema.
    """
    try:
        # An object root without top-level combinators (OpenAI refuses them as Anthropic does).
        root, notes = to_anthropic_schema(tool.declared_schema)
    except SchemaConversionError as exc:
        raise exc.for_tool(tool.qualified_name) from None
    root.pop("$schema", None)  # a new top-level dict
    for keyword in _REFUSED_AT_ROOT:
        if keyword in root:  # arguments are still checked against it before the call
            del root[keyword]
            notes.append(
                ConversionNote("#", f"{keyword} at the top level dropped: OpenAI refuses it")
            )
    return root, notes


def _declare(tool: Tool, name: str, strict: bool) -> Declared:
    """One tool for an OpenAI API, strict where it can be.

    Raises:
        SchemaConversionError: naming the tool, for a schema that cannot be declared.
    """
    if tool.kind == "custom":  # free text: there is no schema to make strict
        grammar = tool.grammar
        return Declared(
            name=name,
            description=described(tool),
            parameters=dict(tool.input_schema),
            strict=False,
            null_paths=(),
            not_strict_because=None,
            custom=True,
            format=grammar.as_format() if grammar is not None else None,
        )
    plain, _ = _plain_object(tool)
    reason = None
    if strict:
        try:
            parameters, paths = strict_schema(plain)
        except StrictSchemaError as exc:
            reason = f"{exc.path}: {exc.reason}"
    else:
        reason = "strict mode was turned off"
    if reason is not None:
        parameters, paths = plain, []
    return Declared(
        name=name,
        description=described(tool),
        parameters=parameters,
        strict=reason is None,
        null_paths=tuple(paths),
        not_strict_because=reason,
    )


def declared(toolset: ToolSet, provider: str, strict: bool) -> list[Declared]:
    """The toolset's tools for an OpenAI API, strict where they can be; cached per toolset."""
    return toolset.cached(
        ("openai", provider, strict),
        lambda: [
            _declare(tool, toolset.exposed_name(tool), strict)
            for tool in toolset
            if tool.providers is None or provider in tool.providers
        ],
    )


def declaration(
    toolset: ToolSet,
    provider: str,
    options: OpenAIOptions,
    wire: Callable[[Declared], dict[str, Any]],
) -> Declaration:
    """The toolset's declaration for one OpenAI API, each tool's request entry made by
    ``wire``; cached per toolset."""

    def build() -> Declaration:
        tools = declared(toolset, provider, options.strict)
        return Declaration(
            provider=provider,
            options=options,
            toolset=toolset,
            tools=[wire(d) for d in tools] or None,
            entries={
                d.name: DeclaredTool(
                    d.name,
                    toolset[d.name],
                    None if d.custom else d.strict,
                    d.null_paths,
                    d.not_strict_because,
                )
                for d in tools
            },
        )

    return toolset.cached((provider, "declaration", options), build)


def assess(provider: str, tool: Tool, options: OpenAIOptions) -> Verdict:
    """How an OpenAI API takes ``tool``: its declaration, checked against the documented rules
    of the mode it is sent in. A custom tool is declared as one (no schema to check)."""
    if tool.kind == "custom":
        return custom_verdict(provider, tool, custom_note(tool))
    sent: list[Declared] = []

    def declare() -> tuple[Any, list[str]]:
        entry = _declare(tool, tool.name, options.strict)
        sent.append(entry)
        notes = texts(_plain_object(tool)[1])
        if not entry.strict:
            notes.insert(0, f"sent with strict: false ({entry.not_strict_because})")
        elif entry.null_paths:
            notes.append(
                f"strict: {len(entry.null_paths)} optional argument(s) made nullable "
                "(nulls are stripped before the call)"
            )
        return entry.parameters, notes

    return assessed(
        provider,
        tool,
        declare,
        lambda schema: openai_violations(schema, strict=bool(sent and sent[0].strict)),
    )


def output_text(result: ToolResult, error_prefix: str) -> str:
    """A result as one string: structured content as JSON when there is no text; errors
    prefixed (OpenAI has no error flag)."""
    text = content_text(result.content)
    if result.structured_content is not None and not text:
        text = canonical_json(dict(result.structured_content))
    if result.is_error:
        return f"{error_prefix}{text}"
    return text


def custom_note(tool: Tool) -> str:
    """What ``toolwire check`` says of a custom tool declared to OpenAI."""
    grammar = tool.grammar
    shape = f"grammar: {grammar.syntax}" if grammar is not None else "free text"
    return (
        f"custom tool ({shape}): the model writes the text itself, passed as the "
        f"{tool.text_argument!r} argument"
    )
