"""Approval of calls the policy marked ``ask``.

An approver answers [`allow`][], [`deny`][] (the model is told why and the turn goes on) or
[`halt`][] (denied, and the caller should stop its agent loop). Immediate approvers answer at
once; [`DeferredApproval`][] makes the executor raise [`ApprovalPending`][] so a human can
decide later, after which the caller runs the same calls again with the same ``run_id``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Protocol, runtime_checkable

import pydantic
import pydantic_core
from pydantic_core import core_schema

from toolwire.calls import principal_json
from toolwire.errors import ConfigurationError, ToolwireError
from toolwire.inputs import InputRequest
from toolwire.tool import Tool

__all__ = [
    "ApprovalPending",
    "ApprovalRequest",
    "Approver",
    "AutoApprove",
    "CallbackApproval",
    "Decision",
    "DeferredApproval",
    "allow",
    "deny",
    "halt",
]


@dataclass(frozen=True, slots=True)
class Decision:
    """An approver's answer."""

    kind: Literal["allow", "deny", "halt"]
    reason: str | None = None
    arguments: Mapping[str, Any] | None = field(default=None, kw_only=True)
    """For an allow: the arguments to run with instead of the model's (edited by the human;
    validated against the tool's schema when the decision is recorded)."""

    @property
    def allowed(self) -> bool:
        return self.kind == "allow"


def allow(*, arguments: Mapping[str, Any] | None = None) -> Decision:
    """Run the call; with ``arguments``, with those instead of the model's."""
    return Decision("allow", arguments=dict(arguments) if arguments is not None else None)


def deny(reason: str | None = None) -> Decision:
    """Don't run the call; the model is told ``reason`` and the turn goes on."""
    return Decision("deny", reason)


def halt(reason: str | None = None) -> Decision:
    """Don't run the call, nor anything else of the turn; the caller should stop its loop."""
    return Decision("halt", reason)


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequest:
    """A call waiting for a decision: what an approver, or a human's approval screen, is shown.

    Read back from a run store ([`toolwire.pending`][]), it carries everything but the
    ``Tool`` object (``tool`` is None there): [`to_dict`][] and [`from_dict`][] give and
    take its JSON form.
    """

    run_id: str
    call_id: str
    """The call's local id (the provider's id when it sent one); key decisions by it."""
    tool: Tool | None
    """The tool, when the request comes from the executor asking now."""
    exposed_name: str
    """The name the model called the tool by."""
    arguments: Mapping[str, Any]
    """The validated arguments the tool would run with (as stored: passed through the
    executor's ``redact``, when it has one)."""
    principal: Any
    """Who the turn runs for (its JSON form, when read from a store)."""
    reason: str | None
    """Why the policy asked."""
    server: str | None = None
    """The MCP server the tool comes from, if any."""
    tool_name: str | None = None
    """The tool's own name (on its server), which may differ from ``exposed_name``."""
    requested_at: float | None = None
    """When the call was asked about (seconds since the epoch)."""
    expires_at: float | None = None
    """When the request expires unanswered (the executor's ``approval_ttl``); None: never."""
    input: tuple[InputRequest, ...] = ()
    """For a call its server stopped to ask something (MCP elicitation): the questions that
    wait for an answer ([`toolwire.respond`][toolwire.respond]), not for a decision. Empty for
    a call waiting for approval."""

    def __post_init__(self) -> None:
        if self.tool is not None:
            if self.server is None:
                object.__setattr__(self, "server", self.tool.server_id)
            if self.tool_name is None:
                object.__setattr__(self, "tool_name", self.tool.name)

    def to_dict(self) -> dict[str, Any]:
        """The request as JSON values (the principal as its JSON form)."""
        return {
            "run_id": self.run_id,
            "call_id": self.call_id,
            "exposed_name": self.exposed_name,
            "server": self.server,
            "tool_name": self.tool_name,
            "arguments": principal_json(self.arguments),
            "principal": principal_json(self.principal),
            "reason": self.reason,
            "requested_at": self.requested_at,
            "expires_at": self.expires_at,
            **({"input": [q.to_dict() for q in self.input]} if self.input else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ApprovalRequest:
        """A request from its [`to_dict`][] form (``tool`` is None).

        Raises:
            ConfigurationError: ``data`` is not such a form.
        """
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"not an approval request: a {type(data).__name__}")
        if not isinstance(data, dict):  # (pydantic-core reads a dict; any mapping will do)
            data = dict(data)
        try:
            request: ApprovalRequest = _REQUEST_READER.validate_python(data)
        except pydantic.ValidationError as exc:
            first = exc.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ConfigurationError(
                f"not an approval request: {where + ': ' if where else ''}{first['msg']}"
            ) from None
        questions = data.get("input")
        if questions:  # (most requests ask for approval only)
            if not isinstance(questions, list):
                raise ConfigurationError("not an approval request: input is a list of questions")
            context = {
                "server": request.server,
                "tool_name": request.tool_name,
                "exposed_name": request.exposed_name,
                "arguments": dict(request.arguments),
                "run_id": request.run_id,
                "call_id": request.call_id,
                "principal": request.principal,
            }
            try:
                asked = tuple(InputRequest.from_dict(q, **context) for q in questions)
            except (KeyError, TypeError, AttributeError) as exc:
                raise ConfigurationError(f"not an approval request: {exc}") from None
            object.__setattr__(request, "input", asked)  # the request was built just above
        return request


def _request_reader() -> pydantic_core.SchemaValidator:
    """Builds an ``ApprovalRequest`` from its JSON form inside pydantic-core (a queue page
    lists fifty): the names are strings, ``arguments`` a mapping (copied; None or absent:
    none), the rest taken as given; ``tool`` and ``input`` are not read (see ``from_dict``)."""

    def taken(name: str) -> Any:
        schema = core_schema.with_default_schema(core_schema.any_schema(), default=None)
        return core_schema.dataclass_field(name, schema, kw_only=True)

    def text(name: str) -> Any:
        return core_schema.dataclass_field(name, core_schema.str_schema(strict=True), kw_only=True)

    def unread(name: str, default: Any) -> Any:
        schema = core_schema.with_default_schema(core_schema.any_schema(), default=default)
        return core_schema.dataclass_field(name, schema, kw_only=True, init=False)

    arguments = core_schema.with_default_schema(
        core_schema.no_info_after_validator_function(
            lambda given: given if given is not None else {},
            core_schema.nullable_schema(core_schema.dict_schema()),
        ),
        default_factory=dict,
    )
    read = [
        text("run_id"),
        text("call_id"),
        unread("tool", None),
        text("exposed_name"),
        core_schema.dataclass_field("arguments", arguments, kw_only=True),
        *(taken(name) for name in ("principal", "reason", "server", "tool_name")),
        *(taken(name) for name in ("requested_at", "expires_at")),
        unread("input", ()),
    ]
    names = [f.name for f in fields(ApprovalRequest)]
    if sorted(names) != sorted(f["name"] for f in read):
        raise RuntimeError("an ApprovalRequest field is not read, or the reverse")
    return pydantic_core.SchemaValidator(
        core_schema.dataclass_schema(
            ApprovalRequest,
            core_schema.dataclass_args_schema("ApprovalRequest", read),
            names,
            slots=True,
            frozen=True,
        )
    )


_REQUEST_READER = _request_reader()


@runtime_checkable
class Approver(Protocol):
    """Decides ``ask`` calls. Return a [`Decision`][], or None to defer the decision."""

    def __call__(
        self, request: ApprovalRequest
    ) -> Decision | Awaitable[Decision | None] | None: ...


class AutoApprove:
    """Approves every call (for trusted tools, tests and demos)."""

    def __call__(self, request: ApprovalRequest) -> Decision:
        return allow()


class CallbackApproval:
    """Asks ``callback(request)`` (sync or async) for an immediate decision.

    The callback may return a [`Decision`][] or a bool (True allows, False denies).
    """

    def __init__(self, callback: Callable[[ApprovalRequest], Any]) -> None:
        self.callback = callback

    async def __call__(self, request: ApprovalRequest) -> Decision:
        answer = self.callback(request)
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, Decision):
            return answer
        if isinstance(answer, bool):
            return allow() if answer else deny()
        raise ConfigurationError(
            f"an approval callback returns a Decision or a bool, not {type(answer).__name__}"
        )


class DeferredApproval:
    """Never decides at once: calls without a recorded decision make the executor raise
    [`ApprovalPending`][]. Record decisions with ``Executor.decide`` (or
    ``toolwire.decide``) and run the same calls again with the same ``run_id``."""

    def __call__(self, request: ApprovalRequest) -> None:
        return None


class ApprovalPending(ToolwireError):
    """Some calls wait for a human decision, or for input their MCP server asked for (their
    request's ``input``); nothing was answered for them yet.

    Calls of the turn that needed no approval have already run and are remembered under
    ``run_id``: running the same calls again with that ``run_id`` answers them from the store.

    Attributes:
        run_id: the run to resume (generated when the caller gave none).
        pending: the calls waiting, in call order.
        completed: how the turn's other calls ended ([`CallOutcome`][toolwire.CallOutcome]s,
            in call order): those that ran, and those answered without running (denied,
            invalid, unknown). The resume answers them again from the run.
        store: the run store the run is kept in, which a resume uses when given none
            (``toolwire.execute_tool_calls(..., resume=exc)``, ``toolwire.loop``).
        place: the turn's place in its conversation, when it was given one (see
            ``Executor.run``): the resume gives it again.
    """

    def __init__(
        self,
        run_id: str,
        pending: Sequence[ApprovalRequest],
        completed: Sequence[Any] = (),
        *,
        store: Any = None,
        place: str | None = None,
    ) -> None:
        self.run_id = run_id
        self.pending = list(pending)
        self.completed = list(completed)
        self.store = store
        self.place = place
        asked = [p for p in self.pending if not p.input]
        waiting = [p for p in self.pending if p.input]
        said = []
        if asked:
            said.append("approval needed for " + _named(asked))
        if waiting:
            said.append("input needed for " + _named(waiting))
        super().__init__(f"run {run_id!r}: " + "; ".join(said))


def _named(requests: Sequence[ApprovalRequest]) -> str:
    return ", ".join(f"{p.exposed_name} ({p.call_id})" for p in requests)
