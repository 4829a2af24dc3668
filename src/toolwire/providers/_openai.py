"""What OpenAI Chat Completions and Responses share: strict declarations, arguments that
arrive as JSON strings, and text answers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from toolwire.calls import (
    RejectedCall,
    ToolCall,
    ToolResult,
    argument_problem,
    canonical_json,
    content_text,
)
from toolwire.errors import SchemaConversionError
from toolwire.providers._wire import (
    CallIds,
    NotJson,
    arguments_problem_message,
    load_json,
    printable,
    rejected_call,
    unknown_tool,
)
from toolwire.schema._rewrite import declared_object
from toolwire.schema.openai import NullPath, StrictSchemaError, strict_schema
from toolwire.tool import Tool, ToolSet

__all__ = ["Declared", "declared", "output_text", "parse_arguments"]

_RAW_ECHO = 300
"""Characters of malformed arguments echoed back to the model."""


@dataclass(frozen=True, slots=True)
class Declared:
    """One tool as OpenAI sees it."""

    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool
    null_paths: tuple[NullPath, ...]
    not_strict_because: str | None
    """Why ``strict`` is false, when it is."""


def _plain_object(tool: Tool) -> dict[str, Any]:
    """The tool's schema as sent without strict mode, and what strict mode converts: as it is
    validated, descriptions cleaned at every depth, an object root, no ``$schema``.

    Raises:
        SchemaConversionError: naming the tool, for a schema that is not valid JSON Schema.
    """
    try:
        root, _ = declared_object(tool.input_schema)
    except SchemaConversionError as exc:
        raise exc.for_tool(tool.qualified_name) from None
    root.pop("$schema", None)  # a new top-level dict
    return root


def _declare(tool: Tool, toolset: ToolSet, provider: str, strict: bool) -> Declared:
    """One tool for an OpenAI API, strict where it can be.

    Raises:
        SchemaConversionError: naming the tool, for a schema that cannot be declared.
    """
    from toolwire._text import clean_description

    plain = _plain_object(tool)
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
        name=toolset.exposed_name(tool),
        description=clean_description(tool.description),
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
            _declare(tool, toolset, provider, strict)
            for tool in toolset
            if tool.providers is None or provider in tool.providers
        ],
    )


def null_paths_by_name(
    toolset: ToolSet, provider: str, strict: bool
) -> dict[str, tuple[NullPath, ...]]:
    return toolset.cached(
        ("openai-null-paths", provider, strict),
        lambda: {d.name: d.null_paths for d in declared(toolset, provider, strict) if d.null_paths},
    )


def _null_paths_of(
    toolset: ToolSet, provider: str, strict: bool, tool: Tool
) -> tuple[NullPath, ...]:
    """The nulls a strict declaration of ``tool`` made the model send, for parsing one call.

    Only the called tool is declared: a neighbour whose schema cannot be declared must not make
    every other tool's calls fail. A tool that cannot be declared has none (it was never sent).
    """

    def build() -> tuple[NullPath, ...]:
        if tool.providers is not None and provider not in tool.providers:
            return ()
        try:
            return _declare(tool, toolset, provider, strict).null_paths
        except SchemaConversionError:
            return ()

    return toolset.cached(("openai-null-paths-of", provider, strict, tool.qualified_name), build)


def strict_reasons(toolset: ToolSet, provider: str, strict: bool) -> dict[str, str]:
    """Per exposed name, why the tool is declared with ``strict: false``."""
    return {
        d.name: d.not_strict_because
        for d in declared(toolset, provider, strict)
        if d.not_strict_because is not None
    }


def _required(tool: Tool) -> bool:
    required = tool.input_schema.get("required") if isinstance(tool.input_schema, Mapping) else None
    return bool(required)


def parse_arguments(raw: Any, name: str, tool: Tool) -> dict[str, Any] | str:
    """The arguments of a call as a dict, or the error message for the model.

    ``raw`` is the JSON string OpenAI sends (an object from some compatible servers). Text
    that is not JSON (``NaN`` and ``Infinity`` included), JSON that is not an object, and
    objects toolwire cannot carry (see :func:`toolwire.calls.argument_problem`) are refused.
    """
    shown = printable(name)
    if isinstance(raw, Mapping):  # some compatible servers send an object
        arguments: Any = raw
    elif raw is None or (isinstance(raw, str) and not raw.strip()):
        if _required(tool):
            return f"Invalid arguments for {shown!r}: no arguments were sent."
        return {}
    elif not isinstance(raw, str):
        return f"Invalid arguments for {shown!r}: expected a JSON string, got {type(raw).__name__}."
    else:
        arguments = load_json(raw)
        if isinstance(arguments, NotJson):
            echo = raw if len(raw) <= _RAW_ECHO else raw[:_RAW_ECHO] + "..."
            return f"Invalid arguments for {shown!r}: {arguments.why}: {printable(echo)}"
    if not isinstance(arguments, Mapping):
        return (
            f"Invalid arguments for {shown!r}: expected a JSON object, got "
            f"{type(arguments).__name__}."
        )
    problem = argument_problem(arguments)
    return arguments_problem_message(name, problem) if problem is not None else dict(arguments)


def output_text(result: ToolResult, error_prefix: str) -> str:
    """A result as one string: structured content as JSON when there is no text; errors
    prefixed (OpenAI has no error flag)."""
    text = content_text(result.content)
    if result.structured_content is not None and not text:
        text = canonical_json(dict(result.structured_content))
    if result.is_error:
        return f"{error_prefix}{text}"
    return text


def resolve_or_reject(
    toolset: ToolSet,
    provider: str,
    strict: bool,
    *,
    name: Any,
    call_id: str | None,
    raw_arguments: Any,
    index: int,
    ids: CallIds,
    error_answer: Callable[[str, str], Any],
    extras: Mapping[str, Any] | None = None,
) -> ToolCall | RejectedCall:
    """One OpenAI call resolved to a ToolCall, or rejected with its error answer built by
    ``error_answer(answer_id, message)``.

    ``call_id`` is the provider's id, already kept in ``ids`` (see :class:`CallIds`); a call
    without one gets a generated id, which its answer carries.
    """
    name = name if isinstance(name, str) else ""
    tool = toolset.get(name)
    if tool is None:
        message = unknown_tool(toolset, name)
        return rejected_call(name, call_id, index, "not_found", message, ids, error_answer)
    arguments = parse_arguments(raw_arguments, name, tool)
    if isinstance(arguments, str):
        return rejected_call(
            name, call_id, index, "invalid_arguments", arguments, ids, error_answer
        )
    return ToolCall(
        exposed_name=name,
        tool=tool,
        arguments=arguments,
        call_id=call_id,
        local_id=call_id if call_id is not None else ids.make(name, arguments),
        index=index,
        extras=dict(extras or {}),
        null_paths=_null_paths_of(toolset, provider, strict, tool),
    )
