"""Governed tool calls inside DBOS workflows (``pip install 'toolwire[dbos]'``).

[DBOS Transact](https://docs.dbos.dev) checkpoints a workflow's steps in its system database
(PostgreSQL or SQLite) and, after a crash, replays the workflow from them. Inside a workflow,
[`DurableTools.execute_tool_calls`][] runs one model turn's calls as DBOS operations:

1. a step plans the turn: every call validated, governed by the policy and recorded in the
   run ledger (answers given without running, approval requests);
2. each call the plan lets run is a step of its own (or, with a DBOS queue, a workflow of its
   own that any worker process sharing the database may take);
3. while some call waits for a human, the workflow blocks on a DBOS message
   (``DBOS.recv_async``); a decision taken anywhere (``toolwire.decide``, the console,
   ``toolwire decide``) writes the ledger and sends that message, and the workflow plans the
   turn again.

The ledger stays the authority: a call runs only once its claim in the run is written, so a
step that DBOS runs again after a crash never runs a finished call again (it is answered from
the checkpoint, or from the ledger), and a call cut off mid-run is answered ``interrupted``
unless its tool is idempotent and the executor says so. Policy, principal binding,
deny-is-final and edited arguments are the executor's, exactly as without DBOS.

A process that decides without running DBOS itself (the command line, the console) wakes the
workflow through DBOS's client: set ``DBOS_SYSTEM_DATABASE_URL`` (or call
[`use_system_database`][]). Without it, the decision is recorded and the workflow reads it
when its wait times out (``recheck``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from toolwire._api import Listing, Outcome, ParsedTurn, parse_turn
from toolwire.approval import DeferredApproval
from toolwire.calls import RejectedCall, ToolCall
from toolwire.errors import ConfigurationError, MissingDependency, StoreUnavailable
from toolwire.pipeline import CallOutcome, CallTicket, TurnPlan, in_groups
from toolwire.pipeline.executor import Executor
from toolwire.provenance import Provenance
from toolwire.runs import ledger
from toolwire.runs.store import MemoryStore

try:
    from dbos import DBOS, DBOSClient
except ImportError:
    raise MissingDependency("dbos", "dbos") from None

__all__ = ["ENGINE", "DurableTools", "use_system_database", "wake"]

ENGINE = "dbos"
"""How a run's records name the engine whose workflow waits for them."""

_log = logging.getLogger("toolwire")


class DurableTools:
    """An executor's governed calls, run as DBOS operations inside workflows.

    Make it at import time, in every process that runs the workflows (it registers the DBOS
    workflow that runs a queued call, and DBOS wants its workflows registered before
    ``DBOS.launch()``), with the same ``name`` everywhere.

    Args:
        executor: the tools, policy, store and limits the calls run under. Its store is
            shared by every process (SQLite file, Redis or PostgreSQL), never the in-memory
            one: a run outlives the process that started it. Without an approver, it is
            given a [`DeferredApproval`][toolwire.DeferredApproval]: a call the policy asks
            about waits for a decision taken anywhere.
        name: names this set's DBOS steps and workflow (``{name}.plan``, ``{name}.call``),
            and the toolset its tickets belong to: a ticket runs only in the set that planned
            it. Each set of a process has a name of its own (a second one of the same name is
            a ``ConfigurationError``: DBOS would run one's queued calls with the other's
            tools).
        queue: the name of a DBOS queue (``DBOS.register_queue(name, global_concurrency=...)``
            after ``DBOS.launch()``) to spread the calls over: each call is a workflow on it,
            run by whichever worker process takes it, within the queue's concurrency limits.
            None: each call is a step of the workflow, in its process.
        deps: what the tools of calls taken from the queue in this process are given as
            ``CallContext.deps`` (a turn's own ``deps`` stay in its process).
        recheck: seconds a workflow waits for a decision's message before reading the run
            again (a decision whose sender could not reach DBOS is found then).
    """

    def __init__(
        self,
        executor: Executor,
        *,
        name: str = "toolwire",
        queue: str | None = None,
        deps: Any = None,
        recheck: float = 600.0,
    ) -> None:
        if not isinstance(executor, Executor):
            raise ConfigurationError(f"DurableTools takes an Executor, not {executor!r}")
        if isinstance(executor.store, MemoryStore):
            raise ConfigurationError(
                "DurableTools needs a run store every process reads (SQLiteStore, RedisStore "
                "or PostgresStore): a workflow is recovered by another process"
            )
        if not recheck > 0:
            raise ConfigurationError("recheck must be a positive number of seconds")
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"a DurableTools name is a non-empty string, not {name!r}")
        with _names_lock:
            taken = _NAMED.get(name)
            if taken is not None:
                raise ConfigurationError(
                    f"a DurableTools named {name!r} already exists in this process: DBOS keeps "
                    f"one {name}.call workflow, so the two would run each other's calls; give "
                    "each its own name"
                )
            _NAMED[name] = self
        if executor.approver is None:  # a call the policy asks about waits for a decision
            executor = executor.replace(approver=DeferredApproval())
        self.executor = executor
        self.name = name
        self.queue = queue
        self.deps = deps
        self.recheck = recheck

        async def run_queued(ticket: dict[str, Any]) -> dict[str, Any]:
            return await self._run_queued(ticket)

        try:  # (DBOS registers functions, not bound methods)
            self._queued_call = DBOS.workflow(name=f"{name}.call")(run_queued)
        except BaseException:
            with _names_lock:
                _NAMED.pop(name, None)
            raise

    async def execute_tool_calls(
        self,
        listing: Listing,
        response: Any,
        *,
        principal: Any = None,
        taint: Sequence[str] = (),
        run_id: str | None = None,
        deps: Any = None,
        place: str | None = None,
        provenance: Provenance | None = None,
        **answer_options: Any,
    ) -> Outcome:
        """[`toolwire.execute_tool_calls`][] inside a DBOS workflow: the turn's calls planned
        in a step, each run in a step (or on the queue), and a wait for a decision a DBOS
        message. Returns once every call is answered (a call waiting for a human blocks the
        workflow, not the process).

        Args:
            listing: what the model was shown ([`toolwire.tools`][]).
            response: the model's response.
            principal: who the turn runs for (the listing's when None).
            taint: the previous outcome's ``taint``.
            run_id: the run the turn's calls are kept in; by default one made for the turn
                and checkpointed, so a replay keeps it.
            deps: the application's dependencies, for the calls run in this process.
            place: the turn's place in its conversation, kept in its run's binding (see
                ``Executor.run``): with a ``run_id`` of your own, the run answers no other
                turn.
            provenance: the previous outcome's ``provenance`` (or ``Provenance.of`` the
                user's words; see [`toolwire.provenance`][]): the plan's policy sees where each
                call's arguments came from, and its tickets carry that where they run.
            answer_options: the provider's answer options.

        Raises:
            ConfigurationError: not called inside a DBOS workflow, or the listing's policy is
                not the executor's, or a planned call's arguments cannot be bound into its
                ticket (a before-call hook made them other than JSON).
            RunBindingConflict: ``run_id`` was started for another principal, calls or place.
            RunNotFound: the run was forgotten by its store while a call waited (nothing of
                it runs again).
            StoreUnavailable: the run store failed (the answers are in its ``outcomes``).
        """
        workflow_id = DBOS.workflow_id
        if workflow_id is None:
            raise ConfigurationError(
                "DurableTools.execute_tool_calls runs inside a DBOS workflow (@DBOS.workflow())"
            )
        if not isinstance(listing, Listing):
            raise ConfigurationError(
                "DurableTools.execute_tool_calls takes a toolwire.tools listing"
            )
        if listing.policy is not None and listing.policy is not self.executor.policy:
            raise ConfigurationError(
                "the listing was made under another policy than the executor's, which every "
                "call of the turn runs under"
            )
        if principal is None:
            principal = listing.principal
        parsed = parse_turn(listing, response, **answer_options)  # pure: the same on a replay
        if run_id is None:
            run_id = await DBOS.run_step_async({"name": f"{self.name}.run_id"}, _new_run_id)
        topic = f"toolwire:{run_id}"
        wake = {"engine": ENGINE, "workflow": workflow_id, "topic": topic}
        again = {"place": place, "resume": False}
        while True:
            body = await DBOS.run_step_async(
                {"name": f"{self.name}.plan"},
                self._plan,
                parsed.items,
                run_id,
                principal,
                tuple(taint),
                deps,
                wake,
                dict(again),
                None if provenance is None else provenance.to_dict(),
            )
            plan = TurnPlan.from_dict(parsed.items, body)
            answers: dict[int, CallOutcome | tuple[CallOutcome, str]] = dict(plan.answered)
            for ticket, ran in zip(
                plan.tickets,
                await self._run_tickets(parsed.items, plan.tickets, deps),
                strict=True,
            ):
                assert ticket.position is not None  # planned tickets know their place
                answers[ticket.position] = ran
            if not plan.waiting:
                break
            # The others are answered and kept; block until a decision's message (or recheck).
            await DBOS.recv_async(topic, timeout_seconds=self.recheck)
            again["resume"] = True  # planned again: the run must still say what ran
        return self._answer(parsed, answers, taint, run_id, provenance)

    def _answer(
        self,
        parsed: ParsedTurn,
        answers: dict[int, CallOutcome | tuple[CallOutcome, str]],
        taint: Sequence[str],
        run_id: str,
        provenance: Provenance | None = None,
    ) -> Outcome:
        """The turn's outcome, or its answers on a ``StoreUnavailable`` when a call's answer
        could not be stored."""
        outcomes, errors = [], []
        for index in range(len(parsed.items)):
            answer = answers[index]
            if isinstance(answer, tuple):
                answer, error = answer
                errors.append(error)
            outcomes.append(answer)
        if errors:
            raise StoreUnavailable(
                f"{errors[0]} (run {run_id!r}; the turn's answers are in `outcomes`)",
                outcomes=outcomes,
            )
        return parsed.answer(outcomes, taint=taint, run_id=run_id, provenance=provenance)

    # -- the steps -------------------------------------------------------------------------------

    async def _plan(
        self,
        items: Sequence[Any],
        run_id: str,
        principal: Any,
        taint: tuple[str, ...],
        deps: Any,
        wake: Mapping[str, Any],
        again: Mapping[str, Any],
        provenance: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The turn planned and what it decided kept, as JSON values (DBOS keeps them).
        ``again``: the turn's place, and whether it resumes its run (planned after a wait)."""
        plan = await self.executor.plan(
            items,
            run_id=run_id,
            principal=principal,
            taint=taint,
            provenance=None if provenance is None else Provenance.from_dict(provenance),
            deps=deps,
            wake=wake,
            place=again.get("place"),
            resume=bool(again.get("resume")),
            toolset=self.name,
        )
        return plan.to_dict()

    async def _run_tickets(
        self, items: Sequence[ToolCall | RejectedCall], tickets: Sequence[CallTicket], deps: Any
    ) -> list[CallOutcome | tuple[CallOutcome, str]]:
        """Each planned call run once, in the plan's order: the calls of a group side by side
        (started in order, as a replay must find them), a tool that is not parallel-safe
        alone. A call whose answer could not be stored comes with the store's error."""
        answers: list[CallOutcome | tuple[CallOutcome, str]] = []
        for group in in_groups(tickets, lambda ticket: ticket.alone):
            ran = await asyncio.gather(*(self._run_one(ticket, deps) for ticket in group))
            for ticket, body in zip(group, ran, strict=True):
                assert ticket.position is not None  # planned tickets know their place
                outcome = CallOutcome.from_dict(items[ticket.position], body)
                error = body.get("store_error")
                answers.append((outcome, error) if isinstance(error, str) else outcome)
        return answers

    async def _run_one(self, ticket: CallTicket, deps: Any) -> dict[str, Any]:
        body = ticket.to_dict()
        if self.queue is None:
            return await DBOS.run_step_async(
                {"name": f"{self.name}.call"}, self._run_here, body, deps
            )
        queue = await DBOS.retrieve_queue_async(self.queue)
        if queue is None:
            raise ConfigurationError(
                f"no DBOS queue named {self.queue!r}: register it after DBOS.launch() "
                f"(DBOS.register_queue({self.queue!r}, global_concurrency=...))"
            )
        handle = await queue.enqueue_async(self._queued_call, body)
        return await handle.get_result()

    async def _run_queued(self, ticket: dict[str, Any]) -> dict[str, Any]:
        """The workflow a queued call runs in, in the worker that took it."""
        return await DBOS.run_step_async(
            {"name": f"{self.name}.call"}, self._run_here, ticket, self.deps
        )

    async def _run_here(self, ticket: dict[str, Any], deps: Any) -> dict[str, Any]:
        """Claim, run and store the call, in this process (the ledger's claim keeps it to
        one run, whoever runs the step)."""
        try:
            outcome = await self.executor.run_ticket(
                CallTicket.from_dict(ticket), deps=deps, toolset=self.name
            )
        except StoreUnavailable as exc:
            if not exc.outcomes or len(exc.outcomes) != 1:
                raise
            [outcome] = exc.outcomes  # answered, but the run may not remember it
            return {**outcome.to_dict(), "store_error": str(exc)}
        return outcome.to_dict()


def use_system_database(url: str | None) -> None:
    """Wake workflows through the DBOS system database at ``url`` from a process that does not
    run DBOS itself (a console, a script deciding calls); None goes back to
    ``DBOS_SYSTEM_DATABASE_URL``."""
    global _system_database
    _system_database = url


_system_database: str | None = None

_NAMED: dict[str, DurableTools] = {}
"""The sets made in this process, by name (DBOS keeps one workflow per name)."""
_names_lock = threading.Lock()


async def wake(target: Mapping[str, Any], run_id: str, call_id: str) -> None:
    """Send the workflow waiting for ``run_id`` the message its ``recv`` waits for."""
    workflow, topic = target.get("workflow"), target.get("topic")
    if not isinstance(workflow, str) or not isinstance(topic, str):
        return
    message = {"run_id": run_id, "call_id": call_id}
    if _launched():
        await DBOS.send_async(workflow, message, topic)
        return
    url = _system_database or os.environ.get("DBOS_SYSTEM_DATABASE_URL")
    if not url:
        _log.warning(
            "call %r of run %r was decided, but its DBOS workflow was not woken: this process "
            "runs no DBOS and DBOS_SYSTEM_DATABASE_URL is not set (the workflow reads the run "
            "when its wait times out)",
            call_id,
            run_id,
        )
        return
    client = DBOSClient(system_database_url=url)
    try:
        await client.send_async(workflow, message, topic)
    finally:
        client.destroy()


def _launched() -> bool:
    from dbos import _dbos  # the instance this process launched, if any

    instance = _dbos._dbos_global_instance
    return instance is not None and bool(instance._launched)


ledger.register_waker(ENGINE, wake)


def _new_run_id() -> str:
    return f"run_{uuid.uuid4().hex}"
