"""The governed pipeline's executor.

Its home is ``toolwire.pipeline.executor``; this is the path the documentation names."""

from toolwire.pipeline.executor import (
    AfterHook,
    BeforeHook,
    CallContext,
    CallOutcome,
    CallTicket,
    Executor,
    Veto,
    make_call,
)

__all__ = [
    "AfterHook",
    "BeforeHook",
    "CallContext",
    "CallOutcome",
    "CallTicket",
    "Executor",
    "Veto",
    "make_call",
]
