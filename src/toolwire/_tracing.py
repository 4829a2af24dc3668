"""OpenTelemetry spans for tool executions (extra ``toolwire[otel]``), following the GenAI
semantic conventions: one ``execute_tool {tool name}`` span per call that runs, with the
operation, the tool's name, description and call id, and ``error.type`` when it fails; an
``mcp.progress`` event on it for each progress notification of an MCP server's tool.

Without ``opentelemetry-api`` installed every function here does nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from typing import TYPE_CHECKING, Any

from toolwire.calls import ToolCall, ToolResult
from toolwire.errors import MissingDependency

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

_trace: Any
try:
    from opentelemetry import trace as _trace
except ImportError:
    _trace = None

__all__ = [
    "add_progress_event",
    "end_tool_span",
    "global_tracing",
    "make_tracer",
    "recording_span",
    "tool_span",
]

try:
    _VERSION: str | None = metadata.version("toolwire")
except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
    _VERSION = None


def make_tracer(provider: TracerProvider | None = None) -> Tracer | None:
    """toolwire's tracer from ``provider`` (the global one when None); None without the API.

    Raises:
        MissingDependency: ``provider`` is given but ``opentelemetry-api`` is not installed
            (extra ``toolwire[otel]``): spans asked for are never silently left out.
    """
    if _trace is None:
        if provider is not None:
            raise MissingDependency("opentelemetry-api", "otel")
        return None
    tracer: Tracer = _trace.get_tracer("toolwire", _VERSION, tracer_provider=provider)
    return tracer


def global_tracing() -> bool:
    """True once a real tracer provider is installed globally. Until then spans would go to a
    no-op tracer, and making them costs every call more than the rest of the executor's own
    bookkeeping, so the executor skips them (checked per turn: a provider set later counts)."""
    if _trace is None:
        return False
    # The API's getter looks the environment up on every call until a provider is set (about
    # as long as the rest of a turn's bookkeeping): read the global it guards when it is there
    # and no provider is configured through the environment.
    provider = getattr(_trace, "_TRACER_PROVIDER", _UNKNOWN)
    if provider is _UNKNOWN or (provider is None and _PROVIDER_FROM_ENVIRONMENT):
        provider = _trace.get_tracer_provider()
    return provider is not None and not isinstance(
        provider, _trace.ProxyTracerProvider | _trace.NoOpTracerProvider
    )


_UNKNOWN = object()
_PROVIDER_FROM_ENVIRONMENT = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ


@contextmanager
def tool_span(tracer: Tracer, call: ToolCall, run_id: str | None) -> Iterator[Span]:
    """A span around one execution; finish it with [`end_tool_span`][]."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.exposed_name,
        "gen_ai.tool.call.id": call.local_id,
        "gen_ai.tool.type": "function",
    }
    if call.tool.description:
        attributes["gen_ai.tool.description"] = call.tool.description
    if call.tool.server_id is not None:
        attributes["toolwire.server"] = call.tool.server_id
    if run_id is not None:
        attributes["toolwire.run_id"] = run_id
    if call.caller.kind != "direct":  # code the model wrote made the call
        attributes["toolwire.caller"] = call.caller.type
        if call.caller.id is not None:
            attributes["toolwire.caller.id"] = call.caller.id
    with tracer.start_as_current_span(
        f"execute_tool {call.exposed_name}",
        attributes=attributes,
        record_exception=False,  # the executor answers errors itself and reports them below
        set_status_on_exception=False,
    ) as span:
        yield span


def end_tool_span(span: Span, result: ToolResult, error: BaseException | None) -> None:
    """Mark the span failed when the call failed: ``error.type`` is the error kind the model
    is told (``timeout``, ``failed``, ...), a small fixed set; a raised exception is recorded."""
    if not result.is_error or not span.is_recording():
        return
    assert _trace is not None  # a span exists only with the API
    span.set_attribute("error.type", result.error_kind or "_OTHER")
    if error is not None:
        span.record_exception(error)
    span.set_status(_trace.Status(_trace.StatusCode.ERROR, result.text[:500]))


def recording_span() -> Span | None:
    """The current span when it records (e.g. the executor's ``execute_tool`` span around the
    tool running now), else None."""
    if _trace is None:
        return None
    span: Span = _trace.get_current_span()
    return span if span.is_recording() else None


def add_progress_event(
    span: Span, progress: float, total: float | None, message: str | None
) -> None:
    """An ``mcp.progress`` event on ``span``: a server reported progress on the call."""
    attributes: dict[str, Any] = {"progress": progress}
    if total is not None:
        attributes["total"] = total
    if message is not None:
        attributes["message"] = message
    span.add_event("mcp.progress", attributes)
