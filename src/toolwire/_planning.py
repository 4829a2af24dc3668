"""Phase 1 of a turn: each call decided, in order. Its record in the run (answered already,
running elsewhere, decided), validation, before-call hooks, policy and approval."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from toolwire import ledger
from toolwire._output import _denied, _invalid, _log, _not_run, _short
from toolwire._turn import _context, _maybe_await, _Pipeline, _Planned, _Turn
from toolwire.approval import Decision
from toolwire.calls import ToolCall, ToolResult, strip_nulls
from toolwire.context import Veto
from toolwire.errors import ConfigurationError, ToolwireError
from toolwire.policy import PolicyContext, Verdict
from toolwire.tool import Tool

_EDITED = "The approver edited the arguments: "


class _Planning(_Pipeline):
    """Decides a turn's calls (see [`Executor`][toolwire.Executor])."""

    async def _plan(self, turn: _Turn, index: int, call: ToolCall) -> None:
        record = None
        if turn.known:
            assert turn.run_id is not None  # records are known of named runs only
            record = await self._unless_running(
                turn.run_id, call.local_id, turn.known.get(call.local_id), call.tool
            )
            if record is not None:
                if record.fingerprint != self._fingerprint(turn, call):
                    raise ConfigurationError(
                        f"run {turn.run_id!r} already has a call {call.local_id!r} with other "
                        "arguments; use a new run id for a new turn"
                    )
                turn.seen[index] = record
                if self._settled_by(turn, index, record):
                    return

        tool = call.tool
        # A recorded decision governs the call. A deny (or halt) is final, whatever the policy
        # says on this resume and even if the tool changed (decisions only tighten); an allow
        # holds only for the tool it was made for, as defined then: one made for another tool
        # (renamed, reordered) or an older definition is void. A call asked about and not
        # decided (or whose allow is void) waits, whatever the policy says.
        recorded = record.decision if record is not None else None
        if recorded is not None and not recorded.allowed:
            self._refuse(turn, index, recorded)
            return
        if record is not None and ledger.awaits_input(record):
            # Its server asked a question nobody has answered yet: it waits, whatever else.
            assert turn.run_id is not None
            if ledger.expired(record):
                self._finish(
                    turn,
                    index,
                    ToolResult.error(
                        "failed", "Not finished: the server's request for input expired unanswered."
                    ),
                )
                return
            turn.pending.append((index, ledger.request_of(turn.run_id, record)))
            turn.settled.add(index)  # its record already says so
            return
        if (
            record is not None
            and ledger.input_resume(record) is not None
            and not ledger.decided_for(record, tool)
        ):
            # Its server's questions were answered for the tool as it was defined then.
            self._finish(
                turn,
                index,
                ToolResult.error(
                    "failed",
                    "Not finished: the tool changed while the call waited for input; the "
                    "answers given are not sent to the changed tool.",
                ),
            )
            return
        void = (
            record is not None
            and (recorded is not None or record.state == "pending")
            and not ledger.decided_for(record, tool)
        )
        if void:
            recorded = None
        elif (
            recorded is None
            and record is not None
            and record.state == "pending"
            and ledger.expired(record)
        ):
            self._finish(
                turn,
                index,
                ToolResult.error("approval_denied", "Denied: the approval request expired."),
            )
            return
        undecided = void or (record is not None and recorded is None and record.state == "pending")

        # Arguments a human edited are what runs, so validation, hooks and policy see them.
        edited = recorded.arguments if recorded is not None else None
        if edited is not None:
            arguments: Mapping[str, Any] = dict(edited)
        else:
            if call.null_paths:  # nulls a strict schema made the model send mean "left out"
                call = replace(call, arguments=_without_strict_nulls(tool, call))
            arguments = call.arguments
        validated = self._validated(
            turn, index, tool, arguments, _EDITED if edited is not None else ""
        )
        if validated is None:
            return
        kwargs = validated

        wanted = self.before_call or self.after_call or tool.context_parameter is not None
        context = _context(turn, call, arguments) if wanted else None
        for hook in self.before_call:
            assert context is not None  # made whenever there are hooks
            try:
                answer = await _maybe_await(hook(context))
                if answer is not None and not isinstance(answer, Veto):
                    answer = dict(answer)
            except Exception as exc:  # the call's own failure: it does not run, the turn goes on
                _log.exception("a before-call hook failed on %s", call.exposed_name)
                self._finish(turn, index, _not_run("a before-call hook", exc))
                return
            if isinstance(answer, Veto):
                self._finish(turn, index, ToolResult.error("denied", answer.reason))
                return
            if answer is not None:
                arguments = answer
                rewritten = self._validated(
                    turn, index, tool, arguments, "A hook rewrote the arguments: "
                )
                if rewritten is None:
                    return
                kwargs = rewritten
                context = _context(turn, call, arguments)

        if self.policy.allows_everything and not tool.needs_approval and not undecided:
            turn.planned.append(_Planned(index, call, kwargs, context, record))
            return
        verdict = self._verdict(turn, call, arguments)
        if verdict.effect == "deny":  # a recorded allow yields to a policy's deny
            self._finish(turn, index, _denied(verdict))
            return
        if verdict.effect == "ask" or undecided:
            decision = recorded
            if decision is None:
                reason = verdict.reason if verdict.effect == "ask" else None
                if void:
                    reason = "the tool changed since the call was decided" + (
                        f"; {reason}" if reason else ""
                    )
                elif undecided and record is not None:
                    reason = reason or (record.request or {}).get("reason")
                deferred = undecided and self.approver is None
                decision = await self._ask(turn, index, call, arguments, reason, deferred=deferred)
                if decision is None:
                    return  # pending: recorded on the turn
                if decision.allowed and decision.arguments is not None:
                    # An approver answering now edited them: they run, if the policy agrees.
                    arguments = dict(decision.arguments)
                    edited_kwargs = self._validated(turn, index, tool, arguments, _EDITED)
                    if edited_kwargs is None:
                        return
                    kwargs = edited_kwargs
                    verdict = self._verdict(turn, call, arguments)
                    if verdict.effect == "deny":
                        self._finish(turn, index, _denied(verdict))
                        return
                    if context is not None:
                        context = _context(turn, call, arguments)
            if not decision.allowed:
                self._refuse(turn, index, decision)
                return
        turn.planned.append(_Planned(index, call, kwargs, context, record))

    def _validated(
        self, turn: _Turn, index: int, tool: Tool, arguments: Mapping[str, Any], prefix: str
    ) -> dict[str, Any] | None:
        """The handler's keyword arguments, or None with the call answered (``prefix`` says
        whose arguments were refused)."""
        try:
            return tool.validate_arguments(arguments)
        except Exception as exc:
            name = getattr(turn.items[index], "exposed_name", tool.name)  # what the model called
            self._finish(turn, index, _invalid(tool, exc, prefix, name))
            return None

    def _verdict(self, turn: _Turn, call: ToolCall, arguments: Mapping[str, Any]) -> Verdict:
        try:
            return self.policy.evaluate(
                PolicyContext(
                    tool=call.tool,
                    arguments=arguments,
                    principal=turn.principal,
                    taint=turn.taint,
                    exposed_name=call.exposed_name,
                )
            )
        except Exception as exc:  # fail closed
            _log.exception("the policy failed on %s", call.exposed_name)
            return Verdict("deny", f"the policy could not be evaluated ({_short(exc)})")

    async def _ask(
        self,
        turn: _Turn,
        index: int,
        call: ToolCall,
        arguments: Mapping[str, Any],
        reason: str | None,
        *,
        deferred: bool = False,
    ) -> Decision | None:
        """The approver's decision on the call, or None when it waits (recorded on the turn).
        A ``deferred`` call waits without asking an immediate approver."""
        if self.approver is None and not deferred:
            raise ConfigurationError(
                f"the policy asks for approval of {call.tool.qualified_name!r} but the "
                "executor has no approver"
            )
        if turn.run_id is None:
            turn.run_id = f"run_{uuid.uuid4().hex}"
        request = self._request(turn, call, arguments, reason)
        decision = None
        if self.approver is not None and not deferred:
            try:
                decision = await _maybe_await(self.approver(request))
            except ToolwireError:
                raise
            except Exception as exc:  # fail closed: an approver that fails has not approved
                _log.exception("the approver failed on %s", call.exposed_name)
                return Decision("deny", f"the approver failed ({_short(exc)})")
        if decision is None:
            kept = self._kept(turn, index, request)
            if kept is not None:
                turn.pending.append((index, kept))
            return None
        if not isinstance(decision, Decision):
            raise ConfigurationError(
                f"an approver returned a {type(decision).__name__}, not a Decision"
            )
        return decision


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
