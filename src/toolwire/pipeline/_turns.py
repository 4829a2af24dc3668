"""A turn of the executor: its calls, their outcomes so far, the calls planned to run, and
what it keeps of its run. The executor and its decider share it; the planner never sees it."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, NotRequired, TypeVar

import anyio
import pydantic
from typing_extensions import TypedDict

from toolwire._values import argument_problem, describe_exception
from toolwire.approval import ApprovalRequest
from toolwire.calls import (
    Caller,
    RejectedCall,
    ToolCall,
    ToolResult,
    canonical_json,
    principal_json,
)
from toolwire.context import CallContext
from toolwire.errors import (
    ConfigurationError,
    RunBindingConflict,
    StoreUnavailable,
    ToolNotFound,
)
from toolwire.inputs import InputDeferred
from toolwire.pipeline._plan import Answer, Wait
from toolwire.provenance import UNKNOWN_ORIGINS, Origins, Provenance
from toolwire.runs import (
    CallRecord,
    Run,
    binding_for,
    checked_result,
    encode_result,
    fingerprint,
    input_round,
    valid_id,
)
from toolwire.runs.store import RunStore
from toolwire.tool import Tool

__all__ = [
    "NOT_RUN",
    "CallOutcome",
    "CallTicket",
    "Planned",
    "Turn",
    "TurnPlan",
    "in_groups",
    "waiting_request",
]

_T = TypeVar("_T")

NOT_RUN = ToolResult.error("approval_denied", "Not run: an approver halted this turn.")


@dataclass(frozen=True, slots=True, kw_only=True)
class CallOutcome:
    """How one call of a turn ended."""

    item: ToolCall | RejectedCall
    """The call as parsed (a rejected one never resolved to a tool)."""
    result: ToolResult
    """What the model is told; ``result.error_kind`` says why a call failed."""
    from_store: bool = False
    """True when the answer came from the run's store (the call had already been answered)."""
    halted: bool = False
    """True for the call an approver answered with deny-and-halt."""
    ran: bool = False
    """True when this turn ran the tool (its answer may carry what the tool produced, even
    when it is an error)."""

    @property
    def call_id(self) -> str | None:
        """The provider's id for the call, if it sent one."""
        return self.item.call_id

    def to_dict(self) -> dict[str, Any]:
        """The outcome as JSON values, without its call: what an engine keeps of it (a step's
        output) and gives back to ``from_dict`` beside the same call."""
        return {
            "result": encode_result(self.result),
            "from_store": self.from_store,
            "halted": self.halted,
            "ran": self.ran,
        }

    @classmethod
    def from_dict(cls, item: ToolCall | RejectedCall, body: Mapping[str, Any]) -> CallOutcome:
        """The outcome of ``item`` that ``to_dict`` made.

        Raises:
            ConfigurationError: ``body`` is not such a form.
        """
        try:
            form = _OUTCOME_FORM.validate_python(body, strict=True)
            result = checked_result(form["result"])
        except (pydantic.ValidationError, KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"not a call's outcome: {describe_exception(exc, limit=200)}"
            ) from None
        return cls(
            item=item,
            result=result,
            from_store=form["from_store"],
            halted=form["halted"],
            ran=form["ran"] and isinstance(item, ToolCall),
        )


class _OutcomeForm(TypedDict):
    result: dict[str, Any]
    from_store: bool
    halted: bool
    ran: bool


_OUTCOME_FORM = pydantic.TypeAdapter(_OutcomeForm)


def in_groups(items: Sequence[_T], alone: Callable[[_T], bool]) -> list[list[_T]]:
    """The order a turn's planned calls run in: consecutive calls that may run side by side
    together, and a call that must run ``alone`` (its tool is not ``parallel_safe``) by
    itself, the calls before it done first and those after it started once it is done."""
    groups: list[list[_T]] = []
    after_alone = True  # (the first call starts a group, as one after a call run alone)
    for item in items:
        this_alone = alone(item)
        if this_alone or after_alone:
            groups.append([item])
        else:
            groups[-1].append(item)
        after_alone = this_alone
    return groups


@dataclass(slots=True)
class Planned:
    """A call decided to run, and what running it needs."""

    index: int
    call: ToolCall
    kwargs: dict[str, Any]
    context: CallContext | None
    """Set when hooks, or the tool's function, need it."""
    record: CallRecord | None = None
    """The run's record of the call when it was planned (what the claim swaps out)."""
    resume: Mapping[str, Any] | None = None
    """For a call that waited for input its server asked for, what continuing it sends its
    server, read from its claim."""
    arguments: Mapping[str, Any] | None = None
    """The arguments ``kwargs`` were validated from (the model's, as a human edited them, as
    the before-call hooks rewrote them): what a ticket of the call carries."""


@dataclass(slots=True, eq=False)
class Turn:
    """One turn of [`Executor.run`][]: its calls, their outcomes so far, and its run."""

    items: Sequence[ToolCall | RejectedCall]
    run_id: str | None
    principal: Any
    taint: frozenset[str]
    deps: Any = None
    """What the turn's tools and hooks are given as ``CallContext.deps``; never stored."""
    provenance: Provenance | None = None
    """What the model read and was trustingly told before the turn (None: nothing kept)."""
    fixed_origins: Origins | None = None
    """A ticket's turn: the origins its call was planned with (its ticket carries them)."""
    outcomes: list[CallOutcome | None] = field(default_factory=list)
    planned: list[Planned] = field(default_factory=list)
    waiting: list[tuple[int, ApprovalRequest]] = field(default_factory=list)
    """Calls waiting for a decision: index, and the request as the run keeps it (its arguments
    redacted)."""
    admitted: list[ToolCall] = field(default_factory=list)
    """The calls admitted to the turn (what its run is bound to)."""
    fingerprints: dict[str, str] = field(default_factory=dict)
    """By call id, the fingerprints computed so far."""
    run: Run | None = None
    """The turn's run in the store, once it has a run id."""
    known: dict[str, CallRecord] = field(default_factory=dict)
    """The run's records of the turn's calls when it started, by call id."""
    seen: dict[int, CallRecord] = field(default_factory=dict)
    """The records the run had of its calls when they were planned, by index."""
    kept: set[int] = field(default_factory=set)
    """Calls whose answer the run already keeps, or must not keep."""
    store_error: StoreUnavailable | None = None
    halted: bool = False
    scope: anyio.CancelScope | None = None
    """What [`Executor.cancel`][] cancels: the turn's scope, or a one-call turn's call's."""
    cancelled: bool = False
    tracer: Any = None
    """Where the turn's spans go; None when nothing would record them."""
    wake: dict[str, Any] | None = None
    """What waits for the turn's pending calls (kept with their requests; see
    ``toolwire.ledger.register_waker``)."""
    place: str | None = None
    """Where the turn stands in its conversation (the caller's word, e.g. a digest of the
    messages its response answers): kept in its run's binding, so the run answers no other
    turn."""
    resume: bool = False
    """The turn resumes a run that paused: the run must still be in its store."""

    def finish(
        self, index: int, result: ToolResult, halted: bool = False, ran: bool = False
    ) -> None:
        """Answer the call at ``index`` with ``result``."""
        self.outcomes[index] = CallOutcome(
            item=self.items[index], result=result, halted=halted, ran=ran
        )

    def apply(
        self, index: int, step: Answer | Wait | Planned, named_run: str | None = None
    ) -> None:
        """Carry out the step a call was decided to (the one place a decision changes the
        turn): answer it now, put it up as waiting, or plan it to run. ``named_run``: the run
        asking about it named, which the turn is kept in from now on."""
        if named_run is not None and self.run_id is None:
            self.run_id = named_run
        if isinstance(step, Planned):
            self.planned.append(step)
            return
        if isinstance(step, Wait):
            self.waiting.append((index, step.request))
            if step.kept:
                self.kept.add(index)
            return
        self.halted = self.halted or step.halted  # a replayed halt still stops the turn
        self.outcomes[index] = CallOutcome(
            item=self.items[index],
            result=step.result,
            from_store=step.from_store,
            halted=step.halted,
        )
        if step.kept:
            self.kept.add(index)

    def answer_halted(self, index: int, call: ToolCall) -> None:
        """Answer a call of a halted turn (nobody is asked anything once a turn is halted):
        the answer its run keeps, if it ran; else "Not run"."""
        known = self.known.get(call.local_id)
        if known is not None:
            self.seen[index] = known  # what the run's answer replaces
            if known.result is not None:  # answered (it ran): that answer stands
                self.apply(index, Answer(known.result, from_store=True, kept=True))
                return
        self.finish(index, NOT_RUN)

    def end_if_halted(self) -> None:
        """A halted turn runs nothing: each call planned before the halt is answered "Not
        run"."""
        if self.halted:
            for planned in self.planned:
                self.finish(planned.index, NOT_RUN)
            self.planned = []

    def fingerprint(self, call: ToolCall) -> str:
        """The call's fingerprint, computed once per turn (calls are keyed by their id)."""
        known = self.fingerprints.get(call.local_id)
        if known is None:
            known = self.fingerprints[call.local_id] = fingerprint(call)
        return known

    @classmethod
    def of_ticket(cls, ticket: CallTicket, tool: Tool, deps: Any) -> Turn:
        """A turn of the one call a ticket names (``tool``: its tool here), to be decided
        again where it runs."""
        call = ToolCall(
            exposed_name=ticket.name,
            tool=tool,
            arguments=dict(ticket.arguments),
            call_id=ticket.call_id,
            local_id=ticket.call_id,
            caller=Caller.from_dict(ticket.caller),
            null_paths=ticket.null_paths,
        )
        return cls(
            items=[call],
            run_id=ticket.run_id,
            principal=ticket.principal,
            taint=frozenset(ticket.taint),
            deps=deps,
            outcomes=[None],
            admitted=[call],
            fixed_origins=(
                UNKNOWN_ORIGINS if ticket.origins is None else Origins.from_dict(ticket.origins)
            ),
        )

    def admit(self, *, raise_unknown: bool) -> list[str]:
        """The ids of the turn's calls, each once: a call reusing an earlier call's id, or with
        an id no store can hold, is answered now and never run (the parsers already answer such
        calls; this holds for items built by hand too). A rejected call is answered now (or,
        with ``raise_unknown``, a call of an unknown tool raises ``ToolNotFound``)."""
        ids: list[str] = []
        taken: set[str] = set()
        for index, item in enumerate(self.items):
            if isinstance(item, RejectedCall):
                if raise_unknown and item.error_kind == "not_found":
                    raise ToolNotFound(item.name)
                self.outcomes[index] = CallOutcome(
                    item=item, result=ToolResult.error(item.error_kind, item.message)
                )
                continue
            if not isinstance(item, ToolCall):
                raise ConfigurationError(
                    f"a turn's items are ToolCalls or RejectedCalls, not {type(item).__name__}"
                )
            call_id = item.local_id
            problem = (
                None
                if call_id.__class__ is str and call_id not in taken and valid_id(call_id)
                else _id_problem(call_id, taken)
            )
            if problem is not None:
                self.finish(index, ToolResult.error("invalid_arguments", f"Not run: {problem}."))
                self.kept.add(index)  # not the run's to keep: its id is not its own
                continue
            taken.add(call_id)
            ids.append(call_id)
            self.admitted.append(item)
        return ids

    def run_in(self, store: RunStore, *, worker: str, lease: float) -> Run:
        """The turn's run in ``store`` (made once the turn has a run id), claiming as
        ``worker`` with ``lease``."""
        if self.run is None:
            assert self.run_id is not None
            self.run = Run(
                store,
                self.run_id,
                binding=binding_for(
                    self.principal,
                    self.bound_calls(),
                    self.place,
                    None if self.provenance is None else self.provenance.fingerprint(),
                ),
                worker=worker,
                lease=lease,
                positions={
                    item.local_id: index
                    for index, item in enumerate(self.items)
                    if isinstance(item, ToolCall)
                },
            )
        return self.run

    def origins(self, arguments: Mapping[str, Any]) -> Origins:
        """Where the call's ``arguments`` came from (see ``toolwire.provenance``)."""
        if self.fixed_origins is not None:
            return self.fixed_origins
        if self.provenance is None:
            return UNKNOWN_ORIGINS
        return self.provenance.origins(arguments)

    def bound_calls(self) -> list[tuple[str, str]]:
        """The ``(id, fingerprint)`` of each admitted call: what the turn's run is bound to
        (with its principal; see ``binding_for``)."""
        return [(call.local_id, self.fingerprint(call)) for call in self.admitted]

    def context(self, call: ToolCall, arguments: Mapping[str, Any]) -> CallContext:
        """What hooks, and a tool asking for it, see of the call."""
        return CallContext(
            call=call,
            arguments=arguments,
            principal=self.principal,
            run_id=self.run_id,
            taint=self.taint,
            deps=self.deps,
        )


def _id_problem(call_id: Any, taken: set[str]) -> str | None:
    """Why a call's id cannot be its own in the run, or None."""
    if not isinstance(call_id, str):
        return "its id is not a string"
    if call_id in taken:
        return f"an earlier call of this turn has the id {call_id!r}"
    # what a store keeps (a run id may be made later in the turn, for a call that waits)
    if not valid_id(call_id):
        return "its id is not valid Unicode text without NUL"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class CallTicket:
    """One planned call of a named run, as what running it elsewhere needs: the engine
    boundary's unit of work (see ``Executor.ticket`` and ``Executor.run_ticket``). Every
    field is a JSON value but ``principal``, which is the turn's own."""

    run_id: str
    binding: str
    """What the run is bound to (its principal, calls and place), as the planning turn made
    it."""
    call_id: str
    name: str
    """The tool's exposed name."""
    arguments: Mapping[str, Any]
    """The model's arguments (what the call's fingerprint is of)."""
    runs_with: Mapping[str, Any]
    """The arguments the call runs with, as its turn's planning made them: the model's, as a
    human edited them, as the before-call hooks rewrote them. Bound by the digest like every
    other field; where the ticket runs they are validated and put to the policy again (the
    hooks do not run again)."""
    toolset: str | None = None
    """The toolset the ticket was planned in (an engine's name for it): it runs nowhere
    else."""
    null_paths: tuple[tuple[str, ...], ...] = ()
    """The nulls strict mode made the model send (left out before validation)."""
    principal: Any = None
    taint: tuple[str, ...] = ()
    caller: Mapping[str, Any] | None = None
    alone: bool = False
    """The tool is not ``parallel_safe``: nothing else of the turn runs beside it."""
    position: int | None = None
    """Where the call stands among its turn's calls."""
    origins: Mapping[str, Any] | None = None
    """Where the arguments it runs with came from (``Origins.to_dict``), when its turn kept
    a provenance: the policy sees the same where the ticket runs."""

    @classmethod
    def of(
        cls, run_id: str, binding: str, turn: Turn, planned: Planned, toolset: str | None = None
    ) -> CallTicket:
        """The ticket of a call ``turn`` planned to run in ``run_id``.

        Raises:
            ConfigurationError: the arguments it runs with are not JSON (a before-call hook
                made them so): nothing could bind them to the ticket.
        """
        call = planned.call
        runs_with = planned.arguments if planned.arguments is not None else call.arguments
        problem = argument_problem(runs_with)
        if problem is not None:
            raise ConfigurationError(
                f"call {call.local_id!r} ({call.exposed_name}) of run {run_id!r} cannot be "
                f"handed to an engine: the arguments it would run with, as the before-call "
                f"hooks or an approver made them, are not JSON ({problem}); a ticket carries "
                "only what its digest binds, so the hooks of a durable turn return JSON values"
            )
        return cls(
            run_id=run_id,
            binding=binding,
            call_id=call.local_id,
            name=call.exposed_name,
            arguments=dict(call.arguments),
            runs_with=dict(runs_with),
            toolset=toolset,
            null_paths=call.null_paths,
            principal=turn.principal,
            taint=tuple(sorted(turn.taint)),
            caller=call.caller.to_dict() if call.caller.kind != "direct" else None,
            alone=not call.tool.parallel_safe,
            position=planned.index,
            origins=_origins_form(turn.origins(runs_with)),
        )

    def digest(self) -> str:
        """The whole ticket hashed: the planning step keeps it in the call's record
        (``CallRecord.ticket``), and a ticket runs only when its run keeps its digest, so one
        changed since (the arguments it runs with included), or made anywhere else, runs
        nothing."""
        body = self.to_dict()
        body["principal"] = principal_json(self.principal)
        return hashlib.sha256(canonical_json(body).encode("utf-8", "surrogatepass")).hexdigest()

    def check_toolset(self, toolset: str | None) -> None:
        """Raise unless the ticket was planned in ``toolset``.

        Raises:
            RunBindingConflict: the ticket belongs to another toolset.
        """
        if self.toolset != toolset:
            raise RunBindingConflict(
                f"a ticket of toolset {self.toolset!r} (run {self.run_id!r}, call "
                f"{self.call_id!r}) was handed to toolset {toolset!r}: a ticket runs only in "
                "the toolset it was planned in, and nothing runs"
            )

    def check_kept(self, kept: CallRecord | None, toolset: str | None = None) -> None:
        """Raise unless ``kept``, the run's record of the call, keeps this ticket's digest,
        and the ticket was planned in ``toolset``.

        Raises:
            RunBindingConflict: the ticket belongs to another toolset, was changed since its
                turn was planned, or was never planned in its run.
        """
        self.check_toolset(toolset)
        if kept is None or kept.ticket != self.digest():
            raise RunBindingConflict(
                f"run {self.run_id!r} keeps no such ticket for call {self.call_id!r} (not "
                "planned there, or changed since it was): nothing runs"
            )

    def to_dict(self) -> dict[str, Any]:
        """The ticket as JSON values (the principal as given)."""
        return {
            "run_id": self.run_id,
            "binding": self.binding,
            "call_id": self.call_id,
            "name": self.name,
            "arguments": dict(self.arguments),
            "runs_with": dict(self.runs_with),
            "toolset": self.toolset,
            "null_paths": [list(path) for path in self.null_paths],
            "principal": self.principal,
            "taint": list(self.taint),
            "caller": dict(self.caller) if self.caller is not None else None,
            "alone": self.alone,
            "position": self.position,
            # (left out when none: a ticket of a turn without provenance keeps its digest)
            **({"origins": dict(self.origins)} if self.origins is not None else {}),
        }

    @classmethod
    def from_dict(cls, body: Mapping[str, Any]) -> CallTicket:
        """A ticket from ``to_dict``'s form.

        Raises:
            ConfigurationError: ``body`` is not such a form.
        """
        try:
            form = _TICKET_FORM.validate_python(body, strict=True)
        except pydantic.ValidationError as exc:
            first = exc.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(part) for part in first["loc"])
            where = f"{where}: " if where else ""
            raise ConfigurationError(f"not a call ticket: {where}{first['msg']}") from None
        return cls(
            run_id=form["run_id"],
            binding=form["binding"],
            call_id=form["call_id"],
            name=form["name"],
            arguments=form["arguments"],
            runs_with=form["runs_with"],
            toolset=form.get("toolset"),
            null_paths=tuple(tuple(path) for path in form.get("null_paths") or ()),
            principal=form.get("principal"),
            taint=tuple(form.get("taint") or ()),
            caller=form.get("caller"),
            alone=form.get("alone", False),
            position=form.get("position"),
            origins=form.get("origins"),
        )


def _origins_form(origins: Origins) -> dict[str, Any] | None:
    return None if origins is UNKNOWN_ORIGINS else origins.to_dict()


@dataclass(frozen=True, slots=True)
class TurnPlan:
    """A turn planned for an engine (``Executor.plan``): what was answered without running
    (denials, invalid arguments, answers its run already kept), one ticket per call to run, and
    whether some call waits for a decision. Its JSON form (``to_dict``) is what an engine
    checkpoints; ``from_dict`` reads it back beside the turn's items."""

    answered: Mapping[int, CallOutcome]
    """The outcomes decided without running, by the call's position in the turn."""
    tickets: tuple[CallTicket, ...]
    """The calls to run, in order (``in_groups`` says which may run side by side)."""
    waiting: bool
    """Some call waits for a decision: the engine waits, then plans the turn again."""

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON values (each ticket's principal as given)."""
        return {
            "answered": [
                {"at": index, "outcome": outcome.to_dict()}
                for index, outcome in self.answered.items()
            ],
            "tickets": [ticket.to_dict() for ticket in self.tickets],
            "waiting": self.waiting,
        }

    @classmethod
    def from_dict(
        cls, items: Sequence[ToolCall | RejectedCall], body: Mapping[str, Any]
    ) -> TurnPlan:
        """The plan ``to_dict`` made of a turn of ``items``.

        Raises:
            ConfigurationError: ``body`` is not such a form, or names a call the turn does
                not have.
        """
        try:
            form = _PLAN_FORM.validate_python(body, strict=True)
        except pydantic.ValidationError as exc:
            problem = describe_exception(exc, limit=200)
            raise ConfigurationError(f"not a turn's plan: {problem}") from None
        answered: dict[int, CallOutcome] = {}
        for answer in form["answered"]:
            index = answer["at"]
            if not 0 <= index < len(items):
                raise ConfigurationError(f"not a turn's plan: it answers no call at {index}")
            answered[index] = CallOutcome.from_dict(items[index], answer["outcome"])
        tickets = tuple(CallTicket.from_dict(ticket) for ticket in form["tickets"])
        return cls(answered=answered, tickets=tickets, waiting=form["waiting"])


class _AnsweredForm(TypedDict):
    at: int
    outcome: dict[str, Any]


class _PlanForm(TypedDict):
    answered: list[_AnsweredForm]
    tickets: list[dict[str, Any]]
    waiting: bool


_PLAN_FORM = pydantic.TypeAdapter(_PlanForm)


# A ticket's JSON form, checked whole when read (strictly: a number is not a string of digits).
class _TicketForm(TypedDict):
    run_id: str
    binding: str
    call_id: str
    name: str
    arguments: dict[str, Any]
    runs_with: dict[str, Any]
    toolset: NotRequired[str | None]
    null_paths: NotRequired[list[list[str]] | None]
    principal: NotRequired[Any]
    taint: NotRequired[list[str] | None]
    caller: NotRequired[dict[str, Any] | None]
    alone: NotRequired[bool]
    position: NotRequired[Annotated[int, pydantic.Field(ge=0)] | None]
    origins: NotRequired[dict[str, Any] | None]


_TICKET_FORM = pydantic.TypeAdapter(_TicketForm)


def waiting_request(
    turn: Turn, call: ToolCall, kept: ApprovalRequest, record: CallRecord, waiting: InputDeferred
) -> ApprovalRequest:
    """The request of a call that waits for input, as the application is shown it: the
    server's questions still open, each with its round."""
    shown_round = input_round(record)
    questions = tuple(
        replace(
            q,
            round=shown_round,
            exposed_name=call.exposed_name,
            run_id=turn.run_id,
            call_id=call.local_id,
            principal=turn.principal,
            arguments=kept.arguments,
        )
        for q in waiting.questions
        if q.key not in waiting.answered
    )
    return replace(kept, tool=call.tool, input=questions)
