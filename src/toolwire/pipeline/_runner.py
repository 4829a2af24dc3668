"""Running one approved call: the concurrency limits, its timeout and cancel scope, the tool's
handler (a worker thread for a sync one), the output caps and the after-call hooks, in a span
when traced. Whatever the tool does, the result is an answer: a failure is the call's own."""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import anyio

from toolwire._limits import acquire
from toolwire._tracing import end_tool_span
from toolwire.calls import ToolCall, ToolResult
from toolwire.context import AfterHook, CallContext, current_call
from toolwire.errors import ConfigurationError
from toolwire.inputs import InputDeferred
from toolwire.pipeline._output import cap_output, failure_message, log, short
from toolwire.tool import Tool

__all__ = ["CANCELLED", "Control", "Job", "Runner", "maybe_await", "unanswerable"]

CANCELLED = ToolResult.error("cancelled", "The call was cancelled before it finished.")


class Control(Protocol):
    """What a call's run shares with its turn: the turn's cancellation, and in a turn of one
    call (which opens no scope of its own) the scope that cancels it."""

    scope: anyio.CancelScope | None
    cancelled: bool


async def maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


@dataclass(slots=True, kw_only=True)
class Job:
    """One call about to run: its handler's keyword arguments, the context its hooks see
    (None when nothing asks for one) and the context an MCP tool's handler reads."""

    call: ToolCall
    kwargs: dict[str, Any]
    context: CallContext | None
    in_flight: CallContext | None


def unanswerable(call: ToolCall, exc: Exception) -> ToolResult:
    """The answer to a call whose answer toolwire's own steps failed to make, after the tool
    may have run."""
    log.error("answering %s failed", call.exposed_name, exc_info=exc)
    return ToolResult.error(
        "failed",
        f"The call's answer could not be made ({short(exc)}); whether it took effect is unknown.",
    )


class Runner:
    """Runs approved calls under the executor's limits (see [`Executor`][toolwire.Executor])."""

    def __init__(
        self,
        *,
        timeout: float | None,
        max_concurrency: int,
        max_concurrency_per_server: int | None,
        after_call: Sequence[AfterHook],
        max_output_chars: int,
        max_media_chars: int,
    ) -> None:
        """
        Raises:
            ConfigurationError: a limit out of its range.
        """
        if max_output_chars < 1 or max_media_chars < 0:
            raise ConfigurationError(
                "max_output_chars must be at least 1 and max_media_chars at least 0"
            )
        if max_concurrency < 1:
            raise ConfigurationError("max_concurrency must be at least 1")
        if max_concurrency_per_server is not None and max_concurrency_per_server < 1:
            raise ConfigurationError("max_concurrency_per_server must be at least 1 (or None)")
        if timeout is not None and not timeout > 0:
            raise ConfigurationError("timeout must be a positive number of seconds")
        self.timeout = timeout
        self.after_call = tuple(after_call)
        self.max_output_chars = max_output_chars
        self.max_media_chars = max_media_chars
        self.limiter = anyio.Semaphore(max_concurrency)
        self._per_server = max_concurrency_per_server
        self._server_limiters: dict[str, anyio.Semaphore] = {}

    def timeout_of(self, tool: Tool | None) -> float | None:
        """The seconds a call of ``tool`` may run (its own timeout wins)."""
        if tool is not None and tool.timeout is not None:
            return tool.timeout
        return self.timeout

    async def run(self, job: Job, control: Control, span: Any = None) -> ToolResult:
        """Run the call: its answer, whatever the tool does (raises only ``InputDeferred``,
        when its server waits for input, and the cancellation of the task itself). ``span``
        is its tracing span, if any."""
        call = job.call
        if control.cancelled:
            return CANCELLED
        tool = call.tool
        timeout = tool.timeout if tool.timeout is not None else self.timeout
        alone = control.scope is None
        # Scopes are the dearest part of running a call: a call of a larger turn without a
        # timeout gets none (the turn's scope cancels it).
        scope = _scope(timeout) if alone or timeout is not None else None
        error: BaseException | None = None
        value: Any = None  # (none when the scope ended the call)
        try:
            with scope if scope is not None else nullcontext():
                if alone:
                    control.scope = scope
                await acquire(self.limiter)
                told = current_call.set(job.in_flight) if job.in_flight is not None else None
                try:
                    if tool.is_async and self._per_server is None:
                        # inline: each frame in the chain costs every resume
                        value = await tool.handler(**job.kwargs)  # type: ignore[misc]
                    else:
                        value = await self._limited(tool, job.kwargs)
                finally:
                    self.limiter.release()
                    if told is not None:
                        current_call.reset(told)
            result = _ended(scope, control, call, timeout, value)
        except InputDeferred:
            raise  # the call pauses: its server waits for input
        except BaseException as exc:
            error, result = exc, _failed(call, exc)
        if span is not None:
            end_tool_span(span, result, error)
        result = cap_output(result, self.max_output_chars, self.max_media_chars)
        return await self._after(job, result) if self.after_call else result

    async def _limited(self, tool: Tool, kwargs: dict[str, Any]) -> Any:
        """The handler's value, under its server's limit when it has one."""
        server_limiter = self._server_limiter(tool)
        if server_limiter is None:
            return await _invoke(tool, kwargs)
        async with server_limiter:
            return await _invoke(tool, kwargs)

    async def _after(self, job: Job, result: ToolResult) -> ToolResult:
        """The result as the after-call hooks leave it; withheld when one fails."""
        for hook in self.after_call:
            assert job.context is not None  # made whenever there are hooks
            try:
                replaced = await maybe_await(hook(job.context, result))
            except Exception as exc:  # the result may be unredacted: withhold it
                log.exception("an after-call hook failed on %s", job.call.exposed_name)
                return ToolResult.error(
                    "failed",
                    f"The call ran, but its result is withheld: an after-call hook failed "
                    f"({short(exc)}).",
                )
            if replaced is not None:
                replaced_result = ToolResult.from_value(replaced)
                result = cap_output(replaced_result, self.max_output_chars, self.max_media_chars)
        return result

    def _server_limiter(self, tool: Tool) -> anyio.Semaphore | None:
        if self._per_server is None or tool.server_id is None:
            return None
        limiter = self._server_limiters.get(tool.server_id)
        if limiter is None:
            limiter = self._server_limiters[tool.server_id] = anyio.Semaphore(self._per_server)
        return limiter


def _scope(timeout: float | None) -> anyio.CancelScope:
    """The call's own scope: it carries its deadline and, in a one-call turn (which opens no
    scope of its own), the turn's cancellation."""
    return anyio.CancelScope(
        deadline=anyio.current_time() + timeout if timeout is not None else math.inf
    )


def _ended(
    scope: anyio.CancelScope | None,
    control: Control,
    call: ToolCall,
    timeout: float | None,
    value: Any,
) -> ToolResult:
    """The answer of a call whose handler returned ``value``, or whose scope ended it."""
    if scope is not None and scope.cancelled_caught:
        if control.cancelled:
            return CANCELLED
        return ToolResult.error(
            "timeout", f"Tool {call.exposed_name!r} timed out after {timeout:g} seconds."
        )
    return ToolResult.from_value(value)  # never raises: unencodable is an answer


def _failed(call: ToolCall, exc: BaseException) -> ToolResult:
    """The answer of a call whose tool raised ``exc`` (a tool raising ``CancelledError``
    itself included): the model is told, the turn goes on.

    Raises:
        BaseException: ``exc`` again, when it is this task's cancellation (or the process
            stopping): not the call's.
    """
    if not _raised_by_the_tool(exc):
        raise exc
    return ToolResult.error("failed", failure_message(call.exposed_name, exc))


async def _invoke(tool: Tool, kwargs: dict[str, Any]) -> Any:
    handler = tool.handler
    if handler is None:
        raise RuntimeError(f"tool {tool.qualified_name!r} has no handler to run")
    if tool.is_async:
        return await handler(**kwargs)
    # Sync tools run in a worker thread; on timeout or cancellation the turn moves on and the
    # thread is abandoned (Python cannot stop it).
    value = await anyio.to_thread.run_sync(partial(handler, **kwargs), abandon_on_cancel=True)
    return await value if inspect.isawaitable(value) else value


def _raised_by_the_tool(exc: BaseException) -> bool:
    """True when an exception came from the tool itself rather than from a cancellation of
    this task: a tool that raises ``CancelledError`` on its own must fail as its call, not
    cancel the turn. Interrupts and exits are never the tool's."""
    if isinstance(exc, KeyboardInterrupt | SystemExit | GeneratorExit):
        return False
    if isinstance(exc, BaseExceptionGroup):
        return all(_raised_by_the_tool(inner) for inner in exc.exceptions)
    cancelled = anyio.get_cancelled_exc_class()
    if cancelled is asyncio.CancelledError and isinstance(exc, asyncio.CancelledError):
        task = asyncio.current_task()  # a cancel scope cancelling it has asked the task
        return task is not None and task.cancelling() == 0
    return not isinstance(exc, cancelled)
