"""The model of the invariants (see ``machinery``) run against each surface of the governed
path, as hypothesis state machines: random sequences of turns (several calls, repeated calls,
gated ones), decisions (allow, allow with edited arguments, deny, halt), denials by policy,
expiries, crashes (a turn cut off mid-call), resumes and two workers at once, each checked
after every step."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import initialize, multiple, rule, run_state_machine_as_test
from machinery import (
    POLICY,
    PRINCIPALS,
    SPECS,
    TTL,
    Clock,
    Run,
    RunMachine,
    Spec,
    Stores,
    budget,
    check,
    check_results,
    placed,
)
from provider_turns import PROVIDERS

import toolwire
from toolwire import ApprovalPending, DeferredApproval, Executor, RunBindingConflict
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
                tools, policy=POLICY, approver=DeferredApproval(), store=store, approval_ttl=ttl
            )
            for store in (self.on.store, self.on.other_store)
        ]
        self.listing = toolwire.tools(self.workers[0].toolset, provider, policy=POLICY)
        self.adapter = get_provider(provider)

    def response(self, specs: tuple[Spec, ...]) -> Any:
        return self.adapter.response_for([(s.call_id, s.tool, s.arguments) for s in specs])

    async def turn(
        self, run: Run, worker: int = 0, *, resume: bool = False, principal: str | None = None
    ) -> Turned:
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
                self.listing, self.response(run.specs), **options
            )
        except ApprovalPending as pending:
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
            run.paused = turned
            answers = placed(run, turned.completed, turned.pending)
            self.model.turn(run, answers, turned.pending, clock, cut=cut)
        elif turned is not None:
            check_results(turned)
            check(
                turned.run_id == run.run_id,
                f"{run!r}: answered as run {turned.run_id!r}",
            )
            answers = placed(run, turned.calls, [])
            self.model.turn(run, answers, [], clock, cut=cut)
        elif cut:
            self.model.cut_off(run)

    def played(
        self, run: Run, turn: Callable[[], Awaitable[Turned]], cut: str | None = None
    ) -> None:
        before = self.on.clock()
        turned = self.step(self.cut, turn, cut) if cut is not None else self.step(turn)
        self.learn(run, turned, Clock(before, self.on.clock()), cut=cut is not None)

    # -- rules --------------------------------------------------------------------------------------

    @rule(target=RunMachine.runs, principal=PRINCIPALS, specs=SPECS, named=st.booleans())
    def a_turn(self, principal: str, specs: tuple[Spec, ...], named: bool) -> Any:
        run = self.model.new_run(principal, specs, named=named)
        self.played(run, lambda: self.turn(run))
        return multiple(run) if run.run_id is not None else multiple()

    @rule(target=RunMachine.runs, principal=PRINCIPALS, specs=SPECS, how=CUTS)
    def a_turn_cut_off_mid_call(self, principal: str, specs: tuple[Spec, ...], how: str) -> Any:
        run = self.model.new_run(principal, specs, named=True)
        self.played(run, lambda: self.turn(run), cut=how)
        return run

    @rule(run=RunMachine.runs)
    def the_turn_again(self, run: Run) -> None:
        self.played(run, lambda: self.turn(run))

    @rule(run=RunMachine.runs)
    def the_paused_turn_resumed(self, run: Run) -> None:
        if run.paused is not None:
            self.played(run, lambda: self.turn(run, resume=True))

    @rule(run=RunMachine.runs, how=CUTS)
    def the_turn_again_cut_off_mid_call(self, run: Run, how: str) -> None:
        self.played(run, lambda: self.turn(run), cut=how)

    @rule(run=RunMachine.runs)
    def two_workers_at_once(self, run: Run) -> None:
        before = self.on.clock()
        turned: list[Turned] = [None, None]

        async def both() -> None:
            async def one(worker: int) -> None:
                turned[worker] = await self.turn(run, worker)

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(one, 0)
                tasks.start_soon(one, 1)

        self.step(both)
        clock = Clock(before, self.on.clock())
        for each in turned:
            self.learn(run, each, clock)

    @rule(run=RunMachine.runs, principal=PRINCIPALS, resume=st.booleans())
    def another_principal_takes_the_run(self, run: Run, principal: str, resume: bool) -> None:
        if principal == run.principal or not run.stored or (resume and run.paused is None):
            return
        ran = len(self.tools.ran)
        with pytest.raises(RunBindingConflict):
            self.step(lambda: self.turn(run, resume=resume, principal=principal))
        check(len(self.tools.ran) == ran, f"{run!r} ran calls for {principal!r}")

    @rule(run=RunMachine.runs, specs=SPECS)
    def another_response_under_the_run(self, run: Run, specs: tuple[Spec, ...]) -> None:
        other = Run("other", run.principal, specs, run_id=run.run_id)
        if other.bound() == run.bound() or not run.stored:
            return
        ran = len(self.tools.ran)
        with pytest.raises(RunBindingConflict):
            self.step(lambda: self.turn(other))
        check(len(self.tools.ran) == ran, f"{run!r} ran calls of another response")


def test_execute_tool_calls_keeps_the_invariants(stores: Stores, deep: bool) -> None:
    run_state_machine_as_test(lambda: Facade(stores), settings=budget(deep))
