"""Progress of long-running MCP calls.

Every call of the hub asks its server for progress. Each ``notifications/progress`` the server
sends for a call restarts the call's idle clock (its server's ``timeout``), and is reported to
the hub's ``on_progress`` hook and as an ``mcp.progress`` event on the current OpenTelemetry
span.
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import MappingProxyType, TracebackType
from typing import Any

import anyio

from toolwire._tracing import add_progress_event, recording_span
from toolwire.tool import exposed_name_for

__all__ = ["CallProgress", "Outstanding", "ProgressContext", "ProgressHook"]

_log = logging.getLogger("toolwire")

_MESSAGE_CAP = 1000
"""Characters of a server's progress message passed on; the rest is cut."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgressContext:
    """Which call a progress notification is about (what ``Hub(on_progress=...)`` is given).

    The executor's call id and run id are not in it: a hub's tool is not told them.
    """

    server: str
    """The hub's name for the server."""
    tool: str
    """The tool's name on its server."""
    exposed_name: str
    """The name the model calls the tool by (``server__tool``)."""
    arguments: Mapping[str, Any]
    """The arguments the call was sent with (read-only)."""
    call_number: int
    """The hub's count of its calls, from 1: tells concurrent calls of one tool apart."""


ProgressHook = Callable[
    [ProgressContext, float, "float | None", "str | None"], "Awaitable[None] | None"
]
"""``on_progress(context, progress, total, message)``, a function or a coroutine function;
``total`` and ``message`` are None when the server sent none."""


class Outstanding:
    """Counts the notification handlers of one call still running, so that its answer can wait
    for them: the SDK runs each notification's handler in a task of its own, which may still be
    running when the call's answer arrives, and a report or log message passed on after the
    answer is lost to a caller forwarding it (the gateway's client)."""

    __slots__ = ("_drained", "_running")

    def __init__(self) -> None:
        self._running = 0
        self._drained: anyio.Event | None = None

    @contextmanager
    def running(self) -> Iterator[None]:
        """Around one handler; entered before its first await (the SDK starts the handler's
        task before it resumes the call's waiter, so it is counted by then)."""
        self._running += 1
        try:
            yield
        finally:
            self._running -= 1
            if not self._running and self._drained is not None:
                self._drained.set()

    async def drained(self, limit: float) -> None:
        """Wait, up to ``limit`` seconds, for the handlers running now to finish."""
        if self._running:
            self._drained = anyio.Event()
            with anyio.move_on_after(limit):
                await self._drained.wait()


class CallProgress:
    """One call's progress: its idle clock, and where its notifications are reported.

    Used as a context manager around the request (the idle clock runs inside it) and given to
    the SDK as the request's progress callback (which makes the SDK send a progress token).
    """

    __slots__ = (
        "_context",
        "_forward",
        "_hook",
        "_lock",
        "_parts",
        "_span",
        "_watch",
        "done",
        "handlers",
        "idle",
        "reports",
    )

    def __init__(
        self,
        idle: float | None,
        hook: ProgressHook | None,
        *,
        server: str,
        tool: str,
        arguments: Mapping[str, Any],
        call_number: int,
        forward: Callable[[float, float | None, str | None], Awaitable[None]] | None = None,
    ) -> None:
        self.idle = idle
        """Seconds the call may go without progress; None for no limit."""
        self._watch: anyio.CancelScope | None = None
        self._hook = hook
        self._forward = forward
        """Sends each report on to the client that made the call (a gateway's), after the hook."""
        self._lock: anyio.Lock | None = None
        self._span = recording_span()  # the span around the call, read in its own task
        self._parts = (server, tool, arguments, call_number)  # the context, made when needed
        self._context: ProgressContext | None = None
        self.reports = 0
        """Progress notifications received while the call ran."""
        self.done = False
        self.handlers = Outstanding()
        """Its notifications' handlers (progress, and log messages passed on) still running."""

    def __enter__(self) -> CallProgress:
        """Start the idle clock."""
        if self.idle is not None:
            self._watch = anyio.CancelScope(deadline=anyio.current_time() + self.idle)
            self._watch.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        self.done = True
        if self._watch is None:
            return False
        return self._watch.__exit__(kind, exc, traceback)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Stop the idle clock while the application answers a question the server asked
        (the server waits for the answer, not the other way round); it restarts after."""
        watch = self._watch
        if watch is None or self.idle is None:
            yield
            return
        watch.deadline = math.inf
        try:
            yield
        finally:
            if not self.done and not watch.cancel_called:
                watch.deadline = anyio.current_time() + self.idle

    @property
    def expired(self) -> bool:
        """True once the idle clock ran out (the request was cancelled, or is being)."""
        return self._watch is not None and self._watch.cancel_called

    def timed_out(self) -> str:
        """What the model is told when the idle clock ran out."""
        name = exposed_name_for(self._parts[1], self._parts[0])
        if not self.reports:  # the executor's words for a timeout
            return f"Tool {name!r} timed out after {self.idle:g} seconds."
        reports = f"{self.reports} report" + ("s" if self.reports != 1 else "")
        return (
            f"Tool {name!r} timed out: no progress for {self.idle:g} seconds after its "
            f"last progress report ({reports})."
        )

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        with self.handlers.running():
            await self._report(progress, total, message)

    async def _report(self, progress: float, total: float | None, message: str | None) -> None:
        if message is not None and len(message) > _MESSAGE_CAP:
            message = message[:_MESSAGE_CAP]
        if not self.done:  # a late notification neither revives the call nor its ended span
            self.reports += 1
            if self._watch is not None and self.idle is not None:
                self._watch.deadline = anyio.current_time() + self.idle
            if self._span is not None:
                add_progress_event(self._span, progress, total, message)
        hook = self._hook
        if hook is None and self._forward is None:
            return
        if self._context is None:
            server, tool, arguments, number = self._parts
            self._context = ProgressContext(
                server=server,
                tool=tool,
                exposed_name=exposed_name_for(tool, server),
                arguments=MappingProxyType(dict(arguments)),
                call_number=number,
            )
        if self._lock is None:
            self._lock = anyio.Lock()
        # The SDK runs each notification's callback as a task of its own, in order; the lock
        # (first come, first served) keeps an async hook's reports of a call in that order.
        async with self._lock:
            try:
                value = hook(self._context, progress, total, message) if hook else None
                if inspect.isawaitable(value):
                    await value
            except Exception:  # the application's hook never breaks the call
                _log.exception("the on_progress hook failed on %s", self._context.exposed_name)
            if self._forward is not None:
                try:
                    await self._forward(progress, total, message)
                except Exception:  # a client gone is no failure of the call
                    _log.debug("a progress report of %s was not passed on", self._context.tool)
