"""Phase 1 of a turn: each call decided, in order, by carrying out the planner's steps: what
the call's record says, validation, the before-call hooks, the policy and the approver.

The decider reads the turn and writes nothing: deciding a call returns its step as a value
(``Decided``), and the executor applies it to the turn."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeAlias

from toolwire.approval import ApprovalRequest, Approver, Decision
from toolwire.calls import ToolCall, ToolResult, strip_nulls
from toolwire.context import BeforeHook, CallContext, Veto
from toolwire.errors import ConfigurationError, ToolwireError
from toolwire.pipeline._output import denied_answer, invalid_answer, log, not_run, short
from toolwire.pipeline._plan import (
    NO_RECORD,
    Answer,
    Ask,
    Go,
    Run,
    Wait,
    decided,
    from_record,
    gate,
    settled,
)
from toolwire.pipeline._runner import maybe_await
from toolwire.pipeline._turns import Planned, Turn
from toolwire.policy import Policy, PolicyContext, Verdict
from toolwire.runs import CallRecord
from toolwire.runs.store import StoreClock
from toolwire.tool import Tool

__all__ = ["Decided", "Decider", "Step"]

_EDITED = "The approver edited the arguments: "

Step: TypeAlias = Answer | Wait | Planned
"""What becomes of a decided call: answered now, waiting in the run, or planned to run."""
Decided: TypeAlias = tuple[Step, str | None]
"""A call's step, and the run id asking about it named when the turn had none (the turn is
kept in that run from then on)."""


class _Stopped(Exception):
    """A call answered before it got through (invalid arguments, a hook's veto, a failed
    redaction): carries its answer out of the helpers to ``Decider.decide``."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer


class Decider:
    """Decides a turn's calls (see [`Executor`][toolwire.Executor] for the settings).

    Args:
        policy: which calls may run.
        approver: decides the calls the policy asks about.
        before_call: hooks run after validation, before policy.
        hooked: whether hooks (before or after the call) need each call's context.
        redact: what a waiting call's request keeps of its arguments.
        approval_ttl: seconds a request for approval waits.
        clock: the run store's clock, which leases and request deadlines are judged by.
    """

    def __init__(
        self,
        *,
        policy: Policy,
        approver: Approver | Callable[[ApprovalRequest], Any] | None,
        before_call: Sequence[BeforeHook],
        hooked: bool,
        redact: Callable[[ApprovalRequest], Mapping[str, Any]] | None,
        approval_ttl: float | None,
        clock: StoreClock,
    ) -> None:
        self.policy = policy
        self.approver = approver
        self.clock = clock
        self.before_call = tuple(before_call)
        self.hooked = hooked
        self.redact = redact
        self.approval_ttl = approval_ttl

    async def decide(
        self,
        turn: Turn,
        index: int,
        call: ToolCall,
        record: CallRecord | None,
        *,
        may_rerun: bool = False,
        ticketed: Mapping[str, Any] | None = None,
    ) -> Decided:
        """Decide one call, in order: what its run's ``record`` says (read by the executor,
        waited for while another worker ran the call), then validation, hooks, policy and
        approval.

        ``may_rerun``: a call its record shows running, whose worker stopped, may run again.
        ``ticketed``: the call is decided again where its ticket runs, with the arguments
        its turn's planning made (the ticket's ``runs_with``, which its digest binds). They
        are validated and put to the policy again, which may deny them since; the hooks are
        not run again, and the approver is not asked again about a call the planning step
        let run (a ticket is made only for such a call)."""
        go: Go = NO_RECORD
        if record is not None:
            now = await self.clock.now()
            step = from_record(record, call.tool, turn.run_id, may_rerun=may_rerun, now=now)
            if not isinstance(step, Go):
                return settled(step), None
            go = step
        try:
            return await self._decide_go(turn, index, call, go, record, ticketed)
        except _Stopped as stopped:
            return stopped.answer, None

    async def _decide_go(
        self,
        turn: Turn,
        index: int,
        call: ToolCall,
        go: Go,
        record: CallRecord | None,
        ticketed: Mapping[str, Any] | None,
    ) -> Decided:
        """Validation, before-call hooks, policy and approval of a call nothing stopped."""
        tool = call.tool
        call, arguments, prefix = _arguments_to_run(call, go, ticketed)
        kwargs = _validated(call, tool, arguments, prefix)
        wanted = self.hooked or tool.needs_context
        context = turn.context(call, arguments) if wanted else None
        if self.before_call and ticketed is None:  # (a ticket's ran when it was planned)
            arguments, kwargs, context = await self._before(turn, call, arguments, kwargs, context)
        if self.policy.allows_everything and not tool.needs_approval and not go.undecided:
            return Planned(index, call, kwargs, context, record, arguments=arguments), None
        verdict = self._verdict(turn, call, arguments)
        gated = gate(
            go, verdict, has_approver=self.approver is not None, let_run=ticketed is not None
        )
        if not isinstance(gated, Ask):
            if isinstance(gated, Run):
                return Planned(index, call, kwargs, context, record, arguments=arguments), None
            return settled(gated), None
        return await self._decide_asked(
            turn, index, call, gated, record, (arguments, kwargs, context)
        )

    async def _decide_asked(
        self,
        turn: Turn,
        index: int,
        call: ToolCall,
        ask: Ask,
        record: CallRecord | None,
        running: tuple[Mapping[str, Any], dict[str, Any], CallContext | None],
    ) -> Decided:
        """A call the policy asks about: the approver's decision (which may edit the
        arguments), or the call waiting in the turn's run, named now if it has none."""
        arguments, kwargs, context = running
        run_id = turn.run_id or f"run_{uuid.uuid4().hex}"  # asked about: the turn keeps a run
        named = None if turn.run_id is not None else run_id
        try:  # (the turn is kept in the run it named, whatever the answer)
            decision = await self._ask(turn, run_id, call, arguments, ask)
            if isinstance(decision, Wait):
                return decision, named
            if decision.allowed and decision.arguments is not None:
                # An approver answering now edited them: they run, if the policy agrees.
                arguments, kwargs, context = self._approved_edit(turn, call, decision, context)
        except _Stopped as stopped:
            return stopped.answer, named
        step = decided(decision)
        if isinstance(step, Run):
            return Planned(index, call, kwargs, context, record, arguments=arguments), named
        return settled(step), named

    async def _before(
        self,
        turn: Turn,
        call: ToolCall,
        arguments: Mapping[str, Any],
        kwargs: dict[str, Any],
        context: CallContext | None,
    ) -> tuple[Mapping[str, Any], dict[str, Any], CallContext | None]:
        """The arguments, the handler's keyword arguments and the context once every
        before-call hook has had its say.

        Raises:
            _Stopped: a hook stopped the call (vetoed it, failed, or rewrote its arguments
                into invalid ones).
        """
        for hook in self.before_call:
            assert context is not None  # made whenever there are hooks
            try:
                # The hook's own copy: what it changes in place is a rewrite, checked as one
                # (else the policy would judge arguments other than those that run).
                shown = copy.deepcopy(dict(arguments))
                answer = await maybe_await(hook(replace(context, arguments=shown)))
                if answer is None and shown != arguments:
                    answer = shown
                elif answer is not None and not isinstance(answer, Veto):
                    answer = dict(answer)
            except Exception as exc:  # the call's own failure: it does not run, the turn goes on
                log.exception("a before-call hook failed on %s", call.exposed_name)
                raise _Stopped(Answer(not_run("a before-call hook", exc))) from None
            if isinstance(answer, Veto):
                raise _Stopped(Answer(ToolResult.error("denied", answer.reason)))
            if answer is not None:
                arguments = answer
                kwargs = _validated(call, call.tool, arguments, "A hook rewrote the arguments: ")
                context = turn.context(call, arguments)
        return arguments, kwargs, context

    def _approved_edit(
        self, turn: Turn, call: ToolCall, decision: Decision, context: CallContext | None
    ) -> tuple[Mapping[str, Any], dict[str, Any], CallContext | None]:
        """The arguments, keyword arguments and context of arguments an approver edited as
        they approved, validated and put to the policy again.

        Raises:
            _Stopped: they are invalid, or the policy denies them.
        """
        assert decision.arguments is not None
        arguments = dict(decision.arguments)
        kwargs = _validated(call, call.tool, arguments, _EDITED)
        verdict = self._verdict(turn, call, arguments)
        if verdict.effect == "deny":
            raise _Stopped(Answer(denied_answer(verdict)))
        return arguments, kwargs, (turn.context(call, arguments) if context is not None else None)

    def _verdict(self, turn: Turn, call: ToolCall, arguments: Mapping[str, Any]) -> Verdict:
        try:
            return self.policy.evaluate(
                PolicyContext(
                    tool=call.tool,
                    arguments=arguments,
                    principal=turn.principal,
                    taint=turn.taint,
                    exposed_name=call.exposed_name,
                    caller=call.caller,
                    origins=turn.origins(arguments),
                )
            )
        except Exception as exc:  # fail closed
            log.exception("the policy failed on %s", call.exposed_name)
            return Verdict("deny", f"the policy could not be evaluated ({short(exc)})")

    async def _ask(
        self, turn: Turn, run_id: str, call: ToolCall, arguments: Mapping[str, Any], ask: Ask
    ) -> Decision | Wait:
        """The approver's decision on the call, or the call waiting in run ``run_id``. A
        deferred call waits without asking an immediate approver.

        Raises:
            _Stopped: its request could not be redacted.
        """
        if self.approver is None and not ask.deferred:
            raise ConfigurationError(
                f"the policy asks for approval of {call.tool.qualified_name!r} but the "
                "executor has no approver"
            )
        await self.clock.now()  # the request's deadline is in the store's time
        request = self.request(turn, call, arguments, ask.reason, run_id=run_id)
        if ask.asked is not None:  # the request its run keeps: asked then, due then
            requested_at, expires_at = ask.asked
            request = replace(request, requested_at=requested_at, expires_at=expires_at)
        decision = None
        if self.approver is not None and not ask.deferred:
            try:
                decision = await maybe_await(self.approver(request))
            except ToolwireError:
                raise
            except Exception as exc:  # fail closed: an approver that fails has not approved
                log.exception("the approver failed on %s", call.exposed_name)
                return Decision("deny", f"the approver failed ({short(exc)})")
        if decision is None:
            kept = self.kept(request)
            if isinstance(kept, ToolResult):
                raise _Stopped(Answer(kept))
            return Wait(kept)
        if not isinstance(decision, Decision):
            raise ConfigurationError(
                f"an approver returned a {type(decision).__name__}, not a Decision"
            )
        return decision

    def request(
        self,
        turn: Turn,
        call: ToolCall,
        arguments: Mapping[str, Any],
        reason: str | None,
        *,
        run_id: str | None = None,
    ) -> ApprovalRequest:
        """What a human is shown of a call that waits in the turn's run (``run_id`` when the
        turn has none yet), from now until the executor's ``approval_ttl``."""
        run_id = run_id or turn.run_id
        assert run_id is not None
        now = self.clock.current()
        return ApprovalRequest(
            run_id=run_id,
            call_id=call.local_id,
            tool=call.tool,
            exposed_name=call.exposed_name,
            arguments=arguments,
            principal=turn.principal,
            reason=reason,
            requested_at=now,
            expires_at=now + self.approval_ttl if self.approval_ttl is not None else None,
        )

    def kept(self, request: ApprovalRequest) -> ApprovalRequest | ToolResult:
        """``request`` as the run keeps it, which is what the application is shown: its
        arguments passed through ``redact``; the call's answer when that fails (nothing
        unredacted is kept)."""
        try:
            kept = request.arguments if self.redact is None else self.redact(request)
            kept = dict(kept)
        except Exception as exc:  # fail closed: nothing unredacted is kept
            log.exception("redacting the request of %s failed", request.exposed_name)
            return not_run("redacting its request", exc)
        return replace(request, arguments=kept)


def _validated(
    call: ToolCall, tool: Tool, arguments: Mapping[str, Any], prefix: str
) -> dict[str, Any]:
    """The handler's keyword arguments (``prefix`` says whose arguments were refused).

    Raises:
        _Stopped: the arguments are invalid.
    """
    try:
        return tool.validate_arguments(arguments)
    except Exception as exc:
        raise _Stopped(Answer(invalid_answer(tool, exc, prefix, call.exposed_name))) from None


def _arguments_to_run(
    call: ToolCall, go: Go, ticketed: Mapping[str, Any] | None
) -> tuple[ToolCall, Mapping[str, Any], str]:
    """The call, the arguments it runs with and how a refusal of them is introduced:
    arguments a human edited are what runs, so validation, hooks and policy see them; nulls a
    strict schema made the model send mean "left out"; a ticket's call runs with what its
    turn's planning made (``ticketed``: its digest binds them), checked here as any other."""
    if ticketed is None and go.recorded is None and not call.null_paths:
        return call, call.arguments, ""  # the common call: as the model sent it
    edited = go.recorded.arguments if go.recorded is not None else None
    if edited is not None and ticketed is None:
        return call, dict(edited), _EDITED
    if call.null_paths:
        call = replace(call, arguments=_without_strict_nulls(call.tool, call))
    return call, (ticketed if ticketed is not None else call.arguments), ""


def _without_strict_nulls(tool: Tool, call: ToolCall) -> dict[str, Any]:
    """The call's arguments without the nulls strict mode made the model send; but a null the
    tool's own schema takes (one branch of an ``anyOf`` nullable where another made it so) is
    the tool's, kept when stripping it would make the arguments invalid."""
    stripped = strip_nulls(call.arguments, call.null_paths)
    if stripped == call.arguments or _fits(tool, stripped) or not _fits(tool, call.arguments):
        return stripped
    return call.arguments


def _fits(tool: Tool, arguments: Mapping[str, Any]) -> bool:
    try:
        tool.validate_arguments(arguments)
    except ToolwireError:  # InvalidArguments, or a schema that has no validator
        return False
    return True
