"""The governed pipeline: a turn's calls planned, decided, run and answered, and the tickets an
engine runs them by.

[`Executor`][toolwire.executor.Executor] composes the parts: the planner (pure steps
from a call and its run's record), the decider (validation, hooks, policy, approver), the runner
(limits, timeout, the handler, output caps, after-call hooks) and the run (``toolwire.runs``).
"""

from toolwire.pipeline._turns import CallOutcome, CallTicket, TurnPlan, in_groups
from toolwire.pipeline.executor import AfterHook, BeforeHook, CallContext, Executor, Veto, make_call

__all__ = [
    "AfterHook",
    "BeforeHook",
    "CallContext",
    "CallOutcome",
    "CallTicket",
    "Executor",
    "TurnPlan",
    "Veto",
    "in_groups",
    "make_call",
]
