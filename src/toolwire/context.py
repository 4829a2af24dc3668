"""What a tool and the hooks see about the call they run: [`CallContext`][], the one call
context, and the hooks' types.

A tool's function asks for it with a parameter annotated ``CallContext`` (left out of the
schema the model sees); hooks are given it; the tools of MCP servers read it from
[`current_call`][] (the executor sets it while such a tool runs). It sits below the
executor: tools import it, the executor makes it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic

from typing_extensions import TypeVar

from toolwire._function_schema import InjectedContext
from toolwire.calls import ToolCall, ToolResult
from toolwire.tool import Tool

__all__ = [
    "AfterHook",
    "BeforeHook",
    "CallContext",
    "DepsT",
    "Veto",
    "current_call",
]

DepsT = TypeVar("DepsT", default=Any)
"""The type of the dependencies a turn is given (``Executor.run(..., deps=...)``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CallContext(InjectedContext, Generic[DepsT]):
    """What hooks, and a tool's function that asks for it, see about a call.

    A function tool asks for it with a parameter annotated ``CallContext`` (or
    ``CallContext[MyDeps]``, or a subclass): that parameter is passed the call's context, and
    is no argument: it is left out of the schema the model sees. The context is never stored,
    fingerprinted or shown to the model.
    """

    call: ToolCall
    arguments: Mapping[str, Any]
    """The validated arguments as the model sent them (JSON values)."""
    principal: Any
    """Who the turn runs for."""
    run_id: str | None
    """The run the call belongs to, when the turn has one."""
    taint: frozenset[str]
    """Sources whose output is already in the model's context."""
    deps: DepsT = None  # type: ignore[assignment]
    """The dependencies the turn was given (``Executor.run(..., deps=...)``); None if none."""
    resume: Mapping[str, Any] | None = None
    """For a call whose MCP server asked for input and that is resumed: what the run kept of
    that (the questions, the answers and the server's ``request_state``), which the hub sends
    the server to continue the call; None otherwise."""

    @property
    def tool(self) -> Tool:
        """The tool called."""
        return self.call.tool

    @property
    def call_id(self) -> str:
        """The call's id: the provider's, or the one made for it when the provider sent none."""
        return self.call.local_id

    @property
    def exposed_name(self) -> str:
        """The name the model called the tool by."""
        return self.call.exposed_name


@dataclass(frozen=True, slots=True)
class Veto:
    """Returned by a before-call hook: don't run the call; the model is told ``reason``."""

    reason: str


BeforeHook = Callable[[CallContext], "Mapping[str, Any] | Veto | Awaitable[Any] | None"]
"""May return new arguments (validated again), a [`Veto`][], or None to change nothing
(arguments it changed in place count as new arguments)."""
AfterHook = Callable[[CallContext, ToolResult], "ToolResult | Awaitable[Any] | None"]
"""May return a replacement result (e.g. redacted), or None to keep it."""

current_call: contextvars.ContextVar[CallContext | None] = contextvars.ContextVar(
    "toolwire_current_call", default=None
)
"""The call the executor is running in this task (set while a tool that has a ``server_id``
runs: an MCP server's tool reads the call's run, id, principal and ``resume`` from it)."""
