"""Tasks: the gateway's calls served as MCP tasks (the ``io.modelcontextprotocol/tasks``
extension, SEP-2663, on 2026-07-28 connections), kept in its run ledger.

A client that declares the extension may get a task handle for a ``tools/call``
(``resultType: "task"``) instead of the call's answer, then poll ``tasks/get`` for the task's
state and answer, answer its questions with ``tasks/update``, and end it with
``tasks/cancel``. The gateway decides which calls become tasks: one the policy asks about, one
still running after ``TaskSettings.after`` seconds, and every call of a tool its server
declares ``execution.taskSupport: "required"``. A call that finishes sooner is answered at
once. A worker runs at most ``TaskSettings.per_principal`` tasks of one principal and
``TaskSettings.most`` in all; past that a call is refused, and a decided task waits to be
started by a later reader (every start counts, a restart included).

A task is a run of the gateway's ledger (its run id is the task id), so its state is what the
run store keeps of the call: any gateway on the same store answers ``tasks/get``, and a
gateway restarted keeps its tasks:

- **working**: claimed by a worker that runs it; or decided and not yet run, when the next
  ``tasks/get`` or ``tasks/update`` (on any worker) starts it; or waiting for a decision the
  client cannot give (it declared no elicitation): decide it with ``toolwire decide`` or the
  inbox, as any call waiting in a run.
- **input_required**: waiting for the client: the approval form (only where the gateway would
  ask this client: it answers forms, the gateway asks them, and the form shows the call
  whole), or the questions the call's server asked (elicitation), each kept in the run until
  answered.
- **completed**: answered, the answer inlined (a tool's failure is ``isError``, still
  completed).
- **failed**: the server answered with a JSON-RPC error (kept), or the worker running it
  stopped (its lease lapsed: the call may or may not have taken effect, and is not run again).
- **cancelled**: ``tasks/cancel`` answered it (the one answer a run keeps).

A task id names its principal (a digest of it): another principal's ``tasks/get`` finds no
such task, as for an id never issued, one past its ttl, or one the store no longer keeps.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
import re
import secrets
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolwire._json import load_json
from toolwire.approval import ApprovalPending, ApprovalRequest
from toolwire.calls import ToolCall, ToolResult, principal_json
from toolwire.errors import ConfigurationError, StoreUnavailable, ToolwireError
from toolwire.inputs import InputAnswer, InputRequest, accept, cancel, decline
from toolwire.mcp._relay import Relay, kept_error
from toolwire.mcp.server._sealed import SEALED_KEY, ArgumentSeal
from toolwire.runs import Keep, ledger, update
from toolwire.runs.store import CallRecord

__all__ = [
    "EXTENSION",
    "TaskMethods",
    "TaskParams",
    "TaskSettings",
    "TaskView",
    "Tasks",
    "UnknownTask",
    "continued_task",
    "created_at",
    "declares_tasks",
    "new_task_id",
    "routing_error",
    "task_relay",
    "task_routing",
    "task_view",
]

_log = logging.getLogger("toolwire")

EXTENSION = "io.modelcontextprotocol/tasks"
CALL_ID = "call"
"""The one call of a task's run."""
STATE_KEY = "toolwire_task"
"""The key of a ``requestState`` that carries the task a handed-back round belongs to."""
APPROVAL_KEY = "toolwire_approval"
"""The key of the approval form among a task's ``inputRequests``."""

_TASK_ID = re.compile(r"^task-([0-9a-f]{1,12})-([A-Za-z0-9_-]{22})-([0-9a-f]{16})$")
_SKEW = 300.0
"""Seconds a task id's creation may lie ahead of this machine's clock (another worker's)."""
_INTERRUPTED = -32603
"""The JSON-RPC code of a task whose worker stopped (an internal error)."""
_EXPIRED = "its request expired unanswered: it will be answered refused"
_UNOPENED = ToolResult.error(
    "failed",
    "Not run: the call's arguments are kept sealed in its run (the gateway redacts what runs "
    "keep) with a key this gateway does not hold: serve every gateway of the store with the "
    "same state keys (--state-key-env) to run each other's tasks.",
)


class UnknownTask(ToolwireError):
    """No such task: never issued, another principal's, past its ttl, or no longer kept by
    the store (a bounded store evicts old runs)."""


@dataclass(frozen=True, slots=True)
class TaskSettings:
    """How the gateway serves tasks."""

    after: float = 0.5
    """Seconds a call runs before it becomes a task (sooner: answered at once)."""
    ttl: float = 86_400.0
    """Seconds a task is kept from its creation (``ttlMs``); after that it is unknown."""
    poll: float = 0.5
    """Seconds the client is asked to wait between polls (``pollIntervalMs``)."""
    per_principal: int = 64
    """Tasks of one principal a gateway worker runs at once; past it, its calls are refused
    (a task costs its client nothing to start, its worker a job)."""
    most: int = 1024
    """Tasks a gateway worker runs at once, of every principal."""

    def __post_init__(self) -> None:
        for name in ("after", "ttl", "poll"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise ConfigurationError(f"task {name} is a number of seconds, 0 or more")
        if not self.ttl > 0 or not self.poll > 0:
            raise ConfigurationError("a task's ttl and poll interval are more than 0 seconds")
        for name in ("per_principal", "most"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"task {name} is a whole number, 1 or more")


# -- task ids -----------------------------------------------------------------------------------


def _owner(principal: Any) -> str:
    return hashlib.sha256(ledger.principal_key(principal).encode()).hexdigest()[:16]


def new_task_id(principal: Any, now: float | None = None) -> str:
    """A new task's id: when it was created (milliseconds), 128 random bits, and a digest of
    its principal (whose tasks/get alone finds it)."""
    created = int((now if now is not None else time.time()) * 1000)
    return f"task-{created:x}-{secrets.token_urlsafe(16)}-{_owner(principal)}"


def created_at(task_id: Any, principal: Any) -> float | None:
    """When the task ``task_id`` of ``principal`` was created (seconds since the epoch); None
    for an id that is no task id, or another principal's."""
    found = _TASK_ID.match(task_id) if isinstance(task_id, str) else None
    if found is None or not secrets.compare_digest(found.group(3), _owner(principal)):
        return None
    created = int(found.group(1), 16) / 1000
    return created if created <= time.time() + _SKEW else None  # never issued yet


def _iso(at: float) -> str:
    moment = datetime.datetime.fromtimestamp(at, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- a task's state, from its record -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TaskView:
    """A task as ``tasks/get`` shows it (see the module docstring for each status)."""

    status: str
    updated: float
    message: str | None = None
    answer: ToolResult | None = None
    """A completed task's answer."""
    error: Mapping[str, Any] | None = None
    """A failed task's JSON-RPC error (``code``, ``message``, ``data``)."""
    questions: tuple[InputRequest, ...] = ()
    """An ``input_required`` task's open questions (the approval form's key is
    ``APPROVAL_KEY``)."""
    approval: ApprovalRequest | None = None
    """The request of a task waiting for a decision."""


def task_view(record: CallRecord, created: float, now: float | None = None) -> TaskView:
    """What the record of a task's call says of the task (a pure reading), at ``now`` (the
    store's time; this host's when not given): a request past its deadline shows no form and
    no question, as nothing can answer it any more (its next reader answers the task)."""
    updated = max(
        at for at in (created, record.started_at, record.decided_at, record.finished_at) if at
    )
    result = record.result
    if result is not None:
        if result.error_kind == "cancelled":
            return TaskView("cancelled", updated, message=result.text[:500])
        error = kept_error(result)
        if error is not None:
            return TaskView("failed", updated, error=error)
        if result.error_kind == "interrupted":
            error = {"code": _INTERRUPTED, "message": result.text[:500]}
            return TaskView("failed", updated, error=error)
        return TaskView("completed", updated, answer=result)
    if record.state == "pending" and ledger.expired(record, now):
        return TaskView("working", updated, message=_EXPIRED)
    if ledger.awaits_input(record):
        wait = record.input_wait
        assert wait is not None
        return TaskView("input_required", updated, questions=tuple(wait.unanswered))
    if record.state == "pending" and record.request is not None:
        try:
            request = ApprovalRequest.from_dict(record.request)
        except ConfigurationError:
            request = None
        why = f" ({request.reason})" if request is not None and request.reason else ""
        message = f"waits for approval{why}: decide it with toolwire decide {record_ids(record)}"
        return TaskView("working", updated, message=message, approval=request)
    return TaskView("working", updated)


def _goes_on(record: CallRecord, now: float) -> bool:
    """Whether a kept task's call goes on when it is read: decided, or its request expired
    (its run answers it)."""
    if record.state in ("approved", "denied"):
        return True
    return record.state == "pending" and ledger.expired(record, now)


def record_ids(record: CallRecord) -> str:
    """The run id and call id ``toolwire decide`` takes for a task's record."""
    kept = record.request or {}
    return f"{kept.get('run_id', '?')} {record.call_id}"


def _round(task_id: str, questions: tuple[InputRequest, ...]) -> Any:
    """A task's questions handed back in its ``tools/call``'s answer: an InputRequiredResult
    whose state names the task (sealed by the gateway's request-state boundary)."""
    requests: dict[str, Any] = {
        q.key: types.ElicitRequest.model_validate(_elicitation(q)) for q in questions
    }
    state = json.dumps({STATE_KEY: task_id})
    return types.InputRequiredResult(input_requests=requests, request_state=state)


TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})


def routing_error(ctx: Any) -> str | None:
    """Why a ``tasks/*`` request over HTTP cannot be served: its ``Mcp-Name`` header does not
    name the task its body does (None: it does, or it is no such request)."""
    if ctx.method not in TASK_METHODS or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return None
    headers = getattr(ctx.request, "headers", None)
    if headers is None:  # not over HTTP: no routing headers
        return None
    from mcp.shared.inbound import decode_header_value

    named = decode_header_value(headers.get("mcp-name"))
    wanted = (ctx.params or {}).get("taskId")
    if named is None or named.strip() != wanted:
        return "the Mcp-Name header does not match the request's taskId"
    return None


def continued_task(state: str | None) -> str | None:
    """The task a ``tools/call``'s ``requestState`` continues (see ``_round``), or None."""
    if state is None:
        return None
    kept = load_json(state)
    found = kept.get(STATE_KEY) if isinstance(kept, dict) else None
    return found if isinstance(found, str) else None


def _answer_of(value: Any) -> InputAnswer | None:
    """An ``ElicitResult`` (or its JSON form) as the answer it gives; None for anything
    else."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(by_alias=True, mode="json", exclude_none=True)
    if not isinstance(value, Mapping):
        return None
    action, content = value.get("action"), value.get("content")
    if action == "accept" and (content is None or isinstance(content, Mapping)):
        return accept(content)
    if action == "decline":
        return decline()
    if action == "cancel":
        return cancel()
    return None


def _elicitation(question: InputRequest) -> dict[str, Any]:
    """A kept question as the ``elicitation/create`` request it was."""
    params: dict[str, Any] = {"mode": question.mode, "message": question.message}
    if question.mode == "url":
        params["url"] = question.url
        params["elicitationId"] = question.key
    else:
        params["requestedSchema"] = dict(question.requested_schema or {"type": "object"})
    return {"method": "elicitation/create", "params": params}


# -- the gateway's side ---------------------------------------------------------------------------

Resume = Callable[[str, ApprovalRequest], "tuple[ToolCall, Any, Any, Any] | None"]
"""Rebuilds a kept task's call from its kept request: (the call, its principal, the executor
to run it with, the relay of its server's requests), or None when its tool is no longer
served."""


@dataclass(eq=False)
class _Job:
    """A task's call running in the background on this worker."""

    done: anyio.Event = field(default_factory=anyio.Event)
    """Set once its run returned (answered, or waiting)."""
    result: ToolResult | None = None
    """Its answer, once answered."""
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    """Cancels it (before it starts, too)."""
    owner: str = ""
    """Its principal's key."""


class Tasks:
    """The tasks of one gateway: the jobs its worker runs in the background (while the
    server runs, see [`running`][]), and the ``tasks/*`` methods, all read from the store.

    ``form`` makes the approval form of a waiting request (or None when it cannot show it);
    ``answer`` shapes a completed task's answer as a ``CallToolResult``; ``decide`` records
    the client's approval form's answer; ``resume`` rebuilds a kept task's call; ``keys``
    seal a task's own arguments where its run keeps them redacted (see
    ``toolwire.mcp.server._sealed``)."""

    def __init__(
        self,
        store: Any,
        settings: TaskSettings,
        *,
        form: Callable[[ApprovalRequest], dict[str, Any] | None],
        answer: Callable[[ToolResult], Any],
        decide: Callable[[ApprovalRequest, Any, Any], Any],
        resume: Resume,
        keys: Sequence[str | bytes] | None = None,
        console: Callable[[ApprovalRequest], str] | None = None,
    ) -> None:
        self.store = store
        self._console = console
        self.settings = settings
        self._form = form
        self._answer = answer
        self._decide = decide
        self._resume = resume
        self._seal = ArgumentSeal(keys)
        self._group: anyio.abc.TaskGroup | None = None
        self._jobs: dict[str, _Job] = {}
        """The tasks this worker runs now, by id (one job each)."""

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """While open, this worker runs tasks (around the server's life); closing ends the
        jobs still running (their calls are answered interrupted by the next reader)."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()

    @property
    def available(self) -> bool:
        return self._group is not None

    def refusal(self, principal: Any) -> str | None:
        """Why this worker takes no new task of ``principal`` now (see
        ``TaskSettings.per_principal`` and ``most``), or None."""
        owner = ledger.principal_key(principal)
        mine = sum(1 for job in self._jobs.values() if job.owner == owner)
        if mine >= self.settings.per_principal:
            return f"{mine} tasks of this client run on this gateway now (at most " + (
                f"{self.settings.per_principal})"
            )
        if len(self._jobs) >= self.settings.most:
            return f"this gateway runs {len(self._jobs)} tasks now (at most {self.settings.most})"
        return None

    def live(self, task_id: str, principal: Any) -> float | None:
        """When ``principal``'s task ``task_id`` was created; None for no task of its own, or
        one past its ttl."""
        created = created_at(task_id, principal)
        if created is None or created + self.settings.ttl < time.time():
            return None
        return created

    async def call(
        self,
        task_id: str,
        call: ToolCall,
        principal: Any,
        executor: Any,
        relay: Any,
        *,
        required: bool,
        form: bool,
        hand_back: bool,
    ) -> Any:
        """A ``tools/call`` of a client that declared tasks (see [`follow`][]); refused,
        past this worker's limits (see [`refusal`][])."""
        busy = self.refusal(principal)
        job = self._start(task_id, call, principal, executor, relay)
        if job is None:
            return ToolResult.error("unavailable", f"The call was refused: {busy}.")
        return await self.follow(
            task_id, job, principal, required=required, form=form, hand_back=hand_back
        )

    async def answered(
        self,
        task_id: str,
        responses: Mapping[str, Any],
        principal: Any,
        *,
        by: Any,
        required: bool,
        form: bool,
    ) -> Any:
        """The retry of a ``tools/call`` whose task's round was handed back with its answer
        (``inputResponses``): the answers recorded, the task followed again."""
        job = await self.update(task_id, responses, principal, by=by, form=form)
        return await self.follow(
            task_id, job, principal, required=required, form=form, hand_back=True
        )

    async def follow(
        self,
        task_id: str,
        job: _Job | None,
        principal: Any,
        *,
        required: bool,
        form: bool,
        hand_back: bool,
    ) -> Any:
        """What a task's ``tools/call`` is answered with: the call's answer, when it is
        answered within ``after`` seconds and its tool does not require a task; with
        ``hand_back``, its server's questions asked by then, as the call's
        ``InputRequiredResult`` (a retry with the answers goes on, see [`answered`][]);
        else the CreateTaskResult of the task it goes on as (once the run keeps it: a
        ``tasks/get`` right after finds it).

        Raises:
            StoreUnavailable: the run store cannot be reached.
        """
        if job is not None:
            with anyio.move_on_after(self.settings.after):
                await job.done.wait()
            if job.done.is_set() and job.result is not None and not required:
                return job.result
        created = created_at(task_id, principal)
        assert created is not None
        record = await self._recorded(task_id, job)
        if record is None:  # the run kept nothing of it (its store failed, say)
            if job is not None and job.result is not None:
                return job.result
            return ToolResult.error(
                "unavailable", "The call could not be kept as a task: its run store failed."
            )
        view = task_view(record, created)
        waiting = job is None or job.done.is_set()
        if hand_back and waiting and view.questions and view.approval is None:
            return _round(task_id, view.questions)
        return self.created(task_id, created, view, form=form)

    async def _recorded(self, task_id: str, job: _Job | None) -> CallRecord | None:
        """The task's record, once its run keeps one (a moment after the job starts); None
        when its job ended without one."""
        pause = 0.002
        while True:
            record = await ledger.record(self.store, task_id, CALL_ID)
            if record is not None or job is None or job.done.is_set():
                return record
            await anyio.sleep(pause)
            pause = min(pause * 2, 0.05)

    def _start(
        self,
        task_id: str,
        call: ToolCall,
        principal: Any,
        executor: Any,
        relay: Any,
        *,
        resume: bool = False,
    ) -> _Job | None:
        """Run the task's call in the background, in its run (registered at once: a second
        reader of the task on this worker does not start another); None, starting nothing,
        past this worker's limits: every start counts, a decided task's restart as much as a
        new call (one refused now is started by a later reader). A restart (``resume``) goes on
        only in a run its store still keeps: where it forgot the run, nothing runs again."""
        if self.refusal(principal) is not None:
            return None
        job = self._jobs[task_id] = _Job(owner=ledger.principal_key(principal))
        assert self._group is not None
        self._group.start_soon(self._run, task_id, call, principal, executor, relay, job, resume)
        return job

    async def _run(
        self,
        task_id: str,
        call: ToolCall,
        principal: Any,
        executor: Any,
        relay: Any,
        job: _Job,
        resume: bool,
    ) -> None:
        from toolwire.mcp._relay import relaying

        token = relaying.set(relay)
        try:
            with job.scope:
                try:
                    (outcome,) = await executor.run(
                        [call], run_id=task_id, principal=principal, resume=resume
                    )
                except ApprovalPending:  # it waits in its run; tasks/get says so
                    await self._keep_waiting(task_id, call)
                    return
                job.result = outcome.result
                # Every answer of a task is its answer: one a run keeps for no other call
                # (a server unavailable, say) is kept for the task.
                await ledger.settle(self.store, task_id, CALL_ID, outcome.result)
        except ToolwireError as exc:  # the store failed, say: the next reader tries again
            _log.warning("task %s could not go on: %s", task_id, exc)
        except Exception:  # never the server's: logged, and the task stays as its run says
            _log.exception("task %s failed", task_id)
        finally:
            relaying.reset(token)
            if self._jobs.get(task_id) is job:
                del self._jobs[task_id]
            job.done.set()

    # -- reading and moving a task on --------------------------------------------------------

    async def view(self, task_id: str, created: float) -> TaskView:
        return (await self._moved_on(task_id, created))[0]

    async def _moved_on(self, task_id: str, created: float) -> tuple[TaskView, _Job | None]:
        """The task's state now; a task decided or answered but not run yet is started (by
        this worker, if no other claims it first), one whose request expired is answered
        (by its call's run, as any expired request is: refused, saying so), and one whose
        worker stopped is answered interrupted.

        Raises:
            StoreUnavailable: the run store cannot be reached.
        """
        record = await ledger.record(self.store, task_id, CALL_ID)
        if record is None:
            raise UnknownTask(f"no such task: {task_id[:100]!r}")
        now: float | None = None
        if record.result is None and task_id not in self._jobs:
            now = await ledger.store_time(self.store)  # leases and deadlines: the store's time
            if record.state == "running" and not ledger.held(record, now):
                lapsed = ToolResult.error(
                    "interrupted",
                    "The gateway running the task stopped before it finished: it may or may "
                    "not have taken effect, and it is not run again.",
                )
                await ledger.settle(self.store, task_id, CALL_ID, lapsed, only_lapsed=True)
                record = await ledger.record(self.store, task_id, CALL_ID) or record
            elif self.available and _goes_on(record, now):
                job = await self._restart(task_id, record)
                if job is not None and record.state == "pending":  # expired: answered at once
                    with anyio.move_on_after(self.settings.after):
                        await job.done.wait()
                if job is None or job.done.is_set():  # answered meanwhile, maybe
                    record = await ledger.record(self.store, task_id, CALL_ID) or record
                return task_view(record, created, now), job
        return task_view(record, created, now), None

    async def _restart(self, task_id: str, record: CallRecord) -> _Job | None:
        """Run a kept task's call again in its run, rebuilt as a call is made, with the
        arguments the run was bound to (its own, opened where the run keeps them redacted):
        it is decided (or its questions are all answered, or its request expired), and its
        run answers it (once: the run's claim sees to that). None when nothing started: its
        tool is no longer served, this worker runs all the tasks it may, or its arguments
        are not kept yet (the worker that made it writes them a moment after its request).

        Raises:
            StoreUnavailable: the run store cannot be reached.
        """
        if record.request is None:
            return None
        try:
            request = ApprovalRequest.from_dict(record.request)
        except ConfigurationError:
            return None
        sealed = record.request.get(SEALED_KEY)
        if sealed is not None:
            arguments = self._seal.open(task_id, sealed)
            if arguments is None:  # sealed with a key of another gateway, or of none now
                await ledger.settle(self.store, task_id, CALL_ID, _UNOPENED)
                return None
            request = replace(request, arguments=arguments)
        rebuilt = self._resume(task_id, request)
        if rebuilt is None:
            return None
        call, principal, executor, relay = rebuilt
        if ledger.fingerprint(call) != record.fingerprint:  # a redacted view, no seal yet
            return None
        return self._start(task_id, call, principal, executor, relay, resume=True)

    async def _keep_waiting(self, task_id: str, call: ToolCall) -> None:
        """Keep beside a waiting task's request the call's own arguments, sealed, where the
        run keeps them otherwise (``redact``: a later reader rebuilds the call from them), and
        make the request expire with the task (its ``ttl``) if it would outlive it: a task its
        client abandoned does not wait for a person forever.

        Raises:
            StoreUnavailable: the run store cannot be reached.
        """
        own = principal_json(call.arguments)
        sealed = self._seal.close(task_id, call.arguments)
        deadline = await ledger.store_time(self.store) + self.settings.ttl

        def kept(current: CallRecord | None) -> CallRecord | Keep[None]:
            request = current.request if current is not None else None
            if current is None or current.result is not None or request is None:
                return Keep(None)
            wanted = dict(request)
            if (
                request.get("arguments") != own
                and self._seal.open(task_id, request.get(SEALED_KEY)) != own
            ):
                wanted[SEALED_KEY] = sealed
            expires = request.get("expires_at")
            if not (isinstance(expires, int | float) and expires <= deadline):
                wanted["expires_at"] = deadline
            return Keep(None) if wanted == request else current.with_(request=wanted)

        await update(self.store, task_id, CALL_ID, kept)

    def wire(self, task_id: str, created: float, view: TaskView, *, form: bool) -> dict[str, Any]:
        """``tasks/get``'s answer (a DetailedTask): with ``form``, a decision waiting is the
        approval form among its ``inputRequests``."""
        status = view.status
        shown: dict[str, Any] = {
            "resultType": "complete",
            "taskId": task_id,
            "status": status,
            "createdAt": _iso(created),
            "lastUpdatedAt": _iso(view.updated),
            "ttlMs": int(self.settings.ttl * 1000),
            "pollIntervalMs": max(1, int(self.settings.poll * 1000)),
        }
        if view.message is not None:
            shown["statusMessage"] = view.message
            if view.approval is not None and self._console is not None:
                page = self._console(view.approval)
                shown["statusMessage"] += f"; or approve or deny it in the console: {page}"
        if view.answer is not None:
            shown["result"] = self._answer(view.answer).model_dump(
                by_alias=True, mode="json", exclude_none=True
            )
        if view.error is not None:
            shown["error"] = dict(view.error)
        requests = self._requests(view, form=form)
        if requests:
            shown["status"] = "input_required"
            shown["inputRequests"] = requests
        return shown

    def _requests(self, view: TaskView, *, form: bool) -> dict[str, Any]:
        """What the task asks its client: its server's questions, and with ``form`` the
        approval form of a decision waiting."""
        requests = {q.key: _elicitation(q) for q in view.questions}
        if form and view.approval is not None:
            approval = self._form(view.approval)
            if approval is not None:
                requests[APPROVAL_KEY] = approval
        return requests

    def created(
        self, task_id: str, created: float, view: TaskView, *, form: bool
    ) -> dict[str, Any]:
        """The ``tools/call`` answer that hands the client a task (a CreateTaskResult: its
        questions, if any, are for ``tasks/get`` to show)."""
        asks = bool(self._requests(view, form=form))
        return {
            "resultType": "task",
            "taskId": task_id,
            "status": "input_required" if asks else view.status,
            "createdAt": _iso(created),
            "lastUpdatedAt": _iso(view.updated),
            "ttlMs": int(self.settings.ttl * 1000),
            "pollIntervalMs": max(1, int(self.settings.poll * 1000)),
        }

    async def update(
        self,
        task_id: str,
        responses: Mapping[str, Any],
        principal: Any,
        *,
        by: Any,
        form: bool,
    ) -> _Job | None:
        """Record the client's answers (``tasks/update``), as given ``by``: its server's open
        questions' (each kept in the run; once every one is answered the task goes on, on
        this worker: its job is returned) and, when the client may decide the call
        (``form``: it answers forms, and the gateway would show it this one), the approval
        form's. An answer to no open question is ignored, and so is every answer to a
        request past its deadline: the task is answered instead (refused, saying its request
        expired), as ``tasks/get`` then shows.

        Raises:
            UnknownTask: the store keeps no such task.
            ToolwireError: an answer that does not fit its question, one already answered
                otherwise, or a decision from a client that may not decide.
            StoreUnavailable: the run store cannot be reached.
        """
        record = await ledger.record(self.store, task_id, CALL_ID)
        if record is None:
            raise UnknownTask(f"no such task: {task_id[:100]!r}")
        if record.result is not None:
            return None
        now = await ledger.store_time(self.store)  # a request's deadline: the store's time
        if record.state == "pending" and ledger.expired(record, now):
            responses = {}  # too late for any answer: its run answers it, just below
        wait = record.input_wait
        open_keys = {q.key for q in wait.unanswered} if wait is not None else set()
        for key, value in responses.items():
            if key == APPROVAL_KEY and record.state == "pending" and record.request is not None:
                request = ApprovalRequest.from_dict(record.request)
                # Only where the gateway asks the client: a form shown whole, to a client
                # that answers forms; otherwise the decision is a human's, outside.
                if not form or self._form(request) is None:
                    raise ToolwireError(
                        "this client cannot decide the call: it waits for a decision made "
                        "outside the gateway (toolwire decide, the inbox)"
                    )
                await self._decide(request, value, by)
            elif key in open_keys:
                answer = _answer_of(value)
                if answer is None:
                    raise ToolwireError(f"the answer to {key!r} is not an elicitation result")
                round = wait.round if wait is not None and wait.asked > 1 else None
                await ledger.respond(
                    self.store, task_id, CALL_ID, answer, key=key, round=round, by=by
                )
        created = created_at(task_id, principal) or 0.0
        return (await self._moved_on(task_id, created))[1]  # started once decided or answered

    async def cancel(self, task_id: str) -> None:
        """End the task (``tasks/cancel``): its answer is ``cancelled`` unless it has one;
        this worker's job of it is cancelled too (another worker's finishes, and its answer
        is dropped).

        Raises:
            UnknownTask: the store keeps no such task.
            StoreUnavailable: the run store cannot be reached.
        """
        said = ToolResult.error("cancelled", "The task was cancelled by its client.")
        if await ledger.record(self.store, task_id, CALL_ID) is None:
            raise UnknownTask(f"no such task: {task_id[:100]!r}")
        await ledger.settle(self.store, task_id, CALL_ID, said)
        job = self._jobs.get(task_id)
        if job is not None:
            job.scope.cancel()


# -- the MCP side ------------------------------------------------------------------------------


class TaskParams(types.RequestParams):
    """The params of ``tasks/get``, ``tasks/update`` and ``tasks/cancel``."""

    task_id: str
    input_responses: dict[str, Any] | None = None


def declares_tasks(ctx: ServerRequestContext[Any]) -> bool:
    """Whether the request's client declared the tasks extension (2026-07-28 only: a task's
    answer has no shape on the handshake revisions)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    capabilities = ctx.session.client_capabilities
    extensions = capabilities.extensions if capabilities is not None else None
    return extensions is not None and EXTENSION in extensions


async def task_routing(ctx: ServerRequestContext[Any], call_next: Any) -> Any:
    """Middleware: refuse a ``tasks/*`` request whose ``Mcp-Name`` header does not name its
    task (SEP-2243's routing headers, which SEP-2663 extends to the task methods)."""
    why = routing_error(ctx)
    if why is not None:
        raise MCPError(code=types.HEADER_MISMATCH, message=why)
    return await call_next(ctx)


def task_relay(relay: Relay) -> Relay:
    """A task's relay: its server's questions wait in its run, and nothing streams to a
    request that is answered long before its call."""
    relay.keeps_rounds = True
    relay.log = None
    relay.progress = None
    return relay


@dataclass(frozen=True)
class TaskMethods:
    """The ``tasks/*`` methods of a gateway's MCP server, for its ``tasks``:
    ``principal_of(ctx)`` says whose request it is (raising for nobody), ``can_elicit(ctx)``
    whether its client answers forms, ``answerer(principal)`` who its answers are recorded as
    given by."""

    tasks: Tasks
    principal_of: Callable[[Any], Any]
    can_elicit: Callable[[Any], bool]
    answerer: Callable[[Any], Any]

    def serve(self, server: Any) -> None:
        """Declare the tasks extension and serve its methods (to 2026-07-28 clients that
        declare it: others are told it is a capability they lack)."""
        server.extensions[EXTENSION] = {}
        for method, handler in (
            ("tasks/get", self.get),
            ("tasks/update", self.update),
            ("tasks/cancel", self.cancel),
        ):
            server.add_request_handler(method, TaskParams, handler)
        server.middleware.append(task_routing)

    def _task(self, ctx: Any, task_id: str) -> tuple[Any, float]:
        """The principal of a ``tasks/*`` request and when its task was created.

        Raises:
            MCPError: the client did not declare tasks, or there is no such task of its own.
        """
        if not declares_tasks(ctx):
            raise MCPError(
                code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                message=f"tasks are served to clients that declare {EXTENSION}",
                data={"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
            )
        try:
            principal = self.principal_of(ctx)
        except ToolwireError:  # not authenticated: nobody's task
            raise MCPError(code=types.INVALID_PARAMS, message="no such task") from None
        created = self.tasks.live(task_id, principal)
        if created is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"no such task: {task_id[:100]!r}")
        return principal, created

    async def get(self, ctx: Any, params: TaskParams) -> Any:
        _, created = self._task(ctx, params.task_id)
        try:
            view = await self.tasks.view(params.task_id, created)
        except UnknownTask as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        return self.tasks.wire(params.task_id, created, view, form=self.can_elicit(ctx))

    async def update(self, ctx: Any, params: TaskParams) -> Any:
        principal, _ = self._task(ctx, params.task_id)
        responses = params.input_responses or {}
        try:
            await self.tasks.update(
                params.task_id,
                responses,
                principal,
                by=self.answerer(principal),
                form=self.can_elicit(ctx),
            )
        except StoreUnavailable:
            raise
        except ToolwireError as exc:  # no such task, or an answer that cannot be taken
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)[:500]) from None
        return {"resultType": "complete"}

    async def cancel(self, ctx: Any, params: TaskParams) -> Any:
        self._task(ctx, params.task_id)
        try:
            await self.tasks.cancel(params.task_id)
        except UnknownTask as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        return {"resultType": "complete"}
