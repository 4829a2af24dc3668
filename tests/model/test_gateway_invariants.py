"""The model of the invariants (see ``machinery``) run against the MCP gateway: its calls, over
the ``mcp`` SDK's in-memory client, and its tasks, over streamable HTTP on 127.0.0.1. Two
principals (a gateway each), two workers each (gateways on two connections to one store).

A gateway call the policy asks about is kept in a run of its own (``mcp-<digest>``), one per
principal, tool and arguments, and once answered the same call again is a new call, in the
next generation of that run: each generation is a run of the model, of one call (``call``).
A task is a run of its own too (its id is the run's)."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

import mcp
from hypothesis import strategies as st
from hypothesis.stateful import initialize, multiple, rule, run_state_machine_as_test
from machinery import (
    BOUND,
    GATED,
    LIMIT,
    POLICY,
    PRINCIPALS,
    TTL,
    UNDECLARED,
    Budget,
    Clock,
    Model,
    Ran,
    Run,
    RunMachine,
    Said,
    Spec,
    Stores,
    check,
    failed_text,
    on,
    ran_text,
    run_key,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp_gateway"))

import httpx2
import mcp_types as types
from auth_support import served
from task_client import Client, _text

import toolwire
from toolwire import ToolSet, ledger
from toolwire.mcp import Gateway, TaskSettings

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
                tools,
                policy=POLICY,
                store=store,
                principal=principal,
                approval_ttl=ttl,
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
        self,
        asked: Asked,
        answer: Any,
        clock: Clock,
        start: Run | None,
        *,
        cut: bool = False,
        waitable: bool = False,
    ) -> Run | None:
        """Check the answer to one call; the new generation it opened, if any. ``start``: the
        generation current when the step began; ``waitable``: whether its call could still
        wait in the step (when another call's answer was learned first)."""
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
            return self.waits(asked, waits.group(2), clock, start, waitable)
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
        outside = run_key(None, None)  # (the tools' name for a call run without a run)
        if asked.tool == UNDECLARED:
            expected: list[Said] = [("error", f"Unknown tool {asked.tool!r}.")]
        elif asked.tool == GATED:
            expected = [("error", "Denied: too much.")]
        elif asked.tool == "boom":
            expected = [("error", failed_text(asked.n, outside, CALL, asked.principal))]
        else:
            expected = [("ok", ran_text("work", asked.n, outside, CALL, asked.principal))]
        if cut:
            expected.append(("error", "*"))
        check(
            any(got == e or (e[1] == "*" and got[1].startswith(STOPPED)) for e in expected),
            f"{asked}: answered {got}; it may be answered {expected}",
        )

    def waits(
        self, asked: Asked, run_id: str, clock: Clock, start: Run | None, waitable: bool
    ) -> Run | None:
        current = self.current(asked.key)
        if current is not None and current.run_id == run_id:
            self.model.waiting(current, self.request_of(current), clock)
            return None
        if start is not None and start.run_id == run_id and waitable:
            # Two at once: this one read the run while it waited, the other answered it
            # since (its request expired, say), and was learned first.
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
        assert record is not None
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

    # -- rules -------------------------------------------------------------------------------------

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
        start, ran = self.current(asked.key), len(self.tools.ran)
        answers, clock = self.both_workers(lambda worker: self.call(asked, worker))
        waitable = start is not None and None in self.model.expected(start, 0, clock)
        # The answers in either order: one may open the next generation once the other is
        # answered; which went first is not known.
        opened = [
            self.learn(asked, answer, clock, start, waitable=waitable)
            for answer in self.ordered(answers)
        ]
        self.ran_direct(asked, ran, 2)
        return multiple(*(run for run in opened if run is not None))

    def ordered(self, answers: list[Any]) -> list[Any]:
        """Two answers to one call made at once, the final one first (a call waiting in a new
        generation can only come after the generation before it was answered)."""
        return sorted(answers, key=lambda answer: WAITS.match(answer.content[0].text) is not None)


def test_gateway_calls_keep_the_invariants(stores: Stores, budget: Budget) -> None:
    run_state_machine_as_test(on(Gatewayed, stores), settings=budget(15, 15))


# -- tasks -----------------------------------------------------------------------------------------

QUICK = TaskSettings(after=0.2, poll=0.05)
"""A call still running after 0.2 s becomes a task."""
TERMINAL = ("completed", "failed", "cancelled")
RUN_OF = re.compile(r" run=(\S+) call=call ")
CANCELLED: Said = ("cancelled", "")


class Tasked(RunMachine):
    """The gateway's calls served as MCP tasks to 2026-07-28 clients over streamable HTTP:
    alice's gateway on two workers (two connections to one store), bob's on one. A gated call
    is a task waiting for a person; a decided task is started by the next read of it, on any
    worker, and runs once; a task cancelled (waiting, or mid-call) never runs again."""

    model_of = GatewayModel

    @initialize(ttl=st.sampled_from([None, TTL]))
    def configure(self, ttl: float | None) -> None:
        self.ttl = ttl
        tools = ToolSet(self.tools.tools())
        self.clients: dict[tuple[str, int], Client] = {}
        http = self.on.serve(httpx2.AsyncClient(timeout=BOUND))
        for principal, worker in (("alice", 0), ("alice", 1), ("bob", 0)):
            store = (self.on.store, self.on.other_store)[worker]
            url = self.on.serve(
                served(
                    tools,
                    policy=POLICY,
                    store=store,
                    principal=principal,
                    tasks=QUICK,
                    approval_ttl=ttl,
                ),
            )
            self.clients[principal, worker] = Client(http, url)
        self._calls = 0

    def client(self, run: Run, worker: int = 0) -> Client:
        return self.clients[run.principal, worker]

    def new_run(self, run_id: str, asked: Asked) -> Run:
        check(run_id not in self.model.runs, f"{asked}: kept in run {run_id!r}, another's")
        run = Run(run_id, asked.principal, (Spec(CALL, asked.tool, asked.n),), run_id=run_id)
        self.model.runs[run_id] = run
        return run

    def request_of(self, run: Run) -> toolwire.ApprovalRequest:
        assert run.run_id is not None
        record = self.step(ledger.record, self.on.store, run.run_id, CALL)
        check(record is not None, f"{run!r} waits, and its store keeps nothing of it")
        assert record is not None
        return ledger.request_of(run.run_id, record)

    def finished(self, run: Run, task: dict[str, Any], clock: Clock) -> None:
        """Check a task's state as a read tells it."""
        status = task["status"]
        run.told(f"read ({clock}): {status}")
        if status not in TERMINAL:
            check(
                status == "working" and None in self.model.expected(run, 0, clock),
                f"{run!r}: {status}; it may be answered {self.model.expected(run, 0, clock)}",
            )
            return
        if status == "cancelled":
            check(
                run.calls[CALL].kept == CANCELLED,
                f"{run!r}: cancelled, and nobody cancelled it",
            )
            return
        check(status == "completed", f"{run!r}: {status} ({task})")
        result = task["result"]
        got = ("error" if result.get("isError") else "ok", _text(result))
        self.model.answered(run, 0, CALL, got, clock, cut=False)

    def read(self, run: Run, worker: int = 0) -> None:
        """Read the task (until it ends, when it cannot wait any more)."""
        before = self.on.clock()
        ends = None not in self.model.expected(run, 0, Clock(before, before))
        client = self.client(run, worker)
        task = (
            self.step(client.until, run.run_id, *TERMINAL)
            if ends
            else self.step(client.get, run.run_id)
        )
        self.finished(run, task, Clock(before, self.on.clock()))

    # -- rules -------------------------------------------------------------------------------------

    @rule(target=RunMachine.runs, principal=PRINCIPALS, tool=TOOLS, n=AMOUNTS)
    def a_call(self, principal: str, tool: str, n: int) -> Any:
        asked = Asked(principal, tool, n)
        before = self.on.clock()
        answer = self.step(functools.partial(self.clients[principal, 0].call, tool, n=n))
        clock = Clock(before, self.on.clock())
        if answer["resultType"] == "task":
            check(
                tool == GATED and n < LIMIT,
                f"{asked}: made a task ({answer}), though it needs no approval",
            )
            run = self.new_run(answer["taskId"], asked)
            self.finished(run, answer, clock)
            self.model.waiting(run, self.request_of(run), clock)
            return multiple(run)
        got = ("error" if answer.get("isError") else "ok", _text(answer))
        ran = RUN_OF.search(got[1])
        if ran is not None:  # it ran, in a run of its own (any call may have become a task)
            run = self.new_run(ran.group(1), asked)
            self.model.answered(run, 0, CALL, got, clock, cut=False)
            return multiple()
        expected = [("error", "Denied: too much."), ("error", f"Unknown tool {tool!r}.")]
        check(
            got == expected[tool == UNDECLARED] and (tool == UNDECLARED or n >= LIMIT),
            f"{asked}: answered {got} at once",
        )
        return multiple()

    @rule(run=RunMachine.runs, worker=st.integers(0, 1))
    def the_task_read(self, run: Run, worker: int) -> None:
        self.read(run, worker if run.principal == "alice" else 0)

    @rule(run=RunMachine.runs)
    def two_workers_read_it_at_once(self, run: Run) -> None:
        if run.principal != "alice":
            return
        before = self.on.clock()
        ends = None not in self.model.expected(run, 0, Clock(before, before))
        tasks: list[Any] = [None, None]

        async def both() -> None:
            async def one(worker: int) -> None:
                client = self.clients["alice", worker]
                tasks[worker] = await (
                    client.until(run.run_id, *TERMINAL) if ends else client.get(run.run_id)
                )

            async with anyio.create_task_group() as group:
                group.start_soon(one, 0)
                group.start_soon(one, 1)

        self.step(both)
        clock = Clock(before, self.on.clock())
        for task in tasks:
            self.finished(run, task, clock)

    @rule(run=RunMachine.runs)
    def its_client_cancels_it(self, run: Run) -> None:
        self.cancel(run)

    def cancel(self, run: Run) -> None:
        client = self.client(run)
        before = self.on.clock()
        acked = self.step(client.task, "cancel", run.run_id)
        task = self.step(client.get, run.run_id)
        call = run.calls[CALL]
        if call.kept is None and "result" in acked and task["status"] == "cancelled":
            call.kept = CANCELLED
            run.told("cancelled")
            return
        self.finished(run, task, Clock(before, self.on.clock()))

    @rule(run=RunMachine.runs)
    def the_task_cancelled_mid_call(self, run: Run) -> None:
        """A decided task started by a read, its tool holding, then cancelled: it never runs
        again, and is cancelled for good."""
        call = run.calls[CALL]
        if call.kept is not None or call.decision is None or not call.decision.allowed:
            return
        before = self.on.clock()
        client = self.client(run)

        async def started() -> tuple[Any, bool]:
            with self.tools.armed() as held:
                task = await client.get(run.run_id)
                with anyio.move_on_after(1):  # (a task refused by the policy never holds)
                    await held.wait()
                return task, self.tools.held

        task, holds = self.step(started)
        if task["status"] not in TERMINAL and not holds:
            # It never reached the tool (the policy refused the decided arguments): it ends by
            # itself, though the read that started it may have found it still working.
            task = self.step(client.until, run.run_id, *TERMINAL)
        if task["status"] in TERMINAL or not holds:
            self.finished(run, task, Clock(before, self.on.clock()))
            return
        self.cancel(run)

    @rule(run=RunMachine.runs)
    def another_principal_reads_or_cancels_it(self, run: Run) -> None:
        other = "bob" if run.principal == "alice" else "alice"
        for method in ("get", "cancel"):
            refused = self.step(self.clients[other, 0].task, method, run.run_id)
            check(
                "result" not in refused and refused["error"]["code"] == types.INVALID_PARAMS,
                f"{run!r}: {other}'s tasks/{method} was answered {refused}",
            )


def test_gateway_tasks_keep_the_invariants(stores: Stores, budget: Budget) -> None:
    run_state_machine_as_test(on(Tasked, stores), settings=budget(6, 12))
