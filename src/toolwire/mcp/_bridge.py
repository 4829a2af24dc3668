"""A handshake-era server's requests within a call, bridged to the gateway's 2026-07-28 client.

A server of the handshake revisions sends ``elicitation/create``, ``sampling/createMessage`` or
``roots/list`` within a call, and waits there for the answer. A 2026-07-28 client is asked
only in the answer to its call (an ``InputRequiredResult``), and answers by making the call
again with its answers. So the gateway runs such a call in a task of its own: when the
server asks, the client's call is answered with the request, as an ``InputRequiredResult``
whose ``requestState`` names the call kept waiting (sealed by the gateway's request-state
boundary, bound to the principal, like the approval form's), and the retry that brings the
answer hands it to the server and waits for the call's answer, or its next request.

The kept call lives in this process: a retry that reaches another one (another worker, or
the gateway restarted) is answered with an error saying so. A request left unanswered for
[`QUESTION_SECONDS`][] ends the call: its server is told the client did not answer, and the
call fails saying so. Nobody answers in the client's place.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc

from toolwire.calls import canonical_json
from toolwire.errors import ToolwireError
from toolwire.mcp._relay import KINDS, kind_of

__all__ = ["QUESTION_SECONDS", "Bridges", "bridged_state"]

QUESTION_SECONDS = 600.0
"""The most seconds a kept call waits for its client's answer to one request of its server."""
MAX_QUESTIONS = 10
"""Requests one kept call's server may send before the call is stopped."""
_STATE_KEY = "toolwire_bridge"
"""The key of the gateway's ``requestState`` that names a kept call."""
_REQUEST_KEY = "upstream"
"""The key of the server's request in the ``InputRequiredResult`` (one at a time)."""

Work = Callable[[Callable[[Any], Awaitable[Any]]], Awaitable[Any]]
"""A call run with its bridge: ``work(bridge)`` returns the call's answer to the client (or
raises what the client is answered with); ``bridge(request)`` returns the client's answer to
a server's request."""


class _Unanswered(ToolwireError):
    """The client did not answer the server's request (in time, or at all)."""


@dataclass(eq=False)
class _Kept:
    """One call run in the background while its client is asked its server's requests."""

    owner: str
    """The principal (its key) whose call it is: only its retry continues it."""
    call: list[str]
    """The tool's name and the arguments' digest: what a retry must be the same call of."""
    request: Any = None
    """The server's request the client was not handed yet."""
    done: bool = False
    outcome: Any = None
    """The call's answer to the client, or the exception it is answered with."""
    changed: anyio.Event = field(default_factory=anyio.Event)
    """Set when there is a request to hand, or the call is done."""
    answer: Any = None
    answered: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    asked: int = 0
    kind: str | None = None
    """The kind of the request the client was handed (``elicitation``, ``sampling``...)."""

    async def ask(self, request: Any) -> Any:
        """The client's answer to ``request`` (the bridge the call's relay uses).

        Raises:
            ToolwireError: the client did not answer in time, or too many requests.
        """
        self.asked += 1
        if self.asked > MAX_QUESTIONS:
            raise _Unanswered(f"its server sent more than {MAX_QUESTIONS} requests in one call")
        self.answer, self.answered, self.kind = None, anyio.Event(), kind_of(request)
        self.request = request
        self.changed.set()
        with anyio.move_on_after(QUESTION_SECONDS):
            await self.answered.wait()
        if not self.answered.is_set():
            raise _Unanswered(f"the client did not answer within {QUESTION_SECONDS:g} s")
        if self.answer is None:
            raise _Unanswered(f"the client's retry carried no {self.kind} answer")
        return self.answer

    async def run(self, work: Work, forget: Callable[[], None]) -> None:
        """Run the call to its end, and tell whoever waits for it."""
        outcome: Any = _Unanswered("the call was cancelled")
        try:
            with self.scope:
                try:
                    outcome = await work(self.ask)
                except Exception as exc:  # told to the request waiting for the answer
                    outcome = exc
        finally:
            forget()
            self.done, self.outcome = True, outcome
            self.changed.set()


class Bridges:
    """The calls a gateway keeps waiting for its 2026-07-28 clients' answers, by id (each
    found there only while its server's request waits for its client's retry)."""

    def __init__(self) -> None:
        self._kept: dict[str, _Kept] = {}

    async def call(
        self,
        tasks: anyio.abc.TaskGroup,
        work: Work,
        owner: str,
        call: list[str],
        track: Callable[[anyio.CancelScope], Callable[[], None]],
    ) -> Any:
        """Run ``work`` in ``tasks`` and answer with its answer, or with its server's first
        request (an ``InputRequiredResult``). A request cancelled before it is answered cancels
        the call. ``track(scope)`` registers the call's scope (the gateway ends it when it
        stops) and returns what forgets it.

        Raises:
            Exception: what ``work`` raised.
        """
        kept = _Kept(owner, call)
        untrack = track(kept.scope)
        key = secrets.token_urlsafe(16)

        def forget() -> None:
            untrack()
            self._kept.pop(key, None)

        tasks.start_soon(kept.run, work, forget)
        return await self._next(kept, key)

    async def resume(self, params: Any, owner: str, call: list[str]) -> Any:
        """Answer a retry that carries the answer to a kept call's request: hand it to the
        server and answer with the call's answer, or its next request.

        Raises:
            Exception: what the call's work raised.
        """
        key = bridged_state(params)
        # Taken out while it is answered: the same answer sent twice finds it once.
        kept = self._kept.pop(key, None) if key is not None else None
        if kept is not None and (kept.owner != owner or kept.call != call):
            self._kept[key or ""] = kept  # not this request's: left for its own
            kept = None
        if kept is None or key is None:
            return _error(
                "The call's server asked for input within the call, which waits in the gateway "
                "process that served it; this one keeps no such call (another worker, or the "
                "gateway restarted, or it ended). Make the call again."
            )
        answer = (params.input_responses or {}).get(_REQUEST_KEY)
        kept.answer = answer if _answers(answer, kept.kind) else None
        kept.answered.set()
        return await self._next(kept, key)

    async def _next(self, kept: _Kept, key: str) -> Any:
        """What the call tells next: its server's request, or its answer."""
        from mcp_types import InputRequiredResult

        while not kept.done and kept.request is None:
            try:
                await kept.changed.wait()
            except anyio.get_cancelled_exc_class():
                kept.scope.cancel()  # its client gave up on it: so does the server's call
                raise
            kept.changed = anyio.Event()
        if kept.done:
            if isinstance(kept.outcome, _Unanswered):
                return _error(f"The call stopped: {kept.outcome}.")
            if isinstance(kept.outcome, Exception):
                raise kept.outcome
            return kept.outcome
        request, kept.request = kept.request, None
        self._kept[key] = kept  # until its client's retry answers it, or the call ends
        state = canonical_json({_STATE_KEY: {"key": key, "call": kept.call}})
        return InputRequiredResult(input_requests={_REQUEST_KEY: request}, request_state=state)


def bridged_state(params: Any) -> str | None:
    """The kept call a retry's (unsealed) ``requestState`` names, or None."""
    if params.request_state is None:
        return None
    try:
        state = json.loads(params.request_state)
    except ValueError:
        return None
    kept = state.get(_STATE_KEY) if isinstance(state, dict) else None
    key = kept.get("key") if isinstance(kept, dict) else None
    return key if isinstance(key, str) else None


def _answers(answer: Any, kind: str | None) -> bool:
    """Whether ``answer`` is an answer to a request of ``kind``."""
    from mcp_types import (
        CreateMessageResult,
        CreateMessageResultWithTools,
        ElicitResult,
        ListRootsResult,
    )

    expected: dict[str, Any] = {
        "elicitation": ElicitResult,
        "sampling": CreateMessageResult | CreateMessageResultWithTools,
        "roots": ListRootsResult,
    }
    assert set(expected) == set(KINDS.values())
    return kind is not None and isinstance(answer, expected[kind])


def _error(text: str) -> Any:
    from mcp_types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(text=text)], is_error=True)
