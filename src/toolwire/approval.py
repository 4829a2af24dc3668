"""Approval of calls the policy marked ``ask``.

An approver answers :func:`allow`, :func:`deny` (the model is told why and the turn goes on) or
:func:`halt` (denied, and the caller should stop its agent loop). Immediate approvers answer at
once; :class:`DeferredApproval` makes the executor raise :class:`ApprovalPending` so a human can
decide later, after which the caller runs the same calls again with the same ``run_id``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from toolwire.errors import ConfigurationError, ToolwireError
from toolwire.tool import Tool

__all__ = [
    "ApprovalPending",
    "ApprovalRequest",
    "Approver",
    "AutoApprove",
    "CallbackApproval",
    "Decision",
    "DeferredApproval",
    "allow",
    "deny",
    "halt",
]


@dataclass(frozen=True, slots=True)
class Decision:
    """An approver's answer."""

    kind: Literal["allow", "deny", "halt"]
    reason: str | None = None

    @property
    def allowed(self) -> bool:
        return self.kind == "allow"


def allow() -> Decision:
    """Run the call."""
    return Decision("allow")


def deny(reason: str | None = None) -> Decision:
    """Don't run the call; the model is told ``reason`` and the turn goes on."""
    return Decision("deny", reason)


def halt(reason: str | None = None) -> Decision:
    """Don't run the call, nor anything else of the turn; the caller should stop its loop."""
    return Decision("halt", reason)


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequest:
    """A call waiting for a decision."""

    run_id: str
    call_id: str
    """The call's local id (the provider's id when it sent one); key decisions by it."""
    tool: Tool
    exposed_name: str
    arguments: Mapping[str, Any]
    """The validated arguments the tool would run with."""
    principal: Any
    reason: str | None
    """Why the policy asked."""


@runtime_checkable
class Approver(Protocol):
    """Decides ``ask`` calls. Return a :class:`Decision`, or None to defer the decision."""

    def __call__(
        self, request: ApprovalRequest
    ) -> Decision | Awaitable[Decision | None] | None: ...


class AutoApprove:
    """Approves every call (for trusted tools, tests and demos)."""

    def __call__(self, request: ApprovalRequest) -> Decision:
        return allow()


class CallbackApproval:
    """Asks ``callback(request)`` (sync or async) for an immediate decision.

    The callback may return a :class:`Decision` or a bool (True allows, False denies).
    """

    def __init__(self, callback: Callable[[ApprovalRequest], Any]) -> None:
        self.callback = callback

    async def __call__(self, request: ApprovalRequest) -> Decision:
        answer = self.callback(request)
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, Decision):
            return answer
        if isinstance(answer, bool):
            return allow() if answer else deny()
        raise ConfigurationError(
            f"an approval callback returns a Decision or a bool, not {type(answer).__name__}"
        )


class DeferredApproval:
    """Never decides at once: calls without a recorded decision make the executor raise
    :class:`ApprovalPending`. Record decisions with ``Executor.decide`` (or
    ``toolwire.decide``) and run the same calls again with the same ``run_id``."""

    def __call__(self, request: ApprovalRequest) -> None:
        return None


class ApprovalPending(ToolwireError):
    """Some calls wait for a human decision; nothing was answered for them yet.

    Calls of the turn that needed no approval have already run and are remembered under
    ``run_id``: running the same calls again with that ``run_id`` answers them from the store.

    Attributes:
        run_id: the run to resume (generated when the caller gave none).
        pending: the calls waiting, in call order.
    """

    def __init__(self, run_id: str, pending: Sequence[ApprovalRequest]) -> None:
        self.run_id = run_id
        self.pending = list(pending)
        names = ", ".join(f"{p.exposed_name} ({p.call_id})" for p in self.pending)
        super().__init__(f"run {run_id!r}: approval needed for {names}")
