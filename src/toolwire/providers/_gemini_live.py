"""The Gemini Live API's side of function calling: a ``toolCall`` server message's calls, the
client's ``toolResponse``, and how the model takes the answer to a non-blocking call."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, get_args

from toolwire.calls import ToolCall
from toolwire.errors import ConfigurationError, MalformedResponse
from toolwire.providers._registry import parse_calls
from toolwire.providers._wire import as_data, get_field, split_calls
from toolwire.tool import Tool
from toolwire.toolset import ToolSet

__all__ = ["Scheduling", "checked_scheduling", "live_function_calls", "live_tool_response"]

_PROVIDER = "gemini"  # the Live API's calls are generateContent's function calls

Scheduling = Literal["INTERRUPT", "WHEN_IDLE", "SILENT"]
"""How the Live API takes the answer to a non-blocking call: ``"INTERRUPT"`` stops what the
model is saying to tell it, ``"WHEN_IDLE"`` (Gemini's default) tells it once the model is
done, ``"SILENT"`` only adds it to the context."""
_SCHEDULINGS: tuple[str, ...] = get_args(Scheduling)


def checked_scheduling(scheduling: Any) -> str:
    """``scheduling``, when it is one Gemini takes (see
    [`Scheduling`][toolwire.providers.gemini.Scheduling]).

    Raises:
        ConfigurationError: naming the ones it takes.
    """
    if scheduling not in _SCHEDULINGS or not isinstance(scheduling, str):
        raise ConfigurationError(
            f"scheduling must be one of {', '.join(map(repr, _SCHEDULINGS))}, not {scheduling!r}"
        )
    return scheduling


def live_function_calls(
    message: Any, toolset: ToolSet | Iterable[Tool]
) -> tuple[list[ToolCall], list[dict[str, Any]]]:
    """The calls of a Live API ``toolCall`` server message, against ``toolset``: the resolved
    calls, and the error answers (``functionResponse`` parts) of those that cannot run.

    Declare Live tools with ``function_declarations(toolset, schema="openapi")``: Live takes
    ``parameters`` and ignores ``parametersJsonSchema``. ``non_blocking=`` there declares
    functions the model does not wait for (asynchronous function calling).
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
    return split_calls(parse_calls(_PROVIDER, [{"functionCall": c} for c in calls], toolset))


def live_tool_response(
    answers: Iterable[Mapping[str, Any]], *, scheduling: Scheduling | None = None
) -> dict[str, Any]:
    """The client's ``toolResponse`` message for ``functionResponse`` parts (answers).

    Args:
        answers: the ``functionResponse`` parts, e.g. an outcome's ``results``.
        scheduling: how the model takes every one of these answers, when the calls were to
            functions declared non-blocking (see
            [`Scheduling`][toolwire.providers.gemini.Scheduling]; Gemini ignores it for the
            others); None keeps each answer's own.

    Asynchronous function calling (``GeminiOptions.non_blocking`` and ``scheduling``) is
    the Live API's: https://ai.google.dev/gemini-api/docs/live-tools.

    Raises:
        ConfigurationError: for a ``scheduling`` Gemini does not take.
    """
    if scheduling is not None:
        checked_scheduling(scheduling)
    responses = []
    for answer in answers:
        body = dict(answer["functionResponse"])
        if scheduling is not None:
            body["scheduling"] = scheduling
        responses.append(body)
    return {"toolResponse": {"functionResponses": responses}}
