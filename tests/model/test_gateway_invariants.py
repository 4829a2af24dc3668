"""The model of the invariants (see ``machinery``) run against the MCP gateway: its calls, over
the ``mcp`` SDK's in-memory client, and its tasks, over streamable HTTP on 127.0.0.1. Two
principals (a gateway each), two workers each (gateways on two connections to one store).

A gateway call the policy asks about is kept in a run of its own (``mcp-<digest>``), one per
principal, tool and arguments, and once answered the same call again is a new call, in the
next generation of that run: each generation is a run of the model, of one call (``call``).
A task is a run of its own too (its id is the run's)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import initialize, multiple, rule, run_state_machine_as_test
from machinery import (
    GATED,
    LIMIT,
    POLICY,
    PRINCIPALS,
    TTL,
    UNDECLARED,
    Clock,
    Model,
    Ran,
    Run,
    RunMachine,
    Said,
    Spec,
    Stores,
    budget,
    check,
    ran_text,
    run_key,
)

import toolwire
from toolwire import ToolSet, ledger
from toolwire.mcp import Gateway

pytestmark = pytest.mark.filterwarnings("ignore::toolwire.ToolwireWarning")

CALL = "call"
"""The one call of a gateway's run."""
WAITS = re.compile(r"The call (\S+) waits for approval.*? Run id: (\S+); call id: call\.", re.S)
STOPPED = "The gateway stopped before the call"
TOOLS = st.sampled_from(["work", GATED, GATED, GATED, "boom", UNDECLARED])
AMOUNTS = st.sampled_from([1, 2, 3, LIMIT + 5])
"""Few amounts: the same call made again, by the same principal and by the other."""


class GatewayModel(Model):
    """The model as a gateway's client sees an answer: an error or not, and its text."""

    def view(self, answer: Said) -> Said:
        kind, text = answer
        if kind == "interrupted":
            return ("error", "*")
        return ("ok", text) if kind is None else ("error", text)


@dataclass(frozen=True)
class Asked:
    """One call a client makes."""

    principal: str
    tool: str
    n: int

    @property
    def key(self) -> tuple[str, int]:
        return (self.principal, self.n)


class Gatewayed(RunMachine):
    """``toolwire.mcp.Gateway``'s calls: direct ones run at once, each call once; gated ones
    wait in their generation's run until a person decides, then run once."""

    model_of = GatewayModel

    @initialize(ttl=st.sampled_from([None, TTL]))
    def configure(self, ttl: float | None) -> None:
        self.ttl = ttl
        tools = ToolSet(self.tools.tools())
        self.gateways = {
            (principal, worker): Gateway(
                tools, policy=POLICY, store=store, principal=principal, approval_ttl=ttl
            )
            for principal in ("alice", "bob")
            for worker, store in enumerate((self.on.store, self.on.other_store))
        }
        self.generations: dict[tuple[str, int], list[Run]] = {}

    def in_runs(self) -> list[Ran]:
        return [entry for entry in self.tools.ran if entry.run_id is not None]

    def current(self, key: tuple[str, int]) -> Run | None:
        """The generation a gated call goes to now: the last, unless it is answered."""
        found = self.generations.get(key, [])
        if found and found[-1].calls[CALL].kept is None:
            return found[-1]
        return None

    async def call(self, asked: Asked, worker: int = 0) -> Any:
        async with mcp.Client(self.gateways[asked.principal, worker].server()) as client:
            return await client.call_tool(asked.tool, {"n": asked.n})

    async def cut(self, asked: Asked) -> Any:
        """The call with a crash armed: once its tool holds, the gateway stops its calls."""
        got: list[Any] = [None]
        with self.tools.armed() as settled:
            async with anyio.create_task_group() as tasks:

                async def go() -> None:
                    try:
                        got[0] = await self.call(asked)
                    finally:
                        settled.set()

                tasks.start_soon(go)
                await settled.wait()
                if self.tools.held:
                    self.gateways[asked.principal, 0].end_calls()
        return got[0]

    # -- what an answer may be --------------------------------------------------------------------

    def learn(
        self, asked: Asked, answer: Any, clock: Clock, start: Run | None, *, cut: bool = False
    ) -> Run | None:
        """Check the answer to one call; the new generation it opened, if any. ``start``: the
        generation current when the step began."""
        check(answer.result_type == "complete", f"{asked}: answered {answer}")
        [part] = answer.content
        if start is not None:
            start.told(f"{'cut ' if cut else ''}call {asked} ({clock}): {part.text[:60]}")
        got = ("error" if answer.is_error else "ok", part.text)
        if asked.tool != GATED or asked.n >= LIMIT:
            self.direct(asked, got, cut=cut)
            return None
        waits = WAITS.match(part.text)
        if waits is not None:
            return self.waits(asked, waits.group(2), clock, start)
        check(start is not None, f"{asked}: answered {got} before it was ever asked about")
        assert start is not None
        if cut and part.text.startswith(STOPPED):
            start.calls[CALL].uncertain = True
            start.told("stopped")
            return None
        self.model.answered(start, 0, CALL, got, clock, cut=cut)
        return None

    def direct(self, asked: Asked, got: Said, *, cut: bool) -> None:
        """A call that needs no approval: answered at once, its tool run (once) if it runs."""
        if asked.tool == UNDECLARED:
            expected: list[Said] = [("error", f"Unknown tool {asked.tool!r}.")]
        elif asked.tool == GATED:
            expected = [("error", "Denied: too much.")]
        elif asked.tool == "boom":
            expected = [("error", f"Tool 'boom' failed: RuntimeError: boom {asked.n}")]
        else:
            expected = [("ok", ran_text("work", asked.n, run_key(None, None), CALL, asked.principal))]
        if cut:
            expected.append(("error", "*"))
        check(
            any(got == e or (e[1] == "*" and got[1].startswith(STOPPED)) for e in expected),
            f"{asked}: answered {got}; it may be answered {expected}",
        )

    def waits(self, asked: Asked, run_id: str, clock: Clock, start: Run | None) -> Run | None:
        current = self.current(asked.key)
        if current is not None and current.run_id == run_id:
            self.model.waiting(current, self.request_of(current), clock)
            return None
        # A new generation: the one before it answered (by now), its run one never seen.
        check(
            start is None or start.calls[CALL].kept is not None,
            f"{asked}: waits in run {run_id!r}, while its call waits in {start!r}",
        )
        check(
            run_id not in self.model.runs,
            f"{asked}: waits in run {self.model.runs.get(run_id)!r}, answered before",
        )
        run = Run(run_id, asked.principal, (Spec(CALL, GATED, asked.n),), run_id=run_id)
        self.model.runs[run_id] = run
        self.generations.setdefault(asked.key, []).append(run)
        self.model.waiting(run, self.request_of(run), clock)
        return run

    def request_of(self, run: Run) -> toolwire.ApprovalRequest:
        assert run.run_id is not None
        record = self.step(ledger.record, self.on.store, run.run_id, CALL)
        check(record is not None, f"{run!r} waits, and its store keeps nothing of it")
        return ledger.request_of(run.run_id, record)

    def played(
        self, asked: Asked, call: Callable[[], Awaitable[Any]], *, cut: bool = False
    ) -> Run | None:
        before, start, ran = self.on.clock(), self.current(asked.key), len(self.tools.ran)
        answer = self.step(call)
        clock = Clock(before, self.on.clock())
        opened = self.learn(asked, answer, clock, start, cut=cut)
        self.ran_direct(asked, ran, 1)
        return opened

    def ran_direct(self, asked: Asked, since: int, calls: int) -> None:
        """Each call that needs no approval ran its tool once, for its principal."""
        direct = [entry for entry in self.tools.ran[since:] if entry.run_id is None]
        runs = asked.tool in ("work", "boom")
        check(
            len(direct) == (calls if runs else 0),
            f"{calls} x {asked}: its tool ran {len(direct)} times outside a run: {direct}",
        )
        for entry in direct:
            check(
                (entry.principal, entry.tool, entry.n) == (asked.principal, asked.tool, asked.n),
                f"{asked} ran as {entry}",
            )

    # -- rules --------------------------------------------------------------------------------------

    @rule(target=RunMachine.runs, principal=PRINCIPALS, tool=TOOLS, n=AMOUNTS)
    def a_call(self, principal: str, tool: str, n: int) -> Any:
        asked = Asked(principal, tool, n)
        opened = self.played(asked, lambda: self.call(asked))
        return multiple(opened) if opened is not None else multiple()

    @rule(target=RunMachine.runs, principal=PRINCIPALS, tool=TOOLS, n=AMOUNTS)
    def a_call_cut_off_mid_call(self, principal: str, tool: str, n: int) -> Any:
        asked = Asked(principal, tool, n)
        opened = self.played(asked, lambda: self.cut(asked), cut=True)
        return multiple(opened) if opened is not None else multiple()

    @rule(target=RunMachine.runs, principal=PRINCIPALS, tool=TOOLS, n=AMOUNTS)
    def two_workers_take_the_same_call_at_once(self, principal: str, tool: str, n: int) -> Any:
        asked = Asked(principal, tool, n)
        before, start, ran = self.on.clock(), self.current(asked.key), len(self.tools.ran)
        answers: list[Any] = [None, None]

        async def both() -> None:
            async def one(worker: int) -> None:
                answers[worker] = await self.call(asked, worker)

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(one, 0)
                tasks.start_soon(one, 1)

        self.step(both)
        clock = Clock(before, self.on.clock())
        # The answers in either order: one may open the next generation once the other is
        # answered; which went first is not known.
        opened = [self.learn(asked, answer, clock, start) for answer in self.ordered(answers)]
        self.ran_direct(asked, ran, 2)
        return multiple(*(run for run in opened if run is not None))

    def ordered(self, answers: list[Any]) -> list[Any]:
        """Two answers to one call made at once, the final one first (a call waiting in a new
        generation can only come after the generation before it was answered)."""
        return sorted(answers, key=lambda answer: WAITS.match(answer.content[0].text) is not None)


def test_gateway_calls_keep_the_invariants(stores: Stores, deep: bool) -> None:
    run_state_machine_as_test(lambda: Gatewayed(stores), settings=budget(deep))
