"""Phase 1 of a turn: each call decided, in order, by carrying out the planner's steps: what
the call's record says, validation, the before-call hooks, the policy and the approver."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from toolwire.approval import ApprovalRequest, Approver, Decision
from toolwire.calls import RejectedCall, ToolCall, ToolResult, strip_nulls
from toolwire.context import BeforeHook, CallContext, Veto
from toolwire.errors import ConfigurationError, ToolwireError
from toolwire.pipeline._output import denied_answer, invalid_answer, log, not_run, short
from toolwire.pipeline._plan import (
    NO_RECORD,
    Answer,
    Ask,
    Go,
    Refuse,
    Run,
    Wait,
    decided,
    from_record,
    gate,
    refusal,
)
from toolwire.pipeline._runner import maybe_await
from toolwire.pipeline._turns import NOT_RUN, CallOutcome, Planned, Turn
from toolwire.policy import Policy, PolicyContext, Verdict
from toolwire.runs import CallRecord
from toolwire.runs.store import StoreClock
from toolwire.tool import Tool

__all__ = ["Decider"]

_EDITED = "The approver edited the arguments: "


class Decider:
    """Decides a turn's calls (see [`Executor`][toolwire.Executor] for the settings).

    Args:
        policy: which calls may run.
        approver: decides the calls the policy asks about.
        before_call: hooks run after validation, before policy.
        hooked: whether hooks (before or after the call) need each call's context.
        redact: what a waiting call's request keeps of its arguments.
        approval_ttl: seconds a request for approval waits.
        may_rerun: whether a call whose worker stopped may run again.
        wait_bound: seconds to wait for a call another live worker runs.
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
        may_rerun: Callable[[ToolCall], bool],
        wait_bound: Callable[[Tool | None], float],
        clock: StoreClock,
    ) -> None:
        self.policy = policy
        self.approver = approver
        self.clock = clock
        self.before_call = tuple(before_call)
        self.hooked = hooked
        self.redact = redact
        self.approval_ttl = approval_ttl
        self.may_rerun = may_rerun
        self.wait_bound = wait_bound

    async def plan(
        self,
        turn: Turn,
        index: int,
        item: ToolCall | RejectedCall,
        *,
        ticketed: Mapping[str, Any] | None = None,
    ) -> None:
        """Decide one call, in order: what its run's record says, then validation, hooks,
        policy and approval. Nobody is asked anything more once the turn is halted.

        ``ticketed``: the call is decided again where its ticket runs, with the arguments
        its turn's planning made (the ticket's ``runs_with``, which its digest binds). They
        are validated and put to the policy again, which may deny them since; the hooks are
        not run again, and the approver is not asked again about a call the planning step
        let run (a ticket is made only for such a call)."""
        assert isinstance(item, ToolCall)  # rejected calls were answered on admission
        if turn.halted:
            if item.local_id in turn.known:  # what the run's answer replaces
                turn.seen[index] = turn.known[item.local_id]
            turn.finish(index, NOT_RUN)
            return
        record = await self._record_of(turn, item) if turn.known else None
        if record is None:
            await self._plan_go(turn, index, item, NO_RECORD, None, ticketed)
            return
        turn.seen[index] = record
        may_rerun = record.state == "running" and self.may_rerun(item)
        now = await self.clock.now()
        step = from_record(record, item.tool, turn.run_id, may_rerun=may_rerun, now=now)
        if isinstance(step, Go):
            await self._plan_go(turn, index, item, step, record, ticketed)
        else:
            self.apply(turn, index, step)

    async def _record_of(self, turn: Turn, call: ToolCall) -> CallRecord | None:
        """The run's record of the call, waited for while another live worker runs it.

        Raises:
            ConfigurationError: the run holds another call (other arguments) under its id.
        """
        known = turn.known.get(call.local_id)
        if known is None or turn.run is None:
            return None
        record: CallRecord | None = known
        if known.state == "running":  # another worker's, maybe: waited for while it runs
            bound = self.wait_bound(call.tool)
            record = await turn.run.unless_running(call.local_id, known, bound)
        if record is not None and record.fingerprint != turn.fingerprint(call):
            raise ConfigurationError(
                f"run {turn.run_id!r} already has a call {call.local_id!r} with other "
                "arguments; use a new run id for a new turn"
            )
        return record

    async def _plan_go(
        self,
        turn: Turn,
        index: int,
        call: ToolCall,
        go: Go,
        record: CallRecord | None,
        ticketed: Mapping[str, Any] | None = None,
    ) -> None:
        """Validation, before-call hooks, policy and approval of a call nothing stopped."""
        tool = call.tool
        call, arguments, prefix = _arguments_to_run(call, go, ticketed)
        kwargs = self._validated(turn, index, tool, arguments, prefix)
        if kwargs is None:
            return
        wanted = self.hooked or tool.context_parameter is not None
        context = turn.context(call, arguments) if wanted else None
        if self.before_call and ticketed is None:  # (a ticket's ran when it was planned)
            hooked = await self._before(turn, index, call, arguments, kwargs, context)
            if hooked is None:
                return
            arguments, kwargs, context = hooked
        if self.policy.allows_everything and not tool.needs_approval and not go.undecided:
            turn.planned.append(Planned(index, call, kwargs, context, record, arguments=arguments))
            return
        verdict = self._verdict(turn, call, arguments)
        gated = gate(
            go, verdict, has_approver=self.approver is not None, let_run=ticketed is not None
        )
        step: Run | Answer | Refuse
        if isinstance(gated, Ask):
            asked = await self._asked(
                turn, index, call, arguments, gated, (arguments, kwargs, context)
            )
            if asked is None:
                return  # waits (recorded on the turn), or answered
            step, (arguments, kwargs, context) = asked
        else:
            step = gated
        if isinstance(step, Run):
            turn.planned.append(Planned(index, call, kwargs, context, record, arguments=arguments))
        else:
            self.apply(turn, index, step)

    async def _asked(
        self,
        turn: Turn,
        index: int,
        call: ToolCall,
        arguments: Mapping[str, Any],
        ask: Ask,
        running: tuple[Mapping[str, Any], dict[str, Any], CallContext | None],
    ) -> tuple[Run | Refuse, tuple[Mapping[str, Any], dict[str, Any], CallContext | None]] | None:
        """The approver's decision as a step, with the arguments, keyword arguments and
        context the call runs with (an approver answering now may edit the arguments); None
        when the call waits or has been answered."""
        decision = await self._ask(turn, index, call, arguments, ask)
        if decision is None:
            return None
        if decision.allowed and decision.arguments is not None:
            # An approver answering now edited them: they run, if the policy agrees.
            approved = self._approved_edit(turn, index, call, decision.arguments, running[2])
            if approved is None:
                return None
            running = approved
        return decided(decision), running

    def apply(self, turn: Turn, index: int, step: Answer | Refuse | Wait) -> None:
        """Carry out a step that answers the call now, or puts it up as waiting."""
        if isinstance(step, Wait):
            turn.waiting.append((index, step.request))
            if step.kept:
                turn.kept.add(index)
            return
        answer = refusal(step.decision) if isinstance(step, Refuse) else step
        turn.halted = turn.halted or answer.halted  # a replayed halt still stops the turn
        turn.outcomes[index] = CallOutcome(
            item=turn.items[index],
            result=answer.result,
            from_store=answer.from_store,
            halted=answer.halted,
        )
        if answer.kept:
            turn.kept.add(index)

    async def _before(
        self,
        turn: Turn,
        index: int,
        call: ToolCall,
        arguments: Mapping[str, Any],
        kwargs: dict[str, Any],
        context: CallContext | None,
    ) -> tuple[Mapping[str, Any], dict[str, Any], CallContext | None] | None:
        """The arguments, the handler's keyword arguments and the context once every
        before-call hook has had its say; None with the call answered when one stops it."""
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
                turn.finish(index, not_run("a before-call hook", exc))
                return None
            if isinstance(answer, Veto):
                turn.finish(index, ToolResult.error("denied", answer.reason))
                return None
            if answer is not None:
                arguments = answer
                prefix = "A hook rewrote the arguments: "
                rewritten = self._validated(turn, index, call.tool, arguments, prefix)
                if rewritten is None:
                    return None
                kwargs = rewritten
                context = turn.context(call, arguments)
        return arguments, kwargs, context

    def _approved_edit(
        self,
        turn: Turn,
        index: int,
        call: ToolCall,
        edited: Mapping[str, Any],
        context: CallContext | None,
    ) -> tuple[Mapping[str, Any], dict[str, Any], CallContext | None] | None:
        """The arguments, keyword arguments and context of arguments an approver edited as
        they approved, validated and put to the policy again; None with the call answered
        otherwise."""
        arguments = dict(edited)
        kwargs = self._validated(turn, index, call.tool, arguments, _EDITED)
        if kwargs is None:
            return None
        verdict = self._verdict(turn, call, arguments)
        if verdict.effect == "deny":
            turn.finish(index, denied_answer(verdict))
            return None
        return arguments, kwargs, (turn.context(call, arguments) if context is not None else None)

    def _validated(
        self, turn: Turn, index: int, tool: Tool, arguments: Mapping[str, Any], prefix: str
    ) -> dict[str, Any] | None:
        """The handler's keyword arguments, or None with the call answered (``prefix`` says
        whose arguments were refused)."""
        try:
            return tool.validate_arguments(arguments)
        except Exception as exc:
            name = getattr(turn.items[index], "exposed_name", tool.name)  # what the model called
            turn.finish(index, invalid_answer(tool, exc, prefix, name))
            return None

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
                )
            )
        except Exception as exc:  # fail closed
            log.exception("the policy failed on %s", call.exposed_name)
            return Verdict("deny", f"the policy could not be evaluated ({short(exc)})")

    async def _ask(
        self, turn: Turn, index: int, call: ToolCall, arguments: Mapping[str, Any], ask: Ask
    ) -> Decision | None:
        """The approver's decision on the call, or None when it waits (recorded on the turn).
        A deferred call waits without asking an immediate approver."""
        if self.approver is None and not ask.deferred:
            raise ConfigurationError(
                f"the policy asks for approval of {call.tool.qualified_name!r} but the "
                "executor has no approver"
            )
        if turn.run_id is None:
            turn.run_id = f"run_{uuid.uuid4().hex}"
        await self.clock.now()  # the request's deadline is in the store's time
        request = self.request(turn, call, arguments, ask.reason)
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
            kept = self.kept(turn, index, request)
            if kept is not None:
                turn.waiting.append((index, kept))
            return None
        if not isinstance(decision, Decision):
            raise ConfigurationError(
                f"an approver returned a {type(decision).__name__}, not a Decision"
            )
        return decision

    def request(
        self, turn: Turn, call: ToolCall, arguments: Mapping[str, Any], reason: str | None
    ) -> ApprovalRequest:
        """What a human is shown of a call that waits in the turn's run (from now, until the
        executor's ``approval_ttl``)."""
        assert turn.run_id is not None
        now = self.clock.current()
        return ApprovalRequest(
            run_id=turn.run_id,
            call_id=call.local_id,
            tool=call.tool,
            exposed_name=call.exposed_name,
            arguments=arguments,
            principal=turn.principal,
            reason=reason,
            requested_at=now,
            expires_at=now + self.approval_ttl if self.approval_ttl is not None else None,
        )

    def kept(self, turn: Turn, index: int, request: ApprovalRequest) -> ApprovalRequest | None:
        """``request`` as the run keeps it, which is what the application is shown: its
        arguments passed through ``redact``; None, with the call answered, when that fails."""
        try:
            kept = request.arguments if self.redact is None else self.redact(request)
            kept = dict(kept)
        except Exception as exc:  # fail closed: nothing unredacted is kept
            log.exception("redacting the request of %s failed", request.exposed_name)
            turn.finish(index, not_run("redacting its request", exc))
            return None
        return replace(request, arguments=kept)


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
