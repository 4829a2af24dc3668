"""The model of the invariants (see ``machinery``) run against each surface of the governed
path, as hypothesis state machines: random sequences of turns (several calls, repeated calls,
gated ones), decisions (allow, allow with edited arguments, deny, halt), denials by policy,
expiries, crashes (a turn cut off mid-call), resumes and two workers at once, each checked
after every step."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import initialize, multiple, rule, run_state_machine_as_test
from machinery import (
    LIMIT,
    POLICY,
    PRINCIPALS,
    SPECS,
    TTL,
    Budget,
    Clock,
    HostedModel,
    Run,
    RunMachine,
    Spec,
    Stores,
    check,
    check_results,
    on,
    placed,
)
from provider_turns import PROVIDERS

import toolwire
from test_hosted_approvals import ANSWER as APPROVAL_ANSWER
from test_hosted_approvals import request, response
from toolwire import (
    ApprovalPending,
    DeferredApproval,
    Executor,
    Policy,
    Rule,
    RunBindingConflict,
    ledger,
)
from toolwire.executor import CallTicket
from toolwire.hosted import HostedApprovals, answer_hosted_approvals
from toolwire.pipeline import TurnPlan, in_groups
from toolwire.providers import get_provider

CUTS = st.sampled_from(["cancel", "scope"])
"""How a turn is cut off mid-call: its executor cancels it (the turn still answers every
call), or the task running it is cancelled (as a worker's process dies: nothing is answered)."""

Turned = Any
"""What a turn gave: an ``Outcome``, an ``ApprovalPending``, or None (cut off)."""


class Facade(RunMachine):
    """``toolwire.execute_tool_calls`` over a provider's scripted response, on two workers
    (executors on two connections to one store)."""

    @initialize(provider=st.sampled_from(PROVIDERS), ttl=st.sampled_from([None, TTL]))
    def configure(self, provider: str, ttl: float | None) -> None:
        self.ttl = ttl
        tools = self.tools.tools()
        self.workers = [
            Executor(
                tools,
                policy=POLICY,
                approver=DeferredApproval(),
                store=store,
                approval_ttl=ttl,
            )
            for store in (self.on.store, self.on.other_store)
        ]
        self.listing = toolwire.tools(self.workers[0].toolset, provider, policy=POLICY)
        self.adapter = get_provider(provider)

    def response(self, specs: tuple[Spec, ...]) -> Any:
        return self.adapter.response_for([(s.call_id, s.tool, s.arguments) for s in specs])

    def new_run(self, principal: str, specs: tuple[Spec, ...], named: bool) -> Run:
        return self.model.new_run(principal, specs, named=named)

    def again(self, run: Run) -> bool:
        """Whether a turn of ``run`` can be made again (under its run)."""
        return run.run_id is not None

    def resumable(self, run: Run) -> bool:
        return run.paused is not None

    async def turn(
        self,
        run: Run,
        worker: int = 0,
        *,
        resume: bool = False,
        principal: str | None = None,
        specs: tuple[Spec, ...] | None = None,
    ) -> Turned:
        """One turn of ``run`` on ``worker`` (resumed, or for another principal, or another
        response of the model)."""
        options: dict[str, Any] = {
            "executor": self.workers[worker],
            "principal": principal or run.principal,
            "deps": run.name,
        }
        if resume:
            options["resume"] = run.paused
        elif run.run_id is not None:
            options["run_id"] = run.run_id
        try:
            return await toolwire.execute_tool_calls(
                self.listing, self.response(specs or run.specs), **options
            )
        except ApprovalPending as pending:
            run.paused = pending
            return pending

    async def cut(self, turn: Callable[[], Awaitable[Turned]], how: str) -> Turned:
        """``turn`` with a crash armed: once a tool holds, the turn is cut off ``how``."""
        got: list[Turned] = [None]
        with self.tools.armed() as settled:
            async with anyio.create_task_group() as tasks:

                async def go() -> None:
                    try:
                        got[0] = await turn()
                    finally:
                        settled.set()

                tasks.start_soon(go)
                await settled.wait()
                if self.tools.held:
                    if how == "cancel":
                        for worker in self.workers:
                            worker.cancel()
                    else:
                        tasks.cancel_scope.cancel()
        return got[0]

    def learn(self, run: Run, turned: Turned, clock: Clock, *, cut: bool = False) -> None:
        """Check what a turn of ``run`` gave against the model, which learns from it."""
        run.told(f"turn{' cut' if cut else ''} ({clock})")
        if isinstance(turned, ApprovalPending):
            self.model.alias(run, turned.run_id)
            answers = placed(run, turned.completed, turned.pending)
            self.model.turn(run, answers, turned.pending, clock, cut=cut)
        elif turned is not None:
            check_results(turned)
            if turned.run_id is not None and run.run_id is None:
                self.model.alias(run, turned.run_id)
            check(turned.run_id == run.run_id, f"{run!r}: answered as run {turned.run_id!r}")
            answers = placed(run, turned.calls, [])
            self.model.turn(run, answers, [], clock, cut=cut)
        elif cut:
            self.model.cut_off(run, clock, self.ttl)
            if run.run_id is not None:  # what the run kept waiting before it was cut off
                kept = self.step(
                    functools.partial(toolwire.pending, store=self.on.store, run_id=run.run_id)
                )
                for request in kept:
                    self.model.waiting(run, request, clock)

    def played(
        self, run: Run, turn: Callable[[], Awaitable[Turned]], cut: str | None = None
    ) -> None:
        before = self.on.clock()
        turned = self.step(self.cut, turn, cut) if cut is not None else self.step(turn)
        self.learn(run, turned, Clock(before, self.on.clock()), cut=cut is not None)

    # -- rules -------------------------------------------------------------------------------------

    @rule(target=RunMachine.runs, principal=PRINCIPALS, specs=SPECS, named=st.booleans())
    def a_turn(self, principal: str, specs: tuple[Spec, ...], named: bool) -> Any:
        run = self.new_run(principal, specs, named)
        self.played(run, lambda: self.turn(run))
        return multiple(run) if run.run_id is not None else multiple()

    @rule(target=RunMachine.runs, principal=PRINCIPALS, specs=SPECS, how=CUTS)
    def a_turn_cut_off_mid_call(self, principal: str, specs: tuple[Spec, ...], how: str) -> Any:
        run = self.new_run(principal, specs, True)
        self.played(run, lambda: self.turn(run), cut=how)
        return multiple(run) if run.run_id is not None else multiple()

    @rule(run=RunMachine.runs)
    def the_turn_again(self, run: Run) -> None:
        if self.again(run):
            self.played(run, lambda: self.turn(run))

    @rule(run=RunMachine.runs)
    def the_paused_turn_resumed(self, run: Run) -> None:
        if self.resumable(run):
            self.played(run, lambda: self.turn(run, resume=True))

    @rule(run=RunMachine.runs, how=CUTS)
    def the_turn_again_cut_off_mid_call(self, run: Run, how: str) -> None:
        if self.again(run):
            self.played(run, lambda: self.turn(run), cut=how)

    @rule(run=RunMachine.runs)
    def two_workers_at_once(self, run: Run) -> None:
        if not self.again(run):
            return
        turned, clock = self.both_workers(lambda worker: self.turn(run, worker))
        for each in turned:
            self.learn(run, each, clock)

    @rule(run=RunMachine.runs, principal=PRINCIPALS, resume=st.booleans())
    def another_principal_takes_the_run(self, run: Run, principal: str, resume: bool) -> None:
        if principal == run.principal or not run.stored:
            return
        if not (self.resumable(run) if resume else self.again(run)):
            return
        ran = len(self.tools.ran)
        with pytest.raises(RunBindingConflict):
            self.step(lambda: self.turn(run, resume=resume, principal=principal))
        check(len(self.tools.ran) == ran, f"{run!r} ran calls for {principal!r}")

    @rule(run=RunMachine.runs, specs=SPECS)
    def another_response_under_the_run(self, run: Run, specs: tuple[Spec, ...]) -> None:
        other = Run("other", run.principal, specs)
        if other.bound() == run.bound() or not run.stored or not self.again(run):
            return
        ran = len(self.tools.ran)
        with pytest.raises(RunBindingConflict):
            self.step(lambda: self.turn(run, specs=specs))
        check(len(self.tools.ran) == ran, f"{run!r} ran calls of another response")


class Looped(Facade):
    """``toolwire.loop`` over a scripted model (the provider's response, then its final text),
    each run a conversation's turn (its run id made from the conversation and the request)."""

    def new_run(self, principal: str, specs: tuple[Spec, ...], named: bool) -> Run:
        return self.model.new_run(principal, specs, named=named, by_name=False)

    def again(self, run: Run) -> bool:
        # The same request of the same conversation; a loop without one makes a new run.
        return run.named

    def resumable(self, run: Run) -> bool:
        return run.paused is not None and run.paused.pending is not None

    async def turn(
        self,
        run: Run,
        worker: int = 0,
        *,
        resume: bool = False,
        principal: str | None = None,
        specs: tuple[Spec, ...] | None = None,
    ) -> Turned:
        script = [] if resume else [self.response(specs or run.specs)]

        async def send(**request: Any) -> Any:
            return script.pop(0) if script else self.adapter.response_for([], "Done.")

        options: dict[str, Any] = {
            "executor": self.workers[worker],
            "principal": principal or run.principal,
            "deps": run.name,
            "max_turns": 2,
        }
        if resume:
            messages: Any = run.paused
        else:
            messages = [self.first_message()]
            if run.named:
                options["conversation"] = run.name
        result = await toolwire.loop(send, self.listing, messages, **options)
        if result.pending is not None:
            run.paused = result
            return result.pending
        check(result.done or result.halted, f"{run!r}: the loop stopped: {result}")
        [outcome] = [outcome for outcome in result.outcomes if outcome.calls]
        return outcome

    def first_message(self) -> Any:
        if self.listing.provider == "gemini":
            return {"role": "user", "parts": [{"text": "Go."}]}
        return {"role": "user", "content": "Go."}


class Engine(Facade):
    """The engine boundary a durable-execution engine drives (``DurableTools``, over DBOS):
    ``toolwire.parse_turn``, then ``Executor.plan`` in one step (its ``TurnPlan`` read back from
    its JSON form, as an engine's checkpoint is), then each ticket, through its JSON form, run
    by ``run_ticket`` on either worker in ``in_groups`` order; a turn with calls waiting is
    planned again (``resume``) once decided, and answered by ``ParsedTurn.answer``."""

    async def turn(
        self,
        run: Run,
        worker: int = 0,
        *,
        resume: bool = False,
        principal: str | None = None,
        specs: tuple[Spec, ...] | None = None,
    ) -> Turned:
        assert run.run_id is not None
        planner = self.workers[worker]
        parsed = toolwire.parse_turn(self.listing, self.response(specs or run.specs))
        planned = await planner.plan(
            parsed.items,
            run_id=run.run_id,
            principal=principal or run.principal,
            deps=run.name,
            resume=resume,
        )
        plan = TurnPlan.from_dict(parsed.items, planned.to_dict())
        answers = dict(plan.answered)

        async def run_one(ticket: CallTicket) -> None:
            assert ticket.position is not None
            runner = self.workers[(worker + ticket.position) % 2]  # any worker takes it
            answers[ticket.position] = await runner.run_ticket(
                CallTicket.from_dict(ticket.to_dict()), deps=run.name
            )

        for group in in_groups(plan.tickets, lambda ticket: ticket.alone):
            async with anyio.create_task_group() as tasks:
                for ticket in group:
                    tasks.start_soon(run_one, ticket)
        if not plan.waiting:
            check(
                sorted(answers) == list(range(len(parsed.items))),
                f"{run!r}: a plan waiting for nothing answered {sorted(answers)} only",
            )
            return parsed.answer([answers[index] for index in sorted(answers)], run_id=run.run_id)
        run.paused = True
        waiting = [
            await self.request_of(run, parsed.items[index].local_id)
            for index in range(len(parsed.items))
            if index not in answers
        ]
        completed = [answers[index] for index in sorted(answers)]
        return ApprovalPending(run.run_id, waiting, completed=completed, store=planner.store)

    async def request_of(self, run: Run, call_id: str) -> toolwire.ApprovalRequest:
        """The request the run keeps for a call its plan left waiting."""
        assert run.run_id is not None
        record = await ledger.record(self.on.store, run.run_id, call_id)
        check(record is not None, f"{run!r}: call {call_id} waits, and its run keeps no record")
        assert record is not None
        return ledger.request_of(run.run_id, record)

    def resumable(self, run: Run) -> bool:
        return run.paused is not None

    @rule(target=RunMachine.runs, principal=PRINCIPALS, specs=SPECS, named=st.just(True))
    def a_turn(self, principal: str, specs: tuple[Spec, ...], named: bool) -> Any:
        return super().a_turn(principal, specs, named)


HOSTED_POLICY = Policy(
    Rule("deny", "github/pay", when=lambda c: c.arguments.get("n", 0) >= LIMIT, reason="too much"),
    Rule("ask", "github/pay", reason="it costs money"),
    Rule("deny", "github/drop", reason="nothing is dropped"),
)
HOSTED_SPECS = SPECS.filter(lambda specs: len({s.call_id for s in specs}) == len(specs))
"""A response's approval requests: each its own id (an answer names its request by id alone)."""


class Hosted(RunMachine):
    """``toolwire.hosted.answer_hosted_approvals`` over OpenAI Responses responses (the SDK's
    own types) whose hosted MCP tool asks for approvals, on two connections to one store."""

    model_of = HostedModel

    def new_run(self, principal: str, specs: tuple[Spec, ...], named: bool) -> Run:
        return self.model.new_run(principal, specs, named=named)

    async def answer(
        self,
        run: Run,
        worker: int = 0,
        *,
        principal: str | None = None,
        specs: tuple[Spec, ...] | None = None,
    ) -> HostedApprovals:
        asked = [
            request(s.call_id, "github", s.tool, "{not json" if s.tool == "boom" else s.arguments)
            for s in specs or run.specs
        ]
        return await answer_hosted_approvals(
            response(*asked),
            policy=HOSTED_POLICY,
            store=(self.on.store, self.on.other_store)[worker],
            run_id=run.run_id,
            principal=principal or run.principal,
        )

    def learn(self, run: Run, answered: HostedApprovals, clock: Clock) -> None:
        run.told(f"answered ({clock})")
        if answered.run_id is not None and run.run_id is None:
            self.model.alias(run, answered.run_id)
        check(answered.run_id == run.run_id, f"{run!r}: answered as run {answered.run_id!r}")
        waiting = {request.call_id for request in answered.pending}
        rest = list(answered.answers)
        for index, spec in enumerate(run.specs):
            if rest and rest[0]["approval_request_id"] == spec.call_id:
                answer = rest.pop(0)
                APPROVAL_ANSWER.validate_python(answer)  # the SDK's own input item
                got = ("approved", "") if answer["approve"] else ("refused", answer["reason"])
                self.model.answered(run, index, spec.call_id, got, clock, cut=False)
            else:
                check(
                    spec.call_id in waiting,
                    f"{run!r}: request {index} ({spec}) is neither answered in its place nor "
                    f"waiting ({answered})",
                )
        check(not rest, f"{run!r}: answers to requests it does not have: {rest}")
        for waits in answered.pending:
            self.model.waiting(run, waits, clock)

    def answered_now(self, run: Run, answers: Callable[[], Awaitable[HostedApprovals]]) -> None:
        before = self.on.clock()
        got = self.step(answers)
        self.learn(run, got, Clock(before, self.on.clock()))

    @rule(target=RunMachine.runs, principal=PRINCIPALS, specs=HOSTED_SPECS, named=st.booleans())
    def a_response_asks(self, principal: str, specs: tuple[Spec, ...], named: bool) -> Any:
        run = self.new_run(principal, specs, named)
        self.answered_now(run, lambda: self.answer(run))
        return multiple(run) if run.run_id is not None else multiple()

    @rule(run=RunMachine.runs)
    def the_response_answered_again(self, run: Run) -> None:
        self.answered_now(run, lambda: self.answer(run))

    @rule(run=RunMachine.runs)
    def two_workers_answer_at_once(self, run: Run) -> None:
        got, clock = self.both_workers(lambda worker: self.answer(run, worker))
        for each in got:
            self.learn(run, each, clock)

    @rule(run=RunMachine.runs, principal=PRINCIPALS)
    def another_principal_answers_the_run(self, run: Run, principal: str) -> None:
        if principal != run.principal and run.stored:
            with pytest.raises(RunBindingConflict):
                self.step(lambda: self.answer(run, principal=principal))

    @rule(run=RunMachine.runs, specs=HOSTED_SPECS)
    def another_response_under_the_run(self, run: Run, specs: tuple[Spec, ...]) -> None:
        other = Run("other", run.principal, specs, rejects=run.rejects)
        # (a response whose every request is refused as unreadable reaches no run at all)
        if other.bound() not in ([], run.bound()) and run.stored:
            with pytest.raises(RunBindingConflict):
                self.step(lambda: self.answer(run, specs=specs))


def test_execute_tool_calls_keeps_the_invariants(stores: Stores, budget: Budget) -> None:
    run_state_machine_as_test(on(Facade, stores), settings=budget(25, 20))


def test_the_loop_keeps_the_invariants(stores: Stores, budget: Budget) -> None:
    run_state_machine_as_test(on(Looped, stores), settings=budget(20, 15))


@pytest.mark.deep
def test_the_engine_boundary_keeps_the_invariants(deep_stores: Stores, budget: Budget) -> None:
    run_state_machine_as_test(on(Engine, deep_stores), settings=budget(25, 20))


def test_hosted_approvals_keep_the_invariants(stores: Stores, budget: Budget) -> None:
    run_state_machine_as_test(on(Hosted, stores), settings=budget(20, 15))
